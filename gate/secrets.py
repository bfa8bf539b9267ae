"""API keys: read from the environment only, and kept out of every artefact.

Every key read here is remembered so `redact` can scrub it from error text a
server might echo back (an auth failure that quotes the key, say) before that
text reaches a result, a recording, a log or a report.
"""

from __future__ import annotations

import os
import sys
import threading

from gate.errors import ConfigError

_known: set[str] = set()
_lock = threading.Lock()
MASK = "***"


def read_key(variable: str, what: str) -> str:
    """The key in `variable`, or a ConfigError naming it, before any work starts."""
    value = os.environ.get(variable, "").strip()
    if not value:
        raise ConfigError(
            f"{what}: the API key variable {variable} is not set; export it "
            f"(or point api_key_env at the variable that holds the key)"
        )
    remember(value)
    return value


def remember(secret: str) -> None:
    with _lock:
        first_time = secret not in _known
        _known.add(secret)
    if first_time and os.environ.get("GITHUB_ACTIONS") == "true":
        # GitHub masks the value in every later line of the job log.
        print(f"::add-mask::{secret}", file=sys.stdout, flush=True)


def redact(text: str) -> str:
    with _lock:
        secrets = sorted(_known, key=len, reverse=True)
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text
