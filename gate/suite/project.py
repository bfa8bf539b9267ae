"""A project as a command sees it: the validated config and its selected cases.

Every command that runs the suite loads it here, the same way: warnings on stderr,
`cases: .` never taking the config for a case file, `--case`/`--tag`/`--shard`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def selection_of(args: argparse.Namespace) -> Any:
    from gate.suite.select import Selection

    return Selection(
        tuple(getattr(args, "case_patterns", ())),
        tuple(getattr(args, "tag_patterns", ())),
        getattr(args, "shard", None),
    )


def load_project(
    config: Path, overrides: Sequence[str] = (), selection: Any = None
) -> tuple[Any, Any]:
    """The validated config and its (selected) cases; warnings go to stderr."""
    from gate.errors import ConfigError
    from gate.suite.cases import load_cases, resolve_case_paths
    from gate.suite.config import load_config
    from gate.suite.select import Selection, select

    loaded = load_config(config, overrides)
    for warning in loaded.warnings:
        print(f"casegate: warning: {warning}", file=sys.stderr)
    files, problems = resolve_case_paths(loaded.config.cases, loaded.root)
    if problems:
        raise ConfigError([f"{config}: {p}" for p in problems])
    # `cases: .` would take the config for a case file: it never is one.
    files = [file for file in files if file.resolve() != config.resolve()]
    cases = load_cases(
        files, display_root=Path.cwd(), defaults=loaded.config.defaults, root=loaded.root
    )
    if not cases and loaded.config.holdout is None:
        # "ok: 0 cases" and "0/0 passed" read like success; a suite that judges nothing is
        # a mistake (an empty file, `cases:` pointing at the wrong folder).
        raise ConfigError(
            f"{config}: cases: the {len(files)} case file(s) `cases` names hold no case: add "
            "one (`casegate init` writes an example), or point `cases:` at your case files"
        )
    return loaded, select(cases, selection or Selection())


def load(args: argparse.Namespace) -> tuple[Any, Any]:
    return load_project(args.config, getattr(args, "overrides", ()), selection_of(args))
