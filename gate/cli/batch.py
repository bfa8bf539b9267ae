"""`casegate batch resume ID` and `casegate batch list`.

Resume reloads what the batch was submitted for (its config with the same `--set`
overrides, the same case selection and run mode), refuses when that is no longer
what the config says, and then runs exactly as the interrupted run would have,
taking the submitted batch instead of submitting: same results file, same recordings.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gate.produce.batch import state
from gate.produce.batch.run import resuming
from gate.produce.recordings import system_fingerprint
from gate.suite.config import LoadedConfig

INTERRUPTED = 130


def mismatch(batch: state.BatchState, loaded: LoadedConfig) -> list[str]:
    """Why `batch` cannot be taken as this config's answers (empty when it can)."""
    where = f"{loaded.path}"
    again = (
        f"restore it to resume batch {batch.batch_id}, or run `casegate record` to submit the "
        "suite as it is now (the old batch is billed either way)"
    )
    system = loaded.resolved_system()
    if system.get("provider") != batch.provider:
        return [
            f"batch {batch.batch_id} went to {batch.provider}, but {where} now names provider "
            f"{system.get('provider')!r}",
            again,
        ]
    if batch.suite != loaded.config.suite:
        return [
            f"batch {batch.batch_id} belongs to suite {batch.suite!r}, not {where}'s "
            f"{loaded.config.suite!r}: pass the config it was submitted with (-c)"
        ]
    if batch.config_hash != loaded.config_hash() or batch.fingerprint != system_fingerprint(system):
        overrides = f" with --set {' '.join(batch.overrides)}" if batch.overrides else ""
        return [
            f"batch {batch.batch_id} was submitted for another config than {where}{overrides} "
            "(its hash differs): the config, its prompt file or the system changed since",
            again,
        ]
    return []


def cmd_resume(args: argparse.Namespace) -> int:
    from gate.judging import pairwise
    from gate.pipeline.run import execute
    from gate.reporting.terminal import run_summary
    from gate.results import ensure_replaceable, write_results
    from gate.suite.project import load_project  # the command line's loader: warnings, `cases: .`
    from gate.suite.select import Selection

    if args.out:  # before the wait: a refused path must not cost the batch's results
        ensure_replaceable(args.out)
    root = args.config.resolve().parent
    batch = state.read(state.path_for(root, args.batch_id))
    chosen = batch.selection or {}
    selection = Selection(tuple(chosen.get("cases", ())), tuple(chosen.get("tags", ())))
    loaded, cases = load_project(args.config, batch.overrides, selection)
    problems = mismatch(batch, loaded)
    if problems:
        raise state.StateError(problems)
    if batch.status == "collected":
        print(
            f"casegate: batch {batch.batch_id} was collected at {batch.collected_at}; "
            "reading its results again",
            file=sys.stderr,
        )
    with resuming(batch):
        results = execute(
            loaded,
            cases,
            batch.mode,
            only_missing=batch.only_missing,
            show_progress=not args.quiet,
            selection=batch.selection,
        )
    if batch.mode == "record":
        for line in pairwise.record_against_baseline(
            loaded, cases, results, only_missing=batch.only_missing
        ):
            print(f"casegate: {line}", file=sys.stderr)
    if loaded.config.holdout is not None:
        from gate.holdout.scoring import score_here

        score_here(
            loaded,
            results,
            batch.mode,
            selection=selection,
            only_missing=batch.only_missing,
            show_progress=not args.quiet,
        )
    out = args.out or Path(".casegate") / f"{results.suite}-results.json"
    write_results(results, out)
    if results.interrupted:
        print(f"casegate: interrupted; batch {batch.batch_id} stays submitted", file=sys.stderr)
        return INTERRUPTED
    if not args.quiet:
        print(run_summary(results))
        print(f"results: {out}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    root = args.config.resolve().parent
    found = state.every(root)
    if not found:
        print(f"no batches in {state.folder_for(root)}")
        return 0
    for path, batch in found:
        if batch is None:
            print(f"{path.name.removesuffix('.json')}  unreadable ({path}): delete it")
            continue
        print(
            f"{batch.batch_id}  {batch.provider}  {batch.status}  {batch.mode}  "
            f"{len(batch.requests)} requests  submitted {batch.submitted_at}"
        )
    return 0
