"""Progress: a few plain lines in a CI log, a bar on a terminal; time moved by hand."""

from __future__ import annotations

import io
import re
import threading

from hypothesis import given
from hypothesis import strategies as st

from gate.produce.progress import LINE_INTERVAL_S, STEPS, Progress, duration, progress_line

LINE = re.compile(
    r"(?P<label>\w+) (?P<done>\d+)/(?P<total>\d+) \((?P<percent>\d+)%\)"
    r" · [0-9hmins ]+( · ~[0-9hmins ]+ left)?( · \d+ errors?)?"
)


class Clock:
    """A clock the test moves; nothing sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def log_progress(total: int, label: str = "record") -> tuple[Progress, io.StringIO, Clock]:
    clock = Clock()
    stream = io.StringIO()
    return Progress(total, label, stream=stream, tty=False, clock=clock), stream, clock


def test_a_log_gets_a_line_every_tenth_with_the_estimate_and_the_errors() -> None:
    progress, stream, clock = log_progress(400)
    for number in range(1, 121):
        clock.now += 0.1
        progress.update(errors=1 if number % 40 == 0 else 0)
    assert stream.getvalue().splitlines() == [
        "record 40/400 (10%) · 4 s · ~36 s left · 1 error",
        "record 80/400 (20%) · 8 s · ~32 s left · 2 errors",
        "record 120/400 (30%) · 12 s · ~28 s left · 3 errors",
    ]


def test_a_slow_run_gets_a_line_after_30_s_without_one() -> None:
    progress, stream, clock = log_progress(1000, "live")
    clock.now += 29
    progress.update()
    assert stream.getvalue() == ""  # 29 s, and not a tenth done yet
    clock.now += 1
    progress.update()
    clock.now += 10
    progress.update()
    assert stream.getvalue().splitlines() == ["live 2/1000 (0%) · 30 s · ~4 h 09 min left"]


def test_close_says_where_a_run_stopped_short_and_nothing_twice() -> None:
    progress, stream, clock = log_progress(10, "judge")
    for _ in range(3):
        clock.now += 1
        progress.update()
    progress.close()
    progress.close()
    progress.update()  # a straggler after close changes nothing
    assert stream.getvalue().splitlines()[-1] == "judge 3/10 (30%) · 3 s · ~7 s left"
    finished, stream, _ = log_progress(2)
    finished.update()
    finished.update()
    finished.close()
    assert stream.getvalue().splitlines() == [
        "record 1/2 (50%) · 0 s · ~0 s left",
        "record 2/2 (100%) · 0 s",
    ]


def test_updates_from_many_threads_are_all_counted() -> None:
    progress, stream, _ = log_progress(8000)
    workers = [
        threading.Thread(target=lambda: [progress.update(errors=1) for _ in range(1000)])
        for _ in range(8)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    progress.close()
    assert (progress.done, progress.errors) == (8000, 8000)
    lines = stream.getvalue().splitlines()
    assert [line.split(" · ")[0] for line in lines] == [
        f"record {n * 800}/8000 ({n * 10}%)" for n in range(1, 11)
    ]


def test_a_terminal_gets_a_bar_naming_what_it_counts_and_the_errors() -> None:
    clock = Clock()
    stream = io.StringIO()
    progress = Progress(50, "record", stream=stream, tty=True, clock=clock)
    for number in range(30):
        progress.update(errors=int(number < 3))
    progress.close()
    shown = stream.getvalue()
    assert "record:" in shown and "3/50" in shown and "3 errors" in shown
    assert "\r" in shown  # redrawn in place, unlike a log


def test_the_stream_decides_when_tty_is_not_given() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal, log = Terminal(), io.StringIO()
    Progress(5, "live", stream=terminal).close()
    for _ in range(5):
        Progress(5, "live", stream=log).update()
    assert "\r" in terminal.getvalue()
    assert "\r" not in log.getvalue()


def test_durations_read_as_a_person_would_say_them() -> None:
    assert [duration(s) for s in (0, 12.4, 59.6, 245, 7380, -1)] == [
        "0 s",
        "12 s",
        "1 min 00 s",
        "4 min 05 s",
        "2 h 03 min",
        "0 s",
    ]
    assert progress_line("live", 0, 0, 0.0, 0) == "live 0/0 (100%) · 0 s"


@given(
    total=st.integers(min_value=-5, max_value=3000),
    updates=st.lists(
        st.tuples(st.floats(min_value=0, max_value=120), st.integers(min_value=0, max_value=1)),
        max_size=300,
    ),
    close=st.booleans(),
)
def test_a_log_never_gets_more_than_a_line_a_tenth_plus_timed_lines(
    total: int, updates: list[tuple[float, int]], close: bool
) -> None:
    progress, stream, clock = log_progress(total)
    start = clock.now
    last_line_at, last_step, lines_before = start, 0, 0
    for pause, errors in updates:
        clock.now += pause
        progress.update(errors=errors)
        lines = stream.getvalue().splitlines()
        step = STEPS if total <= 0 else min(STEPS, progress.done * STEPS // total)
        due = step > last_step or clock.now - last_line_at >= LINE_INTERVAL_S
        # A line exactly when a new tenth is reached or 30 s passed since the last one.
        assert len(lines) - lines_before == int(due)
        if due:
            last_line_at, last_step, lines_before = clock.now, step, len(lines)
    if close:
        progress.close()
    lines = stream.getvalue().splitlines()
    elapsed = clock.now - start
    assert len(lines) <= STEPS + int(elapsed // LINE_INTERVAL_S) + int(close)
    assert "\r" not in stream.getvalue()
    for line in lines:
        match = LINE.fullmatch(line)
        assert match is not None, line
        assert 0 <= int(match["percent"]) <= 100
    done = [int(LINE.fullmatch(line)["done"]) for line in lines]  # type: ignore[index]
    assert done == sorted(done)
