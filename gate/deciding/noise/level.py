"""One stated level per gate: how `alpha` is shared among the rules that test.

Under noise an unchanged system can be blocked by chance through four rules:
a critical case's drop, the suite's pass-rate drop, the pairwise loss rate and a
mean score's drop (`max_mean_score_drop`, one Holm family over its checks).
The gate's `alpha` (0.02) bounds the chance that *any* of them blocks an
unchanged system, by Bonferroni's inequality over a fixed split: each active
rule gets a share in proportion to its weight (critical cases 2, the suite 1,
the pairwise rule 1, the score rule 1). Which rules are active is read from the configuration and
the suite (a suite without critical cases gives their share to the others),
never from the outcomes, so the split is fixed before any sample is drawn.

`alpha_critical`, when set, tests the critical cases at that level instead and
leaves the whole of `alpha` to the other rules: the gate's level is then the sum.

Within the critical family Holm's step-down (Holm 1979) holds the share however
many critical cases there are. Under `samples: auto` each rule is tested again at
every look; a Haybittle–Peto-type spend (Haybittle 1971, Peto et al. 1976) gives
every interim look 1/(J-1) of 5% of the rule's share and the final look the other
95%, and Bonferroni's inequality over the looks keeps the total at the share,
however the stopping was decided.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.suite.config import AdaptiveConfig, GateConfig

#: the weights of the split, in the order critical, suite, pairwise, scores
WEIGHTS = {"critical": 2.0, "suite": 1.0, "pairwise": 1.0, "scores": 1.0}
#: the share of a rule's alpha that all interim looks together may spend
INTERIM_SPEND = 0.05


@dataclass(frozen=True, slots=True)
class Shares:
    """The alpha each rule is tested at (0 when the rule is not active)."""

    critical: float
    suite: float
    pairwise: float
    #: `max_mean_score_drop`, shared by Holm among its checks (gate.deciding.scorerules)
    scores: float = 0.0

    @property
    def total(self) -> float:
        return self.critical + self.suite + self.pairwise + self.scores


def shares(rule: GateConfig, *, has_critical: bool) -> Shares:
    """The split of `rule.alpha` over the rules active for this suite and rule."""
    active = {
        "critical": has_critical and rule.block_on_critical_regression,
        "suite": rule.block_on_pass_rate_drop,
        "pairwise": rule.max_pairwise_loss_rate is not None,
        "scores": rule.max_mean_score_drop is not None,
    }
    explicit = rule.alpha_critical
    if explicit is not None:
        active["critical"] = False  # tested at its own level, outside the split
    weight = sum(WEIGHTS[name] for name, on in active.items() if on)
    part = {
        name: rule.alpha * WEIGHTS[name] / weight if on and weight else 0.0
        for name, on in active.items()
    }
    critical = explicit if explicit is not None and has_critical else part["critical"]
    return Shares(critical, part["suite"], part["pairwise"], part["scores"])


def looks(adaptive: AdaptiveConfig) -> list[int]:
    """The sample counts at which `samples: auto` looks: start, start + step, …, max."""
    levels = []
    level = min(adaptive.start, adaptive.max)
    while level < adaptive.max:
        levels.append(level)
        level += adaptive.step
    levels.append(adaptive.max)
    return levels


def look_weight(index: int, count: int) -> float:
    """The share of a rule's alpha spent at look `index` (0-based) of `count`."""
    if count <= 1:
        return 1.0
    if index >= count - 1:
        return 1.0 - INTERIM_SPEND
    return INTERIM_SPEND / (count - 1)


def look_of(samples: int, levels: list[int]) -> int:
    """The index of the last look at or below `samples` (-1: before the first)."""
    return sum(1 for level in levels if level <= samples) - 1
