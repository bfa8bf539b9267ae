"""`casegate suite` (and `casegate list --stats`): what the suite is made of."""

from __future__ import annotations

import argparse
import json
from typing import Any

from gate.suite import options
from gate.suite.project import load


def add_parser(commands: Any) -> None:
    suite = commands.add_parser(
        "suite",
        help="what the suite is made of: tags, clusters, critical share, age, provenance",
    )
    options.config_option(suite)
    options.selection_options(suite)
    suite.add_argument("--format", choices=("text", "json"), default="text")
    days_option(suite)
    suite.set_defaults(handler=cmd_suite)


def days_option(parser: argparse.ArgumentParser) -> None:
    # No default here: building the parser imports no pydantic (gate.suite.cases).
    parser.add_argument(
        "--days",
        type=_days,
        metavar="N",
        help="a case added in the last N days is a recent addition (default: 30)",
    )


def _days(text: str) -> int:
    try:
        days = int(text)
    except ValueError:
        days = 0
    if not 1 <= days <= 36500:
        raise argparse.ArgumentTypeError(f"a whole number of days from 1 to 36500, got {text!r}")
    return days


def cmd_suite(args: argparse.Namespace) -> int:
    print(render(args, as_json=args.format == "json"))
    return 0


def render(args: argparse.Namespace, *, as_json: bool) -> str:
    """The composition of the (selected) readable cases; `list --stats` prints the same."""
    from gate.reporting import composition as words
    from gate.suite.composition import RECENT_DAYS

    loaded, cases = load(args)
    found = words.composition_of(loaded, cases, days=args.days or RECENT_DAYS)
    holdout = loaded.config.holdout.path if loaded.config.holdout is not None else None
    if as_json:
        data = found.to_dict()
        # The slice is sealed: whether there is one, never what it holds.
        data["holdout"] = {"path": holdout, "counted": False} if holdout is not None else None
        return json.dumps(data, indent=2)
    return words.text(found, holdout)
