"""The score rules of the gate: `max_mean_score_drop`, `min_mean_score`, `min_pass_hat_k`.

`max_mean_score_drop` blocks a check only when its mean score per case fell by more than
the stated `drop` *and* the fall is significant: the exact one-sided paired sign-flip test
(gate.deciding.scores), whole clusters flipped together, at the score rule's share of the
gate's one level (gate.deciding.noise.level), Holm across the checks it names. Short of a
block it follows the pass-rate rule's conventions: a fall beyond `drop` the test has too
few units (clusters, or cases) to ever find at its level is inconclusive (exit 3) whatever
`on_inconclusive` says; a fall beyond `drop` the 95% interval cannot rule out is
inconclusive under `on_inconclusive: block`, a note otherwise.

The floors, like `min_pass_rate`, are over the candidate's cases the baseline has too, and
with repeated samples the candidate must prove them at `alpha`: the one-sided normal bound
with each case's variance bounded from above (gate.deciding.scorestats: the samples' own
variance alone made the bound overshoot; the cases are the suite's, only samples are drawn).

A score the candidate cannot show is never a pass: a case the baseline scored whose
candidate side has none (every sample in error, or the check gone), a floor's case without
a score, a case with fewer samples than pass^k's k, or a check no case scored at all is a
reason that blocks, naming the cases and the fix, as a budget that cannot be checked does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gate.deciding.compare import Comparison
from gate.deciding.noise.level import Shares
from gate.deciding.scores import CheckScores, scores_of
from gate.deciding.scorestats import (
    mean_lower_bound,
    mean_score_variance,
    pass_hat_k,
    pass_hat_k_variance,
)
from gate.results import EPSILON, CaseResult
from gate.stats import holm
from gate.suite.config import GateConfig

#: how many case ids a reason names before "…"
SHOWN = 10


@dataclass(slots=True)
class ScoreFinding:
    """What the score rules found: (rule, message, cases) reasons, notes, and what leaves
    the verdict inconclusive when nothing blocks (a fall `on_inconclusive: ship` lets pass
    is a note, never in `undecided`)."""

    reasons: list[tuple[str, str, list[str]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)


def _ids(ids: list[str]) -> str:
    return ", ".join(ids[:SHOWN]) + (" …" if len(ids) > SHOWN else "")


def _points(value: float) -> str:
    return f"{value:+.3f}"


def score_rules(comparison: Comparison, rule: GateConfig, shares: Shares) -> ScoreFinding:
    """Apply every score rule the gate sets; nothing when it sets none."""
    finding = ScoreFinding()
    if rule.max_mean_score_drop is not None:
        _drop_rule(comparison, rule, shares.scores, finding)
    for check, floor in sorted((rule.min_mean_score or {}).items()):
        _score_floor(comparison, check, floor, rule.alpha, finding)
    if rule.min_pass_hat_k is not None:
        wanted = rule.min_pass_hat_k
        _pass_hat_k_floor(comparison, wanted.k, wanted.min, rule.alpha, finding)
    left_out = sorted(set(comparison.changed) & set(comparison.baseline_cases))
    if left_out and (rule.min_mean_score or rule.min_pass_hat_k is not None):
        finding.notes.append(
            f"{len(left_out)} re-versioned case(s) are left out of the score floors until a "
            f"baseline has them (their `expect` is this change's): {_ids(left_out)}"
        )
    return finding


def _known_checks(comparison: Comparison) -> str:
    names = sorted(comparison.scores.checks) if comparison.scores is not None else []
    return ", ".join(names) if names else "none"


def _drop_rule(
    comparison: Comparison, rule: GateConfig, share: float, finding: ScoreFinding
) -> None:
    entries = rule.max_mean_score_drop or []
    found = comparison.scores.checks if comparison.scores is not None else {}
    tested: list[tuple[CheckScores, float]] = []
    for entry in entries:
        scores = found.get(entry.check)
        if scores is None or not scores.cases:
            finding.reasons.append(
                (
                    "max_mean_score_drop",
                    f"no shared case has a score for check {entry.check!r} on either side, so "
                    f"max_mean_score_drop cannot be checked (checks with scores: "
                    f"{_known_checks(comparison)}): name a check that scores, or unset it",
                    [],
                )
            )
            continue
        if scores.missing:
            finding.reasons.append(
                (
                    "max_mean_score_drop",
                    f"{len(scores.missing)} case(s) scored on {entry.check!r} on the baseline "
                    "have no score on the candidate (every sample in error, or the check gone): "
                    "a missing score is never a pass, so the drop cannot be vouched for",
                    scores.missing,
                )
            )
            continue
        if not scores.paired:
            finding.reasons.append(
                (
                    "max_mean_score_drop",
                    f"the baseline has no score for {entry.check!r} on the "
                    f"{len(scores.unmatched)} case(s) the candidate scored, so no drop can be "
                    "measured: write the baseline again with this version of the checks",
                    scores.unmatched,
                )
            )
            continue
        if scores.unmatched:
            finding.notes.append(
                f"{len(scores.unmatched)} case(s) scored on {entry.check!r} only on the "
                f"candidate are left out of max_mean_score_drop until a baseline scores them: "
                f"{_ids(scores.unmatched)}"
            )
        tested.append((scores, entry.drop))
    if not tested:
        return
    level = share / len(entries)  # Holm's first step: below it no check can ever block
    rejected = holm([s.p_lower for s, _ in tested], share * min(s.spend for s, _ in tested))
    for (scores, drop), significant in zip(tested, rejected, strict=True):
        _judge_drop(scores, drop, significant, (level, share), rule, finding)


def _judge_drop(
    scores: CheckScores,
    drop: float,
    significant: bool,
    levels: tuple[float, float],
    rule: GateConfig,
    finding: ScoreFinding,
) -> None:
    """`levels`: Holm's first step (below it no result can block) and the rule's share."""
    level, share = levels
    change = scores.change
    fell = -change.mean > drop + EPSILON
    unit = "clusters" if scores.clusters else "cases"
    text = (
        f"mean {scores.check!r} score per case {_points(change.mean)} over "
        f"{len(scores.paired)} shared cases (95% CI {_points(change.low)} to "
        f"{_points(change.high)})"
    )
    dropped = sorted(
        (case for case in scores.paired if (case.change or 0) < -EPSILON),
        key=lambda case: case.change or 0,
    )
    if fell and significant:
        finding.reasons.append(
            (
                "max_mean_score_drop",
                f"{text} fell more than the allowed {drop:g}, significantly (paired sign-flip "
                f"p = {scores.p_lower:.2g} over {scores.units} {unit}, Holm over the "
                f"checks of max_mean_score_drop at alpha {share:.2g})",
                [case.id for case in dropped],
            )
        )
        return
    if fell and scores.smallest_p > level:
        finding.undecided.append(
            f"inconclusive: {text} fell more than the allowed {drop:g}, and with "
            f"{scores.units} {unit} that moved the exact test cannot reach its level (its "
            f"smallest p is {scores.smallest_p:.2g} > alpha {level:.2g}), so no result can "
            "block and a drop beyond the allowed one is not shipped either. It does not ship "
            "(exit 3): add cases, or declare more, smaller clusters"
        )
        return
    if change.low < -drop - EPSILON:
        message = (
            f"inconclusive: a fall of the mean {scores.check!r} score by more than {drop:g} "
            f"cannot be ruled out — {text}, sign-flip p = {scores.p_lower:.2g}; more samples "
            "or cases would decide it"
        )
        if rule.on_inconclusive == "block":
            finding.undecided.append(message)
        else:
            finding.notes.append(message + " (on_inconclusive: ship lets this pass)")
        return
    if change.mean < -EPSILON:
        finding.notes.append(f"{text}: within the allowed {drop:g}")


def _floor_cases(comparison: Comparison) -> list[CaseResult]:
    """The candidate's cases the baseline has too, at the same version (a new or re-versioned
    case counts once a baseline has it: a re-versioned case's `expect` is the pull request's,
    which must not hold the base's floor up)."""
    changed = set(comparison.changed)
    return [
        case
        for case_id, case in sorted(comparison.candidate_cases.items())
        if (not comparison.baseline_cases or case_id in comparison.baseline_cases)
        and case_id not in changed
    ]


