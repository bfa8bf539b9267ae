"""`casegate batch …`: the argument parser (the commands, gate.cli.batch, load
only when one runs, so `casegate --version` stays quick)."""

from __future__ import annotations

import argparse
from pathlib import Path

from gate.suite import options


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`casegate batch resume ID`, `casegate batch list`."""
    batch = commands.add_parser(
        "batch", help="batches submitted by `mode: batch`: resume one, list them"
    )
    actions = batch.add_subparsers(dest="batch_command", required=True, metavar="COMMAND")

    resume = actions.add_parser(
        "resume",
        help="wait for a submitted batch and write the results its run would have written",
    )
    resume.add_argument("batch_id", metavar="ID", help="the batch id the run printed")
    options.config_option(resume)
    resume.add_argument(
        "--out", type=Path, help="results file (default: .casegate/SUITE-results.json)"
    )
    resume.add_argument("--quiet", action="store_true", help="no summary and no progress")
    resume.set_defaults(handler=options.deferred("gate.cli.batch", "cmd_resume"))

    listing = actions.add_parser("list", help="the batches submitted for this config")
    options.config_option(listing)
    listing.set_defaults(handler=options.deferred("gate.cli.batch", "cmd_list"))
