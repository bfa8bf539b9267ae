"""YAML loading that remembers where each mapping and key came from.

Error messages name `file:line`, so the loader keeps the line of every mapping
and of each of its keys. It uses libyaml's C parser when available: the
constructor (where the line numbers are captured) is Python either way.

A document is measured before it is built: nesting deeper than MAX_DEPTH, or
aliases that would expand it by more than MAX_ALIAS_NODES nodes (a "billion
laughs"), are refused with the line where it happens. A scalar Python cannot
hold (`2026-02-30`, an integer of 5,000 digits) is refused with its line too.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from gate.files import MAX_DEPTH

#: How many nodes aliases may add to a document, counted as if each were expanded.
#: A document without aliases is never refused for its size: only amplification is.
MAX_ALIAS_NODES = 1_000_000

_BaseLoader: type[yaml.SafeLoader]
try:
    _BaseLoader = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - libyaml missing on this platform
    _BaseLoader = yaml.SafeLoader


class LineDict(dict[str, Any]):
    """A dict that knows its own line and the line of each key (1-based)."""

    line: int = 0
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line) if hasattr(self, "key_lines") else self.line


class _ValueProblem(yaml.constructor.ConstructorError):
    """A well-formed scalar whose value Python refuses; its message needs no 'invalid YAML'."""


class _LineLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    def get_single_node(self) -> yaml.Node | None:
        node: yaml.Node | None = super().get_single_node()
        if node is not None:
            _measure(node)
        return node

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            value = super().construct_object(node, deep=deep)
        # PyYAML's own constructors fail on odd explicit tags with all of these:
        # `!!timestamp yesterday` is an AttributeError, `!!bool maybe` a KeyError.
        except (ValueError, OverflowError, TypeError, AttributeError, LookupError) as exc:
            raise _ValueProblem(None, None, _value_problem(node, exc), node.start_mark) from None
        if type(value) is int and _too_many_digits(value):
            # 0x…, 0o… and 0b… are not held to the digit limit when read, but printing
            # them would be: refuse them here, where the line is known.
            problem = _value_problem(node, ValueError("integer string conversion"))
            raise _ValueProblem(None, None, problem, node.start_mark)
        return value


def _too_many_digits(value: int) -> bool:
    limit = sys.get_int_max_str_digits()
    bits = value.bit_length()
    if limit == 0 or bits <= limit * 3.32:  # log2(10) = 3.3219…
        return False
    return bits > limit * 3.33 or abs(value) >= 10**limit


def _value_problem(node: yaml.Node, exc: Exception) -> str:
    kind = node.tag.rpartition(":")[2]
    kind = "date" if kind == "timestamp" else kind
    if not isinstance(node, yaml.ScalarNode):
        found = "sequence" if isinstance(node, yaml.SequenceNode) else "mapping"
        return f"invalid {kind}: found a {found}"
    value = node.value
    shown = repr(value if len(value) <= 40 else value[:39] + "…")
    if "integer string conversion" in str(exc):
        limit = sys.get_int_max_str_digits()
        return f"the number {shown} has more than {limit} digits"
    detail = f": {exc}" if isinstance(exc, ValueError | OverflowError) else ""
    return f"invalid {kind} {shown}{detail}"


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return list(node.value)


def _measure(root: yaml.Node) -> None:
    """Refuse a node graph nested past MAX_DEPTH, recursive, or inflated by aliases.

    Post-order without recursion; an alias is the same node object as its anchor,
    so each collection is sized once and an alias costs its anchor's whole size.
    Scalars (most nodes) are counted in place, never stacked.
    """
    if isinstance(root, yaml.ScalarNode):
        return
    size: dict[int, int] = {}
    height: dict[int, int] = {}
    open_nodes: set[int] = set()
    distinct = 1  # the root; every other node is counted as its parent's child
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            total, tallest = 1, 1
            for child in _children(node):
                if isinstance(child, yaml.ScalarNode):
                    total += 1
                else:
                    total += size[id(child)]
                    tallest = max(tallest, height[id(child)] + 1)
            size[key], height[key] = total, tallest
            if tallest > MAX_DEPTH:
                raise YamlSyntaxError(_line(node), f"nested more than {MAX_DEPTH} levels deep")
            if total - distinct > MAX_ALIAS_NODES:
                raise YamlSyntaxError(
                    _line(node),
                    f"aliases expand this document by more than {MAX_ALIAS_NODES:,} nodes "
                    "(an alias bomb?); write the repeated parts out, or use fewer aliases",
                )
            continue
        if key in size:
            continue
        if key in open_nodes:
            raise YamlSyntaxError(_line(node), "an alias refers to a node that contains it")
        open_nodes.add(key)
        children = _children(node)
        distinct += len(children)
        stack.append((node, True))
        stack.extend(
            (child, False)
            for child in children
            if not isinstance(child, yaml.ScalarNode) and id(child) not in size
        )


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    mapping = LineDict()
    mapping.line = node.start_mark.line + 1
    mapping.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            key = str(key)
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=True)
        mapping.key_lines[key] = key_node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class YamlSyntaxError(Exception):
    def __init__(self, line: int | None, message: str) -> None:
        self.line = line
        self.message = message
        super().__init__(message)


def load_yaml(text: str) -> Any:
    """Parse YAML text; raises YamlSyntaxError with a 1-based line."""
    try:
        return yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass
    except _ValueProblem as exc:
        mark = exc.problem_mark
        raise YamlSyntaxError(mark.line + 1 if mark else None, str(exc.problem)) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise YamlSyntaxError(line, f"invalid YAML: {problem}") from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow
        line = text.count("\n", 0, exc.position) + 1
        raise YamlSyntaxError(line, f"invalid YAML: {exc.reason} #x{exc.character:04x}") from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(None, "invalid YAML: " + " ".join(str(exc).split())) from None
    except RecursionError:  # pragma: no cover - only the pure-Python parser recurses
        raise YamlSyntaxError(None, f"nested more than {MAX_DEPTH} levels deep") from None


def load_yaml_file(path: Path) -> Any:
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
