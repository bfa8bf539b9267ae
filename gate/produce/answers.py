"""A run's requests and their answers (gate.pipeline.run judges them): one request per sample
of a case, answered from the recordings in replay, or by one call to the system, stored as it
arrives when recording."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from gate import systems
from gate.errors import MissingRecordingError, SystemCallError
from gate.outputs import Output
from gate.produce.recordings import RecordingStore, request_key
from gate.results import CaseResult, SampleResult
from gate.secrets import redact
from gate.suite.cases import Case
from gate.suite.config import LoadedConfig, Mode

MISSING_LISTED = 10


# Identity, not value, is what tells two requests apart (a case holds dicts).
@dataclass(frozen=True, slots=True, eq=False)
class Request:
    case: Case
    sample: int
    key: str


@dataclass(slots=True)
class Answer:
    """An output, or the reason there is none (the case is then an error)."""

    output: Output | None
    error: str | None = None
    #: in replay, when the recording was captured
    captured_at: str | None = None


def samples_for(case: Case, loaded: LoadedConfig) -> int | None:
    """The case's fixed sample count, or None when it is sampled adaptively."""
    configured = loaded.config.samples
    return case.samples or (None if configured == "auto" else configured)


def requests_for(case: Case, fingerprint: str, samples: range) -> list[Request]:
    return [Request(case, s, request_key(fingerprint, case.key_input, s)) for s in samples]


def plan(
    cases: Sequence[Case],
    loaded: LoadedConfig,
    fingerprint: str,
    counts: Mapping[str, int] | None = None,
) -> list[Request]:
    """Every request of a run: each case's fixed count, or `counts` (a baseline's)."""
    return [
        request
        for case in cases
        for request in requests_for(
            case,
            fingerprint,
            range(counts[case.id] if counts is not None else samples_for(case, loaded) or 0),
        )
    ]


def recorded_counts(
    cases: Sequence[Case],
    loaded: LoadedConfig,
    fingerprint: str,
    store: RecordingStore,
    wanted: Mapping[str, int],
) -> dict[str, int]:
    """What a replayed baseline can estimate each case from: `wanted`, or for a case of
    fixed count whose recordings stop short of it, the samples recorded in a row (never
    fewer than the run's count, so the replay still names those missing).

    A fixed count is drawn without looking at outcomes, so any prefix of it is unbiased;
    a case under `samples: auto` was recorded adaptively and keeps the strict count.
    """
    counts = dict(wanted)
    for case in cases:
        fixed = samples_for(case, loaded)
        if fixed is None or wanted[case.id] <= fixed:
            continue
        present = store.entries(case.id)
        keys = [r.key for r in requests_for(case, fingerprint, range(wanted[case.id]))]
        in_a_row = next((i for i, key in enumerate(keys) if key not in present), len(keys))
        counts[case.id] = max(in_a_row, min(fixed, wanted[case.id]))
    return counts


def short_estimates(wanted: Mapping[str, int], counts: Mapping[str, int]) -> list[str]:
    """What a replayed baseline says when some cases are estimated from fewer samples."""
    short = sorted(case_id for case_id in counts if counts[case_id] < wanted[case_id])
    if not short:
        return []
    shown = ", ".join(short[:MISSING_LISTED]) + (
        f" and {len(short) - MISSING_LISTED} more" if len(short) > MISSING_LISTED else ""
    )
    fewest = min(counts[case_id] for case_id in short)
    return [
        f"{len(short)} case(s) estimated from the {fewest}+ samples recorded instead of "
        f"{max(wanted[case_id] for case_id in short)} ({shown}): a larger baseline catches "
        "more of a critical drop; record it with `casegate baseline --mode record`"
    ]


def replay(
    cases: Sequence[Case],
    requests: Sequence[Request],
    store: RecordingStore,
    judge: Callable[[Case, list[SampleResult]], CaseResult],
    score: Callable[[Request, Answer], SampleResult],
) -> list[CaseResult]:
    """Judge each case as soon as its recordings are read; fail if any are missing.

    Every missing recording is collected before failing, so one run names them all.
    """
    by_case: dict[str, list[Request]] = {}
    for request in requests:
        by_case.setdefault(request.case.id, []).append(request)
    results: list[CaseResult] = []
    missing: dict[str, list[int]] = {}
    for case in cases:
        group = by_case[case.id]
        outputs = store.get_many_dated(case.id, [request.key for request in group])
        absent = [r.sample for r, (output, _) in zip(group, outputs, strict=True) if output is None]
        if absent:
            missing[case.id] = absent
        elif not missing:
            samples = [
                score(r, Answer(o, captured_at=at))
                for r, (o, at) in zip(group, outputs, strict=True)
            ]
            results.append(judge(case, samples))
    if missing:
        raise MissingRecordingError(missing_message(missing, store, cases=cases))
    return results


