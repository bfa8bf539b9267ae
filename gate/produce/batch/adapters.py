"""Which batch adapter a live system gets (one module per provider's batch API)."""

from __future__ import annotations

from typing import Any

from gate.errors import ConfigError
from gate.produce.batch.anthropic import AnthropicBatches
from gate.produce.batch.api import BatchAPI
from gate.produce.batch.openai import OpenAIBatches
from gate.systems import BATCHES
from gate.systems.anthropic import AnthropicSystem
from gate.systems.openai import OpenAISystem


def for_system(system: Any, where: str) -> BatchAPI:
    """The batch adapter for a live system; ConfigError when its provider has none."""
    if isinstance(system, OpenAISystem):
        return OpenAIBatches(system)
    if isinstance(system, AnthropicSystem):
        return AnthropicBatches(system)
    raise ConfigError(
        f"{where}: system.mode: batch works with providers "
        f"{' and '.join(sorted(BATCHES))} (their batch APIs), not "
        f"{getattr(system, 'name', None)!r}: remove `mode: batch`"
    )
