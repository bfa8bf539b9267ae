"""Reading result lines: a line casegate cannot read is data, never an exception.

Providers write one JSON object per line; each adapter says what a line means.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gate.files import parse_json
from gate.outputs import Output
from gate.produce.batch.api import Line, short
from gate.secrets import redact
from gate.systems.chat import MALFORMED


def split(text: str, read: Callable[[dict[str, Any]], Line]) -> list[Line]:
    """Every non-blank line of a JSONL text through `read`; a line that is not a JSON
    object with a string `custom_id` becomes an unmapped Line with the reason."""
    lines: list[Line] = []
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            item = parse_json(raw)
        except ValueError as exc:
            lines.append(Line(None, error=f"result line {number} is not JSON ({short(str(exc))})"))
            continue
        if not isinstance(item, dict) or not isinstance(item.get("custom_id"), str):
            lines.append(Line(None, error=f"result line {number} names no custom_id"))
            continue
        try:
            lines.append(read(item))
        except MALFORMED as exc:
            lines.append(failed(item["custom_id"], f"malformed result line ({_what(exc)})"))
    return lines


def parsed(custom_id: str, parse: Callable[[], Output]) -> Line:
    """The output `parse` builds from a succeeded line's body, or why it could not."""
    try:
        return Line(custom_id, output=parse())
    except MALFORMED as exc:
        return failed(custom_id, f"malformed response body in the batch results ({_what(exc)})")


def failed(custom_id: str, reason: str) -> Line:
    return Line(custom_id, error=redact(short(reason)))


def _what(exc: BaseException) -> str:
    return short(f"{type(exc).__name__}: {exc}", 160)
