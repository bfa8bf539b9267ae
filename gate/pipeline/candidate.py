"""The candidate run as the gate holds it: the shards' parts merged into one run, and
the run's identity stamped by this process rather than taken from what the run wrote."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

from gate import __version__
from gate.errors import ConfigError, ResultsError
from gate.produce.merge import expected_of, merge, read_parts
from gate.results import RunResults
from gate.suite.cases import Case
from gate.suite.config import LoadedConfig, Mode
from gate.suite.select import Selection, describe_stored


def restamped(candidate: RunResults, loaded: LoadedConfig, mode: Mode) -> RunResults:
    """The run's identity as this process knows it, not as the run wrote it.

    The supervised run's code could rewrite its results file: a `created_at` and
    `config_hash` copied from a run in the history would make the report take the
    candidate for that run and leave it out ("last failed before" hidden).
    """
    candidate.suite = loaded.config.suite
    candidate.system = loaded.config.system.name
    candidate.config = loaded.as_dict()
    candidate.config_hash = loaded.config_hash()
    candidate.overrides = list(loaded.overrides)
    candidate.mode = mode
    candidate.casegate_version = __version__
    candidate.created_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return candidate


def merged_parts(
    parts: Sequence[Path],
    loaded: LoadedConfig,
    cases: Sequence[Case],
    mode: Mode,
    selection: Selection | None,
) -> RunResults:
    """The shards' parts as one run of exactly this config's (selected) cases, in `mode`."""
    if selection is not None and selection.shard is not None:
        raise ConfigError("--parts merges every shard: it takes no --shard")
    read = read_parts(parts)
    first = read[0][1]
    if first.mode != mode:
        raise ResultsError(
            f"the parts ran in {first.mode} mode, this check is in {mode} mode: "
            f"check them with --mode {first.mode}, or run the shards again"
        )
    stored = selection.to_dict() if selection is not None else None
    if first.selection != stored:
        raise ResultsError(
            f"the parts ran {describe_stored(first.selection)}, this check "
            f"{describe_stored(stored)}: give the same --case/--tag as the shard jobs"
        )
    return merge(read, expected=expected_of(cases), config_hash=loaded.config_hash())
