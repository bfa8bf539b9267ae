"""Shifts between runs that a whole cluster shares: a critical case's test allows for them.

A per-case exact test assumes each sample is a fresh draw at one fixed rate on
each side. Near-duplicate cases can break that together: the provider's day, a
cache or a retrieval index can move a whole family's rate between the baseline
run and the candidate run. That is a real difference between the two runs, not
a change the pull request made, and a test that knows only one run per side
cannot tell it from a regression.

When a suite declares clusters, the clusters are the replicates that show how
large such shifts are. Each cluster's change on the log-odds scale (inverse-
variance weighted over its cases, on equal first samples of both sides) has the
sampling variance of its counts plus the run-to-run variance τ² of a cluster's
shift. The Q-profile upper bound (Viechtbauer 2007), from every cluster but the
tested case's own, bounds τ². Each side's counts then shrink by the design effect
that τ² implies for them (Rao and Scott 1992), and the exact test runs on what is
left. A critical case's p-value is the larger of that and the plain exact test's,
so declaring clusters can only make the gate block less; a suite whose clusters
do not drift (τ² bound 0) keeps the exact test.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: (baseline passes, baseline samples, candidate passes, candidate samples)
Counts = tuple[int, int, int, int]


def logit_change(counts: Counts) -> tuple[float, float]:
    """The candidate's log-odds minus the baseline's, and its sampling variance.

    Empirical log-odds with half a pass and half a failure added on each side
    (Haldane and Anscombe), so 20/20 has a finite log-odds and a large variance.
    """
    base_passes, base_samples, cand_passes, cand_samples = counts

    def log_odds(passes: int, samples: int) -> tuple[float, float]:
        yes, no = passes + 0.5, samples - passes + 0.5
        return math.log(yes / no), 1 / yes + 1 / no

    base, base_variance = log_odds(base_passes, base_samples)
    cand, cand_variance = log_odds(cand_passes, cand_samples)
    return cand - base, base_variance + cand_variance


#: τ² is taken at this one-sided upper confidence bound, not at its point estimate
SPREAD_CONFIDENCE = 0.95
#: the spread is bounded from the clusters other than the tested case's own, at least two
FEWEST_CLUSTERS = 3


def generalised_q(changes: Sequence[tuple[float, float]], spread: float) -> float:
    """Σ (y - ȳ)² / (v + τ²), ȳ weighted by 1 / (v + τ²): χ² with k - 1 degrees of freedom."""
    weights = [1 / (variance + spread) for _, variance in changes]
    centre = sum(w * y for w, (y, _) in zip(weights, changes, strict=True)) / sum(weights)
    return sum(w * (y - centre) ** 2 for w, (y, _) in zip(weights, changes, strict=True))


def q_profile(changes: Sequence[tuple[float, float]], target: float) -> float:
    """The τ² at which the generalised Q statistic falls to `target` (0 if it starts below).

    Q falls as τ² grows, so bisection finds it. At target k - 1 this is the Paule–Mandel
    estimator (the tests hold it to statsmodels').
    """
    if generalised_q(changes, 0.0) <= target:
        return 0.0
    low, high = 0.0, 1.0
    while generalised_q(changes, high) > target and high < 1e6:
        low, high = high, high * 2
    for _ in range(60):
        middle = (low + high) / 2
        if generalised_q(changes, middle) > target:
            low = middle
        else:
            high = middle
    return high


def between_variance(changes: Sequence[tuple[float, float]]) -> float:
    """An upper confidence bound on τ² from (change, sampling variance) pairs.

    The Q-profile bound (Viechtbauer 2007): the τ² at which the generalised Q
    statistic falls to the lower (1 - SPREAD_CONFIDENCE) quantile of χ²(k - 1). A
    point estimate would be too small about half the time, and a critical case in a
    drifting cluster tested too leniently with it. At 80% an independent simulation
    still blocked unchanged systems of pairs and triples of near-duplicates 2.2-3.4% of
    the time under a shift between runs; at 95%, 0.5-0.7%.
    """
    if len(changes) < FEWEST_CLUSTERS - 1:
        return 0.0
    from scipy.stats import chi2  # only for suites that declare clusters

    return q_profile(changes, float(chi2.ppf(1 - SPREAD_CONFIDENCE, len(changes) - 1)))


def _key(case_id: str, cluster_of: Mapping[str, str]) -> str:
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

    def _clusters(self, leaving_out: str | None = None) -> list[tuple[float, float]]:
        members: dict[str, list[tuple[float, float]]] = {}
        for case_id, change in self.cases.items():
            key = _key(case_id, self.cluster_of)
            if key != leaving_out:
                members.setdefault(key, []).append(change)
        return [_pooled(changes) for changes in members.values()]

    @property
    def variance(self) -> float:
        """The bound on τ² over every cluster, on the log-odds scale (what the report shows)."""
        return between_variance(self._clusters())

    def effective(self, case_id: str, counts: Counts) -> Counts:
        """The case's counts once its cluster's shift is allowed for.

        τ² is bounded from every cluster but the case's own. The case's own drop would
        otherwise inflate the spread it is measured against; and its cluster's would let a
        pull request that fails a critical case and all its near-duplicates together pass
        the drop off as a shift between runs, which only the *other* clusters can show. The
        case's mates then estimate
        its cluster's shift δ; the best linear predictor of the shift, B·δ with
        B = τ² / (τ² + var δ), moves the baseline's rate, and the rest of the shift's
        variance, (1 - B)·τ², shrinks both sides' counts by their design effect (Rao
        and Scott 1992): a side's shift of variance s² on the log-odds scale adds
        s²·n·p(1-p) times the binomial variance, so n samples carry the information of
        n / (1 + s²·n·p(1-p)). Rounding favours "no change": the baseline's passes
        round down, the candidate's up.
        """
        spread = between_variance(self._clusters(leaving_out=_key(case_id, self.cluster_of)))
        if spread <= 0:
            return counts
        own = _key(case_id, self.cluster_of)
        mates = [
            change
            for other, change in self.cases.items()
            if other != case_id and _key(other, self.cluster_of) == own
        ]
        shift, weight = 0.0, 0.0
        if mates:
            shift, mates_variance = _pooled(mates)
            weight = spread / (spread + mates_variance)
        half = (1 - weight) * spread / 2
        base_passes, base_samples, cand_passes, cand_samples = counts

        def shrunk(passes: float, samples: int, *, up: bool) -> tuple[int, int]:
            rate = (passes + 0.5) / (samples + 1)
            effect = 1 + half * samples * rate * (1 - rate)
            kept = max(1, math.floor(samples / effect))
            share = max(0.0, min(passes * kept / samples, kept))
            return (math.ceil(share) if up else math.floor(share)), kept

        # The baseline's rate as the candidate's run would have seen it.
        rate = (base_passes + 0.5) / (base_samples + 1)
        moved = 1 / (1 + math.exp(-(math.log(rate / (1 - rate)) + weight * shift)))
        base = shrunk(moved * (base_samples + 1) - 0.5, base_samples, up=False)
        cand = shrunk(cand_passes, cand_samples, up=True)
        return base[0], base[1], cand[0], cand[1]


def estimate(counts: Mapping[str, Counts], clusters: Mapping[str, str]) -> RunShift:
    """Every case's log-odds change: `counts` holds each case's equal first samples."""
    return RunShift({case_id: logit_change(c) for case_id, c in counts.items()}, dict(clusters))
