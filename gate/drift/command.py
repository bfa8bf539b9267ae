"""`casegate drift`: the suite live against its recordings (gate.drift.run measures it).

This module is imported by the command line at start, so it imports nothing
heavy until the command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gate.suite import options

#: what `--format` accepts
FORMATS = ("text", "markdown", "json")


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`casegate drift [-c CONFIG] [--refresh] [--format F] [--out PATH] …`."""
    drift = commands.add_parser(
        "drift",
        help="run the suite live and compare each case with its recording "
        "(exit 1 past drift.max_flips)",
    )
    options.config_option(drift)
    options.set_option(drift)
    options.selection_options(drift)
    drift.add_argument(
        "--format", choices=FORMATS, default="text", help="report format (default: text)"
    )
    drift.add_argument("--out", type=Path, help="write the report here instead of stdout")
    drift.add_argument(
        "--refresh",
        action="store_true",
        help="re-record the cases that drifted (only those), for a pull request to review",
    )
    drift.add_argument("--quiet", action="store_true", help="no progress bar")
    drift.set_defaults(handler=cmd_drift)


def render(report: Any, fmt: str) -> str:
    from gate.drift import report as driftreport

    if fmt == "json":
        return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"
    if fmt == "markdown":
        return driftreport.markdown_report(report)
    return driftreport.text_report(report) + "\n"


def cmd_drift(args: argparse.Namespace) -> int:
    from gate.drift.run import measure
    from gate.errors import INTERRUPTED
    from gate.files import write_text
    from gate.secrets import redact
    from gate.suite.project import load, selection_of

    loaded, cases = load(args)
    if args.overrides or not selection_of(args).everything:
        # A slice or an override measures something else than the suite as committed.
        print("casegate: note: drift measured on a slice or with --set overrides", file=sys.stderr)
    report = measure(loaded, cases, refresh=args.refresh, show_progress=not args.quiet)
    rendered = render(report, args.format)
    if args.out:
        write_text(args.out, rendered)  # masked, whole or not at all
        print(redact(render(report, "text")), end="")
        print(f"drift report: {args.out}")
    else:
        sys.stdout.write(redact(rendered))
    if report.refreshed:
        print(
            f"casegate: re-recorded {len(report.refreshed)} case(s) in {loaded.recordings_dir}: "
            "review the diff and commit it in a pull request",
            file=sys.stderr,
        )
    if report.interrupted:
        print("casegate: interrupted: the report lists the cases that finished", file=sys.stderr)
        return int(INTERRUPTED)
    return report.exit_code
