"""The gate rule on hand-built result pairs: every rule, ties, and the reasons."""

from __future__ import annotations

from gate.compare import compare
from gate.config import GateConfig
from gate.results import CaseResult
from gate.rules import decide
from tests.factories import result, run


def verdict_of(baseline: list[CaseResult], candidate: list[CaseResult], **rule: object):  # type: ignore[no-untyped-def]
    return decide(compare(run(baseline), run(candidate)), GateConfig.model_validate(rule))


def test_a_higher_pass_rate_never_hides_a_critical_regression() -> None:
    baseline = [
        result("crit", "pass", critical=True),
        result("a", "fail"),
        result("b", "fail"),
        result("c", "pass"),
    ]
    candidate = [
        result("crit", "fail", critical=True),
        result("a", "pass"),
        result("b", "pass"),
        result("c", "pass"),
    ]
    verdict = verdict_of(baseline, candidate)
    assert verdict.decision == "block"
    assert verdict.exit_code == 1
    assert [(r.rule, r.cases) for r in verdict.reasons] == [("critical_regression", ["crit"])]


def test_non_critical_regression_with_higher_rate_ships_but_is_listed() -> None:
    verdict = verdict_of(
        [result("a", "pass"), result("b", "fail"), result("c", "fail")],
        [result("a", "fail"), result("b", "pass"), result("c", "pass")],
    )
    assert verdict.decision == "ship"
    assert verdict.notes == ["1 non-critical regression(s) did not block: a"]


def test_tie_ships() -> None:
    verdict = verdict_of(
        [result("a", "pass"), result("b", "fail")], [result("a", "fail"), result("b", "pass")]
    )
    assert verdict.decision == "ship"


def test_pass_rate_drop_and_tolerance() -> None:
    baseline = [result(str(i), "pass") for i in range(4)]
    candidate = [result("0", "fail"), *[result(str(i), "pass") for i in range(1, 4)]]
    verdict = verdict_of(baseline, candidate)
    assert [r.rule for r in verdict.reasons] == ["pass_rate_drop"]
    assert verdict.reasons[0].message == "pass rate on the 4 shared cases fell from 100.0% to 75.0%"
    assert verdict_of(baseline, candidate, tolerance=0.25).decision == "ship"
    assert verdict_of(baseline, candidate, block_on_pass_rate_drop=False).decision == "ship"


def test_tolerance_epsilon_on_k_over_n() -> None:
    # 16/20 → 15/20: a drop of 0.05000000000000004 in floating point, within a 0.05 tolerance.
    baseline = [result(str(i), "pass" if i < 16 else "fail") for i in range(20)]
    candidate = [result(str(i), "pass" if i < 15 else "fail") for i in range(20)]
    assert verdict_of(baseline, candidate, tolerance=0.05).decision == "ship"
    assert verdict_of(baseline, candidate, tolerance=0.04).decision == "block"


def test_critical_failure_rule_is_off_by_default() -> None:
    baseline, candidate = [result("c", "fail", critical=True)], [result("c", "fail", critical=True)]
    assert verdict_of(baseline, candidate).decision == "ship"
    verdict = verdict_of(baseline, candidate, block_on_critical_failure=True)
    assert [(r.rule, r.cases) for r in verdict.reasons] == [("critical_failure", ["c"])]


def test_errors_block_unless_told_otherwise() -> None:
    baseline, candidate = (
        [result("a", "pass"), result("b")],
        [result("a", "error", reason="503"), result("b")],
    )
    verdict = verdict_of(baseline, candidate)
    assert ("errors", ["a"]) in [(r.rule, r.cases) for r in verdict.reasons]
    # Without the errors rule the case still is not a pass: the pass rate drops.
    lenient = verdict_of(baseline, candidate, block_on_errors=False)
    assert [r.rule for r in lenient.reasons] == ["pass_rate_drop"]
    both_off = verdict_of(baseline, candidate, block_on_errors=False, block_on_pass_rate_drop=False)
    assert both_off.decision == "ship"


def test_added_removed_and_changed_do_not_count() -> None:
    baseline = [result("keep"), result("gone", "pass"), result("moved", "pass", version=1)]
    candidate = [result("keep"), result("new", "fail"), result("moved", "fail", version=2)]
    assert verdict_of(baseline, candidate).decision == "ship"


def test_cost_and_latency_limits() -> None:
    baseline = [result("a", cost=0.010, latency=100)]
    candidate = [result("a", cost=0.013, latency=150)]
    assert verdict_of(baseline, candidate).decision == "ship"
    verdict = verdict_of(baseline, candidate, max_cost_increase=0.2, max_latency_p95_increase=0.6)
    assert [r.rule for r in verdict.reasons] == ["max_cost_increase"]
    assert verdict.reasons[0].message == "cost rose +30.0%, above the allowed 20%"
    verdict = verdict_of(baseline, candidate, max_latency_p95_increase=0.5)
    assert verdict.decision == "ship"  # exactly +50%: not above
    assert verdict_of(baseline, candidate, max_latency_p95_increase=0.4).decision == "block"


def test_cost_rule_without_cost_data_is_a_note_not_a_block() -> None:
    verdict = verdict_of([result("a")], [result("a")], max_cost_increase=0.1)
    assert verdict.decision == "ship"
    assert verdict.notes[0].startswith("cost rule not applied")


def test_every_reason_that_fires_is_listed() -> None:
    baseline = [result("c", "pass", critical=True), result("x", "pass")]
    candidate = [result("c", "fail", critical=True), result("x", "error", reason="down")]
    rules = [r.rule for r in verdict_of(baseline, candidate).reasons]
    assert rules == ["critical_regression", "pass_rate_drop", "errors"]
