"""`samples: auto`: spend samples only on cases whose verdict is still open.

Every case starts with `adaptive.start` samples and moves from look to look
(`start`, `start + step`, …, `max`). A design in which stopping never raises
the chance of blocking an unchanged system (gate.deciding.noise.level):

- Stopping a case because it looks fine (futility) can only remove rejections,
  so it is always allowed: a critical case stops once its pessimistic rate (the
  lower end of a one-sided 80% Wilson bound) carried on to `max` samples could
  no longer be significant at its final look.
- Stopping because a case is clearly broken happens only within the spend of
  its look: the case's p-value is the smallest over the looks it reached of its
  Fisher p-value over the look's share (gate.deciding.noise.analysis.sequential_p).
- The suite's pass-rate test reads every case's first m samples, m the suite's
  look. While it is open (the candidate looks worse, p between the look's spend
  and 0.2) and no critical case has settled the verdict, every case moves to the
  next look together, so the next test again reads equal prefixes.

Non-critical cases never block on their own; they sample on only while a drop
significant in their Holm family (for the report) is still within reach. A case
the baseline lacks is sampled to `max`: there is nothing to stop early against.
A baseline is estimated, not tested: `Config.estimate_samples` is what each case gets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist

from gate.deciding.noise import level
from gate.deciding.noise.analysis import sequential_p
from gate.deciding.noise.clusters import clusters_of
from gate.deciding.noise.suitetest import matched_difference, sign_flip_by_cluster, verdicts
from gate.results import RunResults
from gate.stats import fisher_lower, wilson
from gate.suite.config import BASELINE_FACTOR, AdaptiveConfig, GateConfig
from gate.suite.defaults import MAX_SAMPLES

PESSIMISTIC_Z = NormalDist().inv_cdf(0.80)
#: a suite-level p-value between the look's spend and this keeps every case sampling
SUITE_OPEN_P = 0.2


@dataclass(frozen=True, slots=True)
class Reference:
    """The baseline's record of one case."""

    passes: int
    samples: int
    critical: bool
    #: the baseline's verdicts in sample order, when its results hold them
    outcomes: tuple[bool, ...] | None = None
    cluster: str | None = None


def references(baseline: RunResults | None) -> dict[str, Reference]:
    if baseline is None:
        return {}
    clustered = clusters_of(baseline.cases, baseline.config)
    found = {}
    for case in baseline.cases:
        if case.status == "error":
            continue
        outcomes = verdicts(case)
        found[case.id] = Reference(
            case.passes,
            case.samples,
            case.critical,
            tuple(outcomes) if outcomes is not None else None,
            clustered.get(case.id),
        )
    return found


def baseline_samples(adaptive: AdaptiveConfig) -> int:
    """Samples per case of a baseline written under `samples: auto`: a fixed number.

    A baseline is an estimate that every pull request is compared with; stopping its
    cases early because they look good against the previous baseline would bias it
    upward. It is written once per merge and read by every check, so its precision is
    where extra samples pay most: three times the candidate's cap.
    """
    return min(BASELINE_FACTOR * adaptive.max, MAX_SAMPLES)


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


def critical_open(
    reference: Reference,
    outcomes: Sequence[bool],
    looks: list[int],
    alpha: float,
    family: int,
) -> bool:
    """A critical case samples on: not settled as a drop, and a drop still within reach."""
    if sequential_p(reference.passes, reference.samples, outcomes, looks) <= alpha / family:
        return False  # Holm rejects it whatever the other critical cases show
    pessimistic, _ = wilson(sum(outcomes), len(outcomes), PESSIMISTIC_Z)
    top = looks[-1]
    reachable = fisher_lower(reference.passes, reference.samples, round(pessimistic * top), top)
    return reachable <= alpha * level.look_weight(len(looks) - 1, len(looks))


def plan_round(
    outcomes: Mapping[str, Sequence[bool]],
    refs: Mapping[str, Reference],
    adaptive: AdaptiveConfig,
    rule: GateConfig,
) -> dict[str, int]:
    """Case id → samples to add this round, for every case still open.

    `outcomes` are each adaptive case's verdicts so far, in sample order.
    """
    looks = level.looks(adaptive)
    critical = [i for i, ref in refs.items() if ref.critical]
    shares = level.shares(rule, has_critical=bool(critical))
    non_critical = (len(refs) - len(critical)) or 1
    wanted = {}
    for case_id, verdicts_so_far in outcomes.items():
        samples = len(verdicts_so_far)
        reference = refs.get(case_id)
        if samples < adaptive.start:
            wanted[case_id] = adaptive.start - samples
            continue
        if samples >= adaptive.max:
            continue
        if reference is None:
            more = True
        elif reference.critical and shares.critical > 0:
            more = critical_open(reference, verdicts_so_far, looks, shares.critical, len(critical))
        else:
            alpha = rule.alpha / non_critical
            more = more_samples(reference, sum(verdicts_so_far), samples, adaptive, alpha) > 0
        if more:
            wanted[case_id] = _to_next_look(samples, looks)
    if not blocked_already(outcomes, refs, looks, shares.critical, len(critical)):
        lockstep = suite_open(outcomes, refs, looks, shares.suite)
        if lockstep is not None:
            # Every case moves to the next look together: the next suite test then reads
            # equal prefixes again, and a broad drop cannot hide in cases stopped early.
            for case_id, verdicts_so_far in outcomes.items():
                if len(verdicts_so_far) < lockstep:
                    extra = lockstep - len(verdicts_so_far)
                    wanted[case_id] = max(wanted.get(case_id, 0), extra)
    return wanted


def _to_next_look(samples: int, looks: list[int]) -> int:
    return next(look for look in looks if look > samples) - samples


def blocked_already(
    outcomes: Mapping[str, Sequence[bool]],
    refs: Mapping[str, Reference],
    looks: list[int],
    alpha: float,
    family: int,
) -> bool:
    """A critical case has already dropped significantly: the gate will block anyway."""
    return alpha > 0 and any(
        refs[i].critical
        and verdicts_so_far
        and sequential_p(refs[i].passes, refs[i].samples, verdicts_so_far, looks) <= alpha / family
        for i, verdicts_so_far in outcomes.items()
        if i in refs
    )


def suite_open(
    outcomes: Mapping[str, Sequence[bool]],
    refs: Mapping[str, Reference],
    looks: list[int],
    alpha: float,
) -> int | None:
    """The next look every case should reach, while a suite-level drop is possible but
    not yet significant; None when the suite test is settled either way."""
    shared = {i: v for i, v in outcomes.items() if i in refs and v}
    if not shared or alpha <= 0:
        return None
    fewest = min(len(v) for v in shared.values())
    index = level.look_of(fewest, looks)
    if index < 0 or index >= len(looks) - 1:
        return None
    limit = looks[index]
    differences = {
        i: matched_difference(refs[i].outcomes, Fraction(refs[i].passes, refs[i].samples), v, limit)
        for i, v in shared.items()
    }
    clusters = {i: c for i in shared if (c := refs[i].cluster)}
    test = sign_flip_by_cluster(differences, clusters, alpha)
    if test.mean >= 0:
        return None
    spend = alpha * level.look_weight(index, len(looks))
    return looks[index + 1] if spend < test.p <= SUITE_OPEN_P else None


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
        if any(taken[case_id] > len(outcomes[case_id]) for case_id in wanted):
            break  # a case ran out of verdicts: the rule wanted more than the run has
        seen = {case_id: verdicts[: taken[case_id]] for case_id, verdicts in outcomes.items()}
        wanted = plan_round(seen, refs, adaptive, rule)
    return taken
