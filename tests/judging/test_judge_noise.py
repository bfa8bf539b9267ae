"""A judge that disagrees with itself (issue 22 §4.1): with `judge.consistency: K` every run
asks the judge K times about each output it judged, records each ask, and stores how often
the answers differed per case; a regression only such a judge explains is never a
confident one (gate.judging.consistency, gate.deciding.compare.judge_noise)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate.cli import main
from gate.deciding.compare import judge_noise
from gate.results import CaseResult, CheckResult, JudgeConsistency
from tests.conftest import Project, case
from tests.fakes.llm_server import FakeLLMServer, Received, Reply
from tests.judging.test_judge import RUBRIC, judge_pin

Judge = Callable[[Received], Reply]


def answering(script: dict[str, list[str]]) -> Judge:
    """A judge whose n-th answer about a response containing a key of `script` is the n-th
    word of its list (the last one once the list runs out); FAIL about anything else."""
    asked: Counter[str] = Counter()

    def reply(received: Received) -> Reply:
        response = received.last_user_text.split("<response>", 1)[1]
        for needle, words in script.items():
            if needle in response:
                index = asked[needle]
                asked[needle] += 1
                word = words[min(index, len(words) - 1)]
                return Reply(text=f"{word}: because the script says so")
        return Reply(text="FAIL: not in the script")

    return reply


CASES = [
    # The echo bot answers "<style>: <question>".
    case("apology", "sorry it broke", judge={"rubric": RUBRIC}, fields_={"critical": True}),
    case("blunt", "policy says no", judge={"rubric": RUBRIC}),
    case("plain", "hi", contains="hi"),
]


def consistent_project(project: Project, server: FakeLLMServer, asks: int = 3) -> None:
    project.write_config(judge=judge_pin(server, consistency=asks, max_flip_rate=0.1))
    project.write_cases(CASES)


def cases_of(path: str) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in json.loads(Path(path).read_text())["cases"]}


def test_record_asks_the_judge_k_times_and_replay_measures_the_same_for_free(
    project: Project, llm_server: FakeLLMServer
) -> None:
    llm_server.reply = answering(
        {"plain: sorry": ["PASS", "FAIL", "PASS"], "plain: policy": ["FAIL"]}
    )
    consistent_project(project, llm_server)
    assert main(["record", "--quiet", "--out", "rec.json"]) == 0
    assert len(llm_server.received) == 6  # two judged cases, three asks each
    recorded = cases_of("rec.json")
    assert recorded["apology"]["passed"]  # the verdict is the first answer
    assert recorded["apology"]["judge_consistency"] == {
        "asks": 3,
        "outputs": 1,
        "flipped": 1,
        "flipped_failing": 0,  # its verdict, the first answer, was PASS
        "max_flip_rate": 0.1,
    }
    assert recorded["blunt"]["judge_consistency"]["flipped"] == 0
    assert recorded["plain"]["judge_consistency"] is None  # no judge, nothing to ask

    assert main(["run", "--quiet", "--out", "replay.json"]) == 0
    assert len(llm_server.received) == 6  # every ask replayed
    assert cases_of("replay.json")["apology"]["judge_consistency"]["flipped"] == 1


def test_a_replay_without_the_repeated_asks_is_refused_naming_the_case(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.reply = answering({"sorry": ["PASS"]})
    project.write_config(judge=judge_pin(llm_server))
    project.write_cases(CASES)
    assert main(["record", "--quiet"]) == 0
    consistent_project(project, llm_server)  # consistency asked for after recording
    assert main(["run", "--quiet", "--out", "replay.json"]) == 2
    err = capsys.readouterr().err
    assert "judge" in err and "apology" in err and "Traceback" not in err
    assert not Path("replay.json").exists()


def _baseline_then_candidate(project: Project, server: FakeLLMServer, candidate: list[str]) -> None:
    """A baseline whose judge passes the apology every time, then a candidate (style
    `terse`) whose answers about the apology are `candidate`, all recorded."""
    server.reply = answering(
        {"plain: sorry": ["PASS"], "terse: sorry": candidate, "policy": ["FAIL"]}
    )
    consistent_project(project, server)
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    assert main(["record", "--quiet", "--set", "system.style=terse"]) == 0


@pytest.mark.parametrize(
    ("answers", "exit_code"),
    [
        (["FAIL", "PASS", "PASS"], 3),  # the judge flips: noise, never ship, never block
        (["FAIL", "FAIL", "FAIL"], 1),  # the judge is sure: a critical regression blocks
    ],
)
def test_a_critical_regression_only_a_noisy_judge_explains_is_inconclusive(
    project: Project, llm_server: FakeLLMServer, answers: list[str], exit_code: int
) -> None:
    _baseline_then_candidate(project, llm_server, answers)
    check = ["check", "--quiet", "--set", "system.style=terse", "--report", "r.md"]
    assert main([*check, "--out", "cand.json"]) == exit_code
    markdown = Path("r.md").read_text()
    compare = ["compare", "baselines/demo.json", "cand.json", "--format", "json"]
    assert main([*compare, "--out", "v.json"]) == 0  # a report: `gate` is what exits
    verdict = json.loads(Path("v.json").read_text())
    if exit_code == 3:
        assert verdict["judge_noisy"] == ["apology"] and verdict["regressions"] == []
        assert "Regressed only on a judge that disagrees with itself (1)" in markdown
        assert "disagreed on 1 of 1 output(s), above judge.max" in markdown
        assert "the verdict is inconclusive, never ship" in markdown
    else:
        assert verdict["judge_noisy"] == [] and verdict["regressions"] == ["apology"]
        assert "disagrees with itself" not in markdown


def test_a_deterministic_failure_beside_a_noisy_judge_is_still_a_regression(
    project: Project, llm_server: FakeLLMServer
) -> None:
    llm_server.reply = answering(
        {"plain: sorry": ["PASS"], "terse: sorry": ["FAIL", "PASS", "PASS"], "policy": ["FAIL"]}
    )
    project.write_config(judge=judge_pin(llm_server, consistency=3))
    apology = case("apology", "sorry it broke", judge={"rubric": RUBRIC}, contains="plain")
    project.write_cases([{**apology, "critical": True}])
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    assert main(["record", "--quiet", "--set", "system.style=terse"]) == 0
    assert main(["check", "--quiet", "--set", "system.style=terse", "--out", "cand.json"]) == 1
    compare = ["compare", "baselines/demo.json", "cand.json", "--format", "json"]
    assert main([*compare, "--out", "v.json"]) == 0
    assert json.loads(Path("v.json").read_text())["regressions"] == ["apology"]


def test_gate_on_a_replayed_run_holds_judge_noise_the_same_way(
    project: Project, llm_server: FakeLLMServer
) -> None:
    _baseline_then_candidate(project, llm_server, ["FAIL", "PASS", "PASS"])
    assert main(["run", "--quiet", "--set", "system.style=terse", "--out", "cand.json"]) == 0
    baseline = json.loads((project.root / "baselines" / "demo.json").read_text())
    assert {c["id"]: c for c in baseline["cases"]}["apology"]["judge_consistency"]["flipped"] == 0
    assert main(["gate", "baselines/demo.json", "cand.json"]) == 3


def _result(passes: int, samples: int, failing: set[str], measured: Any) -> CaseResult:
    checks = [CheckResult(check=name, ok=name not in failing) for name in ("judge", "contains")]
    return CaseResult(
        id="c",
        status="fail" if failing else "pass",
        passed=not failing,
        samples=samples,
        passes=passes,
        pass_rate=passes / samples,
        checks=checks,
        judge_consistency=measured,
    )


@st.composite
def consistencies(draw: st.DrawFn, samples: int) -> JudgeConsistency:
    outputs = draw(st.integers(0, samples))
    flipped = draw(st.integers(0, outputs))
    return JudgeConsistency(
        asks=draw(st.integers(2, 20)),
        outputs=outputs,
        flipped=flipped,
        flipped_failing=draw(st.integers(0, flipped)),
        max_flip_rate=draw(st.floats(0, 1)),
    )


@given(data=st.data(), samples=st.integers(1, 8))
def test_judge_noise_only_where_the_flips_could_account_for_the_whole_drop(
    data: st.DataObject, samples: int
) -> None:
    old_passes = data.draw(st.integers(1, samples))
    new_passes = data.draw(st.integers(0, old_passes - 1))
    failing = data.draw(st.sampled_from([{"judge"}, {"contains"}, {"judge", "contains"}]))
    new_measured = data.draw(st.none() | consistencies(samples))
    old_measured = data.draw(st.none() | consistencies(samples))
    old = _result(old_passes, samples, set(), old_measured)
    new = _result(new_passes, samples, failing, new_measured)
    found = judge_noise(old, new)
    if new_measured is None or failing != {"judge"}:
        assert found is None  # no rule measuring it now, or another check explains the drop
        return
    limit = new_measured.max_flip_rate  # the rule's limit holds for both sides

    def above(measured: JudgeConsistency | None) -> bool:
        return bool(
            measured and measured.outputs and measured.flipped / measured.outputs > limit + 1e-9
        )

    candidate = above(new_measured) and (new_passes + new_measured.flipped_failing >= old_passes)
    baseline = (
        old_measured is not None
        and above(old_measured)
        and old_passes - (old_measured.flipped - old_measured.flipped_failing) <= new_passes
    )
    assert (found is not None) == (candidate or baseline)


@pytest.mark.parametrize(
    "figures",
    [
        {"asks": 1, "outputs": 1, "flipped": 0},
        {"asks": 3, "outputs": -1, "flipped": -1},
        {"asks": 3, "outputs": 1, "flipped": 5},
        {"asks": 3, "outputs": 2, "flipped": 1, "flipped_failing": 2},
        {"asks": 3, "outputs": 1, "flipped": 0, "max_flip_rate": -1},
        {"asks": 3, "outputs": 1, "flipped": 0, "max_flip_rate": float("nan")},
    ],
)
def test_figures_no_run_measures_are_refused(figures: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="judge_consistency holds figures no run measures"):
        JudgeConsistency(**{"max_flip_rate": 0.1, **figures})
