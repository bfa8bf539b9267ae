"""`record --dry-run` and `baseline --mode record --dry-run` (gate.produce.dryrun): the calls
and their cost, said before a cent is spent, and nothing called."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from tests.conftest import Project, case

# A system that counts its calls in a file, and reports the tokens a provider would.
COUNTED = """
from pathlib import Path

def answer(case_input, system):
    calls = Path(__file__).with_name("calls.txt")
    calls.write_text(str(int(calls.read_text()) + 1 if calls.exists() else 1))
    return {"text": case_input["question"], "input_tokens": 1000, "output_tokens": 500}
"""
PRICED = {"m1": {"input": 2.0, "output": 8.0}}  # $0.006 a call at 1,000 + 500 tokens


def setup(project: Project, **config: Any) -> None:
    project.write_system(COUNTED)
    system = {"name": "echo", "provider": "python", "target": f"{project.module}:answer"}
    # one call at a time: the count in calls.txt is read and written without a lock
    project.write_config(system={**system, "model": "m1"}, pricing=PRICED, concurrency=1, **config)
    project.write_cases([case("a", "hi", contains="hi"), case("b", "yo", contains="yo")])


def calls(project: Project) -> int:
    path = project.root / "calls.txt"
    return int(path.read_text()) if path.exists() else 0


def dry(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    capsys.readouterr()
    assert main([*args, "--dry-run"]) == 0
    return capsys.readouterr().out.splitlines()


def test_before_any_recording_it_counts_the_calls_and_says_the_cost_is_unknown(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    setup(project, samples=2)
    out = dry(capsys, "record")
    assert out[0] == "dry run: would call the system 4 time(s) for 2 case(s) (samples: 2)"
    assert out[1].startswith("cost: unknown, no recording holds token counts")
    assert out[-1] == "nothing was called"
    assert calls(project) == 0
    assert not (project.root / "recordings").exists()


def test_the_cost_comes_from_the_recorded_tokens(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    setup(project, samples=2)
    assert main(["record", "--case", "a", "--quiet"]) == 0
    assert calls(project) == 2
    out = dry(capsys, "record")
    assert out[0] == "dry run: would call the system 4 time(s) for 2 case(s) (samples: 2)"
    assert out[1] == (
        "cost: about $0.0240 at `pricing:`, from the tokens of 1 case(s)' recorded calls "
        "(1 case(s) at their average)"
    )
    # Only what replay would miss: case b's two samples.
    out = dry(capsys, "record", "--only-missing")
    assert out[0] == "dry run: would call the system 2 time(s) for 2 case(s) (samples: 2)"
    assert "$0.0120" in out[1]
    assert calls(project) == 2  # the dry runs called nothing


def test_under_auto_it_gives_the_range(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    setup(project, samples="auto", adaptive={"start": 2, "step": 2, "max": 6})
    assert main(["record", "--case", "a", "--quiet"]) == 0
    out = dry(capsys, "record")
    assert out[0] == (
        "dry run: would call the system 4 to 12 time(s) for 2 case(s) "
        "(samples: auto, at most 6 a case)"
    )
    assert "$0.0240 to $0.0720" in out[1]


def test_a_baseline_counts_what_it_is_estimated_from(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    setup(project, samples=2)
    out = dry(capsys, "baseline", "--mode", "record")
    assert out[0] == "dry run: would call the system 12 time(s) for 2 case(s) (samples: 2)"
    assert dry(capsys, "baseline") == ["dry run: replay calls nothing (record with --mode record)"]
    assert calls(project) == 0
    assert not Path("baselines").exists()


def test_a_model_without_a_price_is_named(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    setup(project, samples=1)
    assert main(["record", "--quiet"]) == 0
    project.write_config(
        system={"name": "echo", "provider": "python", "target": f"{project.module}:answer",
                "model": "m2"},
        pricing=PRICED,
    )  # fmt: skip
    out = dry(capsys, "record")
    assert out[1] == "cost: unknown, `pricing:` has no price for m2"


def test_the_judge_calls_are_counted_apart(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    setup(project, samples=1)
    project.write_cases([case("a", "hi", judge={"rubric": "is it a greeting?"})])
    project.write_config(
        system={"name": "echo", "provider": "python", "target": f"{project.module}:answer",
                "model": "m1"},
        pricing=PRICED,
        judge={"provider": "openai", "model": "judge-1", "base_url": "http://127.0.0.1:9/v1"},
    )  # fmt: skip
    out = dry(capsys, "record")
    assert out[1] == (
        "and the judge once per sample of the 1 case(s) that use it "
        "(their cost is not estimated here)"
    )


def test_the_judge_asks_once_per_check_and_repeat_of_each_sample(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """A graded judge and a RAG metric ask apart, each `judge.consistency` times: the line
    counts every ask, not one a case."""
    setup(project, samples=1)
    project.write_cases(
        [
            {
                "id": "a",
                "input": {"question": "hi", "contexts": ["Hello is a greeting."]},
                "expect": {
                    "judge": {"rubric": "a greeting?", "scale": "1-5", "threshold": 0.5},
                    "faithfulness": {"threshold": 0.8},
                },
            },
            case("b", "hi", judge={"rubric": "is it a greeting?"}),
        ]
    )
    project.write_config(
        system={"name": "echo", "provider": "python", "target": f"{project.module}:answer",
                "model": "m1"},
        pricing=PRICED,
        judge={"provider": "openai", "model": "judge-1", "base_url": "http://127.0.0.1:9/v1",
               "consistency": 3},
    )  # fmt: skip
    out = dry(capsys, "record")
    assert out[1] == (
        "and the judge 9 times in all per sample of the 2 case(s) that use it "
        "(their cost is not estimated here)"
    )
