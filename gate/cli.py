"""The `casegate` command line. Errors become one line each and exit code 2."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gate import __version__, importers
from gate.drift import command as drift
from gate.errors import INTERRUPTED, CasegateError, link_loop
from gate.history import parser as history_parser
from gate.holdout import parser as holdout_parser
from gate.produce import housekeeping
from gate.produce.batch import parser as batch_parser
from gate.reporting import show
from gate.secrets import redact
from gate.suite import options, starter
from gate.suite.project import load, load_project, selection_of

Handler = Callable[[argparse.Namespace], int]


def _run_options(parser: argparse.ArgumentParser, *, mode: bool = True) -> None:
    options.config_option(parser)
    if mode:
        parser.add_argument(
            "--mode", choices=("replay", "record", "live"), help="override the config's mode"
        )
    options.set_option(parser)
    parser.add_argument("--quiet", action="store_true", help="no summary and no progress bar")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="also print each failing case's full output"
    )
    options.selection_options(parser)


def _execute(args: argparse.Namespace, *, record_pairs: bool = True, estimate: bool = False) -> Any:
    from gate.judging import pairwise
    from gate.produce.run import execute

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
    _score_holdout(args, loaded, results, mode)
    return results


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


def _default_out(suite: str) -> Path:
    return Path(".casegate") / f"{suite}-results.json"


def _interrupted(results: Any, out: Path | None) -> int:
    kept = f"; results for the {len(results.cases)} finished case(s): {out}" if out else ""
    print(f"casegate: interrupted{kept}", file=sys.stderr)
    return INTERRUPTED


def cmd_run(args: argparse.Namespace) -> int:
    from gate.reporting.terminal import run_summary
    from gate.results import ensure_replaceable, write_results

    if args.out:  # before the run: a refused path must not cost a paid run
        ensure_replaceable(args.out)
    results = _execute(args)
    out = args.out or _default_out(results.suite)
    write_results(results, out)
    if results.interrupted:
        return _interrupted(results, out)
    if getattr(args, "junit", None):
        from gate.reporting.junit import write_junit

        write_junit(results, args.junit)
    if not args.quiet:
        print(run_summary(results))
        _print_holdout(results)
        print(f"results: {out}")
        _print_part(results)
    _warn_old_recordings(results)
    _print_verbose(args, results)
    return 0


def _print_part(results: Any) -> None:
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


def _print_verbose(args: argparse.Namespace, results: Any) -> None:
    from gate.reporting.terminal import verbose_failures

    if getattr(args, "verbose", False):
        text = verbose_failures(results, colour=show.wants_colour(sys.stdout))
        if text:
            print("\n" + text)


def _gate_rule(args: argparse.Namespace, candidate: Any) -> Any:
    """The rule from -c CONFIG, else ./casegate.yml, else the candidate's own, else defaults."""
    from gate.errors import ConfigError
    from gate.suite.config import GateConfig, load_config

    explicit = getattr(args, "config_given", False)
    if explicit or args.config.is_file():
        return load_config(args.config).config.gate
    embedded = candidate.config.get("gate")
    if embedded is None:
        return GateConfig()
    try:
        return GateConfig.model_validate(embedded)
    except ValueError as exc:
        raise ConfigError(f"the candidate's gate rule is invalid: {exc}") from None


def _stale_baseline(args: argparse.Namespace, baseline: Any) -> list[str]:
    """The baseline's staleness, against -c CONFIG (or ./casegate.yml) when there is one."""
    from gate.deciding.staleness import baseline_warnings
    from gate.suite.config import load_config

    explicit = getattr(args, "config_given", False)
    reference = load_config(args.config) if explicit or args.config.is_file() else None
    return baseline_warnings(baseline, reference)


def _compare_files(args: argparse.Namespace) -> tuple[Any, Any, Any, Any]:
    from gate.ci import with_judge_lines
    from gate.deciding.compare import compare
    from gate.deciding.rules import decide
    from gate.results import read_results

    baseline = read_results(args.baseline)
    candidate = read_results(args.candidate)
    rule = _gate_rule(args, candidate)
    comparison = compare(baseline, candidate, rule)
    comparison.pairwise = _replayed_pairs(args, baseline, candidate)
    comparison.warnings = _stale_baseline(args, baseline)
    comparison.holdout = _held_out(args, baseline, candidate) or comparison.holdout
    comparison.history = _history(args, comparison, candidate)
    verdict = decide(comparison, rule)
    root = args.config.resolve().parent if args.config.is_file() else Path.cwd()
    return baseline, candidate, comparison, with_judge_lines(verdict, candidate, root)


