"""The pull request's History section: when each regressed case last failed before, and
the suite's pass rate and cost over its recent recorded runs as Mermaid charts.

The export comes from the trusted side (gate.history.locate), but its text is still
escaped where it lands: table cells through gate.reporting.report's `cell` and `code`, and the
charts' labels reduced to letters, digits, space, `.`, `_` and `-` inside quotes, so
no label can close the code fence, end its string, start a line of its own or carry a
Mermaid directive (`%%{init}`), an arrow or a `click` link.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tabulate import tabulate

from gate.deciding.compare import Comparison
from gate.errors import CasegateError
from gate.history import queries
from gate.history.locate import trusted_export
from gate.history.queries import LastFailure, RunPoint
from gate.history.store import Store
from gate.reporting.markup import ROWS_PER_TABLE, cell, code
from gate.results import RunResults

if TYPE_CHECKING:
    from gate.deciding.ruler import Ruling
    from gate.suite.config import LoadedConfig

#: how many recorded runs the charts show, before the candidate
TREND_RUNS = 10
_UNSAFE_LABEL = re.compile(r"[^A-Za-z0-9._ -]+")


@dataclass(frozen=True, slots=True)
class Point:
    """One column of the charts: a recorded run, or the candidate."""

    label: str
    pass_rate: float
    cost_usd: float | None


@dataclass(frozen=True, slots=True)
class HistoryNotes:
    """What the history says about one comparison (gate.deciding.compare.HistoryNotes)."""

    #: where the export was read, e.g. "history/support.jsonl on the base commit abc1234"
    source: str
    runs: int = 0
    #: the regressed cases, critical first, as the report lists them
    regressed: list[str] = field(default_factory=list)
    failures: dict[str, LastFailure] = field(default_factory=dict)
    #: each regressed case's version in the candidate: a failure of another version is
    #: a failure against another expectation, and says so
    versions: dict[str, int] = field(default_factory=dict)
    trend: list[RunPoint] = field(default_factory=list)
    candidate: Point | None = None
    #: the export could not be read: the section says why, and the gate goes on
    problem: str | None = None

    def markdown(self) -> str:
        head = "#### History\n\n"
        if self.problem is not None:
            return head + f"The results history could not be read: {cell(self.problem, 500)}"
        parts = [head + self._intro()]
        if self.regressed:
            parts.append(self._failures_table())
        if self.trend:
            parts.append(self._charts())
        return "\n\n".join(parts)

    def lines(self) -> list[str]:
        if self.problem is not None:
            return [f"history: could not be read: {self.problem}"]
        lines = [f"history ({self.source}): {self.runs} run(s) recorded"]
        for case_id in self.regressed:
            lines.append(f"  {case_id}: {self._last_failed(case_id)}")
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "runs": self.runs,
            "problem": self.problem,
            "regressions": {
                case_id: (found.to_dict() if (found := self.failures.get(case_id)) else None)
                for case_id in self.regressed
            },
            "trend": [point.to_dict() for point in self.trend],
            "candidate": None
            if self.candidate is None
            else {"pass_rate": self.candidate.pass_rate, "cost_usd": self.candidate.cost_usd},
        }

    # --- pieces -----------------------------------------------------------------

    def _intro(self) -> str:
        where = cell(self.source, 300)
        if not self.runs:
            return f"No run of this suite is recorded in {where} yet."
        latest = self.trend[-1].created_at if self.trend else ""
        return f"From {where}: {self.runs} recorded run(s) of this suite" + (
            f", the last on {cell(_day(latest), 40)}." if latest else "."
        )

    def _last_failed(self, case_id: str) -> str:
        found = self.failures.get(case_id)
        if found is None:
            return "not in the history yet"
        if found.last is None:
            return f"never failed in {found.runs} recorded run(s)"
        last = found.last
        version = ""
        if self.versions.get(case_id, last.version) != last.version:
            version = f", case version {last.version}"
        return (
            f"last failed before {_day(last.created_at)} ({last.verdict}{version}) on "
            f"{last.system}, commit {last.commit[:12]}; failed in {found.failures} of "
            f"{found.runs} recorded run(s)"
        )

    def _failures_table(self) -> str:
        rows = []
        for case_id in self.regressed[:ROWS_PER_TABLE]:
            found = self.failures.get(case_id)
            if found is None:
                rows.append([code(case_id), "not in the history yet", "—", "—", "—"])
                continue
            counts = f"{found.failures} of {found.runs} run(s)"
            last = found.last
            if last is None:
                rows.append([code(case_id), "never", "—", "—", counts])
                continue
            when = f"{_day(last.created_at)} ({last.verdict}"
            if self.versions.get(case_id, last.version) != last.version:
                when += f", case version {last.version}"
            rows.append(
                [
                    code(case_id),
                    cell(when + ")", 120),
                    code(last.system, 120),
                    code(last.commit[:12], 40),
                    counts,
                ]
            )
        table = tabulate(
            rows,
            headers=["regressed case", "last failed before", "on system", "commit", "failed in"],
            tablefmt="github",
            disable_numparse=True,
        )
        more = len(self.regressed) - ROWS_PER_TABLE
        if more > 0:
            table += f"\n\n_… and {more} more in the JSON report._"
        return table

    def _charts(self) -> str:
        points = [Point(_run_label(point), point.pass_rate, point.cost_usd) for point in self.trend]
        if self.candidate is not None:
            points.append(self.candidate)
        then = ", then this comparison's candidate" if self.candidate is not None else ""
        parts = [
            f"Pass rate and cost of the last {len(self.trend)} recorded run(s){then}:",
            mermaid_chart(
                "Pass rate in percent",
                "pass rate in percent",
                [p.label for p in points],
                "line",
                [p.pass_rate * 100 for p in points],
                (0, 100),
            ),
        ]
        costs = [p.cost_usd for p in points]
        if all(cost is not None for cost in costs):
            parts.append(
                mermaid_chart(
                    "Cost in USD",
                    "cost in USD",
                    [p.label for p in points],
                    "bar",
                    [float(cost or 0.0) for cost in costs],
                    None,
                )
            )
        return "\n\n".join(parts)


def mermaid_label(text: str, limit: int = 24) -> str:
    """`text` as a quoted Mermaid string that can say nothing but itself."""
    safe = " ".join(_UNSAFE_LABEL.sub(" ", text).split())[:limit].strip()
    return f'"{safe or "unnamed"}"'


def mermaid_chart(
    title: str,
    axis: str,
    labels: list[str],
    kind: str,
    values: list[float],
    bounds: tuple[float, float] | None,
) -> str:
    """One `xychart-beta` in a ```mermaid fence: every label sanitised, every value a
    plain decimal (Mermaid reads no exponent)."""
    y_axis = f"    y-axis {mermaid_label(axis)}"
    if bounds is not None:
        y_axis += f" {_number(bounds[0])} --> {_number(bounds[1])}"
    lines = [
        "```mermaid",
        "xychart-beta",
        f"    title {mermaid_label(title, 60)}",
        "    x-axis [" + ", ".join(mermaid_label(label) for label in labels) + "]",
        y_axis,
        f"    {'bar' if kind == 'bar' else 'line'} ["
        + ", ".join(_number(value) for value in values)
        + "]",
        "```",
    ]
    return "\n".join(lines)


