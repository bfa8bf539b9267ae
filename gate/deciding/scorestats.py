"""The statistics of the score rules: numbers in [0, 1], not passes out of samples.

- `sign_flip_sum_lower`: the paired sign-flip (permutation) test of the score rule, exact.
  Under "no change" each unit's difference (a case's, or a cluster's summed over its cases)
  is as likely negative as positive; the p-value is the share of the 2^k sign assignments
  whose sum is at most the observed one. The differences are put on a grid of 1/`GRID`
  (rounding is odd-symmetric, so the test on the rounded values is exact at every level),
  and the distribution of the sum is counted by dynamic programming. Zeros and ties need no
  rule of their own, which is why it is used rather than Wilcoxon's signed-rank test (scipy
  switches to a normal approximation with ties or zeros, and ranks test a median shift, not
  the mean the rule names).
- `welch_interval`: a case's change in mean score over its samples, with Welch's t interval.
- `pass_hat_k` and `pass_at_k`: unbiased estimates from c passes in n samples.
- `mean_lower_bound`: the one-sided normal bound the score floors must clear, with
  `mean_score_variance` and `pass_hat_k_variance` bounding each case's variance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist, fmean

#: the finest grid the exact sign-flip test puts differences on (scores to 1e-4)
GRID = 10_000
#: cells x steps the counting may take; past it the grid coarsens, and below COARSEST the
#: normal approximation is used (only for suites of many thousands of cases)
WORK_LIMIT = 40_000_000
COARSEST = 20


def sign_flip_sum_lower(units: Sequence[float]) -> float:
    """One-sided exact sign-flip p-value that the units' differences are centred below zero."""
    values = [float(u) for u in units]
    total = sum(abs(v) for v in values)
    if total <= 0:
        return 1.0
    grid = min(GRID, int(WORK_LIMIT / (len(values) * total)))
    if grid < COARSEST:
        spread = math.sqrt(sum(v * v for v in values))
        return NormalDist().cdf(sum(values) / spread)
    import numpy as np

    steps = [round(abs(v) * grid) for v in values]
    observed = sum(step if v > 0 else -step for step, v in zip(steps, values, strict=True))
    steps = [s for s in steps if s]
    if not steps:
        return 1.0
    span = sum(steps)
    # The positive part T of a signed sum has the distribution of a subset sum; the signed
    # sum is 2T - span. Probabilities, not counts: 2^k overflows every integer type.
    chances = np.zeros(span + 1)
    chances[0] = 1.0
    reach = 0
    for step in steps:
        shifted = chances[: reach + 1].copy()
        chances[: reach + 1] *= 0.5
        chances[step : step + reach + 1] += 0.5 * shifted
        reach += step
    limit = (observed + span) // 2  # 2T - span <= observed
    return float(min(1.0, chances[: limit + 1].sum()))


def smallest_p(units: Sequence[float]) -> float:
    """The smallest p-value the sign-flip test can give these units: 2^-(non-zero units)."""
    return 2.0 ** -sum(1 for u in units if u != 0)


@dataclass(frozen=True, slots=True)
class Interval:
    mean: float
    low: float
    high: float


def welch_interval(base: Sequence[float], cand: Sequence[float]) -> Interval | None:
    """The candidate's mean minus the baseline's, with its 95% Welch t interval; None with
    fewer than two samples on a side (one sample holds no spread to build an interval on)."""
    if len(base) < 2 or len(cand) < 2:
        return None
    change = fmean(cand) - fmean(base)
    parts = (_variance(base) / len(base), _variance(cand) / len(cand))
    spread = sum(parts)
    denominator = sum(p * p / (n - 1) for p, n in zip(parts, (len(base), len(cand)), strict=True))
    if spread <= 0 or denominator <= 0:  # no spread (or one too small for a float to hold)
        return Interval(change, change, change)
    freedom = spread**2 / denominator
    half = _t_quantile(0.975, freedom) * math.sqrt(spread)
    return Interval(change, change - half, change + half)


def _variance(values: Sequence[float]) -> float:
    centre = fmean(values)
    return sum((v - centre) ** 2 for v in values) / (len(values) - 1)


def _t_quantile(probability: float, freedom: float) -> float:
    from scipy.special import stdtrit  # Student's t quantile at non-whole freedom (Welch)

    return float(stdtrit(freedom, probability))


