"""The gate rule on hand-built result pairs: every rule, ties, and the reasons."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from gate.deciding.compare import compare
from gate.deciding.rules import decide
from gate.results import EPSILON, CaseResult
from gate.suite.config import GateConfig
from tests.factories import result, run, sampled


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
    assert verdict.reasons[0].message == "cost per answer rose +30.0%, above the allowed 20%"
    verdict = verdict_of(baseline, candidate, max_latency_p95_increase=0.5)
    assert verdict.decision == "ship"  # exactly +50%: not above
    assert verdict_of(baseline, candidate, max_latency_p95_increase=0.4).decision == "block"


def test_cost_rule_without_cost_data_is_a_note_not_a_block() -> None:
    verdict = verdict_of([result("a")], [result("a")], max_cost_increase=0.1)
    assert verdict.decision == "ship"
    assert verdict.notes[0].startswith("cost per answer rule not applied")


def _answers(case_id: str, costs: list[float]) -> CaseResult:
    """A case answered once per cost, every answer passing."""
    case = result(case_id, cost=math.fsum(costs))
    case.outputs = [
        dataclasses.replace(case.outputs[0], sample=index, cost_usd=cost)
        for index, cost in enumerate(costs)
    ]
    case.samples = case.passes = len(costs)
    return case


def test_the_cost_rule_reads_one_answer_not_the_runs_unequal_totals() -> None:
    """A baseline drawn 12 times a case and a check drawn 4 times: the totals fall by two
    thirds while each answer costs 30% more, which is what the rule is about."""
    baseline = [_answers("a", [0.010] * 12), _answers("b", [0.020] * 12)]
    candidate = [_answers("a", [0.013] * 4), _answers("b", [0.026] * 4)]
    verdict = verdict_of(baseline, candidate, max_cost_increase=0.2)
    assert [r.rule for r in verdict.reasons] == ["max_cost_increase"]
    assert verdict.reasons[0].message == "cost per answer rose +30.0%, above the allowed 20%"
    comparison = compare(run(baseline), run(candidate))
    assert comparison.usage_of("cost_usd").relative == pytest.approx(-0.5666, abs=1e-3)
    per_answer = comparison.usage_of("cost_usd_per_answer")
    assert (per_answer.baseline, per_answer.candidate) == pytest.approx((0.015, 0.0195))


def test_each_case_weighs_the_same_in_the_cost_per_answer() -> None:
    """More samples of a cheap case on one side must not pass for a saving: the mean is
    over cases, each its own answers' mean, and over the cases both runs answered."""
    baseline = [_answers("cheap", [0.001] * 2), _answers("dear", [0.100] * 2)]
    candidate = [
        _answers("cheap", [0.001] * 20),
        _answers("dear", [0.100] * 2),
        _answers("new", [9.0]),
    ]
    per_answer = compare(run(baseline), run(candidate)).usage_of("cost_usd_per_answer")
    assert per_answer.baseline == pytest.approx(per_answer.candidate)


def test_every_reason_that_fires_is_listed() -> None:
    baseline = [result("c", "pass", critical=True), result("x", "pass")]
    candidate = [result("c", "fail", critical=True), result("x", "error", reason="down")]
    rules = [r.rule for r in verdict_of(baseline, candidate).reasons]
    assert rules == ["critical_regression", "pass_rate_drop", "errors"]


# --- absolute floors and budgets ------------------------------------------------------


def passing(count: int, failing: int = 0, **fields: object) -> list[CaseResult]:
    return [result(f"p{i}", **fields) for i in range(count)] + [  # type: ignore[arg-type]
        result(f"f{i}", "fail", **fields)  # type: ignore[arg-type]
        for i in range(failing)
    ]


def test_the_pass_rate_floor_holds_whatever_the_baseline() -> None:
    # Nothing dropped (the baseline is as bad): only the floor blocks.
    cases = passing(16, 4)
    verdict = verdict_of(cases, cases, min_pass_rate=0.85)
    assert [(r.rule, r.message) for r in verdict.reasons] == [
        ("min_pass_rate", "pass rate 0.80 is below the floor 0.85")
    ]
    assert verdict_of(passing(17, 3), passing(17, 3), min_pass_rate=0.85).decision == "ship"
    assert verdict_of(cases, cases).decision == "ship"  # off by default


