"""`casegate view RESULTS [--baseline B] [--out report.html]`: the HTML viewer, one file.

With a baseline the two runs are compared and judged exactly as `casegate compare` does
(gate.cli.comparing), so the page's verdict is the one `casegate gate` would give.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gate.suite import options

if TYPE_CHECKING:
    from gate.results import RunResults


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "view", help="write one self-contained HTML page of a run (and its comparison)"
    )
    parser.add_argument("candidate", type=Path, metavar="RESULTS.json")
    parser.add_argument(
        "--baseline", type=Path, help="compare with this results file and show the verdict"
    )
    parser.add_argument(
        "--out", type=Path, help="the page (default: beside RESULTS, named …-report.html)"
    )
    options.config_option(parser)
    parser.add_argument(
        "--allow-config-change",
        action="store_true",
        help="with --baseline: compare runs measured differently, as `compare` does",
    )
    parser.set_defaults(handler=cmd_view)
    return parser


def cmd_view(args: argparse.Namespace) -> int:
    from gate.cli.comparing import _compare_files, _config_at_hand
    from gate.reporting import viewer
    from gate.results import read_results

    if args.baseline is not None:
        _, candidate, comparison, verdict = _compare_files(args)
        page = viewer.comparison_page(comparison, verdict)
    else:
        candidate = read_results(args.candidate)
        history = _history(args, candidate) if _config_at_hand(args) else None
        page = viewer.run_page(candidate, history)
    out = args.out or args.candidate.with_name(f"{candidate.suite}-report.html")
    viewer.write_page(out, page)
    print(f"wrote {out}: open it in a browser (it loads nothing from the network)")
    return 0


def _history(args: argparse.Namespace, candidate: RunResults) -> dict[str, Any] | None:
    """The history account of the config at hand, as a dict for the charts (or None)."""
    from gate.history.report import run_notes
    from gate.suite.config import load_config

    notes = run_notes(candidate, load_config(args.config))
    return notes.to_dict() if notes is not None else None