def missing_message(
    missing: dict[str, list[int]],
    store: RecordingStore,
    what: str = "",
    cases: Sequence[Case] = (),
) -> list[str]:
    """Why a replay stops: the cases without a recording, and how to record them. Of
    `cases`, those that read input files are named with them: an edited file is a new
    request, whose old recording no longer matches."""
    ids = sorted(missing)
    shown = ", ".join(ids[:MISSING_LISTED]) + (
        f" and {len(ids) - MISSING_LISTED} more" if len(ids) > MISSING_LISTED else ""
    )
    samples = sum(len(v) for v in missing.values())
    lines = [
        f"no {what}recording for {len(ids)} case(s) ({samples} sample(s)) in {store.folder}: "
        f"{shown}",
        "the case is new, or its input, the prompt, model or params changed since recording: "
        "run `casegate record --for-baseline --only-missing` (with the provider's key set, "
        "for a model) and commit the recordings: it records as many samples as the baseline "
        "replays, which a check's own replay needs too, and writes no baseline",
    ]
    reading = [case for case in cases if case.id in missing and case.input_files]
    if reading:
        named = "; ".join(
            f"{case.id}: {', '.join(case.input_files)}" for case in reading[:MISSING_LISTED]
        )
        lines.append(
            f"{len(reading)} of them read input files, whose contents are part of the "
            f"recording key ({named}): an edited input file needs a new recording, as an "
            "edited input does"
        )
    return lines


def call_live(
    requests: Sequence[Request],
    work: Callable[[Request], SampleResult],
    *,
    concurrency: int,
    progress: Any = None,
) -> tuple[dict[Request, SampleResult], bool]:
    """Run `work` for every request, up to `concurrency` at once.

    Returns what finished and whether Ctrl-C stopped it. Calls already in flight
    when Ctrl-C arrives are not waited for here; their worker threads still
    finish (and, when recording, still store what they paid for) before exit.
    """
    done: dict[Request, SampleResult] = {}
    pool = ThreadPoolExecutor(max_workers=concurrency)
    interrupted = False
    try:
        futures = {pool.submit(work, request): request for request in requests}
        for future in as_completed(futures):
            result = done[futures[future]] = future.result()
            if progress is not None:
                progress.update(errors=int(result.status == "error"))
    except KeyboardInterrupt:
        interrupted = True
        _abandon_on_second_interrupt()
    finally:
        pool.shutdown(wait=not interrupted, cancel_futures=True)
    return done, interrupted


def _abandon_on_second_interrupt() -> None:
    """A second Ctrl-C leaves at once: calls in flight are abandoned, quietly."""

    def leave(signum: int, frame: Any) -> None:
        sys.stderr.write("casegate: interrupted again: calls in flight abandoned\n")
        sys.stderr.flush()
        os._exit(130)

    with contextlib.suppress(ValueError):  # not the main thread: the first handler stays
        signal.signal(signal.SIGINT, leave)


def ask(system: systems.System, request: Request) -> Answer:
    """One call; every failure becomes that request's error, never the run's end."""
    try:
        return Answer(system.complete(request.case.id, request.case.system_input))
    except SystemCallError as exc:
        return Answer(None, redact(str(exc)) or type(exc).__name__)
    except Exception as exc:  # a provider bug is that case's error, not the run's end
        return Answer(None, redact(f"{type(exc).__name__}: {exc}"))
    except SystemExit as exc:  # the user's code may not end the run, let alone with a code
        return Answer(None, f"the system called sys.exit({exc.code!r})")


def answer_for(
    system: systems.System,
    request: Request,
    store: RecordingStore,
    *,
    mode: Mode,
    only_missing: bool,
    resolved: dict[str, Any],
    fingerprint: str,
) -> Answer:
    """One request's answer: the recorded one under `--only-missing`, else the system's,
    stored the moment it arrives in record mode (an interrupted run keeps what it paid for)."""
    recorded = store.get(request.case.id, request.key) if only_missing else None
    if recorded is not None:
        return Answer(recorded)
    answer = ask(system, request)
    if mode == "record" and answer.output is not None:
        store.put(
            request.case.id,
            request.key,
            answer.output,
            system=resolved,
            fingerprint=fingerprint,
            sample=request.sample,
        )
    return answer
