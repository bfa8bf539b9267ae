"""The system under test: one call behind a protocol, one class per provider.

Adding a provider is one new module and one line in PROVIDERS.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from gate.outputs import Output

if TYPE_CHECKING:
    from gate.config import SystemConfig


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

    @classmethod
    def problems(cls, system: SystemConfig) -> list[str]:
        found = []
        for key in cls.requires:
            if getattr(system, key, None) in (None, "", []):
                found.append(f"system.{key} is required for provider {cls.name!r}")
        if not cls.passes_extra_keys:
            for key in sorted(system.model_extra or {}):
                if key not in cls.keys:
                    found.append(f"unknown key 'system.{key}' for provider {cls.name!r}")
        return found

    @classmethod
    def preflight(cls, system: Mapping[str, Any], cases: Sequence[Any]) -> list[str]:
        """Problems with the requests this system would send, found before any call."""
        return []


def _registry() -> dict[str, type[Provider]]:
    # These modules import no SDK at import time; the SDK loads when a client is made.
    from gate.systems.anthropic import AnthropicSystem
    from gate.systems.command import CommandSystem
    from gate.systems.openai import OpenAISystem
    from gate.systems.python import PythonSystem

    return {
        PythonSystem.name: PythonSystem,
        CommandSystem.name: CommandSystem,
        OpenAISystem.name: OpenAISystem,
        AnthropicSystem.name: AnthropicSystem,
    }


PROVIDERS: dict[str, type[Provider]] = _registry()


def config_problems(system: SystemConfig) -> list[str]:
    provider = PROVIDERS.get(system.provider)
    if provider is None:
        return [f"unknown provider {system.provider!r} (known: {', '.join(sorted(PROVIDERS))})"]
    return provider.problems(system)


def preflight(system: Mapping[str, Any], cases: Sequence[Any]) -> list[str]:
    return PROVIDERS[system["provider"]].preflight(system, cases)


def create(system: Mapping[str, Any], root: Path, context: Mapping[str, Any]) -> System:
    """Build the live system for a resolved `system:` mapping."""
    provider = PROVIDERS[system["provider"]]
    return provider(dict(system), root, context)  # type: ignore[call-arg,return-value]
