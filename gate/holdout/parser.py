"""`casegate holdout …`: the argument parser (the commands, gate.holdout.commands, load
only when one runs, so `casegate --version` stays quick)."""

from __future__ import annotations

import argparse
from pathlib import Path

from gate.suite import options

FROM_HOLDOUT = "from-holdout.yaml"
REVEALED = "revealed-holdout.yaml"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`casegate holdout …`."""
    holdout = commands.add_parser(
        "holdout", help="the held-out slice: sealed cases nobody reads while writing prompts"
    )
    actions = holdout.add_subparsers(dest="holdout_command", required=True, metavar="COMMAND")

    config = options.config_option

    init = actions.add_parser("init", help="make a key for a new slice and print it, once")
    config(init)
    init.set_defaults(handler=options.deferred("gate.holdout.commands", "cmd_init"))

    add = actions.add_parser("add", help="move cases out of readable files into the slice")
    add.add_argument("files", nargs="+", metavar="FILE", help="case files (.yaml, .yml, .jsonl)")
    add.add_argument(
        "--case",
        dest="case_patterns",
        action="append",
        default=[],
        metavar="PATTERN",
        help="only the cases whose id matches this glob (repeatable)",
    )
    config(add)
    add.set_defaults(handler=options.deferred("gate.holdout.commands", "cmd_add"))

    rotate = actions.add_parser(
        "rotate", help="swap a seeded random fraction between the slice and the readable cases"
    )
    rotate.add_argument(
        "--fraction", type=float, required=True, help="the share of the slice that moves out"
    )
    rotate.add_argument("--seed", type=int, help="repeat a rotation (default: a random seed)")
    rotate.add_argument(
        "--to", type=Path, help=f"the readable file cases move out to (default: {FROM_HOLDOUT})"
    )
    config(rotate)
    rotate.set_defaults(handler=options.deferred("gate.holdout.commands", "cmd_rotate"))

    reveal = actions.add_parser(
        "reveal", help="retire the slice: write every held-out case out readable (loud)"
    )
    reveal.add_argument("--yes", action="store_true", help="yes, make them readable for good")
    reveal.add_argument(
        "--to", type=Path, help=f"the new readable file (default: {REVEALED} in the cases folder)"
    )
    config(reveal)
    reveal.set_defaults(handler=options.deferred("gate.holdout.commands", "cmd_reveal"))

    status = actions.add_parser("status", help="the slice in counts: cases, recordings, rotations")
    config(status)
    status.set_defaults(handler=options.deferred("gate.holdout.commands", "cmd_status"))
