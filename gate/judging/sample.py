"""A sample judged, and a case judged from its samples: the verdicts every stage shares.

`judge_sample` applies a case's checks to one output (the run, the gate's replay, drift
and the held-out slice all judge through it); `aggregate` turns a case's samples into its
verdict under its pass-rate threshold, with the Wilson interval beside the rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from gate import checks, usercode
from gate.errors import ConfigError, MissingRecordingError, SystemCallError
from gate.judging.judge import Grader
from gate.judging.services import Services, require_pins
from gate.produce.answers import MISSING_LISTED, Answer, missing_message
from gate.produce.recordings import RecordingStore
from gate.results import EPSILON, CaseResult, CheckResult, SampleResult, Status
from gate.secrets import redact
from gate.stats import wilson
from gate.suite.cases import Case
from gate.suite.config import LoadedConfig, Mode


def raise_missing_judgements(grader: Grader | None, store: RecordingStore) -> None:
    if grader is not None and grader.missing:
        missing = {case_id: [0] for case_id in grader.missing}
        raise MissingRecordingError(missing_message(missing, store, "judge "))


def _declared_tools(loaded: LoadedConfig | None) -> dict[str, Any] | None:
    return None if loaded is None else checks.declared_tools(loaded.config.system.model_extra or {})


#: a sample whose checks the run left to the gate: never a pass, so a results file the gate
#: did not finish (an interrupted check) cannot read as a ship
LEFT_TO_GATE = "not judged by the run: the gate judges this output"


def judge_sample(
    case: Case,
    sample: int,
    answer: Answer,
    loaded: LoadedConfig | None = None,
    grader: Grader | None = None,
    services: Services | None = None,
    judges: Sequence[tuple[str, checks.Judge]] | None = None,
) -> SampleResult:
    """The sample judged by `judges` (default: every check); LEFT_TO_GATE says some were not."""
    if answer.output is None:
        return SampleResult(sample=sample, status="error", reason=answer.error or "no output")
    output = answer.output
    cost = output.cost_usd
    if cost is None and loaded is not None:
        cost = loaded.cost_of(output.model, output.input_tokens, output.output_tokens)
    usage: dict[str, Any] = {
        "text": output.text,
        "latency_ms": output.latency_ms,
        "input_tokens": output.input_tokens,
        "output_tokens": output.output_tokens,
        "cost_usd": cost,
        "model": output.model,
        "stop_reason": output.stop_reason,
        "tool_calls": [call.model_dump(exclude_none=True) for call in output.tool_calls],
        "contexts": [context.model_dump() for context in output.contexts],
        "captured_at": answer.captured_at,
    }
    if judges is None:
        judges = case.judges
    left = len(judges) < len(case.judges)
    verdicts: list[checks.Verdict] = []
    try:
        if judges:
            subject = checks.Subject.of(
                output,
                case,
                grader,
                cost_usd=cost,
                declared_tools=_declared_tools(loaded),
                services=services,
            )
            verdicts = checks.evaluate(judges, subject)
    except SystemCallError as exc:
        what = getattr(exc, "service", "judge")  # the judge, or a service (gate.produce.services)
        return SampleResult(sample=sample, status="error", reason=redact(f"{what}: {exc}"), **usage)
    failed = [v for v in verdicts if not v.ok]
    reason = "; ".join(f"{v.check}: {v.reason}" for v in failed)
    return SampleResult(
        sample=sample,
        status="fail" if failed or left else "pass",
        reason=reason or (LEFT_TO_GATE if left else ""),
        checks=[checked(v) for v in verdicts],
        **usage,
    )


def _case_checks(outputs: Sequence[SampleResult]) -> list[CheckResult]:
    """One line per check across samples: ok only if every judged sample passed it."""
    judged = [o for o in outputs if o.status != "error"]
    if len(judged) == 1:
        return judged[0].checks
    names = list(dict.fromkeys(c.check for o in judged for c in o.checks))
    merged = []
    for name in names:
        results = [c for o in judged for c in o.checks if c.check == name]
        failures = [c for c in results if not c.ok]
        reason = ""
        if failures:
            reason = f"failed {len(failures)}/{len(results)} samples: {failures[0].reason}"
        merged.append(
            CheckResult(check=name, ok=not failures, reason=reason, score=mean_score(results))
        )
    return merged


def checked(verdict: checks.Verdict) -> CheckResult:
    """A check's verdict as the results file keeps it."""
    return CheckResult(
        check=verdict.check, ok=verdict.ok, reason=verdict.reason, score=verdict.score
    )


