"""Reading promptfoo's files: its YAML dialect, `file://` references, `$ref`s."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from gate.errors import located
from gate.importers.promptfoo.common import PromptfooError
from gate.importers.promptfoo.sensitive import Scrubber
from gate.yamlfile import YamlSyntaxError, line_of, printable
from gate.yamlloader import _LineLoader


class Yaml12Loader(_LineLoader):
    """promptfoo's YAML: js-yaml's core schema (YAML 1.2), with casegate's safety limits.

    PyYAML reads YAML 1.1, where `Yes`, `no`, `on` are booleans, `0777` is octal and
    `1:30` is 90; promptfoo reads them as text, 777 and text.
    """


YAML_TAG = "tag:yaml.org,2002:"
Yaml12Loader.yaml_implicit_resolvers = {
    first: [
        (tag, rx) for tag, rx in resolvers if tag[len(YAML_TAG) :] not in {"bool", "int", "float"}
    ]
    for first, resolvers in _LineLoader.yaml_implicit_resolvers.items()
}
for _name, _pattern, _first in (
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
):
    Yaml12Loader.add_implicit_resolver(YAML_TAG + _name, re.compile(_pattern), list(_first))


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    if text.startswith(("0o", "0x")):
        return int(text[2:], 8 if text[1] == "o" else 16)
    return int(text, 10)  # `0777` is 777 in YAML 1.2


Yaml12Loader.add_constructor(YAML_TAG + "int", _construct_int)


def problem_at(path: Path, line: int | None, message: str) -> PromptfooError:
    return PromptfooError(located(path, line, printable(message)))


def parse_document(text: str, path: Path) -> Any:
    """A promptfoo YAML or JSON document; PromptfooError naming file and line."""
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise problem_at(path, exc.lineno, f"invalid JSON: {exc.msg}") from None
        except (ValueError, RecursionError) as exc:
            raise problem_at(path, None, f"invalid JSON: {exc}") from None
    try:
        return yaml.load(text, Loader=Yaml12Loader)  # noqa: S506 - a SafeLoader subclass
    except YamlSyntaxError as exc:
        raise problem_at(path, exc.line, exc.message) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        if not isinstance(exc, yaml.constructor.ConstructorError):
            problem = f"invalid YAML: {problem}"
        raise problem_at(path, mark.line + 1 if mark else None, problem) from None
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        raise problem_at(path, None, "invalid YAML: " + " ".join(str(exc).split())) from None


class Folder:
    """The config's folder: the only place `file://` references may read from.

    Every document read through it has its secret values dropped (`scrubber`)."""

    def __init__(self, config: Path) -> None:
        self.config = config
        self.root = config.resolve().parent
        self.scrubber = Scrubber()

    def parse(self, text: str, path: Path, shown: Path | None = None) -> Any:
        """A document of the suite (see parse_document), its secret values dropped."""
        document = parse_document(text, path)
        origin = shown or path
        resolved = origin.resolve()
        name = resolved.relative_to(self.root) if resolved.is_relative_to(self.root) else origin
        return self.scrubber.scrub(document, name.as_posix())

    def text(self, path: Path, where: Path | None = None, line: int | None = None) -> str:
        shown = where or path
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise problem_at(shown, line, f"cannot read {path} ({exc.strerror or exc})") from None
        if b"\x00" in data:
            raise problem_at(shown, line, f"{path} is a binary file, not text")
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise problem_at(shown, line, f"{path} is not UTF-8 text ({exc.reason})") from None

    def paths(
        self, reference: str, line: int | None, what: str, base: Path | None = None
    ) -> list[Path]:
        """The files a `file://` reference names (globs allowed), all inside the folder.
        `base`: the folder it is relative to (a test file's), itself inside; else the root."""
        name = self._name(reference, line, what)
        start = self.root if base is None else base.resolve()
        if not start.is_relative_to(self.root):
            raise self._outside(reference, line, what)
        if any(char in name for char in "*?["):
            try:
                found = sorted(p for p in start.glob(name) if p.is_file())
            except (ValueError, OSError, NotImplementedError) as exc:
                raise problem_at(self.config, line, f"{what}: {reference!r}: {exc}") from None
        else:
            found = [start / name]
        for path in found:
            if not path.resolve().is_relative_to(self.root):
                raise self._outside(reference, line, what)
        if not found or not all(path.is_file() for path in found):
            raise problem_at(self.config, line, f"{what}: {reference!r} names no file")
        return found

    def _name(self, reference: str, line: int | None, what: str) -> str:
        name = reference.removeprefix("file://")
        if not name or Path(name).is_absolute() or name.startswith("~"):
            raise self._outside(reference, line, what)
        return name

    def inside(self, reference: str, line: int | None, what: str) -> None:
        """Refuse a reference that leaves the folder, whether or not the file exists (one the
        import skips, such as a media file, is refused the same way as one it reads)."""
        target = (self.root / self._name(reference, line, what)).resolve()
        if not target.is_relative_to(self.root):
            raise self._outside(reference, line, what)

    def _outside(self, reference: str, line: int | None, what: str) -> PromptfooError:
        return problem_at(
            self.config,
            line,
            f"{what}: {reference!r} is refused: casegate import reads only files inside the "
            f"config's folder ({self.root}); copy the file there and refer to it relatively",
        )

    def document(self, reference: str, line: int | None, what: str) -> Any:
        path = self.paths(reference, line, what)[0]
        return self.parse(self.text(path, self.config, line), path)


def line_at(node: object, key: str | None = None) -> int | None:
    return line_of(node, key)


def resolve_ref(node: Any, root: Any, path: Path, depth: int = 0) -> Any:
    """A `{$ref: '#/a/b'}` replaced by what it points at in the same document."""
    if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
        return node
    reference = node["$ref"]
    if depth > 20 or not reference.startswith("#/"):
        raise problem_at(path, line_at(node), f"$ref {reference!r}: only '#/…' within the config")
    target = root
    for part in reference[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and part in target:
            target = target[part]
        elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        else:
            raise problem_at(path, line_at(node), f"$ref {reference!r} points at nothing")
    return resolve_ref(target, root, path, depth + 1)
