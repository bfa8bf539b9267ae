"""`--set key.path=value`: one run's overrides of the config, and whom a problem is blamed on.

A problem with a key that came from `--set` is the command line's, not a line of the file:
the config's loader (gate.suite.config) asks here which `--set` to name.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import yaml

from gate.errors import ConfigError


def parse_override(text: str) -> tuple[list[str], Any]:
    """`system.params.temperature=0.2` → (["system", "params", "temperature"], 0.2)."""
    key, sep, raw_value = text.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise ConfigError(f"--set {text!r}: expected key.path=value, e.g. system.model=gpt-4.1")
    try:
        value = yaml.safe_load(raw_value) if raw_value.strip() else ""
    except yaml.YAMLError:
        value = raw_value
    if isinstance(value, dict | list) and raw_value.strip()[:1] not in "{[":
        value = raw_value
    return key.split("."), value


#: top-level keys written as a path or as a mapping with `path`: `--set history.record=all`
#: reaches into the string form as into the mapping
PATH_OR_MAPPING = frozenset({"recordings", "holdout", "history"})


def apply_overrides(data: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    data = copy.deepcopy(data)
    for text in overrides:
        path, value = parse_override(text)
        target = data
        for depth, part in enumerate(path[:-1]):
            if depth == 0 and part in PATH_OR_MAPPING and isinstance(target.get(part), str):
                target[part] = {"path": target[part]}
            child = target.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"--set {text!r}: {part!r} is not a mapping")
            target = child
        target[path[-1]] = value
    return data


def blamed_override(location: Sequence[str], overrides: Sequence[str]) -> str | None:
    """The last `--set` whose key is, or holds, the key at `location`."""
    for text in reversed(overrides):
        key = text.partition("=")[0].strip().split(".")
        if list(location[: len(key)]) == key:
            return text
    return None


def blamed_system_key(problem: str, overrides: Sequence[str]) -> str | None:
    """The `--set system.KEY=…` a provider's problem with `system.KEY` came from, if one did:
    a typo on the command line is not the config's line."""
    for text in reversed(overrides):
        key = text.partition("=")[0].strip()
        if key.startswith("system.") and (f"'{key}'" in problem or problem.startswith(key + " ")):
            return text
    return None
