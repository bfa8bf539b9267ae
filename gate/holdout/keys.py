"""The slice's key: 32 random bytes, kept in an environment variable, never in a file.

Its text form carries a version prefix so a wrong value (another secret, a truncated
paste) is refused by shape before any decryption is tried. Messages name the
variable, never its value. A key is known by its id, a fingerprint derived from it
that says which key sealed a file without telling anything about the key.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field

from gate.errors import ConfigError
from gate.secrets import remember

#: the variable the key is read from unless `holdout.key_env` names another
DEFAULT_KEY_ENV = "CASEGATE_HOLDOUT_KEY"
PREFIX = "casegate-holdout-1:"
KEY_BYTES = 32
_SHAPE = re.compile(rf"{re.escape(PREFIX)}[A-Za-z0-9_-]{{43}}")


class HoldoutError(ConfigError):
    """The slice or its key cannot be used: exit 2, one line naming the file or variable."""


@dataclass(frozen=True, slots=True)
class HoldoutKey:
    """A key and the variable it came from (for messages)."""

    secret: bytes = field(repr=False)
    variable: str = DEFAULT_KEY_ENV

    def derive(self, purpose: str, length: int = KEY_BYTES) -> bytes:
        """A key of its own for each use, so no two uses share one (HKDF-SHA256)."""
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF

        info = f"casegate.holdout/1 {purpose}".encode()
        return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=info).derive(
            self.secret
        )

    @property
    def key_id(self) -> str:
        """16 hex digits that name the key in sealed files and messages."""
        return self.derive("key id", 8).hex()

    def text(self) -> str:
        return PREFIX + base64.urlsafe_b64encode(self.secret).decode().rstrip("=")


def generate(variable: str = DEFAULT_KEY_ENV) -> HoldoutKey:
    return HoldoutKey(secrets.token_bytes(KEY_BYTES), variable)


def parse(text: str, variable: str = DEFAULT_KEY_ENV) -> HoldoutKey:
    """The key a variable holds; a HoldoutError that never quotes the value."""
    value = text.strip()
    if not _SHAPE.fullmatch(value):
        raise HoldoutError(
            f"{variable} does not hold a casegate hold-out key (the value is not shown): it "
            f"should be {PREFIX!r} and 43 letters, digits, '-' or '_', as `casegate holdout "
            "init` printed it; copy the whole line into the secret again"
        )
    try:
        secret = base64.urlsafe_b64decode(value.removeprefix(PREFIX) + "=")
    except (binascii.Error, ValueError):  # pragma: no cover - the shape rules it out
        raise HoldoutError(f"{variable} does not hold a casegate hold-out key") from None
    if len(secret) != KEY_BYTES:  # pragma: no cover - 43 base64 characters are 32 bytes
        raise HoldoutError(f"{variable} does not hold a casegate hold-out key")
    return HoldoutKey(secret, variable)


def from_environment(
    variable: str = DEFAULT_KEY_ENV, environ: Mapping[str, str] | None = None
) -> HoldoutKey | None:
    """The key in `variable`, None when it is unset or empty (a fork's pull request).

    A value is remembered as a secret at once, so it is masked in everything casegate
    writes; it is not announced with `::add-mask::` (an Actions secret is masked by
    the runner already, and the announcement would print it).
    """
    value = (os.environ if environ is None else environ).get(variable, "").strip()
    if not value:
        return None
    remember(value, announce=False)
    return parse(value, variable)


def require(
    variable: str = DEFAULT_KEY_ENV, environ: Mapping[str, str] | None = None
) -> HoldoutKey:
    """The key, or a HoldoutError saying how to provide it (for `casegate holdout …`)."""
    key = from_environment(variable, environ)
    if key is None:
        raise HoldoutError(
            f"{variable} is not set: the held-out slice is sealed with the key it holds; "
            f"export {variable} (the value `casegate holdout init` printed), or run "
            "`casegate holdout init` to make a key for a new slice"
        )
    return key


def missing_note(variable: str) -> str:
    """Why a run skipped the slice when the key is not there."""
    return (
        f"{variable} is not set (a fork's pull request has no secrets; elsewhere, pass the "
        f"secret to the step: env: {variable}: ${{{{ secrets.{variable} }}}})"
    )
