"""The two sealed files of a slice, and the recordings held in memory while it runs.

`slice.sealed` holds the held-out cases (each as the YAML it was written in) and
the rotation log; `recordings.sealed` holds their recorded responses, one document
per case shaped as a readable recording file is. Both are decrypted into memory
only: no held-out case or response is ever written out in the clear, except by
`casegate holdout reveal` and `rotate`, on purpose.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.deciding.basetree import inside
from gate.deciding.heldout import SLICE_FILE
from gate.files import cannot_write
from gate.holdout.keys import HoldoutError, HoldoutKey
from gate.holdout.sealed import read_header, read_sealed, write_sealed
from gate.produce.recordings import SCHEMA as RECORDING_SCHEMA
from gate.produce.recordings import RecordingStore
from gate.suite.config import LoadedConfig
from gate.suite.sections import HoldoutConfig

RECORDINGS_FILE = "recordings.sealed"
SLICE_SCHEMA = "casegate.holdout-slice/1"
RECORDINGS_SCHEMA = "casegate.holdout-recordings/1"
#: written beside the sealed files: git shows no diff of ciphertext
GITATTRIBUTES = "*.sealed -diff\n"


@dataclass(frozen=True, slots=True)
class Location:
    """Where a slice's two files are, and how messages name them."""

    slice_path: Path
    recordings_path: Path
    #: the folder as the config names it (relative), for messages
    shown: str
    suite: str

    @property
    def slice_shown(self) -> str:
        return f"{self.shown}/{SLICE_FILE}"

    @property
    def recordings_shown(self) -> str:
        return f"{self.shown}/{RECORDINGS_FILE}"


def location_of(loaded: LoadedConfig) -> Location | None:
    """The slice the config declares, inside its repository; None when it declares none."""
    holdout = loaded.config.holdout
    return None if holdout is None else locate(loaded, holdout)


def _relative(root: Path, repository: Path, folder: str, name: str) -> str:
    return os.path.normpath(os.path.join(os.path.relpath(root, repository), folder, name))


def locate(loaded: LoadedConfig, holdout: HoldoutConfig, base: Any = None) -> Location:
    """The slice's files, inside the repository (no link, no `..` out of it): the cases from
    the base commit's tree when `base` (a gate.deciding.ruler Side) is given, the recordings always
    from the checkout, like every recording."""
    what = f"{loaded.path}: holdout.path"
    recordings = inside(
        loaded.repository,
        _relative(loaded.root, loaded.repository, holdout.path, RECORDINGS_FILE),
        what,
    )
    if base is None:
        cases = inside(
            loaded.repository,
            _relative(loaded.root, loaded.repository, holdout.path, SLICE_FILE),
            what,
        )
    else:
        cases = inside(
            base.repo_root,
            _relative(base.loaded.root, base.repo_root, holdout.path, SLICE_FILE),
            "the held-out slice on the base commit",
            base.refused,
        )
    return Location(cases, recordings, holdout.path.rstrip("/"), loaded.config.suite)


# --- the slice: cases and rotation log ----------------------------------------------


@dataclass(slots=True)
class Slice:
    """The held-out cases, each the YAML text of one case mapping, and how they got there."""

    cases: list[str] = field(default_factory=list)
    #: the current rotation: id (random), number, at, seed, fraction
    rotation: dict[str, Any] = field(default_factory=dict)
    #: every add and rotation, with counts only
    log: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rotation_id(self) -> str:
        return str(self.rotation.get("id", ""))

    def to_document(self) -> dict[str, Any]:
        return {
            "schema": SLICE_SCHEMA,
            "cases": list(self.cases),
            "rotation": dict(self.rotation),
            "log": list(self.log),
        }


def new_rotation(number: int, at: str, **details: Any) -> dict[str, Any]:
    """A rotation record with a fresh id: the read count starts again under it."""
    return {"id": f"r{number}-{secrets.token_hex(4)}", "number": number, "at": at, **details}


def read_slice(location: Location, key: HoldoutKey) -> Slice:
    if not location.slice_path.is_file():
        raise HoldoutError(no_slice_message(location, key.variable))
    document = read_sealed(
        location.slice_path,
        key,
        purpose="holdout-cases",
        suite=location.suite,
        shown=location.slice_shown,
    )
    cases = document.get("cases") if isinstance(document, dict) else None
    rotation = document.get("rotation") if isinstance(document, dict) else None
    log = document.get("log") if isinstance(document, dict) else None
    if (
        not isinstance(document, dict)
        or document.get("schema") != SLICE_SCHEMA
        or not isinstance(cases, list)
        or not all(isinstance(text, str) for text in cases)
        or not isinstance(rotation, dict)
        or not isinstance(log, list)
    ):
        raise HoldoutError(
            f"{location.slice_shown}: sealed, but not a {SLICE_SCHEMA} slice: this casegate "
            "cannot read it (a newer casegate wrote it?)"
        )
    return Slice(list(cases), dict(rotation), list(log))


