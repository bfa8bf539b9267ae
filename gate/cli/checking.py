"""`casegate check`: run, compare with the baseline, gate, and write what a reviewer reads.

On a branch other than the default one the ruler (gate rule, cases, baseline) is read
from the merge base, as the branch's pull request will be judged (gate.suite.branches).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from gate.cli.running import default_out, interrupted, print_part, print_verbose
from gate.reporting import show
from gate.suite.project import load, selection_of


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


def _imply_base(args: argparse.Namespace) -> None:
    """On a branch, judge as its pull request will be: the ruler from the merge base."""
    from gate.suite.branches import holds, implied_base, unjudged_branch

    if args.base or args.no_base or args.parts:
        return
    folder = args.config.resolve().parent
    found = implied_base(folder)
    if found is None:
        fallback = unjudged_branch(folder)
        if fallback is not None:
            print(fallback, file=sys.stderr)
        return
    if not holds(folder, found.commit, args.config.resolve()):
        # The branch that adds casegate: there is no ruler to read yet. Its pull request
        # blocks until a maintainer accepts the new ruler; here the working copy judges.
        print(
            f"check: '{found.default}' has no {args.config.name} yet, so branch "
            f"'{found.branch}' is judged by its own (its pull request needs a maintainer to "
            "accept that ruler: the accept label)",
            file=sys.stderr,
        )
        return
    args.base = found.commit
    print(found.describe(), file=sys.stderr)


def _head_commit() -> str | None:
    """The working tree's commit, which a local `check --base` verifies."""
    from gate.deciding.basetree import git
    from gate.errors import CasegateError

    try:
        found = git("rev-parse", "--verify", "--quiet", "HEAD", cwd=Path.cwd())
    except CasegateError:  # no git on this machine
        return None
    return found.stdout.decode(errors="replace").strip() or None


def cmd_check(args: argparse.Namespace) -> int:
    import tempfile

    from gate.pipeline import check as pipeline
    from gate.pipeline.givens import ruled_mode
    from gate.reporting import report
    from gate.reporting.junit import write_junit

    loaded, cases = load(args)
    _imply_base(args)
    with tempfile.TemporaryDirectory(prefix="casegate-base-") as scratch:
        ruling = _local_ruling(args, Path(scratch)) if args.base else None
        outcome = pipeline.check(
            loaded,
            cases,
            baseline_path=pipeline.baseline_for(loaded, args.baseline),
            mode=args.mode or ruled_mode(loaded, ruling),
            out=args.out or default_out(loaded.config.suite),
            report_path=args.report,
            show_progress=not args.quiet,
            ruling=ruling,
            selection=selection_of(args),
            parts=args.parts,
            sandbox=args.sandbox,
            verify=args.verify,
            head=_head_commit() if args.base else None,
        )
    for line in outcome.sandbox:
        print(line, file=sys.stderr)
    if outcome.part:
        print(f"results: {outcome.results_path}")
        print_part(outcome.candidate)
        return 0
    if outcome.comparison is None or outcome.verdict is None:
        return interrupted(outcome.candidate, outcome.results_path)
    if args.junit:
        write_junit(outcome.candidate, args.junit, frozenset(outcome.comparison.regressions))
    print(report.text_report(outcome.comparison, outcome.verdict))
    print(
        f"results: {outcome.results_path}\nreport: {outcome.report_path}\n"
        f"viewer: {outcome.viewer_path} (one HTML page: open it in a browser)"
    )
    if outcome.history is not None:
        print(f"casegate: {show.one_line(outcome.history)}", file=sys.stderr)
    print_verbose(args, outcome.candidate)
    return int(outcome.verdict.exit_code)
