"""What the commands that run the suite do: run, record, baseline, check, merge; and the
ones that read it: list, validate, plan, judge calibrate. gate/cli/ parses and dispatches."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gate.errors import INTERRUPTED
from gate.reporting import show
from gate.suite.project import load, load_project, selection_of

if TYPE_CHECKING:
    from gate.suite.config import LoadedConfig


def _execute(
    args: argparse.Namespace, *, record_pairs: bool = True, estimate: bool = False
) -> tuple[Any, Any, Any]:
    """The run's (loaded config, selected cases, results)."""
    from gate.judging import pairwise, rejudge
    from gate.pipeline.run import execute

    loaded, cases = load(args)
    mode = args.mode or loaded.config.mode
    selection = selection_of(args)
    results = execute(
        loaded,
        cases,
        mode,
        only_missing=getattr(args, "only_missing", False),
        show_progress=not args.quiet,
        selection=selection.to_dict(),
        estimate=estimate,
    )
    results.shard = selection.shard.to_dict() if selection.shard else None
    if mode == "record" and record_pairs:
        # Pairwise verdicts are keyed on the baseline's outputs too: recorded against the
        # configured baseline, so that `check` in replay finds them.
        only_missing = getattr(args, "only_missing", False)
        for line in pairwise.record_against_baseline(
            loaded, cases, results, only_missing=only_missing
        ):
            print(f"casegate: {line}", file=sys.stderr)
        for line in rejudge.record_against_baseline(loaded, cases, only_missing=only_missing):
            print(f"casegate: {line}", file=sys.stderr)
    _score_holdout(args, loaded, results, mode)
    return loaded, cases, results


def _score_holdout(args: argparse.Namespace, loaded: Any, results: Any, mode: Any) -> None:
    """The held-out slice, in this process: aggregates into `results` (gate.holdout)."""
    if loaded.config.holdout is None:
        return
    from gate.holdout.scoring import score_here

    score_here(
        loaded,
        results,
        mode,
        selection=selection_of(args),
        only_missing=getattr(args, "only_missing", False),
        show_progress=not args.quiet,
    )


def _print_holdout(results: Any) -> None:
    if results.holdout is not None:
        from gate.holdout.scoring import summary_line

        print(summary_line(results.holdout))


def default_out(suite: str) -> Path:
    return Path(".casegate") / f"{suite}-results.json"


def interrupted(results: Any, out: Path | None) -> int:
    kept = f"; results for the {len(results.cases)} finished case(s): {out}" if out else ""
    print(f"casegate: interrupted{kept}", file=sys.stderr)
    return INTERRUPTED


def cmd_run(args: argparse.Namespace) -> int:
    return _run(args)[0]


def _run(args: argparse.Namespace) -> tuple[int, Any]:
    """Run, write the results and print the summary: the exit code and the results."""
    from gate.reporting.terminal import run_summary
    from gate.results import ensure_replaceable, write_results

    if args.out:  # before the run: a refused path must not cost a paid run
        ensure_replaceable(args.out)
    loaded, cases, results = _execute(args, estimate=getattr(args, "for_baseline", False))
    out = args.out or default_out(results.suite)
    write_results(results, out)
    if results.interrupted:
        return interrupted(results, out), results
    _record_history(loaded, cases, results)
    if getattr(args, "junit", None):
        from gate.reporting.junit import write_junit

        write_junit(results, args.junit)
    if not args.quiet:
        print(run_summary(results))
        _print_holdout(results)
        print(f"results: {out}")
        print_part(results)
    _warn_old_recordings(results)
    print_verbose(args, results)
    return 0, results


def print_part(results: Any) -> None:
    if results.shard is not None:
        print(
            f"shard {results.shard['index']}/{results.shard['count']}: a part, not a verdict; "
            "join every part with `casegate merge PARTS... --out results.json` "
            "(or gate them with `casegate check --parts PARTS...`)"
        )


def _warn_old_recordings(results: Any) -> None:
    from gate.drift.age import replay_warnings
    from gate.reporting.show import one_line

    for warning in replay_warnings(results):  # case ids are the suite's: kept on one line
        print(f"casegate: warning: {one_line(warning)}", file=sys.stderr)


