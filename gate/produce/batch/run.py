"""A run's planned requests answered by one provider batch (called from gate.pipeline.run).

Submit once, keep what was submitted on disk, wait, map each result back to its
request, store what record mode stores, and score. A run that finds a pending
batch of exactly its requests for the same config resumes it instead of paying
again; `casegate batch resume ID` names the batch to resume (`resuming`).
"""

from __future__ import annotations

import contextlib
import contextvars
import shlex
import sys
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from gate.errors import CasegateError, ConfigError, SystemCallError
from gate.outputs import Output
from gate.produce.batch import poll, state
from gate.produce.batch.adapters import for_system
from gate.produce.batch.api import BatchAPI
from gate.produce.batch.cost import batch_cost
from gate.produce.batch.mapping import map_results
from gate.produce.recordings import RecordingStore
from gate.results import SampleResult
from gate.secrets import redact
from gate.suite.cases import Case
from gate.suite.config import DEFAULT_CONFIG, LoadedConfig
from gate.systems.chat import conversation_for
from gate.systems.retry import Transient


class Planned(Protocol):
    """A planned request (gate.produce.answers.Request): one sample of one case, and its key."""

    @property
    def case(self) -> Case: ...

    @property
    def sample(self) -> int: ...

    @property
    def key(self) -> str: ...


R = TypeVar("R", bound=Planned)
Signature = frozenset[tuple[str, str, int]]

#: the batch `casegate batch resume ID` asked for, until a run takes it
_RESUMING: contextvars.ContextVar[state.BatchState | None] = contextvars.ContextVar(
    "casegate_batch_resuming", default=None
)
#: the batch price keys each loaded config was already warned about
_WARNED: weakref.WeakKeyDictionary[LoadedConfig, set[str]] = weakref.WeakKeyDictionary()


class SubmitError(CasegateError):
    """The batch could not be submitted (or its id kept)."""


