"""Compare a candidate run with its baseline, case by case.

Cases are paired by id. A case whose `version` differs between the runs is
`changed`: its expectation moved, so it counts as neither regression nor fix.
A case in error on the candidate is listed under `errors` only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gate.deciding.heldout import HoldoutComparison
from gate.deciding.noise import analysis
from gate.deciding.noise.analysis import NoiseAnalysis
from gate.deciding.noise.clusters import clusters_of
from gate.deciding.noise.runspread import RunSpread
from gate.deciding.replayed import ReplayAccount
from gate.deciding.rulerside import RulerReview
from gate.deciding.sampling import Sampling, sampling_of
from gate.deciding.scores import ScoreAnalysis, analyse_scores
from gate.deciding.usage import Delta, unpriced, usage_deltas, usage_notes
from gate.errors import ResultsError
from gate.judging.pairs import PairwiseAnalysis
from gate.results import EPSILON, CaseResult, RunResults
from gate.suite.config import GateConfig
from gate.suite.judgepin import JudgePin

#: System keys shown first in the headline when they differ (the change under test).
HEADLINE_KEYS = ("provider", "model", "target", "command", "api", "message", "params", "tools")
#: Labels and transport settings: they change nothing the system answers. Every other
#: key (a python or command system's own extra keys too) is part of the change.
NOT_THE_SYSTEM = frozenset(
    {
        "name",
        "prompt",
        "prompt_file",
        "timeout_s",
        "base_url",
        "api_key_env",
        "max_retries",
        "max_wait_s",
    }
)


@dataclass(frozen=True, slots=True)
class Side:
    system: str
    pass_rate: float
    passed: int
    cases: int


class HistoryNotes(Protocol):
    """The results history's account of a comparison, rendered by gate.history.report."""

    def markdown(self) -> str: ...

    def lines(self) -> list[str]: ...

    def to_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Comparison:
    """The two runs side by side, built whole by `compare`.

    The stages after it (confirmation reruns, the history's notes) never set a field: they
    return a new comparison (`dataclasses.replace`), so each value says what one stage found.
    """

    suite: str
    baseline: Side
    candidate: Side
    shared_baseline_rate: float
    shared_candidate_rate: float
    shared_cases: int
    regressions: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    unchanged_pass: list[str] = field(default_factory=list)
    unchanged_fail: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    system_changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    ruler_changes: list[str] = field(default_factory=list)
    usage: list[Delta] = field(default_factory=list)
    #: why a side's cost reads n/a (no price for its model, no token usage), when it does
    usage_notes: list[str] = field(default_factory=list)
    #: shared cases the baseline priced and the candidate answered with no cost known
    unpriced: list[str] = field(default_factory=list)
    baseline_cases: dict[str, CaseResult] = field(default_factory=dict)
    candidate_cases: dict[str, CaseResult] = field(default_factory=dict)
    #: set when either run has repeated samples: the lists above then come from tests
    noise: NoiseAnalysis | None = None
    #: set when the ruler was read from a base commit (pull requests, `check --base`)
    ruler: RulerReview | None = None
    #: why the baseline may be stale (gate.deciding.staleness): shown first, never blocking
    warnings: list[str] = field(default_factory=list)
    #: set when the suite has pairwise judge cases and their pairs were judged
    #: (gate.judging.pairwise: in `check`, and in `compare`/`gate` from recorded verdicts)
    pairwise: PairwiseAnalysis | None = None
    #: the candidate replayed recordings past recordings.max_age_days (gate.drift.age)
    recording_warnings: list[str] = field(default_factory=list)
    #: the held-out slice, in counts (gate.holdout.scoring.compare_runs; set by the caller,
    #: which holds the key)
    holdout: HoldoutComparison | None = None
    #: what the trusted results history says (gate.history.report; set by the caller)
    history: HistoryNotes | None = None
    #: the candidate's `samples: auto` looks (None: fixed samples)
    candidate_looks: list[int] | None = None
    #: a slice's account of what it compared; what differed between the runs and was
    #: compared anyway under --allow-config-change (gate.deciding.alike; set by the caller)
    scope: str | None = None
    allowed_changes: list[str] = field(default_factory=list)
    #: live or replayed, and then which recordings and the last drift run
    #: (gate.drift.replayed; set by the caller, which knows the base and the snapshot)
    replay: ReplayAccount | None = None
    #: the samples each side drew, and whether one sample of this system may decide
    sampling: Sampling | None = None
    #: cases that regressed only on the judge's verdict while the judge disagreed with
    #: itself on them above judge.max_flip_rate (either side): noise, never a confident
    #: regression (gate.judging.consistency); kept out of `regressions`
    judge_noisy: list[str] = field(default_factory=list)
    #: checks' scores compared case by case, and pass^k/pass@k (gate.deciding.scores; None:
    #: neither run holds a score or a sampled case)
    scores: ScoreAnalysis | None = None

    def critical(self, ids: list[str]) -> list[str]:
        return [i for i in ids if self.candidate_cases[i].critical]

    def usage_of(self, name: str) -> Delta:
        return next(delta for delta in self.usage if delta.name == name)


