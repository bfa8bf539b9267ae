"""A replayed candidate, produced and judged in the gate's own process.

In replay the outputs are the recordings: producing them takes no code of the
suite's, so a replayed `casegate check` starts no supervised run and imports none
of the pull request's code. The recordings were read once, before anything else
(gate.deciding.recheck.snapshot); each sample is judged once here:

- the pinned judge's recorded answer, read here (a run could call any answer a
  pass: its verdict would be its claim);
- custom checks, in their own judging process (gate.judging.judgeproc), from the
  base's tree under a ruling;
- every other check, here, at the ruler's prices and tool schemas.

`samples: auto` cases are judged on every recorded sample, then stopped where the
rounds stop them given those verdicts: the samples past that point cost nothing in
replay and are dropped unread by the verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from gate import __version__, checks, heap
from gate.deciding.noise import adaptive
from gate.deciding.recheck import Recorded, costed, judge_cases, rounds_config
from gate.errors import MissingRecordingError
from gate.judging.judgeproc import CustomVerdicts
from gate.judging.sample import aggregate, judge_sample, make_grader, raise_missing_judgements
from gate.produce.answers import Answer, missing_message, samples_for
from gate.produce.recordings import RecordingStore, request_key, system_fingerprint
from gate.results import CaseResult, Produced, RunResults, summarise
from gate.suite.cases import Case
from gate.suite.config import LoadedConfig

#: the custom checks' judging process, given the outputs to judge
CustomJudge = Callable[[Sequence[Produced]], CustomVerdicts | None]


def replayed_candidate(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    recorded: Recorded,
    *,
    reference: RunResults | None,
    selection: Mapping[str, object] | None,
    ruler: LoadedConfig | None,
    judge_custom: CustomJudge,
) -> tuple[RunResults, CustomVerdicts | None]:
    """The candidate as the recordings answer it, every sample judged once; and the custom
    checks' verdicts (None: no case has one). Raises MissingRecordingError naming every
    case a recording is missing for, as a replayed run does."""
    store = RecordingStore(loaded.recordings_dir)
    grader = make_grader(loaded, cases, "replay", store, reuse_recorded=False)
    answers = _recorded_answers(loaded, cases, recorded, store)
    ordered = sorted(cases, key=lambda case: case.id)
    produced: list[Produced] = []
    with heap.bulk():  # every sample, kept to the end
        for case in ordered:
            # Only the judge here: the rest are judged with the ruler's schemas and prices.
            judges = [(name, judge) for name, judge in case.judges if name in checks.RUN_JUDGED]
            samples = [
                judge_sample(case, number, answer, loaded, grader, judges=judges)
                for number, answer in enumerate(answers[case.id])
            ]
            produced.append(Produced(case.id, samples))
    raise_missing_judgements(grader, store)
    costed(produced, ruler)  # the custom checks judge the cost the built-in ones judge
    custom = judge_custom(produced)
    judged = _stopped(
        judge_cases(produced, loaded, cases, recorded, custom=custom, ruler=ruler),
        cases,
        loaded,
        reference,
        store,
        ruler,
    )
    candidate = RunResults(
        suite=loaded.config.suite,
        system=loaded.config.system.name,
        config=loaded.as_dict(),
        config_hash=loaded.config_hash(),
        created_at="",  # stamped by the check
        casegate_version=__version__,
        mode="replay",
        overrides=loaded.overrides,
        selection=dict(selection) if selection is not None else None,
        summary=summarise(judged),
        cases=judged,
    )
    return candidate, custom


def _threshold(case: Case, loaded: LoadedConfig) -> float:
    return loaded.config.min_pass_rate if case.min_pass_rate is None else case.min_pass_rate


def _recorded_answers(
    loaded: LoadedConfig, cases: Sequence[Case], recorded: Recorded, store: RecordingStore
) -> dict[str, list[Answer]]:
    """Each case's recorded samples from the snapshot: a fixed count's every one, or under
    `samples: auto` the unbroken run from the first (the rounds decide how many count)."""
    found: dict[str, list[Answer]] = {}
    missing: dict[str, list[int]] = {}
    for case in cases:
        fixed = samples_for(case, loaded)
        count = fixed or loaded.config.adaptive.max
        answers: list[Answer] = []
        for number in range(count):
            output = recorded.get((case.id, number))
            if output is None:
                break
            answers.append(Answer(output, captured_at=recorded.captured.get((case.id, number))))
        short = fixed is not None and len(answers) < fixed
        if short or not answers:
            _raise_unreadable(loaded, case, count, store)
            missing[case.id] = list(range(len(answers), fixed or loaded.config.adaptive.start))
        found[case.id] = answers
    if missing:
        raise MissingRecordingError(missing_message(missing, store, cases=cases))
    return found


def _raise_unreadable(loaded: LoadedConfig, case: Case, count: int, store: RecordingStore) -> None:
    """The error reading a case's recordings gives, when its file is there but unreadable
    (the snapshot passes over it, so that this names it as a run would)."""
    fingerprint = system_fingerprint(loaded.resolved_system())
    store.get_many_dated(
        case.id, [request_key(fingerprint, case.key_input, number) for number in range(count)]
    )


def _stopped(
    judged: list[CaseResult],
    cases: Sequence[Case],
    loaded: LoadedConfig,
    reference: RunResults | None,
    store: RecordingStore,
    ruler: LoadedConfig | None,
) -> list[CaseResult]:
    """`samples: auto` cases cut to the samples their rounds draw, given these verdicts,
    under the ruler's rule and adaptive settings (gate.deciding.recheck.rounds_config)."""
    by_id = {case.id: case for case in cases}
    outcomes = {
        result.id: [sample.status == "pass" for sample in result.outputs]
        for result in judged
        if samples_for(by_id[result.id], loaded) is None
    }
    if not outcomes:
        return judged
    config = rounds_config(loaded, ruler)
    drawn = adaptive.replayed_rounds(
        outcomes, adaptive.references(reference), config.adaptive, config.gate
    )
    short = {
        case_id: list(range(len(outcomes[case_id]), drawn[case_id]))
        for case_id in outcomes
        if drawn[case_id] > len(outcomes[case_id])
    }
    if short:
        raise MissingRecordingError(missing_message(short, store, cases=cases))
    cut = [
        result
        if result.id not in outcomes or drawn[result.id] == len(result.outputs)
        else aggregate(case, result.outputs[: drawn[result.id]], _threshold(case, loaded))
        for result in judged
        for case in [by_id[result.id]]
    ]
    return cut
