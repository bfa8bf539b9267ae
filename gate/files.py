"""Reading and writing casegate's files: whole or not at all, secrets masked, clear errors.

A write goes to a temporary file and replaces the target in one step, so a crash or
a full disk never leaves half a file where a whole one was; the temporary is removed
on any failure. Every piece of text is passed through `gate.secrets.redact` first.
A read of JSON turns what Python cannot hold (nesting past MAX_DEPTH, an integer past
Python's digit limit) into a ValueError that says so, never a RecursionError.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from gate.errors import CasegateError, ConfigError
from gate.secrets import redact

#: git must not find a repository the pull request made (a bare repository is a few
#: committed files: HEAD, config, objects/, refs/); nor run anything from one.
GIT_HARDENING = ("-c", "safe.bareRepository=explicit", "-c", "core.fsmonitor=false")

#: How deeply a document casegate reads may nest lists and mappings; far beyond any
#: real case, config, result or recording, and well inside Python's recursion limit.
MAX_DEPTH = 100
#: The suffix of every temporary file a write leaves behind only if it is killed.
TEMPORARY_SUFFIX = ".casegate-tmp"


class OutputError(CasegateError):
    """An artefact could not be written: no permission, a folder in the way, a full disk."""


class Writer(Protocol):
    def write(self, text: str, /) -> object: ...


class _Redacting:
    """A text stream that masks known secrets in every piece written."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str, /) -> int:
        return int(self._stream.write(redact(text)))


def cannot_write(path: Path, exc: OSError) -> OutputError:
    reason = exc.strerror or str(exc)
    if isinstance(exc, FileExistsError | NotADirectoryError):
        blocker = next((folder for folder in path.parents if folder.is_file()), None)
        reason = f"{blocker} is a file, not a folder" if blocker else reason
    return OutputError(f"{path}: cannot write it ({reason}); choose a path you can write to")


@contextlib.contextmanager
def atomic_writer(
    path: Path, *, scratch: Path | None = None, mask: bool = True
) -> Iterator[Writer]:
    """A stream whose text replaces `path` when the block ends without an error.

    The temporary lives in `scratch` (default: the target's folder), which must be on
    the same file system. Raises OutputError naming the file on any OSError. `mask`
    redacts secrets and URL credentials; only casegate's own templates (the starter
    files, whose workflows name `${GITHUB_TOKEN}` in a URL on purpose) go without.
    """
    try:
        refuse_links(path)
        device = path.exists() and not path.is_file() and not path.is_dir()
    except OSError as exc:  # a folder on the way that cannot be searched
        raise cannot_write(path, exc) from None
    if device:
        # /dev/null, /dev/stdout, a pipe: nothing to replace, and nothing a partial write loses.
        try:
            with path.open("w", encoding="utf-8", errors="backslashreplace") as stream:
                yield _Redacting(stream) if mask else stream
        except OSError as exc:
            raise cannot_write(path, exc) from None
        return
    with _replacing(path, scratch or path.parent, binary=False) as stream:
        yield _Redacting(stream) if mask else stream


@contextlib.contextmanager
def _replacing(path: Path, folder: Path, *, binary: bool) -> Iterator[Any]:
    """A new temporary file in `folder` that replaces `path` when the block ends well."""
    temporary: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        folder.mkdir(parents=True, exist_ok=True)
        temporary, handle = _create_temporary(folder, path.name)
        # A lone surrogate (a JSON "\ud800" escape) is written as that same escape.
        with (
            os.fdopen(handle, "wb")
            if binary
            else os.fdopen(handle, "w", encoding="utf-8", errors="backslashreplace")
        ) as stream:
            yield stream
        os.replace(temporary, path)
        temporary = None
    except OSError as exc:
        raise cannot_write(path, exc) from None
    finally:
        if temporary is not None:
            temporary.unlink(missing_ok=True)


def refuse_links(path: Path) -> None:
    """An OutputError when writing `path` would follow a symbolic link to a file.

    A checkout can hold links (a pull request commits them): `.casegate` linked to a
    folder elsewhere, or a report path linked to a file outside the workspace. The
    link itself, and every folder on the way below the working directory, must be
    real. A link to a device or a pipe (`/dev/stdout`) is written to, as a stream.
    """
    if path.is_symlink():
        try:
            target = path.resolve()
            plain = not target.exists() or target.is_file() or target.is_dir()
        except (OSError, RuntimeError):  # a loop of links
            target, plain = path, True
        if plain:
            raise OutputError(
                f"{path}: is a symbolic link (to {target}); casegate never writes through a "
                "link: remove it, or choose another path"
            )
    here = Path.cwd()
    absolute = path if path.is_absolute() else here / path
    for folder in absolute.parents:
        if folder == here or folder in here.parents:
            break  # the working directory and above are the user's own choice
        if folder.is_symlink():
            raise OutputError(
                f"{path}: the folder {folder} on its way is a symbolic link; casegate never "
                "writes through a link: remove it, or choose another path"
            )


