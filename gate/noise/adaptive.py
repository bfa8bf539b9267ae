"""`samples: auto`: spend samples only on cases whose verdict is still open.

Every case starts with `adaptive.start` samples. After each round a case gets
`adaptive.step` more, up to `adaptive.max`, only while a significant drop from
its baseline rate is still within reach: the candidate's pessimistic rate (the
lower end of a one-sided 80% Wilson bound) carried on to `max` samples would
still be significant against the baseline. A case that cannot become a
regression at `max` samples, or that already is one, stops; confirmation
reruns (in live `check`) then settle what was flagged.

Stopping cases that look fine biases the candidate upward, which would hide a
small drop spread over many cases. So while the suite-level paired test is
open (the candidate looks worse, p between `alpha` and 0.2) and no critical
case has already settled the verdict, every case gets half a step more.

A case the baseline does not have is sampled to `max`: there is nothing to
stop early against. The defaults were chosen with bench/noise_simulation.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist

from gate.config import AdaptiveConfig, GateConfig
from gate.noise.stats import fisher_lower, sign_flip_lower, wilson
from gate.results import RunResults

PESSIMISTIC_Z = NormalDist().inv_cdf(0.80)
#: a suite-level p-value between alpha and this keeps every case sampling
SUITE_OPEN_P = 0.2


@dataclass(frozen=True, slots=True)
class Reference:
    """The baseline's record of one case."""

    passes: int
    samples: int
    critical: bool


def references(baseline: RunResults | None) -> dict[str, Reference]:
    if baseline is None:
        return {}
    return {
        case.id: Reference(case.passes, case.samples, case.critical)
        for case in baseline.cases
        if case.status != "error"
    }


def threshold(reference: Reference, rule: GateConfig, family_size: int) -> float:
    """The p-value a case must reach to count: its family's strictest Holm step."""
    if reference.critical:
        return rule.alpha_critical
    return rule.alpha / max(1, family_size)


def more_samples(
    reference: Reference | None,
    passes: int,
    samples: int,
    adaptive: AdaptiveConfig,
    alpha: float,
) -> int:
    """How many more samples this case should get now (0: its verdict is settled)."""
    if samples < adaptive.start:
        return adaptive.start - samples
    if samples >= adaptive.max:
        return 0
    step = min(adaptive.step, adaptive.max - samples)
    if reference is None:
        return step
    if fisher_lower(reference.passes, reference.samples, passes, samples) <= alpha:
        return 0  # already a significant drop; confirmation settles it
    pessimistic, _ = wilson(passes, samples, PESSIMISTIC_Z)
    projected = round(pessimistic * adaptive.max)
    reachable = fisher_lower(reference.passes, reference.samples, projected, adaptive.max)
    return step if reachable <= alpha else 0


def plan_round(
    counts: Mapping[str, tuple[int, int]],
    refs: Mapping[str, Reference],
    adaptive: AdaptiveConfig,
    rule: GateConfig,
) -> dict[str, int]:
    """Case id → samples to add this round, for every case still open."""
    non_critical = sum(1 for ref in refs.values() if not ref.critical) or 1
    wanted = {}
    for case_id, (passes, samples) in counts.items():
        reference = refs.get(case_id)
        alpha = threshold(reference, rule, non_critical) if reference else rule.alpha
        extra = more_samples(reference, passes, samples, adaptive, alpha)
        if extra:
            wanted[case_id] = extra
    if not blocked_already(counts, refs, rule) and suite_open(counts, refs, rule):
        # Cases stopped while looking fine would bias a broad drop out of sight:
        # while the suite-level verdict is open, every case samples on.
        for case_id, (_, samples) in counts.items():
            if samples < adaptive.max and case_id not in wanted:
                wanted[case_id] = min(max(1, adaptive.step // 2), adaptive.max - samples)
    return wanted


def blocked_already(
    counts: Mapping[str, tuple[int, int]], refs: Mapping[str, Reference], rule: GateConfig
) -> bool:
    """A critical case has already dropped significantly: the gate will block anyway."""
    return any(
        refs[i].critical
        and samples
        and fisher_lower(refs[i].passes, refs[i].samples, passes, samples) <= rule.alpha_critical
        for i, (passes, samples) in counts.items()
        if i in refs
    )


def suite_open(
    counts: Mapping[str, tuple[int, int]], refs: Mapping[str, Reference], rule: GateConfig
) -> bool:
    """A drop across the suite looks possible but is not yet significant."""
    differences = [
        Fraction(passes, samples) - Fraction(refs[i].passes, refs[i].samples)
        for i, (passes, samples) in counts.items()
        if i in refs and samples
    ]
    if not differences or sum(differences) >= 0:
        return False
    return rule.alpha < sign_flip_lower(differences) <= SUITE_OPEN_P


def replayed_rounds(
    outcomes: Mapping[str, Sequence[bool]],
    refs: Mapping[str, Reference],
    adaptive: AdaptiveConfig,
    rule: GateConfig,
) -> dict[str, int]:
    """How many samples the rounds draw for each case, given each sample's verdict in order.

    The gate's process runs the rounds again on the verdicts it judged itself: a run
    that stopped a case anywhere else (say, after its one passing sample) was not the
    run the rule describes.
    """
    taken = dict.fromkeys(outcomes, 0)
    wanted = dict.fromkeys(outcomes, adaptive.start)
    while wanted:
        for case_id, extra in wanted.items():
            taken[case_id] += extra
        counts = {
            case_id: (sum(verdicts[: taken[case_id]]), taken[case_id])
            for case_id, verdicts in outcomes.items()
        }
        wanted = plan_round(counts, refs, adaptive, rule)
    return taken
