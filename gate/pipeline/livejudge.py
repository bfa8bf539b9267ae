"""The pinned judge, asked by the gate itself about every output a live run produced.

A live check's supervised run imports the suite's code (sandboxed), so its verdicts are
its claim; for every other check the gate judges again (gate.deciding.recheck), and this
does the same for the judge. The run is not asked for the judge's verdict on cases with a
fixed sample count; under `samples: auto` it needs verdicts to stop its rounds, so the
judge is asked twice about those samples (the gate's answer decides, and rounds stopped
anywhere else than its verdicts stop them are refused).

Under a ruling the judge is the base's pin: a pull request's own pin could send the key it
names wherever its `base_url` points.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from gate import checks
from gate.deciding.recheck import UntrustedRun
from gate.errors import SystemCallError
from gate.judging.sample import checked, make_grader
from gate.outputs import Context, ToolCall
from gate.produce.recordings import RecordingStore
from gate.results import RunResults
from gate.secrets import redact
from gate.suite.cases import Case
from gate.suite.config import LoadedConfig, Mode


def judge_live(
    candidate: RunResults, cases: Sequence[Case], pinned: LoadedConfig, mode: Mode
) -> None:
    """Every judged sample's `judge` verdict replaced, in place, by the gate's own; a
    sample the judge could not answer becomes an error (never a pass). `pinned` is whose
    judge pin asks: the ruler's under a ruling, else the suite's."""
    judged = {case.id: case for case in cases if checks.uses_judge(case.expect)}
    if not judged:
        return
    store = RecordingStore(pinned.recordings_dir)
    grader = make_grader(pinned, list(judged.values()), mode, store, reuse_recorded=False)
    if grader is None:
        return
    grader.prepare()
    for result in candidate.cases:
        case = judged.get(result.id)
        if case is None:
            continue
        judges = [(name, judge) for name, judge in case.judges if name in checks.RUN_JUDGED]
        for sample in result.outputs:
            if sample.status == "error":
                continue  # an error is never a pass: nothing to ask about
            try:
                calls = [ToolCall.model_validate(call) for call in sample.tool_calls]
                contexts = [Context.model_validate(context) for context in sample.contexts]
            except ValidationError:
                raise UntrustedRun(
                    f"the run reported a malformed tool call for case {case.id!r} "
                    f"(sample {sample.sample}): its results cannot be trusted"
                ) from None
            subject = checks.Subject(
                sample.text or "", case.input, calls, case, grader, contexts=contexts
            )
            try:
                mine = {v.check: v for v in checks.evaluate(judges, subject)}
            except SystemCallError as exc:
                sample.status, sample.reason = "error", redact(f"judge: {exc}")
                continue
            others = [c for c in sample.checks if c.check not in mine]
            sample.checks = [
                *others,
                *(checked(verdict) for verdict in mine.values()),
            ]
