"""The job log and the step summary under GitHub Actions, written safely.

On a runner, any line a step prints that starts with `::` is a workflow command
(`::error::`, `::add-mask::`, `::stop-commands::` …). Text a pull request
controls — case ids, reasons, model output, a system's own error messages —
must never start such a line, nor break out of one casegate writes. So:
untrusted text inside a command is escaped as the actions toolkit does, and
untrusted text printed on its own lines is `fence`d, which turns command
processing off around it. GitHub also caps what a step may show (annotations,
the summary's size); going over hides things silently, so the caps are kept
here with a line that says what was left out.
"""

from __future__ import annotations

import re
import secrets  # the standard library's, for the fence's token (not gate.secrets)
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

#: GitHub refuses a step summary over 1024 KiB ("supports content up to a size of 1024k").
SUMMARY_LIMIT = 1024 * 1024
#: GitHub shows at most 10 error, 10 warning and 10 notice annotations per step, 50 per job.
ANNOTATIONS_PER_LEVEL = 10
ANNOTATIONS_PER_JOB = 50
#: so that one file with many failing cases cannot crowd out the others
ANNOTATIONS_PER_FILE = 10

# Everything str.splitlines() breaks on: a log viewer or a runner may too.
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def flatten(text: str) -> str:
    """`text` on one line: every line break (CR, LF, U+2028 …) becomes a space, and the
    runner's older command form, `##[command]`, which it reads anywhere in a line, is
    broken up (`#\\#[`)."""
    return _LINE_BREAKS.sub(" ", text).replace("##[", LEGACY_BROKEN)


#: `##[` as printed: the runner's legacy command parser looks for `##[` in every line
LEGACY_BROKEN = "#\\#["


def escape_data(text: str) -> str:
    """A workflow command's message, escaped as the actions toolkit does."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (`file=`, `title=` …), escaped as the toolkit does."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **properties: Any) -> str:
    """One workflow command line, e.g. `::error file=a.yaml,line=3::why`.

    Message and properties are escaped, so no value can end the line or the command;
    properties that are None are left out.
    """
    props = ",".join(
        f"{key}={escape_property(str(value))}"
        for key, value in properties.items()
        if value is not None
    )
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def fence(text: str) -> str:
    """`text` between `::stop-commands::TOKEN` and `::TOKEN::`: printed, none of it is a command.

    The token is fresh and unguessable each time because whoever knows it can
    turn commands back on: text that contained `::TOKEN::` on a line of its own
    would end the fence early and everything after it would run as commands
    again (masking words, forging errors). A token drawn after the text was
    written cannot be in it, short of a 1-in-2^128 guess; it is checked anyway.
    """
    token = secrets.token_hex(16)
    while token in text:
        token = secrets.token_hex(16)
    body = text if text.endswith("\n") else text + "\n"
    return f"::stop-commands::{token}\n{body}::{token}::"


# --- annotations ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Annotation:
    """One annotation on a file of the pull request (or on the run, without `file`)."""

    level: Literal["error", "warning", "notice"]
    message: str
    file: str | None = None
    line: int | None = None
    title: str | None = None

    def command(self) -> str:
        return command(self.level, self.message, file=self.file, line=self.line, title=self.title)


def cap_annotations(
    items: Sequence[Annotation],
    per_file: int = ANNOTATIONS_PER_FILE,
    total: int = ANNOTATIONS_PER_JOB,
    per_level: int = ANNOTATIONS_PER_LEVEL,
) -> tuple[list[Annotation], str | None]:
    """The first annotations of each file, within GitHub's limits, and a line counting the rest.

    GitHub drops annotations over its limits without a word; this keeps the
    first `per_file` of each file, at most `per_level` of each level and `total`
    in all, in their order, and says how many were left out (None when none were).
    """
    kept: list[Annotation] = []
    by_file: Counter[str | None] = Counter()
    by_level: Counter[str] = Counter()
    for item in items:
        if len(kept) < total and by_file[item.file] < per_file and by_level[item.level] < per_level:
            kept.append(item)
            by_file[item.file] += 1
            by_level[item.level] += 1
    left_out = len(items) - len(kept)
    if not left_out:
        return kept, None
    return kept, (
        f"{left_out} more annotation(s) not shown (GitHub shows at most {per_level} of each "
        "kind per step): the step summary and the results file list every case"
    )


# --- the step summary ------------------------------------------------------------------

_CLOSERS = (("<pre>", "</pre>"), ("<details>", "</details>"))


def _cut_note(cut: int, total: int, limit: int) -> str:
    return (
        f"_casegate cut this summary: the last {cut:,} of {total:,} bytes are left out to fit "
        f"GitHub's {limit:,}-byte step-summary limit; the results file has everything._\n"
    )


def fit_summary(markdown: str, limit: int = SUMMARY_LIMIT) -> str:
    """`markdown` within `limit` bytes of UTF-8, or its head and a closing line saying what was cut.

    The cut falls on a line boundary, and a `<pre>` or `<details>` it leaves
    open is closed, so the closing line renders as a paragraph of its own.
    """
    # A lone surrogate (from a decoded byte soup) cannot be written as UTF-8: it becomes "?".
    data = markdown.encode("utf-8", errors="replace")
    if len(data) <= limit:
        return data.decode("utf-8")
    closers = "".join(close + "\n" for _, close in _CLOSERS)
    # The longest the note can be: the count it gives is at most the total.
    reserve = len(_cut_note(len(data), len(data), limit).encode()) + len(closers) + 1
    if reserve > limit:  # no room for any of it: say so, if even that fits
        note = _cut_note(len(data), len(data), limit)
        return note if len(note.encode()) <= limit else ""
    head = data[: max(0, limit - reserve)].decode("utf-8", errors="ignore")
    head = head[: head.rfind("\n") + 1]  # whole lines only ("" when there is no line break)
    for opening, close in _CLOSERS:
        if head.count(opening) > head.count(close):
            head += close + "\n"
    cut = len(data) - len(head.encode("utf-8"))
    return head + "\n" + _cut_note(cut, len(data), limit)
