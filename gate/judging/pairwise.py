"""Pairwise judging: is the candidate's answer as good as the baseline's?

A model swap can change outputs that still pass every check. A case with
`judge: {rubric: …, mode: pairwise}` asks the pinned judge to compare the
baseline's output with the candidate's for the same input, sample by sample.
Judges favour whichever answer they are shown first (or second), so each pair
is judged in both orders; when the two orders disagree the pair is a tie.
The comparison counts wins, losses and ties per case and overall, with an exact
two-sided sign test over the pairs that are not ties.

The check gives no per-output verdict: it needs the baseline's output, so it
runs where a candidate is compared with a baseline. Verdicts are recorded and
replayed like every judge verdict, keyed on the pin, the rubric, the input and
both outputs in their order. In a supervised `check` the gate's own process
judges the pairs, from verdicts read before the pull request's code ran.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gate.checks.graded import pairwise_rubric
from gate.errors import CasegateError, ConfigError, MissingRecordingError, SystemCallError
from gate.judging.judge import Grader, MissingJudgeRecording, Preference, pin_fingerprint
from gate.judging.pairs import CasePairs, Outcome, Pair, PairwiseAnalysis
from gate.outputs import Output
from gate.produce.recordings import RecordingStore
from gate.results import CaseResult, RunResults, read_results
from gate.secrets import redact
from gate.suite.cases import Case
from gate.suite.config import LoadedConfig, Mode
from gate.suite.judgepin import JudgePin

if TYPE_CHECKING:
    from gate.deciding.ruler import Ruling

#: providers whose judge would run the repository's code: never in the gate's own process
USER_CODE_PROVIDERS = frozenset({"python", "command"})
MISSING_LISTED = 10

#: which side each answer names, by the order the pair was shown in
_BASELINE_FIRST: dict[Preference, str] = {"A": "baseline", "B": "candidate", "TIE": "tie"}
_CANDIDATE_FIRST: dict[Preference, str] = {"A": "candidate", "B": "baseline", "TIE": "tie"}
_OUTCOME: dict[str, Outcome] = {"candidate": "win", "baseline": "loss", "tie": "tie"}


# --- judging --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Task:
    case_id: str
    rubric: str
    case_input: Mapping[str, Any]
    sample: int
    baseline: str
    candidate: str


def combine(
    first: tuple[Preference, str], second: tuple[Preference, str]
) -> tuple[Outcome, str, bool]:
    """Two verdicts on one pair, baseline shown first then candidate first, as one outcome,
    its reason, and whether the two orders agreed.

    The same side in both orders wins; any disagreement is a tie (position bias).
    """
    one, two = _BASELINE_FIRST[first[0]], _CANDIDATE_FIRST[second[0]]
    if one == two:
        return _OUTCOME[one], f"{first[1]} (A: baseline, B: candidate)", True
    if first[0] == second[0]:
        seen = "first" if first[0] == "A" else "second"
        why = f"the judge preferred whichever output it was shown {seen} (position bias)"
    else:
        why = (
            f"the two orders disagree (baseline shown first: {first[0]}; candidate shown "
            f"first: {second[0]})"
        )
    return "tie", f"{why}, counted as a tie; with A: baseline, it said: {first[1]}", False


def judge_pair(
    grader: Grader,
    case_id: str,
    rubric: str,
    case_input: Mapping[str, Any],
    baseline: str,
    candidate: str,
) -> tuple[Outcome, str, bool]:
    """One pair judged in both orders: (outcome for the candidate, reason, orders agreed).

    Raises SystemCallError (an outage, an unparseable verdict) and, in replay,
    MissingJudgeRecording.
    """
    if baseline == candidate:
        return "tie", "the same output on both sides", True  # nothing to prefer, no call
    first = grader.prefer(case_id, rubric, case_input, baseline, candidate)
    second = grader.prefer(case_id, rubric, case_input, candidate, baseline)
    return combine(first, second)


def _judge(task: _Task, grader: Grader) -> Pair:
    try:
        outcome, reason, _ = judge_pair(
            grader, task.case_id, task.rubric, task.case_input, task.baseline, task.candidate
        )
    except MissingJudgeRecording:
        raise
    except SystemCallError as exc:
        return Pair(task.sample, "error", redact(f"judge: {exc}"))
    except Exception as exc:  # a provider bug is that pair's error, never a win
        return Pair(task.sample, "error", redact(f"judge: {type(exc).__name__}: {exc}"))
    return Pair(task.sample, outcome, redact(reason))


def _texts(run_case: CaseResult) -> dict[int, str]:
    return {
        sample.sample: sample.text
        for sample in run_case.outputs
        if sample.status != "error" and sample.text is not None
    }


def compare_pairs(
    baseline: RunResults,
    candidate: RunResults,
    cases: Sequence[Case],
    grader: Grader,
    *,
    concurrency: int = 8,
) -> PairwiseAnalysis:
    """Judge every pairwise case of `cases` that both runs hold; raises when replay lacks
    a verdict (MissingRecordingError naming the cases), never counts it as a tie."""
    before, after = baseline.case_map(), candidate.case_map()
    analysis = PairwiseAnalysis(judge=grader.pin.describe())
    tasks: list[_Task] = []
    settled: dict[str, list[Pair]] = {}
    for case in sorted(cases, key=lambda c: c.id):
        rubric = pairwise_rubric(case.expect)
        new = after.get(case.id)
        if rubric is None or new is None:
            continue
        old = before.get(case.id)
        if old is None:
            analysis.not_compared[case.id] = "no baseline output (a new case)"
            continue
        if old.version != new.version:
            analysis.not_compared[case.id] = (
                f"a new version of the case (v{old.version} → v{new.version}): the baseline "
                "answered another expectation"
            )
            continue
        olds, news = _texts(old), _texts(new)
        shared = sorted(set(olds) & set(news))
        if not shared:
            analysis.not_compared[case.id] = "no output on one side to compare (in error)"
            if olds and not news:
                analysis.candidate_errors.append(case.id)
            continue
        settled[case.id] = []
        for index in shared:
            tasks.append(_Task(case.id, rubric, case.input, index, olds[index], news[index]))
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        judged = list(pool.map(lambda task: _try(task, grader), tasks))
    missing = sorted({task.case_id for task, pair in zip(tasks, judged, strict=True) if not pair})
    if missing:
        raise MissingRecordingError(_missing_message(missing, grader, baseline))
    for task, pair in zip(tasks, judged, strict=True):
        assert pair is not None
        settled[task.case_id].append(pair)
    for case_id, pairs in settled.items():
        analysis.cases.append(
            CasePairs(case_id, after[case_id].critical, sorted(pairs, key=lambda p: p.sample))
        )
    return analysis


def _try(task: _Task, grader: Grader) -> Pair | None:
    try:
        return _judge(task, grader)
    except MissingJudgeRecording:
        return None


def _missing_message(missing: list[str], grader: Grader, baseline: RunResults) -> list[str]:
    shown = ", ".join(missing[:MISSING_LISTED]) + (
        f" and {len(missing) - MISSING_LISTED} more" if len(missing) > MISSING_LISTED else ""
    )
    return [
        f"no recorded pairwise judge verdict for {len(missing)} case(s) in "
        f"{grader.store.folder}: {shown}",
        "pairwise verdicts are keyed on both outputs, so they are recorded against one "
        f"baseline (here {baseline.system!r}, created {baseline.created_at}): run "
        "`casegate record --only-missing` with the judge's key set against that baseline, "
        "and commit the recordings",
    ]


# --- where a baseline is at hand ----------------------------------------------------


def uses_pairwise(cases: Sequence[Case]) -> bool:
    return any(pairwise_rubric(case.expect) is not None for case in cases)


def _ruler(
    loaded: LoadedConfig, cases: Sequence[Case], ruling: Ruling | None
) -> tuple[JudgePin | None, Sequence[Case], str]:
    """The pin and cases the pairs are judged by: the base's in a pull request."""
    if ruling is not None and ruling.base is not None:
        base = ruling.base
        return base.loaded.config.judge, base.cases, base.config_shown
    return loaded.config.judge, cases, str(loaded.path)


