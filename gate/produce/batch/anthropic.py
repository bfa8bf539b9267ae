"""The Anthropic Message Batches API through the `anthropic` SDK.

`messages.batches.create` takes `requests: [{custom_id, params}]`, params being a
Messages request; `messages.batches.retrieve` polls until `processing_status` is
`ended`; `messages.batches.results` streams the JSONL at `results_url`, one line
`{custom_id, result: {type: succeeded|errored|canceled|expired, …}}` per request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from gate.outputs import Output
from gate.produce.batch import lines
from gate.produce.batch.api import Line, ProviderBatches, Status
from gate.systems.anthropic import AnthropicSystem, parse_message

STOPPED = {
    "canceled": "the batch was canceled before this request ran",
    "expired": "the batch expired (24 h) before this request ran",
}


class AnthropicBatches(ProviderBatches):
    provider: ClassVar[str] = "anthropic"
    limit: ClassVar[int] = 100_000

    def __init__(self, system: AnthropicSystem) -> None:
        super().__init__(system)
        self.system: AnthropicSystem = system

    def submit(self, requests: Sequence[tuple[str, dict[str, Any]]]) -> str:
        batch = self._call(
            lambda: self.client.messages.batches.create(
                requests=[{"custom_id": cid, "params": params} for cid, params in requests]
            )
        )
        return str(batch.id)

    def status(self, batch_id: str) -> Status:
        # Read inside `_call` too: a body lacking what the API promises is a malformed
        # answer (polled again), not a crash.
        return self._call(lambda: self._status(batch_id))

    def _status(self, batch_id: str) -> Status:
        batch = self.client.messages.batches.retrieve(batch_id)
        counts = batch.request_counts
        failed = sum(
            int(getattr(counts, name, 0) or 0) for name in ("errored", "canceled", "expired")
        )
        succeeded = int(getattr(counts, "succeeded", 0) or 0)
        return Status(
            ended=batch.processing_status == "ended",
            state=str(batch.processing_status),
            finished=succeeded + failed,
            failed=failed,
        )

    def results(self, batch_id: str, status: Status) -> list[Line]:
        def fetch() -> bytes:
            stream = self.client.messages.batches.results(batch_id)
            try:
                # Read whole and split here: one unreadable line must not hide the rest,
                # as it would end the SDK's own line iterator.
                return bytes(stream.http_response.read())
            finally:
                stream.close()

        text = self._call(fetch).decode("utf-8", errors="replace")
        return lines.split(text, self._line)

    def _line(self, item: dict[str, Any]) -> Line:
        cid = item["custom_id"]
        result = item.get("result")
        kind = result.get("type") if isinstance(result, dict) else None
        if kind == "succeeded":
            assert isinstance(result, dict)
            message = result.get("message")
            if not isinstance(message, dict):
                return lines.failed(cid, "a succeeded result line holds no message")
            return lines.parsed(cid, lambda: self._parse(message))
        if kind == "errored":
            assert isinstance(result, dict)
            envelope = result.get("error")
            error = envelope.get("error", envelope) if isinstance(envelope, dict) else envelope
            if isinstance(error, dict):
                said = f"{error.get('type', 'error')}: {error.get('message', '')}"
            else:
                said = str(error)
            return lines.failed(cid, f"the Anthropic Message Batches API: request errored: {said}")
        if isinstance(kind, str) and kind in STOPPED:
            return lines.failed(cid, STOPPED[kind])
        return lines.failed(cid, f"a result line of unknown type {kind!r}")

    def _parse(self, message: dict[str, Any]) -> Output:
        from anthropic.types import Message

        return parse_message(Message.construct(**message))
