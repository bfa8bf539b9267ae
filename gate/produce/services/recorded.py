"""Record and replay for the services: one entry per text asked about, in the case's file.

An entry's key is a prefix naming the service (`emb-`, `mod-`) and a digest of the
service's identity (provider, model, target) and the text, so it can collide with
neither a system output's key nor a judge verdict's, and a changed model finds no
recordings. Replay answers only from recordings and fails loudly on a miss, as it
does for outputs; a failed call is never recorded.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

from gate.produce.services.backends import OpenAIBackend, PythonBackend, ServiceError
from gate.suite.pins import ServicePin

#: what each service's keys start with
PREFIXES = {"embeddings": "emb-", "moderation": "mod-"}
#: how much of the text asked about an entry shows, so a diff says what was (re)measured
EXCERPT_CHARS = 200


class MissingServiceRecording(ServiceError):
    """Replay met a text whose answer was never recorded."""


class Entries(Protocol):
    """Where entries are read and written: the recordings folder, or a snapshot of it."""

    def get_entry(self, case_id: str, key: str) -> dict[str, Any] | None: ...

    def put_entry(self, case_id: str, key: str, entry: Mapping[str, Any]) -> None: ...


class Snapshot:
    """Entries read before the supervised run started: what the gate's process judges by."""

    def __init__(self, entries: Mapping[tuple[str, str], dict[str, Any]]) -> None:
        self._entries = dict(entries)

    def get_entry(self, case_id: str, key: str) -> dict[str, Any] | None:
        return self._entries.get((case_id, key))

    def put_entry(self, case_id: str, key: str, entry: Mapping[str, Any]) -> None:
        raise RuntimeError("a snapshot of the recordings is read-only")


def fingerprint_of(pin: ServicePin) -> str:
    blob = json.dumps(pin.identity(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def entry_key(service: str, fingerprint: str, text: str) -> str:
    blob = json.dumps([service, fingerprint, text], separators=(",", ":"), ensure_ascii=False)
    return PREFIXES[service] + hashlib.sha256(blob.encode()).hexdigest()[:24]


def excerpt(text: str) -> str:
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"


class RecordedService:
    """One service under a pin: answers per text, recorded, replayed or asked for live."""

    service: ClassVar[str]
    #: what one answer is called in messages ("embedding", "moderation score")
    noun: ClassVar[str]

    def __init__(
        self,
        pin: ServicePin,
        *,
        mode: str,
        entries: Entries,
        root: Path | None = None,
        reuse_recorded: bool = False,
    ) -> None:
        self.pin = pin
        self.mode = mode
        self.entries = entries
        self.root = root
        self.reuse_recorded = reuse_recorded
        self.fingerprint = fingerprint_of(pin)
        #: case ids that replay found without a recording
        self.missing: list[str] = []
        self.calls = 0
        self._found: dict[tuple[str, str], Any] = {}
        self._asked: dict[str, Any] = {}
        self._backend: OpenAIBackend | PythonBackend | None = None
        self._lock = threading.Lock()

    def describe(self) -> str:
        return self.pin.describe()

    def key(self, text: str) -> str:
        return entry_key(self.service, self.fingerprint, text)

    def prepare(self) -> None:
        """Fail before any work when the live service cannot be built (a key, a target)."""
        if self.mode != "replay":
            self._live()

    def _live(self) -> OpenAIBackend | PythonBackend:
        with self._lock:
            if self._backend is None:
                if self.pin.provider == "python":
                    assert self.root is not None  # a live service always has the config's folder
                    self._backend = PythonBackend(self.pin, self.service, self.root)
                else:
                    self._backend = OpenAIBackend(self.pin, self.service)
            return self._backend

    def answers(self, case_id: str, texts: Sequence[str]) -> list[Any]:
        """One decoded answer per text: recorded or asked for, as the mode says.

        Raises ServiceError (MissingServiceRecording in replay) when there is none.
        """
        keys = {text: self.key(text) for text in texts}
        with self._lock:
            found = {
                t: self._found[(case_id, k)] for t, k in keys.items() if (case_id, k) in self._found
            }
        if self.mode == "replay" or self.reuse_recorded:
            for text, key in keys.items():
                if text not in found:
                    entry = self.entries.get_entry(case_id, key)
                    if entry is not None:
                        found[text] = self._decoded(case_id, key, entry)
        todo = [text for text in keys if text not in found]
        if todo and self.mode == "replay":
            with self._lock:
                self.missing.append(case_id)
            raise MissingServiceRecording(
                self.service,
                f"no recorded {self.noun} for this text under {self.describe()}: run "
                "`casegate record --only-missing` with the service's key set, and commit the "
                "recordings",
            )
        if todo:
            for text, value in zip(todo, self._ask_live(todo), strict=True):
                found[text] = value
                if self.mode == "record":
                    entry = {
                        "captured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                        "system": self.service,
                        "provider": self.pin.provider,
                        "model": self.pin.model,
                        "fingerprint": self.fingerprint,
                        "text": excerpt(text),
                        **self.encode(value),
                    }
                    self.entries.put_entry(case_id, keys[text], entry)
        with self._lock:
            self._found.update({(case_id, keys[text]): found[text] for text in keys})
        return [found[text] for text in texts]

    def _ask_live(self, texts: list[str]) -> list[Any]:
        with self._lock:
            known = {text: self._asked[text] for text in texts if text in self._asked}
        wanted = [text for text in texts if text not in known]
        if wanted:
            values = self.ask(self._live(), wanted)
            with self._lock:
                self.calls += 1
                self._asked.update(zip(wanted, values, strict=True))
            known.update(zip(wanted, values, strict=True))
        return [known[text] for text in texts]

    def _decoded(self, case_id: str, key: str, entry: Mapping[str, Any]) -> Any:
        try:
            return self.decode(entry)
        except (KeyError, TypeError, ValueError) as exc:
            raise ServiceError(
                self.service,
                f"the recorded {self.noun} {key} of case {case_id!r} is malformed ({exc}); "
                "delete it and re-record",
            ) from None

    # --- what each service defines ---------------------------------------------------

    def ask(self, backend: OpenAIBackend | PythonBackend, texts: list[str]) -> list[Any]:
        """One live request for `texts`; one answer each, in order (ServiceError if not)."""
        raise NotImplementedError

    def encode(self, value: Any) -> dict[str, Any]:
        """The recorded form of one answer (JSON)."""
        raise NotImplementedError

    def decode(self, entry: Mapping[str, Any]) -> Any:
        """One answer from its recorded form; KeyError/TypeError/ValueError when malformed."""
        raise NotImplementedError
