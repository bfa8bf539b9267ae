"""Which history export a command reads, and the trusted one a pull request's report reads.

In a pull request the working copy is the pull request's: an export it edited could
invent a clean record for a case that keeps failing. The report reads the base
commit's copy instead, from the tree gate.deciding.ruler extracted, as the baseline is read.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from gate.deciding.basetree import inside, repo_root_of
from gate.errors import ConfigError

if TYPE_CHECKING:
    from gate.deciding.ruler import Ruling
    from gate.suite.config import Config, LoadedConfig

#: the cache, relative to the config's folder (beside the other artefacts, gitignored)
DEFAULT_DB = ".casegate/history.sqlite"


def export_relative(config: Config) -> str:
    """`history:` as written, or the default `history/SUITE.jsonl`."""
    return config.history_path


def drift_relative(config: Config) -> str:
    """The last drift report kept beside the export: `history/SUITE-drift.json` (the name
    the Action's `command: drift` gives it in `.casegate/`)."""
    folder = PurePosixPath(export_relative(config)).parent
    return (folder / f"{config.suite}-drift.json").as_posix()


def working_export(
    loaded: LoadedConfig, relative: Callable[[Config], str] = export_relative
) -> Path:
    """The config's export (or the file `relative` names beside it), relative to the
    working folder when inside it (as messages name it); a ConfigError when `history:`
    leaves the repository or goes through a link, since `history add` and the baseline
    refresh write there."""
    written = relative(loaded.config)
    what = f"{loaded.path}: history"
    if Path(written).is_absolute():
        raise ConfigError(f"{what}: {written!r} must be a path relative to the config's folder")
    repository = loaded.repository.absolute()
    within = os.path.normpath(os.path.relpath(loaded.root.absolute() / written, repository))
    if within == ".." or within.startswith(f"..{os.sep}"):
        raise ConfigError(f"{what}: {written!r} points outside the repository")
    inside(repository, within, what)  # no link on the way, nothing outside
    return Path(shown(loaded.root / written))


def shown(path: Path) -> str:
    """A path as a person would type it here: relative to the working folder if inside."""
    try:
        return path.absolute().relative_to(Path.cwd().absolute()).as_posix()
    except ValueError:
        return str(path)


def trusted_export(
    loaded: LoadedConfig,
    ruling: Ruling | None,
    relative: Callable[[Config], str] = export_relative,
) -> tuple[Path | None, str]:
    """The export the report may believe, and how to name it (None: there is none); with
    `relative`, the file it names beside the export (`drift_relative`), read alike.

    Without a ruling (`compare`, `check` without --base, a model swap on the default
    branch) the working copy is the trusted branch's. With one, only the base commit's
    copy is; a base without a config has no history to trust.
    """
    if ruling is None:
        path = working_export(loaded, relative)
        return path, f"{shown(path)} in the working copy"
    base = ruling.base_config
    if base is None:
        return None, ""
    tree = ruling.base.repo_root if ruling.base is not None else _tree_of(base, loaded)
    if tree is None:
        return None, ""
    folder = os.path.relpath(base.path.absolute().parent, tree)
    written = os.path.normpath(os.path.join(folder, relative(base.config)))
    refused = ruling.base.refused if ruling.base is not None else frozenset()
    commit = ruling.review.base[:7]
    path = inside(tree, written, f"the history export on the base commit {commit}", refused)
    return path, f"{Path(written).as_posix()} on the base commit {commit}"


def _tree_of(base: LoadedConfig, loaded: LoadedConfig) -> Path | None:
    """The extracted base tree: the base config sits as deep in it as the working
    config sits in its repository (gate.deciding.ruler.ruling_for extracts it so)."""
    repository = repo_root_of(loaded.path.absolute().parent)
    if repository is None:
        return None
    depth = len(Path(os.path.relpath(loaded.path.absolute(), repository)).parts)
    return base.path.absolute().parents[depth - 1]
