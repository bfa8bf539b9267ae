"""The system under test: one call behind a protocol, one class per provider.

Adding a provider is one new module and one line in PROVIDERS.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from gate.outputs import Output

if TYPE_CHECKING:
    from gate.suite.config import SystemConfig


class System(Protocol):
    """Turns one case input into one output. Raises SystemCallError on failure."""

    def complete(self, case_id: str, case_input: Mapping[str, Any]) -> Output: ...


class Provider:
    """Base for provider classes: declared capabilities, config validation."""

    name: ClassVar[str]
    #: keys of `system:` this provider understands beyond the common ones
    keys: ClassVar[frozenset[str]] = frozenset()
    #: python and command pass unknown keys through to the user's code
    passes_extra_keys: ClassVar[bool] = False
    requires: ClassVar[tuple[str, ...]] = ()
    #: its answers are a model's draws, never the same twice for sure (gate.deciding.sampling)
    calls_a_model: ClassVar[bool] = False

    @classmethod
    def problems(cls, system: SystemConfig) -> list[str]:
        found = []
        for key in cls.requires:
            if getattr(system, key, None) in (None, "", []):
                found.append(f"system.{key} is required for provider {cls.name!r}")
        if not cls.passes_extra_keys:
            known = sorted(set(type(system).model_fields) | cls.keys)
            for key in sorted(system.model_extra or {}):
                if key not in cls.keys:
                    hints = " or ".join(repr(k) for k in _nearest(key, known))
                    found.append(
                        f"unknown key 'system.{key}' for provider {cls.name!r}"
                        + (f" (did you mean {hints}?)" if hints else "")
                    )
        return found

    @classmethod
    def preflight(cls, system: Mapping[str, Any], cases: Sequence[Any]) -> list[str]:
        """Problems with the requests this system would send, found before any call."""
        return []


def _nearest(key: str, known: Sequence[str]) -> list[str]:
    """The known keys one or two edits from `key` (a swap of two letters is one), the
    nearest first and, among those, the same length first: `modle` names `model` and `mode`."""
    from rapidfuzz.distance import OSA

    near = [(OSA.distance(key, name), abs(len(name) - len(key)), name) for name in known]
    best = min((distance for distance, _, _ in near), default=3)
    return [name for distance, _, name in sorted(near) if distance == best <= 2]


#: provider name → "module:Class". A module is imported when its provider is named, so
#: a run imports the one adapter its config uses (and, through it, no SDK until a
#: client is made) instead of all of them.
PROVIDERS: dict[str, str] = {
    "python": "gate.systems.python:PythonSystem",
    "command": "gate.systems.command:CommandSystem",
    "openai": "gate.systems.openai:OpenAISystem",
    "anthropic": "gate.systems.anthropic:AnthropicSystem",
}


#: the providers with a batch API (`system.mode: batch`, gate.produce.batch)
BATCHES = frozenset({"openai", "anthropic"})


def provider_class(name: str) -> type[Provider]:
    """The class for a provider name in PROVIDERS (KeyError for any other)."""
    module, _, attribute = PROVIDERS[name].partition(":")
    provider: type[Provider] = getattr(importlib.import_module(module), attribute)
    return provider


def config_problems(system: SystemConfig) -> list[str]:
    if system.provider not in PROVIDERS:
        return [f"unknown provider {system.provider!r} (known: {', '.join(sorted(PROVIDERS))})"]
    problems = provider_class(system.provider).problems(system)
    # python and command pass unknown keys to the user's code, but `mode: batch` is
    # casegate's: refused here, before a run, not when the first batch would be sent.
    if (system.model_extra or {}).get("mode") == "batch" and system.provider not in BATCHES:
        problems.append(
            f"system.mode: batch works with providers {' and '.join(sorted(BATCHES))} (their "
            f"batch APIs), not {system.provider!r}: remove `mode: batch`"
        )
    return problems


def preflight(system: Mapping[str, Any], cases: Sequence[Any]) -> list[str]:
    return provider_class(system["provider"]).preflight(system, cases)


def create(system: Mapping[str, Any], root: Path, context: Mapping[str, Any]) -> System:
    """Build the live system for a resolved `system:` mapping."""
    provider = provider_class(system["provider"])
    return provider(dict(system), root, context)  # type: ignore[call-arg,return-value]
