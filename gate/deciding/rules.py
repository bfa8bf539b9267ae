"""The gate: a written rule over a comparison, and the verdict with every reason."""

from __future__ import annotations

from gate.deciding.compare import Comparison, judge_noise, rate_dropped
from gate.deciding.floors import floor_reasons
from gate.deciding.heldoutrule import holdout_rule
from gate.deciding.noise import level
from gate.deciding.noise.analysis import NoiseAnalysis
from gate.deciding.scorerules import score_rules
from gate.deciding.undecided import inconclusive_note
from gate.deciding.verdict import EXIT_CODES, Decision, Reason, Verdict
from gate.results import EPSILON
from gate.stats import binomial_upper
from gate.suite.config import GateConfig

__all__ = ["EXIT_CODES", "Decision", "Reason", "Verdict", "decide"]


def _pct(value: float) -> str:
    return f"{value:.1%}"


def _increase_rule(
    comparison: Comparison, name: str, limit: float | None, label: str, notes: list[str]
) -> Reason | None:
    if limit is None:
        return None
    rule_name = f"max_{'cost' if name.startswith('cost_usd') else 'latency_p95'}_increase"
    delta = comparison.usage_of(name)
    unknown = comparison.unpriced if name.startswith("cost_usd") else []
    if unknown or (delta.baseline is not None and delta.candidate is None):
        where = f" for {len(unknown)} case(s) the baseline priced" if unknown else ""
        return Reason(
            rule_name,
            f"{label} is unknown on the candidate{where} (no usage reported, or no price), so "
            "the rule cannot be checked: a figure that cannot be shown is never a pass",
            unknown,
        )
    if delta.relative is None:
        notes.append(
            f"{label} rule not applied: {label} is unknown on one side or zero on the baseline"
        )
        return None
    if delta.relative > limit + EPSILON:
        return Reason(
            rule_name,
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
                f"(one-sided Boschloo exact test, Holm over the critical cases at alpha "
                f"{analysis.shares.critical:.2g})",
                critical_regressions,
            )
        )
    if rule.block_on_critical_regression:
        unjudged_now = _critical_now_in_error(comparison)
        if unjudged_now:
            # An error is not a verdict: a critical case that passed and cannot be judged
            # now has not been shown to still pass (and `block_on_errors: false` must not
            # turn a regression into an error that ships).
            reasons.append(
                Reason(
                    "critical_regression",
                    f"{len(unjudged_now)} critical case(s) passed on the baseline and could "
                    "not be judged on the candidate (error)",
                    unjudged_now,
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
                    f"{len(unjudged)} critical case(s) fail or err with no valid baseline "
                    "verdict to compare with (new, re-versioned, or in error on the baseline)",
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
        _increase_rule(
            comparison, "cost_usd_per_answer", rule.max_cost_increase, "cost per answer", notes
        ),
        _increase_rule(
            comparison, "latency_ms_p95", rule.max_latency_p95_increase, "latency p95", notes
        ),
    ):
        if found:
            reasons.append(found)
    reasons.extend(floor_reasons(comparison, rule))
    has_critical = any(case.critical for case in comparison.candidate_cases.values())
    pairwise = _pairwise_rule(
        comparison, rule, notes, level.shares(rule, has_critical=has_critical)
    )
    if pairwise:
        reasons.append(pairwise)
    held_out, held_out_notes = holdout_rule(comparison.holdout, rule.holdout_max_drop)
    notes.extend(held_out_notes)
    if held_out:
        reasons.append(Reason("holdout_max_drop", held_out))  # counts, never a case
    scored = score_rules(comparison, rule, level.shares(rule, has_critical=has_critical))
    reasons.extend(Reason(*found) for found in scored.reasons)
    notes.extend(scored.notes)
    unverified = _unverified_critical(comparison)
    if unverified and rule.unverified_critical == "block":
        reasons.append(
            Reason("unverified_critical", _UNVERIFIED.format(len(unverified)), unverified)
        )
    elif unverified:
        notes.append(
            _UNVERIFIED.format(len(unverified))
            + f": {', '.join(unverified)} (the rule gate.unverified_critical: warn lets this pass)"
        )
    quiet = [i for i in comparison.regressions if i not in critical_regressions]
    if quiet and not any(r.rule == "pass_rate_drop" for r in reasons):
        notes.append(f"{len(quiet)} non-critical regression(s) did not block: {', '.join(quiet)}")
    notes.extend(
        f"ruler change: {note}"
        for note in comparison.ruler_changes
        if note not in comparison.allowed_changes  # the report's head names those
    )
    noisy_critical = comparison.critical(comparison.judge_noisy)
    if comparison.judge_noisy:
        notes.append(_judge_noise_note(comparison, noisy_critical))
    decision: Decision = "block" if reasons else "ship"
    if noisy_critical and not reasons and rule.block_on_critical_regression:
        # Noise cannot show the case still passes, nor that it regressed: never a ship.
        decision = "inconclusive"
    if analysis is not None and not reasons:
        undecided = inconclusive_note(analysis, rule)
        if undecided:
            notes.insert(0, undecided)
            # A critical drop only a shift between runs could explain never ships, whatever
            # `on_inconclusive` says: the history may only turn a block into "undecided";
            # nor does a drop the suite test had too few units to test at its level.
            forced = analysis.shift_explained or analysis.suite_unreachable
            if rule.on_inconclusive == "block" or forced:
                decision = "inconclusive"
    if scored.undecided and not reasons:
        # gate.deciding.scorerules keeps a fall `on_inconclusive: ship` lets pass in `notes`.
        notes[:0] = scored.undecided
        decision = "inconclusive"
    return Verdict(decision, reasons, notes)


def _judge_noise_note(comparison: Comparison, noisy_critical: list[str]) -> str:
    first = comparison.judge_noisy[0]
    why = judge_noise(comparison.baseline_cases[first], comparison.candidate_cases[first])
    critical = (
        f" ({len(noisy_critical)} critical: the verdict is inconclusive, never ship)"
        if noisy_critical
        else ""
    )
    return (
        f"{len(comparison.judge_noisy)} case(s) regressed only on the judge's verdict while "
        f"the judge disagreed with itself on them{critical}: "
        f"{', '.join(comparison.judge_noisy)} ({first}: {why}). Not a confident regression: "
        "read the outputs, then sharpen the rubric or pin a steadier judge"
    )


_UNVERIFIED = (
    "{} critical case(s) are judged on recordings this change added or changed that CI did "
    "not seal: unverified, they are the author's answers"
)


def _unverified_critical(comparison: Comparison) -> list[str]:
    """The critical cases judged on changed recordings CI did not seal (gate.drift.replayed)."""
    replay = comparison.replay
    if replay is None or not replay.replayed:
        return []
    return sorted(
        comparison.critical([i for i in replay.unsealed_cases if i in comparison.candidate_cases])
    )


def _pairwise_rule(
    comparison: Comparison, rule: GateConfig, notes: list[str], shares: level.Shares
) -> Reason | None:
    """`max_pairwise_loss_rate`: the share of judged pairs the baseline's output won.

    Blocks only when that share is significantly above the limit: a one-sided exact
    binomial test of the losses among the judged pairs (ties, position-bias ties
    included, count as judged and not lost) at the rule's share of the gate's level.
    A pair the judge could not judge is never a win: while any is in error, the rule
    cannot vouch for the candidate and blocks.
    """
    limit = rule.max_pairwise_loss_rate
    analysis = comparison.pairwise
    if limit is None:
        if analysis is not None and analysis.errors:
            notes.append(f"{analysis.errors} pair(s) could not be judged by the pairwise judge")
        return None
    if analysis is None:
        notes.append(
            "max_pairwise_loss_rate not applied: no pairs were judged in this comparison "
            "(no pairwise judge case, or no config to read recorded verdicts from)"
        )
        return None
    losing = [case.id for case in analysis.cases if case.count("loss")]
    if analysis.candidate_errors:
        return Reason(
            "max_pairwise_loss_rate",
            f"{len(analysis.candidate_errors)} pairwise case(s) have no candidate output to "
            "compare (in error): an error is never a win, so the loss rate cannot be vouched for",
            sorted(analysis.candidate_errors),
        )
    if analysis.errors:
        return Reason(
            "max_pairwise_loss_rate",
            f"{analysis.errors} pair(s) could not be judged by the pairwise judge (an error is "
            "never a win), so the loss rate cannot be vouched for",
            [case.id for case in analysis.cases if case.count("error")],
        )
    rate = analysis.loss_rate
    if rate is None:
        notes.append("max_pairwise_loss_rate not applied: no pair could be compared")
        return None
    p_value = binomial_upper(analysis.losses, analysis.judged, limit)
    if rate > limit + EPSILON and p_value <= shares.pairwise:
        return Reason(
            "max_pairwise_loss_rate",
            f"the pairwise judge preferred the baseline's output in {analysis.losses} of "
            f"{analysis.judged} judged pairs ({rate:.1%}), significantly above the allowed "
            f"{limit * 100:g}% (one-sided exact binomial p = {p_value:.2g}, alpha "
            f"{shares.pairwise:.2g})",
            losing,
        )
    if rate > limit + EPSILON:
        notes.append(
            f"pairwise loss rate {rate:.1%} ({analysis.losses} of {analysis.judged} judged pairs) "
            f"is above the allowed {limit * 100:g}% but not significantly (one-sided exact "
            f"binomial p = {p_value:.2g}, alpha {shares.pairwise:.2g}): more pairs would decide"
        )
    return None


def _critical_now_in_error(comparison: Comparison) -> list[str]:
    """Critical cases that passed on the baseline and are in error on the candidate."""
    return sorted(
        case_id
        for case_id in comparison.errors
        if (candidate := comparison.candidate_cases.get(case_id)) is not None
        and candidate.critical
        and candidate.status == "error"
        and (baseline := comparison.baseline_cases.get(case_id)) is not None
        and baseline.passed
        and baseline.version == candidate.version
    )


def _critical_without_baseline(comparison: Comparison) -> list[str]:
    """Critical cases failing (or in error) now whose baseline verdict cannot vouch for them.

    Errors count: with `block_on_errors: false`, an error on a new or re-versioned
    critical case would otherwise ship it unjudged.
    """
    before = comparison.baseline_cases
    found = []
    for case_id, case in sorted(comparison.candidate_cases.items()):
        if not case.critical or case.passed:
            continue
        old = before.get(case_id)
        if old is None or old.status == "error" or old.version != case.version:
            found.append(case_id)
    return found


def _significant_drop(
    analysis: NoiseAnalysis, rule: GateConfig, regressions: list[str]
) -> Reason | None:
    """The pass-rate rule under noise: a paired test, never the raw rates."""
    if analysis.suite_p > analysis.suite_alpha or -analysis.change.mean <= rule.tolerance + EPSILON:
        return None
    if analysis.suite_confirmed is False:
        return None  # fresh samples on both sides did not show the drop again
    clustered = f" over {analysis.clusters} clusters" if analysis.clusters else ""
    return Reason(
        "pass_rate_drop",
        f"pass rate significantly lower over {analysis.change.cases} shared cases: "
        f"{analysis.change_text()}, paired sign-flip p = {analysis.suite_p:.2g}{clustered} "
        f"(alpha {analysis.suite_alpha:.2g})",
        regressions,
    )
