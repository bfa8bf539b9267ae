"""`casegate history …`: the argument parser (the commands, gate.history.commands, load
only when one runs, so `casegate --version` stays quick)."""

from __future__ import annotations

import argparse
from pathlib import Path

from gate.suite import options


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, not {text!r}")
    return value


def _where(parser: argparse.ArgumentParser) -> None:
    options.config_option(parser)
    parser.add_argument(
        "--export",
        type=Path,
        metavar="PATH",
        help="the committed JSONL history (default: the config's `history:`, "
        "else history/SUITE.jsonl beside the config)",
    )
    parser.add_argument(
        "--db",
        type=Path,
        metavar="PATH",
        help="the SQLite cache, rebuilt from the export when out of step "
        "(default: .casegate/history.sqlite beside the config)",
    )


def _answer(parser: argparse.ArgumentParser) -> None:
    _where(parser)
    parser.add_argument(
        "--suite", help="the suite to answer for (default: the config's, or the export's only one)"
    )
    parser.add_argument("--format", choices=("table", "json"), default="table")


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`casegate history …`."""
    history = commands.add_parser(
        "history", help="the results history: record whole runs, see timelines, trends, flips"
    )
    actions = history.add_subparsers(dest="history_command", required=True, metavar="COMMAND")

    add = actions.add_parser("add", help="append a whole run's per-case verdicts to the history")
    add.add_argument("results", type=Path, metavar="RESULTS.json")
    add.add_argument(
        "--commit",
        metavar="SHA",
        help="the commit the run belongs to (default: GITHUB_SHA, else `git rev-parse HEAD`)",
    )
    _where(add)
    add.set_defaults(handler=options.deferred("gate.history.commands", "cmd_add"))

    case = actions.add_parser("case", help="one case's verdicts, by date and system")
    case.add_argument("case", metavar="ID")
    _answer(case)
    case.set_defaults(handler=options.deferred("gate.history.commands", "cmd_case"))

    trend = actions.add_parser("trend", help="pass rate, cost and p95 latency per recorded run")
    trend.add_argument(
        "--last", type=_positive, default=20, metavar="N", help="the last N runs (default: 20)"
    )
    _answer(trend)
    trend.set_defaults(handler=options.deferred("gate.history.commands", "cmd_trend"))

    flips = actions.add_parser(
        "flips", help="the cases whose verdict changed most often (tighten them, or sample more)"
    )
    flips.add_argument(
        "--top", type=_positive, default=10, metavar="N", help="the N cases (default: 10)"
    )
    _answer(flips)
    flips.set_defaults(handler=options.deferred("gate.history.commands", "cmd_flips"))