def test_the_floor_reads_the_weighted_rate_with_enough_digits_to_differ() -> None:
    heavy = [result("a", weight=8499), result("b", "fail", weight=1501)]
    verdict = verdict_of(heavy, heavy, min_pass_rate=0.85)
    assert verdict.reasons[0].message == "pass rate 0.8499 is below the floor 0.85"


def test_with_samples_the_floor_must_be_proven_one_sided() -> None:
    few = [sampled("a", 18, 20), sampled("b", 17, 20)]
    verdict = verdict_of(few, few, min_pass_rate=0.85)
    assert [r.message for r in verdict.reasons] == [
        "with 20 samples per case the sample pass rate 0.88 (35/40 samples passed) does not "
        "prove ≥ 0.85 (one-sided Clopper–Pearson lower bound 0.72 at alpha 0.02): more "
        "samples, or more cases, would"
    ]
    many = [sampled(f"c{i}", 19, 20) for i in range(20)]  # 380/400: lower bound 0.92
    assert verdict_of(many, many, min_pass_rate=0.85).decision == "ship"
    low = [sampled("a", 16, 20), sampled("b", 4, 10)]
    assert verdict_of(low, low, min_pass_rate=0.85).reasons[0].message == (
        "sample pass rate 0.67 (20/30 samples passed) is below the floor 0.85"
    )


def test_a_perfect_run_of_20_samples_proves_0_8_but_not_0_85() -> None:
    perfect = [sampled("a", 20, 20)]  # one-sided Clopper-Pearson bound at alpha 0.02: 0.822
    assert verdict_of(perfect, perfect, min_pass_rate=0.8).decision == "ship"
    assert verdict_of(perfect, perfect, min_pass_rate=0.85).decision == "block"
    assert verdict_of(perfect, perfect, min_pass_rate=0.85, alpha=0.3).decision == "ship"


@given(
    passes=st.integers(0, 60),
    extra=st.integers(0, 60),
    floor=st.floats(0, 1, allow_nan=False),
    alpha=st.sampled_from([0.01, 0.02, 0.05, 0.2]),
)
def test_the_sampled_floor_blocks_exactly_below_the_clopper_pearson_bound(
    passes: int, extra: int, floor: float, alpha: float
) -> None:
    samples = max(passes + extra, 2)
    passes = min(passes, samples)
    cases = [sampled("a", passes, samples)]
    blocked = verdict_of(cases, cases, min_pass_rate=floor, alpha=alpha).decision == "block"
    # scipy's two-sided exact interval at 1 - 2 alpha has the one-sided bound as its low end.
    interval = scipy_stats.binomtest(passes, samples).proportion_ci(1 - 2 * alpha, "exact")
    if abs(interval.low - floor) > 1e-6:  # the bisection's last digits decide a tie
        assert blocked == (interval.low + EPSILON < floor)
    if passes < samples:  # one more passing sample never turns ship into block
        better = [sampled("a", passes + 1, samples)]
        improved = verdict_of(better, better, min_pass_rate=floor, alpha=alpha)
        assert improved.decision == "ship" or blocked


def test_errored_samples_count_against_the_floor() -> None:
    cases = [sampled("a", 20, 20), result("down", "error", reason="503")]
    verdict = verdict_of(cases, cases, min_pass_rate=0.5, block_on_errors=False)
    assert verdict.decision == "ship"  # 20/21
    verdict = verdict_of(cases, cases, min_pass_rate=0.99, block_on_errors=False)
    assert "(20/21 samples passed)" in verdict.reasons[0].message


def test_the_cost_budget_of_the_run() -> None:
    cases = [result("a", cost=0.02), result("b", cost=0.015)]
    assert verdict_of(cases, cases, max_cost_usd=0.05).decision == "ship"
    verdict = verdict_of(cases, cases, max_cost_usd=0.03)
    assert [(r.rule, r.message) for r in verdict.reasons] == [
        ("max_cost_usd", "the run cost $0.0350, above the budget max_cost_usd $0.03")
    ]


def test_a_cost_budget_that_cannot_be_checked_blocks() -> None:
    cases = [result("a", cost=0.01), result("b")]
    verdict = verdict_of(cases, cases, max_cost_usd=1)
    assert verdict.decision == "block"
    assert verdict.reasons[0].cases == ["b"]
    assert verdict.reasons[0].message.startswith("the cost of 1 case(s) is unknown")


