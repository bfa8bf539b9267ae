"""The score rules' statistics against scipy and statsmodels (gate.deciding.scorestats)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from gate.deciding.scorestats import (
    clustered_interval,
    mean_lower_bound,
    mean_score_variance,
    pass_at_k,
    pass_hat_k,
    pass_hat_k_variance,
    sign_flip_sum_lower,
    smallest_p,
    welch_interval,
)

# Differences on a grid of 0.01: the test's own grid (1e-4) holds them exactly.
hundredths = st.integers(-100, 100).map(lambda n: n / 100)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-100, 100), min_size=2, max_size=11))
def test_sign_flip_is_scipys_exact_permutation_test(counts: list[int]) -> None:
    # scipy is given the differences in hundredths, as whole numbers: its sums of floats
    # break exact ties (0.01 + 0.12 - 0.13 is not 0.0 in floating point), which the sign-flip
    # test counts, and the p-value does not depend on the unit.
    values = [count / 100 for count in counts]
    data = np.array(counts)
    reference = stats.permutation_test(
        (data,), np.sum, permutation_type="samples", alternative="less", n_resamples=np.inf
    ).pvalue
    assert sign_flip_sum_lower(values) == pytest.approx(reference, rel=1e-9, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(hundredths, min_size=1, max_size=10))
def test_sign_flip_holds_its_level_exactly_with_ties_and_zeros(values: list[float]) -> None:
    """Under "no change" every sign assignment is equally likely: whatever the magnitudes
    (ties, zeros, few cases), the share of assignments the test calls significant at alpha
    is at most alpha, at every alpha the test can give."""
    magnitudes = [abs(v) for v in values]
    p_values = [
        sign_flip_sum_lower([s * m for s, m in zip(signs, magnitudes, strict=True)])
        for signs in itertools.product((1, -1), repeat=len(magnitudes))
    ]
    for alpha in sorted(set(p_values)):
        share = sum(p <= alpha + 1e-12 for p in p_values) / len(p_values)
        assert share <= alpha + 1e-9


def test_the_sign_flip_tests_the_mean_where_wilcoxon_tests_ranks() -> None:
    """Why not Wilcoxon's signed-rank test: it tests a shift of ranks, and the rule names the
    mean. Six cases falling 0.4 while fourteen rise 0.01 is a mean fall of 0.113 per case;
    the ranks of the fourteen small rises balance it, so Wilcoxon sees nothing."""
    values = [0.01] * 14 + [-0.4] * 6
    wilcoxon = stats.wilcoxon(values, alternative="less").pvalue
    ours = sign_flip_sum_lower(values)
    assert smallest_p(values) == 2**-20
    assert ours < 0.02 < 0.3 < wilcoxon
    assert sum(values) / len(values) == pytest.approx(-0.113)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(hundredths, min_size=2, max_size=12),
    st.integers(0, 11),
    st.integers(1, 50),
)
def test_lowering_one_difference_never_raises_p(values: list[float], which: int, by: int) -> None:
    index = which % len(values)
    lowered = list(values)
    lowered[index] = max(-1.0, lowered[index] - by / 100)
    assert sign_flip_sum_lower(lowered) <= sign_flip_sum_lower(values) + 1e-12


def test_large_suites_coarsen_the_grid_and_stay_near_the_normal_approximation() -> None:
    rng = np.random.default_rng(7)
    values = list(rng.normal(-0.01, 0.1, 3000))
    exact = sign_flip_sum_lower(values)
    normal = stats.norm.cdf(sum(values) / math.sqrt(sum(v * v for v in values)))
    assert exact == pytest.approx(normal, abs=0.01)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 1000).map(lambda n: n / 1000), min_size=2, max_size=15),
    st.lists(st.integers(0, 1000).map(lambda n: n / 1000), min_size=2, max_size=15),
)
@pytest.mark.filterwarnings("ignore:Precision loss")
def test_welch_interval_is_scipys(base: list[float], cand: list[float]) -> None:
    found = welch_interval(base, cand)
    assert found is not None
    if np.var(base) == 0 and np.var(cand) == 0:
        assert found.low == found.high == pytest.approx(np.mean(cand) - np.mean(base))
        return
    reference = stats.ttest_ind(cand, base, equal_var=False).confidence_interval(0.95)
    assert found.mean == pytest.approx(np.mean(cand) - np.mean(base), abs=1e-12)
    assert found.low == pytest.approx(reference.low, rel=1e-7, abs=1e-9)
    assert found.high == pytest.approx(reference.high, rel=1e-7, abs=1e-9)


def test_one_sample_has_no_interval() -> None:
    assert welch_interval([0.8], [0.7, 0.6]) is None
    assert welch_interval([0.8, 0.9], [0.7]) is None


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-1000, 1000).map(lambda n: n / 1000), min_size=2, max_size=20))
def test_interval_without_clusters_is_the_paired_t_interval(values: list[float]) -> None:
    differences = {f"c{i}": v for i, v in enumerate(values)}
    found, units = clustered_interval(differences, None)
    assert units == len(values)
    if np.var(values) == 0:
        assert found.low == found.high
        return
    reference = stats.ttest_1samp(values, 0.0).confidence_interval(0.95)
    assert (found.low, found.high) == pytest.approx((reference.low, reference.high), abs=1e-9)


def test_interval_over_clusters_is_statsmodels_cluster_robust_one() -> None:
    rng = np.random.default_rng(3)
    values = rng.normal(-0.02, 0.1, 18)
    groups = np.array([i % 5 for i in range(18)])
    differences = {f"c{i}": float(v) for i, v in enumerate(values)}
    clusters = {f"c{i}": f"g{groups[i]}" for i in range(18)}
    found, units = clustered_interval(differences, clusters)
    fitted = sm.OLS(values, np.ones((18, 1))).fit(
        cov_type="cluster", cov_kwds={"groups": groups}, use_t=True
    )
    low, high = fitted.conf_int(0.05)[0]
    assert units == 5
    assert (found.low, found.high) == pytest.approx((low, high), abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 9), st.data())
def test_pass_hat_k_and_pass_at_k_are_the_shares_of_k_subsets(samples: int, data) -> None:  # type: ignore[no-untyped-def]
    passes = data.draw(st.integers(0, samples))
    k = data.draw(st.integers(1, samples))
    verdicts = [True] * passes + [False] * (samples - passes)
    subsets = list(itertools.combinations(verdicts, k))
    assert pass_hat_k(passes, samples, k) == pytest.approx(
        sum(all(s) for s in subsets) / len(subsets)
    )
    assert pass_at_k(passes, samples, k) == pytest.approx(
        sum(any(s) for s in subsets) / len(subsets)
    )


def test_pass_hat_k_is_unbiased_for_p_to_the_k() -> None:
    """E[C(c,k)/C(n,k)] = p^k under c ~ Binomial(n, p), summed exactly with scipy's pmf."""
    for p, n, k in ((0.9, 5, 3), (0.6, 8, 4), (0.97, 10, 10)):
        expected = sum(
            stats.binom.pmf(c, n, p) * (pass_hat_k(c, n, k) or 0.0) for c in range(n + 1)
        )
        assert expected == pytest.approx(p**k, rel=1e-9)
        at_k = sum(stats.binom.pmf(c, n, p) * (pass_at_k(c, n, k) or 0.0) for c in range(n + 1))
        assert at_k == pytest.approx(1 - (1 - p) ** k, rel=1e-9)


