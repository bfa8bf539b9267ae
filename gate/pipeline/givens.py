"""What the stages of a check are given before they run: the mode under a ruling, the
sandbox plan, what the supervised run never sees, and where custom checks are imported from.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from gate.deciding.ruler import Ruling
from gate.holdout import scoring as holdout
from gate.produce.sandbox import SandboxMode, SandboxPlan
from gate.produce.sandbox import plan as plan_sandbox
from gate.secrets import key_variables
from gate.suite.cases import Case
from gate.suite.config import LoadedConfig, Mode


def withheld(loaded: LoadedConfig, ruling: Ruling | None, mode: Mode) -> list[str]:
    """What the supervised run never sees: the held-out slice's key, and in replay (which
    calls no provider) every provider key the config may name."""
    keys = holdout.key_variables(loaded, ruling)
    if mode == "replay":
        keys += sorted(key_variables(loaded.as_dict()))
    return keys


def ruled_mode(loaded: LoadedConfig, ruling: Ruling | None) -> Mode:
    """The mode a check runs in when none is given: the base commit's under a ruling (a
    pull request that switches to `live` would run its code with the network and keys)."""
    if ruling is not None and ruling.base_config is not None:
        return ruling.base_config.config.mode
    return loaded.config.mode


def judging_tree(loaded: LoadedConfig, ruling: Ruling | None) -> tuple[Path, Path]:
    """Where custom checks are imported from, and the tree that folder lies in: the
    base commit's extraction while its ruler judges, else the suite's own folder."""
    if ruling is not None and ruling.base is not None and ruling.base_tree is not None:
        return ruling.base.loaded.root, ruling.base_tree
    if ruling is not None and ruling.head_tree is not None:
        return loaded.root, ruling.head_tree
    return loaded.root, loaded.root


def sandbox_plan(
    mode: SandboxMode,
    loaded: LoadedConfig,
    run_mode: Mode,
    environ: Mapping[str, str] | None,
    cases: Sequence[Case] = (),
) -> SandboxPlan:
    """The protections the run gets: it must read the suite and the interpreter, and,
    outside replay, the cases' input files (the run loads the cases and the system reads
    them; a replay calls no system)."""
    import gate

    reads = [loaded.root, Path(sys.prefix), Path(sys.base_prefix), Path(gate.__file__).parent]
    if run_mode != "replay":
        reads += sorted({Path(path) for case in cases for path in case.input_file_paths})
    return plan_sandbox(
        mode,
        replay=run_mode == "replay",
        reads=reads,
        environ=os.environ if environ is None else environ,
    )