def print_verbose(args: argparse.Namespace, results: Any) -> None:
    from gate.reporting.terminal import verbose_failures

    if getattr(args, "verbose", False):
        text = verbose_failures(results, colour=show.wants_colour(sys.stdout))
        if text:
            print("\n" + text)


def cmd_merge(args: argparse.Namespace) -> int:
    """Join the shards' parts; checked against the config's cases (gate.produce.merge)."""
    from gate.produce.merge import expected_of, merge, read_parts
    from gate.reporting.terminal import run_summary
    from gate.results import ensure_replaceable, write_results
    from gate.suite.select import Selection

    ensure_replaceable(args.out)
    parts = read_parts(args.parts)
    first = parts[0][1]
    selection = Selection.stored(first.selection)
    loaded, cases = load_project(args.config, first.overrides, selection)
    merged = merge(parts, expected=expected_of(cases), config_hash=loaded.config_hash())
    if loaded.config.holdout is not None and merged.mode == "replay":
        # As `run` scores it (from sealed recordings, in this process): shards skip it.
        from gate.holdout.scoring import score_here

        score_here(loaded, merged, "replay", selection=selection, show_progress=not args.quiet)
    write_results(merged, args.out)
    if not args.quiet:
        print(run_summary(merged))
        print(f"results: {args.out} (merged from {len(parts)} parts)")
    return 0


def cmd_baseline(args: argparse.Namespace) -> int:
    from gate.errors import ConfigError
    from gate.reporting.terminal import run_summary
    from gate.results import write_results

    if args.dry_run:
        return _dry_run(args, estimate=True)
    # A baseline is not compared with itself, and is estimated (gate.deciding.noise.adaptive).
    loaded, cases, results = _execute(args, record_pairs=False, estimate=True)
    if results.interrupted:
        return interrupted(results, None)  # a partial baseline would judge the next PR wrongly
    refuse_errored_baseline(results, args.allow_errors)
    warn_failing_critical(results)
    loaded_path = results.config.get("baseline")
    if not loaded_path:
        raise ConfigError(f"{args.config}: set `baseline:` to the file the baseline is written to")
    path = args.config.resolve().parent / loaded_path
    write_results(results, path)
    _warn_baseline_on_a_branch(args.config, path)
    _record_history(loaded, cases, results)
    if not args.quiet:
        print(run_summary(results))
        _print_holdout(results)
    print(f"baseline: {path}")
    return 0


def _warn_baseline_on_a_branch(config: Path, path: Path) -> None:
    """A baseline written on a branch is one its pull request must not carry.

    The pull request's check reads the base's baseline and blocks on an edited one as a
    ruler change until a maintainer accepts it; the baseline workflow writes the merged
    one. What the branch needs is the recordings, which `record --for-baseline` writes."""
    from gate.suite.branches import holds, implied_base

    folder = config.resolve().parent
    found = implied_base(folder)
    # The first pull request, the one adding casegate, brings the first baseline: it is
    # a ruler change either way, and there is no other baseline to keep.
    if found is not None and holds(folder, found.commit, path):
        print(
            f"casegate: warning: on branch '{found.branch}', {path.name} is {found.default}'s "
            "to write: its pull request's check reads the base's copy and blocks on an edited "
            "one until a maintainer accepts the ruler change. Commit recordings/ without it "
            f"(git restore -- {shlex.quote(os.path.relpath(path))}); casegate-baseline.yml "
            "refreshes it after the merge. `casegate record --for-baseline` records as many "
            "samples and writes no baseline",
            file=sys.stderr,
        )


def _record_history(loaded: Any, cases: Any, results: Any) -> None:
    """Under `history: {record: all}`, the complete run joins the history (on stderr,
    what was added or why not); `check --base` never writes it (gate.history.autorecord)."""
    from gate.history.autorecord import record_run

    said = record_run(loaded, cases, results)
    if said is not None:
        print(f"casegate: {show.one_line(said)}", file=sys.stderr)


