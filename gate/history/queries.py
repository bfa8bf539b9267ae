"""Questions asked of the history: a case's timeline, the suite's trend, the cases that flip,
and when a case last failed. Each answer is plain data, the same from a fresh cache as
from one built up run by run."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Any

from gate.history.records import HistoryError, HistoryRecord, RunKey
from gate.history.store import SELECT_RECORD, StaleCache, Store, record_from_row
from gate.results import percentile


@dataclass(frozen=True, slots=True)
class RunPoint:
    """One run of the suite, in aggregate."""

    commit: str
    created_at: str
    config_hash: str
    system: str
    mode: str | None
    cases: int
    passed: int
    #: weighted by each case's weight, as the run's own summary is
    pass_rate: float
    cost_usd: float | None
    #: over the cases' latencies (each case's mean over its samples)
    latency_ms_p95: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class CaseFlips:
    case: str
    #: pass ↔ fail changes between consecutive runs of the same case version
    flips: int
    runs: int
    passes: int
    fails: int
    errors: int
    last: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class LastFailure:
    """A case's record in the history: how often it failed, and the last time."""

    case: str
    runs: int
    failures: int
    #: the latest run where it did not pass (fail or error); None: it never failed
    last: HistoryRecord | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "runs": self.runs,
            "failures": self.failures,
            "last": None if self.last is None else self.last.to_json(),
        }


def choose_suite(store: Store, wanted: str | None) -> str | None:
    """The suite to answer for: `wanted`, else the export's only one (None: it is empty)."""
    if wanted is not None:
        return wanted
    suites = store.suites()
    if len(suites) > 1:
        raise HistoryError(
            f"{store.export_path}: holds runs of several suites ({', '.join(suites[:5])}): "
            "pass --suite NAME, or -c the config of one of them"
        )
    return suites[0] if suites else None


def case_ids(store: Store, suite: str) -> list[str]:
    rows = store.connection.execute(
        "SELECT DISTINCT case_id FROM records WHERE suite = ? ORDER BY case_id", (suite,)
    )
    return [str(case_id) for (case_id,) in rows]


def timeline(store: Store, suite: str, case_id: str) -> list[HistoryRecord]:
    """Every verdict the case had, oldest first."""
    rows = store.connection.execute(
        f"SELECT {SELECT_RECORD} FROM records WHERE suite = ? AND case_id = ? "  # noqa: S608 - constants
        f"ORDER BY created_at, commit_id, config_hash, position",
        (suite, case_id),
    )
    return [record_from_row(row) for row in rows]


def trend(store: Store, suite: str, last: int | None = None) -> list[RunPoint]:
    """The suite's runs, oldest first; with `last`, only the most recent `last` of them."""
    rows = store.connection.execute(
        "SELECT commit_id, created_at, config_hash, MIN(system), MIN(mode), COUNT(*), "
        "SUM(verdict = 'pass'), SUM(weight), SUM(CASE WHEN verdict = 'pass' THEN weight "
        "ELSE 0 END), SUM(cost_usd) FROM records WHERE suite = ? "
        "GROUP BY commit_id, created_at, config_hash ORDER BY created_at, commit_id, config_hash",
        (suite,),
    ).fetchall()
    if last is not None:
        rows = rows[-last:] if last > 0 else []
    latencies = _latencies(store, suite)
    points = []
    for row in rows:
        if not _run_row(row):
            raise StaleCache()
        commit, created, config_hash, system, mode, cases, passed, weight, won, cost = row
        key = RunKey(suite, config_hash, commit, created)
        points.append(
            RunPoint(
                commit=commit,
                created_at=created,
                config_hash=config_hash,
                system=system,
                mode=mode,
                cases=int(cases),
                passed=int(passed),
                pass_rate=round(won / weight, 6) if weight else 0.0,
                cost_usd=None if cost is None else round(cost, 8),
                latency_ms_p95=percentile(latencies.get(key, []), 0.95),
            )
        )
    return points


def _run_row(row: tuple[Any, ...]) -> bool:
    """Whether a trend row holds what casegate wrote (SQLite keeps any type in any column,
    and a cache file can be edited)."""
    texts, mode, counts, sums = row[:4], row[4], row[5:7], row[7:]
    return (
        all(isinstance(value, str) for value in texts)
        and (mode is None or isinstance(mode, str))
        and all(type(value) is int for value in counts)
        and all(_number(value) for value in sums[:2])
        and (sums[2] is None or _number(sums[2]))
    )


def _number(value: object) -> bool:
    return type(value) in (int, float) and math.isfinite(value)  # type: ignore[arg-type]


def _latencies(store: Store, suite: str) -> dict[RunKey, list[float]]:
    found: dict[RunKey, list[float]] = defaultdict(list)
    rows = store.connection.execute(
        "SELECT config_hash, commit_id, created_at, latency_ms FROM records "
        "WHERE suite = ? AND latency_ms IS NOT NULL",
        (suite,),
    )
    for config_hash, commit, created, latency in rows:
        if not _number(latency):
            raise StaleCache()
        found[RunKey(suite, config_hash, commit, created)].append(float(latency))
    return found


def flips(store: Store, suite: str, top: int | None = None) -> list[CaseFlips]:
    """The cases whose verdict changed most often, most first (ties by id).

    An error is no verdict (an outage is not the case's doing), so it neither counts as a
    flip nor breaks a run of them; a new case version starts afresh (its expectation moved).
    """
    rows = store.connection.execute(
        "SELECT case_id, version, verdict FROM records WHERE suite = ? "
        "ORDER BY case_id, created_at, commit_id, config_hash, position",
        (suite,),
    )
    found: list[CaseFlips] = []
    current: str | None = None
    counts: dict[str, int] = {}
    previous: tuple[int, str] | None = None
    last = ""

    def close() -> None:
        if current is not None:
            found.append(
                CaseFlips(
                    current,
                    counts["flips"],
                    counts["pass"] + counts["fail"] + counts["error"],
                    counts["pass"],
                    counts["fail"],
                    counts["error"],
                    last,
                )
            )

    for case_id, version, verdict in rows:
        if verdict not in ("pass", "fail", "error") or not isinstance(version, int):
            raise StaleCache()
        if case_id != current:
            close()
            current, previous = case_id, None
            counts = {"flips": 0, "pass": 0, "fail": 0, "error": 0}
        counts[verdict] += 1
        last = verdict
        if verdict == "error":
            continue
        if previous is not None and previous[0] == version and previous[1] != verdict:
            counts["flips"] += 1
        previous = (version, verdict)
    close()
    ranked = sorted((f for f in found if f.flips), key=lambda f: (-f.flips, f.case))
    return ranked[:top] if top is not None else ranked


def last_failures(
    store: Store, suite: str, ids: list[str], exclude: tuple[str, str] | None = None
) -> dict[str, LastFailure]:
    """For each case of `ids` the history holds: its runs, failures and the last failure.

    `exclude` is the (config hash, created_at) of the run being judged, if it was added
    already: "before" means before it.
    """
    found = {}
    for case_id in ids:
        records = [
            record
            for record in timeline(store, suite, case_id)
            if (record.config_hash, record.created_at) != exclude
        ]
        if not records:
            continue
        failed = [record for record in records if record.verdict != "pass"]
        found[case_id] = LastFailure(
            case_id, len(records), len(failed), failed[-1] if failed else None
        )
    return found
