"""`casegate import SOURCE`: bring a suite over from another tool, and say what is left to do.

One module per source (today `promptfoo`). An importer reads the other tool's files as
data (it never runs code from them), writes a casegate suite that validates, and writes
`MIGRATION.md` listing, per test, what was mapped and what needs a person.

This module stays light: `casegate --version` imports the command line, and the
importers load only when `casegate import` runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(subparsers: Any) -> None:
    """Add `import` and its sources to the command line's subcommands."""
    command = subparsers.add_parser(
        "import", help="bring a suite over from another tool (promptfoo), with a MIGRATION.md"
    )
    sources = command.add_subparsers(dest="import_source", required=True, metavar="SOURCE")
    promptfoo = sources.add_parser(
        "promptfoo",
        help="a promptfoo config: cases, prompts, one casegate.yml per provider, stub checks",
    )
    promptfoo.add_argument("config", type=Path, metavar="PROMPTFOOCONFIG.yaml")
    promptfoo.add_argument(
        "--out",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="where to write (default: here); an existing file is never overwritten",
    )
    promptfoo.set_defaults(handler=cmd_import)


def cmd_import(args: argparse.Namespace) -> int:
    """Import, print each file written, and end on the summary line (its semantics named)."""
    from gate.importers.promptfoo import import_promptfoo

    outcome = import_promptfoo(args.config, args.out)
    for path in outcome.written:
        print(f"wrote {path}")
    print(outcome.summary_line())
    return 0