def _dry_run(args: argparse.Namespace, *, estimate: bool) -> int:
    """What the run would call and spend, from the recordings there are; no call made."""
    from gate.checks import uses_judge
    from gate.checks.graded import judged_checks
    from gate.produce import dryrun

    loaded, cases = load(args)
    mode = args.mode or loaded.config.mode
    if mode == "replay":
        print("dry run: replay calls nothing (record with --mode record)")
        return 0
    only_missing = getattr(args, "only_missing", False)
    planned = dryrun.plan_calls(loaded, cases, only_missing=only_missing, estimate=estimate)
    judged = sum(1 for case in cases if uses_judge(case.expect))
    repeats = (loaded.config.judge.consistency if loaded.config.judge else None) or 1
    asks = repeats * sum(len(judged_checks(case.expect)) for case in cases)
    for line in dryrun.describe(loaded, planned, judged=judged, asks=asks):
        print(line)
    return 0


def refuse_errored_baseline(results: Any, allow_errors: bool) -> None:
    """A baseline with errored cases would vouch for nothing on them: refuse it."""
    from gate.errors import ResultsError

    errored = [case.id for case in results.cases if case.status == "error"]
    if errored and not allow_errors:
        shown = ", ".join(errored[:10]) + (" …" if len(errored) > 10 else "")
        raise ResultsError(
            f"the run has {len(errored)} case(s) in error ({shown}); a baseline must hold a "
            "verdict for every case: fix the cause and run again, or pass --allow-errors "
            "to write it anyway"
        )
    if not results.cases:
        raise ResultsError("the run judged no case: there is no baseline to write")


