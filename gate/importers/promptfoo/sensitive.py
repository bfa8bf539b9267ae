"""What the importer never copies: secrets (by the name of their key) and endpoints.

A value under a key that names a secret (`apiKey`, `X-API-Token`, `client_secret`,
`tls.passphrase`, a `Cookie` header…) is replaced by `***` as each document is read, so
nothing downstream can quote it; the values are remembered too, so that a YAML alias or a
copy elsewhere is masked in whatever is written or printed. Only the key's name is reported.

An endpoint (`apiBaseUrl`, `apiHost`, `baseUrl`, a proxy, a `url`, `apiKeyEnvar`…) decides
where a request and its key would go: it is never copied as a setting, only shown commented
out, and counts as not mapped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from gate.yamlfile import printable

MASK = "***"
#: A value at least this long is also masked where it turns up under another key (an alias,
#: a copy); a shorter one would mask ordinary words.
MIN_MASKED = 8

_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SECRET_WORDS = frozenset(
    {
        "key",
        "keys",
        "apikey",
        "token",
        "secret",
        "secrets",
        "password",
        "passwords",
        "passwd",
        "pwd",
        "passphrase",
        "cookie",
        "cookies",
        "auth",
        "oauth",
        "authorization",
        "authorisation",
        "authentication",
        "credential",
        "credentials",
        "creds",
        "bearer",
    }
)
#: a word written as one (`apitoken`, `clientsecret`, `setcookie`)
_SECRET_ENDINGS = (
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "token",
    "secret",
    "password",
    "passphrase",
    "cookie",
    "credentials",
)
#: the last word of a key that names the variable a key is read from (`apiKeyEnvar`)
_VARIABLE_WORDS = frozenset({"env", "envar", "envvar", "var", "variable"})
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ENDPOINT_WORDS = frozenset(
    {"url", "urls", "uri", "host", "hosts", "hostname", "endpoint", "endpoints", "proxy"}
)
_ENDPOINT_ENDINGS = ("url", "uri", "endpoint", "proxy", "apihost")
_NOT_ENDPOINTS = frozenset({"no_proxy", "noproxy"})  # hosts that are *not* proxied
_URL = re.compile(r"(?i)(?:https?|wss?)://")
#: JSON Schema keywords whose children are named by the schema's author, not settings
_SCHEMA_NAMES = frozenset({"properties", "patternProperties", "$defs", "definitions"})
#: inside a schema, the keywords that hold example values rather than more schema
_SCHEMA_VALUES = frozenset({"default", "const", "enum", "examples", "example"})


def words(key: str) -> list[str]:
    """`apiKeyEnvar` → api, key, envar; `X-API-Token` → x, api, token."""
    return [word.lower() for word in _WORD.findall(key)]


def names_secret(key: object) -> bool:
    """Whether a key's name says its value may be a secret (case-insensitive, by words)."""
    return any(word in _SECRET_WORDS or word.endswith(_SECRET_ENDINGS) for word in words(str(key)))


def names_variable(key: object, value: object) -> bool:
    """A secret-named key holding the *name* of the variable the secret is read from."""
    parts = words(str(key))
    return (
        len(parts) > 1
        and parts[-1] in _VARIABLE_WORDS
        and names_secret(key)
        and isinstance(value, str)
        and _VARIABLE_NAME.fullmatch(value) is not None
    )


def names_endpoint(key: object, value: object = None) -> bool:
    """A key (or a value) naming a host or URL a request would go to, or its key variable."""
    text = str(key)
    if text.lower() in _NOT_ENDPOINTS:
        return False
    if names_variable(key, value):
        return True
    if any(word in _ENDPOINT_WORDS or word.endswith(_ENDPOINT_ENDINGS) for word in words(text)):
        return True
    return isinstance(value, str) and _URL.match(value.strip()) is not None


_QUERY = re.compile(r"([?&;])([^=&#;\s]*)=([^&#;\s]*)")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s]*@")


