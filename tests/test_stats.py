"""gate/deciding/noise/stats.py held to scipy, the reference."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from gate.stats import (
    binomial_lower,
    binomial_upper,
    boschloo_lower,
    clopper_pearson_lower,
    fisher_lower,
    holm,
    mean_change,
    samples_to_decide,
    sign_flip_lower,
    t_cdf,
    t_quantile,
    wilson,
)


@given(st.integers(1, 200).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_matches_scipy(counts: tuple[int, int]) -> None:
    passes, samples = counts
    reference = scipy_stats.binomtest(passes, samples).proportion_ci(method="wilson")
    low, high = wilson(passes, samples)
    assert low == pytest.approx(reference.low, abs=1e-9)
    assert high == pytest.approx(reference.high, abs=1e-9)
    assert low <= passes / samples <= high


tables = st.tuples(st.integers(1, 40), st.integers(1, 40)).flatmap(
    lambda ns: st.tuples(
        st.integers(0, ns[0]), st.just(ns[0]), st.integers(0, ns[1]), st.just(ns[1])
    )
)


@settings(max_examples=300)
@given(tables)
def test_fisher_matches_scipy(table: tuple[int, int, int, int]) -> None:
    k1, n1, k2, n2 = table
    # scipy's table rows are the groups; 'greater' asks whether the baseline's odds
    # of passing exceed the candidate's, i.e. the candidate is lower.
    _, reference = scipy_stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]], alternative="greater")
    assert fisher_lower(k1, n1, k2, n2) == pytest.approx(reference, rel=1e-9, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.tuples(st.integers(1, 30), st.integers(1, 30)).flatmap(
    lambda ns: st.tuples(
        st.integers(0, ns[0]), st.just(ns[0]), st.integers(0, ns[1]), st.just(ns[1])
    )
))  # fmt: skip
def test_boschloo_is_scipys_and_never_above_fisher(table: tuple[int, int, int, int]) -> None:
    k1, n1, k2, n2 = table
    p = boschloo_lower(k1, n1, k2, n2)
    assert 0 <= p <= fisher_lower(k1, n1, k2, n2) + 1e-12
    if k2 * n1 < k1 * n2:  # the candidate is lower: scipy's test, table in its layout
        reference = scipy_stats.boschloo_exact(
            [[k1, k2], [n1 - k1, n2 - k2]], alternative="greater"
        ).pvalue
        assert p == pytest.approx(min(reference, fisher_lower(k1, n1, k2, n2)), rel=1e-9)


def _rejection_chance(test, alpha: float, n1: int, n2: int, rate: float) -> float:  # type: ignore[no-untyped-def]
    """The exact chance that `test` rejects at `alpha` when both sides pass at `rate`."""
    return sum(
        scipy_stats.binom.pmf(k1, n1, rate) * scipy_stats.binom.pmf(k2, n2, rate)
        for k1 in range(n1 + 1)
        for k2 in range(n2 + 1)
        if test(k1, n1, k2, n2) <= alpha
    )


@pytest.mark.parametrize(("n1", "n2", "alpha"), [(20, 20, 0.0133), (36, 12, 0.0133), (20, 8, 0.01)])
def test_boschloo_holds_its_level_and_beats_fisher(n1: int, n2: int, alpha: float) -> None:
    """Exact at every common rate (within the maximisation's grid), and more powerful."""
    rates = [i / 40 for i in range(1, 40)]
    worst = max(_rejection_chance(boschloo_lower, alpha, n1, n2, r) for r in rates)
    assert worst <= alpha * 1.001
    power = sum(
        scipy_stats.binom.pmf(k1, n1, 0.95) * scipy_stats.binom.pmf(k2, n2, 0.5)
        for k1 in range(n1 + 1)
        for k2 in range(n2 + 1)
        if boschloo_lower(k1, n1, k2, n2) <= alpha
    )
    fisher_power = sum(
        scipy_stats.binom.pmf(k1, n1, 0.95) * scipy_stats.binom.pmf(k2, n2, 0.5)
        for k1 in range(n1 + 1)
        for k2 in range(n2 + 1)
        if fisher_lower(k1, n1, k2, n2) <= alpha
    )
    assert power > fisher_power


def test_no_exact_test_catches_a_critical_collapse_90_percent_at_20_a_side() -> None:
    """The README's ceiling: at the critical share (0.0133) with 20 samples a side, a 0.95 ->
    0.5 drop is caught 89.4% of the time by Boschloo's test, and Barnard's on the pooled or
    the unpooled z statistic gives no more; hence baselines of three times a run's samples."""
    share = 0.02 * 2 / 3

    def chance(k1: int, k2: int) -> float:
        return float(scipy_stats.binom.pmf(k1, 20, 0.95) * scipy_stats.binom.pmf(k2, 20, 0.5))

    # the tables a 0.95 -> 0.5 drop lands in all but 1e-3 of the time
    likely = [(k1, k2) for k1 in range(14, 21) for k2 in range(2, 18)]
    assert sum(chance(k1, k2) for k1, k2 in likely) > 0.999
    boschloo = sum(chance(k1, k2) for k1, k2 in likely if boschloo_lower(k1, 20, k2, 20) <= share)
    assert boschloo == pytest.approx(0.894, abs=1e-3)
    for pooled in (True, False):
        barnard = sum(
            chance(k1, k2)
            for k1, k2 in likely
            if scipy_stats.barnard_exact(
                [[k1, k2], [20 - k1, 20 - k2]], alternative="greater", pooled=pooled
            ).pvalue
            <= share
        )
        assert barnard <= boschloo + 1e-3


def test_fisher_known_values() -> None:
    assert fisher_lower(19, 20, 10, 20) == pytest.approx(0.0016, abs=1e-4)
    assert fisher_lower(17, 20, 15, 20) > 0.3  # within noise
    assert fisher_lower(5, 5, 5, 5) == 1.0


@given(st.lists(st.floats(0, 1), min_size=1, max_size=30), st.sampled_from([0.01, 0.02, 0.05]))
def test_holm_matches_its_definition(p_values: list[float], alpha: float) -> None:
    rejected = holm(p_values, alpha)
    ordered = sorted(p_values)
    expected_count = 0
    for rank, p in enumerate(ordered):
        if p > alpha / (len(ordered) - rank):
            break
        expected_count += 1
    assert sum(rejected) == expected_count
    # Holm rejects the smallest p-values, and never more than Bonferroni would miss.
    if expected_count:
        assert (
            max(p for p, r in zip(p_values, rejected, strict=True) if r)
            <= ordered[expected_count - 1]
        )
    assert all(r for p, r in zip(p_values, rejected, strict=True) if p <= alpha / len(p_values))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 10), st.integers(0, 10)).map(lambda t: Fraction(t[1] - t[0], 10)),
        min_size=1,
        max_size=12,
    )
)
def test_exact_sign_flip_matches_enumeration(differences: list[Fraction]) -> None:
    nonzero = [d for d in differences if d]
    observed = sum(nonzero)
    count = 0
    for mask in range(2 ** len(nonzero)):
        flipped = sum(abs(d) if mask >> i & 1 else -abs(d) for i, d in enumerate(nonzero))
        count += flipped <= observed
    expected = count / 2 ** len(nonzero) if nonzero else 1.0
    assert sign_flip_lower(differences) == pytest.approx(expected)


