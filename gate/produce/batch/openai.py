"""The OpenAI Batch API through the `openai` SDK.

The requests go up as one JSONL file (purpose `batch`), one line each:
`{custom_id, method: POST, url: ENDPOINT, body}`; `batches.create` starts the batch
with a 24 h completion window; `batches.retrieve` polls it; once it ends, its
output file (answers) and error file (requests that failed) are JSONL lines of
`{custom_id, response: {status_code, body}, error}`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar

from gate.outputs import Output
from gate.produce.batch import lines
from gate.produce.batch.api import Line, ProviderBatches, Status, short
from gate.systems.openai import OpenAISystem, parse_chat_completion, parse_response

#: statuses after which a batch changes no more
ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
#: error codes in the error file that say the batch, not the request, stopped it
STOPPED = {
    "batch_expired": "the batch expired (24 h) before this request ran",
    "batch_cancelled": "the batch was cancelled before this request ran",
}


class OpenAIBatches(ProviderBatches):
    provider: ClassVar[str] = "openai"
    limit: ClassVar[int] = 50_000

    def __init__(self, system: OpenAISystem) -> None:
        super().__init__(system)
        self.system: OpenAISystem = system
        self.endpoint = "/v1/responses" if system.api == "responses" else "/v1/chat/completions"

    def submit(self, requests: Sequence[tuple[str, dict[str, Any]]]) -> str:
        text = "".join(
            json.dumps(
                {"custom_id": cid, "method": "POST", "url": self.endpoint, "body": body},
                ensure_ascii=False,
            )
            + "\n"
            for cid, body in requests
        )
        upload = self._call(
            lambda: self.client.files.create(
                file=("casegate-batch.jsonl", text.encode("utf-8"), "application/jsonl"),
                purpose="batch",
            )
        )
        batch = self._call(
            lambda: self.client.batches.create(
                input_file_id=upload.id, endpoint=self.endpoint, completion_window="24h"
            )
        )
        return str(batch.id)

    def status(self, batch_id: str) -> Status:
        # Read inside `_call` too: a body lacking what the API promises is a malformed
        # answer (polled again), not a crash.
        return self._call(lambda: self._status(batch_id))

    def _status(self, batch_id: str) -> Status:
        batch = self.client.batches.retrieve(batch_id)
        counts = batch.request_counts
        completed = int(getattr(counts, "completed", 0) or 0)
        failed = int(getattr(counts, "failed", 0) or 0)
        problem = None
        if batch.status == "failed":
            errors = getattr(getattr(batch, "errors", None), "data", None) or []
            said = "; ".join(short(str(getattr(e, "message", e)), 120) for e in errors[:3])
            problem = "the OpenAI Batch API refused the batch" + (f": {said}" if said else "")
        return Status(
            ended=batch.status in ENDED,
            state=str(batch.status),
            finished=completed + failed,
            failed=failed,
            problem=problem,
        )

    def results(self, batch_id: str, status: Status) -> list[Line]:
        texts = self._call(lambda: self._texts(batch_id))
        return [line for text in texts for line in lines.split(text, self._line)]

    def _texts(self, batch_id: str) -> list[str]:
        """The output file's text and the error file's (answers, and requests that failed)."""
        batch = self.client.batches.retrieve(batch_id)
        return [
            str(self.client.files.content(file_id).text)
            for file_id in (batch.output_file_id, batch.error_file_id)
            if file_id
        ]

    def _line(self, item: dict[str, Any]) -> Line:
        cid = item["custom_id"]
        error = item.get("error")
        if error:
            code = error.get("code") if isinstance(error, dict) else None
            if code in STOPPED:
                return lines.failed(cid, STOPPED[code])
            message = error.get("message") if isinstance(error, dict) else error
            return lines.failed(cid, f"the OpenAI Batch API: {code or 'error'}: {message}")
        response = item.get("response")
        if not isinstance(response, dict):
            return lines.failed(cid, "the result line holds no response")
        body = response.get("body")
        if response.get("status_code") != 200 or not isinstance(body, dict):
            said = body.get("error") if isinstance(body, dict) else None
            message = said.get("message") if isinstance(said, dict) else said
            return lines.failed(
                cid,
                f"openai API answered HTTP {response.get('status_code')} in the batch: "
                f"{message or 'no message'}",
            )
        return lines.parsed(cid, lambda: self._parse(body))

    def _parse(self, body: dict[str, Any]) -> Output:
        # The SDK's own lenient construction, as it builds a response it receives.
        if self.system.api == "responses":
            from openai.types.responses import Response

            return parse_response(Response.construct(**body))
        from openai.types.chat import ChatCompletion

        return parse_chat_completion(ChatCompletion.construct(**body))
