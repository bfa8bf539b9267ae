"""How often the judge disagrees with itself: the same labelled output, asked K times.

A judge at temperature 0 still answers differently now and then, and a verdict that flips
between two asks says nothing about the output. `judge.consistency: K` makes
`casegate judge calibrate` ask about every pointwise label K times (each ask its own
recording, replayed for free later) and store the share of outputs on which the answers
were not all the same. Above `judge.max_flip_rate`, reports call the judge noisy.

A run measures it too (`asked_again`): with `judge.consistency: K`, every output the pointwise
judge judged is asked K−1 more times, each ask its own recording, and each case stores how
many of its outputs got answers that were not all the same. The verdict stays the first
answer, the one calibration measures; a case whose judge flipped above the limit is noise
to the gate (gate.deciding.compare), never a confident regression.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from typing import Any

from gate.checks.graded import pointwise_rubric
from gate.errors import SystemCallError
from gate.judging.sample import make_grader, raise_missing_judgements
from gate.produce.recordings import RecordingStore
from gate.results import CaseResult, JudgeConsistency, RunResults
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
    by_id = {case.id: case for case in cases if pointwise_rubric(case.expect) is not None}
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
        rubric = pointwise_rubric(case.expect) or ""
        outputs = flipped = flipped_failing = 0
        for sample in result.outputs:
            first = next((c.ok for c in sample.checks if c.check == "judge"), None)
            if sample.status == "error" or first is None:
                continue
            answers = [first]
            for repeat in range(1, asks):
                try:
                    answers.append(grader.verdict(case, rubric, sample.text or "", repeat)[0])
                except SystemCallError:
                    break  # a missing recording is listed by the grader; an outage left out
            if len(answers) < asks:
                continue
            outputs += 1
            if len(set(answers)) > 1:
                flipped += 1
                flipped_failing += not first
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
