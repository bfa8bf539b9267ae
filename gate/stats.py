"""The few statistics the noise-aware gate needs, exact where exactness is cheap.

These are small closed forms (Wilson, Clopper–Pearson, Fisher's exact test, an
exact binomial tail, Holm, an exact sign-flip test, a t interval), written out
here so that the common path never pays for importing scipy; the tests check
every one of them against scipy. The one that is not a closed form, Boschloo's
exact unconditional test (a maximum over a nuisance rate), is scipy's, imported
only when a critical case needs it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from statistics import NormalDist, fmean, stdev
from typing import Any

Z95 = NormalDist().inv_cdf(0.975)
#: past this many distinct partial sums the exact sign-flip test uses the normal approximation
EXACT_SIGN_FLIP_LIMIT = 2_000_000


def wilson(passes: int, samples: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion (95% by default)."""
    if samples <= 0:
        return 0.0, 1.0
    rate = passes / samples
    denominator = 1 + z * z / samples
    centre = (rate + z * z / (2 * samples)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / samples + z * z / (4 * samples * samples))
    half /= denominator
    # At 0 or n passes the bound is exactly 0 or 1; rounding would leave a crumb.
    low = 0.0 if passes == 0 else max(0.0, centre - half)
    high = 1.0 if passes == samples else min(1.0, centre + half)
    return low, high


@lru_cache(maxsize=65_536)  # a suite repeats the same few tables (20/20 against 20/20, …)
def fisher_lower(base_passes: int, base_samples: int, cand_passes: int, cand_samples: int) -> float:
    """One-sided Fisher exact p-value that the candidate's pass rate is lower.

    Conditional on the total passes, the candidate's passes are hypergeometric;
    the p-value is P(X <= observed), summed exactly in integers.
    """
    total = base_samples + cand_samples
    passes = base_passes + cand_passes
    lowest = max(0, passes - base_samples)
    tail = sum(
        math.comb(passes, x) * math.comb(total - passes, cand_samples - x)
        for x in range(lowest, cand_passes + 1)
    )
    return float(Fraction(tail, math.comb(total, cand_samples)))


#: Gauss-Legendre over the shift's probability scale (0, 1), on segments that narrow toward
#: both ends: a drop as stark as 30/30 -> 0/7 keeps its p-value only in the far tail of the
#: shift (below 1e-4), where 256 nodes over the whole interval missed by 0.3%. With 32
#: nodes on each of these segments, mirrored, it agrees with adaptive quadrature to within
#: 1e-3 relative or 1e-6 (the tests check)
SHIFT_SEGMENTS = (0.0, 1e-8, 1e-6, 1e-4, 1e-2, 0.5)
SHIFT_NODES = 32


@lru_cache(maxsize=256)
def _standard_shifts(freedom: int) -> tuple[Any, Any]:
    """Quantiles at the Gauss-Legendre nodes of (0, 1)'s segments, and their weights: of the
    standard Normal (`freedom` 0) or of Student's t on `freedom` degrees of freedom."""
    import numpy as np
    from scipy import stats

    nodes, weights = np.polynomial.legendre.leggauss(SHIFT_NODES)
    lower = list(itertools.pairwise(SHIFT_SEGMENTS))
    segments = lower + [(1 - high, 1 - low) for low, high in lower]
    probabilities = np.concatenate([a + (b - a) * (nodes + 1) / 2 for a, b in segments])
    scaled = np.concatenate([weights * (b - a) / 2 for a, b in segments])
    quantiles = (
        stats.norm.ppf(probabilities) if freedom <= 0 else stats.t.ppf(probabilities, freedom)
    )
    return quantiles, scaled


def shift_points(spread: float, freedom: int) -> tuple[Any, Any]:
    """Quadrature points δ and weights for a shift of variance scale `spread`: δ ~ N(0,
    spread) when the variance is known (`freedom` 0), √spread · t(freedom) when it was
    estimated on that many degrees of freedom."""
    quantiles, weights = _standard_shifts(freedom)
    return math.sqrt(spread) * quantiles, weights


