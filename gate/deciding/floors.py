"""The absolute floors and budgets: the candidate alone, whatever the baseline.

`min_pass_rate`, `max_cost_usd`, `max_latency_p95_ms` and `max_errors` (gate.deciding.rules
applies them beside the comparative rules).
"""

from __future__ import annotations

from gate.deciding.compare import Comparison
from gate.deciding.noise.suitetest import verdicts
from gate.deciding.verdict import Reason
from gate.results import EPSILON, CaseResult, summarise
from gate.stats import clopper_pearson_lower
from gate.suite.config import GateConfig


def floor_reasons(comparison: Comparison, rule: GateConfig) -> list[Reason]:
    """`min_pass_rate`, `max_cost_usd`, `max_latency_p95_ms`, `max_errors`, each when set."""
    found = [
        _pass_rate_floor(comparison, rule.min_pass_rate, rule.alpha),
        _cost_budget(comparison, rule.max_cost_usd),
        _latency_budget(comparison, rule.max_latency_p95_ms),
        _error_budget(comparison, rule.max_errors),
    ]
    return [reason for reason in found if reason is not None]


def _floor_cases(comparison: Comparison) -> tuple[list[CaseResult], str]:
    """The candidate cases a rate or a percentile is measured over, and a note saying so.

    Cases the baseline lacks are left out: otherwise a pull request could lift the
    pass rate, or pull down the latency p95, by adding easy or fast cases.
    """
    everything = list(comparison.candidate_cases.values())
    if not comparison.baseline_cases:
        return everything, ""
    kept = [case for case in everything if case.id in comparison.baseline_cases]
    left_out = len(everything) - len(kept)
    if not left_out:
        return kept, ""
    return kept, (
        f" (over the {len(kept)} case(s) the baseline has too; {left_out} new case(s) count "
        "once a baseline has them)"
    )


def _pass_rate_floor(comparison: Comparison, floor: float | None, alpha: float) -> Reason | None:
    """Without repeated samples, the weighted pass rate of every candidate case must reach
    the floor; with them, the pooled samples must prove it (the exact one-sided
    Clopper–Pearson bound at `alpha`: P(ship | rate at the floor) <= alpha).

    Under `samples: auto` the cases that looked worse drew more samples, which would pull
    the pooled rate down; every case then counts its first m samples, m the fewest any has.
    """
    cases, over = _floor_cases(comparison)
    if floor is None or not cases:
        return None
    if all(case.samples <= 1 for case in cases):
        rate = summarise(cases).pass_rate
        if rate + EPSILON >= floor:
            return None
        shown, limit = _two_rates(rate, floor)
        return Reason("min_pass_rate", f"pass rate {shown} is below the floor {limit}{over}")
    # Errored samples count as not passing: an outage is not a pass.
    passes, samples = _pooled(cases, comparison.candidate_looks is not None)
    rate = passes / samples
    shown, limit = _two_rates(rate, floor)
    counted = f"{passes}/{samples} samples passed"
    if rate + EPSILON < floor:
        return Reason(
            "min_pass_rate",
            f"sample pass rate {shown} ({counted}) is below the floor {limit}{over}",
        )
    low = clopper_pearson_lower(passes, samples, alpha)
    if low + EPSILON >= floor:
        return None
    return Reason(
        "min_pass_rate",
        f"with {_per_case(cases)} per case the sample pass rate {shown} ({counted}) does not "
        f"prove ≥ {limit} (one-sided Clopper–Pearson lower bound {low:.2f} at alpha "
        f"{alpha:g}){over}: more samples, or more cases, would",
    )


def _pooled(cases: list[CaseResult], adaptive: bool) -> tuple[int, int]:
    """Passes and samples over every case (errors count as not passing)."""
    if adaptive:
        fewest = min(case.samples for case in cases)
        prefixes = [verdicts(case) for case in cases]
        if fewest and all(p is not None for p in prefixes):
            return sum(sum(p[:fewest]) for p in prefixes if p is not None), fewest * len(cases)
    return sum(case.passes for case in cases), sum(case.samples for case in cases)


def _two_rates(rate: float, floor: float) -> tuple[str, str]:
    """Both as decimals, with enough digits that a rate below the floor never reads as equal."""
    for digits in range(2, 7):
        shown, limit = f"{rate:.{digits}f}", f"{floor:.{digits}f}"
        if (shown != limit) == (abs(rate - floor) > EPSILON):
            return shown, f"{floor:g}"
    return f"{rate:.6f}", f"{floor:g}"


def _per_case(cases: list[CaseResult]) -> str:
    counts = sorted({case.samples for case in cases})
    if len(counts) == 1:
        return f"{counts[0]} samples"
    return f"{counts[0]}–{counts[-1]} samples"


def _cost_budget(comparison: Comparison, budget: float | None) -> Reason | None:
    if budget is None:
        return None
    judged = [case for case in comparison.candidate_cases.values() if case.status != "error"]
    total = sum(case.cost_usd for case in judged if case.cost_usd is not None)
    if total > budget + EPSILON:
        return Reason(
            "max_cost_usd", f"the run cost ${total:,.4f}, above the budget max_cost_usd ${budget:g}"
        )
    unknown = sorted(case.id for case in judged if case.cost_usd is None)
    if unknown:
        # Unknown is not zero: a budget that cannot be checked cannot vouch for the run.
        return Reason(
            "max_cost_usd",
            f"the cost of {len(unknown)} case(s) is unknown (no `pricing:` for their model and "
            f"the system reported none), so the budget max_cost_usd ${budget:g} cannot be "
            "checked: add pricing, or unset max_cost_usd",
            unknown,
        )
    return None


def _latency_budget(comparison: Comparison, budget: float | None) -> Reason | None:
    if budget is None:
        return None
    cases, over = _floor_cases(comparison)
    p95 = summarise(cases).latency_ms_p95
    if p95 is None:
        return Reason(
            "max_latency_p95_ms",
            f"no sample of the run has a recorded latency, so the budget max_latency_p95_ms "
            f"{_ms(budget)} ms cannot be checked: record the suite again, or unset it",
        )
    if p95 > budget + EPSILON:
        return Reason(
            "max_latency_p95_ms",
            f"latency p95 {_ms(p95)} ms is above the budget max_latency_p95_ms {_ms(budget)} ms"
            f"{over}",
        )
    return None


def _ms(value: float) -> str:
    """Whole milliseconds, unless that would show a 2.5 ms budget as 2 ms."""
    return f"{value:,.0f}" if value >= 100 or value == int(value) else f"{value:,.1f}"


def _error_budget(comparison: Comparison, budget: int | None) -> Reason | None:
    if budget is None:
        return None
    errored = sorted(i for i, case in comparison.candidate_cases.items() if case.status == "error")
    if len(errored) <= budget:
        return None
    return Reason(
        "max_errors",
        f"{len(errored)} case(s) in error on the candidate, more than max_errors {budget}",
        errored,
    )
