"""The `casegate` command line. Errors become one line each and exit code 2."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gate import __version__
from gate.errors import CasegateError

Handler = Callable[[argparse.Namespace], int]


def _config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-c",
        "--config",
        default="casegate.yml",
        type=Path,
        help="run configuration (default: %(default)s)",
    )


def _run_options(parser: argparse.ArgumentParser, *, mode: bool = True) -> None:
    _config_option(parser)
    if mode:
        parser.add_argument(
            "--mode", choices=("replay", "record", "live"), help="override the config's mode"
        )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field for this run, e.g. system.model=gpt-4.1 (repeatable)",
    )
    parser.add_argument("--quiet", action="store_true", help="no summary and no progress bar")


def load(args: argparse.Namespace) -> tuple[Any, Any]:
    from gate.cases import load_cases, resolve_case_paths
    from gate.config import load_config
    from gate.errors import CaseFileError, ConfigError

    loaded = load_config(args.config, getattr(args, "overrides", ()))
    files, problems = resolve_case_paths(loaded.config.cases, loaded.root)
    if problems:
        raise ConfigError([f"{args.config}: {p}" for p in problems])
    try:
        cases = load_cases(files, display_root=Path.cwd())
    except CaseFileError:
        raise
    return loaded, cases


def _execute(args: argparse.Namespace) -> Any:
    from gate.run import execute

    loaded, cases = load(args)
    mode = args.mode or loaded.config.mode
    return execute(
        loaded,
        cases,
        mode,
        only_missing=getattr(args, "only_missing", False),
        show_progress=not args.quiet,
    )


def _default_out(suite: str) -> Path:
    return Path(".casegate") / f"{suite}-results.json"


def cmd_run(args: argparse.Namespace) -> int:
    from gate.results import write_results
    from gate.terminal import run_summary

    results = _execute(args)
    out = args.out or _default_out(results.suite)
    write_results(results, out)
    if not args.quiet:
        print(run_summary(results))
        print(f"results: {out}")
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    args.mode = "record"
    return cmd_run(args)


def cmd_validate(args: argparse.Namespace) -> int:
    from gate.templates import check_templates

    loaded, cases = load(args)
    check_templates(loaded, cases)
    files = len({case.source for case in cases})
    print(f"ok: {len(cases)} cases in {files} file(s), suite {loaded.config.suite!r}")
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
    run.add_argument(
        "--out", type=Path, help="results file (default: .casegate/SUITE-results.json)"
    )
    run.set_defaults(handler=cmd_run)

    record = commands.add_parser("record", help="run the real system and store its responses")
    _run_options(record, mode=False)
    record.add_argument(
        "--out", type=Path, help="results file (default: .casegate/SUITE-results.json)"
    )
    record.add_argument(
        "--only-missing",
        action="store_true",
        help="call the system only for requests replay would miss",
    )
    record.set_defaults(handler=cmd_record)

    validate = commands.add_parser("validate", help="load and lint the config and every case")
    _config_option(validate)
    validate.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE"
    )
    validate.set_defaults(handler=cmd_validate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except CasegateError as exc:
        for problem in exc.problems:
            print(f"casegate: {problem}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("casegate: interrupted", file=sys.stderr)
        return 130
