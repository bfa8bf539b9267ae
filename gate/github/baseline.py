"""The Action's `command: baseline`, after a merge: the suite run again (supervised, the
held-out slice scored here), its baseline written and the run added to the committed history."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gate.errors import ConfigError
from gate.files import private_scratch
from gate.github.publish import (
    EXIT_INTERRUPTED,
    _append,
    _print_untrusted,
    _rate,
    workspace_path,
    write_outputs,
)
from gate.reporting.markup import cell


def run_baseline(
    loaded: Any,
    cases: Any,
    mode: Any,
    environ: Mapping[str, str],
    sandbox: str = "require",
    *,
    adopt: str = "",
    adopt_head: str = "",
) -> int:
    from gate.cli.running import refuse_errored_baseline, warn_failing_critical
    from gate.files import write_bytes
    from gate.history.commands import add_run, default_commit
    from gate.history.locate import working_export
    from gate.holdout import scoring as holdout
    from gate.pipeline.givens import sandbox_plan
    from gate.pipeline.run import adopt_recorded
    from gate.produce.supervise import run_supervised
    from gate.reporting.terminal import run_summary
    from gate.results import write_results

    path = loaded.baseline_path
    if path is None:
        raise ConfigError(f"{loaded.path}: set `baseline:` to the file the baseline is written to")
    if adopt:  # before the run: the baseline replays what CI recorded, not the author's
        _adopt_verified(loaded, cases, Path(adopt), adopt_head)
    scratch = private_scratch("casegate-", environ.get("RUNNER_TEMP"))
    # The held-out slice is scored in this process, never in the child (it has no key).
    held_out = holdout.prepare(loaded, mode=mode, environ=environ, gate_process=True)
    plan = sandbox_plan(sandbox, loaded, mode, environ, cases)  # type: ignore[arg-type]
    for line in plan.describe():
        print(line, flush=True)
    # A recording run records into a folder of its own; the gate writes what it reported.
    kept = scratch / "recorded" if mode == "record" else None
    if kept is not None:
        kept.mkdir()
    child = run_supervised(
        loaded.path,
        loaded.overrides,
        mode,
        scratch / "baseline.json",
        expected=[case.id for case in cases],
        show_progress=False,
        capture=True,
        reap=True,
        withhold=holdout.key_variables(loaded),
        sandbox=plan,
        estimate=True,  # a baseline is estimated, never stopped early against the old one
        recordings_into=kept,
    )
    for line in child.sandbox_notes:
        print(line, flush=True)
    _print_untrusted(child.output)
    results = child.results
    if results.interrupted:
        return EXIT_INTERRUPTED
    if kept is not None:  # merged code: the judge's verdicts it asked for are kept too
        print(adopt_recorded(loaded, cases, results, kept, every_entry=True), flush=True)
    refuse_errored_baseline(results, allow_errors=False)
    warn_failing_critical(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    if held_out is not None:
        previous = holdout.configured_baseline(loaded)
        results.holdout = holdout.score(held_out, loaded, mode, baseline=previous)
        write_results(results, scratch / "baseline.json")
    write_bytes(path, (scratch / "baseline.json").read_bytes())
    # The run joins the committed history beside its baseline (casegate-baseline.yml commits
    # both); a one-off job keeps no cache, so the export is read into memory.
    recorded = add_run(
        results, path, working_export(loaded), None, default_commit(Path.cwd(), environ)
    )
    _print_untrusted(run_summary(results))  # names and reasons come from the repository
    _print_untrusted(recorded)
    if results.holdout is not None:
        _print_untrusted(holdout.summary_line(results.holdout))
    workspace = Path(environ.get("GITHUB_WORKSPACE") or os.getcwd())
    shown = workspace_path(str(path), Path.cwd(), workspace)
    write_outputs(
        environ.get("GITHUB_OUTPUT"),
        {"pass-rate": _rate(results.summary.pass_rate), "results-path": shown},
    )
    _append(
        environ.get("GITHUB_STEP_SUMMARY"),
        f"### casegate: baseline refreshed — {cell(loaded.config.suite)}\n\n"
        f"{results.summary.passed}/{results.summary.cases} cases pass; written to "
        f"{cell(shown)}.\n",
    )
    return 0


def _adopt_verified(loaded: Any, cases: Any, folder: Path, head: str) -> None:
    """What CI sealed for the merged pull request's head, taken in (gate.produce.verified)."""
    from gate.produce.recordings import RecordingStore
    from gate.produce.seal import KEY_ENV, held
    from gate.produce.verified import ARTIFACT, adopt, read_manifest

    if not folder.exists():
        print(
            f"adopt-recordings: {folder} does not exist: the merged pull request verified "
            f"nothing (no `{ARTIFACT}` artifact), so nothing is adopted",
            flush=True,
        )
        return
    key = held()
    if key is None:
        raise ConfigError(
            f"input `adopt-recordings` needs {KEY_ENV} in the step's env: without the key CI "
            "seals with, no seal can be told from a forgery"
        )
    if not head:
        raise ConfigError(
            "input `adopt-recordings` needs `adopt-head`, the merged pull request's head "
            "commit: only what CI verified on it is adopted"
        )
    entries = read_manifest(folder, key, loaded.config.suite, head)
    adopted = adopt(entries, RecordingStore(loaded.recordings_dir), {c.id for c in cases}, key)
    for line in adopted.lines(folder):
        _print_untrusted(line)
