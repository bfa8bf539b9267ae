"""How far clusters moved between the two runs beyond their sampling noise: reported only.

Near-duplicate cases can move together between runs: the provider's day, a cache or a
retrieval index can shift a whole family's rate between the baseline run and the
candidate run. With declared clusters, each cluster's change on the log-odds scale
(inverse-variance weighted over its cases, on equal first samples of both sides) has the
sampling variance of its counts plus the run-to-run variance τ² of a cluster's shift.
Cochran's Q tests "no shift", and when it rejects, the Paule–Mandel estimator (the τ² at
which the generalised Q falls to its degrees of freedom) says how far.

The report states that estimate, so a reader knows a critical drop may be such a shift and
a rerun on fresh samples would tell. It never loosens a verdict: every number here comes
from the run under judgement, which the pull request controls, and a spread estimated
from it can be widened on purpose (an independent attack improved one family to ship
another family's collapse).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

#: (baseline passes, baseline samples, candidate passes, candidate samples)
Counts = tuple[int, int, int, int]


def log_odds(passes: int, samples: int) -> tuple[float, float]:
    """Empirical log odds with half a pass and half a failure added, and its variance."""
    yes, no = passes + 0.5, samples - passes + 0.5
    return math.log(yes / no), 1 / yes + 1 / no


def logit_change(counts: Counts) -> tuple[float, float]:
    """The candidate's log-odds minus the baseline's, and its sampling variance.

    Empirical log-odds with half a pass and half a failure added on each side
    (Haldane and Anscombe), so 20/20 has a finite log-odds and a large variance.
    """
    base_passes, base_samples, cand_passes, cand_samples = counts
    base, base_variance = log_odds(base_passes, base_samples)
    cand, cand_variance = log_odds(cand_passes, cand_samples)
    return cand - base, base_variance + cand_variance


#: the report says clusters moved when Cochran's Q rejects "no shift" at this level
HETEROGENEITY_ALPHA = 0.05
#: fewer clusters than this cannot show a spread between them
FEWEST_CLUSTERS = 3


def generalised_q(changes: Sequence[tuple[float, float]], spread: float) -> float:
    """Σ (y - ȳ)² / (v + τ²), ȳ weighted by 1 / (v + τ²): χ² with k - 1 degrees of freedom."""
    weights = [1 / (variance + spread) for _, variance in changes]
    centre = sum(w * y for w, (y, _) in zip(weights, changes, strict=True)) / sum(weights)
    return sum(w * (y - centre) ** 2 for w, (y, _) in zip(weights, changes, strict=True))


def q_profile(changes: Sequence[tuple[float, float]], target: float) -> float:
    """The τ² at which the generalised Q statistic falls to `target` (0 if it starts below).

    At target k - 1 this is the Paule–Mandel estimator (the tests hold it to statsmodels').
    """
    return _profile(lambda spread: generalised_q(changes, spread), target)


def _profile(statistic: Callable[[float], float], target: float) -> float:
    """The τ² at which `statistic` (falling as τ² grows) reaches `target`, by bisection."""
    if statistic(0.0) <= target:
        return 0.0
    low, high = 0.0, 1.0
    while statistic(high) > target and high < 1e6:
        low, high = high, high * 2
    for _ in range(60):
        middle = (low + high) / 2
        if statistic(middle) > target:
            low = middle
        else:
            high = middle
    return high


def between_variance(changes: Sequence[tuple[float, float]]) -> float:
    """τ² from (change, sampling variance) pairs, when the clusters moved beyond noise.

    Cochran's Q (the generalised Q at τ² = 0) tests "no shift between runs" against
    χ²(k - 1); when it rejects at HETEROGENEITY_ALPHA, the Paule–Mandel estimate (the τ²
    at which Q falls to k - 1) says how far; otherwise 0, and the report says nothing.
    """
    if len(changes) < FEWEST_CLUSTERS:
        return 0.0
    from scipy.stats import chi2  # only for suites that declare clusters

    freedom = len(changes) - 1
    if generalised_q(changes, 0.0) <= float(chi2.ppf(1 - HETEROGENEITY_ALPHA, freedom)):
        return 0.0
    return q_profile(changes, freedom)


def cluster_key(case_id: str, cluster_of: Mapping[str, str]) -> str:
    return cluster_of.get(case_id) or f"\0{case_id}"  # outside every cluster: one of its own


def _pooled(changes: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """The inverse-variance weighted mean of (change, variance) pairs and its variance."""
    weight = sum(1 / variance for _, variance in changes)
    return sum(change / variance for change, variance in changes) / weight, 1 / weight


@dataclass(frozen=True, slots=True)
class RunShift:
    """How much clusters moved between the two runs beyond their sampling noise.

    `cases` holds each case's log-odds change (on equal first samples) and its
    sampling variance; `cluster_of` maps a case to its cluster.
    """

    cases: Mapping[str, tuple[float, float]]
    cluster_of: Mapping[str, str]

    def _clusters(self) -> list[tuple[float, float]]:
        members: dict[str, list[tuple[float, float]]] = {}
        for case_id, change in self.cases.items():
            members.setdefault(cluster_key(case_id, self.cluster_of), []).append(change)
        return [_pooled(changes) for changes in members.values()]

    @property
    def variance(self) -> float:
        """The bound on τ² over every cluster, on the log-odds scale."""
        return between_variance(self._clusters())


def estimate(counts: Mapping[str, Counts], clusters: Mapping[str, str]) -> RunShift:
    """Every case's log-odds change: `counts` holds each case's equal first samples."""
    return RunShift({case_id: logit_change(c) for case_id, c in counts.items()}, dict(clusters))