def prompt_digest(system: dict[str, Any]) -> str | None:
    prompt = system.get("prompt")
    if prompt is None:
        return None
    return "sha256:" + hashlib.sha256(str(prompt).encode()).hexdigest()[:12]


def _system_changes(baseline: RunResults, candidate: RunResults) -> dict[str, tuple[Any, Any]]:
    before = baseline.config.get("system", {})
    after = candidate.config.get("system", {})
    changes: dict[str, tuple[Any, Any]] = {}
    extra = sorted((set(before) | set(after)) - set(HEADLINE_KEYS) - NOT_THE_SYSTEM)
    for key in (*HEADLINE_KEYS, *extra):
        if before.get(key) != after.get(key):
            changes[key] = (before.get(key), after.get(key))
    if prompt_digest(before) != prompt_digest(after):
        changes["prompt"] = (prompt_digest(before), prompt_digest(after))
    return changes


def _pin_text(pin: Any) -> str:
    if not isinstance(pin, dict):
        return "none"
    try:
        return JudgePin.model_validate(pin).describe()
    except ValueError:
        return "an unreadable pin"


def _ruler_changes(baseline: RunResults, candidate: RunResults, shared: list[str]) -> list[str]:
    """What changed in the measurement itself, apart from the system under test."""
    notes = []
    before, after = baseline.config.get("samples"), candidate.config.get("samples")
    if before != after:
        notes.append(f"samples changed: {before!r} → {after!r}")
    before, after = baseline.config.get("judge"), candidate.config.get("judge")
    if before != after:
        notes.append(
            f"the judge pin changed: {_pin_text(before)} → {_pin_text(after)}; "
            "verdicts of judge-checked cases were measured with different rulers"
        )
    notes.extend(_setting_changes(baseline.config, candidate.config))
    before_cases, after_cases = baseline.case_map(), candidate.case_map()
    moved = [
        case_id
        for case_id in shared
        if before_cases[case_id].expect_hash
        and after_cases[case_id].expect_hash
        and before_cases[case_id].expect_hash != after_cases[case_id].expect_hash
    ]
    if moved:
        notes.append(
            f"checks changed without a version bump for {len(moved)} case(s): "
            + ", ".join(moved[:10])
            + (" …" if len(moved) > 10 else "")
        )
    return notes


