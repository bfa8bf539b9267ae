"""Loopback servers speaking the OpenAI Batch API and the Anthropic Message Batches API.

The real SDKs are pointed at them with `base_url`, so the uploads, polls and result
downloads are the SDKs' own. Each answers as its documentation says:

OpenAI: `POST /v1/files` (multipart, purpose `batch`, a JSONL of
`{custom_id, method, url, body}`), `POST /v1/batches` (`input_file_id`, `endpoint`,
`completion_window: 24h`), `GET /v1/batches/{id}` (validating → in_progress →
completed, with `output_file_id` and `error_file_id`), `GET /v1/files/{id}/content`
(JSONL of `{id, custom_id, response: {status_code, request_id, body}, error}`).

Anthropic: `POST /v1/messages/batches` (`requests: [{custom_id, params}]`),
`GET /v1/messages/batches/{id}` (`processing_status` in_progress → ended, then a
`results_url`), and that URL (JSONL of `{custom_id, result: {type, …}}`).

A batch ends after `polls_to_end` polls. Each request's fate is scripted by a text
its last user turn contains (`fate("down", "errored")`): ok, errored, expired,
canceled, missing (no line at all) or garbled (a succeeded line whose body is not a
response). `extra_lines` are appended to the results verbatim: lines for ids never
submitted, duplicates, lines that are not JSON.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import re
import time
from collections.abc import Callable
from typing import Any

from tests.fakes.llm_server import (
    ROUTES,
    Received,
    Reply,
    echo,
    last_user_text,
)
from tests.fakes.loopback import LoopbackServer, QuietHandler

ANTHROPIC_CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
FATES = ("ok", "errored", "expired", "canceled", "missing", "garbled")


class BatchServer(LoopbackServer):
    def __init__(self, reply: Callable[[Received], Reply] = echo, *, polls_to_end: int = 2) -> None:
        self.reply = reply
        self.polls_to_end = polls_to_end
        self.fates: dict[str, str] = {}
        self.extra_lines: list[str] = []
        #: every create call received (one per batch a client paid for)
        self.creates: list[dict[str, Any]] = []
        self.polls = 0
        self.requests: list[tuple[str, str, dict[str, Any]]] = []  # (method, path, headers)
        self.batches: dict[str, dict[str, Any]] = {}
        super().__init__()

    def fate(self, when_text_contains: str, fate: str) -> None:
        assert fate in FATES
        self.fates[when_text_contains] = fate

    def fate_of(self, text: str) -> str:
        for needle, fate in self.fates.items():
            if needle in text:
                return fate
        return "ok"

    def handler(self) -> type[QuietHandler]:
        server = self

        class Handler(QuietHandler):
            def _record(self) -> None:
                with server._lock:
                    server.requests.append((self.command, self.path, dict(self.headers)))

            def do_GET(self) -> None:
                self._record()
                status, data = server.get(self.path.split("?")[0])
                self.send_body(status, data)

            def do_POST(self) -> None:
                self._record()
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                status, data = server.post(
                    self.path.split("?")[0], raw, self.headers.get("content-type", "")
                )
                self.send_body(status, data)

        return Handler

    def get(self, path: str) -> tuple[int, bytes]:
        raise NotImplementedError

    def post(self, path: str, raw: bytes, content_type: str) -> tuple[int, bytes]:
        raise NotImplementedError

    def answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """What the synchronous API would have answered (tests/fakes/llm_server.py)."""
        route = ROUTES[path.removeprefix("/v1")]
        return route(body, self.reply(Received(path, {}, body, time.monotonic())))


def _json(status: int, document: Any) -> tuple[int, bytes]:
    return status, json.dumps(document).encode()


class FakeOpenAIBatches(BatchServer):
    """The OpenAI Batch API: files, batches, file content."""

    def __init__(self, reply: Callable[[Received], Reply] = echo, **options: Any) -> None:
        self.files: dict[str, tuple[str, bytes]] = {}  # id → (purpose, content)
        #: the final status a batch ends in (completed, expired, cancelled, failed)
        self.ends_as = "completed"
        super().__init__(reply, **options)

    def post(self, path: str, raw: bytes, content_type: str) -> tuple[int, bytes]:
        if path == "/v1/files":
            parts = _multipart(raw, content_type)
            purpose = parts.get("purpose", b"").decode()
            if "file" not in parts or purpose != "batch":
                return _json(400, {"error": {"message": "purpose must be batch", "type": "x"}})
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = (purpose, parts["file"])
            return _json(200, _file(file_id, len(parts["file"]), purpose))
        if path == "/v1/batches":
            body = json.loads(raw)
            with self._lock:
                self.creates.append(body)
            if (
                body.get("completion_window") != "24h"
                or body.get("input_file_id") not in self.files
            ):
                return _json(400, {"error": {"message": "bad batch", "type": "invalid_request"}})
            batch_id = f"batch_{len(self.batches) + 1:04d}"
            lines = [json.loads(line) for line in self.files[body["input_file_id"]][1].splitlines()]
            ids = [line["custom_id"] for line in lines]
            errors = None
            if len(set(ids)) != len(ids) or any(
                line.get("url") != body["endpoint"] or line.get("method") != "POST"
                for line in lines
            ):
                errors = {"object": "list", "data": [{"code": "invalid", "message": "bad lines"}]}
            self.batches[batch_id] = {
                "id": batch_id,
                "object": "batch",
                "endpoint": body["endpoint"],
                "input_file_id": body["input_file_id"],
                "completion_window": "24h",
                "status": "validating",
                "created_at": 1_700_000_000,
                "errors": errors,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "_lines": lines,
                "_polls": 0,
            }
            return _json(200, _public(self.batches[batch_id]))
        return _json(404, {"error": {"message": "no such route", "type": "x"}})

    def get(self, path: str) -> tuple[int, bytes]:
        found = re.fullmatch(r"/v1/batches/([\w-]+)", path)
        if found and found.group(1) in self.batches:
            batch = self.batches[found.group(1)]
            with self._lock:
                self.polls += 1
                batch["_polls"] += 1
                if batch["status"] == "validating":
                    batch["status"] = "failed" if batch["errors"] else "in_progress"
                elif batch["status"] == "in_progress" and batch["_polls"] >= self.polls_to_end:
                    self._end(batch)
            return _json(200, _public(batch))
        found = re.fullmatch(r"/v1/files/([\w-]+)/content", path)
        if found and found.group(1) in self.files:
            return 200, self.files[found.group(1)][1]
        return _json(404, {"error": {"message": "no such object", "type": "x"}})

    def _end(self, batch: dict[str, Any]) -> None:
        if self.ends_as == "failed":
            batch["status"] = "failed"
            batch["errors"] = {
                "object": "list",
                "data": [{"code": "model_not_found", "message": "no such model", "line": 1}],
            }
            return
        output: list[str] = []
        errors: list[str] = []
        for index, line in enumerate(batch["_lines"]):
            fate = self.fate_of(last_user_text(line["url"], line["body"]))
            if self.ends_as in ("expired", "cancelled") and fate == "ok" and index % 2:
                fate = "expired" if self.ends_as == "expired" else "canceled"
            head = {"id": f"batch_req_{index}", "custom_id": line["custom_id"]}
            if fate == "ok":
                body = self.answer(line["url"], line["body"])
                response = {"status_code": 200, "request_id": f"req_{index}", "body": body}
                output.append(json.dumps({**head, "response": response, "error": None}))
            elif fate == "garbled":
                response = {"status_code": 200, "request_id": f"req_{index}", "body": {"x": 1}}
                output.append(json.dumps({**head, "response": response, "error": None}))
            elif fate == "errored":
                failure = {"error": {"message": "fake overload", "type": "server_error"}}
                response = {"status_code": 500, "request_id": f"req_{index}", "body": failure}
                errors.append(json.dumps({**head, "response": response, "error": None}))
            elif fate in ("expired", "canceled"):
                code = "batch_expired" if fate == "expired" else "batch_cancelled"
                error = {"code": code, "message": f"this request {fate}"}
                errors.append(json.dumps({**head, "response": None, "error": error}))
        output.extend(self.extra_lines)
        batch["status"] = self.ends_as
        batch["request_counts"] = {
            "total": len(batch["_lines"]),
            "completed": len(output) - len(self.extra_lines),
            "failed": len(errors),
        }
        for name, lines in (("output_file_id", output), ("error_file_id", errors)):
            if lines:
                file_id = f"file-{len(self.files) + 1}"
                self.files[file_id] = ("batch_output", ("\n".join(lines) + "\n").encode())
                batch[name] = file_id


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in batch.items() if not key.startswith("_")}


def _file(file_id: str, size: int, purpose: str) -> dict[str, Any]:
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": 1_700_000_000,
        "filename": "casegate-batch.jsonl",
        "purpose": purpose,
        "status": "processed",
    }


def _multipart(raw: bytes, content_type: str) -> dict[str, bytes]:
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + raw
    )
    parts: dict[str, bytes] = {}
    for part in message.iter_parts():  # type: ignore[attr-defined]
        name = part.get_param("name", header="content-disposition")
        parts[str(name)] = part.get_payload(decode=True) or b""
    return parts


class FakeAnthropicBatches(BatchServer):
    """The Anthropic Message Batches API."""

    def post(self, path: str, raw: bytes, content_type: str) -> tuple[int, bytes]:
        if path != "/v1/messages/batches":
            return _json(404, _anthropic_error("not_found_error", "no such route"))
        body = json.loads(raw)
        with self._lock:
            self.creates.append(body)
        requests = body.get("requests")
        ids = [r.get("custom_id") for r in requests or []]
        if (
            not requests
            or len(set(ids)) != len(ids)
            or not all(isinstance(i, str) and ANTHROPIC_CUSTOM_ID.fullmatch(i) for i in ids)
            or not all(isinstance(r.get("params"), dict) for r in requests)
        ):
            return _json(400, _anthropic_error("invalid_request_error", "bad requests"))
        batch_id = f"msgbatch_{len(self.batches) + 1:04d}"
        self.batches[batch_id] = {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "in_progress",
            "request_counts": {
                "processing": len(requests),
                "succeeded": 0,
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            },
            "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-02T00:00:00Z",
            "ended_at": None,
            "cancel_initiated_at": None,
            "archived_at": None,
            "results_url": None,
            "_requests": requests,
            "_polls": 0,
        }
        return _json(200, _public(self.batches[batch_id]))

    def get(self, path: str) -> tuple[int, bytes]:
        found = re.fullmatch(r"/v1/messages/batches/([\w-]+)(/results)?", path)
        if not found or found.group(1) not in self.batches:
            return _json(404, _anthropic_error("not_found_error", "no such batch"))
        batch = self.batches[found.group(1)]
        if found.group(2):
            if batch["processing_status"] != "ended":
                return _json(400, _anthropic_error("invalid_request_error", "not ended"))
            return 200, batch["_results"].encode()
        with self._lock:
            self.polls += 1
            batch["_polls"] += 1
            if batch["processing_status"] == "in_progress" and batch["_polls"] >= self.polls_to_end:
                self._end(batch)
        return _json(200, _public(batch))

    def _end(self, batch: dict[str, Any]) -> None:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        lines: list[str] = []
        for request in batch["_requests"]:
            params = request["params"]
            fate = self.fate_of(last_user_text("/v1/messages", params))
            result: dict[str, Any]
            if fate == "ok":
                result = {"type": "succeeded", "message": self.answer("/v1/messages", params)}
            elif fate == "garbled":
                result = {"type": "succeeded", "message": {"content": 7}}
            elif fate == "errored":
                error = _anthropic_error("overloaded_error", "fake overload")
                result = {"type": "errored", "error": error}
            elif fate in ("expired", "canceled"):
                result = {"type": fate}
            else:
                continue
            counts["succeeded" if fate in ("ok", "garbled") else fate] += 1
            lines.append(json.dumps({"custom_id": request["custom_id"], "result": result}))
        lines.extend(self.extra_lines)
        batch["_results"] = "\n".join(lines) + "\n"
        batch["processing_status"] = "ended"
        batch["ended_at"] = "2026-01-01T01:00:00Z"
        batch["request_counts"] = counts
        batch["results_url"] = f"{self.url}/v1/messages/batches/{batch['id']}/results"


def _anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}
