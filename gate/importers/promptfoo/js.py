"""promptfoo's JavaScript conversions, as casegate must read them (numbers, strings, lists)."""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

from gate.importers.promptfoo.common import MAX_SHOWN
from gate.yamlfile import printable


def _js_number(number: float) -> str:
    """JavaScript's `String(number)` (ECMAScript Number::toString)."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    parts = Decimal(repr(abs(number))).normalize().as_tuple()
    digits = "".join(map(str, parts.digits))
    k, n = len(digits), int(parts.exponent) + len(digits)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        exponent = f"{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"
        text = f"{digits[0]}{'.' + digits[1:] if k > 1 else ''}e{exponent}"
    return sign + text


def js_string(value: Any) -> str:
    """JavaScript's `String(value)` for what YAML can hold (promptfoo compares text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and abs(value) < 2**53:
        return str(value)
    if isinstance(value, int | float):
        try:
            return _js_number(float(value))
        except OverflowError:
            return "Infinity" if value > 0 else "-Infinity"
    if value is None:
        return "null"
    if isinstance(value, list):
        return ",".join("" if item is None else js_string(item) for item in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def split_values(text: str) -> list[str]:
    """promptfoo's parseCommaSeparatedValues (see CONTAINS_LIST_PARSING); ValueError when a
    quoted field is not closed or is followed by something other than a comma."""
    fields: list[str] = []
    index, end = 0, len(text)
    while index < end:
        while index < end and (text[index].isspace() or text[index] == ","):
            index += 1
        if index >= end:
            break
        if text[index] != '"':
            start = index
            while index < end and text[index] != ",":
                index += 1
            fields.append(text[start:index].strip())
            continue
        index += 1
        chars: list[str] = []
        while index < end:
            char, after = text[index], text[index + 1 : index + 2]
            if (char == "\\" and after in ('"', "\\")) or (char == '"' and after == '"'):
                chars.append(after)
                index += 2
            elif char == '"':
                break
            else:
                chars.append(char)
                index += 1
        else:
            raise ValueError("a quoted field is not closed")
        index += 1
        while index < end and text[index].isspace():
            index += 1
        if index < end and text[index] != ",":
            raise ValueError("a quoted field is followed by something other than a comma")
        fields.append("".join(chars))
    return fields


def slug_of(text: str, limit: int = 80) -> str:
    """Lowercase letters, digits, `.`, `_` and `-`; cut at a word's end when it is long."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    if len(slug) > limit:
        cut = slug[: limit + 1].rfind("-")
        slug = slug[: cut if cut > limit // 2 else limit]
    return slug.rstrip("-._")


def shown_value(value: Any, limit: int = MAX_SHOWN) -> str:
    """A value as one line of JSON, in backticks a markdown reader cannot break out of."""
    try:
        text = json.dumps(plain(value), ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    text = printable(text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return inline_code(text)


def inline_code(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def plain(value: Any) -> Any:
    """Plain dicts and lists (the loader's line-tracking dicts do not dump)."""
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value