def cmd_list(args: argparse.Namespace) -> int:
    """The suite's cases, one line each: what `--case` and `--tag` choose from."""
    from tabulate import tabulate

    if args.stats:  # `casegate suite`, word for word (`--json` as its `--format json`)
        from gate.cli.composition import render

        print(render(args, as_json=args.json))
        return 0
    loaded, cases = load(args)
    rows = [
        {
            "id": case.id,
            "tags": case.tags,
            "critical": case.is_critical,
            "samples": case.samples or loaded.config.samples,
            "source": f"{case.source}:{case.line}",
        }
        for case in cases
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = [
        [r["id"], ", ".join(r["tags"]), "yes" if r["critical"] else "", r["samples"], r["source"]]
        for r in rows
    ]
    headers = ["id", "tags", "critical", "samples", "file:line"]
    print(tabulate(table, headers=headers, tablefmt="plain", disable_numparse=True))
    print(f"{len(rows)} case(s), {sum(1 for r in rows if r['critical'])} critical")
    if loaded.config.holdout is not None:
        print(f"and a held-out slice in {loaded.config.holdout.path} (sealed: never listed)")
    return 0


def warn_failing_critical(results: Any) -> None:
    """A critical case failing in the baseline can never count as a critical regression."""
    failing = [case.id for case in results.cases if case.critical and not case.passed]
    if failing:
        shown = ", ".join(failing[:10]) + (" …" if len(failing) > 10 else "")
        print(
            f"casegate: warning: {len(failing)} critical case(s) fail in this baseline "
            f"({shown}): a later failure of them cannot count as a critical regression; "
            "fix them first (or set gate.block_on_critical_failure)",
            file=sys.stderr,
        )


def cmd_record(args: argparse.Namespace) -> int:
    """`run --mode record`; exit 2 when a call failed, once what succeeded is recorded."""
    args.mode = "record"
    if args.dry_run:
        return _dry_run(args, estimate=args.for_baseline)
    code, results = _run(args)
    from gate.produce.seal import KEY_ENV, held

    key = held()
    if key is not None:  # each answer was sealed as it was written
        print(f"recordings sealed with {KEY_ENV} (key id {key.key_id})", file=sys.stderr)
    if code == 0:
        refuse_failed_calls(results)
    return code


def refuse_failed_calls(results: Any) -> None:
    """A recording run with a failed call recorded less than was asked: say so, exit 2.

    Every response that arrived is already on disk (recordings are written as they come,
    and a failed call is never recorded), so the fix costs only what failed.
    """
    from gate.errors import ResultsError
    from gate.reporting.markup import truncate
    from gate.reporting.show import one_line

    failed = [s for case in results.cases for s in case.outputs if s.status == "error"]
    if not failed:
        return
    cases = [case.id for case in results.cases if case.status == "error"]
    shown = ", ".join(cases[:10]) + (f" and {len(cases) - 10} more" if len(cases) > 10 else "")
    samples = sum(len(case.outputs) for case in results.cases)
    raise ResultsError(
        f"{len(failed)} of {samples} sample(s) failed a call, in {len(cases)} case(s): "
        f"{shown} (first: {truncate(one_line(failed[0].reason), 200)}); every response that "
        "arrived is recorded: fix the cause and run `casegate record --only-missing`"
    )


def cmd_plan(args: argparse.Namespace) -> int:
    from gate.deciding.noise.plan import report
    from gate.errors import ConfigError
    from gate.results import read_results
    from gate.suite.config import load_config

    loaded = load_config(args.config)
    path = args.baseline or loaded.baseline_path
    if path is None:
        raise ConfigError(f"{args.config}: set `baseline:` or pass --baseline: plan reads it")
    if not (0 < args.drop < 1 and 0 < args.power < 1):
        raise ConfigError("--drop and --power are shares between 0 and 1 (e.g. 0.15, 0.9)")
    if args.score_drop is not None and not 0 < args.score_drop < 1:
        raise ConfigError("--score-drop is a fall of a score from 0 to 1 (e.g. 0.1)")
    print(report(read_results(path), loaded, args.drop, args.power, args.score_drop))
    return 0


def import_python_target(loaded: LoadedConfig) -> None:
    """`validate`: import a python system's target, blaming the config's line on failure."""
    from gate import usercode
    from gate.errors import ConfigError, located
    from gate.judging.services import import_targets
    from gate.yamlfile import line_of, load_yaml_file

    import_targets(loaded)  # the embeddings and moderation services' python targets
    system = loaded.config.system
    if system.provider != "python" or not system.target:
        return
    try:
        usercode.load_callable(system.target, "system.target", loaded.root)
    except usercode.UserCodeError as exc:
        raw = load_yaml_file(loaded.path)
        line = line_of(raw.get("system"), "target") if isinstance(raw, dict) else None
        raise ConfigError(located(loaded.path, line, str(exc))) from None


def cmd_validate(args: argparse.Namespace) -> int:
    from gate.judging.live import preflight
    from gate.judging.sample import make_grader, prepare_user_checks
    from gate.produce.recordings import RecordingStore
    from gate.suite.cases import unexplained, unsourced

    loaded, cases = load(args)
    import_python_target(loaded)
    prepare_user_checks(loaded, cases)
    preflight(loaded, cases, loaded.resolved_system())
    make_grader(
        loaded, cases, "replay", RecordingStore(loaded.recordings_dir), reuse_recorded=False
    )
    files = len({case.source for case in cases})
    print(f"ok: {len(cases)} cases in {files} file(s), suite {loaded.config.suite!r}")
    for warning in [*unsourced(cases), *unexplained(cases)]:
        print(f"casegate: warning: {warning}", file=sys.stderr)
    if loaded.config.holdout is not None:
        from gate.holdout.scoring import validate_line

        print(validate_line(loaded))
    return 0


def cmd_judge_calibrate(args: argparse.Namespace) -> int:
    from gate.files import write_text
    from gate.judging import calibration

    loaded, cases = load(args)
    labels = calibration.read_labels(args.labels, cases)
    result = calibration.calibrate(
        loaded, labels, args.mode or loaded.config.mode, only_missing=args.only_missing
    )
    path = args.out or calibration.calibration_path(loaded)
    write_text(path, json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print("\n".join(calibration.summary_lines(result)))
    for line in calibration.disagreement_lines(result, args.labels):
        print(line)
    print(f"calibration: {path}")
    if result["below_bar"]:
        # Stored all the same: the figures are the measurement, the bar what they must reach.
        print("below the suite's bar (`calibration:`), so its verdicts are not yet trusted:")
        for short in result["below_bar"]:
            print(f"  {short}")
        return 1
    print("meets the suite's bar (`calibration:`)")
    return 0