@lru_cache(maxsize=65_536)
def shifted_fisher_lower(
    base_passes: int,
    base_samples: int,
    cand_passes: int,
    cand_samples: int,
    spread: float,
    freedom: int = 0,
) -> float:
    """Fisher's one-sided p-value when the two runs' log odds may differ by chance.

    Between two runs of an unchanged system, a case's log odds can move by δ, a shift
    between runs of variance `spread` (gate.deciding.noise.runshift): Normal when the
    variance is known, Student's t on `freedom` degrees of freedom when it was estimated
    (shift_points). Given δ and the total passes, the candidate's passes follow Fisher's
    noncentral hypergeometric distribution with odds ratio e^δ; the p-value is
    P(X <= observed) averaged over δ, by Gauss–Legendre on δ's probability scale. At
    `spread` 0 it is Fisher's exact p-value.
    """
    if spread <= 0:
        return fisher_lower(base_passes, base_samples, cand_passes, cand_samples)
    import numpy as np
    from scipy.special import gammaln

    total = base_samples + cand_samples
    passes = base_passes + cand_passes
    if passes in (0, total):
        return 1.0  # every sample agrees: the margins leave the candidate no choice
    shifts, weights = shift_points(spread, freedom)
    # The noncentral hypergeometric weights C(n_c, x) C(n_b, t - x) e^{δx} over the support,
    # one column per shift, in logs (scipy's nchypergeom_fisher gives the same, the tests
    # check; one matrix is ~100x quicker than a cdf call per shift).
    support = np.arange(max(0, passes - base_samples), min(passes, cand_samples) + 1)
    log_counts = (
        gammaln(cand_samples + 1)
        - gammaln(support + 1)
        - gammaln(cand_samples - support + 1)
        + gammaln(base_samples + 1)
        - gammaln(passes - support + 1)
        - gammaln(base_samples - passes + support + 1)
    )
    logs = log_counts[:, None] + support[:, None] * shifts[None, :]
    mass = np.exp(logs - logs.max(axis=0))
    tails = mass[support <= cand_passes].sum(axis=0) / mass.sum(axis=0)
    return float(min(1.0, np.dot(weights, tails)))


@lru_cache(maxsize=65_536)
def boschloo_lower(
    base_passes: int, base_samples: int, cand_passes: int, cand_samples: int
) -> float:
    """One-sided Boschloo exact test that the candidate's pass rate is lower.

    Boschloo (1970) ranks tables by Fisher's p-value and takes the largest
    probability, over the common pass rate, of a table at least as extreme: exact
    at every rate, and never less powerful than Fisher's test (its p-value is at
    most Fisher's). At 20 samples a side and alpha 0.0133 it catches a 0.95 → 0.5
    drop 89% of the time where Fisher catches 82%. A candidate that is not lower
    keeps Fisher's p-value: it cannot be a regression, and the maximum costs ~15 ms.
    """
    fisher = fisher_lower(base_passes, base_samples, cand_passes, cand_samples)
    if cand_passes * base_samples >= base_passes * cand_samples:
        return fisher
    from scipy.stats import boschloo_exact  # ~0.3 s to import; only critical drops need it

    table = [[base_passes, cand_passes], [base_samples - base_passes, cand_samples - cand_passes]]
    # "greater": the first column's (the baseline's) rate is the larger one.
    result = boschloo_exact(table, alternative="greater")
    return min(fisher, float(result.pvalue))


def binomial_upper(successes: int, trials: int, rate: float) -> float:
    """Exact one-sided binomial p-value that the true rate exceeds `rate`: P(X >= successes)."""
    if successes <= 0:
        return 1.0
    if successes > trials:
        return 0.0
    if rate <= 0:
        return 0.0
    if rate >= 1:
        return 1.0
    # Summed in logarithms so that a thousand trials neither underflow nor overflow.
    log_p, log_q = math.log(rate), math.log1p(-rate)
    terms = [
        math.lgamma(trials + 1) - math.lgamma(k + 1) - math.lgamma(trials - k + 1)
        + k * log_p + (trials - k) * log_q
        for k in range(successes, trials + 1)
    ]  # fmt: skip
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


def binomial_lower(successes: int, trials: int, rate: float) -> float:
    """Exact one-sided binomial p-value that the true rate is below `rate`: P(X <= successes)."""
    return binomial_upper(trials - successes, trials, 1 - rate)


def clopper_pearson_lower(successes: int, trials: int, alpha: float) -> float:
    """The exact one-sided (1 - alpha) lower confidence bound for a binomial rate.

    The smallest rate under which seeing `successes` or more has probability above
    `alpha` (Clopper and Pearson 1934), found by bisection on the exact tail; unlike
    Wilson's, its coverage is at least 1 - alpha at every rate.
    """
    if successes <= 0 or trials <= 0:
        return 0.0
    low, high = 0.0, successes / trials
    for _ in range(60):
        middle = (low + high) / 2
        if binomial_upper(successes, trials, middle) > alpha:
            high = middle
        else:
            low = middle
    return low  # the tail at `low` is <= alpha: the bound errs low, never high