def snapshot(
    loaded: LoadedConfig, cases: Sequence[Case], ruling: Ruling | None, mode: Mode
) -> dict[tuple[str, str], Output] | None:
    """The recorded pairwise verdicts, read *before* the supervised run starts.

    The run imports the suite's code, which could write a verdict of its choosing
    into a recording file; the gate judges with what was there beforehand. In live
    and record modes it checks, before anything is spent, that the judge can be
    asked from the gate's own process.
    """
    if mode != "replay":
        _refuse_user_code_judge(loaded, cases, ruling)
        return None
    pins = [pin for pin, _, _ in (_ruler(loaded, cases, None), _ruler(loaded, cases, ruling))]
    fingerprints = {pin_fingerprint(pin, "pairwise") for pin in pins if pin is not None}
    ids = {
        case.id
        for source in (cases, _ruler(loaded, cases, ruling)[1])
        for case in source
        if pairwise_rubric(case.expect) is not None
    }
    store = RecordingStore(loaded.recordings_dir)
    recorded: dict[tuple[str, str], Output] = {}
    for case_id in sorted(ids):
        try:
            responses = store.read_file(store.path_for(case_id))["responses"]
        except (FileNotFoundError, CasegateError):
            continue  # judged as missing: exit 2 naming the case
        for key, entry in responses.items():
            if isinstance(entry, dict) and entry.get("fingerprint") in fingerprints:
                try:
                    recorded[(case_id, key)] = Output.model_validate(entry.get("output"))
                except ValueError:
                    continue  # a malformed verdict is a missing one
    return recorded


