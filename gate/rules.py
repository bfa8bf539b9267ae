"""The gate: a written rule over a comparison, and the verdict with every reason."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from gate.compare import Comparison, rate_dropped
from gate.config import GateConfig
from gate.noise import NoiseAnalysis
from gate.results import EPSILON
from gate.stats import samples_to_decide

Decision = Literal["ship", "block", "inconclusive"]
EXIT_CODES = {"ship": 0, "block": 1, "inconclusive": 3}


@dataclass(frozen=True, slots=True)
class Reason:
    rule: str
    message: str
    cases: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "message": self.message, "cases": self.cases}


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: Decision
    reasons: list[Reason]
    #: things a person should read that did not block (non-critical regressions, …)
    notes: list[str]
    #: facts about the measuring instrument itself (the judge pin and its calibration)
    instrument: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.decision]


def _pct(value: float) -> str:
    return f"{value:.1%}"


def _increase_rule(
    comparison: Comparison, name: str, limit: float | None, label: str, notes: list[str]
) -> Reason | None:
    if limit is None:
        return None
    delta = comparison.usage_of(name)
    if delta.relative is None:
        notes.append(
            f"{label} rule not applied: {label} is unknown on one side or zero on the baseline"
        )
        return None
    if delta.relative > limit + EPSILON:
        return Reason(
            f"max_{'cost' if name == 'cost_usd' else 'latency_p95'}_increase",
            f"{label} rose {delta.relative:+.1%}, above the allowed {limit:.0%}",
        )
    return None


def decide(comparison: Comparison, rule: GateConfig) -> Verdict:
    """Apply every rule; each that fires adds a reason naming its cases."""
    reasons: list[Reason] = []
    notes: list[str] = []
    review = comparison.ruler
    if review is not None and review.blocks:
        count = len(review.loosening)
        reasons.append(
            Reason(
                "ruler_change",
                f"this change loosens the ruler it is judged by ({count} ruler "
                f"change{'s' if count != 1 else ''} above): that needs acceptance on purpose",
            )
        )
    critical_regressions = comparison.critical(comparison.regressions)
    analysis = comparison.noise
    if rule.block_on_critical_regression and critical_regressions:
        reasons.append(
            Reason(
                "critical_regression",
                f"{len(critical_regressions)} critical case(s) passed on the baseline "
                "and fail on the candidate"
                if analysis is None
                else f"{len(critical_regressions)} critical case(s) dropped significantly "
                f"(one-sided Fisher exact test, alpha {rule.alpha_critical:g} each)",
                critical_regressions,
            )
        )
    if rule.block_on_critical_failure:
        failing = sorted(
            case.id
            for case in comparison.candidate_cases.values()
            if case.critical and not case.passed
        )
        if failing:
            reasons.append(
                Reason("critical_failure", f"{len(failing)} critical case(s) fail", failing)
            )
    if rule.block_on_critical_without_baseline:
        unjudged = _critical_without_baseline(comparison)
        if unjudged:
            reasons.append(
                Reason(
                    "critical_without_baseline",
                    f"{len(unjudged)} critical case(s) fail with no valid baseline verdict to "
                    "compare with (new, re-versioned, or in error on the baseline)",
                    unjudged,
                )
            )
    if analysis is not None:
        if rule.block_on_pass_rate_drop:
            reason = _significant_drop(analysis, rule, comparison.regressions)
            if reason:
                reasons.append(reason)
    elif rule.block_on_pass_rate_drop and rate_dropped(
        comparison.shared_baseline_rate, comparison.shared_candidate_rate, rule.tolerance
    ):
        tolerance = f" (tolerance {rule.tolerance:.1%})" if rule.tolerance else ""
        reasons.append(
            Reason(
                "pass_rate_drop",
                f"pass rate on the {comparison.shared_cases} shared cases fell from "
                f"{_pct(comparison.shared_baseline_rate)} to "
                f"{_pct(comparison.shared_candidate_rate)}{tolerance}",
                comparison.regressions,
            )
        )
    if rule.block_on_errors and comparison.errors:
        reasons.append(
            Reason(
                "errors",
                f"{len(comparison.errors)} case(s) in error on the candidate "
                "(an outage is not a pass)",
                comparison.errors,
            )
        )
    for found in (
        _increase_rule(comparison, "cost_usd", rule.max_cost_increase, "cost", notes),
        _increase_rule(
            comparison, "latency_ms_p95", rule.max_latency_p95_increase, "latency p95", notes
        ),
    ):
        if found:
            reasons.append(found)
    quiet = [i for i in comparison.regressions if i not in critical_regressions]
    if quiet and not any(r.rule == "pass_rate_drop" for r in reasons):
        notes.append(f"{len(quiet)} non-critical regression(s) did not block: {', '.join(quiet)}")
    notes.extend(f"ruler change: {note}" for note in comparison.ruler_changes)
    decision: Decision = "block" if reasons else "ship"
    if analysis is not None and not reasons:
        undecided = _inconclusive(analysis, rule)
        if undecided:
            notes.insert(0, undecided)
            if rule.on_inconclusive == "block":
                decision = "inconclusive"
    return Verdict(decision, reasons, notes)


def _critical_without_baseline(comparison: Comparison) -> list[str]:
    """Critical cases failing now whose baseline verdict cannot vouch for them."""
    before = comparison.baseline_cases
    found = []
    for case_id, case in sorted(comparison.candidate_cases.items()):
        if not case.critical or case.passed or case.status == "error":
            continue  # errors have their own rule
        old = before.get(case_id)
        if old is None or old.status == "error" or old.version != case.version:
            found.append(case_id)
    return found


def _significant_drop(
    analysis: NoiseAnalysis, rule: GateConfig, regressions: list[str]
) -> Reason | None:
    """The pass-rate rule under noise: a paired test, never the raw rates."""
    if analysis.suite_p > rule.alpha or -analysis.change.mean <= rule.tolerance + EPSILON:
        return None
    return Reason(
        "pass_rate_drop",
        f"pass rate significantly lower over {analysis.change.cases} shared cases: "
        f"{analysis.change_text()}, paired sign-flip p = {analysis.suite_p:.2g}",
        regressions,
    )


def _inconclusive(analysis: NoiseAnalysis, rule: GateConfig) -> str | None:
    """Nothing blocks, but a drop beyond the margin cannot be ruled out either."""
    margin = rule.non_inferiority_margin
    if analysis.change.low >= -margin - EPSILON:
        return None
    needed = samples_to_decide(analysis.change, margin, analysis.samples)
    advice = (
        f"about {needed} samples per case (now {analysis.samples}) would decide it"
        if needed
        else "the estimate itself is a drop beyond the margin; more samples would not clear it"
    )
    return (
        f"inconclusive: a drop of more than {margin * 100:.0f} points cannot be ruled out — "
        f"{analysis.change_text()}; {advice}"
    )