def shown_endpoint(value: Any, limit: int = 200) -> str:
    """An endpoint as one line: no credentials in its URL, no secret-named query value."""
    try:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    text = _USERINFO.sub(r"\1", text)
    text = _QUERY.sub(
        lambda m: f"{m[1]}{m[2]}={MASK if names_secret(m[2]) else m[3]}",
        text,
    )
    text = printable(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def host_of(key: str, value: Any) -> str | None:
    """The host an endpoint names (`apiHost: h`, or a URL's); None when it names none."""
    if not isinstance(value, str) or "{" in value:
        return None  # a template (`{{ env.PROXY }}`): not a host anyone can check
    text = value.strip()
    if "host" in words(key) and "://" not in text:
        text = f"//{text}"
    try:
        host = urlsplit(text).hostname
    except ValueError:
        return None
    return host or None


_SCHEMA_KEYWORDS = frozenset(
    {"type", "$ref", "enum", "const", "properties", "items", "anyOf", "oneOf", "allOf"}
)


def _is_schema(value: Any) -> bool:
    return isinstance(value, dict) and not _SCHEMA_KEYWORDS.isdisjoint(value)


@dataclass(frozen=True)
class Endpoint:
    """One endpoint that was not copied: where it was, and what it said (made safe)."""

    path: str  # as promptfoo spells it: `apiBaseUrl`, `tls.url`, `env.OPENAI_BASE_URL`
    shown: str
    setting: str | None = None  # casegate's equivalent (`base_url`, `api_key_env`), if any
    host: str | None = None


class Scrubber:
    """Drops secret values from each document read, remembering what and where."""

    def __init__(self) -> None:
        self.dropped: list[tuple[str, str]] = []  # (file, path.to.key), never a value
        self.values: set[str] = set()
        self._masks: re.Pattern[str] | None = None

    def scrub(self, document: Any, origin: str) -> Any:
        """`document` with every secret value replaced by MASK (in place, lines kept)."""
        self._walk(document, [], origin, guarded=False)
        if self.values:
            longest = sorted((v for v in self.values if len(v) >= MIN_MASKED), key=len)[::-1]
            self._masks = re.compile("|".join(map(re.escape, longest))) if longest else None
            self._mask_copies(document)
        return document

    def _walk(self, node: Any, path: list[str], origin: str, *, guarded: bool) -> None:
        """`guarded`: inside the JSON schema of a field whose name names a secret, where
        an example value (`default`, `enum`…) is dropped like the field's value would be."""
        if isinstance(node, list):
            for index, item in enumerate(node):
                self._walk(item, [*path, f"[{index}]"], origin, guarded=guarded)
            return
        if not isinstance(node, dict):
            return
        for key, value in list(node.items()):
            where = [*path, printable(str(key))[:80]]
            if path and path[-1] in _SCHEMA_NAMES and _is_schema(value):
                # A schema's field named `password` is a schema, not a password.
                self._walk(value, where, origin, guarded=guarded or names_secret(key))
            elif (guarded and str(key) in _SCHEMA_VALUES) or (
                names_secret(key) and not names_variable(key, value)
            ):
                self._drop(node, key, value, where, origin)
            else:
                self._walk(value, where, origin, guarded=guarded)

    def _drop(
        self, node: dict[Any, Any], key: Any, value: Any, where: list[str], origin: str
    ) -> None:
        if value is None or value == MASK:
            return
        self._remember(value)
        node[key] = MASK
        self.dropped.append((origin, ".".join(where).replace(".[", "[")))

    def _remember(self, value: Any) -> None:
        if isinstance(value, str):
            if value.strip():
                self.values.add(value)
        elif isinstance(value, dict):
            for item in value.values():
                self._remember(item)
        elif isinstance(value, list):
            for item in value:
                self._remember(item)

    def _mask_copies(self, node: Any) -> None:
        items = (
            node.items()
            if isinstance(node, dict)
            else enumerate(node)
            if isinstance(node, list)
            else ()
        )
        for key, value in list(items):
            if isinstance(value, str):
                masked = self.mask_text(value)
                if masked != value:
                    node[key] = masked
            else:
                self._mask_copies(value)

    def mask_text(self, text: str) -> str:
        """`text` with every remembered secret value masked (a whole value of any length)."""
        if text in self.values:
            return MASK
        return self._masks.sub(MASK, text) if self._masks is not None else text

    def mask(self, data: Any) -> Any:
        """A copy of `data` with every remembered secret value masked in its strings."""
        if isinstance(data, str):
            return self.mask_text(data)
        if isinstance(data, Mapping):
            return {key: self.mask(value) for key, value in data.items()}
        if isinstance(data, list | tuple):
            return [self.mask(item) for item in data]
        return data
