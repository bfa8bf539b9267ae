"""Reading JSON out of model output: the whole output strictly, or the first
object or array inside a ``` fence or bare in prose (`extract_json: true`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

#: A fence opens with three or more backticks and an optional info string; it
#: closes with a line of at least as many backticks (CommonMark's rule).
_FENCE = re.compile(
    r"^(?P<ticks>`{3,})[ \t]*(?P<info>[^`\n]*)\n(?P<body>.*?)^(?P=ticks)`*[ \t]*$", re.M | re.S
)
#: Where a bare object or array may start. Model output is untrusted: a text of
#: thousands of `[` must not cost thousands of parses, so only this many are tried.
MAX_PROSE_STARTS = 200
_STARTS = re.compile(r"[\[{]")
_DECODER = json.JSONDecoder(parse_constant=lambda name: _refuse(name))


class NotJsonConstant(ValueError):
    """`NaN`, `Infinity` or `-Infinity`: Python's json accepts them, RFC 8259 does not."""


def _refuse(name: str) -> Any:
    raise NotJsonConstant(name)


@dataclass(frozen=True, slots=True)
class ParsedJson:
    """The JSON a check reads. `ok` False: `problem` says why there is none.
    `source` says where an extracted value came from ("" for the whole output)."""

    ok: bool
    value: Any = None
    problem: str = ""
    source: str = ""

    def located(self, reason: str) -> str:
        """A failed check's reason, saying which JSON it judged when it was extracted."""
        return f"{reason} (in the JSON from {self.source})" if self.source else reason


def _short(text: str, limit: int) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_whole(text: str) -> ParsedJson:
    """The output parsed as one JSON document, per RFC 8259."""
    try:
        return ParsedJson(True, json.loads(text, parse_constant=_refuse))
    except NotJsonConstant as exc:
        problem = f"output is not JSON: it contains {exc.args[0]}, which RFC 8259 does not allow"
    except (ValueError, RecursionError) as exc:
        problem = f"output is not JSON ({_short(str(exc), 80)})"
    return ParsedJson(False, problem=problem)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def extract(text: str) -> ParsedJson:
    """The first JSON object or array in the output: fenced blocks first (a model
    that fences its answer means the fence), then bare in the prose."""
    rejected = ""
    for fence in _FENCE.finditer(text):
        body = fence.group("body")
        info = fence.group("info").strip()
        language = info.split()[0] if info else ""
        label = f"the ```{language} fence at line {_line_of(text, fence.start())}"
        parsed = parse_whole(body)
        if parsed.ok and isinstance(parsed.value, dict | list):
            return ParsedJson(True, parsed.value, source=label)
        if not rejected and info.lower().startswith("json"):
            rejected = f"; {label} holds no valid JSON object or array"
    for attempt, start in enumerate(_STARTS.finditer(text)):
        if attempt == MAX_PROSE_STARTS:
            break
        try:
            value, _ = _DECODER.raw_decode(text, start.start())
        except (ValueError, RecursionError):
            continue
        return ParsedJson(
            True,
            value,
            source=f"the text at line {_line_of(text, start.start())}",
        )
    return ParsedJson(
        False,
        problem="no JSON object or array found in the output "
        f"(looked in ``` fences and in the prose){rejected}",
    )
