"""The `casegate` command line. Errors become one line each and exit code 2."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from gate import __version__, importers
from gate.cli import composition, recordings, viewing
from gate.cli.checking import cmd_check
from gate.cli.comparing import _silence_stdout, cmd_compare, cmd_gate
from gate.cli.running import (
    cmd_baseline,
    cmd_judge_calibrate,
    cmd_list,
    cmd_merge,
    cmd_plan,
    cmd_record,
    cmd_run,
    cmd_validate,
)
from gate.drift import command as drift
from gate.errors import CasegateError, link_loop
from gate.grow import command as grow
from gate.history import parser as history_parser
from gate.holdout import parser as holdout_parser
from gate.produce.batch import parser as batch_parser
from gate.reporting import show
from gate.secrets import redact
from gate.suite import options, schema, starter

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


def _dry_run_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the calls it would make and their cost at `pricing:`; call nothing",
    )


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
    record.add_argument(
        "--for-baseline",
        action="store_true",
        help="record every case at the count its baseline is estimated from (what the "
        "baseline refresh after a merge replays), and write no baseline: a branch's recording",
    )
    _dry_run_option(record)
    record.set_defaults(handler=cmd_record)

    listing = commands.add_parser("list", help="list the cases: id, tags, critical, file:line")
    options.config_option(listing)
    options.selection_options(listing)
    listing.add_argument("--json", action="store_true", help="as a JSON array")
    listing.add_argument(
        "--stats",
        action="store_true",
        help="what the suite is made of instead, as `casegate suite` prints it",
    )
    composition.days_option(listing)
    listing.set_defaults(handler=cmd_list)
    composition.add_parser(commands)

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
        sub.add_argument(
            "--allow-config-change",
            action="store_true",
            help="compare runs measured differently (samples, judge pin, checks, selection, "
            "removed cases); the report says what differed",
        )
        if name == "compare":
            sub.add_argument("--format", choices=("text", "markdown", "json"), default="text")
            sub.add_argument("--out", type=Path, help="write the report here instead of stdout")
            sub.add_argument("--junit", type=Path, metavar="PATH", help="also write JUnit XML")
        sub.set_defaults(handler=handler)

    plan = commands.add_parser("plan", help="samples and cases a wanted power needs (baseline)")
    options.config_option(plan)
    plan.add_argument("--drop", type=float, default=0.15, help="the drop to detect (0.15)")
    plan.add_argument("--power", type=float, default=0.9, help="the chance to detect it (0.9)")
    plan.add_argument(
        "--score-drop",
        type=float,
        help="the fall of a mean score to detect (default: twice max_mean_score_drop, or 0.1)",
    )
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
    base = check.add_mutually_exclusive_group()
    base.add_argument(
        "--base",
        metavar="REF",
        help="read the ruler (gate rule, cases, baseline) from this commit, as a pull request "
        "is (default on a branch other than the default one: its merge base with it)",
    )
    base.add_argument(
        "--no-base",
        action="store_true",
        help="compare with the working copy's baseline and ruler, even on a branch",
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
    check.add_argument(
        "--verify",
        choices=("off", "changed"),
        help="with --base, in replay: changed records again, live, the cases whose recordings "
        "differ from the base's before judging (default: the base config's `verify:`)",
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
    _dry_run_option(baseline)
    baseline.set_defaults(handler=cmd_baseline)

    starter.add_parser(commands)
    schema.add_parser(commands)
    recordings.add_parser(commands)
    show.add_parser(commands)
    viewing.add_parser(commands)
    drift.add_parser(commands)
    importers.add_parser(commands)
    grow.add_parser(commands)
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
        # Out of the environment before any suite code runs, or any process starts.
        from gate.produce.seal import hold_from_environment

        hold_from_environment()
        return handler(args)
    except CasegateError as exc:
        for problem in exc.problems:
            print(f"casegate: {redact(problem)}", file=sys.stderr)
            if problem in exc.excerpts:
                print(redact(exc.excerpts[problem]), file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        # `casegate … | head`: the reader left; say nothing more, as a filter would. Before
        # OSError, which it is: that handler would re-raise it as a traceback.
        _silence_stdout()
        return 141  # 128 + SIGPIPE, what the shell reports for a closed pipe
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


def _ignore_further_interrupts() -> None:
    """A second Ctrl-C while casegate is already stopping prints no traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