def no_slice_message(location: Location, variable: str) -> str:
    return (
        f"{location.slice_shown}: no such file, but the config declares `holdout: "
        f"{location.shown}`: create the slice with `casegate holdout add FILE…` ({variable} "
        "set), or remove `holdout:` from the config"
    )


def require_slice_file(location: Location, variable: str) -> None:
    """Even without the key, a declared slice that is missing or of another suite is an error."""
    try:
        data = location.slice_path.read_bytes()
    except FileNotFoundError:
        raise HoldoutError(no_slice_message(location, variable)) from None
    except OSError as exc:
        raise HoldoutError(f"{location.slice_shown}: cannot read it ({exc.strerror})") from None
    read_header(data, location.slice_shown, purpose="holdout-cases", suite=location.suite)


def write_slice(location: Location, key: HoldoutKey, sliced: Slice) -> None:
    write_sealed(
        location.slice_path,
        sliced.to_document(),
        key,
        purpose="holdout-cases",
        suite=location.suite,
    )
    _mark_binary(location.slice_path.parent)


def _mark_binary(folder: Path) -> None:
    attributes = folder / ".gitattributes"
    if not attributes.exists():
        try:
            attributes.write_text(GITATTRIBUTES, encoding="utf-8")
        except OSError as exc:
            raise cannot_write(attributes, exc) from None


# --- the recordings ------------------------------------------------------------------


class SealedRecordings(RecordingStore):
    """A RecordingStore over the decrypted recordings, in memory: reads and writes never
    touch a file, and no message names a case (the folder is the slice's, for all)."""

    def __init__(self, documents: dict[str, dict[str, Any]], shown: str) -> None:
        super().__init__(Path(shown))
        self.documents = documents
        self.changed = False

    def path_for(self, case_id: str) -> Path:
        return self.folder  # never a held-out id in a message

    def recording_files(self) -> list[Path]:
        return []

    def _load(self, case_id: str) -> dict[str, Any]:
        found = self.documents.get(case_id)
        if found is None:
            return {"schema": RECORDING_SCHEMA, "case": case_id, "responses": {}}
        return found

    def write_file(self, path: Path, document: Any, work: Path) -> None:
        self.documents[str(document["case"])] = dict(document)
        self.changed = True

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[Path]:
        with self._lock:
            yield self.folder

    @property
    def responses(self) -> int:
        return sum(len(document["responses"]) for document in self.documents.values())


def read_recordings(location: Location, key: HoldoutKey) -> SealedRecordings:
    """The slice's recordings (none yet when the file does not exist)."""
    if not location.recordings_path.is_file():
        return SealedRecordings({}, location.recordings_shown)
    document = read_sealed(
        location.recordings_path,
        key,
        purpose="holdout-recordings",
        suite=location.suite,
        shown=location.recordings_shown,
    )
    cases = document.get("cases") if isinstance(document, dict) else None
    if (
        not isinstance(document, dict)
        or document.get("schema") != RECORDINGS_SCHEMA
        or not isinstance(cases, dict)
        or not all(
            isinstance(entry, dict) and isinstance(entry.get("responses"), dict)
            for entry in cases.values()
        )
    ):
        raise HoldoutError(
            f"{location.recordings_shown}: sealed, but not {RECORDINGS_SCHEMA} recordings: this "
            "casegate cannot read them"
        )
    return SealedRecordings(dict(cases), location.recordings_shown)


def write_recordings(location: Location, key: HoldoutKey, store: SealedRecordings) -> None:
    document = {"schema": RECORDINGS_SCHEMA, "cases": store.documents}
    write_sealed(
        location.recordings_path,
        document,
        key,
        purpose="holdout-recordings",
        suite=location.suite,
    )
    _mark_binary(location.recordings_path.parent)


def remove_files(location: Location) -> list[Path]:
    """Delete the slice's files (`reveal`); the ones that were there."""
    removed = []
    for path in (location.slice_path, location.recordings_path):
        if path.exists():
            try:
                os.unlink(path)
            except OSError as exc:
                raise cannot_write(path, exc) from None
            removed.append(path)
    return removed
