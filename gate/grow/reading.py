"""Reading a source file as untrusted data: bounded, parsed as JSON only, and every
problem one `file:line: problem` line (exit 2) that names the shape expected."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gate.errors import located
from gate.files import parse_json
from gate.grow.exchange import SourceError
from gate.limits import MB, read_limited
from gate.reporting.show import one_line
from gate.yamlfile import printable

#: a source file: a day of a busy service's request log, or an OTLP export of 10,000
#: spans with their messages (about 30 MB), with room to spare; parsing costs several
#: times the size in memory, so a larger export is split before it is read
MAX_SOURCE_BYTES = 256 * MB
#: one JSONL line: a request with a long conversation and its tools is well under 1 MB
MAX_LINE_BYTES = 8 * MB
#: JSON values one source may hold, counted as its `{`, `[` and `,` (an upper bound: each
#: value but the first in a list or object follows a comma): about 300 MB once parsed at
#: worst, and some 60,000 OpenTelemetry spans (10,000 take about 450,000)
MAX_VALUES = 3_000_000
#: problems listed before the rest are counted
MAX_PROBLEMS = 20


def shown(path: Path) -> str:
    """The path as printed: control characters escaped (the name is the user's, but a
    file name can hold an escape sequence as well as any text can)."""
    return one_line(str(path))


def read_source(path: Path) -> str:
    """The file's text; SourceError naming it when it is missing, too large or not UTF-8."""
    name = shown(path)
    fix = "split it (one export per day or per service) and add from each part"
    try:
        data = read_limited(path, MAX_SOURCE_BYTES, "a source file", fix, SourceError, name)
    except FileNotFoundError:
        raise SourceError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise SourceError(f"{name}: is a folder; give the export file") from None
    except OSError as exc:
        raise SourceError(f"{name}: cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SourceError(located(name, line, "not UTF-8 text; export it as JSON")) from None
    # What a parsed value costs is its values (~50-100 bytes of Python each against 3-5 of
    # JSON), not its bytes: 32 MB of `{},` took a gigabyte, of `"ab",` 600 MB. Counted
    # before parsing, refused past the cap.
    values = text.count("{") + text.count("[") + text.count(",")
    if values > MAX_VALUES:
        raise SourceError(
            f"{name}: holds about {values:,} JSON values, more than the {MAX_VALUES:,} one "
            "source may (each costs memory once read): split it (one export per day or per "
            "service) and add from each part"
        )
    return text


#: a lone surrogate: JSON may escape one (`"\\ud800"`), Python holds it, but no file or
#: terminal can take it, so it becomes U+FFFD, the replacement character, on reading
_LONE = re.compile("[\ud800-\udfff]")
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def parsed(text: str) -> Any:
    """The JSON value of `text` (parse_json's bounds), with lone surrogates replaced."""
    value = parse_json(text)
    return _whole(value) if _ESCAPED_SURROGATE.search(text) else value


def _whole(value: Any) -> Any:
    # Depth is bounded by parse_json (MAX_DEPTH), so recursion is safe here.
    if isinstance(value, str):
        return _LONE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_whole(item) for item in value]
    if isinstance(value, dict):
        return {_whole(key): _whole(item) for key, item in value.items()}
    return value


def json_lines(
    path: Path, text: str, expected: str, problems: list[str]
) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) for each non-blank line; a line that is not JSON (or is
    too long) is added to `problems`, naming `expected`, for the caller to raise with the
    problems it finds itself, in line order."""
    name = shown(path)
    for number, raw in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        if len(problems) >= MAX_PROBLEMS:
            return
        if not raw.strip():
            continue
        if len(raw) > MAX_LINE_BYTES:
            size = f"a line of {len(raw) / MB:,.1f} MB, more than the {MAX_LINE_BYTES / MB:,.0f} MB"
            problems.append(located(name, number, f"{size} one record may be; expected {expected}"))
            continue
        try:
            value = parsed(raw)
        except ValueError as exc:
            problems.append(located(name, number, f"not JSON ({_brief(exc)}); expected {expected}"))
            continue
        yield number, value


def documents(path: Path, expected: str) -> list[tuple[int, Any]]:
    """One JSON document (line 1), or one per line (JSONL): exports come as either (an
    API's JSON answer, the OpenTelemetry Collector's file exporter writes one export
    request per line)."""
    text = read_source(path)
    try:
        return [(1, parsed(text))]
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise SourceError(
                located(shown(path), exc.lineno, f"not JSON ({exc.msg}); expected {expected}")
            ) from None
    except ValueError as exc:
        raise SourceError(located(shown(path), 1, f"{_brief(exc)}; expected {expected}")) from None
    problems: list[str] = []
    found = list(json_lines(path, text, expected, problems))
    if problems:
        raise SourceError(problems)
    return found


def _brief(exc: ValueError) -> str:
    text = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
    return printable(text[:200])


def problem(path: Path, line: int | None, message: str) -> str:
    return located(shown(path), line, message)
