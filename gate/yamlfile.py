"""YAML loading that remembers where each mapping and key came from.

Error messages name `file:line`, so the loader keeps the line of every mapping
and of each of its keys. It uses libyaml's C parser when available: the
constructor (where the line numbers are captured) is Python either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

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


class _LineLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    pass


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
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise YamlSyntaxError(line, f"invalid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(None, f"invalid YAML: {exc}") from None


def load_yaml_file(path: Path) -> Any:
    return load_yaml(path.read_text(encoding="utf-8"))


def line_of(obj: object, key: str | None = None) -> int | None:
    """The line of a LineDict (or of one of its keys); None for plain values."""
    if isinstance(obj, LineDict):
        return obj.line_of(key) if key is not None else obj.line
    return None
