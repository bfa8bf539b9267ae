"""Waiting for a batch: polls 1 s apart, doubling to a minute, with a progress display.

A batch takes minutes to hours. A poll that fails for a transient reason (a 5xx, a
timeout) is retried on the same schedule; only POLL_FAILURES of them in a row end the
wait, and the batch stays submitted for `casegate batch resume`. Ctrl-C ends the
wait the same way. The sleeper and clock are injectable: tests never sleep.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gate.errors import CasegateError, SystemCallError
from gate.produce.batch.api import BatchAPI, Status
from gate.produce.progress import Progress
from gate.systems.retry import Transient

FIRST_S = 1.0
LONGEST_S = 60.0
#: transient poll failures in a row that end the wait (about an hour at the longest pause)
POLL_FAILURES = 60


@dataclass(slots=True)
class Waiter:
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    #: every pause taken, for tests and the curious
    pauses: list[float] = field(default_factory=list)

    def pause(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.sleep(seconds)


#: what a run waits with; tests swap it for one whose `sleep` returns at once
WAITER = Waiter()


class PollError(CasegateError):
    """The provider stopped answering polls; the batch is left submitted."""


def wait(
    api: BatchAPI,
    batch_id: str,
    total: int,
    resume_hint: str,
    *,
    show_progress: bool,
    waiter: Waiter | None = None,
) -> Status | None:
    """The ended batch's status, or None when Ctrl-C stopped the wait."""
    waiter = waiter or WAITER
    progress = (
        Progress(total, f"batch {batch_id}", stream=sys.stderr, clock=waiter.clock)
        if show_progress
        else None
    )
    delay, failures, shown, errors = FIRST_S, 0, 0, 0
    try:
        while True:
            try:
                status = api.status(batch_id)
            except Transient as exc:
                failures += 1
                if failures >= POLL_FAILURES:
                    raise PollError(
                        [
                            f"{api.provider}: batch {batch_id}: {failures} polls failed: {exc}",
                            resume_hint,
                        ]
                    ) from None
            except SystemCallError as exc:
                raise PollError(
                    [f"{api.provider}: batch {batch_id} cannot be polled: {exc}", resume_hint]
                ) from None
            else:
                failures = 0
                if progress is not None:
                    finished, failed = min(status.finished, total), min(status.failed, total)
                    for index in range(max(0, finished - shown)):
                        progress.update(errors=int(index < failed - errors))
                    shown, errors = max(shown, finished), max(errors, failed)
                if status.ended:
                    return status
            waiter.pause(delay)
            delay = min(delay * 2, LONGEST_S)
    except KeyboardInterrupt:
        return None
    finally:
        if progress is not None:
            progress.close()
