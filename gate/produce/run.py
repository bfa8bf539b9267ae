"""A run: every sample of every case through the system (or its recordings), judged.

Replay resolves every request before judging anything, so a missing recording
fails the run at once and names every case that lacks one.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gate import __version__, heap
from gate.deciding.noise import adaptive
from gate.deciding.noise.stats import wilson
from gate.errors import ConfigError, MissingRecordingError, SystemCallError
from gate.judging import checks
from gate.judging.judge import Grader
from gate.produce import systems
from gate.produce.answers import (
    MISSING_LISTED,
    Answer,
    Request,
    answer_for,
    call_live,
    missing_message,
    plan,
    recorded_counts,
    replay,
    requests_for,
    samples_for,
    short_estimates,
)
from gate.produce.progress import progress_bar
from gate.produce.recordings import RecordingStore, system_fingerprint
from gate.produce.services.suite import Services, require_pins
from gate.produce.services.suite import build as build_services
from gate.results import (
    EPSILON,
    CaseResult,
    CheckResult,
    RunResults,
    SampleResult,
    Status,
    read_results,
    summarise,
)
from gate.secrets import redact
from gate.suite import usercode
from gate.suite.cases import Case
from gate.suite.config import LoadedConfig, Mode


def raise_missing_judgements(grader: Grader | None, store: RecordingStore) -> None:
    if grader is not None and grader.missing:
        missing = {case_id: [0] for case_id in grader.missing}
        raise MissingRecordingError(missing_message(missing, store, "judge "))


def sample_adaptively(
    ordered: Sequence[Case],
    loaded: LoadedConfig,
    fingerprint: str,
    resolve: Callable[[Sequence[Request]], tuple[dict[Request, SampleResult], bool]],
    judge: Callable[[Case, list[SampleResult]], CaseResult],
    baseline: RunResults | None = None,
    estimate: Mapping[str, int] | None = None,
) -> tuple[list[CaseResult], bool]:
    """Rounds of samples until every adaptive case's verdict is settled
    (gate.deciding.noise.adaptive).

    `estimate` (a baseline): the samples of each case, in one round.
    """
    config = loaded.config
    baseline_path = loaded.baseline_path
    if baseline is None and baseline_path and baseline_path.is_file() and estimate is None:
        baseline = read_results(baseline_path)
    refs = adaptive.references(baseline)
    fixed = {case.id: case.samples for case in ordered if case.samples}
    by_id = {case.id: case for case in ordered}
    done: dict[str, list[SampleResult]] = {case.id: [] for case in ordered}
    wanted = (
        dict(estimate)
        if estimate is not None
        else {case.id: fixed.get(case.id) or config.adaptive.start for case in ordered}
    )
    unfinished: set[str] = set()
    interrupted = False
    while wanted and not interrupted:
        batch = [
            request
            for case_id, extra in wanted.items()
            for request in requests_for(
                by_id[case_id], fingerprint, range(len(done[case_id]), len(done[case_id]) + extra)
            )
        ]
        scored, interrupted = resolve(batch)
        for request in batch:
            if request in scored:
                done[request.case.id].append(scored[request])
            else:
                unfinished.add(request.case.id)
        if estimate is not None:
            break  # a baseline is estimated at a fixed count, never stopped early
        outcomes = {
            case_id: [s.status == "pass" for s in sorted(samples, key=lambda s: s.sample)]
            for case_id, samples in done.items()
            if case_id not in fixed
        }
        wanted = adaptive.plan_round(outcomes, refs, config.adaptive, config.gate)
    results = [
        judge(case, sorted(done[case.id], key=lambda sample: sample.sample))
        for case in ordered
        if done[case.id] and case.id not in unfinished
    ]
    return results, interrupted


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
        checks=[CheckResult(check=v.check, ok=v.ok, reason=v.reason) for v in verdicts],
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
        merged.append(CheckResult(check=name, ok=not failures, reason=reason))
    return merged


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


def preflight(loaded: LoadedConfig, cases: Sequence[Case], system: dict[str, Any]) -> None:
    """Everything that would fail per request, found before the first paid call."""
    from gate.suite.templates import check_templates  # Jinja2: only a run that makes calls loads it

    check_templates(loaded, cases)
    problems = systems.preflight(system, cases)
    if checks.declared_tools(system) is None:
        problems.extend(
            f"{case.source}:{case.line}: case {case.id!r} uses tool_args_valid, but the system "
            "declares no tools: add `tools:` with their `parameters` to the system, or use "
            "tool_args_schema"
            for case in cases
            if "tool_args_valid" in case.expect
        )
    if problems:
        raise ConfigError(problems)


def start_live(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    resolved: dict[str, Any],
    grader: Grader | None,
    services: Any,
) -> systems.System:
    """The system (and judge, services) ready to call: problems found before a paid call."""
    preflight(loaded, cases, resolved)
    system = systems.create(resolved, loaded.root, {"config": loaded})
    if grader is not None:
        grader.prepare()
    if services is not None:
        services.prepare()
    return system


def execute(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    mode: Mode,
    *,
    only_missing: bool = False,
    show_progress: bool = True,
    reference: RunResults | None = None,
    selection: dict[str, Any] | None = None,
    estimate: bool = False,
    gate_judges: bool = False,
) -> RunResults:
    """Run the suite in `mode`; returns results with one entry per case, sorted by id.

    `reference` is the baseline `samples: auto` stops against (default: the config's);
    `estimate` runs a baseline: every case at the count it is estimated from
    (gate.suite.config.Config.estimate_samples), never stopped early.
    `gate_judges`: the supervised run of `casegate check`, whose gate judges every output
    itself (gate.deciding.recheck): only what the gate cannot judge is judged here
    (checks.run_judged), and the cases `samples: auto` stops by their verdicts.
    """
    config = loaded.config
    resolved = loaded.resolved_system()
    fingerprint = system_fingerprint(resolved)
    store = RecordingStore(loaded.recordings_dir)
    counts = None
    if estimate:
        # A baseline is estimated, not tested (gate.suite.config.Config.estimate_samples).
        counts = {c.id: config.estimate_samples(samples_for(c, loaded)) for c in cases}
        if mode == "replay":
            wanted, counts = counts, recorded_counts(cases, loaded, fingerprint, store, counts)
            for line in short_estimates(wanted, counts):
                print(f"casegate: note: {line}", file=sys.stderr)
    requests = plan(cases, loaded, fingerprint, counts)
    grader = make_grader(
        loaded, cases, mode, store, reuse_recorded=mode == "record" and only_missing
    )
    services = build_services(
        loaded, cases, mode, store, reuse_recorded=mode == "record" and only_missing
    )

    ordered = sorted(cases, key=lambda c: c.id)
    prepare_user_checks(loaded, cases)

    # What this run judges of each case the gate judges (absent: every check).
    shares = {
        case.id: [(name, judge) for name, judge in case.judges if name in kept]
        for case in (cases if gate_judges else ())
        if samples_for(case, loaded) is not None
        for kept in [checks.run_judged(case.expect, replay=mode == "replay")]
    }

    def score(request: Request, answer: Answer) -> SampleResult:
        case = request.case
        return judge_sample(
            case, request.sample, answer, loaded, grader, services, shares.get(case.id)
        )

    def judge(case: Case, samples: list[SampleResult]) -> CaseResult:
        threshold = case.min_pass_rate
        if threshold is None:
            threshold = config.min_pass_rate
        return aggregate(case, samples, threshold)

    system: systems.System | None = None
    if mode != "replay":
        system = start_live(loaded, cases, resolved, grader, services)

    def work(request: Request) -> SampleResult:
        assert system is not None
        answer = answer_for(
            system,
            request,
            store,
            mode=mode,
            only_missing=only_missing,
            resolved=resolved,
            fingerprint=fingerprint,
        )
        return score(request, answer)

    def resolve(batch: Sequence[Request]) -> tuple[dict[Request, SampleResult], bool]:
        """Every request answered: from recordings in replay, else by the system."""
        if mode == "replay":
            scored: dict[Request, SampleResult] = {}
            missing: dict[str, list[int]] = {}
            by_case: dict[str, list[Request]] = {}
            for request in batch:
                by_case.setdefault(request.case.id, []).append(request)
            for case_id, group in by_case.items():
                outputs = store.get_many_dated(case_id, [request.key for request in group])
                for request, (output, captured_at) in zip(group, outputs, strict=True):
                    if output is None:
                        missing.setdefault(case_id, []).append(request.sample)
                    else:
                        scored[request] = score(request, Answer(output, captured_at=captured_at))
            if missing:
                raise MissingRecordingError(missing_message(missing, store))
            raise_missing_judgements(grader, store)
            if services is not None:
                services.raise_missing(store)
            return scored, False
        if (
            resolved.get("mode") == "batch"
        ):  # one provider batch answers them all (gate.produce.batch)
            from gate.produce.batch.run import answer_batch

            return answer_batch(
                loaded, system, batch, lambda r, o, e: score(r, Answer(o, e)), store=store,
                mode=mode, only_missing=only_missing, fingerprint=fingerprint,
                show_progress=show_progress, selection=selection,
            )  # fmt: skip
        progress = progress_bar(len(batch), show_progress, mode)
        try:
            return call_live(batch, work, concurrency=config.concurrency, progress=progress)
        finally:
            if progress is not None:
                progress.close()

    interrupted = False
    if any(samples_for(case, loaded) is None for case in cases):
        results, interrupted = sample_adaptively(
            ordered, loaded, fingerprint, resolve, judge, reference, counts
        )
    elif mode == "replay":
        # Streams: each case is judged as its recordings are read (100,000-case suites).
        with heap.bulk():
            results = replay(ordered, requests, store, judge, score)
        raise_missing_judgements(grader, store)
        if services is not None:
            services.raise_missing(store)
    else:
        scored, interrupted = resolve(requests)
        by_case: dict[str, list[SampleResult]] = {}
        for request in requests:
            if request in scored:
                by_case.setdefault(request.case.id, []).append(scored[request])
        results = [
            judge(case, by_case[case.id])
            for case in ordered
            if len(by_case.get(case.id, ()))
            == (counts[case.id] if counts is not None else samples_for(case, loaded))
        ]
    return RunResults(
        suite=config.suite,
        system=config.system.name,
        config=loaded.as_dict(),
        config_hash=loaded.config_hash(),
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        casegate_version=__version__,
        mode=mode,
        overrides=loaded.overrides,
        selection=selection,
        interrupted=interrupted,
        summary=summarise(results),
        cases=results,
    )
