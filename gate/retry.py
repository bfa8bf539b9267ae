"""Retrying one provider request: exponential backoff with jitter, `Retry-After` honoured.

The SDKs' own retries are switched off (`max_retries=0` on the clients) so one
policy covers both providers and also retries what the SDKs would not: a
response body that cannot be parsed.
"""

from __future__ import annotations

import datetime as dt
import email.utils
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

#: A server asking for a longer pause than this is treated as an outage for this run.
LONGEST_WAIT_S = 120.0


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


class RetryPolicy:
    def __init__(
        self,
        max_retries: int,
        *,
        initial_s: float = 0.5,
        max_backoff_s: float = 20.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.max_retries = max_retries
        self._backoff = wait_exponential_jitter(multiplier=initial_s, max=max_backoff_s, jitter=1)
        self._sleep = sleep

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, Transient) and error.retry_after is not None:
            return min(error.retry_after, LONGEST_WAIT_S)
        return float(self._backoff(state))

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
            return retrying(attempt)
        except RetryError as exc:
            last = exc.last_attempt.exception()
            attempts = exc.last_attempt.attempt_number
            reason = last.reason if isinstance(last, Transient) else str(last)
            plural = "s" if attempts != 1 else ""
            raise SystemCallError(f"{reason} (gave up after {attempts} attempt{plural})") from None
