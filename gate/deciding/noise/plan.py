"""`casegate plan`: how many samples and cases a wanted power needs, read from the baseline.

Per case: the candidate samples n that give a one-sided two-proportion test at the
critical cases' Holm-first-step level (their share of `alpha` over their number)
power P against a drop of D from the case's baseline rate, the baseline's own
samples counted as they are:

    D >= z(1 - a) * sqrt(pbar (1 - pbar) (1/nb + 1/n)) + z(P) * sqrt(p0 q0 / nb + p1 q1 / n)

(the normal approximation to the exact tests the gate runs, Boschloo's for critical
cases; rates shrunk to (passes + 1) / (samples + 2)). Suite level: the
cases k that let the paired test see every case D lower, at the suite's share:
k >= ((z(1 - a) + z(P)) * sd / D)^2, sd the spread of one case's difference at
the configured samples, k counted in clusters when the suite has them. Expected
calls under `samples: auto` are measured, not guessed: the rounds are replayed
on simulated unchanged runs drawn at the baseline's rates.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from statistics import NormalDist

from gate.deciding.noise import level
from gate.deciding.noise.adaptive import references, replayed_rounds
from gate.deciding.noise.clusters import clusters_of
from gate.deciding.noise.scoreplan import score_lines
from gate.results import CaseResult, RunResults
from gate.suite.config import LoadedConfig

#: the largest sample count `plan` will propose per case
LIMIT = 1000
SIMULATED_RUNS = 200


@dataclass(frozen=True, slots=True)
class CasePlan:
    id: str
    rate: float
    samples: int | None  # None: unreachable with this baseline (its samples are the limit)


def case_samples(
    p0: float, base_samples: int, drop: float, alpha: float, power: float
) -> int | None:
    """Candidate samples for power `power` against `p0 - drop`, at one-sided level `alpha`."""
    p1 = max(0.0, p0 - drop)
    z_alpha, z_power = NormalDist().inv_cdf(1 - alpha), NormalDist().inv_cdf(power)
    for n in range(1, LIMIT + 1):
        pbar = (p0 * base_samples + p1 * n) / (base_samples + n)
        null = math.sqrt(max(pbar * (1 - pbar), 1e-12) * (1 / base_samples + 1 / n))
        spread = math.sqrt(p0 * (1 - p0) / base_samples + p1 * (1 - p1) / n)
        if drop >= z_alpha * null + z_power * spread:
            return n
    return None


def suite_cases(spread: float, drop: float, alpha: float, power: float) -> int:
    z = NormalDist().inv_cdf(1 - alpha) + NormalDist().inv_cdf(power)
    return max(1, math.ceil((z * spread / drop) ** 2))


def auto_calls(baseline: RunResults, loaded: LoadedConfig, seed: int = 0) -> float:
    """Mean candidate calls under `samples: auto` over simulated unchanged runs."""
    rng = random.Random(seed)
    refs = references(baseline)
    adaptive, rule = loaded.config.adaptive, loaded.config.gate
    rates = {case.id: case.passes / case.samples for case in baseline.cases if case.samples}
    total = 0
    for _ in range(SIMULATED_RUNS):
        outcomes = {i: [rng.random() < p for _ in range(adaptive.max)] for i, p in rates.items()}
        total += sum(replayed_rounds(outcomes, refs, adaptive, rule).values())
    return total / SIMULATED_RUNS


def cost_per_sample(baseline: RunResults) -> float | None:
    known = [case.cost_usd / case.samples for case in baseline.cases if case.cost_usd is not None]
    if not known or len(known) < len(baseline.cases):
        return None
    return sum(known) / len(known)


def _shrunk(case: CaseResult) -> float:
    return (case.passes + 1) / (case.samples + 2)


def report(
    baseline: RunResults,
    loaded: LoadedConfig,
    drop: float,
    power: float,
    score_drop: float | None = None,
) -> str:
    """The plan, as text: samples per case, cases needed, calls and cost, and the formula;
    for the checks that score, the units and samples a fall of `score_drop` needs (None:
    twice each check's `max_mean_score_drop`)."""
    config = loaded.config
    rule = config.gate
    critical = [case for case in baseline.cases if case.critical]
    shares = level.shares(rule, has_critical=bool(critical))
    family = max(1, len(critical))
    per_case_alpha = (shares.critical / family) if critical else rule.alpha
    planned = [
        CasePlan(
            case.id,
            case.passes / case.samples,
            case_samples(_shrunk(case), case.samples, drop, per_case_alpha, power),
        )
        for case in (critical or baseline.cases)
        if case.samples and case.passes / case.samples >= drop
    ]
    configured = config.samples if isinstance(config.samples, int) else config.adaptive.max
    lines = [
        f"plan for suite {baseline.suite!r}: detect a drop of {drop:.0%} with power {power:.0%}",
        f"the gate's level alpha {rule.alpha:g}: critical cases {shares.critical:.3g} "
        f"(Holm over {len(critical)}), suite {shares.suite:.3g}, pairwise {shares.pairwise:.3g}",
        "",
        f"per case ({'critical' if critical else 'every case'}; the first Holm step, one-sided "
        f"alpha {per_case_alpha:.2g}, against the baseline's own samples):",
    ]
    for item in planned:
        needed = (
            f"{item.samples} samples" if item.samples else "unreachable: sample the baseline more"
        )
        lines.append(f"  {item.id}: baseline rate {item.rate:.2f} → {needed}")
    spreads = [
        (case.passes / case.samples)
        * (1 - case.passes / case.samples)
        * (1 / case.samples + 1 / configured)
        for case in baseline.cases
        if case.samples
    ]
    spread = math.sqrt(sum(spreads) / len(spreads)) if spreads else 0.0
    clusters = len(set(clusters_of(baseline.cases, baseline.config).values()))
    if shares.suite > 0 and spread > 0:
        needed_cases = suite_cases(spread, drop, shares.suite, power)
        unit = "clusters" if clusters else "cases"
        lines += [
            "",
            f"suite level (every case {drop:.0%} lower, at {configured} samples per case): "
            f"{needed_cases} {unit} (the suite has {clusters or len(baseline.cases)})",
        ]
    fixed_calls = configured * len(baseline.cases)
    calls = auto_calls(baseline, loaded)
    price = cost_per_sample(baseline)
    lines += [
        "",
        f"calls per check: fixed n = {configured}: {fixed_calls}; samples: auto (no change, "
        f"replayed on {SIMULATED_RUNS} simulated runs): {calls:.0f} "
        f"({calls / fixed_calls:.2f}×); a baseline under auto: "
        f"{config.estimate_samples(None) * len(baseline.cases)}, at n = {configured}: "
        f"{config.estimate_samples(configured) * len(baseline.cases)}",
    ]
    if price is None:
        lines.append("cost: unknown (the baseline has no cost for some case: add `pricing:`)")
    else:
        lines.append(
            f"cost per check at `pricing:`: fixed ${fixed_calls * price:,.4f}; "
            f"auto ${calls * price:,.4f}"
        )
    lines += [
        "",
        "formula: D >= z(1-a)·sqrt(pbar·(1-pbar)·(1/nb + 1/n)) + z(P)·sqrt(p0·q0/nb + p1·q1/n) "
        "per case; k >= ((z(1-a) + z(P))·sd / D)^2 cases for the suite",
    ]
    units = (len(baseline.cases), clusters)
    lines += score_lines(baseline, rule, shares, power, configured, units, score_drop)
    return "\n".join(lines)