def test_fewer_samples_than_k_estimate_nothing() -> None:
    assert pass_hat_k(2, 2, 3) is None
    assert pass_at_k(2, 2, 3) is None


def test_mean_lower_bound_is_the_normal_one() -> None:
    values, variances = [0.8, 0.9, 0.7], [0.01, 0.02, 0.005]
    expected = np.mean(values) - stats.norm.ppf(0.98) * math.sqrt(sum(variances)) / 3
    assert mean_lower_bound(values, variances, 0.02) == pytest.approx(expected)
    assert mean_lower_bound([0.01, 0.0], [0.5, 0.5], 0.02) == 0.0  # scores are never below 0


# --- the floors' bound holds its level at the boundary ---------------------------------
# An independent simulation found both floors shipping above alpha at the floor itself:
# the samples' own variance is smallest exactly when a case's few samples missed its rare
# low score, which is when its mean reads high. These replay that finding, seeded.


def _ship_rate_at_the_floor(draw: Any, bound: Any, reps: int = 1500) -> float:
    rng = np.random.default_rng(7)
    return sum(bound(*draw(rng)) for _ in range(reps)) / reps


def _skewed_scores(rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """20 cases, 3 samples each: scores near 1 with an 8% chance of a 0 (an LLM that now and
    then answers nothing useful); the truth is each case's mean."""
    means = rng.beta(4, 1, size=20)
    zero = rng.random((20, 3)) < 0.08
    scores = np.where(zero, 0.0, np.clip(rng.normal(means[:, None], 0.05, (20, 3)), 0, 1))
    truth = float(np.mean((1 - 0.08) * np.clip(means, 0, 1)))  # close enough: clip is rare
    return scores, truth


def test_the_mean_floor_ships_at_most_alpha_where_the_truth_is_the_floor() -> None:
    def ships(scores: np.ndarray, truth: float) -> bool:
        means = [float(row.mean()) for row in scores]
        variances = [mean_score_variance([float(v) for v in row]) for row in scores]
        return mean_lower_bound(means, variances, 0.02) >= truth

    def ships_on_own_spread(scores: np.ndarray, truth: float) -> bool:
        means = [float(row.mean()) for row in scores]
        variances = [float(row.var(ddof=1)) / len(row) for row in scores]
        return mean_lower_bound(means, variances, 0.02) >= truth

    rate = _ship_rate_at_the_floor(_skewed_scores, ships)
    assert stats.binomtest(round(rate * 1500), 1500, 0.02, "greater").pvalue > 0.05
    # The control: the samples' own spread alone overshoots on the same draws.
    assert _ship_rate_at_the_floor(_skewed_scores, ships_on_own_spread) > 0.035


def test_the_pass_hat_k_floor_ships_at_most_alpha_where_the_truth_is_the_floor() -> None:
    k, samples = 3, 3

    def draw(rng: np.random.Generator) -> tuple[list[int], float]:
        rates = rng.beta(6, 1, size=50)
        passes = [int(rng.binomial(samples, rate)) for rate in rates]
        return passes, float(np.mean(rates**k))

    def ships(passes: list[int], truth: float) -> bool:
        values = [pass_hat_k(c, samples, k) or 0.0 for c in passes]
        variances = [pass_hat_k_variance(c, samples, k) for c in passes]
        return mean_lower_bound(values, variances, 0.02) >= truth

    rate = _ship_rate_at_the_floor(draw, ships)
    assert stats.binomtest(round(rate * 1500), 1500, 0.02, "greater").pvalue > 0.05


def test_a_case_whose_samples_all_agree_still_carries_spread() -> None:
    assert mean_score_variance([1.0, 1.0, 1.0]) == pytest.approx((4 / 5) * (1 / 5) / 3)
    assert pass_hat_k_variance(3, 3, 3) == pytest.approx((4 / 5) ** 3 * (1 - (4 / 5) ** 3))
    assert mean_score_variance([0.0, 1.0]) == pytest.approx(0.5 / 2)  # the samples' own
