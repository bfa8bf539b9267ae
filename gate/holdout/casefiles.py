"""Moving cases between readable case files and the slice, by text.

A case moved into the slice is taken out of its file: the lines of its list item
are cut, so the comments and layout of the cases around it stay as they were (a
file left with no case is deleted; a flow-style list is written out again, without
its comments). A case moved out is appended to a readable list file as YAML. Each
held-out case is kept as the YAML of its own mapping, so dates and numbers come
back as they went in.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gate.errors import ConfigError
from gate.files import cannot_write, parse_json, write_text
from gate.yamlfile import load_yaml


@dataclass(frozen=True, slots=True)
class Record:
    """One case as written in a readable file."""

    case_id: str
    path: Path
    #: the YAML of the case's own mapping, as the slice keeps it
    text: str


def plain(value: Any) -> Any:
    """Mappings and lists as the plain types `yaml.safe_dump` writes (no line-keeping dicts)."""
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def case_text(record: Mapping[str, Any]) -> str:
    dumped: str = yaml.safe_dump(
        plain(record), sort_keys=False, allow_unicode=True, default_flow_style=False, width=100
    )
    return dumped


def _raw_records(path: Path, text: str) -> list[Any]:
    if path.suffix == ".jsonl":
        return [parse_json(line) for line in text.splitlines() if line.strip()]
    document = load_yaml(text)
    if document is None:
        return []
    return document if isinstance(document, list) else [document]


def records(path: Path) -> list[Record]:
    """The cases of one readable file (it has been loaded as cases already: well-formed)."""
    text = path.read_text(encoding="utf-8")
    return [
        Record(str(raw["id"]), path, case_text(raw))
        for raw in _raw_records(path, text)
        if isinstance(raw, Mapping) and "id" in raw
    ]


def remove(path: Path, ids: set[str]) -> str:
    """Take the cases `ids` out of `path`: "deleted" (none left) or "rewritten"."""
    text = path.read_text(encoding="utf-8")
    kept = _without(path, text, ids)
    try:
        if kept is None:
            os.unlink(path)
            return "deleted"
    except OSError as exc:
        raise cannot_write(path, exc) from None
    write_text(path, kept)
    return "rewritten"


def _without(path: Path, text: str, ids: set[str]) -> str | None:
    if path.suffix == ".jsonl":
        lines = text.splitlines(keepends=True)
        kept = [
            line for line in lines if not line.strip() or str(parse_json(line).get("id")) not in ids
        ]
        return "".join(kept) if any(line.strip() for line in kept) else None
    raws = _raw_records(path, text)
    remaining = [
        raw for raw in raws if not (isinstance(raw, Mapping) and str(raw.get("id")) in ids)
    ]
    if not remaining:
        return None
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(node, yaml.SequenceNode) or node.flow_style or len(node.value) != len(raws):
        return yaml.safe_dump(plain(remaining), sort_keys=False, allow_unicode=True)
    lines = text.splitlines(keepends=True)
    drop: set[int] = set()
    items = node.value
    for index, (item, raw) in enumerate(zip(items, raws, strict=True)):
        if not (isinstance(raw, Mapping) and str(raw.get("id")) in ids):
            continue
        start = item.start_mark.line
        while start > 0 and lines[start - 1].strip() == "-":  # a dash on a line of its own
            start -= 1
        if index + 1 < len(items):
            end = items[index + 1].start_mark.line
            while end > start and lines[end - 1].strip() == "-":
                end -= 1
        else:
            mark = item.end_mark
            end = mark.line + (1 if mark.column else 0)
        if _shares_line(items, item, item.start_mark.line):
            return yaml.safe_dump(plain(remaining), sort_keys=False, allow_unicode=True)
        drop.update(range(start, end))
    return "".join(line for number, line in enumerate(lines) if number not in drop)


def _shares_line(items: list[yaml.Node], item: yaml.Node, line: int) -> bool:
    """Whether another item starts on `line` (a layout cutting by lines cannot handle)."""
    return any(other is not item and other.start_mark.line == line for other in items)


def append(path: Path, texts: Iterable[str], heading: str) -> None:
    """Add cases to a readable YAML list file (created with `heading` as a comment)."""
    items = "".join(_as_item(text) for text in texts)
    if path.exists():
        if path.suffix not in (".yaml", ".yml"):
            raise ConfigError(
                f"{path}: cases are written to a .yaml list file; pass --to FILE.yaml"
            )
        current = path.read_text(encoding="utf-8")
        document = load_yaml(current)
        if document is not None and not isinstance(document, list):
            raise ConfigError(
                f"{path}: holds one case, not a list of cases; pass --to another FILE.yaml"
            )
        if current and not current.endswith("\n"):
            current += "\n"
        write_text(path, current + items)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, f"# {heading}\n" + items)


def _as_item(text: str) -> str:
    lines = text.splitlines()
    return "".join(
        ("- " if number == 0 else "  ") + line + "\n" if line else "\n"
        for number, line in enumerate(lines)
    )
