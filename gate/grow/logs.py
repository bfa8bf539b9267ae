"""A request log: JSONL, one Chat Completions exchange a line, or the OpenAI Batch API's
output lines.

    {"request": {"model", "messages", "tools"?}, "response": {chat completion}, "metadata"?}
    {"id", "custom_id", "response": {"status_code", "request_id", "body": {chat completion}},
     "error"}

A Batch API output line holds no request: its messages are in the batch's input file,
under the same `custom_id` (`{"custom_id", "method", "url", "body": {request}}`). Give
both in one log (`cat input.jsonl output.jsonl > log.jsonl`) and each output line is
joined with its request; input lines are not exchanges of their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gate.grow.exchange import (
    Exchange,
    SourceError,
    chat_messages,
    count,
    flag_in,
    flat_metadata,
    mapping,
    text_of,
    tool_names,
)
from gate.grow.reading import MAX_PROBLEMS, json_lines, problem, read_source

EXPECTED = (
    'a request-log line {"request": {"model", "messages": [...]}, "response": {chat '
    'completion}, "metadata"?: {...}} or a Batch API output line {"custom_id", "response": '
    '{"status_code", "body": {chat completion}}, "error"}'
)


def read_log(path: Path) -> list[Exchange]:
    """Every exchange in the log; SourceError listing each line of another shape."""
    found: list[Exchange] = []
    problems: list[str] = []
    records = list(json_lines(path, read_source(path), EXPECTED, problems))
    requests = {
        record["custom_id"]: record["body"]
        for _, record in records
        if _batch_input(record) and isinstance(record["custom_id"], str)
    }
    for number, record in records:
        if _batch_input(record):
            continue
        try:
            found.append(_exchange(path, number, record, requests))
        except ValueError as exc:
            problems.append(problem(path, number, f"{exc}; expected {EXPECTED}"))
    if problems:
        # In line order, the syntax problems json_lines found among them.
        problems.sort(key=_line_number)
        raise SourceError(problems[:MAX_PROBLEMS])
    return found


def _batch_input(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and "custom_id" in record
        and isinstance(record.get("body"), dict)
        and "response" not in record
    )


def _exchange(path: Path, number: int, record: Any, requests: dict[str, Any]) -> Exchange:
    if not isinstance(record, dict):
        raise ValueError(f"a {type(record).__name__}, not an object")
    if "custom_id" in record and isinstance(record.get("response"), dict | None):
        return _batch_line(path, number, record, requests)
    request = record.get("request")
    if not isinstance(request, dict):
        raise ValueError("no `request` object")
    messages = chat_messages(request.get("messages"))
    if not messages:
        raise ValueError("`request.messages` is not a list of {role, content} messages")
    metadata = flat_metadata(record.get("metadata"))
    response = record.get("response")
    output, calls, usage, error = _completion(response)
    if response is not None and not isinstance(response, dict):
        raise ValueError("`response` is not an object")
    ids = tuple(v for k, v in metadata.items() if k in ("id", "request_id", "trace_id"))
    return Exchange(
        kind="log",
        file=str(path),
        line=number,
        ids=ids,
        messages=messages,
        model=_string(request.get("model")) or _string((response or {}).get("model")),
        output=output,
        tool_calls=calls,
        error=error,
        flagged=flag_in(metadata),
        input_tokens=count(usage.get("prompt_tokens")),
        output_tokens=count(usage.get("completion_tokens")),
        metadata=metadata,
    )


def _batch_line(
    path: Path, number: int, record: dict[str, Any], requests: dict[str, Any]
) -> Exchange:
    response = record.get("response") or {}
    body = response.get("body") if isinstance(response, dict) else None
    output, calls, usage, error = _completion(body)
    status = response.get("status_code") if isinstance(response, dict) else None
    if record.get("error"):
        error = f"batch error: {text_of(_message_of(record['error']))[:200]}"
    elif isinstance(status, int) and status >= 400:
        error = f"status {status}"
    custom_id = _string(record.get("custom_id")) or ""
    request = record.get("request") or requests.get(custom_id)
    messages = chat_messages(request.get("messages")) if isinstance(request, dict) else None
    if not messages:
        raise ValueError(
            f"a Batch API output line whose request (custom_id {custom_id[:60]!r}) is not in "
            "the log: put the batch's input file in the same log (`cat input.jsonl "
            "output.jsonl`)"
        )
    return Exchange(
        kind="batch",
        file=str(path),
        line=number,
        ids=tuple(i for i in (custom_id, _string(record.get("id"))) if i),
        messages=messages,
        model=(_string(body.get("model")) if isinstance(body, dict) else None)
        or _string(mapping(request).get("model")),
        output=output,
        tool_calls=calls,
        error=error,
        input_tokens=count(usage.get("prompt_tokens")),
        output_tokens=count(usage.get("completion_tokens")),
        metadata={"custom_id": custom_id},
    )


def _completion(body: Any) -> tuple[str | None, tuple[str, ...], dict[str, Any], str | None]:
    """(text, tool call names, usage, error) of a chat completion; empty when absent."""
    if not isinstance(body, dict):
        return None, (), {}, None
    usage = mapping(body.get("usage"))
    if isinstance(body.get("error"), dict | str):
        return None, (), usage, f"error: {text_of(_message_of(body['error']))[:200]}"
    choices = body.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        return None, (), usage, None
    return text_of(message.get("content")), tool_names(message.get("tool_calls")), usage, None


def _message_of(error: Any) -> Any:
    return error.get("message", "") if isinstance(error, dict) else error


def _string(value: Any) -> str | None:
    return value[:200] if isinstance(value, str) and value else None


def _line_number(located_problem: str) -> int:
    """The line of a `file:line: problem` (the file's own name may hold colons)."""
    head = located_problem.split(": ", 1)[0]
    number = head.rsplit(":", 1)[-1]
    return int(number) if number.isdigit() else 0
