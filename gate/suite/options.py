"""Command-line options several commands share, so each reads and says the same.

Only argparse here: every command's parser is built when casegate starts.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from pathlib import Path


def config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-c",
        "--config",
        default="casegate.yml",
        type=Path,
        help="run configuration (default: %(default)s)",
    )


def set_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field for this run, e.g. system.model=gpt-4.1 (repeatable)",
    )


def selection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--case",
        dest="case_patterns",
        action="append",
        default=[],
        metavar="PATTERN",
        help="only cases whose id matches this glob (repeatable)",
    )
    parser.add_argument(
        "--tag",
        dest="tag_patterns",
        action="append",
        default=[],
        metavar="TAG",
        help="only cases with this tag (a glob; repeatable); '!TAG' leaves them out",
    )


def _shard(text: str) -> object:
    from gate.errors import ConfigError
    from gate.suite.shard import Shard

    try:
        return Shard.parse(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.problems[0]) from None


def shard_option(parser: argparse._ActionsContainer) -> None:
    parser.add_argument(
        "--shard",
        type=_shard,
        metavar="I/N",
        help="only the I-th of N slices of the suite, by a hash of the case id (a CI matrix "
        "job); `casegate merge` joins the parts",
    )


def deferred(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """A handler that imports `module` only when its command runs, so building every
    command's parser (and `casegate --version`) loads none of them."""

    def handler(args: argparse.Namespace) -> int:
        command: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module(module), name
        )
        return command(args)

    return handler
