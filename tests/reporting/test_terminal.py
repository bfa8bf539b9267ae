"""The terminal summary of a run, and `-v`: the failing cases in full."""

from __future__ import annotations

from gate.reporting.terminal import run_summary, verbose_failures
from tests.factories import result, run

LONG = "Standard shipping takes 3 to 7 business days; these are estimates. " * 20


def test_verbose_shows_every_failing_case_in_full_errors_and_critical_first() -> None:
    results = run(
        [
            result("a-fine"),
            result("b-fail", "fail", text=LONG, reason="missing 'tracking'"),
            result("c-critical", "fail", critical=True, text="will arrive by Friday"),
            result("d-error", "error", reason="the backend is down"),
        ]
    )
    text = verbose_failures(results)
    headlines = [line for line in text.splitlines() if line.startswith("case ")]
    assert headlines == [
        "case d-error: ERROR",
        "case c-critical: FAIL (critical)",
        "case b-fail: FAIL",
    ]
    assert "  │ " + LONG in text.splitlines()  # whole, where the summary cuts at 90 characters
    assert "  error: the backend is down" in text
    assert "a-fine" not in text
    assert "\x1b" not in text
    # The summary's own lines are unchanged by it, in the same order.
    summary = run_summary(results).splitlines()
    assert [line.split()[1].rstrip(":") for line in summary if line.startswith("  ")] == [
        "d-error",
        "c-critical",
        "b-fail",
    ]


def test_verbose_is_empty_when_every_case_passes() -> None:
    assert verbose_failures(run([result("a"), result("b")])) == ""
