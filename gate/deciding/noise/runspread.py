"""How far a case moves between repeated runs of one configuration, from trusted runs.

The model is the binomial with a logit-normal shift per run: in run r a case's log odds
is its own centre μ plus u_r, u_r ~ N(0, τ²), and its passes are Binomial(samples,
expit(μ + u_r)). τ² is the one shared by every case, and its estimate is the maximum of
the likelihood with each case's centre integrated out (flat on the log odds, −8 to 8;
like REML, this keeps the few runs per case from biasing τ² down as profiling would) and
each run's shift integrated by Gauss–Hermite. Binomial counts are used as they are: the
empirical log odds of 19/20 or 20/20 overstate their own noise so much that Cochran's Q
found a τ² of 1 in under a quarter of histories (an independent simulation).

Trusted runs are the base's history (gate.history.spread). Without them, the two runs
being compared can still show a shift, in the clusters beside the one a critical case is
in (gate.deciding.noise.beside); the pull request controls one of those runs, so such an
allowance may only turn a block into "inconclusive" (exit 3), never into a ship.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from gate.deciding.noise.runshift import cluster_key

#: τ (the shift's standard deviation on the log odds) is sought within 0 … TAU_LARGEST,
#: to TAU_STEP / 5
TAU_STEP = 0.05
TAU_LARGEST = 5.0
#: each case's centre is integrated over this range of log odds, in this many steps
CENTRE_RANGE = 8.0
CENTRE_POINTS = 81
SHIFT_NODES = 64


@dataclass(frozen=True, slots=True)
class RunSpread:
    """How far a case's log odds moves between repeated runs of one configuration.

    `variance` is τ² per run (0: no shift found); a case's test then allows the
    candidate's run and the baseline's run a shift each.
    """

    variance: float
    runs: int  # distinct runs of the configuration
    cases: int  # cases whose counts varied, and so say something
    #: twice the log-likelihood ratio of the estimate over "no shift" (0: none found)
    likelihood_ratio: float
    freedom: int  # Σ (runs - 1) over those cases
    source: str = ""
    #: each case that said something, with the number of runs it was in
    informative: tuple[tuple[str, int], ...] = ()
    #: the degrees of freedom the estimate of τ² rests on, counted in clusters (cases in
    #: a cluster shift together, so five of them are not five pieces of evidence)
    shift_freedom: int = 0

    def counted_in(self, clusters: Mapping[str, str] | None) -> RunSpread:
        """This spread with its degrees of freedom counted in `clusters` (case → cluster;
        a case outside every cluster is one of its own)."""
        runs_of_group: dict[str, int] = {}
        for case_id, runs in self.informative:
            key = cluster_key(case_id, clusters or {})
            runs_of_group[key] = max(runs_of_group.get(key, 0), runs)
        freedom = sum(runs - 1 for runs in runs_of_group.values())
        return dataclasses.replace(self, shift_freedom=freedom)

    def to_dict(self) -> dict[str, float | int | str]:
        return {
            "variance": self.variance,
            "runs": self.runs,
            "cases": self.cases,
            "likelihood_ratio": self.likelihood_ratio,
            "degrees_of_freedom": self.freedom,
            "shift_degrees_of_freedom": self.shift_freedom,
            "source": self.source,
        }

    @property
    def between_two_runs(self) -> float:
        """The variance of the log odds ratio between two runs: one shift each."""
        return 2 * self.variance


@lru_cache(maxsize=1)
def grids() -> tuple[Any, Any, Any, Any]:
    """The centres with their trapezoid weights (in logs), and the shift's Hermite nodes
    with theirs."""
    import numpy as np

    centres = np.linspace(-CENTRE_RANGE, CENTRE_RANGE, CENTRE_POINTS)
    trapezoid = np.full(CENTRE_POINTS, centres[1] - centres[0])
    trapezoid[[0, -1]] /= 2
    nodes, weights = np.polynomial.hermite_e.hermegauss(SHIFT_NODES)
    return centres, np.log(trapezoid), nodes, np.log(weights / weights.sum())


def log_likelihood(groups: Sequence[Sequence[tuple[int, int]]], tau: float) -> float:
    """The log-likelihood of τ, each case's centre integrated out (flat) and each run's
    shift by Gauss–Hermite; binomial coefficients, which do not depend on τ, left out."""
    import numpy as np
    from scipy.special import expit, logsumexp

    centres, centre_weights, nodes, log_weights = grids()
    logits = centres[:, None] + tau * nodes[None, :]  # [centre, node]
    log_yes, log_no = np.log(expit(logits)), np.log(expit(-logits))
    # Many runs share their counts (19/20, 20/20, …): each distinct count is worked once,
    # and a case is the sum of its runs' rows.
    distinct = sorted({counts for group in groups for counts in group})
    index = {counts: i for i, counts in enumerate(distinct)}
    passes = np.array([k for k, _ in distinct], dtype=float)[:, None, None]
    fails = np.array([n - k for k, n in distinct], dtype=float)[:, None, None]
    per_count = logsumexp(passes * log_yes + fails * log_no + log_weights, axis=2)
    membership = np.zeros((len(groups), len(distinct)))
    for row, group in enumerate(groups):
        for counts in group:
            membership[row, index[counts]] += 1
    per_case = membership @ per_count  # [case, centre]
    return float(logsumexp(per_case + centre_weights, axis=1).sum())


def spread_between_runs(
    runs: Sequence[Mapping[str, tuple[int, int]]], source: str = ""
) -> RunSpread:
    """τ² from repeated runs of an unchanged configuration: each maps case → (passes,
    samples). A case that passed (or failed) every sample of every run is left out: its
    centre is at the edge of what the counts can show, so its runs say nothing of a shift.
    """
    seen: dict[str, list[tuple[int, int]]] = {}
    for run in runs:
        for case_id, counts in run.items():
            seen.setdefault(case_id, []).append(counts)
    informative = {
        case_id: counts
        for case_id, counts in seen.items()
        if len(counts) > 1
        and not all(passes == samples for passes, samples in counts)
        and not all(passes == 0 for passes, _ in counts)
    }
    freedom = sum(len(counts) - 1 for counts in informative.values())
    seen_in = tuple((case_id, len(counts)) for case_id, counts in informative.items())
    found = RunSpread(0.0, len(runs), len(informative), 0.0, freedom, source, seen_in, freedom)
    if freedom == 0:
        return found
    from scipy.optimize import minimize_scalar

    groups = list(informative.values())
    best = minimize_scalar(
        lambda tau: -log_likelihood(groups, tau),
        bounds=(0.0, TAU_LARGEST),
        method="bounded",
        options={"xatol": TAU_STEP / 5},
    )
    at_zero = log_likelihood(groups, 0.0)
    if -best.fun <= at_zero:
        return found
    return dataclasses.replace(
        found,
        variance=float(best.x) ** 2,
        likelihood_ratio=float(2 * (-best.fun - at_zero)),
    )