def _score_floor(
    comparison: Comparison, check: str, floor: float, alpha: float, finding: ScoreFinding
) -> None:
    cases = _floor_cases(comparison)
    gated = [
        case
        for case in cases
        if scores_of(case, check)
        or any(c.check == check for c in case.checks)
        or (
            (old := comparison.baseline_cases.get(case.id)) is not None
            and bool(scores_of(old, check))
        )
    ]
    if not gated:
        finding.reasons.append(
            (
                "min_mean_score",
                f"no case has a score for check {check!r}, so the floor min_mean_score "
                f"{check}: {floor:g} cannot be checked (checks with scores: "
                f"{_known_checks(comparison)}; re-versioned cases count once a baseline has "
                "them): name a check that scores, or unset it",
                sorted(comparison.changed),
            )
        )
        return
    missing = [case.id for case in gated if not scores_of(case, check)]
    if missing:
        finding.reasons.append(
            (
                "min_mean_score",
                f"{len(missing)} case(s) have no {check!r} score on the candidate (every sample "
                f"in error, or the check gave none): a missing score is never a pass, so the "
                f"floor {floor:g} cannot be vouched for",
                missing,
            )
        )
        return
    samples = [scores_of(case, check) for case in gated]
    means = [sum(s) / len(s) for s in samples]
    mean = sum(means) / len(means)
    over = f" over {len(gated)} case(s)"
    if mean + EPSILON < floor:
        finding.reasons.append(
            (
                "min_mean_score",
                f"mean {check!r} score {mean:.3f}{over} is below the floor {floor:g}",
                [c.id for c, m in zip(gated, means, strict=True) if m + EPSILON < floor],
            )
        )
        return
    if all(len(s) <= 1 for s in samples):
        return  # one sample per case: the score is the measurement, as the rate floor's
    variances = [mean_score_variance(s) for s in samples]
    low = mean_lower_bound(means, variances, alpha)
    if low + EPSILON < floor:
        finding.reasons.append(
            (
                "min_mean_score",
                f"mean {check!r} score {mean:.3f}{over} does not prove ≥ {floor:g} (one-sided "
                f"lower bound {low:.3f} at alpha {alpha:g}, from the samples' spread): more "
                "samples would",
                [],
            )
        )