def clustered_interval(
    differences: Mapping[str, float], clusters: Mapping[str, str] | None
) -> tuple[Interval, int]:
    """The mean difference per case with its 95% t interval, cluster-robust: the units are
    the clusters (a case outside every cluster is one), their variance the CR1 sandwich on
    k - 1 degrees of freedom. Without clusters it is the paired t interval over the cases.
    Returns the interval and the units; a point under two units."""
    count = len(differences)
    if not count:
        return Interval(0.0, 0.0, 0.0), 0
    mean = sum(differences.values()) / count
    totals: dict[str, tuple[float, int]] = {}
    for case_id, value in differences.items():
        key = (clusters or {}).get(case_id) or f"\0{case_id}"
        total, size = totals.get(key, (0.0, 0))
        totals[key] = (total + value, size + 1)
    units = len(totals)
    if units < 2:
        return Interval(mean, mean, mean), units
    residuals = sum((total - size * mean) ** 2 for total, size in totals.values())
    half = _t_quantile(0.975, units - 1) * math.sqrt(units / (units - 1) * residuals) / count
    return Interval(mean, mean - half, mean + half), units


def unit_sums(differences: Mapping[str, float], clusters: Mapping[str, str] | None) -> list[float]:
    """Each cluster's differences summed (a case outside every cluster is its own unit)."""
    sums: dict[str, float] = {}
    for case_id, value in differences.items():
        key = (clusters or {}).get(case_id) or f"\0{case_id}"
        sums[key] = sums.get(key, 0.0) + value
    return list(sums.values())


def pass_hat_k(passes: int, samples: int, k: int) -> float | None:
    """pass^k: the chance that k fresh samples all pass, unbiased: C(c, k) / C(n, k)."""
    if samples < k:
        return None
    return math.comb(passes, k) / math.comb(samples, k)


def pass_at_k(passes: int, samples: int, k: int) -> float | None:
    """pass@k: the chance that at least one of k fresh samples passes: 1 - C(n-c, k)/C(n, k)."""
    if samples < k:
        return None
    return 1 - math.comb(samples - passes, k) / math.comb(samples, k)


def pass_hat_k_variance(passes: int, samples: int, k: int) -> float:
    """A bound on the variance of the pass^k estimate C(c, k)/C(n, k): a U-statistic of
    degree k, whose variance is at most (k/n) Var(h) (Hoeffding, 1948), where h, "k samples
    all pass", is a Bernoulli of mean pi = p^k, so Var(h) = pi (1 - pi). p is taken as
    (c + 1)/(n + 2), so a case whose samples all passed (or all failed) still carries spread.

    The delta method, (k p^(k-1))^2 p (1 - p)/n at p = c/n, gave a case with every sample
    alike no variance at all, and with n = k most cases are alike: an independent
    simulation shipped 16-18% of suites at the floor where the level was 2%; this bound
    ships at most 0.9% there (bench/score_simulation.py, docs/statistics.md)."""
    smoothed = ((passes + 1) / (samples + 2)) ** k
    return (k / samples) * smoothed * (1 - smoothed)


def mean_score_variance(values: Sequence[float]) -> float:
    """The variance of one case's mean score: the larger of its samples' own variance and
    m(1 - m), the most a score from 0 to 1 with mean m can vary (m taken as
    (sum + 1)/(n + 2)), over n.

    The samples' variance alone is small exactly when a few samples missed the rare low
    score, which is when the mean reads high: an independent simulation shipped up to 7% of
    suites at the floor where the level was 2%; this bound ships at most 0.9% there."""
    count = len(values)
    smoothed = (math.fsum(values) + 1) / (count + 2)
    return max(sample_variance(values), smoothed * (1 - smoothed)) / count


def mean_lower_bound(values: Sequence[float], variances: Sequence[float], alpha: float) -> float:
    """The one-sided (1 - alpha) normal lower bound of the mean of `values`, each measured
    with its own sampling variance (the cases are the suite's, fixed; only samples vary).
    Never below 0: the values are scores or chances, and a floor of 0 needs no proof."""
    mean = fmean(values)
    spread = math.sqrt(sum(variances)) / len(values)
    return max(0.0, mean - NormalDist().inv_cdf(1 - alpha) * spread)


def sample_variance(values: Sequence[float]) -> float:
    """The sample variance (0 under two values: a single draw says nothing of its spread)."""
    return _variance(values) if len(values) >= 2 else 0.0