def work_folder(folder: Path) -> Path:
    """casegate's own folder in the checkout, made if missing; never a committed link or file."""
    if folder.is_symlink():
        raise OutputError(
            f"{folder}: is a symbolic link (committed to the repository?); casegate writes its "
            "results there and never through a link: remove it"
        )
    if folder.exists() and not folder.is_dir():
        raise OutputError(
            f"{folder}: is a file (committed to the repository?), not casegate's folder for "
            "results and reports: remove it"
        )
    folder.mkdir(exist_ok=True)
    return folder


def private_scratch(prefix: str, preferred: str | None) -> Path:
    """A new folder only this user can enter, under `preferred` (the runner's RUNNER_TEMP)
    when that is a real folder, else under the system's temporary folder.

    Some runners set RUNNER_TEMP to a folder a container action cannot see
    (actions/runner#1984): the scratch must not depend on it.
    """
    import tempfile

    where = preferred if preferred and os.path.isdir(preferred) else None
    return Path(tempfile.mkdtemp(prefix=prefix, dir=where))  # mode 0700


def write_bytes(path: Path, data: bytes) -> None:
    """Write `data` to `path` as it is (no masking: it is a file casegate wrote before),
    atomically and never through a link."""
    refuse_links(path)
    with _replacing(path, path.parent, binary=True) as stream:
        stream.write(data)


def _create_temporary(folder: Path, name: str) -> tuple[Path, int]:
    # os.open with 0o666 lets the umask decide the mode, as for any file the user writes
    # (tempfile.mkstemp would leave every artefact readable by its owner only).
    while True:
        candidate = folder / f".{name}.{os.urandom(4).hex()}{TEMPORARY_SUFFIX}"
        try:
            return candidate, os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:  # pragma: no cover - 32 random bits collided
            continue


def write_text(path: Path, text: str, *, scratch: Path | None = None, mask: bool = True) -> None:
    """Write `text` (secrets masked unless `mask=False`) to `path` atomically."""
    with atomic_writer(path, scratch=scratch, mask=mask) as stream:
        stream.write(text)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document = dict(pairs)
    if len(document) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"the key {key!r} appears twice in one object")
            seen.add(key)
    return document


# Built once: json.loads makes a new decoder on every call given a hook, and a replay
# reads thousands of small documents.
_UNIQUE_KEYS = json.JSONDecoder(object_pairs_hook=_unique_keys)
_PLAIN = json.JSONDecoder()


def write_new_files(
    files: Mapping[Path, str],
    *,
    refusal: Sequence[str],
    mask: bool = True,
    may_replace: Collection[Path] = (),
) -> list[Path]:
    """Write every file, in order, or none: an existing one is never overwritten.

    `refusal` is the message (one line per problem: "{path}" is filled in with each
    existing file, then the advice) raised as a ConfigError when any file exists,
    except those in `may_replace`. When one cannot be written (an OutputError naming
    it), the files and folders made so far are removed again.
    """
    try:
        existing = [p for p in files if p not in may_replace and (p.exists() or p.is_symlink())]
        new_folders = {folder for path in files for folder in path.parents if not folder.exists()}
    except OSError as exc:  # a folder on the way that cannot be read
        raise cannot_write(next(iter(files)), exc) from None
    if existing:
        first, *advice = refusal
        raise ConfigError([first.format(path=path) for path in existing] + advice)
    created: list[Path] = []
    written: list[Path] = []
    try:
        for path, text in files.items():
            new = not path.exists()
            write_text(path, text, mask=mask)
            written.append(path)
            if new:
                created.append(path)
    except OutputError:
        for path in created:
            path.unlink(missing_ok=True)
        for folder in sorted(new_folders, key=lambda f: len(f.parts), reverse=True):
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    return written


def parse_json(text: str | bytes, *, unique_keys: bool = False) -> Any:
    """json.loads, with nesting deeper than MAX_DEPTH and oversized integers as ValueError.

    `unique_keys`: an object naming a key twice is refused (json.loads would keep the
    last one, while a reader of the file sees the first).
    """
    try:
        if isinstance(text, bytes | bytearray):  # as json.loads reads them: UTF-8, -16 or -32
            text = text.decode(json.detect_encoding(text), "surrogatepass")
        elif text.startswith("\ufeff"):  # refused, as json.loads refuses it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        document = (_UNIQUE_KEYS if unique_keys else _PLAIN).decode(text)
    except RecursionError:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:
        if "integer string conversion" in str(exc):
            limit = sys.get_int_max_str_digits()
            raise ValueError(f"a number has more than {limit} digits") from None
        raise
    # Fewer brackets than MAX_DEPTH cannot nest that deep: most documents skip the walk,
    # which costs more than the parse for the thousands of small ones a replay reads.
    if _brackets(text) > MAX_DEPTH and too_deep(document):
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    return document


def _brackets(text: str | bytes) -> int:
    if isinstance(text, bytes):
        return text.count(b"{") + text.count(b"[")
    return text.count("{") + text.count("[")


def too_deep(document: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether lists and mappings nest more than `limit` levels (checked without recursion)."""
    # Level by level, each level's containers gathered by a comprehension: half the time
    # of a stack of (value, depth) pairs on a results file, which the gate reads twice.
    level = [document] if isinstance(document, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below: list[Any] = []
        for value in level:
            children = value.values() if isinstance(value, dict) else value
            below.extend([child for child in children if isinstance(child, dict | list)])
        level = below
    return False
