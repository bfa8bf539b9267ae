"""How far cases move between repeated runs of the baseline's configuration, from the
trusted history export (gate.deciding.noise.runspread.RunSpread).

The run under judgement never contributes: a spread estimated from it can be widened on
purpose. The export read is the one gate.history.locate trusts (the base commit's copy
under a ruling), and only runs of the baseline's own configuration count, each case at
the baseline's version of it. Anything unreadable gives no spread, which makes no
allowance: the stricter test.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gate.deciding.noise.runspread import RunSpread, spread_between_runs
from gate.errors import CasegateError
from gate.history.export import read_export
from gate.history.locate import trusted_export
from gate.history.records import HistoryRecord
from gate.results import RunResults

if TYPE_CHECKING:
    from gate.deciding.ruler import Ruling
    from gate.suite.config import LoadedConfig


def trusted_spread(
    loaded: LoadedConfig,
    ruling: Ruling | None,
    baseline: RunResults,
    candidate: RunResults | None = None,
) -> RunSpread | None:
    """The spread in the export the report may believe; None when there is none to read.

    `check` reads it before the suite's code runs, as it reads the baseline: code that can
    write the extracted base tree (a runner without the sandbox) finds it already read.
    """
    try:
        export, source = trusted_export(loaded, ruling)
    except (CasegateError, OSError):
        return None  # the History section names the problem; no allowance is made
    return spread_in(export, source, baseline, candidate)


def spread_in(
    export: Path | None, source: str, baseline: RunResults, candidate: RunResults | None
) -> RunSpread | None:
    """The spread between the runs of `baseline`'s configuration in `export`, the baseline
    among them; None with fewer than two distinct runs or an export that cannot be read."""
    try:
        if export is None or not export.is_file():
            return None
        records, _ = read_export(export)
    except (CasegateError, OSError):
        return None
    runs = runs_of(records, baseline, candidate)
    if len(runs) < 2:
        return None
    return spread_between_runs(
        runs, f"{len(runs)} runs of the baseline's configuration in {source}"
    )


def runs_of(
    records: list[HistoryRecord], baseline: RunResults, candidate: RunResults | None = None
) -> list[dict[str, tuple[int, int]]]:
    """Each distinct run of the baseline's configuration: case → (passes, samples).

    A case counts at the baseline's version only. The candidate's own run is left out
    (`history add` may have come before `compare`), and a run whose counts equal another's
    is one draw replayed from the same recordings, not two.
    """
    versions = {case.id: case.version for case in baseline.cases}
    itself = (candidate.config_hash, candidate.created_at) if candidate is not None else None
    found: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}
    for record in records:
        if record.suite != baseline.suite or record.config_hash != baseline.config_hash:
            continue
        if (record.config_hash, record.created_at) == itself:
            continue
        if record.passes is None or record.samples is None or record.verdict == "error":
            continue  # written before the history kept counts, or no verdict at all
        if versions.get(record.case) != record.version:
            continue
        run = found.setdefault((record.commit, record.created_at), {})
        run[record.case] = (record.passes, record.samples)
    own = {
        case.id: (case.passes, case.samples)
        for case in baseline.cases
        if case.status != "error" and case.samples > 0
    }
    distinct: list[dict[str, tuple[int, int]]] = []
    for run in [own, *found.values()]:
        if run and run not in distinct:
            distinct.append(run)
    return distinct
