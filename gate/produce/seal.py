"""Who made a recording, and a seal that proves casegate made it in CI.

Every recorded response carries its provenance: `captured_by` (`ci` on a CI runner,
else `local`), `captured_at` and `casegate_version`. Those are claims: anyone can write
them. A recording made by casegate while it holds the repository's recording key
(`CASEGATE_RECORDING_KEY`, a secret only CI has) also carries a `seal`, an HMAC-SHA256
over the case, the request key and the whole entry. An author cannot make one, and an
edit to any field of a sealed entry, or the entry moved to another request, breaks it.

The key is read once, in the process that gates (`hold_from_environment`), taken out of
its environment, and never given to a supervised run: a run records unsealed, and the
gate seals afterwards what that run answered (`seal_answers`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from gate import __version__
from gate.errors import ConfigError

if TYPE_CHECKING:
    from gate.outputs import ToolCall

KEY_ENV = "CASEGATE_RECORDING_KEY"
#: a shorter value is refused: it would be a password, not a key
MIN_KEY_CHARS = 32
SEAL_PREFIX = "hmac-sha256"
#: the fields of an entry a seal covers: all of them, but the seal itself
SEAL_FIELD = "seal"
_DOMAIN = "casegate.recording/1"

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
    from gate.secrets import remember

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
    """`entry` with a seal when this process holds the key (unchanged otherwise)."""
    if _held is None:
        return entry
    entry.pop(SEAL_FIELD, None)
    return {**entry, SEAL_FIELD: _held.seal(case_id, request, entry)}


def seal_answers(
    store: Any, answered: Iterable[tuple[str, str, str | None, list[ToolCall]]]
) -> tuple[int, int]:
    """Seal, in `store`, what a supervised run recorded and the gate then judged: each
    (case id, request key, text, tool calls) of the run's results whose stored entry
    holds that same answer. Returns (sealed, left unsealed); nothing without the key."""
    if _held is None:
        return 0, 0
    by_case: dict[str, list[tuple[str, str | None, list[ToolCall]]]] = {}
    for case_id, request, text, tool_calls in answered:
        by_case.setdefault(case_id, []).append((request, text, tool_calls))
    done = left = 0
    with store.exclusive() as work:
        for case_id, items in sorted(by_case.items()):
            try:
                document = store.read_file(store.path_for(case_id))
            except FileNotFoundError:
                left += len(items)
                continue
            responses = document["responses"]
            changed = False
            for request, text, tool_calls in items:
                entry = responses.get(request)
                # Only what the gate judged: an entry holding another answer than the one
                # the run reported is not sealed, whoever wrote it.
                if not isinstance(entry, dict) or not _holds(entry, text, tool_calls):
                    left += 1
                    continue
                responses[request] = sealed_entry(case_id, request, dict(entry))
                changed = True
                done += 1
            if changed:
                store.write_file(store.path_for(case_id), document, work)
    return done, left


def _holds(entry: Mapping[str, Any], text: str | None, tool_calls: list[ToolCall]) -> bool:
    from pydantic import ValidationError

    from gate.outputs import Output

    try:
        output = Output.model_validate(entry.get("output"))
    except ValidationError:
        return False
    return output.text == text and output.tool_calls == tool_calls
