"""gate/deciding/noise/level.py and the sequential p-value: the gate's one stated level."""

from __future__ import annotations

import itertools

import pytest
from scipy import stats as scipy_stats

from gate.deciding.noise import level
from gate.deciding.noise.analysis import sequential_p
from gate.deciding.noise.suitetest import sign_flip_by_cluster
from gate.stats import sign_flip_lower
from gate.suite.config import AdaptiveConfig, GateConfig


def test_the_split_adds_up_to_alpha_over_the_active_rules() -> None:
    default = level.shares(GateConfig(), has_critical=True)
    assert (default.critical, default.suite, default.pairwise) == pytest.approx(
        (0.02 * 2 / 3, 0.02 / 3, 0)
    )
    everything = level.shares(GateConfig(max_pairwise_loss_rate=0.2), has_critical=True)
    assert everything.total == pytest.approx(0.02)
    assert everything.critical == pytest.approx(0.01)
    # A suite without critical cases gives their share to the others.
    assert level.shares(GateConfig(), has_critical=False).suite == pytest.approx(0.02)
    off = level.shares(GateConfig(block_on_pass_rate_drop=False), has_critical=True)
    assert off.critical == pytest.approx(0.02)


def test_an_explicit_alpha_critical_is_its_own_level() -> None:
    shares = level.shares(GateConfig(alpha_critical=0.05), has_critical=True)
    assert (shares.critical, shares.suite) == pytest.approx((0.05, 0.02))


def test_looks_and_their_spend() -> None:
    looks = level.looks(AdaptiveConfig())
    assert looks == [4, 8, 12, 16, 20, 24]
    assert level.looks(AdaptiveConfig(start=4, step=8, max=16)) == [4, 12, 16]
    spends = [level.look_weight(i, len(looks)) for i in range(len(looks))]
    assert sum(spends) == pytest.approx(1.0)
    assert spends[-1] == pytest.approx(0.95)
    assert level.look_of(3, looks) == -1 and level.look_of(12, looks) == 2


@pytest.mark.parametrize("rate", [0.5, 0.8, 0.95])
@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_the_sequential_p_value_holds_its_level_whatever_the_stopping(
    rate: float, alpha: float
) -> None:
    # Under "no change" (both sides draw at `rate`), the chance that any look's p-value
    # reaches its spend is at most alpha: summed exactly over every outcome.
    looks, base_samples = [2, 4, 6], 6
    reject = 0.0
    for base in range(base_samples + 1):
        base_chance = scipy_stats.binom.pmf(base, base_samples, rate)
        for outcomes in itertools.product([True, False], repeat=looks[-1]):
            chance = rate ** sum(outcomes) * (1 - rate) ** (len(outcomes) - sum(outcomes))
            if sequential_p(base, base_samples, list(outcomes), looks) <= alpha:
                reject += base_chance * chance
    assert reject <= alpha


def test_a_fixed_count_is_plain_fisher() -> None:
    outcomes = [True] * 10 + [False] * 10
    fisher = scipy_stats.fisher_exact([[19, 1], [10, 10]], alternative="greater").pvalue
    assert sequential_p(19, 20, outcomes, None) == pytest.approx(fisher)
    # Inside an auto run, a count that is not a look (a case's own `samples`) too.
    assert sequential_p(19, 20, outcomes[:18], [4, 8, 12, 16, 20]) == pytest.approx(
        scipy_stats.fisher_exact([[19, 1], [10, 8]], alternative="greater").pvalue
    )


def test_clusters_are_flipped_together() -> None:
    from fractions import Fraction

    differences = {f"c{i}": Fraction(-1, 10) for i in range(6)}
    alone = sign_flip_by_cluster(differences, None, 0.01)
    assert alone.p == sign_flip_lower(list(differences.values())) == 1 / 64
    paired = sign_flip_by_cluster(differences, {"c0": "a", "c1": "a", "c2": "b", "c3": "b"}, 0.01)
    assert paired.clusters == 4
    assert paired.p == sign_flip_lower([Fraction(-2, 10)] * 2 + [Fraction(-1, 10)] * 2) == 1 / 16
    assert paired.design_effect == pytest.approx((2 * 0.04 + 2 * 0.01) / (6 * 0.01))
