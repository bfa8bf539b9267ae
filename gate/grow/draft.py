"""A draft case: an id from its content, the input, a proposed `expect` marked as a draft,
`tags: [regression]`, the placeholder note, where it came from and when.

The YAML is written by PyYAML's safe dumper, so text from the source (a `!!python/object`
tag, a `{{ template }}`, a line break, an escape sequence) is a quoted string in the
file, never structure; what the comments quote is escaped onto one line.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gate.grow.exchange import Exchange
from gate.reporting.show import one_line
from gate.suite.cases import MAX_ID_LENGTH, NOTE_PLACEHOLDER

TAG = "regression"
#: words of the user's text an id is made of, before its hash
ID_WORDS = 6
#: characters of the wrong output a proposed `not_contains` quotes
EXCERPT_CHARS = 80
ID_PATTERN = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass(frozen=True, slots=True)
class Draft:
    case: dict[str, Any]
    #: comment lines written above a key of the case (already one escaped line each)
    comments: dict[str, list[str]] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return str(self.case["id"])


def propose_id(text: str, salt: str = "") -> str:
    """A slug of the text's first words and a short hash of the whole: the same request
    gives the same id, so adding it twice is refused as a duplicate id."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())[:ID_WORDS]
    slug = "-".join(words)[:48].strip("-") or "case"
    digest = hashlib.sha256((salt + text).encode("utf-8", "surrogatepass")).hexdigest()[:6]
    return f"{slug}-{digest}"


def id_problem(case_id: str) -> str | None:
    """Why `case_id` cannot be a case id (a path, a space, too long), or None."""
    if not ID_PATTERN.fullmatch(case_id) or case_id in (".", ".."):
        return f"{one_line(case_id)[:80]!r} is not a case id: use letters, digits, '.', '_' and '-'"
    if len(case_id) > MAX_ID_LENGTH:
        return f"a case id is at most {MAX_ID_LENGTH} characters, not {len(case_id)}"
    return None


def commit_of(folder: Path) -> str | None:
    """The repository's current commit, or None outside a repository (or without git)."""
    from gate.deciding.basetree import git
    from gate.errors import CasegateError

    try:
        found = git("rev-parse", "--verify", "--quiet", "HEAD", cwd=folder)
    except CasegateError:  # no git on this machine
        return None
    sha = found.stdout.decode(errors="replace").strip()
    return sha if found.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", sha) else None


def provenance(exchange: Exchange, commit: str | None) -> str:
    """`casegate add from otel traces.json span 5fb3… at commit 1a2b…`."""
    where = exchange.where()
    if exchange.line is not None and exchange.ids:
        where += f" ({exchange.id_kind()} {exchange.ids[0]})"
    at = f" at commit {commit}" if commit else " (not in a git repository)"
    return f"casegate add from {exchange.kind} {where}{at}"


def excerpt(text: str) -> str:
    """The first line of `text` that says something, cut at a word near EXCERPT_CHARS."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if len(line) <= EXCERPT_CHARS:
        return line
    cut = line[:EXCERPT_CHARS]
    return cut.rsplit(" ", 1)[0] if " " in cut[20:] else cut


def proposed_expect(exchange: Exchange) -> tuple[dict[str, Any], list[str]]:
    """An `expect` a person confirms, from what went wrong, and comments saying so."""
    said = ["DRAFT expect: proposed by `casegate add`; confirm or rewrite before committing."]
    if exchange.error:
        said.append(f"the source recorded a failure: {one_line(exchange.error)[:200]}")
    if exchange.flagged:
        said.append(f"flagged by a user: {one_line(exchange.flagged)[:200]}")
    if exchange.tool_calls:
        said.append(f"tool calls made: {one_line(', '.join(exchange.tool_calls))[:200]}")
    wrong = excerpt(exchange.output or "")
    if wrong:
        said.append(f"the output was: {one_line((exchange.output or '')[:300])}")
        said.append("not_contains below keeps that answer from coming back; say what the")
        said.append("answer must do instead (contains, judge, tool_called …)")
        return {"not_contains": wrong}, said
    said.append("the source holds no text output: an answer at all is the least to expect")
    return {"min_words": 1}, said


def today() -> dt.date:
    """The date a draft is stamped with (UTC, as every date casegate writes)."""
    return dt.datetime.now(dt.UTC).date()


def make_case(
    case_id: str,
    case_input: dict[str, Any],
    expect: dict[str, Any],
    origin: str,
    today: dt.date,
) -> dict[str, Any]:
    return {
        "id": case_id,
        "input": case_input,
        "expect": expect,
        "tags": [TAG],
        "note": NOTE_PLACEHOLDER,
        "provenance": origin,
        "added": today,
    }


class _Dumper(yaml.SafeDumper):
    """Multi-line text as `|` blocks where YAML allows it (PyYAML falls back to a quoted
    string for text a block cannot hold), so a pasted conversation stays readable."""


#: bidirectional controls: YAML takes them as printable, but shown raw they reorder what a
#: reviewer reads (a "trojan source"), so a string holding one is double-quoted, where
#: they are written as escapes
_MARKS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


#: control characters and the line breaks YAML knows besides \n (NEL, U+2028, U+2029): a
#: plain or block scalar folds or drops some of them, a double-quoted one escapes them all
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def _text(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    quoted = _MARKS.search(data) or _CONTROLS.search(data)
    style = '"' if quoted else "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _text)


def render(drafts: list[Draft], header: list[str]) -> str:
    """The case file: comment lines, then the drafts as a YAML list."""
    lines = [f"# {one_line(line)}" for line in header]
    for draft in drafts:
        lines.append("")
        for index, (key, value) in enumerate(draft.case.items()):
            lines.extend(f"  # {one_line(c)}" for c in draft.comments.get(key, []))
            body = yaml.dump(
                {key: value}, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=2**31
            )
            body = _MARKS.sub(lambda mark: f"\\u{ord(mark[0]):04x}", body)
            # A text ending in blank lines is dumped as a `|+` block, which PyYAML closes
            # with a `...` document end: inside the list it would end the file there. The
            # blank lines themselves are the text's and stay (only the last newline goes).
            if body.endswith("\n...\n"):  # a line of its own at column 0: the document
                body = body[: -len("...\n")]  # end after a `|+` block, never the text's
            body = body.removesuffix("\n")
            for number, text in enumerate(body.split("\n")):
                lines.append(("- " if index == 0 and number == 0 else "  ") + text)
    return "\n".join(lines) + "\n"
