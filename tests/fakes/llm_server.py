"""A loopback HTTP server that speaks the OpenAI and Anthropic wire formats.

The real SDKs are pointed at it with `base_url`, so the requests they build and
the responses they parse are the real ones. It answers:

- `POST /v1/chat/completions` (OpenAI Chat Completions)
- `POST /v1/responses` (OpenAI Responses)
- `POST /v1/messages` (Anthropic Messages)

What it says is decided by a `reply` function over the parsed request; faults
(429 with Retry-After, 500, a hang past the client's timeout, a malformed
body) are scripted per conversation, keyed by text in the last user turn, so
they land on the intended case however the requests interleave.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.loopback import LoopbackServer, QuietHandler


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[tuple[str, Any]] = field(default_factory=list)
    model: str | None = None  # default: the model asked for
    input_tokens: int = 12
    output_tokens: int = 7
    stop: str | None = None
    system_fingerprint: str = "fp_fake1"  # OpenAI chat only: what a silent model update changes


@dataclass
class Fault:
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None  # default: the provider's error envelope
    hang_s: float = 0.0  # sleep this long before answering (a timeout, from the client's side)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float

    @property
    def last_user_text(self) -> str:
        return last_user_text(self.path, self.body)


def last_user_text(path: str, body: dict[str, Any]) -> str:
    if path.endswith("/responses"):
        turns = body.get("input")
        if isinstance(turns, str):
            return turns
    else:
        turns = body.get("messages", [])
    for message in reversed(turns or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return " ".join(
                part.get("text", "") for part in content or [] if isinstance(part, dict)
            )
    return ""


def echo(received: Received) -> Reply:
    return Reply(text=f"echo: {received.last_user_text}")


class FakeLLMServer(LoopbackServer):
    def __init__(self, reply: Callable[[Received], Reply] = echo, *, delay_s: float = 0.0) -> None:
        self.reply = reply
        self.delay_s = delay_s
        self.received: list[Received] = []
        self.faults: dict[str, list[Fault]] = {}
        super().__init__()

    def fail(self, when_text_contains: str, *faults: Fault) -> None:
        """Answer the next requests whose last user turn contains the text with these faults."""
        with self._lock:
            self.faults.setdefault(when_text_contains, []).extend(faults)

    def _next_fault(self, text: str) -> Fault | None:
        with self._lock:
            for needle, queue in self.faults.items():
                if needle in text and queue:
                    return queue.pop(0)
        return None

    def handler(self) -> type[QuietHandler]:
        server = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                received = Received(self.path, dict(self.headers), body, time.monotonic())
                with server._lock:
                    server.received.append(received)
                fault = server._next_fault(received.last_user_text)
                if server.delay_s:
                    time.sleep(server.delay_s)
                if fault is not None:
                    if fault.hang_s:
                        time.sleep(fault.hang_s)
                    if fault.status == 200 and fault.body is not None:
                        self.send_body(200, fault.body.encode(), fault.headers)
                        return
                    if fault.status != 200:
                        text = fault.body or error_body(self.path, fault.status)
                        self.send_body(fault.status, text.encode(), fault.headers)
                        return
                route = ROUTES.get(self.path.split("?")[0].removeprefix("/v1"))
                if route is None:
                    self.send_body(404, b'{"error": {"message": "no such route"}}')
                    return
                reply = server.reply(received)
                self.send_body(200, json.dumps(route(body, reply)).encode())

        return Handler


def error_body(path: str, status: int) -> str:
    kinds = {429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}
    kind = kinds.get(status, "invalid_request_error")
    if path.endswith("/messages"):
        return json.dumps({"type": "error", "error": {"type": kind, "message": f"fake {status}"}})
    return json.dumps({"error": {"message": f"fake {status}", "type": kind, "code": None}})


def chat_completion(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{index}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for index, (name, args) in enumerate(reply.tool_calls)
        ]
    finish = reply.stop or ("tool_calls" if reply.tool_calls else "stop")
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": reply.model or body.get("model"),
        "system_fingerprint": reply.system_fingerprint,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
        },
    }


def response(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if reply.text:
        output.append(
            {
                "type": "message",
                "id": "msg_fake",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for index, (name, args) in enumerate(reply.tool_calls):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{index}",
                "call_id": f"call_{index}",
                "name": name,
                "arguments": args if isinstance(args, str) else json.dumps(args),
                "status": "completed",
            }
        )
    return {
        "id": "resp_fake",
        "object": "response",
        "created_at": 1_700_000_000,
        "model": reply.model or body.get("model"),
        "status": reply.stop or "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def message(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for index, (name, args) in enumerate(reply.tool_calls):
        content.append({"type": "tool_use", "id": f"toolu_{index}", "name": name, "input": args})
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": reply.model or body.get("model"),
        "content": content,
        "stop_reason": reply.stop or ("tool_use" if reply.tool_calls else "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
    }


ROUTES: dict[str, Callable[[dict[str, Any], Reply], dict[str, Any]]] = {
    "/chat/completions": chat_completion,
    "/responses": response,
    "/messages": message,
}
