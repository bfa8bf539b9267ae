"""Recorded responses: freeze the system so pull-request checks replay for free.

One JSON file per case, holding every recorded response for it keyed by a
fingerprint of (resolved system config, case input, sample index). Files are
indented with sorted keys so a pull request shows a readable diff.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gate.errors import ResultsError
from gate.outputs import Output

SCHEMA = "casegate.recording/1"

#: Keys that change how a request travels, not what is asked: they never
#: invalidate a recording. `name` is a label; `prompt_file` is covered by the
#: prompt text it resolves to.
TRANSPORT_KEYS = frozenset(
    {"name", "prompt_file", "base_url", "api_key_env", "timeout_s", "max_retries"}
)


def _digest(value: Any, length: int) -> str:
    blob = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:length]


def system_fingerprint(system: Mapping[str, Any]) -> str:
    """What the system is, for recording keys: everything but transport and labels."""
    return _digest({k: v for k, v in system.items() if k not in TRANSPORT_KEYS}, 16)


def request_key(fingerprint: str, case_input: Mapping[str, Any], sample: int) -> str:
    return _digest([fingerprint, case_input, sample], 24)


def _safe_name(case_id: str) -> str:
    # Case ids are restricted to [A-Za-z0-9._-]; a leading dot would hide the file.
    return ("_" + case_id if case_id.startswith(".") else case_id) + ".json"


class RecordingStore:
    """Reads and writes the recordings folder of one suite."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._lock = threading.Lock()
        self._cache: dict[str, dict[str, Any]] = {}

    def path_for(self, case_id: str) -> Path:
        return self.folder / _safe_name(case_id)

    def _load(self, case_id: str, *, keep: bool = True) -> dict[str, Any]:
        cached = self._cache.get(case_id)
        if cached is not None:
            return cached
        path = self.path_for(case_id)
        document: dict[str, Any]
        try:
            document = json.loads(path.read_bytes())
        except FileNotFoundError:
            document = {"schema": SCHEMA, "case": case_id, "responses": {}}
        except ValueError as exc:
            raise ResultsError(
                f"{path}: not a valid recording ({exc}); delete it and re-record"
            ) from None
        if document.get("schema") != SCHEMA or not isinstance(document.get("responses"), dict):
            raise ResultsError(f"{path}: not a {SCHEMA} file; delete it and re-record")
        if keep:
            self._cache[case_id] = document
        return document

    def get(self, case_id: str, key: str) -> Output | None:
        return self.get_many(case_id, [key])[0]

    def get_many(self, case_id: str, keys: list[str]) -> list[Output | None]:
        """Outputs for several keys of one case; the file is read once and not kept."""
        responses = self._load(case_id, keep=False)["responses"]
        outputs: list[Output | None] = []
        for key in keys:
            entry = responses.get(key)
            try:
                outputs.append(None if entry is None else Output.model_validate(entry["output"]))
            except (KeyError, TypeError, ValidationError) as exc:
                path = self.path_for(case_id)
                raise ResultsError(
                    f"{path}: recording {key} is malformed ({exc}); re-record it"
                ) from None
        return outputs

    def put(
        self,
        case_id: str,
        key: str,
        output: Output,
        *,
        system: Mapping[str, Any],
        fingerprint: str,
        sample: int,
    ) -> None:
        """Store one response at once, so an interrupted recording keeps what it paid for."""
        entry = {
            "captured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "system": system.get("name"),
            "provider": system.get("provider"),
            "model": output.model or system.get("model"),
            "fingerprint": fingerprint,
            "sample": sample,
            "output": output.model_dump(mode="json", exclude_defaults=True),
        }
        with self._lock:
            document = self._load(case_id)
            document["responses"][key] = entry
            self.folder.mkdir(parents=True, exist_ok=True)
            _write_atomic(self.path_for(case_id), document)


def _write_atomic(path: Path, document: Mapping[str, Any]) -> None:
    text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
