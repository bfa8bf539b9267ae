"""YAML loading that remembers where each mapping and key came from.

Error messages name `file:line`, so the loader keeps the line of every mapping
and of each of its keys. It reads libyaml's C parser's events (the pure-Python
parser when libyaml is missing) and builds the Python values straight from them:
no node graph is held, so a document costs about what its values cost (the graph,
with two marks per node, took 30 times the file's size).

A document is measured while it is built: nesting deeper than MAX_DEPTH, aliases
that would expand it by more than MAX_ALIAS_NODES nodes (a "billion laughs"), or
values that would take more than MAX_YAML_MEMORY bytes are refused with the line
where it happens, before the rest is read. A scalar Python cannot hold
(`2026-02-30`, an integer of 5,000 digits) is refused with its line too. Only plain
lists and mappings are built: a collection tagged `!!set`, `!!omap` or anything
else is refused (no casegate file has a use for them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import yaml
from yaml.events import (
    AliasEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

from gate.files import MAX_DEPTH
from gate.limits import MAX_YAML_BYTES, MB, over
from gate.yamlloader import (
    MAX_ALIAS_NODES,
    LineDict,
    YamlSyntaxError,
    _LineLoader,
    _ValueProblem,
)

# What load_yaml's callers use, LineDict and YamlSyntaxError included (gate.yamlloader has them).
__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_YAML_MEMORY",
    "LineDict",
    "YamlSyntaxError",
    "dotted",
    "line_of",
    "load_yaml",
    "load_yaml_file",
    "printable",
]

#: How much memory a document's values may take, estimated as they are built (see
#: `_Builder`). The example suite's case files are estimated at 8 bytes a byte of text
#: (tracemalloc counts 4), so a case file at its 20 MB limit fits with room to spare;
#: what it stops is a file dense with tiny collections (`{a: 1}, ` is 8 bytes of text and
#: 240 in memory), whose 20 MB would take over 600 MB.
MAX_YAML_MEMORY = 256 * MB


_TAG = "tag:yaml.org,2002:"
_STR, _NULL, _BOOL, _INT, _FLOAT = (_TAG + kind for kind in ("str", "null", "bool", "int", "float"))
_MERGE_TAG, _VALUE_TAG = _TAG + "merge", _TAG + "value"
_PLAIN_COLLECTIONS = frozenset({None, "!", _TAG + "map", _TAG + "seq"})
_SAFE = yaml.constructor.SafeConstructor
_BOOLS = _SAFE.bool_values


class _Key:
    """A key that is not a value: `<<` (merge the mapping that follows) or `=`."""

    def __init__(self, tag: str) -> None:
        self.tag = tag


_MERGE, _VALUE = _Key(_MERGE_TAG), _Key(_VALUE_TAG)
_NO_KEY = object()


class _Every(frozenset[str]):
    """Contains everything: a resolver for any first character makes no scalar plain text."""

    def __contains__(self, item: object) -> bool:
        return True


_EVERY = _Every()

#: Estimated bytes of what is built (CPython 3.11, 64-bit), close enough for a budget and
#: never under what tracemalloc counts (tests/test_yamlfile.py): a string 49 and its text
#: (ASCII; up to 4 bytes a character otherwise), any other scalar 32, a list 56 and 9 an
#: item (with its spare room), a LineDict 208 and 24 an entry, the key lines' dict the
#: same and 28 more an entry (a line number past 256 is an object of its own).
_STR_COST, _SCALAR_COST, _LIST_COST, _ITEM_COST = 49, 32, 56, 9
_MAPPING_COST, _ENTRY_COST, _LINE_COST = 208, 24, 28


class _Frame:
    """A list or mapping being built: its value, and what the budget needs to know."""

    __slots__ = ("anchor", "key", "key_line", "line", "merged", "size", "tallest", "value")

    def __init__(self, value: list[Any] | LineDict, line: int, anchor: str | None) -> None:
        self.value = value
        self.line = line
        self.anchor = anchor
        #: nodes in it as if every alias were written out (itself included)
        self.size = 1
        #: levels of lists and mappings from here down (itself included)
        self.tallest = 1
        self.key: Any = _NO_KEY
        self.key_line = line
        self.merged: set[str] | None = None


class _Builder:
    """Python values from the parser's events, measured as they are built.

    An alias is the very object its anchor built (as PyYAML's own loader gives), and
    costs nothing in memory; for the alias budget it counts as the whole of its anchor,
    since whatever walks the document (validation, hashing, JSON) walks it that often.
    """

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.resolvers = loader.yaml_implicit_resolvers
        self.wildcard = self.resolvers.get(None, [])
        #: a plain scalar starting with anything else is a string (unless `wildcard`)
        self.first_characters = frozenset(self.resolvers) if not self.wildcard else _EVERY
        #: anchor -> [value, size, tallest, line, still open]
        self.anchors: dict[str, list[Any]] = {}
        self.added_by_aliases = 0
        self.memory = 0

    def document(self) -> Any:
        """The stream's one document (None when there is none)."""
        loader = self.loader
        loader.get_event()  # the stream starts
        if loader.check_event(StreamEndEvent):
            loader.get_event()
            return None
        start = loader.get_event().start_mark  # the document starts
        value = self._value()
        loader.get_event()  # the document ends
        if not loader.check_event(StreamEndEvent):
            raise yaml.composer.ComposerError(
                "expected a single document in the stream",
                start,
                "but found another document",
                loader.get_event().start_mark,
            )
        loader.get_event()
        return value

    def _value(self) -> Any:
        get_event = self.loader.get_event
        scalar = self._scalar
        stack: list[_Frame] = []
        while True:
            event = get_event()
            kind = type(event)
            if kind is ScalarEvent:
                value = scalar(event)
                if type(value) is not str:
                    self.memory += _SCALAR_COST
                elif value.isascii():
                    self.memory += _STR_COST + len(value)
                else:
                    self.memory += _STR_COST + 28 + 4 * len(value)
                if event.anchor is not None:
                    line = event.start_mark.line + 1
                    self._anchor(event.anchor, line, [value, 1, 0, line, False])
                if stack and type(frame := stack[-1].value) is list and type(value) is not _Key:
                    # The common case in a large file, kept short: a scalar in a list.
                    if self.memory > MAX_YAML_MEMORY:
                        self._over_budget(event.start_mark.line + 1)
                    frame.append(value)
                    stack[-1].size += 1
                    self.memory += _ITEM_COST
                    continue
                size, tallest, line = 1, 0, 0
            elif kind is MappingStartEvent or kind is SequenceStartEvent:
                stack.append(self._start(event, len(stack)))
                continue
            elif kind is MappingEndEvent or kind is SequenceEndEvent:
                done = stack.pop()
                value, size, tallest, line = done.value, done.size, done.tallest, done.line
                if done.anchor is not None:
                    self.anchors[done.anchor] = [value, size, tallest, line, False]
            elif kind is AliasEvent:
                value, size, tallest = self._alias(event, len(stack))
                line = 0
            else:  # pragma: no cover - libyaml sends nothing else inside a document
                raise YamlSyntaxError(None, f"invalid YAML: unexpected {kind.__name__}")
            if not stack:
                if type(value) is _Key:
                    self._not_a_value(value, event)
                return value
            # `line` is a finished list's or mapping's first line; 0: the event's
            self._add(stack[-1], value, size, tallest, line or event.start_mark.line + 1, event)

    def _start(self, event: Any, depth: int) -> _Frame:
        """A list or mapping begins: refused when tagged, too deep or over the budget."""
        line = event.start_mark.line + 1
        if event.tag not in _PLAIN_COLLECTIONS:
            raise YamlSyntaxError(
                line,
                f"the tag {printable(event.tag)!r} is not supported here: "
                "write a plain list or mapping",
            )
        if depth >= MAX_DEPTH:
            raise YamlSyntaxError(line, f"nested more than {MAX_DEPTH} levels deep")
        built: list[Any] | LineDict
        if type(event) is MappingStartEvent:
            built = LineDict()
            built.line = line
            self.memory += _MAPPING_COST
        else:
            built = []
            self.memory += _LIST_COST
        if event.anchor is not None:
            self._anchor(event.anchor, line, [built, 0, 0, line, True])
        if self.memory > MAX_YAML_MEMORY:
            self._over_budget(line)
        return _Frame(built, line, event.anchor)

    def _add(
        self, frame: _Frame, value: Any, size: int, tallest: int, line: int, event: Any
    ) -> None:
        """Put a finished value into the list or mapping being built."""
        if self.memory > MAX_YAML_MEMORY:
            self._over_budget(line)
        frame.size += size
        if tallest >= frame.tallest:
            frame.tallest = tallest + 1
        parent = frame.value
        if type(parent) is list:
            if type(value) is _Key:
                self._not_a_value(value, event)
            parent.append(value)
            self.memory += _ITEM_COST
            return
        assert isinstance(parent, LineDict)  # frames hold lists or LineDicts
        if frame.key is _NO_KEY:  # this is a key
            if value is _MERGE:
                frame.key = _MERGE
            elif value is _VALUE:
                frame.key = "="
            else:
                frame.key = value if type(value) is str else str(value)
            frame.key_line = line
            return
        key, frame.key = frame.key, _NO_KEY
        if key is _MERGE:
            self._merge(frame, value, line)
            return
        if type(value) is _Key:
            self._not_a_value(value, event)
        if key in parent:
            raise YamlSyntaxError(frame.key_line, f"invalid YAML: duplicate key {key!r}")
        parent[key] = value
        self.memory += _ENTRY_COST
        if frame.key_line != frame.line:
            self._key_lines(parent)[key] = frame.key_line

    def _key_lines(self, mapping: LineDict) -> dict[str, int]:
        lines = getattr(mapping, "key_lines", None)
        if lines is None:
            lines = mapping.key_lines = dict.fromkeys(mapping, mapping.line)
            self.memory += _MAPPING_COST + (_ENTRY_COST + _LINE_COST) * len(mapping)
        self.memory += _ENTRY_COST + _LINE_COST
        return lines

    def _merge(self, frame: _Frame, value: Any, line: int) -> None:
        """`<<: *base` (or a list of them): the keys it names join the mapping; a key the
        mapping sets itself as well is a duplicate, and the first of several merged wins."""
        if not isinstance(value, LineDict | list):
            raise YamlSyntaxError(
                line,
                "invalid YAML: expected a mapping or list of mappings for merging, but found "
                "scalar",
            )
        sources = [value] if isinstance(value, LineDict) else value
        mapping = frame.value
        assert isinstance(mapping, LineDict)  # only a mapping takes `<<`
        merged = frame.merged = frame.merged if frame.merged is not None else set()
        for source in sources:
            if not isinstance(source, LineDict):
                found = "sequence" if isinstance(source, list) else "scalar"
                raise YamlSyntaxError(
                    line, f"invalid YAML: expected a mapping for merging, but found {found}"
                )
            for key, item in source.items():
                if key in merged:
                    continue
                if key in mapping:
                    raise YamlSyntaxError(
                        mapping.line_of(key), f"invalid YAML: duplicate key {key!r}"
                    )
                mapping[key] = item
                merged.add(key)
                self.memory += _ENTRY_COST
                source_line = source.line_of(key)
                if source_line != mapping.line:
                    self._key_lines(mapping)[key] = source_line
        if self.memory > MAX_YAML_MEMORY:
            self._over_budget(line)

    def _scalar(self, event: Any) -> Any:
        value: str = event.value
        tag = event.tag
        if tag is None or tag == "!":
            if not event.implicit[0] or value[:1] not in self.first_characters:
                return value  # quoted, a block of text, or plain text no resolver takes
            tag = self._resolve(value)
        if tag == _STR:
            return value
        try:
            if tag == _INT:
                digits = value[1:] if value[:1] in ("-", "+") else value
                if digits.isascii() and digits.isdigit() and digits[0] != "0":
                    return int(value)  # the digit limit raises here, and is worded below
            if tag == _FLOAT and "_" not in value and ":" not in value:
                return float(value)  # `.inf` and `.nan` raise here, and are read below
        except ValueError:
            pass
        if tag == _NULL:
            return None
        if tag == _BOOL and value.lower() in _BOOLS:
            return _BOOLS[value.lower()]
        if tag == _MERGE_TAG:
            return _MERGE
        if tag == _VALUE_TAG:
            return _VALUE
        # Everything else (0x1F, 1_000, dates, !!binary, tags nobody knows) through
        # PyYAML's own constructors, on a node made for the occasion.
        node = yaml.ScalarNode(tag, value, event.start_mark, event.end_mark, event.style)
        constructed = self.loader.construct_object(node, deep=True)
        self.loader.constructed_objects.clear()
        return constructed

    def _resolve(self, value: str) -> str:
        """The tag of a plain scalar, as PyYAML's resolver finds it."""
        for tag, pattern in self.resolvers.get(value[:1], ()):
            if pattern.match(value):
                return str(tag)
        for tag, pattern in self.wildcard:
            if pattern.match(value):
                return str(tag)
        return _STR

    def _anchor(self, anchor: str, line: int, entry: list[Any]) -> None:
        first = self.anchors.get(anchor)
        if first is not None:
            raise YamlSyntaxError(
                line,
                f"invalid YAML: the anchor {printable(anchor)!r} is defined twice "
                f"(first on line {first[3]})",
            )
        self.anchors[anchor] = entry

    def _alias(self, event: Any, depth: int) -> tuple[Any, int, int]:
        anchor, line = event.anchor, event.start_mark.line + 1
        found = self.anchors.get(anchor)
        if found is None:
            raise YamlSyntaxError(
                line, f"invalid YAML: found undefined alias {printable(anchor)!r}"
            )
        value, size, tallest, _, still_open = found
        if still_open:
            raise YamlSyntaxError(line, "an alias refers to a node that contains it")
        if depth + tallest > MAX_DEPTH:
            raise YamlSyntaxError(line, f"nested more than {MAX_DEPTH} levels deep")
        self.added_by_aliases += size - 1
        if self.added_by_aliases > MAX_ALIAS_NODES:
            raise YamlSyntaxError(
                line,
                f"aliases expand this document by more than {MAX_ALIAS_NODES:,} nodes "
                "(an alias bomb?); write the repeated parts out, or use fewer aliases",
            )
        return value, size, tallest

    def _not_a_value(self, key: _Key, event: Any) -> NoReturn:
        raise YamlSyntaxError(
            event.start_mark.line + 1,
            f"invalid YAML: could not determine a constructor for the tag {key.tag!r}",
        )

    def _over_budget(self, line: int) -> NoReturn:
        raise YamlSyntaxError(
            line,
            f"this document would take more than {MAX_YAML_MEMORY // MB:,} MB of memory "
            "once read (that many lists and mappings); split it into several files",
        )


#: what the parser's words usually mean, and the fix, appended to them (the words stay: a
#: search for them finds the parser's own explanations)
_PARSER_HINTS = (
    ("that cannot start any token", " (a value starting with @ or ` must be quoted)"),
    (
        "mapping values are not allowed",
        " (a line indented deeper than the keys beside it, or a value holding ': ' that "
        "needs quotes)",
    ),
    ("expected <block end>", " (a line indented less than the keys beside it: line them up)"),
    ("did not find expected key", " (a line indented differently from the keys beside it)"),
    ("could not find expected ':'", " (a line with no `key:`, or a quote left open above it)"),
    ("found unexpected end of stream", " (a quote left open)"),
)


def _hint(problem: str, text: str, mark: Any) -> str:
    index = getattr(mark, "index", None)
    at = text[index] if isinstance(index, int) and 0 <= index < len(text) else ""
    if at == "\t" and ("cannot start any token" in problem or "tab" in problem):
        return " (a tab: YAML indents with spaces only)"
    return next((fix for words, fix in _PARSER_HINTS if words in problem), "")


#: the longest source line an error shows; a longer one is cut around the column
_EXCERPT_WIDTH = 100


def _excerpt(text: str, mark: Any) -> str:
    """The line the parser stopped on and a caret under the place: two lines the CLI prints
    below the message (gate.errors.CasegateError.excerpts). Each starts with `  | `, so a
    line of the file can never begin a line of the job log (where `::` starts a workflow
    command); control characters, a tab among them, show escaped (`\\t`), which is often
    the very mistake."""
    line_no, column = getattr(mark, "line", None), getattr(mark, "column", None)
    if not isinstance(line_no, int) or not isinstance(column, int):
        return ""
    lines = text.splitlines()
    if not 0 <= line_no < len(lines):
        return ""
    source = lines[line_no]
    start = max(0, min(column - _EXCERPT_WIDTH // 2, len(source) - _EXCERPT_WIDTH))
    shown = printable(source[start : start + _EXCERPT_WIDTH])
    caret = len(printable(source[start:column]))
    return f"  | {shown}\n  | {' ' * caret}^"


def load_yaml(text: str) -> Any:
    """Parse YAML text; raises YamlSyntaxError with a 1-based line.

    Text longer than MAX_YAML_BYTES characters is refused unread (line None).
    """
    if len(text) > MAX_YAML_BYTES:
        raise YamlSyntaxError(None, over(len(text), MAX_YAML_BYTES, "a YAML document", _SPLIT))
    loader = _LineLoader(text)
    try:
        return _Builder(loader).document()
    except _ValueProblem as exc:
        mark = exc.problem_mark
        raise YamlSyntaxError(mark.line + 1 if mark else None, str(exc.problem)) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise YamlSyntaxError(
            line, f"invalid YAML: {problem}{_hint(problem, text, mark)}", _excerpt(text, mark)
        ) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow
        line = text.count("\n", 0, exc.position) + 1
        raise YamlSyntaxError(line, f"invalid YAML: {exc.reason} #x{exc.character:04x}") from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(None, "invalid YAML: " + " ".join(str(exc).split())) from None
    except RecursionError:  # pragma: no cover - only the pure-Python parser recurses
        raise YamlSyntaxError(None, f"nested more than {MAX_DEPTH} levels deep") from None
    finally:
        loader.dispose()


_SPLIT = "split it into several files"


def load_yaml_file(path: Path) -> Any:
    """A YAML file no larger than MAX_YAML_BYTES (YamlSyntaxError without a line if not)."""
    size = path.stat().st_size
    if size > MAX_YAML_BYTES:
        raise YamlSyntaxError(None, over(size, MAX_YAML_BYTES, "a YAML file", _SPLIT))
    return load_yaml(path.read_text(encoding="utf-8"))


def printable(text: str) -> str:
    """`text` with line breaks and other control characters escaped: one line in a message."""
    return _CONTROL.sub(lambda match: match[0].encode("unicode_escape").decode(), text)


def dotted(parts: Sequence[object]) -> str:
    """A location such as `pricing.gpt-4.input`, whatever characters its keys hold."""
    return ".".join(printable(str(part)) for part in parts)


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def line_of(obj: object, key: str | None = None) -> int | None:
    """The line of a LineDict (or of one of its keys); None for plain values."""
    if isinstance(obj, LineDict):
        return obj.line_of(key) if key is not None else obj.line
    return None
