"""Input files: files of the suite that a case's system reads (`input_files:`).

A case (or `defaults:`) names them by paths relative to the config's folder. When the
cases load, casegate reads each one and keeps its sha256: the hashes are part of the key
a recording is stored under (`Case.key_input`) and of the ruler
(gate.deciding.rulercases), so editing a file needs a new recording, and under a pull
request the bytes of the base's tree are compared with the pull request's.

Only real files inside the config's folder count: no absolute path, no `..`, nothing in
`.git`, no symbolic link anywhere on the way, no folder, device or pipe, nothing past
the size limit. Paths are explicit (no globs): what a case reads is what it names.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path, PurePosixPath

from gate.limits import MAX_INPUT_FILE_BYTES, over

#: read and hashed this much at a time: a large file never sits in memory whole
_PIECE = 1 << 20
_GLOB = frozenset("*?[")
_DRIVE = re.compile(r"^[A-Za-z]:")
_FIX_SIZE = "keep a smaller file (a cropped image, an excerpt) as the fixture"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
_FOLDER_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_DIRECTORY", 0)


class InputFileError(Exception):
    """What is wrong with one input file, in words that name it and the fix."""


def written_problem(written: str) -> str | None:
    """What is wrong with a path as written, before the disk is looked at (None: nothing)."""
    shown = repr(written)
    if "\0" in written:
        return f"{shown} holds a NUL character"
    if "\\" in written:
        return f"{shown}: write paths with / between folders (a \\ means another file elsewhere)"
    path = PurePosixPath(written)
    if path.is_absolute() or _DRIVE.match(written):
        return f"{shown} is absolute: name the file relative to the config's folder"
    if ".." in path.parts:
        return (
            f"{shown} climbs out with `..`: input files lie inside the config's folder; "
            "move the file there"
        )
    if any(part.lower() == ".git" for part in path.parts):
        return f"{shown} is inside .git, which is git's, not the suite's: keep fixtures elsewhere"
    if not path.parts:
        return f"{shown} names no file"
    return None


def normal(written: str) -> str:
    """The path as the recording key and the ruler name it (`./a.txt` is `a.txt`)."""
    return PurePosixPath(written).as_posix()


def locate(root: Path, written: str) -> Path:
    """The file `written` names under `root`; InputFileError when it is not a real file
    inside it (checked part by part, so no link on the way is followed)."""
    problem = written_problem(written)
    if problem is not None:
        raise InputFileError(problem)
    path = root
    for part in PurePosixPath(written).parts:
        path = path / part
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            globbed = " (globs are not expanded: list each file)" if _GLOB & set(written) else ""
            raise InputFileError(
                f"{written!r} does not exist (paths are relative to the config's folder, "
                f"{root}){globbed}"
            ) from None
        except OSError as exc:
            raise InputFileError(f"{written!r}: cannot read ({exc.strerror or exc})") from None
        if stat.S_ISLNK(info.st_mode):
            raise InputFileError(
                f"{written!r} goes through a symbolic link ({path.relative_to(root).as_posix()}): "
                "name the file itself; casegate reads only real files inside the config's folder"
            )
    if stat.S_ISDIR(info.st_mode):
        raise InputFileError(f"{written!r} is a folder: name each file in it")
    if not stat.S_ISREG(info.st_mode):
        raise InputFileError(f"{written!r} is not a regular file")
    return path


def digest(root: Path, written: str) -> str:
    """The sha256 of the file `written` names under `root` (found by `locate`), opened
    folder by folder without following a link (a folder swapped for one since `locate`
    looked fails to open) and refused past MAX_INPUT_FILE_BYTES; InputFileError naming
    `written` otherwise."""
    try:
        descriptor = _open_beneath(root, PurePosixPath(written).parts)
    except OSError as exc:
        raise InputFileError(f"{written!r}: cannot read ({exc.strerror or exc})") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):  # swapped since `locate` looked
            raise InputFileError(f"{written!r} is not a regular file")
        if info.st_size > MAX_INPUT_FILE_BYTES:
            raise InputFileError(
                f"{written!r}: "
                + over(info.st_size, MAX_INPUT_FILE_BYTES, "an input file", _FIX_SIZE)
            )
        hashed, read = hashlib.sha256(), 0
        while piece := os.read(descriptor, _PIECE):
            read += len(piece)
            if read > MAX_INPUT_FILE_BYTES:  # it grew while it was read
                raise InputFileError(
                    f"{written!r}: " + over(read, MAX_INPUT_FILE_BYTES, "an input file", _FIX_SIZE)
                )
            hashed.update(piece)
    except OSError as exc:
        raise InputFileError(f"{written!r}: cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(descriptor)
    return hashed.hexdigest()


def _open_beneath(root: Path, parts: tuple[str, ...]) -> int:
    """A descriptor of `root/parts…`, each folder opened relative to the one before it and
    none through a link (where the system offers `dir_fd`; elsewhere by its path)."""
    if os.open not in os.supports_dir_fd:  # pragma: no cover - Windows
        return os.open(root.joinpath(*parts), _FILE_FLAGS)
    folder = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for part in parts[:-1]:
            inner = os.open(part, _FOLDER_FLAGS, dir_fd=folder)
            os.close(folder)
            folder = inner
        return os.open(parts[-1], _FILE_FLAGS, dir_fd=folder)
    finally:
        os.close(folder)
