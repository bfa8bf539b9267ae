"""Sealed files: a JSON document encrypted and authenticated with the slice's key.

AES-256-GCM (the `cryptography` package's AESGCM), a fresh 96-bit nonce per seal,
under a key derived for that purpose from the slice's key. The readable header —
schema, purpose, suite, key id — is the associated data: editing any of it, or any
byte of the ciphertext, makes the file fail to open. So a slice cannot be passed
off as another suite's, nor a recordings file as a slice.

Every failure is one line naming the file (and the key's variable where it matters),
in the order a person would check: is it a sealed file at all, the right kind, the
right suite, the right key, intact.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from pathlib import Path
from typing import Any

from gate.files import parse_json, write_text
from gate.holdout.keys import HoldoutError, HoldoutKey
from gate.yamlfile import printable

SCHEMA = "casegate.sealed/1"
CIPHER = "AES-256-GCM"
NONCE_BYTES = 12
#: what each purpose holds, for messages
PURPOSES = {
    "holdout-cases": "held-out cases",
    "holdout-recordings": "held-out recordings",
    "holdout-verdicts": "held-out verdicts",
}
NOTE = (
    "casegate: encrypted; only a holder of the slice's key can read it "
    "(`casegate holdout status` describes it, `casegate holdout reveal` retires it)"
)
_HEADER = ("schema", "purpose", "suite", "key_id", "cipher", "note")


def _associated(header: dict[str, Any]) -> bytes:
    return json.dumps({k: header[k] for k in _HEADER}, sort_keys=True).encode()


def seal_text(document: Any, key: HoldoutKey, *, purpose: str, suite: str) -> str:
    """The sealed file's text (one JSON object, keys sorted)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    header: dict[str, Any] = {
        "schema": SCHEMA,
        "purpose": purpose,
        "suite": suite,
        "key_id": key.key_id,
        "cipher": CIPHER,
        "note": NOTE,
    }
    plain = json.dumps(document, sort_keys=True, ensure_ascii=False).encode()
    nonce = os.urandom(NONCE_BYTES)
    sealed = AESGCM(key.derive(f"seal {purpose}")).encrypt(nonce, plain, _associated(header))
    header["nonce"] = base64.b64encode(nonce).decode()
    header["ciphertext"] = base64.b64encode(sealed).decode()
    return json.dumps(header, indent=1, sort_keys=True) + "\n"


def unseal_text(text: str | bytes, key: HoldoutKey, *, purpose: str, suite: str, shown: str) -> Any:
    """The document sealed in `text`; a HoldoutError naming `shown` (a path) when it cannot be."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    header = read_header(text, shown, purpose=purpose, suite=suite)
    if header["key_id"] != key.key_id:
        raise HoldoutError(
            f"{shown}: sealed with another key (key id {header['key_id']}), while "
            f"{key.variable} holds key id {key.key_id}: set {key.variable} to the key this "
            "slice was sealed with"
        )
    try:
        nonce = base64.b64decode(header["nonce"], validate=True)
        sealed = base64.b64decode(header["ciphertext"], validate=True)
        plain = AESGCM(key.derive(f"seal {purpose}")).decrypt(nonce, sealed, _associated(header))
        return parse_json(plain)
    except (InvalidTag, ValueError, binascii.Error, TypeError):
        raise HoldoutError(
            f"{shown}: the sealed file was altered after it was sealed (it does not "
            "authenticate with its key): restore it from git (`git checkout -- FILE`)"
        ) from None


def read_header(text: str | bytes, shown: str, *, purpose: str, suite: str) -> dict[str, Any]:
    """The readable part of a sealed file, checked for kind and suite (no key needed)."""
    try:
        header = parse_json(text)
    except ValueError as exc:
        raise HoldoutError(
            f"{shown}: not a casegate sealed file ({exc}); restore it from git"
        ) from None
    if not isinstance(header, dict) or header.get("schema") != SCHEMA:
        found = header.get("schema") if isinstance(header, dict) else type(header).__name__
        raise HoldoutError(
            f"{shown}: not a casegate sealed file (schema {_brief(found)}, expected {SCHEMA!r}); "
            "restore it from git"
        )
    missing = [k for k in (*_HEADER, "nonce", "ciphertext") if not isinstance(header.get(k), str)]
    if missing:
        raise HoldoutError(
            f"{shown}: a sealed file without {', '.join(missing)}; restore it from git"
        )
    if header["purpose"] != purpose:
        kind = PURPOSES.get(header["purpose"], f"something else ({_brief(header['purpose'])})")
        raise HoldoutError(
            f"{shown}: holds {kind}, not {PURPOSES[purpose]}: restore the right file from git"
        )
    if header["suite"] != suite:
        raise HoldoutError(
            f"{shown}: sealed for the suite {_brief(header['suite'])}, not {suite!r}: a slice "
            "belongs to one suite; restore this suite's file from git"
        )
    if header["cipher"] != CIPHER:
        raise HoldoutError(
            f"{shown}: sealed with {_brief(header['cipher'])}, which this casegate does not "
            f"read (it reads {CIPHER})"
        )
    return header


def _brief(value: object) -> str:
    text = printable(repr(value))
    return text if len(text) <= 40 else text[:39] + "…"


def read_sealed(path: Path, key: HoldoutKey, *, purpose: str, suite: str, shown: str) -> Any:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HoldoutError(f"{shown}: cannot read it ({exc.strerror or exc})") from None
    return unseal_text(data, key, purpose=purpose, suite=suite, shown=shown)


def write_sealed(path: Path, document: Any, key: HoldoutKey, *, purpose: str, suite: str) -> None:
    """Seal and write atomically (an OutputError naming the path when it cannot be)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # Base64 and hex only: nothing in it for the secret masking to touch.
    write_text(path, seal_text(document, key, purpose=purpose, suite=suite), mask=False)
