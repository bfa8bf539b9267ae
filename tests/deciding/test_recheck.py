"""The gate's own process judges again what the supervised run reported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.deciding.recheck import UntrustedRun, recheck, snapshot
from gate.results import read_results
from gate.suite.project import load_project
from tests.conftest import Project, case


@pytest.fixture
def recorded(project: Project) -> Project:
    project.write_cases(
        [
            case("fast", "hello", contains="hello", max_latency_ms=1000),
            case("plain", "world", contains="world"),
        ]
    )
    assert main(["record", "--quiet", "--out", "run.json"]) == 0
    return project


def test_a_run_that_claims_a_passing_verdict_is_judged_again(recorded: Project) -> None:
    loaded, cases = load_project(recorded.config_path)
    before = snapshot(loaded, cases, "replay")
    claimed = read_results(recorded.root / "run.json")
    plain = claimed.case_map()["plain"]
    plain.outputs[0].checks[0].ok = False  # the run says "fail"; the output passes
    plain.outputs[0].status = "fail"
    judged = recheck(claimed, loaded, cases, before).case_map()
    assert judged["plain"].status == "pass"


def test_an_output_that_is_not_the_recorded_one_is_refused(recorded: Project) -> None:
    loaded, cases = load_project(recorded.config_path)
    before = snapshot(loaded, cases, "replay")
    claimed = read_results(recorded.root / "run.json")
    claimed.case_map()["plain"].outputs[0].text = "something else"
    with pytest.raises(UntrustedRun, match="is not the recorded one"):
        recheck(claimed, loaded, cases, before)


def test_budgets_judge_the_recorded_figures_not_the_runs_account(recorded: Project) -> None:
    loaded, cases = load_project(recorded.config_path)
    before = snapshot(loaded, cases, "replay")
    assert before is not None
    for output in before.values():
        output.latency_ms = 5000.0  # what the recording says
    claimed = read_results(recorded.root / "run.json")
    claimed.case_map()["fast"].outputs[0].latency_ms = 1.0  # what the run claims
    judged = recheck(claimed, loaded, cases, before).case_map()
    assert judged["fast"].status == "fail"
    assert "recorded latency 5,000 ms" in judged["fast"].reason


TOOL_BOT = """
def answer(case_input, system):
    amount = case_input["question"]
    return {"text": "", "tool_calls": [{"name": "issue_refund", "arguments": {"amount": amount}}]}
