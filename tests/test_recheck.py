"""The gate's own process judges again what the supervised run reported."""

from __future__ import annotations

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
