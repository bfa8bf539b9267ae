"""gate/deciding/noise/runshift.py: a critical case's test allows for a shift its cluster shares."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats
from statsmodels.stats.meta_analysis import combine_effects

from gate.deciding.noise.analysis import analyse, case_test, critical_test
from gate.deciding.noise.runshift import (
    SPREAD_CONFIDENCE,
    between_variance,
    estimate,
    generalised_q,
    logit_change,
    q_profile,
)
from gate.suite.config import GateConfig
from tests.factories import sampled

changes = st.lists(
    st.tuples(st.floats(-4, 4), st.floats(0.05, 3)), min_size=3, max_size=12
)  # (log-odds change, its sampling variance)


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # statsmodels' I² at τ² 0
@settings(max_examples=80, deadline=None)
@given(changes)
def test_q_profile_at_k_minus_one_is_statsmodels_paule_mandel(pairs: list) -> None:  # type: ignore[type-arg]
    effects = np.array([change for change, _ in pairs])
    variances = np.array([variance for _, variance in pairs])
    reference = combine_effects(effects, variances, method_re="pm").tau2
    assert q_profile(pairs, len(pairs) - 1) == pytest.approx(reference, abs=1e-6, rel=1e-4)


@settings(max_examples=80, deadline=None)
@given(changes)
def test_the_spread_bound_is_the_q_profile_at_its_confidence(pairs: list) -> None:  # type: ignore[type-arg]
    bound = between_variance(pairs)
    target = scipy_stats.chi2.ppf(1 - SPREAD_CONFIDENCE, len(pairs) - 1)
    if bound == 0:
        assert generalised_q(pairs, 0.0) <= target
    else:
        assert generalised_q(pairs, bound) == pytest.approx(target, rel=1e-6)
        # an upper bound: never below the point estimate
        assert bound >= q_profile(pairs, len(pairs) - 1) - 1e-9


def test_the_spread_bound_covers_the_true_spread_at_its_confidence() -> None:
    """Simulated clusters with a known τ²: the bound is at or above it as often as its
    confidence says (95%)."""
    import random

    rng = random.Random(3)
    tau2, covered, trials = 1.0, 0, 2000
    for _ in range(trials):
        pairs = []
        for _ in range(8):
            variance = rng.uniform(0.1, 1.0)
            pairs.append((rng.gauss(0, math.sqrt(tau2 + variance)), variance))
        covered += between_variance(pairs) >= tau2
    assert SPREAD_CONFIDENCE - 0.03 <= covered / trials <= SPREAD_CONFIDENCE + 0.03


def test_log_odds_change_is_finite_at_the_boundary() -> None:
    change, variance = logit_change((20, 20, 20, 20))
    assert change == 0
    assert variance == pytest.approx(2 * (1 / 20.5 + 1 / 0.5))


def _drifting_family() -> list[tuple[str, int, int, int, int, str]]:
    """Eight families of five that each moved together between the two runs, by as much as
    18/20 → 8/20 (family f1) or not at all: shifts of the runs, no change of the system."""
    moved = [12, 8, 18, 10, 19, 14, 9, 17]
    return [
        (f"f{family}-{member}", 18, 20, moved[family], 20, f"f{family}")
        for family in range(8)
        for member in range(5)
    ]


def _one_family_fell() -> list[tuple[str, int, int, int, int, str]]:
    """Family f1 fell 18/20 → 8/20, every other family held: what a pull request that breaks
    a critical case and its near-duplicates together looks like."""
    return [
        (c, bp, bn, bp if k != "f1" else cp, cn, k) for c, bp, bn, cp, cn, k in _drifting_family()
    ]


def test_a_critical_case_that_fell_with_every_family_moving_is_not_a_regression_alone() -> None:
    rows = _drifting_family()
    counts = {case_id: (bp, bn, cp, cn) for case_id, bp, bn, cp, cn, _ in rows}
    clusters = {case_id: cluster for case_id, *_, cluster in rows}
    shift = estimate(counts, clusters)
    # Alone, 18/20 → 8/20 is a clear drop; its four mates fell exactly as far, and the other
    # families moved too: the runs differ, so the drop is within what the runs' shifts explain.
    assert critical_test("f1-0", None)(18, 20, 8, 20) < 0.01
    assert critical_test("f1-0", shift)(18, 20, 8, 20) > 0.05
    assert shift.effective("f1-0", (18, 20, 8, 20)) != (18, 20, 8, 20)


def test_breaking_a_whole_family_does_not_hide_its_critical_case() -> None:
    """Attack: the pull request's system fails the critical case and every near-duplicate of
    it, so the family's move looks like a shift between runs. The spread of shifts is
    estimated from the *other* clusters, which held: no allowance, the drop blocks."""
    rows = _one_family_fell()
    counts = {case_id: (bp, bn, cp, cn) for case_id, bp, bn, cp, cn, _ in rows}
    clusters = {case_id: cluster for case_id, *_, cluster in rows}
    shift = estimate(counts, clusters)
    assert shift.effective("f1-0", (18, 20, 8, 20)) == (18, 20, 8, 20)
    assert critical_test("f1-0", shift)(18, 20, 8, 20) < 0.01


def test_a_critical_case_that_fell_alone_is_still_caught_in_a_clustered_suite() -> None:
    rows = [(c, bp, bn, cp, cn, k) for c, bp, bn, cp, cn, k in _drifting_family() if k != "f1"]
    rows.append(("f1-0", 19, 20, 6, 20, "f1"))
    rows += [(f"f1-{m}", 18, 20, 18, 20, "f1") for m in range(1, 5)]
    counts = {case_id: (bp, bn, cp, cn) for case_id, bp, bn, cp, cn, _ in rows}
    clusters = {case_id: cluster for case_id, *_, cluster in rows}
    shift = estimate(counts, clusters)
    assert critical_test("f1-0", shift)(19, 20, 6, 20) < 0.005


def test_clusters_that_do_not_drift_keep_the_exact_test() -> None:
    counts = {f"c{i}": (17, 20, 17, 20) for i in range(12)}
    clusters = {f"c{i}": f"k{i // 3}" for i in range(12)}
    shift = estimate(counts, clusters)
    assert shift.variance == 0
    assert shift.effective("c0", (17, 20, 9, 20)) == (17, 20, 9, 20)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), min_size=4, max_size=10),
    st.integers(2, 4),
)
def test_declaring_clusters_never_lowers_a_critical_cases_p_value(
    passes: list[tuple[int, int]], size: int
) -> None:
    pairs = [
        (
            sampled(f"c{i}", base, 12, critical=i == 0),
            sampled(f"c{i}", cand, 12, critical=i == 0),
        )
        for i, (base, cand) in enumerate(passes)
    ]
    clusters = {f"c{i}": f"k{i // size}" for i in range(len(passes))}
    plain = analyse(pairs, GateConfig()).tests["c0"].p_lower
    clustered = analyse(pairs, GateConfig(), clusters=clusters).tests["c0"].p_lower
    assert clustered >= plain - 1e-12
    assert case_test(pairs[0][0], pairs[0][1]).p_lower == pytest.approx(plain)


def test_the_report_names_the_spread_it_allowed_for() -> None:
    from gate.reporting.sections import suite_line

    rows = _drifting_family()
    pairs = [
        (
            sampled(case_id, bp, bn, critical=case_id == "f1-0"),
            sampled(case_id, cp, cn, critical=case_id == "f1-0"),
        )
        for case_id, bp, bn, cp, cn, _ in rows
    ]
    clusters = {case_id: cluster for case_id, *_, cluster in rows}
    analysis = analyse(pairs, GateConfig(), clusters=clusters)
    assert analysis.regressions == []
    assert analysis.run_shift > 0
    assert "Clusters moved between the two runs beyond sampling noise" in suite_line(analysis)
    plain = analyse(pairs, GateConfig())
    assert plain.regressions == ["f1-0"]
    assert "Clusters moved" not in suite_line(plain)


def test_with_too_few_clusters_to_measure_a_shift_the_report_says_so() -> None:
    """One cluster holding the whole suite has no other cluster to show how far clusters
    shift between runs: the allowance is nothing, and the reader is told why."""
    from gate.reporting.sections import suite_line

    pairs = [
        (sampled(f"c{i}", 19, 20, critical=i == 0), sampled(f"c{i}", 8 if i == 0 else 12, 20))
        for i in range(6)
    ]
    one = analyse(pairs, GateConfig(), clusters={f"c{i}": "all" for i in range(6)})
    assert one.regressions == ["c0"]  # nothing to allow for: the plain test decides
    assert "With 1 cluster(s)" in suite_line(one)
    assert "only a rerun on fresh samples tells apart" in suite_line(one)
    three = analyse(pairs, GateConfig(), clusters={f"c{i}": f"k{i % 3}" for i in range(6)})
    assert "cannot be measured" not in suite_line(three)
    assert "cannot be measured" not in suite_line(analyse(pairs, GateConfig()))


def test_the_allowance_compares_the_candidate_with_as_many_baseline_samples() -> None:
    """Against a 72-sample baseline the allowance reads the baseline's first n samples: the
    spread is estimated on equal counts, so it must be applied to equal counts."""
    from gate.deciding.noise.stats import boschloo_lower

    rows = _drifting_family()
    counts = {case_id: (bp, bn, cp, cn) for case_id, bp, bn, cp, cn, _ in rows}
    clusters = {case_id: cluster for case_id, *_, cluster in rows}
    shift = estimate(counts, clusters)
    base = [True] * 60 + [False] * 12  # 60/72, its first 20 all passing
    p = critical_test("f1-0", shift, base)(60, 72, 8, 20)
    assert p >= boschloo_lower(*shift.effective("f1-0", (20, 20, 8, 20))) - 1e-12
    assert p >= boschloo_lower(60, 72, 8, 20) - 1e-12