"""


def test_tool_arguments_are_judged_against_the_declared_schema_in_both_processes(
    project: Project,
) -> None:
    project.write_system(TOOL_BOT)
    refund = {"type": "object", "properties": {"amount": {"type": "integer", "maximum": 100}}}
    project.write_config(
        system={
            "name": "tools",
            "provider": "python",
            "target": f"{project.module}:answer",
            "tools": [{"name": "issue_refund", "parameters": refund}],
        }
    )
    cases = [
        {"id": "small", "input": {"question": 20}, "expect": {"tool_args_valid": True}},
        {"id": "large", "input": {"question": 250}, "expect": {"tool_args_valid": True}},
    ]
    project.write_cases(cases)
    assert main(["record", "--quiet", "--out", "run.json"]) == 0  # failing cases are a result
    claimed = read_results(project.root / "run.json")
    assert claimed.case_map()["large"].reason == (
        "tool_args_valid: call 1 (issue_refund): amount: 250 is greater than the maximum of 100"
    )
    # A run that claims the large refund fits is judged again by the gate's process.
    large = claimed.case_map()["large"].outputs[0]
    large.checks[0].ok, large.status = True, "pass"
    loaded, loaded_cases = load_project(project.config_path)
    judged = recheck(claimed, loaded, loaded_cases, snapshot(loaded, loaded_cases, "replay"))
    assert judged.case_map()["large"].status == "fail"
    assert judged.case_map()["small"].status == "pass"


def test_tool_args_valid_without_declared_tools_is_refused_before_any_call(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("a", "x", tool_args_valid=True)])
    assert main(["record", "--quiet"]) == 2
    error = capsys.readouterr().err
    assert "cases.yaml:1: case 'a' uses tool_args_valid, but the system declares no tools" in error


def _ruler_with(price: dict[str, float]) -> object:
    from types import SimpleNamespace

    from gate.suite.sections import Price

    return SimpleNamespace(
        config=SimpleNamespace(pricing={"m": Price(**price)}, system=SimpleNamespace(model="m"))
    )


@pytest.mark.parametrize(
    ("claimed", "expected"),
    [
        (0.0, 0.003),  # a recorded cost of nothing is the pull request's claim: base prices
        (None, 0.003),  # nothing recorded: the base's normal price
        (0.0015, 0.0015),  # an honest batch-priced answer keeps its recorded cost
        (0.005, 0.005),  # a dearer claim only hurts the claimant
    ],
)
def test_a_sample_is_costed_no_lower_than_the_bases_prices_allow(
    claimed: float | None, expected: float
) -> None:
    from gate.deciding.recheck import ruled_cost
    from gate.results import SampleResult

    ruler = _ruler_with({"input": 1.0, "output": 2.0, "batch_input": 0.5, "batch_output": 1.0})
    sample = SampleResult(
        sample=0, status="pass", input_tokens=1000, output_tokens=1000, model="m", cost_usd=claimed
    )
    assert ruled_cost(sample, ruler) == pytest.approx(expected)  # type: ignore[arg-type]


# Judged once: under `check` the supervised run produces the outputs and this process
# judges them (issue #21).


def _counting_check(project: Project) -> tuple[str, Path]:
    """A custom check that appends one line per call to a file: a count any process leaves."""
    calls = project.root / "calls.txt"
    module = f"counted_{project.module}"  # one name per test: a process imports it once
    project.write_text(
        f"{module}.py",
        f"""
        def hello(text, case):
            with open({str(calls)!r}, "a") as calls:
                calls.write(case.id + "\\n")
            return "hello" in text
        """,
    )
    return f"{module}:hello", calls


def test_check_calls_each_custom_check_once_per_sample(project: Project) -> None:
    spec, calls = _counting_check(project)
    project.write_cases(
        [
            case("a", "hello", check=spec, contains="hello"),
            case("b", "world", check=spec, fields_={"samples": 3}),
        ]
    )
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    calls.write_text("")
    assert main(["check", "--mode", "live", "--quiet", "--sandbox", "off"]) == 0
    # The judging process's calls only: the run imported the check and never called it.
    assert sorted(calls.read_text().split()) == ["a", "b", "b", "b"]


def test_the_run_under_check_leaves_the_verdicts_to_the_gate(recorded: Project) -> None:
    from gate.judging.sample import LEFT_TO_GATE
    from gate.produce.supervise import run_supervised

    child = run_supervised(
        recorded.config_path,
        [],
        "replay",
        recorded.root / "child.json",
        expected=["fast", "plain"],
        show_progress=False,
        gate_judges=True,
    )
    for result in child.results.cases:
        # Never a pass: an unjudged results file cannot read as a ship.
        assert result.status == "fail" and result.checks == []
        assert [(o.status, o.reason, o.checks) for o in result.outputs] == [
            ("fail", LEFT_TO_GATE, [])
        ]
    loaded, cases = load_project(recorded.config_path)
    judged = recheck(child.results, loaded, cases, snapshot(loaded, cases, "replay"))
    assert [c.status for c in judged.cases] == ["pass", "pass"]
    assert [c.check for c in judged.case_map()["fast"].checks] == ["contains", "max_latency_ms"]


SAYS_PASS = """
import gate.pipeline.run as run
from gate.results import SampleResult

def _pass(case, sample, answer, *args, **kwargs):
    # The pull request's code, imported by the run, tells it every sample passed.
    output = answer.output
    return SampleResult(sample=sample, status="pass", text=output.text if output else None)

run.judge_sample = _pass

def ok(text, case):
    return True
