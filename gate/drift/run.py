"""Drift: the suite run live, each case compared with its recording.

Replayed recordings grow less true every week: a provider can change a model
under the same name and every replayed check stays green. `measure` runs every
sample live and judges both outputs — the recorded one and the live one — with
today's checks, so a difference in verdict is the system's and not the checks'.
Per case it reports verdict flips, changed outputs (text or tool calls), a
changed model string or system fingerprint, and the recording's age. A case
with no recording is "never recorded", not a flip; a live call that fails is an
error, never "no drift". With `refresh`, the live responses of the cases that
drifted replace their recordings (and only theirs), for a person to review.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from gate import __version__
from gate.drift.age import age_days
from gate.drift.report import (
    DIFF_CHARS,
    DIFF_LINES,
    CaseDrift,
    DriftReport,
    Flip,
    SampleDrift,
    build,
)
from gate.errors import CasegateError
from gate.judging.live import start_live
from gate.judging.sample import aggregate, judge_sample, make_grader, prepare_user_checks
from gate.judging.services import build as build_services
from gate.outputs import Context, Output, ToolCall
from gate.produce.answers import Answer, Request, ask, call_live, requests_for, samples_for
from gate.produce.progress import Progress
from gate.produce.recordings import RecordingStore, system_fingerprint
from gate.reporting.diffs import diff_texts
from gate.results import CaseResult, SampleResult
from gate.suite.cases import Case
from gate.suite.config import LoadedConfig, Mode

#: a run shows a progress bar (or CI log lines) from this many calls, as `run` does
PROGRESS_FROM = 20


@dataclass(slots=True)
class _Pair:
    """One sample: what was recorded (if anything) and what the system answers now."""

    request: Request
    recorded: Output | None
    captured_at: str | None
    live: Answer | None = None
    live_result: SampleResult | None = None
    recorded_result: SampleResult | None = None


def measure(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    *,
    refresh: bool = False,
    show_progress: bool = True,
    now: dt.datetime | None = None,
) -> DriftReport:
    """Run `cases` live and compare each with its recording (see the module's docstring)."""
    if not cases:
        raise CasegateError("no case is selected: there is nothing to measure")
    config = loaded.config
    resolved = loaded.resolved_system()
    fingerprint = system_fingerprint(resolved)
    store = RecordingStore(loaded.recordings_dir)
    ordered = sorted(cases, key=lambda case: case.id)
    # The recorded side is read first: a malformed recording stops the run before a paid call.
    by_case: dict[str, list[_Pair]] = {}
    for case in ordered:
        count = samples_for(case, loaded) or config.adaptive.start
        asked = requests_for(case, fingerprint, range(count))
        dated = store.get_many_dated(case.id, [request.key for request in asked])
        by_case[case.id] = [_Pair(r, o, at) for r, (o, at) in zip(asked, dated, strict=True)]
    pairs = [pair for group in by_case.values() for pair in group]
    if not any(pair.recorded is not None for pair in pairs):
        raise CasegateError(
            f"no selected case has a recording in {store.folder} to compare with: record "
            "them first (`casegate record`), then measure drift"
        )
    # Recorded outputs are judged from recorded verdicts only; the live ones by the judge
    # and services live, reusing a verdict already recorded for the very same output.
    replayed = make_grader(loaded, cases, "replay", store, reuse_recorded=False)
    replayed_services = build_services(loaded, cases, "replay", store)
    live_mode: Mode = "record" if refresh else "live"
    grader = make_grader(loaded, cases, live_mode, store, reuse_recorded=True)
    services = build_services(loaded, cases, live_mode, store, reuse_recorded=True)
    prepare_user_checks(loaded, cases)
    system = start_live(loaded, cases, resolved, grader, services)

    by_request = {pair.request: pair for pair in pairs}

    def work(request: Request) -> SampleResult:
        pair = by_request[request]
        pair.live = ask(system, request)
        return judge_sample(request.case, request.sample, pair.live, loaded, grader, services)

    requests = [pair.request for pair in pairs]
    progress = None
    if show_progress and len(requests) >= PROGRESS_FROM:
        progress = Progress(len(requests), "drift", stream=sys.stderr)
    try:
        scored, interrupted = call_live(
            requests, work, concurrency=config.concurrency, progress=progress
        )
    finally:
        if progress is not None:
            progress.close()
    for pair in pairs:
        pair.live_result = scored.get(pair.request)
        if pair.recorded is not None:
            answer = Answer(pair.recorded, captured_at=pair.captured_at)
            case, sample = pair.request.case, pair.request.sample
            pair.recorded_result = judge_sample(
                case, sample, answer, loaded, replayed, replayed_services
            )

    now = now or dt.datetime.now(dt.UTC)
    drifts = []
    for case in ordered:
        group = by_case[case.id]
        if all(pair.live_result is not None for pair in group):
            drifts.append(_case_drift(case, group, loaded, now))
    if refresh and not interrupted:
        _refresh(drifts, pairs, store, resolved, fingerprint)
    head = {
        "suite": config.suite,
        "system": config.system.name,
        "model": config.system.model,
        "created_at": now.isoformat(timespec="seconds"),
        "casegate_version": __version__,
        "max_flips": config.drift.max_flips,
        "max_age_days": loaded.recordings_max_age_days,
        "interrupted": interrupted,
    }
    return build(head, drifts)


def _threshold(case: Case, loaded: LoadedConfig) -> float:
    return case.min_pass_rate if case.min_pass_rate is not None else loaded.config.min_pass_rate


def _case_drift(
    case: Case, group: list[_Pair], loaded: LoadedConfig, now: dt.datetime
) -> CaseDrift:
    threshold = _threshold(case, loaded)
    live = aggregate(case, [pair.live_result for pair in group if pair.live_result], threshold)
    recorded: CaseResult | None = None
    if all(pair.recorded_result is not None for pair in group):
        samples = [pair.recorded_result for pair in group if pair.recorded_result]
        recorded = aggregate(case, samples, threshold)
    flip: Flip | None = None
    judged = ("pass", "fail")
    if recorded is not None and recorded.status in judged and live.status in judged:
        if recorded.passed and not live.passed:
            flip = "pass_to_fail"
        elif live.passed and not recorded.passed:
            flip = "fail_to_pass"
    samples_drift = [_sample_drift(pair, now) for pair in group]
    dated = [s for s in samples_drift if s.age_days is not None]
    oldest = max(dated, key=lambda s: s.age_days or 0, default=None)
    return CaseDrift(
        id=case.id,
        critical=case.is_critical,
        source=f"{case.source}:{case.line}" if case.source else None,
        recorded=recorded.status if recorded is not None else None,
        live=live.status,
        flip=flip,
        output_changed=any(s.output_changed for s in samples_drift),
        model_changed=any(_moved(s.recorded_model, s.live_model) for s in samples_drift),
        fingerprint_changed=any(
            _moved(s.recorded_fingerprint, s.live_fingerprint) for s in samples_drift
        ),
        captured_at=oldest.captured_at if oldest else None,
        age_days=oldest.age_days if oldest else None,
        recorded_reason=recorded.reason if recorded is not None else "",
        live_reason=live.reason,
        samples=samples_drift,
    )


def _moved(before: str | None, after: str | None) -> bool:
    """A change only when both sides said what they were: unknown is not different."""
    return before is not None and after is not None and before != after


def _sample_drift(pair: _Pair, now: dt.datetime) -> SampleDrift:
    assert pair.live_result is not None
    assert pair.live is not None
    recorded, output = pair.recorded, pair.live.output
    result = pair.recorded_result
    drift = SampleDrift(
        sample=pair.request.sample,
        recorded=result.status if result is not None else None,
        live=pair.live_result.status,
        recorded_reason=result.reason if result is not None else "",
        live_reason=pair.live_result.reason,
        recorded_model=recorded.model if recorded is not None else None,
        live_model=output.model if output is not None else None,
        recorded_fingerprint=recorded.system_fingerprint if recorded is not None else None,
        live_fingerprint=output.system_fingerprint if output is not None else None,
        captured_at=pair.captured_at,
        age_days=age_days(pair.captured_at, now),
    )
    if recorded is not None and output is not None:
        # What the system retrieved is part of its answer: a changed ranking is drift.
        drift.output_changed = (recorded.text, recorded.tool_calls, recorded.contexts) != (
            output.text,
            output.tool_calls,
            output.contexts,
        )
        if drift.output_changed:
            drift.diff = _diff(recorded, output)
    return drift


#: how much of a retrieved passage a drift diff shows
PASSAGE_CHARS = 120


def _passage(context: Context) -> str:
    text = (
        context.text if len(context.text) <= PASSAGE_CHARS else context.text[:PASSAGE_CHARS] + "…"
    )
    return f"{context.id}: {text}" if context.id is not None else text


def _diff(recorded: Output, live: Output) -> list[str]:
    """Recorded → live, by word (by line for JSON), then the tool calls if they differ;
    kept short: the report shows what changed, `casegate show` has whole outputs."""
    lines = diff_texts(recorded.text, live.text).lines()
    if recorded.tool_calls != live.tool_calls:
        lines += [f"- tool call: {_call(c)}" for c in recorded.tool_calls] or ["- tool calls: none"]
        lines += [f"+ tool call: {_call(c)}" for c in live.tool_calls] or ["+ tool calls: none"]
    if recorded.contexts != live.contexts:
        lines += [f"- context: {_passage(c)}" for c in recorded.contexts] or ["- contexts: none"]
        lines += [f"+ context: {_passage(c)}" for c in live.contexts] or ["+ contexts: none"]
    kept: list[str] = []
    used = 0
    for line in lines[:DIFF_LINES]:
        line = line if len(line) <= 400 else line[:399] + "…"
        if used + len(line) > DIFF_CHARS:
            break
        kept.append(line)
        used += len(line) + 1
    if len(kept) < len(lines):
        kept.append(f"@@ {len(lines) - len(kept)} more line(s) not kept @@")
    return kept


def _call(call: ToolCall) -> str:
    return json.dumps(call.model_dump(exclude_none=True), sort_keys=True, ensure_ascii=False)


def _refresh(
    drifts: list[CaseDrift],
    pairs: list[_Pair],
    store: RecordingStore,
    system: dict[str, object],
    fingerprint: str,
) -> None:
    """Re-record every sample of each drifted case measured without an error; no other."""
    chosen = {case.id for case in drifts if case.drifted and case.live != "error"}
    for pair in pairs:
        case_id = pair.request.case.id
        if case_id not in chosen or pair.live is None or pair.live.output is None:
            continue
        store.put(
            case_id,
            pair.request.key,
            pair.live.output,
            system=system,
            fingerprint=fingerprint,
            sample=pair.request.sample,
        )
    for case in drifts:
        case.refreshed = case.id in chosen
