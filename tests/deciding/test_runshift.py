"""gate/deciding/noise/runshift.py, and the allowance for the clusters beside a case
(gate/deciding/noise/beside.py, tested alone in test_beside.py) as the analysis uses it:
how far clusters moved between the two runs; reported, and able to make a critical drop
inconclusive, never to let it ship."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats
from statsmodels.stats.meta_analysis import combine_effects

from gate.deciding.compare import compare
from gate.deciding.noise.analysis import analyse
from gate.deciding.noise.beside import spread_beside
from gate.deciding.noise.runshift import (
    HETEROGENEITY_ALPHA,
    between_variance,
    generalised_q,
    logit_change,
    q_profile,
)
from gate.deciding.rules import decide
from gate.reporting.sections import suite_line
from gate.results import CaseResult
from gate.suite.config import GateConfig
from tests.factories import run, sampled

changes = st.lists(
    st.tuples(st.floats(-4, 4), st.floats(0.05, 3)), min_size=3, max_size=12
)  # (log-odds change, its sampling variance)


def _generalised_q(effects: np.ndarray, variances: np.ndarray, tau2: float) -> float:
    weights = 1 / (variances + tau2)
    mean = (weights * effects).sum() / weights.sum()
    return float((weights * (effects - mean) ** 2).sum())


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # statsmodels' I² at τ² 0
@settings(max_examples=80, deadline=None)
@given(changes)
# statsmodels stops iterating once Q is within 1e-5 of k - 1: here 1e-4 off in τ²
@example([(0.0, 0.615234375), (1.5, 1.9453125), (2.091796875, 1.9921875)])
def test_q_profile_at_k_minus_one_is_statsmodels_paule_mandel(pairs: list) -> None:  # type: ignore[type-arg]
    effects = np.array([change for change, _ in pairs])
    variances = np.array([variance for _, variance in pairs])
    reference = combine_effects(effects, variances, method_re="pm").tau2
    ours = q_profile(pairs, len(pairs) - 1)
    assert ours == pytest.approx(reference, abs=1e-6, rel=1e-3)
    if ours > 0:  # it solves Q(τ²) = k - 1 at least as closely as statsmodels' iteration
        target = len(pairs) - 1
        ours_off = abs(_generalised_q(effects, variances, ours) - target)
        assert ours_off <= abs(_generalised_q(effects, variances, reference) - target) + 1e-9


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
@settings(max_examples=80, deadline=None)
@given(changes)
def test_the_spread_is_reported_only_when_cochrans_q_rejects_no_shift(pairs: list) -> None:  # type: ignore[type-arg]
    """Cochran's Q against χ²(k − 1) (statsmodels' Q is the same statistic); when it
    rejects, the figure is the Paule–Mandel τ²."""
    effects = np.array([change for change, _ in pairs])
    variances = np.array([variance for _, variance in pairs])
    q = combine_effects(effects, variances, method_re="pm").q
    assert generalised_q(pairs, 0.0) == pytest.approx(q, rel=1e-9, abs=1e-9)
    rejected = scipy_stats.chi2.sf(q, len(pairs) - 1) < HETEROGENEITY_ALPHA
    spread = between_variance(pairs)
    if rejected:
        assert spread == pytest.approx(q_profile(pairs, len(pairs) - 1))
    else:
        assert spread == 0


def test_clusters_that_do_not_move_are_reported_as_still_about_as_often_as_the_level() -> None:
    rng = random.Random(3)
    trials = 2000
    false_reports = 0
    for _ in range(trials):
        pairs = []
        for _ in range(8):
            variance = rng.uniform(0.1, 1.0)
            pairs.append((rng.gauss(0, variance**0.5), variance))
        false_reports += between_variance(pairs) > 0
    assert false_reports / trials <= HETEROGENEITY_ALPHA + 0.015


def test_log_odds_change_is_finite_at_the_boundary() -> None:
    change, variance = logit_change((20, 20, 20, 20))
    assert change == 0
    assert variance == pytest.approx(2 * (1 / 20.5 + 1 / 0.5))


Row = tuple[str, int, int, int, int, str]


def _drifting_families() -> list[Row]:
    """Eight families of five that each moved together between the two runs, up or down,
    as far as 18/20 → 8/20 (family f1): shifts of the runs, no change of the system."""
    moved = [12, 8, 20, 14, 19, 16, 20, 17]
    return [
        (f"f{family}-{member}", 18, 20, moved[family], 20, f"f{family}")
        for family in range(8)
        for member in range(5)
    ]


def _pairs(rows: list[Row], critical: str) -> list[tuple[CaseResult, CaseResult]]:
    return [
        (sampled(c, bp, bn, critical=c == critical), sampled(c, cp, cn, critical=c == critical))
        for c, bp, bn, cp, cn, _ in rows
    ]


def _clusters(rows: list[Row]) -> dict[str, str]:
    return {case_id: cluster for case_id, *_, cluster in rows}


def test_a_drop_no_further_than_the_other_clusters_moved_is_inconclusive() -> None:
    """Every family moved: the report says so, and the critical drop, which would block
    without clusters, is one the gate cannot tell from such a shift. It says so."""
    rows = _drifting_families()
    clustered = analyse(_pairs(rows, "f1-0"), GateConfig(), clusters=_clusters(rows))
    assert clustered.run_shift > 0
    assert "Clusters moved between the two runs beyond sampling noise" in suite_line(clustered)
    assert clustered.regressions == []
    assert clustered.shift_explained == ["f1-0"]
    assert clustered.spread_beside["f1-0"].shift_freedom == 7  # the 7 families beside f1
    plain = analyse(_pairs(rows, "f1-0"), GateConfig())
    assert plain.regressions == ["f1-0"]
    assert plain.run_shift == 0
    assert "Clusters moved" not in suite_line(plain)


def test_such_a_drop_never_ships_whatever_on_inconclusive_says() -> None:
    rows = _drifting_families()
    pairs = _pairs(rows, "f1-0")
    baseline, candidate = (
        run(cases, clusters={"by": "id_prefix"})
        for cases in ([old for old, _ in pairs], [new for _, new in pairs])
    )
    comparison = compare(baseline, candidate, GateConfig())
    assert comparison.noise is not None and comparison.noise.shift_explained == ["f1-0"]
    for rule in (GateConfig(), GateConfig(on_inconclusive="ship")):
        held = decide(comparison, rule)
        assert held.decision == "inconclusive"
        assert "no further than the suite's other clusters moved" in held.notes[0]
        assert "f1-0 18/20 → 8/20, τ² = " in held.notes[0]
        assert "It does not ship (exit 3)" in held.notes[0]


def test_a_family_that_fell_alone_still_blocks() -> None:
    """The case's own cluster is left out of its allowance: a regression cannot widen it."""
    rows = [
        (c, bp, bn, 4 if k == "f1" else bp, cn, k) for c, bp, bn, _, cn, k in _drifting_families()
    ]
    clustered = analyse(_pairs(rows, "f1-0"), GateConfig(), clusters=_clusters(rows))
    assert "f1-0" in clustered.regressions
    assert clustered.shift_explained == []
    assert "f1-0" not in clustered.spread_beside  # no cluster beside it moved


