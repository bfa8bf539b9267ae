"""`casegate plan` for score drops: the cases and samples that let `max_mean_score_drop`'s
paired test see a fall of D in every case's mean score, from the baseline's own variances.

With n samples a side, a case's difference of means has variance 2 s_i^2 / n, s_i^2 the
baseline's sample variance of the case's scores (one sample: none is observed, so such a
case counts the mean variance of the others). The normal approximation to the exact
sign-flip test needs k units with k >= ((z(1 - a) + z(P)) sd / D)^2, sd^2 the mean of
those variances and a the check's first Holm step (the score rule's share of `alpha` over
the checks it names); and, since the rule blocks only past the allowed drop d, also
k >= (z(P) sd / (D - d))^2. The samples per case that reach the power with the suite's
units solve the same inequalities for n. With declared clusters the units are clusters, and k
clusters can never give a p below 2^-k: the plan says when that is above a.
"""

from __future__ import annotations

import math
from statistics import NormalDist, fmean

from gate.deciding.noise.level import Shares
from gate.deciding.scores import scored_checks, scores_of
from gate.deciding.scorestats import sample_variance
from gate.results import RunResults
from gate.suite.config import GateConfig

#: with no `max_mean_score_drop` entry for a check, plan for a fall of this much
DEFAULT_SCORE_DROP = 0.1


def _variances(baseline: RunResults, check: str) -> list[float]:
    found = [scores_of(case, check) for case in baseline.cases]
    return [sample_variance(s) for s in found if len(s) >= 2]


def score_lines(
    baseline: RunResults,
    rule: GateConfig,
    shares: Shares,
    power: float,
    samples: int,
    units: tuple[int, int],
    wanted: float | None = None,
) -> list[str]:
    """The plan's lines for each scored check of the baseline (none: no check scores).

    `samples` the configured samples per case; `units` (cases, clusters) of the suite;
    `wanted` the fall to detect (None: twice each check's allowed drop, or 0.1).
    """
    checks = scored_checks([baseline])
    if not checks:
        return []
    entries = {entry.check: entry.drop for entry in rule.max_mean_score_drop or []}
    family = max(1, len(entries))
    alpha = (shares.scores or rule.alpha) / family
    z = NormalDist().inv_cdf(1 - alpha) + NormalDist().inv_cdf(power)
    cases, clusters = units
    count = clusters or cases
    kind = "clusters" if clusters else "cases"
    lines = [
        "",
        f"score drops (max_mean_score_drop's paired sign-flip test, one-sided alpha "
        f"{alpha:.2g}{' per check, Holm' if family > 1 else ''}; the baseline's variances):",
    ]
    for check in checks:
        allowed = entries.get(check)
        drop = wanted if wanted is not None else (2 * allowed if allowed else DEFAULT_SCORE_DROP)
        variances = _variances(baseline, check)
        if not variances:
            lines.append(
                f"  {check}: no case of the baseline has two scored samples, so no variance "
                "is observed: sample the baseline (samples: 2 or more)"
            )
            continue
        spread = fmean(variances)
        if spread <= 0:
            lines.append(
                f"  {check}: every sampled case scored the same on each sample: any fall of "
                f"{drop:g} shows at once ({kind}: {count}; the smallest p of {count} units is "
                f"{2.0**-count:.2g})"
            )
            continue
        if allowed is not None and drop <= allowed:
            lines.append(
                f"  {check}: a fall of {drop:g} is within the allowed {allowed:g}: it never blocks"
            )
            continue
        # Both must hold to block: the test finds the fall, and the estimate exceeds the
        # allowed drop; the larger of the two requirements binds.
        z_over = NormalDist().inv_cdf(power)
        factor = max((z / drop) ** 2, (z_over / (drop - (allowed or 0.0))) ** 2)
        needed = max(1, math.ceil(2 * spread / samples * factor))
        draws = max(1, math.ceil(2 * spread * factor / count))
        reach = (
            ""
            if 2.0**-count <= alpha
            else f"; with {count} {kind} the exact test can never reach alpha (2^-{count} = "
            f"{2.0**-count:.2g}): add cases or declare more, smaller clusters"
        )
        allowed_text = f" (allowed {allowed:g})" if allowed is not None else ""
        lines.append(
            f"  {check}: a fall of {drop:g} in every case{allowed_text}, mean sample variance "
            f"{spread:.3g} over {len(variances)} case(s): {needed} {kind} at {samples} "
            f"samples per case (the suite has {count}); with its {count} {kind}, "
            f"{draws} samples per case{reach}"
        )
    lines.append(
        "  formula: k >= max(((z(1-a) + z(P)) / D)^2, (z(P) / (D - d))^2)·2·s²/n units, n the "
        "samples per case, d the allowed drop, s² the mean sample variance of a case's scores"
    )
    return lines