def _setting_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The other settings that change what a run measures: the floor a case must reach,
    the clusters the tests flip together, and the looks of `samples: auto`."""
    notes = []
    floors = (before.get("min_pass_rate", 1.0), after.get("min_pass_rate", 1.0))
    if floors[0] != floors[1]:
        notes.append(f"min_pass_rate changed: {floors[0]!r} → {floors[1]!r}")
    if before.get("clusters") != after.get("clusters"):
        notes.append(
            f"clusters changed: {before.get('clusters')!r} → {after.get('clusters')!r}; the "
            "tests group cases differently"
        )
    if "auto" in (before.get("samples"), after.get("samples")):
        looks = analysis.design_of(before), analysis.design_of(after)
        if looks[0] is not None and looks[1] is not None and looks[0] != looks[1]:
            notes.append(f"adaptive sampling changed: looks at {looks[0]} → {looks[1]} samples")
    return notes


def _weighted_rate(cases: list[CaseResult]) -> float:
    total = sum(case.weight for case in cases)
    return sum(case.weight for case in cases if case.passed) / total if total else 0.0


def compare(
    baseline: RunResults,
    candidate: RunResults,
    rule: GateConfig | None = None,
    *,
    ruler: RulerReview | None = None,
    warnings: Sequence[str] = (),
    pairwise: PairwiseAnalysis | None = None,
    holdout: HoldoutComparison | None = None,
    run_spread: RunSpread | None = None,
    recording_warnings: Sequence[str] = (),
    replay: ReplayAccount | None = None,
) -> Comparison:
    """Pair cases by id and sort them into the comparison's lists.

    With one sample per case the lists are a pass/fail diff; with repeated
    samples they come from significance tests (gate.deciding.noise.analysis) under `rule`.
    The stage inputs found before the comparison come in whole: the base's `ruler`
    review, why the baseline may be stale (`warnings`), the judged `pairwise` record, and
    the held-out slice compared (`holdout`: gate.holdout.verdicts.compare_runs, case by
    case with the key, else its aggregates), how far cases move between repeated trusted
    runs (`run_spread`, from the base's history: gate.history.spread), and the recordings
    replayed past their age limit (`recording_warnings`: gate.drift.age.replay_warnings),
    and how the candidate was produced (`replay`: gate.drift.replayed; a case judged on
    recordings the change made that CI did not seal is never called the judge's noise:
    the repeated asks would be its author's claim).
    """
    for role, run in (("baseline", baseline), ("candidate", candidate)):
        if run.interrupted:
            raise ResultsError(
                f"the {role} run was interrupted after {len(run.cases)} case(s): a partial run "
                "is never compared or gated — run it again to the end"
            )
        if run.shard is not None:
            raise ResultsError(
                f"the {role} run is one shard ({run.shard.get('index')}/"
                f"{run.shard.get('count')}) of the suite: a part is never compared or gated — "
                "join every part first with `casegate merge PARTS... --out results.json`"
            )
        if not run.cases:
            raise ResultsError(
                f"the {role} run judged no case: there is nothing to compare or gate "
                "(check `cases:` and the selection)"
            )
    if baseline.suite != candidate.suite:
        raise ResultsError(
            f"the runs are of different suites ({baseline.suite!r} vs {candidate.suite!r}): "
            "compare a candidate with the baseline of its own suite"
        )
    before, after = baseline.case_map(), candidate.case_map()
    shared_ids = sorted(set(before) & set(after))
    added = sorted(set(after) - set(before))
    lists: dict[str, list[str]] = {
        name: [] for name in ("changed", "errors", "regressions", "fixes", "pass", "fail")
    }
    comparable = []
    for case_id in shared_ids:
        old, new = before[case_id], after[case_id]
        if old.version != new.version:
            lists["changed"].append(case_id)
            continue
        comparable.append(case_id)
        if new.status == "error":
            lists["errors"].append(case_id)
        elif old.passed and not new.passed:
            lists["regressions"].append(case_id)
        elif not old.passed and new.passed:
            lists["fixes"].append(case_id)
        else:
            lists["pass" if new.passed else "fail"].append(case_id)
    errors = sorted(lists["errors"] + [i for i in added if after[i].status == "error"])
    looks = analysis.design_of(candidate.config)
    # Scores over every shared case of the same version, judge-noisy and in error too: a
    # score the candidate lacks is a reason of the score rules, never left out quietly.
    scores = analyse_scores(
        baseline,
        candidate,
        comparable,
        clusters_of(after.values(), candidate.config),
        looks,
        rule.min_pass_hat_k.k if rule is not None and rule.min_pass_hat_k is not None else None,
    )
    judged = [i for i in comparable if after[i].status != "error" and before[i].status != "error"]
    # A drop only a judge that disagrees with itself explains is noise: it is listed on its
    # own and left out of every test and rate, so it can neither block nor hide in a mean.
    claimed = set(replay.unsealed_cases) if replay is not None else set()
    judge_noisy = [
        i
        for i in judged
        if after[i].pass_rate < before[i].pass_rate - EPSILON
        and i not in claimed
        and judge_noise(before[i], after[i])
    ]
    if judge_noisy:
        comparable = [i for i in comparable if i not in judge_noisy]
        judged = [i for i in judged if i not in judge_noisy]
        for name in ("regressions", "pass", "fail"):
            lists[name] = [i for i in lists[name] if i not in judge_noisy]
    pairs = [(before[i], after[i]) for i in judged]
    noise = None
    if analysis.noisy(pairs):
        clustered = clusters_of([new for _, new in pairs], candidate.config)
        noise = analysis.analyse(pairs, rule or GateConfig(), looks, clustered, run_spread)
        flagged = set(noise.regressions) | set(noise.fixes)
        others = [i for i in comparable if after[i].status != "error" and i not in flagged]
        lists["regressions"], lists["fixes"] = noise.regressions, noise.fixes
        lists["pass"] = [i for i in others if after[i].passed]
        lists["fail"] = [i for i in others if not after[i].passed]
    return Comparison(
        suite=candidate.suite,
        baseline=_side(baseline),
        candidate=_side(candidate),
        shared_baseline_rate=_weighted_rate([before[i] for i in comparable]),
        shared_candidate_rate=_weighted_rate([after[i] for i in comparable]),
        shared_cases=len(comparable),
        regressions=lists["regressions"],
        fixes=lists["fixes"],
        unchanged_pass=lists["pass"],
        unchanged_fail=lists["fail"],
        errors=errors,
        added=added,
        removed=sorted(set(before) - set(after)),
        changed=lists["changed"],
        system_changes=_system_changes(baseline, candidate),
        # A re-versioned case moved its expectation on purpose: no silent change of checks.
        ruler_changes=_ruler_changes(baseline, candidate, comparable),
        usage=usage_deltas(baseline, candidate, shared_ids),
        usage_notes=usage_notes(baseline, candidate),
        unpriced=unpriced(baseline, candidate, shared_ids),
        baseline_cases=before,
        candidate_cases=after,
        noise=noise,
        ruler=ruler,
        warnings=list(warnings),
        pairwise=pairwise,
        recording_warnings=list(recording_warnings),
        holdout=holdout,
        candidate_looks=looks,
        sampling=sampling_of(baseline, candidate),
        judge_noisy=judge_noisy,
        replay=replay,
        scores=scores,
    )


def judge_noise(old: CaseResult, new: CaseResult) -> str | None:
    """Why a drop of `old` → `new` may be the judge's noise, or None.

    Only under a rule that measures the judge's consistency (the candidate's record, asked
    by the gate under the ruler's pin, whose limit holds for both sides), when the judge is
    the only check the candidate fails, and when the flips could account for the whole
    drop: the candidate's flipped FAIL verdicts counted as passes restore the baseline's
    pass rate, or the baseline's flipped PASS verdicts counted as fails bring it down to
    the candidate's. One flip among many outputs that failed every time explains nothing."""
    measured = new.judge_consistency
    if measured is None or not new.samples or not old.samples:
        return None
    if {check.check for check in new.checks if not check.ok} != {"judge"}:
        return None
    limit = measured.max_flip_rate
    if measured.above(limit) and (
        (new.passes + measured.flipped_failing) / new.samples >= old.pass_rate - EPSILON
    ):
        return f"on the candidate, {measured.describe(limit)}"
    before = old.judge_consistency
    if (
        before is not None
        and before.above(limit)
        and (old.passes - before.flipped_passing) / old.samples <= new.pass_rate + EPSILON
    ):
        return f"on the baseline, {before.describe(limit)}"
    return None


def _side(run: RunResults) -> Side:
    return Side(run.system, run.summary.pass_rate, run.summary.passed, run.summary.cases)


def rate_dropped(baseline: float, candidate: float, tolerance: float) -> bool:
    """k/n arithmetic is inexact (0.8 - 0.75 > 0.05): compare with an epsilon."""
    return candidate < baseline - tolerance - EPSILON