def _number(value: float) -> str:
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def _day(created_at: str) -> str:
    """`2026-01-05T10:00:00+00:00` → `2026-01-05`; anything else as it is."""
    return created_at[:10] if re.match(r"\d{4}-\d{2}-\d{2}", created_at) else created_at


def _run_label(point: RunPoint) -> str:
    return f"{_day(point.created_at)[5:]} {point.commit[:7]}"


def notes_for(
    comparison: Comparison,
    candidate: RunResults,
    export: Path | None,
    source: str,
    *,
    candidate_label: str,
) -> HistoryNotes | None:
    """What the export at `export` says about `comparison`; None when there is no export.

    The history never decides anything: an export that cannot be read is reported in
    the section (the problem named), and the gate goes on without it.
    """
    try:
        if export is None or not export.is_file():
            return None
    except OSError as exc:  # a folder on the way that cannot be searched
        return HistoryNotes(source=source, problem=f"{export}: {exc.strerror or exc}")
    regressed = sorted(
        comparison.regressions, key=lambda i: (not comparison.candidate_cases[i].critical, i)
    )
    # The candidate may be in the history already (`history add` before `compare`): it is
    # what the history is compared with, not part of it.
    itself = (candidate.config_hash, candidate.created_at)
    try:
        with Store.opened(export, None) as store:
            suite = comparison.suite
            failures = queries.last_failures(store, suite, regressed, itself)
            everything = [
                point
                for point in queries.trend(store, suite)
                if (point.config_hash, point.created_at) != itself
            ]
    except CasegateError as exc:  # gate.history words every bad export as a HistoryError
        return HistoryNotes(source=source, problem=exc.problems[0])
    cases = comparison.candidate_cases
    return HistoryNotes(
        source=source,
        runs=len(everything),
        regressed=regressed,
        failures=failures,
        versions={i: cases[i].version for i in regressed},
        trend=everything[-TREND_RUNS:],
        candidate=Point(
            candidate_label,
            comparison.candidate.pass_rate,
            comparison.usage_of("cost_usd").candidate,
        ),
    )


def trusted_notes(
    comparison: Comparison, candidate: RunResults, loaded: LoadedConfig, ruling: Ruling | None
) -> HistoryNotes | None:
    """`notes_for` the export the report may believe (gate.history.locate): the base
    commit's copy under a ruling, the working copy otherwise."""
    try:
        export, source = trusted_export(loaded, ruling)
    except CasegateError as exc:  # e.g. the base's export is a link out of its tree
        return HistoryNotes(source="", problem=exc.problems[0])
    except OSError as exc:  # a folder on the way that cannot be searched
        return HistoryNotes(source="", problem=f"the history export: {exc.strerror or exc}")
    label = "this change" if ruling is not None else "candidate"
    return notes_for(comparison, candidate, export, source, candidate_label=label)


def run_notes(results: RunResults, loaded: LoadedConfig) -> HistoryNotes | None:
    """What the working copy's export says about one run with no baseline (`casegate view
    RESULTS`): its recent trend and the run itself; None when there is no export."""
    export, source = trusted_export(loaded, None)
    if export is None or not export.is_file() or loaded.config.suite != results.suite:
        return None
    itself = (results.config_hash, results.created_at)
    try:
        with Store.opened(export, None) as store:
            everything = [
                point
                for point in queries.trend(store, results.suite)
                if (point.config_hash, point.created_at) != itself
            ]
    except CasegateError as exc:
        return HistoryNotes(source=source, problem=exc.problems[0])
    return HistoryNotes(
        source=source,
        runs=len(everything),
        trend=everything[-TREND_RUNS:],
        candidate=Point("this run", results.summary.pass_rate, results.summary.cost_usd),
    )