def test_the_latency_budget_of_the_run() -> None:
    cases = [result(str(i), latency=100 * (i + 1)) for i in range(20)]  # p95: 1,905 ms
    assert verdict_of(cases, cases, max_latency_p95_ms=2000).decision == "ship"
    verdict = verdict_of(cases, cases, max_latency_p95_ms=1500)
    assert [r.message for r in verdict.reasons] == [
        "latency p95 1,905 ms is above the budget max_latency_p95_ms 1,500 ms"
    ]
    unknown = [result("a")]
    assert (
        "cannot be checked" in verdict_of(unknown, unknown, max_latency_p95_ms=1).reasons[0].message
    )


def test_max_errors_tolerates_a_few_once_block_on_errors_is_off() -> None:
    baseline = passing(5)
    candidate = [*passing(3), result("x", "error", reason="503"), result("y", "error")]
    lenient = {"block_on_errors": False, "block_on_pass_rate_drop": False}
    assert verdict_of(baseline, candidate, max_errors=2, **lenient).decision == "ship"
    verdict = verdict_of(baseline, candidate, max_errors=1, **lenient)
    assert [(r.rule, r.message, r.cases) for r in verdict.reasons] == [
        ("max_errors", "2 case(s) in error on the candidate, more than max_errors 1", ["x", "y"])
    ]
    # Next to block_on_errors, which still blocks on the first error by itself.
    assert [r.rule for r in verdict_of(baseline, candidate, max_errors=2).reasons] == ["errors"]


def test_cases_a_pull_request_adds_cannot_lift_the_floor() -> None:
    # The base's floor blocks 18 of 20; sixty easy new cases would make it 78 of 80.
    baseline = passing(18, 2)
    padded = [*passing(18, 2), *[result(f"easy-{i}", weight=5) for i in range(60)]]
    verdict = verdict_of(baseline, padded, min_pass_rate=0.95)
    assert [(r.rule, r.message) for r in verdict.reasons] == [
        (
            "min_pass_rate",
            "pass rate 0.90 is below the floor 0.95 (over the 20 case(s) the baseline has too; "
            "60 new case(s) count once a baseline has them)",
        )
    ]
    # Cases on both sides count, whatever was added: only the shared ones are held back.
    assert verdict_of(padded, padded, min_pass_rate=0.95).decision == "ship"


def test_fast_cases_a_pull_request_adds_cannot_pull_down_the_latency_p95() -> None:
    baseline = [result(str(i), latency=3.0) for i in range(20)]
    padded = [*baseline, *[result(f"fast-{i}", latency=1.0) for i in range(40)]]
    verdict = verdict_of(baseline, padded, max_latency_p95_ms=2.5)
    assert [r.message for r in verdict.reasons] == [
        "latency p95 3 ms is above the budget max_latency_p95_ms 2.5 ms (over the 20 case(s) "
        "the baseline has too; 40 new case(s) count once a baseline has them)"
    ]


def test_a_critical_case_that_errs_instead_of_failing_still_blocks() -> None:
    # With errors tolerated, an error must not be the way a critical regression ships.
    lenient = {"block_on_errors": False, "max_errors": 3, "tolerance": 0.5}
    baseline = [result("refund", critical=True), *passing(4)]
    candidate = [result("refund", "error", critical=True, reason="bad vector"), *passing(4)]
    verdict = verdict_of(baseline, candidate, **lenient)
    assert [(r.rule, r.cases) for r in verdict.reasons] == [("critical_regression", ["refund"])]
    assert verdict.reasons[0].message == (
        "1 critical case(s) passed on the baseline and could not be judged on the candidate (error)"
    )
    # A re-versioned critical case in error has no baseline verdict to vouch for it.
    bumped = [result("refund", "error", critical=True, version=2), *passing(4)]
    verdict = verdict_of(baseline, bumped, **lenient)
    assert [(r.rule, r.cases) for r in verdict.reasons] == [
        ("critical_without_baseline", ["refund"])
    ]
    # A non-critical case in error stays under the error rules.
    quiet = [result("refund", critical=True), result("p0", "error"), *passing(4)[1:]]
    assert verdict_of(baseline, quiet, **lenient).decision == "ship"
