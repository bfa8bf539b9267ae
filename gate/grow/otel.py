"""OpenTelemetry GenAI spans from an OTLP JSON export.

The export is `{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}` (one document, or
one per line as the Collector's file exporter writes them); attributes are OTLP
`{"key", "value": AnyValue}` pairs. A span is a model call when it has `gen_ai.*`
attributes. Its messages come from, in order of preference:

- `gen_ai.input.messages` / `gen_ai.output.messages` (and `gen_ai.system_instructions`):
  JSON strings of the parts-based schema, `[{"role", "parts": [{"type": "text",
  "content"}, {"type": "tool_call", "name", "arguments"}]}]` (semantic conventions 1.37+);
- the older span events `gen_ai.content.prompt` / `gen_ai.content.completion`, whose
  `gen_ai.prompt` / `gen_ai.completion` attribute is a JSON string of Chat Completions
  messages;
- the older per-message events `gen_ai.system.message`, `gen_ai.user.message`,
  `gen_ai.assistant.message`, `gen_ai.tool.message` (attribute `content`) and
  `gen_ai.choice` (attribute `message`, a JSON object with `content` and `tool_calls`).

A span failed when its status code is ERROR (2) or it has `error.type`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gate.files import parse_json
from gate.grow.exchange import (
    MAX_MESSAGES,
    Exchange,
    Message,
    SourceError,
    chat_messages,
    count,
    flag_in,
    listed,
    mapping,
    text_of,
    tool_names,
)
from gate.grow.reading import documents, problem

EXPECTED = (
    'an OTLP JSON export {"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId", '
    '"attributes": [{"key", "value"}], "events"}]}]}]}'
)
_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def read_otel(path: Path) -> list[Exchange]:
    """Every GenAI span in the export; SourceError when the file is not an OTLP export."""
    found: list[Exchange] = []
    for line, document in documents(path, EXPECTED):
        spans = _spans(document)
        if spans is None:
            raise SourceError(problem(path, line, f"no `resourceSpans` list; expected {EXPECTED}"))
        for resource, span in spans:
            exchange = _exchange(path, span, resource)
            if exchange is not None:
                found.append(exchange)
    return found


def _spans(document: Any) -> list[tuple[dict[str, Any], dict[str, Any]]] | None:
    """(the resource's attributes, the span) for every span in an export."""
    if not isinstance(document, dict) or not isinstance(document.get("resourceSpans"), list):
        return None
    spans: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for resource in document["resourceSpans"]:
        about = attributes(mapping(mapping(resource).get("resource")).get("attributes"))
        for scope in listed(mapping(resource).get("scopeSpans")):
            found = listed(mapping(scope).get("spans"))
            spans.extend((about, s) for s in found if isinstance(s, dict))
    return spans


def any_value(value: Any) -> Any:
    """An OTLP AnyValue as plain data (stringValue, intValue as a string, arrayValue …)."""
    if not isinstance(value, dict):
        return None
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return count(value["intValue"]) if not isinstance(value["intValue"], bool) else None
    if isinstance(value.get("arrayValue"), dict):
        values = value["arrayValue"].get("values")
        return [any_value(v) for v in values[:MAX_MESSAGES]] if isinstance(values, list) else []
    if isinstance(value.get("kvlistValue"), dict):
        return attributes(value["kvlistValue"].get("values"))
    return None


def attributes(raw: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for pair in raw[:2000] if isinstance(raw, list) else []:
        if isinstance(pair, dict) and isinstance(pair.get("key"), str):
            found[pair["key"][:200]] = any_value(pair.get("value"))
    return found


def _exchange(path: Path, span: dict[str, Any], resource: dict[str, Any]) -> Exchange | None:
    attrs = attributes(span.get("attributes"))
    events = [
        (event.get("name"), attributes(event.get("attributes")))
        for event in listed(span.get("events"))[:2000]
        if isinstance(event, dict)
    ]
    if not any(key.startswith("gen_ai.") for key in attrs) and not any(
        isinstance(name, str) and name.startswith("gen_ai.") for name, _ in events
    ):
        return None  # not a model call: an HTTP span, a database span …
    messages, output, calls = _from_attributes(attrs)
    if not messages:
        messages, output, calls = _from_events(events)
    span_id = span.get("spanId")
    ids = tuple(
        value[:200] for value in (span_id, span.get("traceId")) if isinstance(value, str) and value
    )
    status = mapping(span.get("status"))
    error = None
    if status.get("code") in (2, "STATUS_CODE_ERROR", "ERROR"):
        message = status.get("message")
        error = "span status ERROR" + (f": {message[:200]}" if isinstance(message, str) else "")
    elif isinstance(attrs.get("error.type"), str):
        error = f"error.type {attrs['error.type'][:200]}"
    # The resource's attributes (service.name, deployment.environment) with the span's
    # own over them: what `--select` filters on.
    metadata = {
        k: str(v)[:1000]
        for k, v in {**resource, **attrs}.items()
        if isinstance(v, str | int | float)
    }
    model = attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model")
    return Exchange(
        kind="otel",
        file=str(path),
        line=None,
        ids=ids,
        messages=messages,
        model=model[:200] if isinstance(model, str) else None,
        output=output,
        tool_calls=calls,
        error=error,
        flagged=flag_in(metadata),
        input_tokens=count(attrs.get("gen_ai.usage.input_tokens")),
        output_tokens=count(attrs.get("gen_ai.usage.output_tokens")),
        metadata=metadata,
    )


def _json_attr(value: Any) -> Any:
    """A JSON-string attribute parsed (depth- and size-bounded); the value itself when it
    is already structured; None when it is not JSON."""
    if isinstance(value, str):
        try:
            return parse_json(value)
        except ValueError:
            return None
    return value


def _parts_messages(raw: Any) -> tuple[tuple[Message, ...], tuple[str, ...]]:
    """Messages of the parts-based schema, and the names of the tool calls they request."""
    messages: list[Message] = []
    calls: list[str] = []
    for message in raw[-MAX_MESSAGES:] if isinstance(raw, list) else []:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            continue
        parts = message.get("parts")
        if not isinstance(parts, list):
            continue
        calls.extend(
            tool_names([p for p in parts if isinstance(p, dict) and p.get("type") == "tool_call"])
        )
        messages.append(Message(message["role"][:40], text_of(parts)))
    return tuple(messages), tuple(calls)


def _from_attributes(
    attrs: dict[str, Any],
) -> tuple[tuple[Message, ...], str | None, tuple[str, ...]]:
    inputs, _ = _parts_messages(_json_attr(attrs.get("gen_ai.input.messages")))
    system = _json_attr(attrs.get("gen_ai.system_instructions"))
    if inputs and isinstance(system, list):
        inputs = (Message("system", text_of(system)), *inputs)
    outputs, calls = _parts_messages(_json_attr(attrs.get("gen_ai.output.messages")))
    output = "\n".join(m.text for m in outputs) if outputs else None
    return inputs, output, calls


def _from_events(
    events: list[tuple[Any, dict[str, Any]]],
) -> tuple[tuple[Message, ...], str | None, tuple[str, ...]]:
    messages: list[Message] = []
    output: str | None = None
    calls: tuple[str, ...] = ()
    for name, attrs in events:
        if name == "gen_ai.content.prompt":
            messages.extend(chat_messages(_json_attr(attrs.get("gen_ai.prompt"))) or ())
        elif name == "gen_ai.content.completion":
            completion = _json_attr(attrs.get("gen_ai.completion"))
            found = chat_messages(completion) or ()
            output = "\n".join(m.text for m in found) if found else output
            if isinstance(completion, list):
                calls = calls + tool_names(
                    [
                        c
                        for m in completion
                        if isinstance(m, dict)
                        for c in listed(m.get("tool_calls"))
                    ]
                )
        elif name in _ROLES:
            content = attrs.get("content")
            messages.append(
                Message(
                    _ROLES[name],
                    text_of(
                        _json_attr(content)
                        if isinstance(content, str) and content.startswith("[")
                        else content
                    ),
                )
            )
        elif name == "gen_ai.choice":
            message = _json_attr(attrs.get("message"))
            if isinstance(message, dict):
                output = text_of(message.get("content"))
                calls = calls + tool_names(message.get("tool_calls"))
    return tuple(messages[-MAX_MESSAGES:]), output, calls
