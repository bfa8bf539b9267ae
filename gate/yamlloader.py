"""PyYAML's own loader, taught casegate's lines and limits: LineDict, YamlSyntaxError, and a
SafeLoader subclass that keeps the line of every mapping and key and refuses a node graph
nested past MAX_DEPTH, recursive, or inflated by aliases.

gate.yamlfile builds documents from its parser's events and its scalar constructors; the
promptfoo importer loads with it whole (its YAML 1.2 dialect is a subclass), and the tests
hold the builder to it.
"""

from __future__ import annotations

import sys
from typing import Any

import yaml

from gate.files import MAX_DEPTH

#: How many nodes aliases may add to a document, counted as if each were expanded.
#: A document without aliases is never refused for this: only amplification is.
MAX_ALIAS_NODES = 1_000_000

_BaseLoader: type[yaml.SafeLoader]
try:
    _BaseLoader = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - libyaml missing on this platform
    _BaseLoader = yaml.SafeLoader


class LineDict(dict[str, Any]):
    """A dict that knows its own line and the line of each key (1-based).

    `key_lines` is left unset when every key is on the mapping's own line (a flow
    mapping such as `{a: 1}`): slots and no empty dict keep a small mapping at about
    the size of a plain dict.
    """

    __slots__ = ("key_lines", "line")
    line: int
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        line = getattr(self, "line", 0)
        lines = getattr(self, "key_lines", None)
        return line if lines is None else lines.get(key, line)


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
    def __init__(self, line: int | None, message: str, excerpt: str = "") -> None:
        self.line = line
        self.message = message
        #: the source line and a caret under the place, on lines of their own (may be "")
        self.excerpt = excerpt
        super().__init__(message)
