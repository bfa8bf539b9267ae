"""`casegate history add|case|trend|flips`: record whole runs, and ask the history."""

from __future__ import annotations

import argparse
import difflib
import json
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tabulate import tabulate

from gate.errors import CasegateError
from gate.history import export, queries
from gate.history.locate import DEFAULT_DB, shown, working_export
from gate.history.records import (
    UNKNOWN_COMMIT,
    HistoryError,
    HistoryRecord,
    records_of,
    whole_run_problem,
)
from gate.history.store import Store
from gate.reporting.show import one_line
from gate.results import RunResults, read_results


@dataclass(frozen=True, slots=True)
class Where:
    """The export and cache a command uses, and the suite the config names (if any)."""

    export: Path | None
    db: Path
    suite: str | None
    #: the folder relative defaults are taken from: the config's, else the working one
    folder: Path


def locate(args: argparse.Namespace) -> Where:
    """`--export`/`--db`, else the config's `history:` and `.casegate/history.sqlite`."""
    from gate.suite.config import load_config

    explicit = getattr(args, "config_given", False)
    loaded = load_config(args.config) if explicit or args.config.is_file() else None
    folder = loaded.root if loaded is not None else Path.cwd()
    configured = working_export(loaded) if loaded is not None else None
    return Where(
        export=args.export or configured,
        db=args.db or Path(shown(folder / DEFAULT_DB)),
        suite=getattr(args, "suite", None) or (loaded.config.suite if loaded else None),
        folder=folder,
    )


def default_commit(folder: Path, environ: Mapping[str, str] | None = None) -> str:
    """The commit the results belong to: GITHUB_SHA in Actions, else HEAD, else unknown."""
    from gate.deciding.basetree import git

    sha = (os.environ if environ is None else environ).get("GITHUB_SHA", "").strip()
    if sha:
        return sha
    try:
        found = git("rev-parse", "--verify", "--quiet", "HEAD", cwd=folder)
    except CasegateError:  # no git on this machine
        return UNKNOWN_COMMIT
    head = found.stdout.decode(errors="replace").strip()
    return head if found.returncode == 0 and head else UNKNOWN_COMMIT


def add_run(
    results: RunResults, source: Path, export_path: Path, db: Path | None, commit: str
) -> str:
    """Append a whole run to the export (and its cache); what happened, in one line.

    The same run added twice (suite, config hash, commit, created_at) is a no-op.
    """
    problem = whole_run_problem(results)
    if problem is not None:
        raise HistoryError(f"{source}: the history records whole runs only, and this is {problem}")
    records = records_of(results, commit)
    key = records[0].key
    with Store.opened(export_path, db) as store:
        if store.has_run(key):
            return (
                f"already recorded: {key.describe()} of suite {results.suite} is in "
                f"{shown(export_path)}; nothing added"
            )
        export.append(export_path, records)
        store.add(records, export.fingerprint(export_path))
    return f"added {len(records)} case(s) of {key.describe()} to {shown(export_path)}"


def cmd_add(args: argparse.Namespace) -> int:
    where = locate(args)
    results = read_results(args.results)
    if where.suite is not None and where.suite != results.suite and args.export is None:
        raise HistoryError(
            f"{args.results}: a run of suite {results.suite!r}, but the config is suite "
            f"{where.suite!r}: pass -c that suite's config, or --export PATH"
        )
    export_path = where.export or where.folder / f"history/{results.suite}.jsonl"
    commit = args.commit or default_commit(where.folder)
    print(one_line(add_run(results, args.results, export_path, where.db, commit)))
    return 0


def _answering(args: argparse.Namespace) -> tuple[Where, Path]:
    where = locate(args)
    if where.export is None:
        raise HistoryError(
            f"{args.config}: no config here to name the history export: pass -c CONFIG "
            "or --export PATH"
        )
    return where, where.export


def cmd_case(args: argparse.Namespace) -> int:
    where, export_path = _answering(args)
    with Store.opened(export_path, where.db) as store:
        suite = queries.choose_suite(store, where.suite)
        records = queries.timeline(store, suite, args.case) if suite else []
        known = queries.case_ids(store, suite) if suite and not records else []
    if not records:
        near = difflib.get_close_matches(args.case, known, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise HistoryError(
            f"{shown(export_path)}: no case {args.case!r} in the history{hint}"
            + ("" if known else ": no run is recorded yet (`casegate history add RESULTS`)")
        )
    if args.format == "json":
        print(json.dumps([record.to_json() for record in records], indent=2))
        return 0
    rows = [
        [
            _when(r.created_at),
            r.system,
            r.commit[:12],
            r.version,
            r.verdict,
            _rate(r.pass_rate),
            _money(r.cost_usd),
            _ms(r.latency_ms),
        ]
        for r in records
    ]
    headers = ["date", "system", "commit", "version", "verdict", "pass rate", "cost", "latency"]
    _print_table(rows, headers)
    for system, counts in _by_system(records).items():
        tally = ", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items()))
        print(one_line(f"{system}: {sum(counts.values())} run(s): {tally}"))
    return 0


def _by_system(records: list[HistoryRecord]) -> dict[str, Counter[str]]:
    found: dict[str, Counter[str]] = {}
    for record in records:
        found.setdefault(record.system, Counter())[record.verdict] += 1
    return found


def cmd_trend(args: argparse.Namespace) -> int:
    where, export_path = _answering(args)
    with Store.opened(export_path, where.db) as store:
        suite = queries.choose_suite(store, where.suite)
        points = queries.trend(store, suite, args.last) if suite else []
    if args.format == "json":
        print(json.dumps([point.to_dict() for point in points], indent=2))
        return 0
    if not points:
        print(f"no run recorded in {one_line(shown(export_path))} yet")
        return 0
    rows = [
        [
            _when(p.created_at),
            p.commit[:12],
            p.system,
            p.cases,
            _rate(p.pass_rate),
            _money(p.cost_usd),
            _ms(p.latency_ms_p95),
        ]
        for p in points
    ]
    _print_table(rows, ["date", "commit", "system", "cases", "pass rate", "cost", "p95 latency"])
    return 0


def cmd_flips(args: argparse.Namespace) -> int:
    where, export_path = _answering(args)
    with Store.opened(export_path, where.db) as store:
        suite = queries.choose_suite(store, where.suite)
        found = queries.flips(store, suite, args.top) if suite else []
        runs = len(queries.trend(store, suite)) if suite else 0
    if args.format == "json":
        print(json.dumps([item.to_dict() for item in found], indent=2))
        return 0
    if not found:
        print(f"no case changed verdict in the {runs} recorded run(s)")
        return 0
    rows = [[f.case, f.flips, f.runs, f.passes, f.fails, f.errors, f.last] for f in found]
    _print_table(rows, ["case", "flips", "runs", "pass", "fail", "error", "last"])
    print(
        "a case that flips often is a candidate for a tighter check or more samples "
        "(`samples:` or `samples: auto`)"
    )
    return 0


def _print_table(rows: list[list[Any]], headers: list[str]) -> None:
    # The export is text anyone with commit access wrote: one line per cell, no escapes.
    safe = [[one_line(value) if isinstance(value, str) else value for value in row] for row in rows]
    print(tabulate(safe, headers=headers, tablefmt="simple", disable_numparse=True))


def _when(created_at: str) -> str:
    return created_at[:16].replace("T", " ")


def _rate(value: float) -> str:
    return f"{value:.1%}"


def _money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.4f}"


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f} ms"
