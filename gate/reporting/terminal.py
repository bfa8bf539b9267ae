"""The one-screen terminal summary of a run."""

from __future__ import annotations

from gate.results import CaseResult, RunResults
from gate.suite.select import describe_stored

FAILURES_SHOWN = 15


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.4f}"


def run_summary(results: RunResults) -> str:
    summary = results.summary
    weighted = any(case.weight != 1 for case in results.cases)
    rate = f"{summary.pass_rate:.1%}" + (" (weighted)" if weighted else "")
    lines = [
        f"{results.suite} · {results.system} · {results.mode or 'run'}"
        + (f" · slice: {describe_stored(results.selection)}" if results.selection else ""),
        f"{summary.passed}/{summary.cases} passed ({rate}), "
        f"{summary.failed} failed, {summary.errors} errors",
    ]
    usage = []
    if summary.input_tokens is not None or summary.output_tokens is not None:
        usage.append(
            f"tokens {summary.input_tokens or 0:,} in / {summary.output_tokens or 0:,} out"
        )
    if summary.cost_usd is not None:
        usage.append(f"cost {money(summary.cost_usd)}")
    if summary.latency_ms_p50 is not None:
        usage.append(
            f"latency p50 {summary.latency_ms_p50:,.0f} ms, p95 {summary.latency_ms_p95:,.0f} ms"
        )
    if usage:
        lines.append(" · ".join(usage))
    calls = sum(case.samples for case in results.cases)
    if calls > len(results.cases):
        flaky = [case.id for case in results.cases if case.flaky]
        lines.append(
            f"{calls:,} samples; {len(flaky)} flaky case(s)"
            + (f": {', '.join(flaky[:FAILURES_SHOWN])}" if flaky else "")
        )
    bad = _not_passing(results)
    for case in bad[:FAILURES_SHOWN]:
        marker = "ERROR" if case.status == "error" else "FAIL "
        critical = " [critical]" if case.critical else ""
        lines.append(f"  {marker} {case.id}{critical}: {_short(case.reason)}")
    if len(bad) > FAILURES_SHOWN:
        lines.append(f"  … and {len(bad) - FAILURES_SHOWN} more (see the results file)")
    return "\n".join(lines)


def _not_passing(results: RunResults) -> list[CaseResult]:
    """The failed and errored cases: errors first, then critical cases, then by id."""
    bad = [case for case in results.cases if case.status != "pass"]
    return sorted(bad, key=lambda case: (case.status != "error", not case.critical, case.id))


def verbose_failures(results: RunResults, *, colour: bool = False) -> str:
    """Every failed or errored case as `casegate show` prints it, without the baseline:
    its checks and the whole output of each sample that did not pass ("" when none)."""
    from gate.reporting.show import render_case

    return "\n\n".join(
        render_case(case, colour=colour, only_failing=True) for case in _not_passing(results)
    )