"""


def test_a_run_that_would_judge_differently_cannot_change_the_verdict(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    module = f"says_pass_{project.module}"
    project.write_text(f"{module}.py", "def ok(text, case):\n    return True\n")
    project.write_cases(
        [case("a", "hello", contains="hello", check=f"{module}:ok"), case("b", "x", contains="x")]
    )
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    # The pull request: a system whose answer now fails `contains`, and a check module
    # that makes the run call every sample a pass.
    project.write_system("def answer(case_input, system):\n    return 'bye'\n")
    project.write_text(f"{module}.py", SAYS_PASS)
    code = main(["check", "--mode", "live", "--quiet", "--out", "c.json"])
    out = capsys.readouterr().out
    assert code == 1, out
    written = read_results(project.root / "c.json").case_map()
    assert written["a"].status == "fail" and "contains" in written["a"].reason


FORGES_JUDGE = """
import dataclasses
import gate.checks as checks

_real = checks.evaluate

def _forged(judges, subject):
    # The pull request's code, imported by any run of the suite, calls every judged
    # output a pass.
    return [
        dataclasses.replace(v, ok=True, reason="") if v.check == "judge" else v
        for v in _real(judges, subject)
    ]

checks.evaluate = _forged

def ok(text, case):
    return True
"""


def test_a_pull_requests_code_cannot_forge_the_judges_verdict_in_replay(
    project: Project, llm_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.judging.test_judge import JUDGED, grading_judge, judge_pin

    llm_server.reply = grading_judge
    project.write_config(judge=judge_pin(llm_server))
    project.write_cases(JUDGED)
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    # The pull request: the critical case's answer stops apologising (recorded, so the
    # recorded judge says FAIL), and a custom check module on the other case that makes
    # any run of the suite report the judge's verdicts as passes.
    module = f"forges_{project.module}"
    project.write_text(f"{module}.py", "def ok(text, case):\n    return True\n")
    curt = f"curt_{project.module}"  # a new module: this process has the old one imported
    project.write_text(f"{curt}.py", "def answer(case_input, system):\n    return 'no.'\n")
    project.write_config(
        judge=judge_pin(llm_server),
        system={"name": "echo", "provider": "python", "target": f"{curt}:answer"},
    )
    apology, blunt = JUDGED
    project.write_cases(
        [apology, {**blunt, "expect": {**blunt["expect"], "check": f"{module}:ok"}}]
    )
    assert main(["record", "--quiet"]) == 0  # in this process: the module must not forge here
    project.write_text(f"{module}.py", FORGES_JUDGE)
    code = main(["check", "--quiet", "--out", "c.json"])
    out = capsys.readouterr().out
    assert code == 1, out
    written = read_results(project.root / "c.json").case_map()
    assert written["apology"].status == "fail" and "judge" in written["apology"].reason


@pytest.mark.parametrize("samples", [1, "auto"])
def test_a_pull_requests_code_cannot_forge_the_judges_verdict_live(
    project: Project, llm_server: Any, capsys: pytest.CaptureFixture[str], samples: Any
) -> None:
    """Live, the supervised run imports the suite's code; the gate asks the judge itself."""
    from tests.judging.test_judge import JUDGED, grading_judge, judge_pin

    llm_server.reply = grading_judge
    project.write_config(judge=judge_pin(llm_server), samples=samples)
    project.write_cases(JUDGED)
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    module = f"forges_{project.module}"
    project.write_text(f"{module}.py", FORGES_JUDGE)
    curt = f"curt_{project.module}"
    project.write_text(f"{curt}.py", "def answer(case_input, system):\n    return 'no.'\n")
    project.write_config(
        judge=judge_pin(llm_server),
        samples=samples,
        system={"name": "echo", "provider": "python", "target": f"{curt}:answer"},
    )
    apology, blunt = JUDGED
    project.write_cases(
        [apology, {**blunt, "expect": {**blunt["expect"], "check": f"{module}:ok"}}]
    )
    code = main(["check", "--mode", "live", "--quiet", "--out", "c.json"])
    out, err = capsys.readouterr()
    if samples == "auto":
        # The run stopped its rounds on the forged verdicts; the gate's own stop elsewhere.
        assert code == 2, out + err
        assert "cannot be trusted" in err
        return
    assert code == 1, out
    written = read_results(project.root / "c.json").case_map()
    assert written["apology"].status == "fail" and "judge" in written["apology"].reason
