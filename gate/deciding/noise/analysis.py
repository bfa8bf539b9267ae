"""The comparison under noise: with repeated samples, every rule is decided by a test.

Per case, a drop counts as a regression only when it exceeds the tolerance and
a one-sided exact test on passes/samples says it is not chance (Boschloo's for
critical cases, which can block; Fisher's for the others, which are reported). The
critical cases are one Holm family at their share of the gate's level
(gate.deciding.noise.level); the other cases, which never block on their own, form a
second Holm family at `alpha`, for the report. At suite level a paired
sign-flip test over the shared cases' rate differences decides the pass-rate
rule, and a t interval on the mean difference says whether a drop beyond
`non_inferiority_margin` can be ruled out.

Under `samples: auto` a case's sample count depends on what it showed, so a
count's plain p-value is not a p-value any more. A critical case's p-value is
the smallest over the looks it reached of (its look's p-value / that look's
spend), which Bonferroni's inequality keeps valid whatever the stopping; the
suite test compares, per case, the candidate's and the baseline's first m
samples, m being the suite's look (the fewest samples any case has): equal
prefixes of independent draws are exchangeable, so the sign-flip test is exact.
Cases that share a cluster are flipped together (Miller 2024, "Adding Error
Bars to Evals"): near-duplicates move together, and counting them as
independent would overstate the evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial
from typing import Any

from gate.deciding.noise import level
from gate.deciding.noise.beside import spread_beside
from gate.deciding.noise.runshift import cluster_key, estimate
from gate.deciding.noise.runspread import RunSpread
from gate.deciding.noise.suitetest import (
    suite_test,
    verdicts,
)
from gate.results import EPSILON, CaseResult
from gate.stats import (
    MeanChange,
    boschloo_lower,
    fisher_lower,
    holm,
    mean_change,
    shifted_fisher_lower,
    wilson,
)
from gate.suite.config import AdaptiveConfig, GateConfig

#: the report names the design effect of the clusters from this ratio up
SHOWN_DESIGN_EFFECT = 1.2


@dataclass(frozen=True, slots=True)
class CaseTest:
    id: str
    critical: bool
    base_passes: int
    base_samples: int
    cand_passes: int
    cand_samples: int
    p_lower: float  # the candidate's rate is lower
    p_higher: float  # the candidate's rate is higher
    base_interval: tuple[float, float]
    cand_interval: tuple[float, float]
    #: the drop's p-value without the allowance for a shift between runs (None: no
    #: allowance was made), so the report can say which drops a shift could explain
    p_unshifted: float | None = None

    @property
    def change(self) -> float:
        return self.cand_passes / self.cand_samples - self.base_passes / self.base_samples

    def counts(self) -> str:
        return f"{self.base_passes}/{self.base_samples} → {self.cand_passes}/{self.cand_samples}"


@dataclass(slots=True)
class Confirmation:
    """A flagged case re-run on fresh samples before the gate blocks on it."""

    confirmed: bool
    test: CaseTest
    baseline_rerun: bool  # False: one-sided, the baseline's original samples were used


@dataclass(frozen=True, slots=True)
class NoiseAnalysis:
    tests: dict[str, CaseTest]
    regressions: list[str]
    fixes: list[str]
    within_noise: list[str]
    suite_p: float
    change: MeanChange
    samples: int  # the typical samples per case, for the "samples to decide" estimate
    confirmations: dict[str, Confirmation] = field(default_factory=dict)
    #: the level the suite test is held to at this look (its share of `alpha`)
    suite_alpha: float = 0.0
    shares: level.Shares = field(default_factory=lambda: level.Shares(0.0, 0.0, 0.0))
    #: clustered variance of the suite's differences over the independent one (1: none)
    design_effect: float = 1.0
    clusters: int = 0
    #: τ², how far clusters moved between the runs beyond sampling noise, on the log-odds
    #: scale (gate.deciding.noise.runshift; 0: none). Reported, never used to decide.
    run_shift: float = 0.0
    #: how far a case moves between repeated trusted runs (the base's history); when its
    #: τ² is over 0, every case's test allows each run a shift of that size
    run_spread: RunSpread | None = None
    #: a suite-level drop re-tested on fresh samples (None: not re-tested)
    suite_confirmed: bool | None = None
    #: critical cases whose drop would block without the allowance for shifts between
    #: runs: the gate cannot tell them from such a shift, and says so (inconclusive)
    shift_explained: list[str] = field(default_factory=list)
    #: the suite test's units were too few for its level, and Student's t on them found a
    #: drop beyond the margin at it: (t's p, units); the verdict is then inconclusive
    suite_unreachable: tuple[float, int] | None = None
    #: without trusted repeated runs, the spread the two runs themselves show in the
    #: clusters beside each critical case that dropped (case → spread); it can only make
    #: a block inconclusive
    spread_beside: dict[str, RunSpread] = field(default_factory=dict)

    def change_text(self) -> str:
        """`mean change -3.7 points per case (95% CI -8.4 to +1.0)`"""
        change = self.change
        return (
            f"mean change {change.mean * 100:+.1f} points per case "
            f"(95% CI {change.low * 100:+.1f} to {change.high * 100:+.1f})"
        )


def prefix_counts(old: CaseResult, new: CaseResult) -> tuple[int, int, int, int]:
    """Both sides' passes over their equal first samples (the whole counts without verdicts).

    Empirical log-odds are biased towards 0 by different amounts at different counts
    (4/4 and 72/72 differ by 2.8), so clusters are compared on equal counts.
    """
    base, cand = verdicts(old), verdicts(new)
    if base is None or cand is None:
        return old.passes, old.samples, new.passes, new.samples
    m = min(len(base), len(cand))
    return sum(base[:m]), m, sum(cand[:m]), m


def design_of(config: Mapping[str, Any]) -> list[int] | None:
    """The looks of a `samples: auto` run, from its recorded config (None: fixed samples)."""
    if config.get("samples") != "auto":
        return None
    try:
        adaptive = AdaptiveConfig.model_validate(config.get("adaptive") or {})
    except ValueError:
        adaptive = AdaptiveConfig()
    return level.looks(adaptive)


Test = Callable[[int, int, int, int], float]


def sequential_p(
    passes: int,
    samples: int,
    outcomes: Sequence[bool] | None,
    looks: list[int] | None,
    test: Test = fisher_lower,
) -> float:
    """The candidate-lower p-value of a case, valid however its sample count was chosen.

    `passes`/`samples` are the baseline's; `outcomes` the candidate's verdicts in order.
    Under fixed samples it is `test`'s; under `samples: auto`, the smallest over the looks
    reached of `test`'s p at that look divided by the look's spend.
    """
    assert outcomes is not None
    count = len(outcomes)
    if looks is None or count not in looks:
        # Fixed samples, or a case with its own fixed `samples` inside an auto run.
        return test(passes, samples, sum(outcomes), count)
    best = 1.0
    for index, look in enumerate(looks):
        if look > count:
            break
        p = test(passes, samples, sum(outcomes[:look]), look)
        best = min(best, p / level.look_weight(index, len(looks)))
    return min(1.0, best)


def case_test(
    old: CaseResult,
    new: CaseResult,
    looks: list[int] | None = None,
    spread: float = 0.0,
    freedom: int = 0,
) -> CaseTest:
    """The case's two one-sided tests. A critical case that dropped is tested by
    Boschloo's exact test (it can block); every other p-value is Fisher's (report only).
    `spread` is the variance of a log odds ratio between two runs of an unchanged system,
    estimated on `freedom` degrees of freedom from trusted repeated runs
    (gate.deciding.noise.runshift.RunSpread); over 0, every test is Fisher's averaged over
    such a shift (Student's t, for the estimate's own uncertainty).

    Nothing the candidate's run shows elsewhere loosens a critical case's test. An
    allowance for shifts a cluster shares between runs, estimated from the other
    clusters' changes, once let a pull request that broke a critical family ship by
    moving (even improving) another family, which widened the estimated spread (an
    independent attack shipped a 0.95 → 0.3 drop 96% of the time). A shift between runs
    is told from a regression by repeated runs on the base (the history) or a rerun on
    fresh samples (gate.pipeline.confirm), never by the run under judgement.
    """
    test: Test = fisher_lower
    if spread > 0:
        test = partial(_shifted, spread=spread, freedom=freedom)
    elif new.critical and new.passes * old.samples < old.passes * new.samples:
        test = boschloo_lower
    outcomes = verdicts(new)
    if outcomes is None:
        p_lower = test(old.passes, old.samples, new.passes, new.samples)
    else:
        p_lower = sequential_p(old.passes, old.samples, outcomes, looks, test)
    return CaseTest(
        id=new.id,
        critical=new.critical,
        base_passes=old.passes,
        base_samples=old.samples,
        cand_passes=new.passes,
        cand_samples=new.samples,
        p_lower=p_lower,
        p_higher=test(new.passes, new.samples, old.passes, old.samples),
        base_interval=wilson(old.passes, old.samples),
        cand_interval=wilson(new.passes, new.samples),
        p_unshifted=case_test(old, new, looks).p_lower if spread > 0 and new.critical else None,
    )


def _shifted(
    base_passes: int,
    base_samples: int,
    cand_passes: int,
    cand_samples: int,
    spread: float,
    freedom: int,
) -> float:
    return shifted_fisher_lower(
        base_passes, base_samples, cand_passes, cand_samples, spread, freedom
    )


def critical_alpha(tests: Sequence[CaseTest], rule: GateConfig) -> float:
    return level.shares(rule, has_critical=any(t.critical for t in tests)).critical


def significant(
    tests: Sequence[CaseTest], rule: GateConfig, *, lower: bool, unshifted: bool = False
) -> list[str]:
    """Cases whose change (drop or rise) beyond the tolerance is significant.

    Two Holm families, each of every case tested in it, moved or not: the critical
    cases at their share of the gate's level, the others at `alpha`. `unshifted`: the
    drops as they would be tested without an allowance for shifts between runs.
    """
    sign = -1 if lower else 1
    moved_ids = {t.id for t in tests if sign * t.change > rule.tolerance + EPSILON}
    found = []
    for critical, alpha in ((True, critical_alpha(tests, rule)), (False, rule.alpha)):
        family = [t for t in tests if t.critical is critical]
        p_values = [t.p_lower if lower else t.p_higher for t in family]
        if unshifted:
            p_values = [t.p_unshifted if t.p_unshifted is not None else t.p_lower for t in family]
        rejected = holm(p_values, alpha)
        found += [t.id for t, r in zip(family, rejected, strict=True) if r and t.id in moved_ids]
    return sorted(found)


def analyse(
    pairs: Sequence[tuple[CaseResult, CaseResult]],
    rule: GateConfig,
    looks: list[int] | None = None,
    clusters: Mapping[str, str] | None = None,
    run_spread: RunSpread | None = None,
) -> NoiseAnalysis:
    """`pairs` are (baseline, candidate) results of the cases both runs judged; `looks` the
    candidate's `samples: auto` schedule (None: fixed samples); `clusters` case id → cluster;
    `run_spread` the shift between runs found in trusted repeated runs (None: none known)."""
    shift = None
    if clusters:
        shift = estimate({new.id: prefix_counts(old, new) for old, new in pairs}, clusters)
    spread, freedom = 0.0, 0
    if run_spread is not None:
        # Counted in the clusters the suite declares: a family shifts as one.
        run_spread = run_spread.counted_in(clusters)
        spread, freedom = run_spread.between_two_runs, run_spread.shift_freedom
    tests = [case_test(old, new, looks, spread, freedom) for old, new in pairs]
    beside: dict[str, RunSpread] = {}
    if run_spread is None and clusters:
        tests, beside = _allow_shift_beside(pairs, tests, rule, looks, clusters)
    tests_by = {t.id: t for t in tests}
    shares = level.shares(rule, has_critical=any(t.critical for t in tests))
    suite = suite_test(pairs, shares.suite, looks, clusters)
    regressions = significant(tests, rule, lower=True)
    explained = []
    if spread > 0 or beside:
        would_block = significant(tests, rule, lower=True, unshifted=True)
        explained = [i for i in would_block if i not in regressions and tests_by[i].critical]
    fixes = significant(tests, rule, lower=False)
    within = [t.id for t in tests if t.change < -EPSILON and t.id not in regressions]
    differences = [
        Fraction(t.cand_passes, t.cand_samples) - Fraction(t.base_passes, t.base_samples)
        for t in tests
    ]
    samples = sorted(t.cand_samples for t in tests)
    change = mean_change([float(d) for d in differences])
    return NoiseAnalysis(
        tests=tests_by,
        regressions=regressions,
        fixes=fixes,
        within_noise=sorted(within),
        suite_p=suite.p,
        change=change,
        samples=samples[len(samples) // 2] if samples else 0,
        suite_alpha=suite.alpha,
        shares=shares,
        design_effect=suite.design_effect,
        clusters=suite.clusters if clusters else 0,
        run_shift=shift.variance if shift else 0.0,
        run_spread=run_spread,
        shift_explained=explained,
        spread_beside=beside,
        suite_unreachable=(
            (suite.approximate_p, suite.units)
            if suite.approximate_p is not None
            # No test on so few units can block, so the estimate decides: a drop beyond the
            # margin (and the tolerance) does not ship, significant or not. Asking Student's
            # t to find it first shipped a 10-point drop of every case 20% of the time with
            # four clusters (an independent simulation).
            and -change.mean > max(rule.tolerance, rule.non_inferiority_margin) + EPSILON
            else None
        ),
    )


def _allow_shift_beside(
    pairs: Sequence[tuple[CaseResult, CaseResult]],
    tests: list[CaseTest],
    rule: GateConfig,
    looks: list[int] | None,
    clusters: Mapping[str, str],
) -> tuple[list[CaseTest], dict[str, RunSpread]]:
    """Without trusted repeated runs: each critical case that would block is tested again
    allowing the shift the two runs show in the clusters beside its own.

    Declared clusters say cases move together between runs; with one run a side, such a
    shift looks like a regression (an independent simulation blocked 16-18% of unchanged
    systems whose families shifted between runs). The other clusters are the only evidence
    of it, and the candidate's run is the pull request's, so what this finds is used only
    to say "inconclusive" (gate.deciding.rules), never to ship.
    """
    blocking = {t.id for t in tests if t.critical} & set(significant(tests, rule, lower=True))
    by_id = {new.id: (old, new) for old, new in pairs}
    # Every cluster holding a critical case that would block stays out of every estimate:
    # two broken families must not explain each other away.
    broken = {cluster_key(case_id, clusters) for case_id in blocking}
    found: dict[str, RunSpread | None] = {}  # one fit per cluster: its cases share it
    beside: dict[str, RunSpread] = {}
    retested = []
    for test in tests:
        spread = None
        if test.id in blocking:
            own = cluster_key(test.id, clusters)
            if own not in found:
                found[own] = spread_beside(pairs, clusters, test.id, broken)
            spread = found[own]
        if spread is None or spread.variance <= 0:
            retested.append(test)
            continue
        beside[test.id] = spread
        old, new = by_id[test.id]
        retested.append(case_test(old, new, looks, spread.between_two_runs, spread.shift_freedom))
    return retested, beside


def noisy(pairs: Sequence[tuple[CaseResult, CaseResult]]) -> bool:
    """Repeated samples on either side switch the comparison to tests."""
    return any(old.samples > 1 or new.samples > 1 for old, new in pairs)