def say(line: str) -> None:
    print(f"casegate: {redact(line)}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def resuming(batch: state.BatchState) -> Iterator[None]:
    """Within, the next batch run takes `batch` instead of submitting (or refuses)."""
    token = _RESUMING.set(batch)
    try:
        yield
    finally:
        _RESUMING.reset(token)


def resume_command(loaded: LoadedConfig, batch_id: str) -> str:
    config = "" if loaded.path == Path(DEFAULT_CONFIG) else f" -c {shlex.quote(str(loaded.path))}"
    return f"casegate batch resume {batch_id}{config}"


def answer_batch(
    loaded: LoadedConfig,
    system: Any,
    requests: Sequence[R],
    score: Callable[[R, Output | None, str | None], SampleResult],
    *,
    store: RecordingStore,
    mode: str,
    only_missing: bool,
    fingerprint: str,
    show_progress: bool,
    selection: dict[str, Any] | None,
) -> tuple[dict[R, SampleResult], bool]:
    """Every request scored (submitting, or resuming, one batch); and whether Ctrl-C
    stopped the wait, leaving the batch submitted."""
    api = for_system(system, str(loaded.path))
    resolved = loaded.resolved_system()
    scored: dict[R, SampleResult] = {}
    todo: list[tuple[R, dict[str, Any]]] = []
    for request in requests:
        recorded = store.get(request.case.id, request.key) if only_missing else None
        if recorded is not None:
            scored[request] = score(request, recorded, None)
            continue
        try:
            conversation = conversation_for(resolved, request.case.id, request.case.input)
        except SystemCallError as exc:
            scored[request] = score(request, None, redact(str(exc)))
            continue
        todo.append((request, system.request(conversation)))
    if not todo:
        return scored, False
    signature: Signature = frozenset((r.case.id, r.key, r.sample) for r, _ in todo)
    batch = _resumed(loaded, api, fingerprint, signature)
    if batch is None:
        batch = _submit(
            loaded,
            api,
            todo,
            fingerprint=fingerprint,
            mode=mode,
            only_missing=only_missing,
            selection=selection,
        )
    hint = resume_command(loaded, batch.batch_id)
    status = poll.wait(api, batch.batch_id, len(batch.requests), hint, show_progress=show_progress)
    if status is None:
        say(
            f"batch {batch.batch_id} is still running at {api.provider} and stays submitted: "
            f"pick its results up with `{hint}` (nothing is submitted twice)"
        )
        return scored, True
    try:
        lines = api.results(batch.batch_id, status)
    except (Transient, SystemCallError) as exc:
        raise poll.PollError(
            [f"{api.provider}: the results of batch {batch.batch_id} cannot be read: {exc}", hint]
        ) from None
    mapped = map_results(batch, lines, status)
    for note in mapped.notes:
        say(f"warning: {note}")
    by_entry = {(r.case.id, r.key, r.sample): r for r, _ in todo}
    missing_prices: set[str] = set()
    for cid, entry in batch.requests.items():
        request = by_entry[(entry.case, entry.key, entry.sample)]
        output, error = mapped.answers[cid]
        if output is not None:
            if mode == "record":
                store.put(
                    request.case.id,
                    request.key,
                    output,
                    system=resolved,
                    fingerprint=fingerprint,
                    sample=request.sample,
                )
            cost, missing = batch_cost(loaded, output)
            missing_prices.update(missing)
            if cost is not None:  # this run's figure; the recording stays a plain one
                output = output.model_copy(update={"cost_usd": cost})
        scored[request] = score(request, output, error)
    batch.status, batch.collected_at = "collected", state.now()
    state.write(loaded.root, batch)
    _warn_prices(loaded, missing_prices)
    return scored, False


def _resumed(
    loaded: LoadedConfig, api: BatchAPI, fingerprint: str, signature: Signature
) -> state.BatchState | None:
    required = _RESUMING.get()
    if required is not None:
        _RESUMING.set(None)  # a later round (`samples: auto`) submits as the run would have
        if required.signature() != signature:
            raise state.StateError(
                [
                    f"batch {required.batch_id} holds {len(required.requests)} request(s) that "
                    f"are not the {len(signature)} this config and its cases plan now: a case's "
                    "input or samples changed since it was submitted",
                    "restore the cases as they were, or run `casegate record` to submit the "
                    "suite as it is now (the old batch is still billed)",
                ]
            )
        found: state.BatchState | None = required
    else:
        found = state.pending(
            loaded.root, api.provider, loaded.config_hash(), fingerprint, signature
        )
    if found is not None:
        say(
            f"resuming batch {found.batch_id} ({api.provider}, submitted {found.submitted_at}, "
            f"{len(found.requests)} requests) instead of submitting the same requests again"
        )
    return found


def _submit(
    loaded: LoadedConfig,
    api: BatchAPI,
    todo: Sequence[tuple[Planned, dict[str, Any]]],
    *,
    fingerprint: str,
    mode: str,
    only_missing: bool,
    selection: dict[str, Any] | None,
) -> state.BatchState:
    if len(todo) > api.limit:
        raise ConfigError(
            f"{loaded.path}: {len(todo)} requests are more than one {api.provider} batch holds "
            f"({api.limit}): run the suite in parts with --case or --tag"
        )
    entries = {
        state.custom_id(index, r.key): state.Entry(case=r.case.id, key=r.key, sample=r.sample)
        for index, (r, _) in enumerate(todo)
    }
    bodies = [(state.custom_id(index, r.key), body) for index, (r, body) in enumerate(todo)]
    try:
        batch_id = api.submit(bodies)
    except (Transient, SystemCallError) as exc:
        raise SubmitError(
            [
                f"{api.provider}: the batch was not submitted: {exc}",
                "fix the cause and run again (if the submission timed out, the provider may "
                "have it: check its console first, so as not to pay twice)",
            ]
        ) from None
    if not state.BATCH_ID.fullmatch(batch_id):
        raise SubmitError(
            f"{api.provider} answered the submission with a batch id casegate cannot keep "
            f"({batch_id[:80]!r}); the batch may be running: check the provider's console"
        )
    say(
        f"submitted batch {batch_id} to {api.provider} ({len(bodies)} requests); waiting for "
        f"it (Ctrl-C leaves it running: `{resume_command(loaded, batch_id)}`)"
    )
    submitted = state.BatchState(
        provider=api.provider,
        batch_id=batch_id,
        suite=loaded.config.suite,
        config_hash=loaded.config_hash(),
        fingerprint=fingerprint,
        mode="record" if mode == "record" else "live",
        only_missing=only_missing,
        overrides=list(loaded.overrides),
        selection=selection,
        submitted_at=state.now(),
        requests=entries,
    )
    state.write(loaded.root, submitted)
    return submitted


def _warn_prices(loaded: LoadedConfig, missing: set[str]) -> None:
    warned = _WARNED.setdefault(loaded, set())
    new = sorted(missing - warned)
    if new:
        warned.update(new)
        say(
            f"warning: batch answers were costed at the normal price: {', '.join(new)} "
            "not set; add the provider's batch price (per million tokens) to `pricing:`"
        )
