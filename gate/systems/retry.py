"""Retrying one provider request: exponential backoff with jitter, `Retry-After` honoured.

The SDKs' own retries are switched off (`max_retries=0` on the clients) so one
policy covers both providers and also retries what the SDKs would not: a
response body that cannot be parsed.

One policy serves one run, and the run has a deadline: `max_wait_s` after its
last successful response. A pause that would end past it is not taken: the
request is an error at once, with the reason. So a provider that keeps asking
for an hour (`Retry-After: 3600`) costs no wait at all, an outage stalls the
run for at most `max_wait_s`, and a long run that succeeds now and then keeps
retrying the odd failure to the end.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import threading
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from tenacity import (
    RetryCallState,
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)

from gate.errors import SystemCallError

T = TypeVar("T")

#: How long a run keeps retrying after its last successful response (system.max_wait_s).
DEFAULT_MAX_WAIT_S = 300.0


class Transient(Exception):
    """A failure worth another attempt (429, 5xx, timeout, connection, malformed body)."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """`retry-after-ms`, or `Retry-After` as seconds or an HTTP date; None when absent."""
    if not headers:
        return None
    lowered = {key.lower(): value for key, value in headers.items()}
    try:
        if "retry-after-ms" in lowered:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        if "retry-after" in lowered:
            return max(0.0, float(lowered["retry-after"]))
    except ValueError:
        pass
    raw = lowered.get("retry-after")
    if raw:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        return max(0.0, (when - dt.datetime.now(dt.UTC)).total_seconds())
    return None


class _PastDeadline(Exception):
    """The next pause would end after the run's retry deadline."""

    def __init__(self, last: BaseException | None, attempts: int, pause: float, asked: bool):
        super().__init__()
        self.last, self.attempts, self.pause, self.asked = last, attempts, pause, asked


class RetryPolicy:
    def __init__(
        self,
        max_retries: int,
        *,
        max_wait_s: float = DEFAULT_MAX_WAIT_S,
        initial_s: float = 0.5,
        max_backoff_s: float = 20.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_retries = max_retries
        self.max_wait_s = max_wait_s
        self._backoff = wait_exponential_jitter(multiplier=initial_s, max=max_backoff_s, jitter=1)
        self._sleep = sleep
        self._clock = clock
        self._lock = threading.Lock()
        self._last_success = clock()  # the run starts with a clean slate

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, Transient) and error.retry_after is not None:
            pause, asked = error.retry_after, True  # honoured in full, up to the deadline
        else:
            pause, asked = float(self._backoff(state)), False
        with self._lock:
            deadline = self._last_success + self.max_wait_s
        if self._clock() + pause > deadline:
            raise _PastDeadline(error, state.attempt_number, pause, asked)
        return pause

    def call(self, attempt: Callable[[], T]) -> T:
        """Run `attempt`; a Transient is retried, anything else passes through.

        When every attempt failed, raises SystemCallError with the last reason
        and the number of attempts, so the case records why it is an error.
        """
        retrying = Retrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception_type(Transient),
            sleep=self._sleep,
        )
        try:
            result = retrying(attempt)
        except RetryError as exc:
            last = exc.last_attempt.exception()
            raise SystemCallError(
                f"{_reason(last)} (gave up after {_attempts(exc.last_attempt.attempt_number)})"
            ) from None
        except _PastDeadline as exc:
            wanted = "the server asked for" if exc.asked else "the next retry needed"
            raise SystemCallError(
                f"{_reason(exc.last)} (gave up after {_attempts(exc.attempts)}: {wanted} "
                f"a {exc.pause:g} s pause, past this run's retry deadline, "
                f"{self.max_wait_s:g} s after its last success: system.max_wait_s)"
            ) from None
        with self._lock:
            self._last_success = max(self._last_success, self._clock())
        return result


def _reason(error: BaseException | None) -> str:
    return error.reason if isinstance(error, Transient) else str(error)


def _attempts(count: int) -> str:
    return f"{count} attempt{'s' if count != 1 else ''}"
