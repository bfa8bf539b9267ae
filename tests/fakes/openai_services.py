"""A loopback server speaking OpenAI's `/v1/embeddings` and `/v1/moderations` wire formats.

The real `openai` SDK is pointed at it with `base_url`. Its answers are
deterministic and readable:

- an embedding counts a text's words into DIMENSIONS buckets (plus one constant
  bucket, so no vector is all zeros): texts that share words point the same way;
- a moderation score is HIGH for a category when the text holds one of its
  trigger words (TRIGGERS), LOW otherwise, for every category in `categories`.

Faults (an HTTP status, a hang, a malformed body) are scripted per request by a
text the request's input contains, as in tests/fakes/llm_server.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import time
from dataclasses import dataclass
from typing import Any

from tests.fakes.llm_server import Fault, error_body
from tests.fakes.loopback import LoopbackServer, QuietHandler

DIMENSIONS = 32
HIGH, LOW = 0.91, 0.0012
CATEGORIES = (
    "harassment",
    "harassment/threatening",
    "hate",
    "hate/threatening",
    "illicit",
    "illicit/violent",
    "self-harm",
    "self-harm/instructions",
    "self-harm/intent",
    "sexual",
    "sexual/minors",
    "violence",
    "violence/graphic",
)
TRIGGERS = {"violence": ("punch", "smash"), "harassment": ("idiot",), "illicit": ("shoplift",)}


def embed(text: str) -> list[float]:
    vector = [0.0] * DIMENSIONS + [1.0]
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[hashlib.sha256(word.encode()).digest()[0] % DIMENSIONS] += 1.0
    return vector


def scores(text: str, categories: tuple[str, ...] = CATEGORIES) -> dict[str, float]:
    lowered = text.lower()
    return {
        category: HIGH if any(word in lowered for word in TRIGGERS.get(category, ())) else LOW
        for category in categories
    }


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def texts(self) -> list[str]:
        given = self.body.get("input")
        return [given] if isinstance(given, str) else list(given or [])


class FakeOpenAIServices(LoopbackServer):
    def __init__(self) -> None:
        self.received: list[Received] = []
        self.faults: dict[str, list[Fault]] = {}
        #: the categories the moderation model scores (an older model lacks `illicit*`)
        self.categories: tuple[str, ...] = CATEGORIES
        super().__init__()

    def fail(self, when_input_contains: str, *faults: Fault) -> None:
        with self._lock:
            self.faults.setdefault(when_input_contains, []).extend(faults)

    def calls(self, path: str) -> list[Received]:
        with self._lock:
            return [received for received in self.received if received.path == path]

    def _next_fault(self, texts: list[str]) -> Fault | None:
        with self._lock:
            for needle, queue in self.faults.items():
                if queue and any(needle in text for text in texts):
                    return queue.pop(0)
        return None

    def handler(self) -> type[QuietHandler]:
        server = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.split("?")[0]
                received = Received(path, dict(self.headers), body)
                with server._lock:
                    server.received.append(received)
                fault = server._next_fault(received.texts)
                if fault is not None:
                    time.sleep(fault.hang_s)
                    text = fault.body or error_body(path, fault.status)
                    self.send_body(fault.status, text.encode(), fault.headers)
                    return
                if path == "/v1/embeddings":
                    answer = embeddings(body, received.texts)
                elif path == "/v1/moderations":
                    answer = moderations(body, received.texts, server.categories)
                else:
                    self.send_body(404, b'{"error": {"message": "no such route"}}')
                    return
                self.send_body(200, json.dumps(answer).encode())

        return Handler


def embeddings(body: dict[str, Any], texts: list[str]) -> dict[str, Any]:
    data = []
    for index, text in enumerate(texts):
        vector: Any = embed(text)
        if body.get("encoding_format") == "base64":  # as the API does: float32, little-endian
            vector = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": vector})
    tokens = sum(len(text.split()) for text in texts)
    return {
        "object": "list",
        "data": data,
        "model": body.get("model"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def moderations(
    body: dict[str, Any], texts: list[str], categories: tuple[str, ...]
) -> dict[str, Any]:
    results = []
    for text in texts:
        scored = scores(text, categories)
        flags = {category: score > 0.5 for category, score in scored.items()}
        results.append(
            {
                "flagged": any(flags.values()),
                "categories": flags,
                "category_scores": scored,
                "category_applied_input_types": {category: ["text"] for category in scored},
            }
        )
    return {
        "id": "modr-fake",
        "model": body.get("model") or "omni-moderation-latest",
        "results": results,
    }