@settings(max_examples=40, deadline=None)
@given(
    fell=st.integers(0, 8),
    moved=st.lists(st.integers(0, 20), min_size=7, max_size=7),
)
def test_what_the_pull_request_does_to_other_families_never_lets_a_critical_drop_ship(
    fell: int, moved: list[int]
) -> None:
    """The attack that beat the first allowance for shifts between runs: break a critical
    case and its family, then move (even improve) other families so that the clusters look
    as if they drift. What it can win is "inconclusive" (exit 3) instead of a block; a drop
    that blocks without clusters is always one or the other, and the allowance never
    makes a block of a case that would not block without it."""
    rows = [
        (c, bp, bn, fell if k == "f1" else moved[int(k[1:]) - (k > "f1")], cn, k)
        for c, bp, bn, _, cn, k in _drifting_families()
    ]
    pairs = _pairs(rows, "f1-0")
    clustered = analyse(pairs, GateConfig(), clusters=_clusters(rows))
    plain = analyse(pairs, GateConfig())
    test = clustered.tests["f1-0"]
    unshifted = test.p_unshifted if test.p_unshifted is not None else test.p_lower
    assert unshifted == plain.tests["f1-0"].p_lower
    held = "f1-0" in clustered.regressions or "f1-0" in clustered.shift_explained
    assert held == ("f1-0" in plain.regressions)
    if fell <= 6:
        assert held  # 18/20 → 6/20 or worse never ships


def test_two_runs_that_show_no_shift_beside_a_case_give_it_no_allowance() -> None:
    rows = [
        (c, bp, bn, bp + (1 if i % 2 else -1) if k != "f1" else 6, cn, k)
        for i, (c, bp, bn, _, cn, k) in enumerate(_drifting_families())
    ]
    beside = spread_beside(_pairs(rows, "f1-0"), _clusters(rows), "f1-0")
    assert beside is not None and beside.variance == 0
    clustered = analyse(_pairs(rows, "f1-0"), GateConfig(), clusters=_clusters(rows))
    assert "f1-0" in clustered.regressions