def _history(args: argparse.Namespace, comparison: Any, candidate: Any) -> Any:
    """The config's results history (gate.history), read from the working copy: `compare`
    and `gate` judge files already on disk; only `check --base` and the Action judge a
    pull request, and they read the base commit's copy."""
    from gate.history.locate import trusted_export
    from gate.history.report import notes_for
    from gate.suite.config import load_config

    if not (getattr(args, "config_given", False) or args.config.is_file()):
        return None
    loaded = load_config(args.config)
    if loaded.config.suite != comparison.suite:
        return None
    export, source = trusted_export(loaded, None)
    return notes_for(comparison, candidate, export, source, candidate_label="candidate")


def _held_out(args: argparse.Namespace, baseline: Any, candidate: Any) -> Any:
    """The held-out slices compared case by case, when the key is set (else aggregates)."""
    from gate.holdout.scoring import key_for
    from gate.holdout.verdicts import compare_runs
    from gate.suite.config import load_config

    if candidate.holdout is None and baseline.holdout is None:
        return None
    explicit = getattr(args, "config_given", False)
    loaded = load_config(args.config) if explicit or args.config.is_file() else None
    return compare_runs(baseline, candidate, key_for(loaded))


def _replayed_pairs(args: argparse.Namespace, baseline: Any, candidate: Any) -> Any:
    """Pairwise verdicts for two results files, replayed from the config's recordings."""
    from gate.judging import pairwise
    from gate.suite.config import load_config

    explicit = getattr(args, "config_given", False)
    if not (explicit or args.config.is_file()):
        return None
    config = load_config(args.config).config
    if config.judge is None or config.suite != candidate.suite:
        return None  # no judge pinned: the suite has no pairwise case
    loaded, cases = load_project(args.config)
    return pairwise.replayed(loaded, cases, baseline, candidate)


def _render(fmt: str, comparison: Any, verdict: Any) -> str:
    from gate.reporting import report

    if fmt == "markdown":
        return report.markdown_report(comparison, verdict)
    if fmt == "json":
        return json.dumps(report.json_report(comparison, verdict), indent=2) + "\n"
    return report.text_report(comparison, verdict) + "\n"


def cmd_compare(args: argparse.Namespace) -> int:
    from gate.files import write_text
    from gate.reporting.junit import write_junit

    _, candidate, comparison, verdict = _compare_files(args)
    rendered = _render(args.format, comparison, verdict)
    if args.out:
        write_text(args.out, rendered)
    else:
        sys.stdout.write(rendered)
    if args.junit:
        write_junit(candidate, args.junit, frozenset(comparison.regressions))
    return 0


def cmd_gate(args: argparse.Namespace) -> int:
    from gate.reporting.report import text_report
    from gate.suite.select import require_same_selection

    baseline, candidate, comparison, verdict = _compare_files(args)
    require_same_selection(baseline.selection, candidate.selection)
    try:
        print(text_report(comparison, verdict), flush=True)
    except BrokenPipeError:
        _silence_stdout()  # `casegate gate … | head`: the verdict is the exit code still
    return int(verdict.exit_code)


def _local_ruling(args: argparse.Namespace, scratch: Path) -> Any:
    """`check --base REF`: the ruler from REF, accepted only by --accept-ruler-change."""
    from gate.deciding.ruler import ruling_for

    return ruling_for(
        args.config,
        args.overrides,
        base_ref=args.base,
        scratch=scratch,
        baseline=str(args.baseline) if args.baseline else None,
        acceptance=lambda _label: "--accept-ruler-change" if args.accept_ruler_change else None,
        how_to_accept=lambda _label: "rerun with --accept-ruler-change to accept it",
    )


def cmd_check(args: argparse.Namespace) -> int:
    import tempfile

    from gate import ci
    from gate.reporting import report
    from gate.reporting.junit import write_junit

    loaded, cases = load(args)
    with tempfile.TemporaryDirectory(prefix="casegate-base-") as scratch:
        ruling = _local_ruling(args, Path(scratch)) if args.base else None
        outcome = ci.check(
            loaded,
            cases,
            baseline_path=ci.baseline_for(loaded, args.baseline),
            mode=args.mode or ci.ruled_mode(loaded, ruling),
            out=args.out or _default_out(loaded.config.suite),
            report_path=args.report,
            show_progress=not args.quiet,
            ruling=ruling,
            selection=selection_of(args),
            parts=args.parts,
            sandbox=args.sandbox,
        )
    for line in outcome.sandbox:
        print(line, file=sys.stderr)
    if outcome.part:
        print(f"results: {outcome.results_path}")
        _print_part(outcome.candidate)
        return 0
    if outcome.comparison is None or outcome.verdict is None:
        return _interrupted(outcome.candidate, outcome.results_path)
    if args.junit:
        write_junit(outcome.candidate, args.junit, frozenset(outcome.comparison.regressions))
    print(report.text_report(outcome.comparison, outcome.verdict))
    print(f"results: {outcome.results_path}\nreport: {outcome.report_path}")
    _print_verbose(args, outcome.candidate)
    return int(outcome.verdict.exit_code)


