"""`history: {record: all}`: every complete run joins the history, not only the baseline's.

A run is **complete** when it is a whole run (gate.history.records.whole_run_problem: not
interrupted, not a `--case`/`--tag` selection, not one `--shard` part, not empty), every
case the suite defines has a result, and none is in error: the verdicts a baseline would
be accepted with. Anything less is not appended, and the line printed says why.

A run judged under a ruling (a pull request in the Action, `check --base`) is never
appended: the history is the base's data. Later checks read it (the runs of one
configuration measure how far cases move between runs, gate.history.spread), so a pull
request's run must not land in it; its lines would reach the default branch only if the
pull request committed them, and then the ruler review lists them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gate.history.commands import add_run, default_commit
from gate.history.locate import working_export
from gate.history.records import whole_run_problem
from gate.results import RunResults

if TYPE_CHECKING:
    from gate.suite.cases import Case
    from gate.suite.config import LoadedConfig

UNDER_A_RULING = (
    "history: not recorded: a pull request's run (or `check --base`) never writes the "
    "history, which later checks trust; the baseline refresh after the merge records it"
)


def incomplete(results: RunResults, cases: Sequence[Case]) -> str | None:
    """Why `results` is not a complete run of `cases` (None: it is one)."""
    problem = whole_run_problem(results)
    if problem is not None:
        return problem
    ran = {case.id for case in results.cases}
    missing = [case.id for case in cases if case.id not in ran]
    if missing:
        return f"a run without a result for {len(missing)} of the suite's {len(cases)} case(s)"
    errored = sum(1 for case in results.cases if case.status == "error")
    if errored:
        return f"a run with {errored} case(s) in error (no verdict to keep for them)"
    return None


def record_run(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    results: RunResults,
    *,
    ruled: bool = False,
    environ: Mapping[str, str] | None = None,
    db: Path | None = None,
) -> str | None:
    """Under `record: all`, append a complete run to the working copy's export; the line to
    print (what was added, or why nothing was). None under `record: baseline`."""
    if not loaded.config.history_records_all:
        return None
    if ruled:
        return UNDER_A_RULING
    problem = incomplete(results, cases)
    if problem is not None:
        return f"history: not recorded (history.record: all takes complete runs only): {problem}"
    export = working_export(loaded)
    commit = default_commit(loaded.root, environ)
    return "history: " + add_run(results, export, export, db, commit)
