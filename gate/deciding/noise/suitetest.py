"""The suite-level test of the pass-rate rule: a paired sign-flip test over the shared
cases' pass-share differences, each cluster's cases flipped together.

Under `samples: auto` each case is compared on its first m samples on both sides, m
being the suite's look (the fewest samples any case has): equal prefixes of
independent draws are exchangeable under "no change", so the test is exact. When the
units are too few for the exact test to reach its level, Student's t is reported
beside it (never a block on its own).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from gate.deciding.noise import level
from gate.results import CaseResult
from gate.stats import sign_flip_lower


def verdicts(case: CaseResult) -> list[bool] | None:
    """The case's sample verdicts in sample order (None: the results do not hold them)."""
    if len(case.outputs) != case.samples:
        return None
    return [sample.status == "pass" for sample in sorted(case.outputs, key=lambda o: o.sample)]


def matched_difference(
    base: Sequence[bool] | None, base_share: Fraction, cand: Sequence[bool], limit: int | None
) -> Fraction:
    """The candidate's pass share minus the baseline's, over equal first samples.

    Equal prefixes keep the two sides exchangeable under "no change" (different counts
    would not be symmetric); without the baseline's per-sample verdicts, its share.
    """
    m = min(len(cand), limit or len(cand))
    if base is not None:
        m = min(m, len(base))
    if m <= 0:
        return Fraction(0)
    if base is None:
        return Fraction(sum(cand[:m]), m) - base_share
    return Fraction(sum(cand[:m]) - sum(base[:m]), m)


def suite_look(fewest: int, looks: list[int] | None) -> tuple[int | None, float]:
    """The prefix the suite test reads and the share of its alpha spent at that look."""
    if looks is None:
        return None, 1.0
    index = level.look_of(fewest, looks)
    if index < 0:
        return None, 1.0
    return looks[index], level.look_weight(index, len(looks))


@dataclass(frozen=True, slots=True)
class SuiteTest:
    p: float
    alpha: float
    design_effect: float
    clusters: int
    mean: float
    #: when the units (clusters, or cases) are too few for the exact test to reach
    #: `alpha` (its smallest p is 2^-units): Student's t on the units' differences
    approximate_p: float | None = None
    units: int = 0


def sign_flip_by_cluster(
    differences: Mapping[str, Fraction],
    clusters: Mapping[str, str] | None,
    alpha: float,
    reachable: float | None = None,
) -> SuiteTest:
    """The paired sign-flip test with each cluster's differences flipped together.

    `reachable`: the level the test is held to at its design's last look (default
    `alpha`), against which too few units is judged: under `samples: auto` an interim
    look's spend is tiny, but a suite that looked worse would have sampled on to the last.
    """
    floor = alpha if reachable is None else reachable
    mean = float(sum(differences.values(), Fraction(0))) / len(differences) if differences else 0
    if not clusters:
        values = list(differences.values())
        return _with_floor(
            SuiteTest(sign_flip_lower(values), alpha, 1.0, len(values), mean), values, floor
        )
    groups: dict[str, Fraction] = {}
    for case_id, difference in differences.items():
        key = clusters.get(case_id) or f"\0{case_id}"
        groups[key] = groups.get(key, Fraction(0)) + difference
    squares = sum(float(d) ** 2 for d in differences.values())
    clustered = sum(float(total) ** 2 for total in groups.values())
    effect = clustered / squares if squares else 1.0
    units = list(groups.values())
    test = SuiteTest(sign_flip_lower(units), alpha, effect, len(groups), mean)
    return _with_floor(test, units, floor)


def _with_floor(test: SuiteTest, units: Sequence[Fraction], reachable: float) -> SuiteTest:
    """The test, and Student's t on its units when the exact test cannot reach its level.

    With k units the sign-flip test's smallest p is 2^-k: a suite of five clusters can
    never reach 0.0067, and an independent attack shipped a collapse of every case
    (25/25 → 0/25) through it. Student's t is only approximate with so few units, so it
    is reported, never a block: a drop beyond the margin is then inconclusive whatever
    its p (gate.deciding.rules).
    """
    if reachable <= 0 or 2.0 ** -len(units) <= reachable:
        return test  # (a few units that moved among many is not a suite-level drop)
    values = [float(u) for u in units]
    return dataclasses.replace(test, approximate_p=_t_lower(values), units=len(values))


def _t_lower(values: Sequence[float]) -> float:
    """One-sided Student's t p-value that the values are centred below zero (one value:
    1 when it is not below, 0 when it is, since nothing else can be said)."""
    mean = sum(values) / len(values) if values else 0.0
    if len(values) < 2 or all(v == values[0] for v in values):
        return 0.0 if mean < 0 else 1.0
    from scipy import stats as scipy_stats

    return float(scipy_stats.ttest_1samp(values, 0.0, alternative="less").pvalue)


def suite_test(
    pairs: Sequence[tuple[CaseResult, CaseResult]],
    alpha: float,
    looks: list[int] | None,
    clusters: Mapping[str, str] | None = None,
) -> SuiteTest:
    """The paired sign-flip test of the pass-rate rule, at this look's share of `alpha`."""
    limit, weight = suite_look(min((new.samples for _, new in pairs), default=0), looks)
    differences = {}
    for old, new in pairs:
        cand = verdicts(new)
        if cand is None:  # hand-built results: the shares as they are
            differences[new.id] = Fraction(new.passes, new.samples) - Fraction(
                old.passes, old.samples
            )
            continue
        base_share = Fraction(old.passes, old.samples)
        differences[new.id] = matched_difference(verdicts(old), base_share, cand, limit)
    final = 1.0 if looks is None else level.look_weight(len(looks) - 1, len(looks))
    return sign_flip_by_cluster(differences, clusters, alpha * weight, alpha * final)
