"""Like with like: the baseline's outputs judged again by the pin that judged the candidate.

A change of the judge pin (another model, another prompt version) re-scores the candidate
only: the baseline's verdicts are the old judge's, and a comparison would measure the
change of judge as much as the change of system. When the pins differ, every baseline
output a judged check judged (a pass/fail or graded judge, a RAG metric: each verdict with
its score) is asked again under the candidate's pin, and the
comparison sees both sides scored by one judge. The asks are recorded and replayed like any
judgement: `casegate record` records them against the configured baseline (as it does the
pairwise verdicts), a replayed `check` reads them, and one missing stops the replay with
exit 2, naming its case.

Only the judge's verdicts change. Every other check's verdict, the outputs, and the case's
identity (its version, criticality, tags) stay the baseline's own; an output the new judge
cannot answer becomes an error on the baseline's side, never a pass.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from gate import checks
from gate.checks.graded import judged_checks
from gate.errors import ResultsError, SystemCallError
from gate.judging.judge import Grader
from gate.judging.sample import aggregate, checked, make_grader, raise_missing_judgements
from gate.outputs import Context
from gate.produce.recordings import RecordingStore
from gate.results import CaseResult, RunResults, SampleResult, read_results, summarise
from gate.secrets import redact
from gate.suite.cases import Case
from gate.suite.config import LoadedConfig, Mode
from gate.suite.judgepin import JudgePin, judge_system

IN_A_PULL_REQUEST = (
    "the baseline was judged by another judge pin than the one judging this pull request: "
    "in a pull request's replay the baseline is never judged again from the pull request's "
    "own recordings. When the base changed its pin, refresh the baseline on the base branch "
    "(`casegate baseline`; the baseline workflow does it after the merge); when this pull "
    "request changes it, merge that change on its own first"
)

#: what a re-judged case keeps of the baseline's own record
KEPT: tuple[str, ...] = ("version", "critical", "tags", "weight", "source", "expect_hash")
KEPT += ("note", "provenance", "added", "cluster")


def _pin_of(config: Mapping[str, Any]) -> JudgePin | None:
    stored = config.get("judge")
    if not isinstance(stored, Mapping):
        return None
    try:
        return JudgePin.model_validate(stored)
    except ValidationError:
        return None  # unreadable: not the pin asking now, so judged again


def differs(baseline: RunResults, asking: LoadedConfig) -> bool:
    """Whether the baseline's verdicts came from another judge pin than `asking`'s."""
    pin = asking.config.judge
    if pin is None:
        return False
    old = _pin_of(baseline.config)
    # Compared as the systems they run as, by value: a pin read back from JSON says
    # `temperature: 0.0` where the config's default is the integer 0, one judge all the same.
    return old is None or judge_system(old) != judge_system(pin)


def rejudged(
    baseline: RunResults,
    cases: Sequence[Case],
    asking: LoadedConfig,
    mode: Mode,
    *,
    store: RecordingStore | None = None,
    reuse_recorded: bool = False,
    strict: bool = True,
) -> tuple[RunResults, str | None]:
    """`baseline` with its pointwise judge verdicts asked again under `asking`'s pin when
    its own pin differs, and the line the report states; else `baseline` and None.

    `strict` (a check): an output the judge cannot answer (an outage, an unreadable
    verdict, a missing recording) stops with exit 2 naming the cases: an error on the
    baseline's side would hide a regression. Otherwise (`record`) it is an error in the
    result, for the caller to count."""
    if not differs(baseline, asking):
        return baseline, None
    by_id = {case.id: case for case in cases if judged_checks(case.expect)}
    targets = {
        result.id
        for result in baseline.cases
        if result.id in by_id
        and result.version == by_id[result.id].version  # the same expectation as now
        and any(
            check.check in judged_checks(by_id[result.id].expect)
            for sample in result.outputs
            for check in sample.checks
        )
    }
    if not targets:
        return baseline, None
    store = store or RecordingStore(asking.recordings_dir)
    grader = make_grader(
        asking, [by_id[i] for i in sorted(targets)], mode, store, reuse_recorded=reuse_recorded
    )
    assert grader is not None  # the targets use the judge, and a pin is set
    grader.prepare()
    threshold = asking.config.min_pass_rate
    judged = [
        _judged_again(result, by_id[result.id], grader, threshold)
        if result.id in targets
        else result
        for result in baseline.cases
    ]
    raise_missing_judgements(grader, store)
    failed = [r.id for r, was in zip(judged, baseline.cases, strict=True) if _newly_errored(was, r)]
    if strict and failed:
        first = next(r for r in judged if r.id == failed[0])
        raise ResultsError(
            f"the judge could not judge the baseline's outputs again under the new pin on "
            f"{len(failed)} case(s): {', '.join(failed[:10])} (first: {first.reason}); "
            "comparing with a baseline in error would hide a regression: run "
            "`casegate record --only-missing` again"
        )
    old, new = _pin_of(baseline.config), asking.config.judge
    assert new is not None
    config = {**baseline.config, "judge": asking.as_dict().get("judge")}
    line = (
        f"the baseline's outputs on {len(targets)} case(s) were judged again under this "
        f"judge pin ({new.describe()}; the baseline was judged by "
        f"{old.describe() if old is not None else 'another pin'}): both sides are scored "
        "by one judge"
    )
    rebuilt = dataclasses.replace(baseline, config=config, cases=judged, summary=summarise(judged))
    return rebuilt, line


def _newly_errored(before: CaseResult, after: CaseResult) -> bool:
    errors = sum(sample.status == "error" for sample in before.outputs)
    return sum(sample.status == "error" for sample in after.outputs) > errors


def _judged_again(
    result: CaseResult, case: Case, grader: Grader, default_threshold: float
) -> CaseResult:
    names = set(judged_checks(case.expect))
    judges = [(name, judge) for name, judge in case.judges if name in names]
    outputs = [_sample_again(sample, case, judges, grader) for sample in result.outputs]
    threshold = case.min_pass_rate if case.min_pass_rate is not None else default_threshold
    again = aggregate(case, outputs, threshold)
    return dataclasses.replace(again, **{name: getattr(result, name) for name in KEPT})


def _sample_again(
    sample: SampleResult,
    case: Case,
    judges: Sequence[tuple[str, checks.Judge]],
    grader: Grader,
) -> SampleResult:
    """The sample's judged checks (the judge, graded or not, and the RAG metrics) asked
    again, each verdict with its score; the other checks stay the baseline's."""
    had = {c.check for c in sample.checks}
    asking = [(name, judge) for name, judge in judges if name in had]
    if sample.status == "error" or not asking:
        return sample
    try:
        contexts = tuple(Context.model_validate(context) for context in sample.contexts)
        subject = checks.Subject(
            sample.text or "", case.input, case=case, grader=grader, contexts=contexts
        )
        verdicts = {v.check: v for v in checks.evaluate(asking, subject)}
    except ValidationError:
        return dataclasses.replace(
            sample, status="error", reason="judge: the baseline's contexts are unreadable"
        )
    except SystemCallError as exc:
        return dataclasses.replace(sample, status="error", reason=redact(f"judge: {exc}"))
    rebuilt = [checked(verdicts[c.check]) if c.check in verdicts else c for c in sample.checks]
    failed = [check for check in rebuilt if not check.ok]
    return dataclasses.replace(
        sample,
        checks=rebuilt,
        status="fail" if failed else "pass",
        reason="; ".join(f"{check.check}: {check.reason}" for check in failed),
    )


def record_against_baseline(
    loaded: LoadedConfig, cases: Sequence[Case], *, only_missing: bool
) -> list[str]:
    """`record`: the configured baseline's outputs judged under the suite's pin when the
    baseline was judged by another, recorded so that a replayed `check` finds them;
    returns lines for the person who ran it."""
    path = loaded.baseline_path
    if path is None or not path.is_file():
        return []
    baseline = read_results(path)
    if not differs(baseline, loaded):
        return []
    again, line = rejudged(
        baseline, cases, loaded, "record", reuse_recorded=only_missing, strict=False
    )
    if line is None:
        return []
    lines = [f"recorded for `check`: {line.replace('this judge pin', 'the suite’s judge pin')}"]
    before = sum(s.status == "error" for case in baseline.cases for s in case.outputs)
    failed = sum(s.status == "error" for case in again.cases for s in case.outputs) - before
    if failed:
        lines.append(
            f"{failed} of the baseline's output(s) could not be judged under the new pin (an "
            "outage, or a verdict that is not one PASS or FAIL line): a replayed `check` "
            "stops on them; run `casegate record --only-missing` again"
        )
    return lines
