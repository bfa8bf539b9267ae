"""The ruler's view of the custom checks' files: what judged, compared between two trees.

The judging process reports what the checks really touched (gate.judging.judgeproc.Footprint):
the modules importlib loaded, the files they opened, the folders they listed, whether
they started a program. Each of those that differs between the base commit's tree
and the pull request's is a ruler change that loosens: a changed word list can turn a
fail into a pass as surely as a changed function. So is anything that could stand in
for a check's module in the pull request's tree (a package folder or a compiled
extension beside the source), and any change under a check's own folder.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from gate.deciding.rulerside import RulerChange
from gate.judging.judgeproc import Footprint

#: file names that Python may import in place of `name.py`
_STAND_IN_SUFFIXES = (".py", ".pyc", ".pyo", ".pyd", ".so", ".pth")


def footprint_changes(footprint: Footprint, base: Path, head: Path) -> list[RulerChange]:
    """Every difference between `base` and `head` in what the checks touched."""
    changes: list[RulerChange] = []
    module_files = set(footprint.modules.values())
    for name, relative in sorted(footprint.modules.items()):
        if _digest(base / relative) != _digest(head / relative):
            changes.append(
                RulerChange(f"custom check module {name}", "source changed", relative, True)
            )
        changes.extend(_stand_ins(name, relative, head))
    for relative in sorted(set(footprint.opened) - module_files):
        before, after = _digest(base / relative), _digest(head / relative)
        if before != after:
            text = "added" if before is None else ("removed" if after is None else "changed")
            changes.append(
                RulerChange(
                    f"check data file {relative}",
                    f"{text} (a custom check reads it: a different file can turn a fail "
                    "into a pass)",
                    relative,
                    True,
                )
            )
    for relative in sorted(footprint.listed):
        if _names(base / relative) != _names(head / relative):
            changes.append(
                RulerChange(
                    f"check folder {relative or '.'}",
                    "its entries changed (a custom check lists it)",
                    relative,
                    True,
                )
            )
    for folder in sorted({str(Path(relative).parent) for relative in module_files}):
        changes.extend(_folder_changes(folder, base, head, footprint))
    if footprint.outside:
        shown = ", ".join(footprint.outside[:3]) + (" …" if len(footprint.outside) > 3 else "")
        changes.append(
            RulerChange(
                "custom check",
                f"read files outside the repository's tree ({shown}): the review cannot "
                "compare them between the base and the pull request",
                "",
                True,
            )
        )
    if footprint.programs:
        changes.append(
            RulerChange(
                "custom check",
                "started a program, whose reads casegate cannot follow: what it judged by "
                "cannot be compared between the two trees",
                "",
                True,
            )
        )
    return _unique(changes)


def _stand_ins(name: str, relative: str, head: Path) -> Iterator[RulerChange]:
    """A package folder or a compiled module beside a check's source in the head tree."""
    source = head / relative
    if source.name == "__init__.py":
        return
    stem = source.stem
    folder = source.parent
    if (folder / stem).is_dir():
        yield RulerChange(
            f"custom check module {name}",
            f"a folder {stem}/ beside {source.name}: one module name must mean one file",
            relative,
            True,
        )
    for found in _entries(folder):
        if (
            found.startswith(f"{stem}.")
            and found != source.name
            and found.endswith(_STAND_IN_SUFFIXES)
        ):
            yield RulerChange(
                f"custom check module {name}",
                f"{found} beside {source.name} could be imported in its place",
                relative,
                True,
            )


def _folder_changes(folder: str, base: Path, head: Path, footprint: Footprint) -> list[RulerChange]:
    """A check's own folder: everything in it when it is a folder of checks; only what
    Python could import when it is the suite's folder (which holds cases and prompts)."""
    suite_folder = folder in (".", "", footprint.suite)
    before, after = _files(base / folder, not suite_folder), _files(head / folder, not suite_folder)
    if suite_folder:
        before = {k: v for k, v in before.items() if _importable(k)}
        after = {k: v for k, v in after.items() if _importable(k)}
    prefix = "" if folder in (".", "") else f"{folder}/"
    changes = []
    for name in sorted(set(before) | set(after)):
        if before.get(name) == after.get(name):
            continue
        what = "added" if name not in before else "removed" if name not in after else "changed"
        changes.append(
            RulerChange(f"check folder {folder}", f"{prefix}{name} {what}", prefix + name, True)
        )
    return changes


def _importable(name: str) -> bool:
    first = name.split("/", 1)[0]
    return name.endswith(_STAND_IN_SUFFIXES) or first == "__pycache__" or "/" in name


def _files(folder: Path, recursive: bool) -> dict[str, str | None]:
    """name → digest of every file under `folder` (folders as their `__init__.py`)."""
    found: dict[str, str | None] = {}
    if not folder.is_dir() or folder.is_symlink():
        return found
    if not recursive:
        for name in _entries(folder):
            path = folder / name
            if path.is_dir() and not path.is_symlink():
                if (path / "__init__.py").exists() or name == "__pycache__":
                    found[f"{name}/"] = "folder"
            else:
                found[name] = _digest(path)
        return found
    for top, folders, files in os.walk(folder):
        folders[:] = [name for name in folders if name != ".git"]
        for name in files:
            path = Path(top) / name
            found[path.relative_to(folder).as_posix()] = _digest(path)
    return found


def _entries(folder: Path) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def _names(folder: Path) -> list[str] | None:
    return _entries(folder) if folder.is_dir() else None


def _digest(path: Path) -> str | None:
    try:
        if path.is_symlink():
            return "link:" + os.readlink(path)
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _unique(changes: list[RulerChange]) -> list[RulerChange]:
    seen: set[tuple[str, str]] = set()
    kept = []
    for change in changes:
        key = (change.subject, change.text)
        if key not in seen:
            seen.add(key)
            kept.append(change)
    return kept