def _pass_hat_k_floor(
    comparison: Comparison, k: int, floor: float, alpha: float, finding: ScoreFinding
) -> None:
    cases = _floor_cases(comparison)
    short = [case.id for case in cases if case.samples < k]
    if short:
        finding.reasons.append(
            (
                "min_pass_hat_k",
                f"{len(short)} case(s) have fewer than k = {k} samples, so pass^{k} cannot be "
                f"estimated for them and the floor {floor:g} cannot be vouched for: run "
                f"`samples: {k}` or more",
                short,
            )
        )
        return
    if not cases:
        if comparison.candidate_cases:
            finding.reasons.append(
                (
                    "min_pass_hat_k",
                    f"no case the baseline has at the same version is left to measure pass^{k} "
                    f"on, so the floor {floor:g} cannot be vouched for",
                    [],
                )
            )
        return
    values = [pass_hat_k(case.passes, case.samples, k) or 0.0 for case in cases]
    mean = sum(values) / len(values)
    if mean + EPSILON < floor:
        finding.reasons.append(
            (
                "min_pass_hat_k",
                f"pass^{k} {mean:.3f} over {len(cases)} case(s) (the chance that {k} fresh "
                f"samples all pass, per case) is below the floor {floor:g}",
                [c.id for c, v in zip(cases, values, strict=True) if v + EPSILON < floor],
            )
        )
        return
    variances = [pass_hat_k_variance(case.passes, case.samples, k) for case in cases]
    low = mean_lower_bound(values, variances, alpha)
    if low + EPSILON < floor:
        finding.reasons.append(
            (
                "min_pass_hat_k",
                f"pass^{k} {mean:.3f} over {len(cases)} case(s) does not prove ≥ {floor:g} "
                f"(one-sided lower bound {low:.3f} at alpha {alpha:g}): more samples would",
                [],
            )
        )
