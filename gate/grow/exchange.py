"""One request and its response, as read from any source: what a draft case is made of.

Every field is plain, bounded text or a number: the readers turn whatever the file held
into these, so nothing after them touches the untrusted document again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gate.errors import CasegateError

#: longest text kept from one message or output: a case's input is read by people, and a
#: longer one is pasted documents, not a regression worth keeping whole
MAX_TEXT_CHARS = 100_000
#: messages kept from one request (the last ones: the turn that went wrong is at the end)
MAX_MESSAGES = 200


class SourceError(CasegateError):
    """A source file is unreadable or a record in it has the wrong shape."""


@dataclass(frozen=True, slots=True)
class Message:
    role: str
    text: str


@dataclass(frozen=True, slots=True)
class Exchange:
    """One model call from a source file, with what ranking and provenance need."""

    #: "log", "batch", "otel", "langsmith", "langfuse", "results"
    kind: str
    file: str
    #: 1-based line in the file, when the record has one of its own
    line: int | None
    #: ids a person may pick it by (a span id, a run id, a trace id, a custom_id)
    ids: tuple[str, ...]
    messages: tuple[Message, ...]
    model: str | None = None
    output: str | None = None
    tool_calls: tuple[str, ...] = ()
    #: the failure the source recorded (span status, run error, level ERROR), if any
    error: str | None = None
    #: why a user flagged it (negative feedback, a flag attribute), if anyone did
    flagged: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    #: what the source says the call cost (Langfuse, LangSmith), when it says
    cost_usd: float | None = None
    #: the source's own named text inputs (a LangSmith chain's `{"question": …}`), which
    #: map onto a suite's input keys as they are
    fields: Mapping[str, str] = field(default_factory=dict)
    #: flat string metadata, for `--select key=value`
    metadata: Mapping[str, str] = field(default_factory=dict)

    def where(self) -> str:
        """`file:line`, or `file span ID` for a record without a line of its own."""
        if self.line is not None:
            return f"{self.file}:{self.line}"
        return f"{self.file} {self.id_kind()} {self.ids[0]}" if self.ids else self.file

    def short(self) -> str:
        """`line 4` or `span 5fb3…`: where in its file, for a list of several."""
        if self.line is not None:
            return f"line {self.line}"
        return f"{self.id_kind()} {self.ids[0]}" if self.ids else "a record"

    def id_kind(self) -> str:
        return {
            "otel": "span",
            "langsmith": "run",
            "langfuse": "observation",
            "results": "case",
            "log": "request",
            "batch": "custom_id",
        }.get(self.kind, "record")

    def user_text(self) -> str:
        """The last user message: what a single-text input case receives."""
        for message in reversed(self.messages):
            if message.role == "user":
                return message.text
        return self.messages[-1].text if self.messages else ""

    def tokens(self) -> int:
        return (self.input_tokens or 0) + (self.output_tokens or 0)


def mapping(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one: a reader walks an untrusted
    document without asking at every step whether a key held the type it should."""
    return value if isinstance(value, dict) else {}


def listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS]


def text_of(content: Any) -> str:
    """Text from a message's content: a string, or a list of parts (OpenAI's
    `{"type": "text", "text"}`, OTel's `{"type": "text", "content"}`); other parts
    (images, audio) are left out. Never raises."""
    if isinstance(content, str):
        return clip(content)
    if isinstance(content, list):
        texts = []
        for part in content[:MAX_MESSAGES]:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") in (None, "text", "input_text"):
                value = part.get("text", part.get("content"))
                if isinstance(value, str):
                    texts.append(value)
        return clip("\n".join(texts))
    return ""


def chat_messages(raw: Any) -> tuple[Message, ...] | None:
    """Chat Completions messages (`[{"role", "content"}]`) as Messages; None if not a list
    of mappings with a string role."""
    if not isinstance(raw, list) or not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) for m in raw
    ):
        return None
    kept = raw[-MAX_MESSAGES:]
    return tuple(Message(m["role"][:40], text_of(m.get("content"))) for m in kept)


def tool_names(calls: Any) -> tuple[str, ...]:
    """Names of Chat Completions tool calls (`[{"function": {"name"}}]`) or of OTel
    `tool_call` parts (`{"name"}`)."""
    names: list[str] = []
    if isinstance(calls, list):
        for call in calls[:MAX_MESSAGES]:
            if not isinstance(call, dict):
                continue
            function = call.get("function")
            name = function.get("name") if isinstance(function, dict) else call.get("name")
            if isinstance(name, str):
                names.append(name[:200])
    return tuple(names)


def count(value: Any) -> int | None:
    """A token count: a whole number ≥ 0 (bools and floats are not counts)."""
    if type(value) is int and 0 <= value < 10**12:
        return value
    if type(value) is str and value.isdigit() and len(value) < 13:  # OTLP JSON intValue
        return int(value)
    return None


def money(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1e9:
        return float(value)
    return None


def flat_metadata(raw: Any) -> dict[str, str]:
    """Scalar metadata values as strings (for `--select`); nested values are left out."""
    if not isinstance(raw, dict):
        return {}
    flat: dict[str, str] = {}
    for key, value in list(raw.items())[:500]:
        if isinstance(value, bool):
            flat[str(key)[:200]] = "true" if value else "false"
        elif isinstance(value, str | int | float):
            flat[str(key)[:200]] = str(value)[:1000]
    return flat


#: metadata a person sets to flag an exchange for the suite (docs/growing.md)
FLAG_KEYS = ("casegate.flagged", "casegate_flagged")
#: user feedback keys whose negative value flags an exchange
FEEDBACK_KEYS = ("user.feedback", "user_feedback", "feedback")
NEGATIVE = frozenset({"negative", "thumbs_down", "thumbs-down", "down", "bad", "-1", "0", "false"})


def flag_in(metadata: Mapping[str, str]) -> str | None:
    """Why the metadata flags this exchange, or None."""
    for key in FLAG_KEYS:
        if metadata.get(key, "").lower() in ("true", "1", "yes"):
            return f"{key}=true"
    for key in FEEDBACK_KEYS:
        value = metadata.get(key)
        if value is not None and value.strip().lower() in NEGATIVE:
            return f"{key}={value[:40]}"
    return None
