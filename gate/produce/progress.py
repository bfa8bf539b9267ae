"""Progress of a run's calls: a bar on a terminal, a few plain lines in a CI log.

A CI log is read afterwards, one line at a time, so there a line is printed at every
tenth of the work, or after 30 s without one, whichever comes first, and never
a carriage return: `record 120/400 (30%) · 12 s · ~28 s left · 3 errors`. On a
terminal a tqdm bar says what it counts and how many calls failed. Updates come
from worker threads; the clock is injectable, so tests move time by hand.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

#: at most this many seconds between two lines in a log, while updates arrive
LINE_INTERVAL_S = 30.0
#: a line at every 1/STEPS of the work
STEPS = 10


class Stream(Protocol):
    def write(self, text: str, /) -> object: ...

    def flush(self) -> object: ...


def duration(seconds: float) -> str:
    """`12 s`, `4 min 05 s`, `2 h 03 min`: as precise as a person reading a log needs."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def progress_line(label: str, done: int, total: int, elapsed: float, errors: int) -> str:
    """`record 120/400 (30%) · 12 s · ~28 s left · 3 errors` (no estimate before the
    first call finishes or after the last, no error count while there are none)."""
    percent = 100 if total <= 0 else min(100, done * 100 // total)
    parts = [f"{label} {done}/{total} ({percent}%)", duration(elapsed)]
    if 0 < done < total:
        parts.append(f"~{duration(elapsed / done * (total - done))} left")
    if errors:
        parts.append(plural(errors, "error"))
    return " · ".join(parts)


class Progress:
    """Counts finished calls, `total` expected; `label` says what they are (`record`…).

    `tty` None asks the stream. Call `update()` once per finished call (with
    `errors=1` when it failed) from any thread, and `close()` once at the end.
    """

    def __init__(
        self,
        total: int,
        label: str,
        *,
        stream: Stream,
        tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = max(0, total)
        self.label = label
        self.done = 0
        self.errors = 0
        self._stream = stream
        self._clock = clock
        self._lock = threading.Lock()
        self._started = clock()
        self._last_line_at = self._started
        self._last_step = 0
        self._last_done = 0
        self._closed = False
        if tty is None:
            isatty = getattr(stream, "isatty", None)
            tty = bool(isatty()) if callable(isatty) else False
        self._bar: Any = None
        if tty:
            from tqdm import tqdm  # only a terminal pays for the import

            self._bar = tqdm(total=self.total, desc=label, file=stream, unit="call", leave=False)

    def update(self, errors: int = 0) -> None:
        """One more call finished; `errors` of them (0 or 1) failed."""
        with self._lock:
            if self._closed:
                return
            self.done += 1
            self.errors += errors
            if self._bar is not None:
                self._bar.update(1)
                if errors:  # shown at once: the bar itself redraws at most every 0.1 s
                    self._bar.set_postfix_str(plural(self.errors, "error"))
                return
            now = self._clock()
            step = self._step()
            if step > self._last_step or now - self._last_line_at >= LINE_INTERVAL_S:
                self._line(now, step)

    def close(self) -> None:
        """End the bar; in a log, a last line when calls finished since the previous one
        (a run stopped short says where it stopped)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._bar is not None:
                self._bar.close()
            elif self.done != self._last_done:
                self._line(self._clock(), self._step())

    def _step(self) -> int:
        return STEPS if self.total <= 0 else min(STEPS, self.done * STEPS // self.total)

    def _line(self, now: float, step: int) -> None:
        line = progress_line(self.label, self.done, self.total, now - self._started, self.errors)
        self._stream.write(line + "\n")
        self._stream.flush()
        self._last_line_at, self._last_step, self._last_done = now, step, self.done


def progress_bar(total: int, enabled: bool, label: str) -> Progress | None:
    """A bar on stderr for `total` calls; None when not shown or too few to be worth one."""
    if not enabled or total < 20:
        return None
    return Progress(total, label, stream=sys.stderr)
