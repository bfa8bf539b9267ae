"""The few one-line `javascript` assertions that say what a casegate check says.

promptfoo runs a `javascript` value as code; casegate never runs a config's code. A value
that is exactly one of these shapes, over `output` and a string or number literal, is a
check already: `output.includes('x')`, `!output.includes('x')`,
`output.toLowerCase().includes('x')`, `output.startsWith('x')`, `output.length > 10`
(and `>=`, `<`, `<=`), `output.trim().length > 0`, `output && output.trim().length > 0`.
Anything else stays a stub for a person to port. Recognised by pattern, never evaluated.
"""

from __future__ import annotations

import re

from gate.importers.promptfoo.expect import Expect, _Text

_STRING = r"""(?:'([^'\\\n]*)'|"([^"\\\n]*)")"""
_INCLUDES = re.compile(rf"(!?)\s*output(\.toLowerCase\(\))?\.includes\(\s*{_STRING}\s*\)")
_STARTS = re.compile(rf"output\.startsWith\(\s*{_STRING}\s*\)")
_LENGTH = re.compile(r"(?:output\s*&&\s*)?output(\.trim\(\))?\.length\s*(>=|<=|>|<)\s*(\d{1,7})")
_TRAILING = re.compile(r"^\s*(?:return\s+)?|\s*;?\s*$")


def map_javascript(code: str, inverse: bool, expect: Expect) -> str | None:
    """The check a one-line `javascript` assertion is, added to `expect`; None if it is not
    one of the shapes (and then nothing is added)."""
    body = _TRAILING.sub("", code)
    if "\n" in body or inverse:
        return None
    found = _INCLUDES.fullmatch(body)
    if found:
        negated, lowered = bool(found.group(1)), bool(found.group(2))
        needle = found.group(3) if found.group(3) is not None else found.group(4)
        if not needle or (lowered and needle != needle.lower()):
            return None  # a lowered output never holds an upper-case needle: a person decides
        kind = "not_contains" if negated else "contains"
        expect.texts.append(_Text(kind, [needle], lowered))
        return f"`{kind}`" + (" (ignoring case)" if lowered else "")
    found = _STARTS.fullmatch(body)
    if found:
        prefix = found.group(1) if found.group(1) is not None else found.group(2)
        if not prefix:
            return None
        expect.starts.append(prefix)
        return "`starts_with`"
    found = _LENGTH.fullmatch(body)
    if found:
        return _length(bool(found.group(1)), found.group(2), int(found.group(3)), expect)
    return None


def _length(trimmed: bool, operator: str, number: int, expect: Expect) -> str | None:
    if trimmed:  # only "some text once trimmed" has a plain form
        if (operator, number) not in ((">", 0), (">=", 1)):
            return None
        expect.patterns.append(r"\S")
        return r"`regex: \S` (a character that is not white space)"
    low = {">": number + 1, ">=": number}.get(operator)
    high = {"<": number - 1, "<=": number}.get(operator)
    if high is not None and high < 0:
        return None
    if low is not None:
        expect.min_chars = max(low, expect.min_chars or 0)
        return f"`min_chars: {low}`"
    assert high is not None
    expect.max_chars = high if expect.max_chars is None else min(high, expect.max_chars)
    return f"`max_chars: {high}`"
