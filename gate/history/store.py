"""The SQLite cache of the history export (stdlib `sqlite3`).

The export is the source of truth; this file only makes queries quick. It remembers
the size and sha256 of the export it was built from, and is rebuilt from the export
whenever they differ (a `git pull`, a hand edit, another export), when it is missing,
or when it cannot be read at all. Nothing is lost by deleting it.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gate.history import export
from gate.history.export import Fingerprint
from gate.history.records import HistoryError, HistoryRecord, RunKey

#: bump when the tables change, or what a record may hold: an older cache is then rebuilt
#: from the export, never migrated (2: records refuse values SQLite or a chart cannot hold;
#: 3: passes and samples)
STORE_VERSION = "3"

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    position INTEGER NOT NULL,
    suite TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    commit_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    case_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    system TEXT NOT NULL,
    mode TEXT,
    verdict TEXT NOT NULL,
    pass_rate REAL NOT NULL,
    passes INTEGER,
    samples INTEGER,
    weight REAL NOT NULL,
    input_tokens INTEGER,
    output_tokens INTEGER,
    cost_usd REAL,
    latency_ms REAL,
    PRIMARY KEY (suite, config_hash, commit_id, created_at, case_id)
);
CREATE INDEX IF NOT EXISTS records_by_case ON records (suite, case_id, created_at);
"""

#: a record's fields in the order of the columns after `position`
_COLUMNS = (
    "suite",
    "config_hash",
    "commit_id",
    "created_at",
    "case_id",
    "version",
    "system",
    "mode",
    "verdict",
    "pass_rate",
    "passes",
    "samples",
    "weight",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "latency_ms",
)
SELECT_RECORD = ", ".join(_COLUMNS)


def _row(record: HistoryRecord, position: int) -> tuple[Any, ...]:
    return (
        position,
        record.suite,
        record.config_hash,
        record.commit,
        record.created_at,
        record.case,
        record.version,
        record.system,
        record.mode,
        record.verdict,
        record.pass_rate,
        record.passes,
        record.samples,
        record.weight,
        record.input_tokens,
        record.output_tokens,
        record.cost_usd,
        record.latency_ms,
    )


def record_from_row(row: Iterable[Any]) -> HistoryRecord:
    values = dict(zip(_COLUMNS, row, strict=True))
    values["commit"] = values.pop("commit_id")
    values["case"] = values.pop("case_id")
    try:
        return HistoryRecord.model_validate(values)
    except ValidationError:
        raise StaleCache() from None


class StaleCache(HistoryError):
    """A cache row is not a record casegate wrote: the file was edited, not built here."""

    def __init__(self) -> None:
        super().__init__(
            "the history cache holds a row casegate did not write: delete the cache "
            "(.casegate/history.sqlite, or your --db); it is rebuilt from the export"
        )


class Store:
    """An open cache, in step with its export."""

    def __init__(self, connection: sqlite3.Connection, export_path: Path) -> None:
        self.connection = connection
        self.export_path = export_path

    @classmethod
    @contextlib.contextmanager
    def opened(cls, export_path: Path, db: Path | None) -> Iterator[Store]:
        """The cache at `db` (None: in memory, for one read), rebuilt if out of step."""
        store = cls(_connect(db), export_path)
        try:
            try:
                store.sync()
            except sqlite3.DatabaseError:
                if db is None:
                    raise
                # Not a database, or one this casegate cannot read: it is only a cache.
                store.connection.close()
                db.unlink(missing_ok=True)
                store = cls(_connect(db), export_path)
                store.sync()
            yield store
        except sqlite3.Error as exc:
            raise HistoryError(
                f"{db}: the history cache cannot be used ({exc}): delete it, or pass "
                "--db PATH to keep it elsewhere"
            ) from None
        finally:
            store.connection.close()

    def sync(self) -> None:
        """Rebuild from the export unless the cache was built from this very export."""
        self.connection.executescript(_TABLES)
        meta = dict(self.connection.execute("SELECT key, value FROM meta").fetchall())
        current = export.fingerprint(self.export_path)
        if meta == self._meta(current):
            return
        records, current = export.read_export(self.export_path)
        with self.connection:
            self.connection.execute("DELETE FROM records")
            self._insert(records, 0)
            self._set_meta(current)

    def has_run(self, key: RunKey) -> bool:
        found = self.connection.execute(
            "SELECT 1 FROM records WHERE suite = ? AND config_hash = ? AND commit_id = ? "
            "AND created_at = ? LIMIT 1",
            tuple(key),
        ).fetchone()
        return found is not None

    def add(self, records: list[HistoryRecord], written: Fingerprint) -> None:
        """Records just appended to the export, which now has the fingerprint `written`."""
        with self.connection:
            (last,) = self.connection.execute(
                "SELECT COALESCE(MAX(position), -1) FROM records"
            ).fetchone()
            self._insert(records, int(last) + 1)
            self._set_meta(written)

    def suites(self) -> list[str]:
        rows = self.connection.execute("SELECT DISTINCT suite FROM records ORDER BY suite")
        return [str(suite) for (suite,) in rows]

    def _insert(self, records: list[HistoryRecord], first: int) -> None:
        marks = ", ".join("?" * (len(_COLUMNS) + 1))
        self.connection.executemany(
            f"INSERT INTO records (position, {SELECT_RECORD}) VALUES ({marks})",  # noqa: S608 - column names are constants
            (_row(record, first + index) for index, record in enumerate(records)),
        )

    def _meta(self, current: Fingerprint) -> dict[str, str]:
        return {
            "store_version": STORE_VERSION,
            "export": str(self.export_path.resolve()),
            "export_size": str(current.size),
            "export_sha256": current.sha256,
        }

    def _set_meta(self, current: Fingerprint) -> None:
        self.connection.execute("DELETE FROM meta")
        self.connection.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)", self._meta(current).items()
        )


def _connect(db: Path | None) -> sqlite3.Connection:
    if db is None:
        return sqlite3.connect(":memory:")
    for path in (db, db.parent):  # a committed link would make SQLite write where it points
        if path.is_symlink():
            raise HistoryError(
                f"{db}: {path} is a symbolic link; casegate keeps its history cache in a real "
                "file: remove the link, or pass --db PATH"
            )
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
        return sqlite3.connect(db)
    except (OSError, sqlite3.Error) as exc:
        raise HistoryError(
            f"{db}: cannot open the history cache ({exc}): pass --db PATH to keep it elsewhere"
        ) from None
