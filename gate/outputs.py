"""The provider-neutral output of one call to the system under test."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ToolCall(BaseModel):
    """A tool the model asked to call; casegate never executes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    #: the raw arguments when the model sent something that is not a JSON object
    invalid_arguments: str | None = None


class Context(BaseModel):
    """A passage the system retrieved and answered from (retrieval-augmented systems)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: the document's id, for the retrieval checks (`retrieval_recall`, `mrr`, …)
    id: str | None = None
    text: str = ""


class Output(BaseModel):
    """What a system returned for one sample of one case.

    `latency_ms` and `cost_usd` travel with recordings, so a replayed run
    reports what the recorded call cost and how long it took.
    """

    model_config = ConfigDict(extra="forbid")

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    model: str | None = None
    stop_reason: str | None = None
    system_fingerprint: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    #: the passages the system retrieved, in rank order, recorded with its answer
    contexts: list[Context] = Field(default_factory=list)
    raw: Any = None
