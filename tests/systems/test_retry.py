"""The retry policy: which failures are retried, how long it waits, what it reports."""

from __future__ import annotations

import datetime as dt
import email.utils
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate.errors import SystemCallError
from gate.systems.retry import RetryPolicy, Transient, retry_after_seconds


class FakeClock:
    """Time that moves only when the policy sleeps (or a test says so)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def failing(*errors: Exception) -> Callable[[], str]:
    """An attempt that raises each error in turn, then answers "ok"."""
    queue = iter(errors)

    def attempt() -> str:
        error = next(queue, None)
        if error is not None:
            raise error
        return "ok"

    return attempt


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


def test_retry_after_wins_over_backoff_up_to_the_deadline() -> None:
    clock = FakeClock()
    policy = RetryPolicy(3, max_wait_s=300, sleep=clock.sleep, clock=clock)
    assert (
        policy.call(failing(Transient("x", retry_after=7), Transient("y", retry_after=200))) == "ok"
    )
    assert clock.slept == [7, 200]  # honoured in full: 207 s end before the deadline (300 s)


def test_a_server_asking_for_an_hour_costs_no_wait_and_says_why() -> None:
    clock = FakeClock()
    policy = RetryPolicy(4, max_wait_s=300, sleep=clock.sleep, clock=clock)
    with pytest.raises(SystemCallError) as caught:
        policy.call(failing(*[Transient("HTTP 429: slow down", retry_after=3600)] * 5))
    assert clock.slept == []
    assert str(caught.value) == (
        "HTTP 429: slow down (gave up after 1 attempt: the server asked for a 3600 s pause, "
        "past this run's retry deadline, 300 s after its last success: system.max_wait_s)"
    )


def test_the_deadline_is_shared_by_the_run_and_moves_on_success() -> None:
    clock = FakeClock()
    policy = RetryPolicy(10, max_wait_s=100, initial_s=0.5, sleep=clock.sleep, clock=clock)
    # An outage: the first request spends the run's 100 s, the next one may not wait at all.
    with pytest.raises(SystemCallError, match=r"after 3 attempts: the server asked for a 50 s"):
        policy.call(failing(*[Transient("HTTP 500", retry_after=50)] * 11))
    assert clock.slept == [50, 50]
    with pytest.raises(
        SystemCallError, match=r"HTTP 502 \(gave up after 1 attempt: the next retry"
    ):
        policy.call(failing(Transient("HTTP 502")))  # even a 0.5 s backoff is past it
    assert clock.slept == [50, 50]
    # Hours later a request succeeds at once: the deadline starts again from there.
    clock.now += 3600
    assert policy.call(failing()) == "ok"
    assert policy.call(failing(Transient("HTTP 429", retry_after=60))) == "ok"
    assert clock.slept[-1] == 60


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
