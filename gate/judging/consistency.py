"""How often the judge disagrees with itself: the same labelled output, asked K times.

A judge at temperature 0 still answers differently now and then, and a verdict that flips
between two asks says nothing about the output. `judge.consistency: K` makes
`casegate judge calibrate` ask about every pointwise label K times (each ask its own
recording, replayed for free later) and store the share of outputs on which the answers
were not all the same. Above `judge.max_flip_rate`, reports call the judge noisy.

A run measures it too (`asked_again`): with `judge.consistency: K`, every output a judged
check judged (a pass/fail or graded judge, a RAG metric) is asked K−1 more times, each ask
its own recording, and each case stores how many of its outputs got answers that were not
all the same. For a check that scores (graded, RAG), the answers are its verdicts: an output
flips when its K scores fall on both sides of the threshold, not when they merely differ.
The verdict stays the first answer, the one calibration measures; a case whose judge
flipped above the limit is noise to the gate (gate.deciding.compare: only when the judge is
the one check failing), never a confident regression.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from typing import Any

from pydantic import ValidationError

from gate import checks
from gate.checks.graded import judged_checks
from gate.errors import SystemCallError
from gate.judging.judge import Grader
from gate.judging.sample import make_grader, raise_missing_judgements
from gate.outputs import Context
from gate.produce.recordings import RecordingStore
from gate.results import CaseResult, JudgeConsistency, RunResults, SampleResult
from gate.suite.cases import Case
from gate.suite.config import LoadedConfig, Mode

#: flipped outputs a calibration file names before it counts the rest
LISTED = 20

#: asks the judge about a label again: (label, repeat) → its verdict, None on an error
Ask = Callable[[Any, int], "bool | None"]


def measure(
    labels: Sequence[Any],
    first: Sequence[bool | None],
    asks: int,
    ask: Ask,
    pool: Executor,
    max_flip_rate: float,
) -> dict[str, Any]:
    """The judge's flip rate over `labels` (gate.judging.calibration.Label, each with its
    `case`, `output` and `line`): `first` holds each label's first verdict (None:
    an error), and `ask(label, repeat)` asks again (None: an error). An output flips when
    its verdicts are not all the same; an output with an error on any ask is left out."""
    again = list(
        pool.map(lambda job: ask(*job), [(lb, r) for lb in labels for r in range(1, asks)])
    )
    per_label = [
        [verdict, *again[index * (asks - 1) : (index + 1) * (asks - 1)]]
        for index, verdict in enumerate(first)
    ]
    judged = [(label, got) for label, got in zip(labels, per_label, strict=True) if None not in got]
    flipped = [(label, got) for label, got in judged if len(set(got)) > 1]
    return {
        "asks": asks,
        "outputs": len(judged),
        "errors": len(labels) - len(judged),
        "flipped": len(flipped),
        "flip_rate": len(flipped) / len(judged) if judged else None,
        "max_flip_rate": max_flip_rate,
        "flipped_outputs": [
            {
                "case": label.case.id,
                "line": label.line,
                "verdicts": ",".join("pass" if verdict else "fail" for verdict in got),
            }
            for label, got in flipped[:LISTED]
        ],
    }


def noisy(consistency: Mapping[str, Any]) -> str | None:
    """Why the judge is noisy by its stored consistency, or None (fine, or not measured)."""
    rate, limit = consistency.get("flip_rate"), consistency.get("max_flip_rate")
    if not isinstance(rate, int | float) or not isinstance(limit, int | float):
        return None
    if rate <= limit:
        return None
    return (
        f"the judge disagrees with itself on {rate:.0%} of outputs asked "
        f"{consistency.get('asks')} times, above judge.max_flip_rate {limit:g}"
    )


def summary(consistency: Mapping[str, Any]) -> str:
    rate = consistency.get("flip_rate")
    shown = "n/a" if not isinstance(rate, int | float) else f"{rate:.0%}"
    return (
        f"self-consistency: asked {consistency.get('asks')} times, flipped on "
        f"{consistency.get('flipped')} of {consistency.get('outputs')} outputs ({shown})"
    )


def asked_again(
    results: RunResults,
    cases: Sequence[Case],
    asking: LoadedConfig,
    mode: Mode,
    *,
    ruled_by: LoadedConfig | None = None,
    store: RecordingStore | None = None,
    reuse_recorded: bool = False,
) -> RunResults:
    """`results` with each case's judge consistency, when the rule asks for
    `judge.consistency: K`: `ruled_by`'s pin (the base's under a ruling), else `asking`'s.

    Every sample the pointwise judge judged is asked again K−1 times by `asking`'s pin (the
    one that gave its verdict) under `mode`; replayed asks must be recorded (a missing one
    is a MissingRecordingError naming its case, as any missing judgement is). An ask that
    errs leaves its output out of the count, as calibration does: an unmeasured case is
    never called noisy, so its verdict stands."""
    rule = (ruled_by or asking).config.judge
    if rule is None or not rule.consistency:
        return results
    asks, limit = rule.consistency, rule.max_flip_rate
    by_id = {case.id: case for case in cases if judged_checks(case.expect)}
    if not by_id:
        return results
    store = store or RecordingStore(asking.recordings_dir)
    grader = make_grader(asking, list(by_id.values()), mode, store, reuse_recorded=reuse_recorded)
    if grader is None:
        return results
    grader.prepare()
    measured: list[CaseResult] = []
    for result in results.cases:
        case = by_id.get(result.id)
        if case is None:
            measured.append(result)
            continue
        names = set(judged_checks(case.expect))
        judges = [(name, judge) for name, judge in case.judges if name in names]
        outputs = flipped = flipped_failing = 0
        for sample in result.outputs:
            first = {c.check: c.ok for c in sample.checks if c.check in names}
            if sample.status == "error" or not first:
                continue
            answers = _asked_again(sample, case, judges, grader, asks)
            if answers is None:
                continue  # a missing recording is listed by the grader; an outage left out
            outputs += 1
            flips = [name for name in first if len({first[name], *answers.get(name, ())}) > 1]
            if flips:
                flipped += 1
                flipped_failing += not all(first[name] for name in flips)
        consistency = JudgeConsistency(
            asks=asks,
            outputs=outputs,
            flipped=flipped,
            flipped_failing=flipped_failing,
            max_flip_rate=limit,
        )
        measured.append(dataclasses.replace(result, judge_consistency=consistency))
    raise_missing_judgements(grader, store)
    return dataclasses.replace(results, cases=measured)


def _asked_again(
    sample: SampleResult,
    case: Case,
    judges: Sequence[tuple[str, checks.Judge]],
    grader: Grader,
    asks: int,
) -> dict[str, list[bool]] | None:
    """Each judged check's verdicts on asks 2…K of the sample (None: an ask erred). An
    answer a graded check or a RAG metric cannot read fails, as it does on the first ask."""
    try:
        contexts = tuple(Context.model_validate(context) for context in sample.contexts)
    except ValidationError:
        return None
    again: dict[str, list[bool]] = {}
    for repeat in range(1, asks):
        subject = checks.Subject(
            sample.text or "", case.input, case=case, grader=grader.again(repeat), contexts=contexts
        )
        try:
            verdicts = checks.evaluate(judges, subject)
        except SystemCallError:
            return None
        for verdict in verdicts:
            again.setdefault(verdict.check, []).append(verdict.ok)
    return again
