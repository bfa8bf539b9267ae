"""Which configs a roll-up judges: the `config` input's glob or list, against the base too.

`config:` may name one file (one suite, one comment: today's), or several: a glob
(`casegate.*.yml`, relative to `working-directory`) or a list, one entry a line or
separated by commas. Several configs make a roll-up (gate.github.multisuite).

On a pull request the checkout is untrusted, and so is the set of files a glob
finds in it. The set judged is the union of what the entries match in the base
commit and in the checkout: a config the base has and the pull request deleted
or renamed is still a suite of the roll-up (`Entry.removed`, which blocks), and
a config only in the pull request is judged as a new suite is today (its own
ruler, a ruler change that blocks until a maintainer accepts it).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from gate.errors import ConfigError

_GLOB = re.compile(r"[*?\[]")


def config_entries(text: str) -> list[str]:
    """The `config` input's entries: one a line or comma-separated, blanks and `#` lines dropped."""
    entries = []
    for line in text.splitlines():
        if line.strip().startswith("#"):
            continue
        entries += [part.strip() for part in line.split(",") if part.strip()]
    return entries


def several(text: str) -> bool:
    """Whether the `config` input makes a roll-up: more than one entry, or a glob."""
    entries = config_entries(text)
    return len(entries) > 1 or any(_GLOB.search(entry) for entry in entries)


def _checked(entry: str) -> PurePosixPath:
    path = PurePosixPath(entry)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise ConfigError(
            f"input `config`: {entry!r} must be a path relative to `working-directory`, "
            "inside the repository"
        )
    if "**" in entry:
        raise ConfigError(
            f"input `config`: {entry!r}: `**` is not supported; a `*` matches within one "
            "folder (`casegate.*.yml`, `suites/*.yml`)"
        )
    return path


def matches(entry: str, relative: str) -> bool:
    """Whether the path `relative` (to the working directory) is what `entry` names.

    A glob's `*`, `?` and `[…]` match within one path part, as a shell's do.
    """
    pattern, path = _checked(entry).parts, PurePosixPath(relative).parts
    if not _GLOB.search(entry):
        return pattern == path
    return len(pattern) == len(path) and all(
        fnmatchcase(part, wanted) for part, wanted in zip(path, pattern, strict=True)
    )


def in_checkout(entries: list[str], cwd: Path) -> list[str]:
    """The configs the entries name in the checkout, relative to `cwd`, each once."""
    found: set[str] = set()
    for entry in entries:
        _checked(entry)
        if not _GLOB.search(entry):
            if (cwd / entry).is_file() or (cwd / entry).is_symlink():
                found.add(PurePosixPath(entry).as_posix())
            continue
        found.update(
            path.relative_to(cwd).as_posix()
            for path in cwd.glob(entry)
            if path.is_file() or path.is_symlink()
        )
    return sorted(found)


def in_files(entries: list[str], files: list[str]) -> list[str]:
    """The configs the entries name among `files` (paths relative to the working directory)."""
    return sorted({name for name in files for entry in entries if matches(entry, name)})


@dataclass(frozen=True, slots=True)
class Entry:
    """One config of the roll-up, relative to the working directory."""

    path: str
    #: the base commit has it and the checkout does not: the pull request removed it
    removed: bool = False


def resolve(
    text: str, cwd: Path, base_files: list[str] | None, base_shown: str = ""
) -> list[Entry]:
    """The roll-up's configs in path order; `base_files` is None when there is no base.

    Refused (exit 2): an input that names no config, and an entry that matches none in the
    checkout nor in the base, so a mistyped glob never gates nothing and passes.
    """
    entries = config_entries(text)
    if not entries:
        raise ConfigError("input `config` names no config")
    head = in_checkout(entries, cwd)
    base = in_files(entries, base_files) if base_files is not None else []
    for entry in entries:
        if not any(matches(entry, name) for name in [*head, *base]):
            where = f" nor on the base commit {base_shown}" if base_files is not None else ""
            raise ConfigError(
                f"input `config`: {entry!r} matches no config in {cwd.name or cwd}{where}: "
                "check the path or the glob (relative to `working-directory`)"
            )
    return [Entry(path, removed=path not in head) for path in sorted({*head, *base})]


def relative_to_repo(cwd: Path, repo_root: Path) -> str:
    """The working directory as the base commit's listing names it."""
    return Path(os.path.relpath(cwd, repo_root)).as_posix()