def test_sign_flip_matches_scipy_permutation_test() -> None:
    rng = random.Random(4)
    differences = [Fraction(rng.randint(-5, 3), 20) for _ in range(14)]
    reference = scipy_stats.permutation_test(
        ([float(d) for d in differences],),
        lambda x: sum(x),
        permutation_type="samples",
        alternative="less",
        n_resamples=math.inf,
    ).pvalue
    assert sign_flip_lower(differences) == pytest.approx(reference)


@pytest.mark.parametrize("freedom", [1, 2, 3, 5, 10, 29, 100])
def test_t_quantile_matches_scipy(freedom: int) -> None:
    assert t_quantile(0.975, freedom) == pytest.approx(scipy_stats.t.ppf(0.975, freedom), abs=1e-8)


@given(st.floats(-50, 50), st.integers(1, 60))
def test_t_cdf_matches_scipy(t: float, freedom: int) -> None:
    assert t_cdf(t, freedom) == pytest.approx(scipy_stats.t.cdf(t, freedom), abs=1e-9)


def test_mean_change_interval_matches_scipy() -> None:
    differences = [-0.1, 0.05, 0.0, -0.2, 0.1, -0.05, 0.0, -0.15]
    change = mean_change(differences)
    reference = scipy_stats.ttest_1samp(differences, 0).confidence_interval(0.95)
    assert (change.low, change.high) == pytest.approx((reference.low, reference.high), abs=1e-9)


def test_samples_to_decide() -> None:
    # Mean -1 point, interval +-6: ruling out a 3-point drop needs (6/2)^2 = 9 times the samples.
    change = mean_change([-0.01 + 0.06 * s for s in (-1, 1)] * 20)
    needed = samples_to_decide(change, 0.03, 20)
    assert needed is not None and needed > 20
    assert samples_to_decide(mean_change([-0.1] * 5 + [-0.11] * 5), 0.03, 20) is None


@settings(max_examples=200)
@given(
    st.integers(1, 300).flatmap(lambda n: st.tuples(st.integers(0, n + 1), st.just(n))),
    st.floats(0.001, 0.999),
)
def test_binomial_tails_match_scipy(counts: tuple[int, int], rate: float) -> None:
    successes, trials = counts
    upper = scipy_stats.binom.sf(successes - 1, trials, rate)
    assert binomial_upper(successes, trials, rate) == pytest.approx(upper, rel=1e-9, abs=1e-15)
    if successes <= trials:
        lower = scipy_stats.binom.cdf(successes, trials, rate)
        assert binomial_lower(successes, trials, rate) == pytest.approx(lower, rel=1e-9, abs=1e-15)


@settings(max_examples=200)
@given(
    st.integers(1, 400).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.sampled_from([0.005, 0.01, 0.02, 0.05, 0.2]),
)
def test_clopper_pearson_matches_scipy(counts: tuple[int, int], alpha: float) -> None:
    successes, trials = counts
    # The one-sided (1 - alpha) bound is the low end of scipy's two-sided 1 - 2 alpha interval.
    reference = scipy_stats.binomtest(successes, trials).proportion_ci(1 - 2 * alpha, "exact")
    low = clopper_pearson_lower(successes, trials, alpha)
    assert low == pytest.approx(reference.low, abs=1e-9)
    assert low <= reference.low + 1e-12  # errs low, never high


@pytest.mark.parametrize("rate", [0.3, 0.7, 0.9, 0.97])
def test_clopper_pearson_covers_at_every_rate(rate: float) -> None:
    # Exact coverage: P(bound > true rate) <= alpha, summed over every outcome.
    trials, alpha = 40, 0.02
    miss = sum(
        scipy_stats.binom.pmf(k, trials, rate)
        for k in range(trials + 1)
        if clopper_pearson_lower(k, trials, alpha) > rate
    )
    assert miss <= alpha
