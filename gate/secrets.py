"""API keys: read from the environment only, and kept out of every artefact.

Every key read here is remembered so `redact` can scrub it from error text a
server might echo back (an auth failure that quotes the key, say) before that
text reaches a result, a recording, a log or a report. `redact` also removes
credentials written into URLs (`https://user:token@host/`), which a base URL or
a proxy setting can carry into an error message without anyone reading a key.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from gate.errors import ConfigError
from gate.logsafe import escape_data

_known: set[str] = set()
_lock = threading.Lock()
#: every known secret, longest first; None while there is none
_pattern: re.Pattern[str] | None = None
MASK = "***"

# scheme://userinfo@ — the userinfo runs to the last "@" before the host's path, query or fragment.
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s]+@")


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


def remember(secret: str, *, announce: bool = True) -> None:
    """Scrub `secret` from everything `redact` sees from now on (and mask it in the job log).

    `announce=False` for a value the runner masks already (the job's GitHub token):
    printing it in an `::add-mask::` line would only put it in the log once more.
    """
    global _pattern
    if not secret:
        return  # an empty "secret" would mask between every character
    with _lock:
        first_time = secret not in _known
        _known.add(secret)
        if first_time:
            ordered = sorted(_known, key=len, reverse=True)
            _pattern = re.compile("|".join(re.escape(known) for known in ordered))
    if announce and first_time and os.environ.get("GITHUB_ACTIONS") == "true":
        # GitHub masks the value in every later line of the job log. Escaped as the
        # toolkit does: a raw newline would end the command and print the rest in clear.
        print(f"::add-mask::{escape_data(secret)}", file=sys.stdout, flush=True)


#: the variables casegate's providers read a key from when a config names none
DEFAULT_KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def key_variables(config: Any) -> set[str]:
    """Every variable a config may read a key from: each `api_key_env` it names, anywhere,
    the held-out slice's `key_env`, and the providers' defaults."""
    found = set(DEFAULT_KEY_VARIABLES)
    stack = [config]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("api_key_env", "key_env") and isinstance(value, str):
                    found.add(value)
                else:
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return found


def announce_keys(config: Any, environ: Mapping[str, str]) -> None:
    """Mask every key the config may use before anything else is printed.

    Under Actions a mask counts only when its `::add-mask::` line is read as a
    command: printed later by the supervised run, inside casegate's fenced output
    (`::stop-commands::`), it would be shown, not registered.
    """
    for name in sorted(key_variables(config)):
        value = environ.get(name, "").strip()
        if value:
            remember(value)


#: what may stand between a secret's characters in text a person or a tool wrapped: any
#: whitespace, a soft hyphen, the zero-width characters and the byte-order mark
_GAP = "[\\s\u00ad\u200b-\u200d\u2060\ufeff]*"
#: a secret shorter than this is not looked for spread out: too many false matches
_SPREAD_MIN = 12
#: the shortest start of a secret masked where a text ends in it
_PREFIX_MIN = 8


def redact_spread(text: str) -> str:
    """`redact`, also finding a remembered secret with whitespace or invisible characters
    between its characters (a log line wrapped inside a key, a zero-width space pasted
    into it). For text casegate writes into files a person commits (`casegate add`); the
    gaps hold no secret's character, so the match is linear. A text that ends in the first
    _PREFIX_MIN or more characters of a secret (cut there by a length cap) loses them too."""
    with _lock:
        known = sorted((k for k in _known if len(k) >= _SPREAD_MIN), key=len, reverse=True)
    for secret in known:
        spread = _GAP.join(re.escape(char) for char in secret)
        text = re.sub(spread, MASK, text)
        # A text cut to a length (a reader's cap) may end inside a secret: its start goes too.
        for end in range(len(secret) - 1, _PREFIX_MIN - 1, -1):
            if text.endswith(secret[:end]):
                text = text[:-end] + MASK
                break
    return redact(text)


def forget_all() -> None:
    """Forget every remembered secret (for tests)."""
    global _pattern
    with _lock:
        _known.clear()
        _pattern = None


def redact(text: str) -> str:
    """`text` without any remembered secret, nor the credentials of any URL in it."""
    pattern = _pattern  # one read: a concurrent remember() swaps in a whole new pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    if "@" in text:
        text = _URL_CREDENTIALS.sub(rf"\1{MASK}@", text)
    return text


def hide_from_proc(names: Iterable[str]) -> list[str]:
    """Blank these variables' values where /proc/PID/environ reads them; returns those found.

    The kernel shows a process's starting environment block, not `os.environ`: removing
    a variable from Python (or unsetenv) leaves it readable there to any process of the
    same user, such as the suite's code in the supervised run. The values stay in
    `os.environ`, which this process reads and never hands to the run. Linux only.
    """
    try:
        import ctypes

        stat = Path("/proc/self/stat").read_bytes()
        fields = stat[stat.rindex(b")") + 2 :].split()
        start, end = int(fields[47]), int(fields[48])  # env_start, env_end (stat fields 50, 51)
        block = ctypes.POINTER(ctypes.c_void_p).in_dll(ctypes.CDLL(None), "environ")
    except (OSError, ValueError, IndexError, AttributeError):
        return []
    prefixes = [name.encode() + b"=" for name in names]
    hidden = []
    index = 0
    while (address := block[index]) is not None:
        index += 1
        if not start <= address < end:
            continue  # set after start: not in the block /proc shows
        entry = ctypes.string_at(address)
        for prefix in prefixes:
            if entry.startswith(prefix):
                ctypes.memset(address + len(prefix), 0, len(entry) - len(prefix))
                hidden.append(prefix[:-1].decode())
    return hidden