def holm(p_values: Sequence[float], alpha: float) -> list[bool]:
    """Holm's step-down: which hypotheses are rejected, family-wise error at `alpha`."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    rejected = [False] * len(p_values)
    for rank, index in enumerate(order):
        if p_values[index] > alpha / (len(p_values) - rank):
            break
        rejected[index] = True
    return rejected


def _as_integers(differences: Sequence[Fraction]) -> tuple[list[int], int] | None:
    scale = 1
    for value in differences:
        scale = math.lcm(scale, value.denominator)
        if scale > 100_000:
            return None
    return [int(value * scale) for value in differences], scale


def sign_flip_lower(differences: Sequence[Fraction]) -> float:
    """One-sided paired sign-flip test that the differences are centred below zero.

    Under "no change", each case's difference is as likely to be positive as
    negative; the p-value is the share of the 2^m sign assignments whose sum is
    at most the observed sum. Exact (by counting partial sums) when the
    differences share a modest denominator; the normal approximation otherwise.
    """
    nonzero = [d for d in differences if d != 0]
    if not nonzero:
        return 1.0
    observed = sum(nonzero)
    integers = _as_integers(nonzero)
    if integers is not None:
        values, scale = integers
        span = sum(abs(v) for v in values)
        if span * len(values) <= EXACT_SIGN_FLIP_LIMIT:
            counts = {0: 1}
            for value in values:
                step: dict[int, int] = {}
                for total, count in counts.items():
                    for signed in (abs(value), -abs(value)):
                        step[total + signed] = step.get(total + signed, 0) + count
                counts = step
            target = int(observed * scale)
            at_most = sum(count for total, count in counts.items() if total <= target)
            return at_most / (1 << len(values))
    spread = math.sqrt(sum(float(d) ** 2 for d in nonzero))
    return NormalDist().cdf(float(observed) / spread)


def t_cdf(t: float, freedom: int) -> float:
    """Student's t distribution function for whole degrees of freedom, in closed form.

    The finite series for P(|T| <= t) (Abramowitz and Stegun 26.7.3 and 26.7.4).
    """
    theta = math.atan(abs(t) / math.sqrt(freedom))
    cos2 = math.cos(theta) ** 2
    if freedom % 2:
        term, series = 1.0, 1.0 if freedom > 1 else 0.0
        for k in range(1, (freedom - 1) // 2):
            term *= cos2 * (2 * k) / (2 * k + 1)
            series += term
        inside = 2 / math.pi * (theta + math.sin(theta) * math.cos(theta) * series)
    else:
        term = series = 1.0
        for k in range(1, freedom // 2):
            term *= cos2 * (2 * k - 1) / (2 * k)
            series += term
        inside = math.sin(theta) * series
    return 0.5 + math.copysign(inside / 2, t)


def t_quantile(probability: float, freedom: int) -> float:
    """Student's t quantile, by bisection on `t_cdf` (to 1e-12)."""
    low, high = -1e6, 1e6
    for _ in range(200):
        middle = (low + high) / 2
        if t_cdf(middle, freedom) < probability:
            low = middle
        else:
            high = middle
        if high - low < 1e-12:
            break
    return (low + high) / 2


@dataclass(frozen=True, slots=True)
class MeanChange:
    mean: float
    low: float
    high: float
    cases: int


def mean_change(differences: Sequence[float]) -> MeanChange:
    """The mean paired difference with its 95% t interval (a point when under 2 cases)."""
    if not differences:
        return MeanChange(0.0, 0.0, 0.0, 0)
    mean = fmean(differences)
    if len(differences) < 2:
        return MeanChange(mean, mean, mean, len(differences))
    half = (
        t_quantile(0.975, len(differences) - 1) * stdev(differences) / math.sqrt(len(differences))
    )
    return MeanChange(mean, mean - half, mean + half, len(differences))


def samples_to_decide(change: MeanChange, margin: float, samples: int) -> int | None:
    """Samples per case that would make the interval rule out a drop beyond `margin`.

    The interval's half-width shrinks roughly with the square root of the samples
    per case; None when the estimate itself is a drop beyond the margin, which
    more samples would only confirm.
    """
    room = change.mean + margin
    half = change.mean - change.low
    if room <= 0 or half <= 0:
        return None
    return max(samples + 1, math.ceil(samples * (half / room) ** 2))
