"""The retry policy: which failures are retried, how long it waits, what it reports."""

from __future__ import annotations

import datetime as dt
import email.utils

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate.errors import SystemCallError
from gate.retry import LONGEST_WAIT_S, RetryPolicy, Transient, retry_after_seconds


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"Retry-After": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    later = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=30)
    waited = retry_after_seconds({"retry-after": email.utils.format_datetime(later)})
    assert waited is not None and 25 < waited <= 30
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None
    assert retry_after_seconds({"retry-after": "-4"}) == 0.0


@given(st.dictionaries(st.sampled_from(["retry-after", "Retry-After-Ms", "x"]), st.text()))
def test_retry_after_never_raises(headers: dict[str, str]) -> None:
    waited = retry_after_seconds(headers)
    assert waited is None or waited >= 0


def test_transient_failures_are_retried_with_growing_jittered_waits() -> None:
    slept: list[float] = []
    attempts = iter([Transient("a"), Transient("b"), Transient("c")])

    def attempt() -> str:
        error = next(attempts, None)
        if error is not None:
            raise error
        return "ok"

    assert RetryPolicy(3, initial_s=0.5, sleep=slept.append).call(attempt) == "ok"
    assert len(slept) == 3
    # Exponential base 0.5, 1, 2 plus up to 1 s of jitter each.
    for wait, base in zip(slept, (0.5, 1.0, 2.0), strict=True):
        assert base <= wait <= base + 1


def test_retry_after_wins_over_backoff_and_is_capped() -> None:
    slept: list[float] = []
    errors = iter([Transient("x", retry_after=7), Transient("y", retry_after=10_000)])

    def attempt() -> str:
        error = next(errors, None)
        if error:
            raise error
        return "ok"

    RetryPolicy(3, sleep=slept.append).call(attempt)
    assert slept == [7, LONGEST_WAIT_S]


def test_giving_up_reports_the_last_reason_and_the_attempts() -> None:
    calls = []

    def attempt() -> None:
        calls.append(1)
        raise Transient(f"HTTP 500 #{len(calls)}")

    with pytest.raises(SystemCallError, match=r"HTTP 500 #3 \(gave up after 3 attempts\)"):
        RetryPolicy(2, sleep=lambda s: None).call(attempt)


def test_other_errors_are_not_retried() -> None:
    calls = []

    def attempt() -> None:
        calls.append(1)
        raise SystemCallError("HTTP 400: bad request")

    with pytest.raises(SystemCallError, match="HTTP 400"):
        RetryPolicy(5, sleep=lambda s: None).call(attempt)
    assert len(calls) == 1
