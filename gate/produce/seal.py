"""Who made a recording, and a seal that proves casegate made it in CI.

Every recorded response carries its provenance: `captured_by` (`ci` on a CI runner,
else `local`), `captured_at` and `casegate_version`. Those are claims: anyone can write
them. A recording made by casegate while it holds the repository's recording key
(`CASEGATE_RECORDING_KEY`, a secret only CI has) also carries a `seal`, an HMAC-SHA256
over the case, the request key and the whole entry. An author cannot make one, and an
edit to any field of a sealed entry, or the entry moved to another request, breaks it.

The key is read once, in the process that gates (`hold_from_environment`), taken out of
its environment, and never given to a supervised run: a run records into a folder of its
own, and the gate writes afresh, dated and sealed, the answers it judged
(gate.produce.recordings.adopt_run).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Literal

from gate import __version__
from gate.errors import ConfigError

KEY_ENV = "CASEGATE_RECORDING_KEY"
#: a shorter value is refused: it would be a password, not a key
MIN_KEY_CHARS = 32
SEAL_PREFIX = "hmac-sha256"
#: the fields of an entry a seal covers: all of them, but the seal itself
SEAL_FIELD = "seal"
_DOMAIN = "casegate.recording/1"
_MAC = re.compile(r"[0-9a-f]{64}")

SealState = Literal["sealed", "unsealed", "broken", "other key"]


@dataclass(frozen=True, slots=True)
class RecordingKey:
    """The recording key's bytes (never shown) and the variable it came from."""

    secret: bytes = field(repr=False)
    variable: str = KEY_ENV

    @property
    def key_id(self) -> str:
        """16 hex digits naming the key in seals, telling nothing about it."""
        return hmac.new(self.secret, f"{_DOMAIN} key id".encode(), hashlib.sha256).hexdigest()[:16]

    def _mac(self, case_id: str, request: str, entry: Mapping[str, Any]) -> str:
        signed = {k: v for k, v in entry.items() if k != SEAL_FIELD}
        message = json.dumps(
            [_DOMAIN, case_id, request, signed],
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
        )
        return hmac.new(self.secret, message.encode(), hashlib.sha256).hexdigest()

    def sign(self, purpose: str, payload: Any) -> str:
        """A seal over any JSON value, in a domain of its own (`purpose`), so that no seal
        made for one thing stands for another."""
        message = json.dumps(
            [_DOMAIN, purpose, payload],
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
        )
        mac = hmac.new(self.secret, message.encode(), hashlib.sha256).hexdigest()
        return f"{SEAL_PREFIX}:{self.key_id}:{mac}"

    def signed(self, purpose: str, payload: Any, found: Any) -> bool:
        """Whether `found` is this key's seal over `payload` for `purpose`."""
        if not isinstance(found, str) or not found.isascii():
            return False
        try:
            expected = self.sign(purpose, payload)
        except (TypeError, ValueError):  # a value JSON cannot carry: never what was sealed
            return False
        return hmac.compare_digest(found, expected)

    def seal(self, case_id: str, request: str, entry: Mapping[str, Any]) -> str:
        return f"{SEAL_PREFIX}:{self.key_id}:{self._mac(case_id, request, entry)}"

    def state(self, case_id: str, request: str, entry: Mapping[str, Any]) -> SealState:
        """Whether `entry`, stored under `request` in case `case_id`'s file, is sealed."""
        found = entry.get(SEAL_FIELD)
        if not isinstance(found, str) or not found:
            return "unsealed"
        parts = found.split(":")
        if len(parts) != 3 or parts[0] != SEAL_PREFIX:
            return "broken"
        if parts[1] != self.key_id:
            return "other key"
        if not _MAC.fullmatch(parts[2]):
            return "broken"  # compare_digest takes ASCII only: checked here, never raised
        try:
            expected = self._mac(case_id, request, entry)
        except (TypeError, ValueError):  # a value JSON cannot carry: not what was sealed
            return "broken"
        return "sealed" if hmac.compare_digest(parts[2], expected) else "broken"


def key_from(value: str, variable: str = KEY_ENV) -> RecordingKey:
    text = value.strip()
    if len(text) < MIN_KEY_CHARS:
        raise ConfigError(
            f"{variable} holds fewer than {MIN_KEY_CHARS} characters (the value is not shown): "
            "the recording key must be a random secret; make one with `python3 -c 'import "
            "secrets; print(secrets.token_urlsafe(32))'` and store it as a repository secret"
        )
    return RecordingKey(text.encode(), variable)


_held: RecordingKey | None = None


def hold_from_environment(environ: MutableMapping[str, str] | None = None) -> None:
    """Take the key out of the environment (so no process started later inherits it) and
    hold it for this process's recordings and seal checks. Masked in everything written."""
    global _held
    from gate.secrets import hide_from_proc, remember

    # Blanked where /proc/PID/environ shows it first: a process of the same user (the
    # suite's code, in a run on a runner with no sandbox) reads the starting environment
    # there, and once popped from os.environ the entry can no longer be found to blank.
    hide_from_proc([KEY_ENV])
    source = os.environ if environ is None else environ
    value = source.pop(KEY_ENV, "")
    os.environ.pop(KEY_ENV, None)
    if not value.strip():
        _held = None
        return
    remember(value.strip(), announce=False)
    _held = key_from(value)


def held() -> RecordingKey | None:
    """The key this process holds (None: it seals nothing and can check no seal)."""
    return _held


def captured_by(environ: Mapping[str, str] | None = None) -> str:
    """`ci` on a CI runner (GitHub Actions and the runners that set CI=true), else `local`."""
    source = os.environ if environ is None else environ
    if source.get("GITHUB_ACTIONS") == "true" or source.get("CI", "").lower() in ("true", "1"):
        return "ci"
    return "local"


def provenance() -> dict[str, str]:
    """The fields every new recording carries beside its `captured_at`."""
    return {"captured_by": captured_by(), "casegate_version": __version__}


def sealed_entry(case_id: str, request: str, entry: dict[str, Any]) -> dict[str, Any]:
    """`entry` with a seal when this process holds the key (unchanged otherwise). An entry
    JSON cannot carry exactly (a NaN, a lone surrogate) is left unsealed."""
    entry.pop(SEAL_FIELD, None)
    if _held is None:
        return entry
    try:
        return {**entry, SEAL_FIELD: _held.seal(case_id, request, entry)}
    except (TypeError, ValueError):
        return entry
