"""`casegate run`: every sample of every case through the system (or its recordings),
judged, and under `samples: auto` sampled in rounds until each verdict is settled.

Replay resolves every request before judging anything, so a missing recording
fails the run at once and names every case that lacks one.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gate import __version__, checks, heap, systems
from gate.deciding.noise import adaptive
from gate.errors import MissingRecordingError
from gate.judging import consistency
from gate.judging.live import start_live
from gate.judging.sample import (
    aggregate,
    judge_sample,
    make_grader,
    prepare_user_checks,
    raise_missing_judgements,
)
from gate.judging.services import build as build_services
from gate.produce.answers import (
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
from gate.results import CaseResult, RunResults, SampleResult, read_results, summarise
from gate.suite.cases import Case
from gate.suite.config import LoadedConfig, Mode


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
                cases_missing = [by_case[case_id][0].case for case_id in missing]
                raise MissingRecordingError(missing_message(missing, store, cases=cases_missing))
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
    run = RunResults(
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
    if gate_judges or interrupted:  # the gate asks the judge itself (gate.pipeline.check)
        return run
    return consistency.asked_again(
        run, cases, loaded, mode, store=store, reuse_recorded=mode == "record" and only_missing
    )


def adopt_recorded(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    results: RunResults,
    source: Path,
    *,
    every_entry: bool = False,
) -> str:
    """Write into the suite's recordings what a supervised run recorded into its own folder
    (copied out to `source`) and the gate judged: dated, stamped and sealed by this
    process, never as the run wrote them. One line for the log; ResultsError when the run's
    recordings are not the answers it reported."""
    from gate.produce.recordings import adopt_run
    from gate.produce.seal import KEY_ENV, held

    inputs = {case.id: case.key_input for case in cases}
    store = RecordingStore(loaded.recordings_dir)
    system = loaded.resolved_system()
    written = adopt_run(source, store, system, inputs, results.cases, every_entry=every_entry)
    key = held()
    if key is None:
        return (
            f"recordings: {written} answer(s) written by the gate, not sealed ({KEY_ENV} is "
            "not set): a review cannot tell them from recordings made by hand"
        )
    return (
        f"recordings: {written} answer(s) written by the gate and sealed with {KEY_ENV} "
        f"(key id {key.key_id})"
    )