def _refuse_user_code_judge(
    loaded: LoadedConfig, cases: Sequence[Case], ruling: Ruling | None
) -> None:
    pin, ruler_cases, where = _ruler(loaded, cases, ruling)
    if pin is not None and pin.provider in USER_CODE_PROVIDERS and uses_pairwise(ruler_cases):
        raise ConfigError(
            f"{where}: the judge pin's provider {pin.provider!r} runs the repository's code, "
            "and `check` judges pairs in its own process, which never does: pin a hosted judge "
            "(openai, anthropic), or record the verdicts with `casegate record` and check in "
            "replay"
        )


def _grader(
    pin: JudgePin | None,
    where: str,
    loaded: LoadedConfig,
    mode: Mode,
    *,
    recorded: Mapping[tuple[str, str], Output] | None = None,
    reuse_recorded: bool = False,
) -> Grader:
    if pin is None:
        raise ConfigError(
            f"{where}: a case uses a pairwise `judge` but no judge is pinned; add a `judge:` "
            "block (provider, model, prompt_version, temperature)"
        )
    grader = Grader(
        pin,
        mode=mode,
        store=RecordingStore(loaded.recordings_dir),
        root=loaded.root,
        reuse_recorded=reuse_recorded,
        kind="pairwise",
        recorded=recorded,
    )
    grader.prepare()
    return grader


def for_check(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    ruling: Ruling | None,
    baseline: RunResults,
    candidate: RunResults,
    mode: Mode,
    recorded: Mapping[tuple[str, str], Output] | None,
) -> PairwiseAnalysis | None:
    """`check`: the pairs judged in the gate's own process (None: no pairwise case).

    In replay the verdicts come from `recorded` (the `snapshot`); live and record
    ask the judge here, which is refused for a judge that is the repository's code.
    """
    pin, ruler_cases, where = _ruler(loaded, cases, ruling)
    if not uses_pairwise(ruler_cases):
        return None
    if mode != "replay":
        _refuse_user_code_judge(loaded, cases, ruling)
    grader = _grader(pin, where, loaded, mode, recorded=recorded if mode == "replay" else None)
    return compare_pairs(
        baseline, candidate, ruler_cases, grader, concurrency=loaded.config.concurrency
    )


def replayed(
    loaded: LoadedConfig, cases: Sequence[Case], baseline: RunResults, candidate: RunResults
) -> PairwiseAnalysis | None:
    """`compare` and `gate` on two results files: the recorded verdicts, no call."""
    if not uses_pairwise(cases):
        return None
    grader = _grader(loaded.config.judge, str(loaded.path), loaded, "replay")
    return compare_pairs(baseline, candidate, cases, grader, concurrency=1)


def record_against_baseline(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    candidate: RunResults,
    *,
    only_missing: bool,
) -> list[str]:
    """`record`: record the pairwise verdicts against the configured baseline, so that
    replay (in CI) finds them; returns lines for the person who ran it."""
    if not uses_pairwise(cases) or candidate.interrupted:
        return []
    path: Path | None = loaded.baseline_path
    if path is None or not path.is_file():
        return [
            f"pairwise: no baseline at {path or '(none configured)'} yet, so no pair was judged; "
            "after `casegate baseline`, run `casegate record --only-missing` to record them"
        ]
    baseline = read_results(path)
    grader = _grader(
        loaded.config.judge, str(loaded.path), loaded, "record", reuse_recorded=only_missing
    )
    analysis = compare_pairs(
        baseline, candidate, cases, grader, concurrency=loaded.config.concurrency
    )
    lines = [f"pairwise against {path}: {analysis.summary()} ({grader.calls} judge call(s))"]
    if analysis.errors:
        lines.append(
            f"pairwise: {analysis.errors} pair(s) could not be judged (an outage, or a verdict "
            "that is not one A, B or TIE line); `check` counts them as errors, never as wins: "
            "after an outage, run `casegate record --only-missing` again"
        )
    return lines
