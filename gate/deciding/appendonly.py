"""Whether a change to the history export only appends to it.

The export is append-only (gate.history.export): every line the base commit's export
holds must still open the head's, word for word and in order. A pull request that
changes, removes, reorders or inserts before a line the base had rewrites what the
report believes about the past; `rewritten_lines` lists each such base line, for the
ruler to show as a loosening change. Pure: bytes in, records out; no file is read.

Lines are split at `\n` as the export's reader splits them, so a `\r` is part of its
line. Appending is fine however it is done: a line repeated word for word, blank lines,
or new lines after a base whose last line had no newline (`history add` supplies it).
A blank line of the base that is removed or changed is reported like any other.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from gate.files import parse_json
from gate.yamlfile import printable

#: Past this many lines on both sides of the first difference, the report says what
#: became of each base line by position instead of aligning the two (difflib's matcher
#: can take quadratic time on lines that repeat).
ALIGN_LIMIT = 100_000


@dataclass(frozen=True, slots=True)
class Rewrite:
    """A line of the base's export that the head changed or removed."""

    path: str
    #: its number in the base's export, 1-based
    line: int
    #: "changed": the head has another line (or inserted lines) in its place;
    #: "removed": the head has no line there any more
    kind: Literal["changed", "removed"]
    #: what happened, in a few words: `removed (case 'refund-window', run of 2026-…)`
    text: str

    def message(self) -> str:
        """One line: `history/support.jsonl:12: removed (case 'refund-window', run of …)`."""
        return f"{self.path}:{self.line}: {self.text}"


def rewritten_lines(base: bytes, head: bytes, path_shown: str) -> list[Rewrite]:
    """Every line of `base` that `head` does not keep in place, in base order (an empty
    list: the head only appends). `path_shown` names the export in each record."""
    old, new = _lines(base), _lines(head)
    kept = 0
    for before, after in zip(old, new, strict=False):
        if before != after:
            break
        kept += 1
    if kept == len(old):
        return []
    old_rest, new_rest = old[kept:], new[kept:]
    if min(len(old_rest), len(new_rest)) > ALIGN_LIMIT:
        return _by_position(old, new, kept, path_shown)
    found: dict[int, Rewrite] = {}
    inserted: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, old_rest, new_rest)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "insert" and kept + i1 < len(old):  # not at the end: before a base line
            inserted[kept + i1] = j2 - j1
        elif tag in ("delete", "replace"):
            for index in range(i1, i2):
                # A replaced block's first lines have a line in their place; the rest none.
                kind: Literal["changed", "removed"] = (
                    "changed" if tag == "replace" and index - i1 < j2 - j1 else "removed"
                )
                number = kept + index
                found[number] = Rewrite(
                    path_shown, number + 1, kind, f"{kind} ({_what(old[number])})"
                )
    for number, count in inserted.items():
        if number not in found:
            text = f"{count} line(s) inserted before it ({_what(old[number])})"
            found[number] = Rewrite(path_shown, number + 1, "changed", text)
    return [found[number] for number in sorted(found)]


def appended_lines(base: bytes, head: bytes) -> tuple[int, int]:
    """(how many lines with content `head` adds after `base`'s, the 1-based number of the
    first); (0, 0) when it adds none. Meant for a head that only appends."""
    old, new = _lines(base), _lines(head)
    added = [number for number, line in enumerate(new[len(old) :], len(old) + 1) if line.strip()]
    return (len(added), added[0]) if added else (0, 0)


def summary(rewrites: Sequence[Rewrite], limit: int = 5) -> str:
    """The rewrites in one line, the first `limit` of them named."""
    shown = ", ".join(f"line {r.line} {r.text}" for r in rewrites[:limit])
    more = f", and {len(rewrites) - limit} more" if len(rewrites) > limit else ""
    where = rewrites[0].path if rewrites else "the history export"
    return (
        f"{where}: {len(rewrites)} line(s) the base commit's history holds were rewritten "
        f"({shown}{more}); the history is only ever appended to"
    )


def _lines(data: bytes) -> list[bytes]:
    """The export's lines as its reader splits them; a final newline ends the last line
    and starts none."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return lines


def _by_position(old: list[bytes], new: list[bytes], kept: int, path: str) -> list[Rewrite]:
    found = []
    for index in range(kept, len(old)):
        if index >= len(new):
            found.append(Rewrite(path, index + 1, "removed", f"removed ({_what(old[index])})"))
        elif new[index] != old[index]:
            found.append(Rewrite(path, index + 1, "changed", f"changed ({_what(old[index])})"))
    return found


def _what(line: bytes) -> str:
    """A base line in a few words: its case and run when it is a record, else its start."""
    text = line.decode("utf-8", "replace")
    try:
        record = parse_json(text)  # deep nesting and long numbers are a ValueError here
    except ValueError:
        record = None
    if isinstance(record, dict):
        case, created = record.get("case"), record.get("created_at")
        if isinstance(case, str) and isinstance(created, str):
            return f"case {_brief(case, 60)}, run of {_brief(created, 40)}"
    return "a blank line" if not text.strip() else _brief(text, 60)


def _brief(text: str, limit: int) -> str:
    text = printable(text)
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
