"""Markdown that cannot be turned against its reader: cells, blocks and code spans with
every mention, reference, bidi control and HTML neutralised, length limits, and fenced diffs.

Every report casegate writes (the comment, the history and drift reports) escapes through it.
"""

from __future__ import annotations

import html
import re
import textwrap

from tabulate import tabulate

#: GitHub refuses comment bodies over 65,536 characters; keep a margin.
COMMENT_LIMIT = 60_000


ROWS_PER_TABLE = 50


CELL_LIMIT = 240


OUTPUT_LIMIT = 1_200


#: the ruler section's share of a comment; it is never dropped, only shortened
RULER_LIMIT = 12_000


ZWSP = "\u200b"


# `$` opens GitHub's inline math, which can typeset text of any size and colour.
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_\[\]|~$])")


_MENTION = re.compile(r"@(?=[A-Za-z0-9])")


_REFERENCE = re.compile(r"#(?=\d)|(?<![A-Za-z0-9])GH(?=-\d)", re.IGNORECASE)


# Bidirectional controls reorder what a reader sees ("Trojan Source"): dropped.
_BIDI = dict.fromkeys(
    map(ord, "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
)


# Shown as it is inside `…`: no backtick (it would close the span), no pipe (it splits
# a table row even there), nothing GitHub could read as a mention or a reference, and
# single spaces only between words (a code span trims and collapses them).
_CODE_CHAR = r"[\w.:/+=,;()\[\]{}!?%^~*'\"$…-]"


_PLAIN_CODE = re.compile(rf"{_CODE_CHAR}+(?: {_CODE_CHAR}+)*")


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def neutralise(text: str) -> str:
    """Stop @mentions and #123 (or GH-123) references from notifying or linking."""
    return _REFERENCE.sub(lambda m: m.group(0) + ZWSP, _MENTION.sub("@" + ZWSP, text))


def html_text(text: str | None, limit: int) -> str:
    """Untrusted text on one line inside HTML (no markdown is read there)."""
    flat = " ".join((text or "").translate(_BIDI).split())
    return neutralise(html.escape(truncate(flat, limit), quote=False))


def cell(text: str | None, limit: int = CELL_LIMIT) -> str:
    """Untrusted text made safe on one line of markdown, a table cell included."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", html_text(text, limit))


def block(text: str | None, limit: int = OUTPUT_LIMIT) -> str:
    """Untrusted multi-line text as an HTML <pre> block (no markdown inside)."""
    if text is None:
        return "<pre>(no output)</pre>"
    shown = truncate(text.translate(_BIDI), limit)
    return "<pre>" + neutralise(html.escape(shown, quote=False)) + "</pre>"


def code(text: str, limit: int = CELL_LIMIT) -> str:
    """Any string (a case id, a system name, a path) as inline code, safe on one line.

    Plain identifiers become `…`, exactly as written; anything else (a backtick,
    a pipe, `<`, `@`, a line break …) is escaped into <code>…</code> instead.
    """
    if len(text) <= limit and _PLAIN_CODE.fullmatch(text):
        return f"`{text}`"
    return f"<code>{cell(text, limit)}</code>"


def money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.4f}"


def table(headers: list[str], rows: list[list[str]], total: int) -> str:
    body = tabulate(
        rows[:ROWS_PER_TABLE], headers=headers, tablefmt="github", disable_numparse=True
    )
    if total > ROWS_PER_TABLE:
        body += f"\n\n_… and {total - ROWS_PER_TABLE} more in the results file._"
    return body


#: the most of a diff a case's details show, and the width prose is wrapped to
DIFF_LIMIT = 2_400


DIFF_WIDTH = 100


_BACKTICKS = re.compile(r"`+")


def diff_block(lines: list[str], limit: int = DIFF_LIMIT) -> tuple[str, int]:
    """Untrusted diff lines as a fenced ```diff block of at most `limit` characters
    inside, and how many lines it does not show in full.

    A fence closes only on a line of at least as many backticks as opened it, so it
    is one longer than any run inside. Inside, nothing is read as markdown or HTML;
    bidirectional controls are dropped, mentions, references and HTML comments
    (a marker) neutralised, and long lines wrapped (a code block would scroll them
    sideways), each piece keeping its line's "+", "-" or " ".
    """
    shown: list[str] = []
    used = 0
    for index, line in enumerate(lines):
        # Shown as text in the fence, but no second casegate marker, even there.
        safe = neutralise(line.translate(_BIDI)).replace("<!--", f"<!{ZWSP}--")
        pieces = _wrapped(safe)
        for piece in pieces:
            if used + len(piece) + 1 > limit:
                body = "\n".join(shown)
                return _fenced(body), len(lines) - index
            shown.append(piece)
            used += len(piece) + 1
    return _fenced("\n".join(shown)), 0


def _wrapped(line: str) -> list[str]:
    """A diff line in pieces of at most DIFF_WIDTH characters, each with the line's
    marker and indent."""
    if len(line) <= DIFF_WIDTH or line.startswith("@@"):
        return [line]
    marker, text = line[:2], line[2:]
    indent = text[: len(text) - len(text.lstrip())][:40]
    width = DIFF_WIDTH - len(marker) - len(indent)
    return [marker + indent + piece for piece in textwrap.wrap(text.strip(), width)]


def _fenced(body: str) -> str:
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}diff\n{body}\n{fence}"
