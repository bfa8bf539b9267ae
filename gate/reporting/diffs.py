"""What changed between two outputs: by lines for JSON, by words for prose.

A JSON document (an object or an array) is pretty-printed with sorted keys before
it is compared, so a reordered key or a changed indent is no change and a changed
value is one line. Everything else is prose, compared word by word. A `Diff` holds
every unit of both sides, so it can be rendered with as much context as a reader
needs, and either side can be rebuilt from it.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

Op = Literal[" ", "-", "+"]
Kind = Literal["lines", "words"]

#: Words, runs of spaces and single punctuation marks: they cover the text exactly.
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
#: difflib's exact matcher is quadratic on repetitive text; past this many unit pairs
#: its "junk" heuristic (popular units cannot anchor a match) keeps a diff fast.
EXACT_LIMIT = 2_000 * 2_000


@dataclass(frozen=True, slots=True)
class Run:
    """Consecutive units (lines with their line ends; or words, spaces and punctuation)
    that are unchanged (" "), only in the old text ("-") or only in the new ("+")."""

    op: Op
    units: tuple[str, ...]

    @property
    def text(self) -> str:
        return "".join(self.units)


@dataclass(frozen=True, slots=True)
class Diff:
    kind: Kind
    #: empty when the two sides are the same
    runs: tuple[Run, ...]

    def __bool__(self) -> bool:
        return bool(self.runs)

    def old(self) -> str:
        """The old side as compared (a JSON document pretty-printed)."""
        return "".join(run.text for run in self.runs if run.op != "+")

    def new(self) -> str:
        return "".join(run.text for run in self.runs if run.op != "-")

    def lines(self, context: int | None = None) -> list[str]:
        """The diff as lines starting "- ", "+ " or "  ", each unchanged stretch cut to
        `context` lines (or words) beside a change, a cut shown as a line "@@ … @@"."""
        out: list[str] = []
        for op, text in self._shown(context):
            if op == "@":
                out.append(f"@@ {text} @@")
                continue
            lines = text.splitlines() or [""]
            if self.kind == "words":  # spaces at the edges of a run of words show nothing
                lines = [line.strip() for line in lines]
            out.extend(f"{op} {line}".rstrip() for line in lines)
        return out

    def sides(self) -> list[str]:
        """Both sides whole, as lines "- " (the old, removed words marked [-…-]) then "+ "
        (the new, added words marked {+…+}): a short answer reads as its two versions, not
        as a line per changed piece. Spaces at a change's edges stay outside its marks."""
        old = "".join(_marked(run, "[-", "-]") for run in self.runs if run.op != "+")
        new = "".join(_marked(run, "{+", "+}") for run in self.runs if run.op != "-")
        return [
            *(f"- {line}".rstrip() for line in old.splitlines() or [""]),
            *(f"+ {line}".rstrip() for line in new.splitlines() or [""]),
        ]

    def inline(self, mark: Callable[[Op, str], str], context: int | None = None) -> str:
        """Running text, each piece as `mark(op, text)` (op " " for unchanged text), each
        unchanged stretch cut to `context` words beside a change, a cut shown as " … "."""
        return "".join(" … " if op == "@" else mark(op, text) for op, text in self._shown(context))

    def _shown(self, context: int | None) -> Iterator[tuple[Op | Literal["@"], str]]:
        """(op, text) to show: changes whole, unchanged runs cut to `context` units
        beside a change; ("@", what was cut) stands for a cut."""
        if context is None:
            context = 3 if self.kind == "lines" else 12
        last = len(self.runs) - 1
        for index, run in enumerate(self.runs):
            if run.op != " ":
                yield run.op, run.text
                continue
            # Where each line, or each word (what stands between spaces), starts.
            counted = [
                i
                for i, unit in enumerate(run.units)
                if self.kind == "lines"
                or (not unit.isspace() and (i == 0 or run.units[i - 1].isspace()))
            ]
            head = context if index > 0 else 0  # what follows the change before
            tail = context if index < last else 0  # what precedes the change after
            if len(counted) - head - tail < max(MIN_CUT, context // 2):
                yield " ", run.text
                continue
            cut_from = counted[head] if head else 0
            cut_to = counted[-tail] if tail else len(run.units)
            before, after = "".join(run.units[:cut_from]), "".join(run.units[cut_to:])
            if head:
                yield " ", before if self.kind == "lines" else before.rstrip()
            hidden = len(counted) - head - tail
            unit = "line" if self.kind == "lines" else "word"
            yield "@", f"{hidden} unchanged {unit}{'' if hidden == 1 else 's'}"
            if tail:
                yield " ", after if self.kind == "lines" else after.lstrip()


def _marked(run: Run, opening: str, closing: str) -> str:
    if run.op == " ":
        return run.text
    core = run.text.strip()
    if not core:  # only spaces changed: shown as they are
        return run.text
    start = run.text.index(core)
    return f"{run.text[:start]}{opening}{core}{closing}{run.text[start + len(core) :]}"


#: an unchanged stretch is cut only when that hides at least this many lines or words
#: (and at least half the context: a cut should save more than it costs to read)
MIN_CUT = 3


def json_form(text: str) -> str | None:
    """A JSON object or array, pretty-printed with sorted keys; None for anything else."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        return json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    except (ValueError, RecursionError):
        return None


def diff_texts(old: str, new: str) -> Diff:
    """Line by line when either side is a JSON document, else word by word."""
    old_json, new_json = json_form(old), json_form(new)
    if old_json is None and new_json is None:
        return diff_units("words", _TOKEN.findall(old), _TOKEN.findall(new))
    old_text, new_text = old_json or old, new_json or new
    return diff_units("lines", old_text.splitlines(True), new_text.splitlines(True))


def diff_units(kind: Kind, old: Sequence[str], new: Sequence[str]) -> Diff:
    """The runs that turn `old` into `new`; none when they are equal."""
    if list(old) == list(new):
        return Diff(kind, ())
    exact = len(old) * len(new) <= EXACT_LIMIT
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=not exact)
    runs: list[Run] = []
    removed: list[str] = []
    added: list[str] = []
    opcodes = matcher.get_opcodes()
    for position, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        same = old[i1:i2] if tag == "equal" else ()
        between = 0 < position < len(opcodes) - 1
        if same and not (kind == "words" and between and all(map(str.isspace, same))):
            _flush(runs, removed, added)
            runs.append(Run(" ", tuple(same)))
            continue
        # A change, or spaces between two changes: "[-store credit-]{+a refund+}"
        # reads better than "[-store-]{+a+} [-credit-]{+refund+}".
        removed.extend(old[i1:i2])
        added.extend(new[j1:j2])
    _flush(runs, removed, added)
    return Diff(kind, tuple(_slid(runs) if kind == "words" else runs))


def _flush(runs: list[Run], removed: list[str], added: list[str]) -> None:
    if removed:
        runs.append(Run("-", tuple(removed)))
    if added:
        runs.append(Run("+", tuple(added)))
    removed.clear()
    added.clear()


def _slid(runs: list[Run]) -> list[Run]:
    """Each lone insertion or deletion moved along the text it repeats to where it reads
    best: "let-down. {+Here is a code. +}Send", not "let-down{+. Here is a code+}. Send"."""
    ops: list[Op] = [" ", *(run.op for run in runs), " "]  # unchanged, maybe empty, at the ends
    parts = [[], *(list(run.units) for run in runs), []]
    for index in range(1, len(parts) - 1):
        if ops[index] == " " or ops[index - 1] != " " or ops[index + 1] != " ":
            continue  # unchanged, or part of a replacement: stays where it is
        before, change, after = parts[index - 1], parts[index], parts[index + 1]
        seq, start, size = [*before, *change, *after], len(before), len(change)
        first = last = start
        while first > 0 and seq[first - 1] == seq[first + size - 1]:
            first -= 1
        while last + size < len(seq) and seq[last] == seq[last + size]:
            last += 1
        best = max(
            range(first, last + 1),
            key=lambda at: (_edge(seq, at) + _edge(seq, at + size), at == start),
        )
        parts[index - 1] = seq[:best]
        parts[index] = seq[best : best + size]
        parts[index + 1] = seq[best + size :]
    return [Run(op, tuple(units)) for op, units in zip(ops, parts, strict=True) if units]


_SENTENCE_END = frozenset(".!?:;")


def _edge(seq: Sequence[str], at: int) -> int:
    """How well a change's edge sits before `seq[at]`: best at a line or sentence break,
    then between words; worst inside a word."""
    if at in (0, len(seq)):
        return 4
    left, right = seq[at - 1], seq[at]
    if left.isspace():
        if "\n" in left or (at >= 2 and seq[at - 2] in _SENTENCE_END):
            return 3
        return 2
    return 1 if right.isspace() else 0