def cmd_merge(args: argparse.Namespace) -> int:
    """Join the shards' parts; checked against the config's cases (gate.produce.merge)."""
    from gate.produce.merge import expected_of, merge, read_parts
    from gate.reporting.terminal import run_summary
    from gate.results import ensure_replaceable, write_results
    from gate.suite.select import Selection

    ensure_replaceable(args.out)
    parts = read_parts(args.parts)
    first = parts[0][1]
    stored = first.selection or {}
    selection = Selection(tuple(stored.get("cases", ())), tuple(stored.get("tags", ())))
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

    # A baseline is not compared with itself, and is estimated (gate.deciding.noise.adaptive).
    results = _execute(args, record_pairs=False, estimate=True)
    if results.interrupted:
        return _interrupted(results, None)  # a partial baseline would judge the next PR wrongly
    refuse_errored_baseline(results, args.allow_errors)
    warn_failing_critical(results)
    loaded_path = results.config.get("baseline")
    if not loaded_path:
        raise ConfigError(f"{args.config}: set `baseline:` to the file the baseline is written to")
    path = args.config.resolve().parent / loaded_path
    write_results(results, path)
    if not args.quiet:
        print(run_summary(results))
        _print_holdout(results)
    print(f"baseline: {path}")
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
    args.mode = "record"
    return cmd_run(args)


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
    print(report(read_results(path), loaded, args.drop, args.power))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from gate.produce.recordings import RecordingStore
    from gate.produce.run import import_python_target, make_grader, preflight, prepare_user_checks

    loaded, cases = load(args)
    import_python_target(loaded)
    prepare_user_checks(loaded, cases)
    preflight(loaded, cases, loaded.resolved_system())
    make_grader(
        loaded, cases, "replay", RecordingStore(loaded.recordings_dir), reuse_recorded=False
    )
    files = len({case.source for case in cases})
    print(f"ok: {len(cases)} cases in {files} file(s), suite {loaded.config.suite!r}")
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
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="casegate",
        description="Guard model-backed features against regressions, case by case.",
    )
    parser.add_argument("--version", action="version", version=f"casegate {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run the suite and write per-case results")
    _run_options(run)
    options.shard_option(run)
    run.add_argument(
        "--out", type=Path, help="results file (default: .casegate/SUITE-results.json)"
    )
    run.add_argument("--junit", type=Path, metavar="PATH", help="also write JUnit XML")
    run.set_defaults(handler=cmd_run)

    record = commands.add_parser("record", help="run the real system and store its responses")
    _run_options(record, mode=False)
    options.shard_option(record)
    record.add_argument(
        "--out", type=Path, help="results file (default: .casegate/SUITE-results.json)"
    )
    record.add_argument(
        "--only-missing",
        action="store_true",
        help="call the system only for requests replay would miss",
    )
    record.set_defaults(handler=cmd_record)

    listing = commands.add_parser("list", help="list the cases: id, tags, critical, file:line")
    options.config_option(listing)
    options.selection_options(listing)
    listing.add_argument("--json", action="store_true", help="as a JSON array")
    listing.set_defaults(handler=cmd_list)

    validate = commands.add_parser("validate", help="load and lint the config and every case")
    options.config_option(validate)
    validate.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE"
    )
    validate.set_defaults(handler=cmd_validate)
    for name, handler, summary in (
        ("compare", cmd_compare, "compare a candidate results file with a baseline, case by case"),
        ("gate", cmd_gate, "apply the gate rule: exit 0 ship, 1 block, 2 error, 3 inconclusive"),
    ):
        sub = commands.add_parser(name, help=summary)
        sub.add_argument("baseline", type=Path, metavar="BASELINE.json")
        sub.add_argument("candidate", type=Path, metavar="CANDIDATE.json")
        options.config_option(sub)
        if name == "compare":
            sub.add_argument("--format", choices=("text", "markdown", "json"), default="text")
            sub.add_argument("--out", type=Path, help="write the report here instead of stdout")
            sub.add_argument("--junit", type=Path, metavar="PATH", help="also write JUnit XML")
        sub.set_defaults(handler=handler)

    plan = commands.add_parser("plan", help="samples and cases a wanted power needs (baseline)")
    options.config_option(plan)
    plan.add_argument("--drop", type=float, default=0.15, help="the drop to detect (0.15)")
    plan.add_argument("--power", type=float, default=0.9, help="the chance to detect it (0.9)")
    plan.add_argument("--baseline", type=Path, help="baseline file (default: the config's)")
    plan.set_defaults(handler=cmd_plan)

    check = commands.add_parser(
        "check", help="run the candidate, compare with the baseline, gate it (for CI)"
    )
    _run_options(check)
    shards = check.add_mutually_exclusive_group()
    options.shard_option(shards)
    shards.add_argument(
        "--parts",
        nargs="+",
        type=Path,
        default=[],
        metavar="PART.json",
        help="gate the shards' parts, merged, instead of running the suite",
    )
    check.add_argument("--baseline", type=Path, help="baseline file (default: the config's)")
    check.add_argument(
        "--out", type=Path, help="results file (default: .casegate/SUITE-results.json)"
    )
    check.add_argument("--report", type=Path, help="markdown report (default: beside the results)")
    check.add_argument("--junit", type=Path, metavar="PATH", help="also write JUnit XML")
    check.add_argument(
        "--base",
        metavar="REF",
        help="read the ruler (gate rule, cases, baseline) from this commit, as a pull request is",
    )
    check.add_argument(
        "--accept-ruler-change",
        action="store_true",
        help="with --base: accept a change that loosens the ruler (it is still reported)",
    )
    check.add_argument(
        "--sandbox",
        choices=("auto", "require", "off"),
        default="auto",
        help="run the suite's code as an unprivileged user with no network in replay: auto "
        "(when casegate is root), require (refuse to run without it), off",
    )
    check.set_defaults(handler=cmd_check)

    merging = commands.add_parser(
        "merge", help="join the results of every --shard I/N part into one run"
    )
    merging.add_argument("parts", nargs="+", type=Path, metavar="PART.json")
    merging.add_argument("--out", type=Path, required=True, help="the merged results file")
    options.config_option(merging)
    merging.add_argument("--quiet", action="store_true", help="no summary")
    merging.set_defaults(handler=cmd_merge)

    baseline = commands.add_parser("baseline", help="run and write the configured baseline file")
    _run_options(baseline)
    baseline.add_argument(
        "--allow-errors",
        action="store_true",
        help="write the baseline even when some cases are in error",
    )
    baseline.set_defaults(handler=cmd_baseline)

    starter.add_parser(commands)
    housekeeping.add_parser(commands)
    show.add_parser(commands)
    drift.add_parser(commands)
    importers.add_parser(commands)
    holdout_parser.add_parser(commands)
    batch_parser.add_parser(commands)
    history_parser.add_parser(commands)

    judge = commands.add_parser("judge", help="the pinned LLM judge")
    judge_commands = judge.add_subparsers(dest="judge_command", required=True, metavar="COMMAND")
    calibrate = judge_commands.add_parser(
        "calibrate", help="measure the judge against verdicts a person gave (agreement, kappa)"
    )
    calibrate.add_argument(
        "labels",
        type=Path,
        metavar="LABELS.jsonl",
        help='lines of {"case", "output", "verdict"}, or for a pairwise judge '
        '{"case", "baseline_output", "candidate_output", "label"}',
    )
    _run_options(calibrate)
    calibrate.add_argument(
        "--only-missing", action="store_true", help="with --mode record: reuse recorded verdicts"
    )
    calibrate.add_argument(
        "--out", type=Path, help="calibration file (default: SUITE.judge-calibration.json)"
    )
    calibrate.set_defaults(handler=cmd_judge_calibrate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    raw = list(sys.argv[1:] if argv is None else argv)
    args.config_given = any(a in ("-c", "--config") or a.startswith("--config=") for a in raw)
    handler: Handler = args.handler
    try:
        return handler(args)
    except CasegateError as exc:
        for problem in exc.problems:
            print(f"casegate: {redact(problem)}", file=sys.stderr)
        return exc.exit_code
    except (OSError, RuntimeError) as exc:
        loop = link_loop(exc)
        if loop is None:
            raise
        print(f"casegate: {redact(loop.problems[0])}", file=sys.stderr)
        return loop.exit_code
    except KeyboardInterrupt:
        _ignore_further_interrupts()
        print("casegate: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `casegate … | head`: the reader left; say nothing more, as a filter would.
        _silence_stdout()
        return 141  # 128 + SIGPIPE, what the shell reports for a closed pipe


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _ignore_further_interrupts() -> None:
    """A second Ctrl-C while casegate is already stopping prints no traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