def mean_score(results: Sequence[CheckResult]) -> float | None:
    """The mean of the samples' scores on one check (None: no sample has one)."""
    scores = [result.score for result in results if result.score is not None]
    # fsum keeps the mean of equal scores equal to them, and inside 0 to 1.
    return min(1.0, max(0.0, math.fsum(scores) / len(scores))) if scores else None


def aggregate(case: Case, outputs: list[SampleResult], min_pass_rate: float) -> CaseResult:
    # One pass over the samples: a replay aggregates every case of the suite.
    total = len(outputs)
    passes = 0
    errors: list[SampleResult] = []
    first_fail: SampleResult | None = None
    latencies: list[float] = []
    costs: list[float] = []
    input_tokens: list[int] = []
    output_tokens: list[int] = []
    for o in outputs:
        if o.status == "pass":
            passes += 1
        elif o.status == "error":
            errors.append(o)
        elif first_fail is None:
            first_fail = o
        if o.latency_ms is not None:
            latencies.append(o.latency_ms)
        if o.cost_usd is not None:
            costs.append(o.cost_usd)
        if o.input_tokens is not None:
            input_tokens.append(o.input_tokens)
        if o.output_tokens is not None:
            output_tokens.append(o.output_tokens)
    rate = passes / total if total else 0.0
    passed = not errors and rate + EPSILON >= min_pass_rate
    status: Status
    if errors:
        status, reason = "error", errors[0].reason
        if total > 1:
            reason = f"{len(errors)}/{total} samples errored: {reason}"
    elif passed:
        status, reason = "pass", ""
    else:
        status = "fail"
        assert first_fail is not None  # no error, not passed: a sample failed
        reason = first_fail.reason
        if total != 1:
            reason = f"{passes}/{total} samples passed; {reason}"
    cost = sum(costs) if costs else None
    low, high = wilson(passes, total)
    source = case.source
    return CaseResult(
        id=case.id,
        cluster=case.cluster,
        version=case.version,
        critical=case.is_critical,
        tags=case.tags,
        weight=case.weight,
        status=status,
        passed=passed,
        samples=total,
        passes=passes,
        pass_rate=round(rate, 6),
        ci_low=round(low, 6),
        ci_high=round(high, 6),
        flaky=0 < passes < total - len(errors),
        reason=reason,
        checks=_case_checks(outputs),
        outputs=outputs,
        latency_ms=round(sum(latencies) / len(latencies), 3) if latencies else None,
        input_tokens=sum(input_tokens) if input_tokens else None,
        output_tokens=sum(output_tokens) if output_tokens else None,
        cost_usd=round(cost, 8) if cost is not None else None,
        source=f"{source}:{case.line}" if source else None,
        expect_hash=case.expect_hash(),
        note=case.note,
        provenance=case.provenance,
        added=None if case.added is None else str(case.added),
    )


def make_grader(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    mode: Mode,
    store: RecordingStore,
    *,
    reuse_recorded: bool,
) -> Grader | None:
    """The pinned judge, when any case asks for one; a ConfigError when none is pinned."""
    require_pins(loaded, cases)  # and the services' pins: `validate` checks them here too
    judged = [case for case in cases if checks.uses_judge(case.expect)]
    if not judged:
        return None
    pin = loaded.config.judge
    if pin is None:
        raise ConfigError(
            [
                f"{case.source}:{case.line}: case {case.id!r} uses `judge` but "
                f"{loaded.path} pins no judge; add a `judge:` block (provider, model, "
                "prompt_version, temperature)"
                for case in judged[:MISSING_LISTED]
            ]
        )
    return Grader(pin, mode=mode, store=store, root=loaded.root, reuse_recorded=reuse_recorded)


def prepare_user_checks(loaded: LoadedConfig, cases: Sequence[Case]) -> None:
    """Import every custom check before judging; an import problem names its case's line."""
    problems: list[str] = []
    for case in cases:
        imported = True
        for spec in checks.custom_specs(case.expect):
            try:
                usercode.prepare_check(spec, loaded.root)
            except usercode.UserCodeError as exc:
                problems.append(f"{case.source}:{case.line}: case {case.id!r}: {exc}")
                imported = False
        if imported:  # a check's args are checked against the function it names
            problems.extend(
                f"{case.source}:{case.line}: case {case.id!r}: {problem}"
                for problem in checks.prepared_problems(case.expect)
            )
    if problems:
        raise ConfigError(list(dict.fromkeys(problems)))
