"""The committed history export: JSONL, one record per case per run, keys sorted.

It is the source of truth (the SQLite file is a cache of it), so it is read strictly:
the first malformed line ends the read with one problem naming file:line. Lines are
only ever appended, so a diff of the file shows the runs a commit added.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from gate.files import parse_json, write_text
from gate.history.records import SCHEMA, HistoryError, HistoryRecord, RunKey
from gate.yamlfile import dotted, printable

#: the schemas this family of files has (only version 1 so far)
_SCHEMA_FAMILY = re.compile(r"casegate\.history/[0-9]{1,4}")


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What the cache remembers of the export it was built from."""

    size: int
    sha256: str

    @classmethod
    def of(cls, data: bytes) -> Fingerprint:
        return cls(len(data), hashlib.sha256(data).hexdigest())


def fingerprint(path: Path) -> Fingerprint:
    """The export's size and digest; an empty fingerprint when there is no export yet."""
    return Fingerprint.of(_read_bytes(path))


#: characters some readers take for a line break that JSON leaves unescaped
_LINE_BREAKS = {ord(c): f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"}


def line_of(record: HistoryRecord) -> str:
    """The record as one line by any reader's measure (git's, an editor's, Python's)."""
    text = json.dumps(record.to_json(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return text.translate(_LINE_BREAKS)


def read_export(path: Path) -> tuple[list[HistoryRecord], Fingerprint]:
    """Every record of the export, in file order, and the export's fingerprint.

    A line repeated word for word (two branches appending the same run, merged) is read
    once; the same case of the same run twice with other values is a problem.
    """
    data = _read_bytes(path)
    records: list[HistoryRecord] = []
    seen: dict[tuple[RunKey, str], tuple[int, HistoryRecord]] = {}
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        record = parse_line(raw, path, number)
        first = seen.get((record.key, record.case))
        if first is None:
            seen[(record.key, record.case)] = (number, record)
            records.append(record)
        elif first[1] != record:
            raise HistoryError(
                f"{path}:{number}: case {_brief(record.case)} of "
                f"{printable(record.key.describe())} is already on line {first[0]} with other "
                "values: keep one of the two lines"
            )
    return records, Fingerprint.of(data)


def parse_line(raw: bytes, path: Path, number: int) -> HistoryRecord:
    where = f"{path}:{number}"
    try:
        data = parse_json(raw.decode("utf-8"), unique_keys=True)
    except UnicodeDecodeError as exc:
        raise HistoryError(f"{where}: not UTF-8 text ({exc.reason})") from None
    except ValueError as exc:
        raise HistoryError(f"{where}: not a JSON line ({exc})") from None
    if not isinstance(data, dict):
        raise HistoryError(
            f"{where}: expected a history record (a JSON object), found {type(data).__name__}"
        )
    schema = data.get("schema")
    if schema != SCHEMA:
        newer = isinstance(schema, str) and _SCHEMA_FAMILY.fullmatch(schema)
        fix = "upgrade casegate to read it" if newer else "is this a casegate history export?"
        raise HistoryError(f"{where}: expected schema {SCHEMA!r}, found {_brief(schema)}: {fix}")
    try:
        return HistoryRecord.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        # A key of the line's own (an unknown field) is printed escaped and cut short.
        field = _brief_text(dotted(error["loc"])) or "the record"
        raise HistoryError(f"{where}: {field}: {error['msg']}") from None


def _brief(value: object) -> str:
    """`value` as Python writes it, cut short: one line of a message, whatever it holds."""
    return _brief_text(repr(value))


def _brief_text(text: str) -> str:
    return text if len(text) <= 80 else text[:79] + "…"


def append(path: Path, records: list[HistoryRecord]) -> None:
    """Add `records` at the end of the export, whole or not at all."""
    existing = _read_bytes(path).decode("utf-8")  # read_export checked it first
    if existing and not existing.endswith("\n"):
        existing += "\n"  # a hand edit dropped the last newline; the new lines start afresh
    write_text(path, existing + "".join(line_of(record) + "\n" for record in records))


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""
    except IsADirectoryError:
        raise HistoryError(
            f"{path}: is a folder, not a history export: set `history:` to a .jsonl file"
        ) from None
    except OSError as exc:
        raise HistoryError(
            f"{path}: cannot read the history export ({exc.strerror or exc})"
        ) from None
