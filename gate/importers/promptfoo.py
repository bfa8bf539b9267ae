"""`casegate import promptfoo CONFIG`: a promptfoo suite as a casegate suite, plus what is left.

Follows promptfoo's documented semantics as of PROMPTFOO_VERSION (see CONTAINS_LIST_PARSING
for the one place where releases disagree). The config is read as data with promptfoo's
YAML dialect (YAML 1.2, as js-yaml reads it: `Yes` is text); no code in it is ever run,
and a `file://` reference that leaves the config's folder is refused.

What is written (all of it or nothing, never over an existing file):

- `casegate.yml` for the first provider (and prompt), `casegate.<provider>.yml` for each
  other one: promptfoo compares them side by side, casegate runs one system per config;
- `cases/<suite>.yaml`: one case per test (per combination, for array vars);
- `prompts/…md`: the system turn of a chat-format prompt; the rest becomes `message`;
- `promptfoo_checks.py`: a stub per `javascript`/`python` assertion, failing until ported;
  `promptfoo_systems.py`: a stub system for a provider casegate has no adapter for;
- `MIGRATION.md`: per test, what was mapped and what needs a person.

Every case is validated as `casegate validate` would before anything is written.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
import jinja2.nodes
import jinja2.sandbox
import yaml

from gate import checks
from gate.cases import MAX_ID_LENGTH, Case
from gate.errors import CasegateError, ConfigError, SystemCallError, located
from gate.files import write_new_files
from gate.templates import compile_template, render
from gate.yamlfile import LineDict, YamlSyntaxError, _LineLoader, line_of, load_yaml, printable

PROMPTFOO_VERSION = "0.123.0"
SEMANTICS = f"promptfoo {PROMPTFOO_VERSION}"
CONTAINS_LIST_PARSING = (
    "A string value of `contains-any`, `contains-all` and their `i…`/`not-…` forms is split "
    "on commas the way promptfoo does since its pull request #8041 (March 2026): a field in "
    'double quotes keeps its commas (`"1,000", in stock` is `1,000` and `in stock`), `\\"` '
    'and `""` stand for a quote, empty fields are dropped. Earlier releases split '
    "`icontains-any`, `contains-all` and `icontains-all` on every comma, quotes and all; "
    "a value they would have read differently is marked where it occurs."
)
CHECKS_MODULE = "promptfoo_checks"
SYSTEMS_MODULE = "promptfoo_systems"
#: promptfoo's default grader when no `provider` is given changes between releases; the
#: pin written for `llm-rubric` is a stub a person replaces with the judge they trust.
JUDGE_STUB = {"provider": "openai", "model": "gpt-4.1-2025-04-14", "prompt_version": 1}
#: Assertion types casegate has planned checks for (README, "Checks"), not built yet.
PLANNED = ("latency", "cost", "levenshtein", "similar", "is-valid-openai-tools-call", "moderation")
MAX_SHOWN = 400  # characters of an original assertion quoted in MIGRATION.md
#: promptfoo runs every combination of a test's array vars; past this many, a person picks.
MAX_COMBINATIONS = 1000
#: Keys whose values may be secrets: never copied into a file casegate writes.
_SECRET_KEY = re.compile(
    r"key$|_key|secret|password|passwd|credential|auth|bearer|access_?token|^token$",
    re.IGNORECASE,
)


class PromptfooError(CasegateError):
    """The promptfoo config cannot be read: one line naming the file (and line)."""


# --- reading promptfoo's files ------------------------------------------------------


class _Yaml12Loader(_LineLoader):
    """promptfoo's YAML: js-yaml's core schema (YAML 1.2), with casegate's safety limits.

    PyYAML reads YAML 1.1, where `Yes`, `no`, `on` are booleans, `0777` is octal and
    `1:30` is 90; promptfoo reads them as text, 777 and text.
    """


_TAG = "tag:yaml.org,2002:"
_Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag[len(_TAG) :] not in {"bool", "int", "float"}]
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
    _Yaml12Loader.add_implicit_resolver(_TAG + _name, re.compile(_pattern), list(_first))


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    if text.startswith(("0o", "0x")):
        return int(text[2:], 8 if text[1] == "o" else 16)
    return int(text, 10)  # `0777` is 777 in YAML 1.2


_Yaml12Loader.add_constructor(_TAG + "int", _construct_int)


def _problem(path: Path, line: int | None, message: str) -> PromptfooError:
    return PromptfooError(located(path, line, printable(message)))


def _parse(text: str, path: Path) -> Any:
    """A promptfoo YAML or JSON document; PromptfooError naming file and line."""
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise _problem(path, exc.lineno, f"invalid JSON: {exc.msg}") from None
        except (ValueError, RecursionError) as exc:
            raise _problem(path, None, f"invalid JSON: {exc}") from None
    try:
        return yaml.load(text, Loader=_Yaml12Loader)  # noqa: S506 - a SafeLoader subclass
    except YamlSyntaxError as exc:
        raise _problem(path, exc.line, exc.message) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        if not isinstance(exc, yaml.constructor.ConstructorError):
            problem = f"invalid YAML: {problem}"
        raise _problem(path, mark.line + 1 if mark else None, problem) from None
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        raise _problem(path, None, "invalid YAML: " + " ".join(str(exc).split())) from None


class _Folder:
    """The config's folder: the only place `file://` references may read from."""

    def __init__(self, config: Path) -> None:
        self.config = config
        self.root = config.resolve().parent

    def text(self, path: Path, where: Path | None = None, line: int | None = None) -> str:
        shown = where or path
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise _problem(shown, line, f"cannot read {path} ({exc.strerror or exc})") from None
        if b"\x00" in data:
            raise _problem(shown, line, f"{path} is a binary file, not text")
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise _problem(shown, line, f"{path} is not UTF-8 text ({exc.reason})") from None

    def paths(self, reference: str, line: int | None, what: str) -> list[Path]:
        """The files a `file://` reference names (globs allowed), all inside the folder."""
        name = reference.removeprefix("file://")
        if not name or Path(name).is_absolute() or name.startswith("~"):
            raise self._outside(reference, line, what)
        if any(char in name for char in "*?["):
            try:
                found = sorted(p for p in self.root.glob(name) if p.is_file())
            except (ValueError, OSError) as exc:
                raise _problem(self.config, line, f"{what}: {reference!r}: {exc}") from None
        else:
            found = [self.root / name]
        for path in found:
            if not path.resolve().is_relative_to(self.root):
                raise self._outside(reference, line, what)
        if not found or not all(path.is_file() for path in found):
            raise _problem(self.config, line, f"{what}: {reference!r} names no file")
        return found

    def _outside(self, reference: str, line: int | None, what: str) -> PromptfooError:
        return _problem(
            self.config,
            line,
            f"{what}: {reference!r} is refused: casegate import reads only files inside the "
            f"config's folder ({self.root}); copy the file there and refer to it relatively",
        )

    def document(self, reference: str, line: int | None, what: str) -> Any:
        path = self.paths(reference, line, what)[0]
        return _parse(self.text(path, self.config, line), path)


def _line(node: object, key: str | None = None) -> int | None:
    return line_of(node, key)


def _resolve_ref(node: Any, root: Any, path: Path, depth: int = 0) -> Any:
    """A `{$ref: '#/a/b'}` replaced by what it points at in the same document."""
    if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
        return node
    reference = node["$ref"]
    if depth > 20 or not reference.startswith("#/"):
        raise _problem(path, _line(node), f"$ref {reference!r}: only '#/…' within the config")
    target = root
    for part in reference[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and part in target:
            target = target[part]
        elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        else:
            raise _problem(path, _line(node), f"$ref {reference!r} points at nothing")
    return _resolve_ref(target, root, path, depth + 1)


# --- promptfoo's JavaScript conversions ----------------------------------------------


def _js_number(number: float) -> str:
    """JavaScript's `String(number)` (ECMAScript Number::toString)."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    parts = Decimal(repr(abs(number))).normalize().as_tuple()
    digits = "".join(map(str, parts.digits))
    k, n = len(digits), int(parts.exponent) + len(digits)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        exponent = f"{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"
        text = f"{digits[0]}{'.' + digits[1:] if k > 1 else ''}e{exponent}"
    return sign + text


def js_string(value: Any) -> str:
    """JavaScript's `String(value)` for what YAML can hold (promptfoo compares text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and abs(value) < 2**53:
        return str(value)
    if isinstance(value, int | float):
        try:
            return _js_number(float(value))
        except OverflowError:
            return "Infinity" if value > 0 else "-Infinity"
    if value is None:
        return "null"
    if isinstance(value, list):
        return ",".join("" if item is None else js_string(item) for item in value)
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def split_values(text: str) -> list[str]:
    """promptfoo's parseCommaSeparatedValues (see CONTAINS_LIST_PARSING); ValueError when a
    quoted field is not closed or is followed by something other than a comma."""
    fields: list[str] = []
    index, end = 0, len(text)
    while index < end:
        while index < end and (text[index].isspace() or text[index] == ","):
            index += 1
        if index >= end:
            break
        if text[index] != '"':
            start = index
            while index < end and text[index] != ",":
                index += 1
            fields.append(text[start:index].strip())
            continue
        index += 1
        chars: list[str] = []
        while index < end:
            char, after = text[index], text[index + 1 : index + 2]
            if (char == "\\" and after in ('"', "\\")) or (char == '"' and after == '"'):
                chars.append(after)
                index += 2
            elif char == '"':
                break
            else:
                chars.append(char)
                index += 1
        else:
            raise ValueError("a quoted field is not closed")
        index += 1
        while index < end and text[index].isspace():
            index += 1
        if index < end and text[index] != ",":
            raise ValueError("a quoted field is followed by something other than a comma")
        fields.append("".join(chars))
    return fields


def _slug(text: str, limit: int = 80) -> str:
    """Lowercase letters, digits, `.`, `_` and `-`; cut at a word's end when it is long."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    if len(slug) > limit:
        cut = slug[: limit + 1].rfind("-")
        slug = slug[: cut if cut > limit // 2 else limit]
    return slug.rstrip("-._")


def _shown(value: Any, limit: int = MAX_SHOWN) -> str:
    """A value as one line of JSON, in backticks a markdown reader cannot break out of."""
    try:
        text = json.dumps(_plain(value), ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    text = printable(text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return _code(text)


def _code(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _plain(value: Any) -> Any:
    """Plain dicts and lists (the loader's line-tracking dicts do not dump)."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _scrubbed(value: Any) -> Any:
    """`value` with anything under a key that may hold a secret replaced by `***`."""
    if isinstance(value, dict):
        return {
            str(key): "***" if _SECRET_KEY.search(str(key)) else _scrubbed(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_scrubbed(item) for item in value]
    return value


# --- templates: nunjucks in, Jinja2 out ------------------------------------------------

#: For reading templates only (casegate renders with gate.templates, StrictUndefined).
_JINJA = jinja2.sandbox.SandboxedEnvironment(autoescape=False, keep_trailing_newline=True)
_TEMPLATE_SYNTAX = ("{{", "{%", "{#")


def _literal(text: str) -> str:
    """A Jinja2 template that renders `text` exactly, whatever braces it holds."""
    return text.replace("{", '{{ "{" }}')


@dataclass
class _Template:
    source: str
    names: set[str] = field(default_factory=set)  # top-level variables it reads
    needs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _port_template(source: str, what: str) -> _Template:
    """A promptfoo (nunjucks) template as a casegate (Jinja2) one, with what did not port."""
    ported = _Template(source)
    try:
        tree = _JINJA.parse(source)
    except jinja2.TemplateSyntaxError as exc:
        ported.source = _literal(source)
        ported.needs.append(
            f"{what} is not a Jinja2 template (line {exc.lineno}: {exc.message}); it is sent "
            "as written, braces and all, until a person ports it"
        )
        return ported
    filters = {node.name for node in tree.find_all(jinja2.nodes.Filter)}
    if "dump" in filters and "dump" not in _JINJA.filters:
        ported.source = re.sub(r"\|(\s*)dump\b", r"|\1tojson", source)
        ported.notes.append(
            f"{what}: nunjucks `dump` became Jinja2 `tojson` (which also writes <, >, & and ' "
            "as \\u003c, \\u003e, \\u0026, \\u0027)"
        )
        filters.discard("dump")
    tests = {node.name for node in tree.find_all(jinja2.nodes.Test)}
    unknown = sorted((filters - set(_JINJA.filters)) | (tests - set(_JINJA.tests)))
    if not unknown:
        try:
            compile_template(ported.source)
        except ConfigError as exc:
            unknown = [str(exc)]
    if unknown:
        ported.source = _literal(source)
        ported.needs.append(
            f"{what} uses nunjucks filters or tests Jinja2 lacks ({', '.join(unknown)}); it is "
            "sent as written, braces and all, until a person ports it"
        )
        return ported
    # The variables are read from the ported source: the compiler refuses unknown filters.
    ported.names = set(jinja2.meta.find_undeclared_variables(_JINJA.parse(ported.source)))
    if "env" in ported.names:
        ported.needs.append(
            f"{what} reads `env`: promptfoo fills it from the environment, casegate's template "
            "sees only the case input"
        )
    return ported


_REFERENCE = re.compile(r"\{\{\s*([A-Za-z_]\w*(?:\.\w+|\[\d+\])*)\s*\}\}")


def _render_value(value: Any, variables: Mapping[str, Any]) -> Any:
    """An assertion value rendered over the test's vars, as promptfoo does (undefined is '').

    Only `{{ name }}`, `{{ a.b }}` and `{{ a[0] }}` are filled in: anything else in template
    syntax (filters, logic, arithmetic) is left to a person, so no value from the config is
    ever evaluated here.
    """
    if isinstance(value, list):
        return [_render_value(item, variables) for item in value]
    if not isinstance(value, str) or not any(mark in value for mark in _TEMPLATE_SYNTAX):
        return value
    if any(mark in _REFERENCE.sub("", value) for mark in _TEMPLATE_SYNTAX):
        raise _NeedsPerson("its value uses nunjucks beyond `{{ var }}`; port it by hand")
    return _REFERENCE.sub(lambda match: _lookup(variables, match.group(1)), value)


def _lookup(variables: Mapping[str, Any], path: str) -> str:
    current: Any = variables
    for part in re.findall(r"\w+", path):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return ""  # nunjucks renders what is undefined as nothing
    return "" if current is None else js_string(current)


# --- prompts ----------------------------------------------------------------------


@dataclass
class _Prompt:
    label: str
    system: str | None
    message: _Template
    params: dict[str, Any] = field(default_factory=dict)
    needs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


_CODE_SUFFIXES = (".js", ".cjs", ".mjs", ".ts", ".py", ".sh", ".bash", ".rb", ".pl", ".exe")
_PROMPT_SUFFIXES = (".txt", ".md", ".j2", ".json", ".jsonl", ".yaml", ".yml", *_CODE_SUFFIXES)


def _chat_turns(raw: Any) -> list[dict[str, Any]] | None:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError):
            return None
    if (
        isinstance(raw, list)
        and raw
        and all(isinstance(t, dict) and "role" in t and "content" in t for t in raw)
    ):
        return raw
    return None


def _prompt_from(raw: Any, label: str, params: dict[str, Any]) -> _Prompt:
    """One prompt: a chat-format one gives the system turn and the user turn, text is the turn."""
    turns = _chat_turns(raw)
    if turns is None:
        text = raw if isinstance(raw, str) else json.dumps(_plain(raw), ensure_ascii=False)
        return _Prompt(label, None, _port_template(text, f"prompt {label!r}"), params)
    needs: list[str] = []
    systems = [t for t in turns if t["role"] in ("system", "developer")]
    rest = [t for t in turns if t["role"] not in ("system", "developer")]
    system = "\n\n".join(str(t["content"]) for t in systems) or None
    if system is not None and any(mark in system for mark in _TEMPLATE_SYNTAX):
        needs.append(
            f"prompt {label!r}: its system turn uses template variables; casegate's prompt file "
            "is sent as written, so the placeholders reach the model literally"
        )
    users = [t for t in rest if t["role"] == "user"]
    if len(rest) != 1 or not users:
        needs.append(
            f"prompt {label!r} is a conversation of {len(rest)} turns; casegate sends the "
            "prompt and one user turn (the last user turn was kept), or a case's own "
            "`input.messages`"
        )
    last = users[-1]["content"] if users else ""
    if not isinstance(last, str):
        needs.append(f"prompt {label!r}: a user turn with parts (images?) is not ported")
        last = json.dumps(_plain(last), ensure_ascii=False)
    prompt = _Prompt(label, system, _port_template(last, f"prompt {label!r}"), params, needs)
    return prompt


def _text_prompts(text: str) -> list[str]:
    """A .txt prompt file: several prompts separated by lines of `---`."""
    parts = re.split(r"^---[ \t]*$", text, flags=re.MULTILINE)
    return [part.strip() for part in parts if part.strip()]


def _prompts_from_file(
    folder: _Folder, reference: str, label: str | None, params: dict[str, Any], line: int | None
) -> list[_Prompt]:
    name = reference.removeprefix("file://")
    if name.startswith("exec:") or name.partition(":")[0].endswith(_CODE_SUFFIXES):
        return [_code_prompt(reference, label, params)]
    prompts: list[_Prompt] = []
    for path in folder.paths(reference, line, "prompts"):
        shown = label or path.relative_to(folder.root).as_posix()
        if path.suffix in _CODE_SUFFIXES:
            prompts.append(_code_prompt(reference, label, params))
            continue
        text = folder.text(path, folder.config, line)
        if path.suffix in (".yaml", ".yml"):
            prompts.append(_prompt_from(_parse(text, path), shown, params))
        elif path.suffix == ".jsonl":
            lines = [row for row in text.splitlines() if row.strip()]
            prompts.extend(
                _prompt_from(row, f"{shown}:{number}", params)
                for number, row in enumerate(lines, start=1)
            )
        elif path.suffix == ".txt":
            pieces = _text_prompts(text)
            prompts.extend(
                _prompt_from(piece, shown if len(pieces) == 1 else f"{shown}#{n}", params)
                for n, piece in enumerate(pieces, start=1)
            )
        else:
            prompts.append(_prompt_from(text, shown, params))
    return prompts


def _code_prompt(reference: str, label: str | None, params: dict[str, Any]) -> _Prompt:
    shown = label or reference
    placeholder = _literal(f"(not migrated: the prompt comes from code, {reference})")
    prompt = _Prompt(shown, None, _Template(placeholder), params)
    prompt.needs.append(
        f"prompt {shown!r} is code ({reference}); casegate never runs it: write its output as "
        "`system.message` (a Jinja2 template over the case input)"
    )
    return prompt


def _read_prompts(config: Mapping[str, Any], folder: _Folder) -> list[_Prompt]:
    raw = config.get("prompts")
    line = _line(config, "prompts")
    if raw is None:
        # promptfoo's default prompt passes the `prompt` var through.
        return [_Prompt("{{prompt}}", None, _port_template("{{prompt}}", "the default prompt"))]
    if isinstance(raw, str):
        raw = [raw]
    if isinstance(raw, dict):  # the older {path: label} form
        raw = [{"id": key, "label": value} for key, value in raw.items()]
    if not isinstance(raw, list):
        raise _problem(folder.config, line, "prompts must be a string, a list or a mapping")
    prompts: list[_Prompt] = []
    for number, entry in enumerate(raw, start=1):
        where = _line(entry) or line
        label: str | None = None
        params: dict[str, Any] = {}
        if isinstance(entry, dict):
            label = str(entry["label"]) if entry.get("label") is not None else None
            params = (
                dict(entry.get("config") or {}) if isinstance(entry.get("config"), dict) else {}
            )
            entry = entry.get("raw", entry.get("id"))
        if not isinstance(entry, str) or not entry.strip():
            raise _problem(folder.config, where, f"prompts[{number - 1}] has no text or file")
        if entry.startswith("file://") or _looks_like_file(entry, folder):
            prompts.extend(_prompts_from_file(folder, entry, label, params, where))
        elif entry.startswith(("exec:", "langfuse://", "portkey://", "helicone://")):
            prompts.append(_code_prompt(entry, label, params))
        else:
            prompts.append(_prompt_from(entry, label or f"prompt {number}", params))
    if not prompts:
        raise _problem(folder.config, line, "prompts is empty")
    return prompts


def _looks_like_file(text: str, folder: _Folder) -> bool:
    """promptfoo also reads a bare path (`prompts: [prompt.txt]`) as a file reference."""
    if any(char.isspace() or char == "{" for char in text) or not text.endswith(_PROMPT_SUFFIXES):
        return False
    return text.partition(":")[0].endswith(_CODE_SUFFIXES) or (folder.root / text).exists()


# --- providers ----------------------------------------------------------------------

_PARAMS = (
    "temperature",
    "top_p",
    "top_k",
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "stop",
    "seed",
    "frequency_penalty",
    "presence_penalty",
    "reasoning_effort",
    "reasoning",
    "response_format",
    "text",
)
_OPENAI_KINDS = frozenset(
    {
        "completion",
        "embedding",
        "embeddings",
        "assistant",
        "realtime",
        "image",
        "moderation",
        "transcription",
        "agents",
        "chatkit",
        "video",
    }
)


@dataclass
class _Provider:
    id: str
    label: str
    system: dict[str, Any]
    prompts: list[str] | None = None
    needs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    known: bool = True


def _classify(provider_id: str) -> tuple[str, str | None, str] | None:
    """(casegate provider, api, model) for an id casegate has an adapter for, else None."""
    parts = provider_id.split(":")
    if parts[0] == "openai" and len(parts) >= 2:
        if parts[1] in ("chat", "responses") and len(parts) >= 3 and ":".join(parts[2:]):
            return "openai", parts[1], ":".join(parts[2:])
        if len(parts) == 2 and parts[1] and parts[1] not in _OPENAI_KINDS | {"chat", "responses"}:
            return "openai", "chat", parts[1]
    if parts[0] == "anthropic" and len(parts) >= 2:
        if parts[1] == "messages" and len(parts) >= 3 and parts[2]:
            return "anthropic", None, ":".join(parts[2:])
        if (
            len(parts) == 2
            and parts[1].startswith("claude-")
            and not parts[1].startswith(("claude-agent-sdk", "claude-code"))
        ):
            return "anthropic", None, parts[1]
    return None


def _provider_options(raw: Any, folder: _Folder, line: int | None) -> tuple[str, dict[str, Any]]:
    if (
        isinstance(raw, str)
        and raw.startswith("file://")
        and raw.endswith((".yaml", ".yml", ".json"))
    ):
        loaded = folder.document(raw, line, "providers")
        if isinstance(loaded, list) and len(loaded) == 1:
            loaded = loaded[0]
        return _provider_options(loaded, folder, line)
    if isinstance(raw, str):
        return raw, {}
    if isinstance(raw, dict) and isinstance(raw.get("id"), str):
        return raw["id"], dict(raw)
    if isinstance(raw, dict) and len(raw) == 1:
        ((key, value),) = raw.items()
        if isinstance(value, dict):
            return str(key), {"id": key, **value}
    raise _problem(folder.config, _line(raw) or line, "a provider must be an id or {id, config}")


def _tools(raw: Any, folder: _Folder, line: int | None, notes: list[str]) -> list[dict[str, Any]]:
    if isinstance(raw, str) and raw.startswith("file://"):
        raw = folder.document(raw, line, "providers.config.tools")
    tools: list[dict[str, Any]] = []
    for tool in raw if isinstance(raw, list) else []:
        spec = (
            tool.get("function")
            if isinstance(tool, dict) and tool.get("type") == "function"
            else tool
        )
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            parameters = spec.get("parameters", spec.get("input_schema"))
            converted: dict[str, Any] = {"name": spec["name"]}
            if isinstance(spec.get("description"), str):
                converted["description"] = spec["description"]
            if isinstance(parameters, dict):
                converted["parameters"] = _plain(parameters)
            tools.append(converted)
        else:
            notes.append(
                f"tool {_shown(tool, 80)} not carried over (casegate sends function tools)"
            )
    if not isinstance(raw, list):
        notes.append(f"tools {_shown(raw, 80)} not carried over (not a list)")
    return tools


def _system_problems(system: Mapping[str, Any]) -> list[str]:
    from gate import systems
    from gate.config import SystemConfig

    try:
        config = SystemConfig.model_validate({"name": "x", **system})
    except ValueError as exc:
        return [str(exc).splitlines()[0]]
    return systems.config_problems(config)


def _map_provider(raw: Any, folder: _Folder, line: int | None, number: int) -> _Provider:
    provider_id, options = _provider_options(raw, folder, line)
    label = str(options.get("label") or provider_id)
    config: dict[str, Any] = options["config"] if isinstance(options.get("config"), dict) else {}
    prompts = options.get("prompts")
    prompt_filter = [str(p) for p in prompts] if isinstance(prompts, list) else None
    name = _slug(label) or f"provider-{number}"
    classified = _classify(provider_id)
    if classified is None:
        system = {
            "provider": "python",
            "target": f"{SYSTEMS_MODULE}:not_migrated",
            "promptfoo_provider": provider_id,
        }
        if config:
            system["promptfoo_config"] = _plain(_scrubbed(config))
        mapped = _Provider(provider_id, name, system, prompt_filter, known=False)
        mapped.needs.append(
            f"provider `{provider_id}` has no casegate adapter: the config runs the stub "
            f"`{SYSTEMS_MODULE}:not_migrated`, which fails every case until a person writes it "
            "(or points the config at an OpenAI-compatible `base_url`)"
        )
        return mapped
    kind, api, model = classified
    chat: dict[str, Any] = {"provider": kind, **({"api": api} if api else {}), "model": model}
    mapped = _Provider(provider_id, name, {**chat, "params": {}}, prompt_filter)
    _apply_config(mapped, config, folder, line)
    for key in sorted(set(options) - {"id", "label", "config", "prompts"}):
        if key == "transform":
            mapped.needs.append(
                f"provider `transform` {_shown(options[key], 80)}: promptfoo rewrites every "
                "output with it before judging; casegate judges the output as the API returns it"
            )
        else:
            mapped.notes.append(f"provider option `{key}` not carried over")
    return mapped


def _apply_config(
    provider: _Provider, config: Mapping[str, Any], folder: _Folder, line: int | None
) -> None:
    system = provider.system
    for key, value in config.items():
        if key in _PARAMS or key == "stop_sequences":
            param = "stop" if key == "stop_sequences" else key
            trial = {**system, "params": {param: _plain(value)}}
            if _system_problems(trial):
                provider.notes.append(
                    f"config `{key}` not carried over: casegate does not send it to "
                    f"{system['provider']}"
                )
            else:
                system["params"][param] = _plain(value)
        elif key == "apiKey":
            provider.notes.append(
                "config `apiKey` not copied (a key never goes into a casegate file): export it "
                f"as {'OPENAI_API_KEY' if system['provider'] == 'openai' else 'ANTHROPIC_API_KEY'}"
            )
        elif key == "apiKeyEnvar" and isinstance(value, str):
            system["api_key_env"] = value
        elif key in ("apiBaseUrl", "baseUrl", "apiHost") and isinstance(value, str):
            system["base_url"] = value if key != "apiHost" else f"https://{value}/v1"
        elif key == "tools":
            tools = _tools(value, folder, line, provider.notes)
            if tools and not _system_problems({**system, "tools": tools}):
                system["tools"] = tools
            elif tools:
                provider.notes.append("tools not carried over: they are not valid casegate tools")
        else:
            provider.notes.append(f"config `{key}` not carried over (casegate has no such setting)")


def _read_providers(config: Mapping[str, Any], folder: _Folder) -> list[_Provider]:
    raw = config.get("providers", config.get("targets"))
    line = _line(config, "providers") or _line(config, "targets")
    if raw is None:
        placeholder = _Provider("(none)", "no-provider", {"provider": "python"}, known=False)
        placeholder.system.update(
            {"target": f"{SYSTEMS_MODULE}:not_migrated", "promptfoo_provider": "(none)"}
        )
        placeholder.needs.append("the config names no provider: the system is a stub")
        return [placeholder]
    if isinstance(raw, str) or (isinstance(raw, dict) and "id" in raw):
        raw = [raw]
    elif isinstance(raw, dict):  # {id: options, …}
        raw = [{key: value} for key, value in raw.items()]
    if not isinstance(raw, list) or not raw:
        raise _problem(folder.config, line, "providers must be an id, or a list of providers")
    return [
        _map_provider(entry, folder, _line(entry) or line, number)
        for number, entry in enumerate(raw, start=1)
    ]


# --- assertions → checks -----------------------------------------------------------


@dataclass
class _Text:
    """A substring requirement: contains / not_contains / any / not_all / equals."""

    kind: str
    needles: list[str]
    insensitive: bool = False


def _escaped(needles: Sequence[str], insensitive: bool) -> str:
    body = "|".join(re.escape(needle) for needle in needles)
    return f"(?i:{body})" if insensitive else (body if len(needles) == 1 else f"(?:{body})")


@dataclass
class _Expect:
    """The checks one case accumulates; `build` resolves what shares one `expect` key."""

    texts: list[_Text] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    forbidden: list[str] = field(default_factory=list)
    schemas: list[dict[str, Any]] = field(default_factory=list)
    json: bool = False
    min_words: int | None = None
    max_words: int | None = None
    rubrics: list[str] = field(default_factory=list)
    custom: list[str] = field(default_factory=list)

    def build(self) -> tuple[dict[str, Any], list[str]]:
        expect: dict[str, Any] = {}
        notes: list[str] = []
        lowered = bool(self.texts) and all(t.insensitive for t in self.texts)
        patterns, forbidden = list(self.patterns), list(self.forbidden)
        if lowered:
            expect["normalize"] = ["lower"]
        mixed = [t for t in self.texts if t.insensitive and not lowered]
        if mixed:
            notes.append(
                "case-insensitive assertions became `(?i:…)` patterns: the case also has "
                "case-sensitive ones, and `normalize` would apply to every text check"
            )
        for text in self.texts:
            as_pattern = text.insensitive and not lowered
            if text.kind == "contains" and not as_pattern:
                expect.setdefault("contains", []).extend(text.needles)
            elif text.kind == "contains":
                patterns.extend(_escaped([n], True) for n in text.needles)
            elif text.kind == "not_contains" and not as_pattern:
                expect.setdefault("not_contains", []).extend(text.needles)
            elif text.kind == "not_contains":
                forbidden.extend(_escaped([n], True) for n in text.needles)
            elif text.kind == "any" and "contains_any" not in expect and not as_pattern:
                expect["contains_any"] = list(text.needles)
            elif text.kind == "any":
                patterns.append(_escaped(text.needles, text.insensitive))
            elif text.kind == "equals" and "equals" not in expect:
                expect["equals"] = text.needles[0]
            elif text.kind == "equals":
                patterns.append(rf"\A{_escaped(text.needles, False)}\Z")
            elif text.kind == "not_equals":
                forbidden.append(rf"\A{_escaped(text.needles, False)}\Z")
            else:  # not_all: fails only when every needle appears
                forbidden.append(_all_of([_escaped([n], text.insensitive) for n in text.needles]))
        for key in ("contains", "not_contains"):
            if key in expect and len(expect[key]) == 1:
                expect[key] = expect[key][0]
        if patterns:
            expect["regex"] = patterns[0] if len(patterns) == 1 else _all_of(patterns)
        if forbidden:
            expect["not_regex"] = forbidden[0] if len(forbidden) == 1 else _any_of(forbidden)
        if self.json and not self.schemas:
            expect["json"] = True
        if self.schemas:
            expect["json_schema"] = (
                self.schemas[0] if len(self.schemas) == 1 else {"allOf": self.schemas}
            )
        if self.min_words is not None:
            expect["min_words"] = self.min_words
        if self.max_words is not None:
            expect["max_words"] = self.max_words
        if self.rubrics:
            rubric = self.rubrics[0]
            if len(self.rubrics) > 1:
                rubric = "All of these hold:\n" + "\n".join(
                    f"{n}. {r}" for n, r in enumerate(self.rubrics, start=1)
                )
                notes.append(f"{len(self.rubrics)} llm-rubric assertions became one judge rubric")
            expect["judge"] = {"rubric": rubric}
        if self.custom:
            expect["check"] = self.custom[0] if len(self.custom) == 1 else list(self.custom)
        return expect, notes


def _all_of(patterns: Sequence[str]) -> str:
    """One pattern that matches when every pattern matches somewhere (lookaheads from 0)."""
    return "^" + "".join(f"(?=[\\s\\S]*?(?:{p}))" for p in patterns)


def _any_of(patterns: Sequence[str]) -> str:
    return "|".join(f"(?:{p})" for p in patterns)


#: A back-reference by number: after another pattern's groups it would point elsewhere.
_NUMBERED_REFERENCE = re.compile(r"\\[1-9]|\\g<\d")


class _NeedsPerson(Exception):
    """This assertion is not mapped; the message says why."""


@dataclass
class _Stub:
    function: str
    kind: str
    test: str
    code: str
    inverse: bool
    threshold: Any = None
    transform: str | None = None


class _Stubs:
    """The suite's stub checks: one per assertion object, so a defaultTest assertion that
    lands in every case, or a test that array vars expand, gets one stub."""

    def __init__(self) -> None:
        self.stubs: list[_Stub] = []
        self._made: dict[int, str] = {}
        self._names: set[str] = set()

    def spec(
        self,
        assertion: Mapping[str, Any],
        kind: str,
        inverse: bool,
        owner: str,
        base: str,
        transform: str | None,
    ) -> str:
        name = self._made.get(id(assertion))
        if name is None:
            number = sum(stub.test == owner for stub in self.stubs) + 1
            name = re.sub(r"\W", "_", f"{base}_{number}")
            name = name if name.startswith("check") else f"check_{name}"
            while name in self._names:
                name += "_"
            self._names.add(name)
            self._made[id(assertion)] = name
            code = assertion.get("value")
            shown = code if isinstance(code, str) else json.dumps(_plain(code), ensure_ascii=False)
            threshold = assertion.get("threshold")
            self.stubs.append(_Stub(name, kind, owner, shown, inverse, threshold, transform))
        return f"{CHECKS_MODULE}:{name}"


@dataclass
class _Context:
    """What mapping one test's assertions needs from outside it."""

    folder: _Folder
    test: str  # "test 3 (its description)"
    name: str  # the test's case id, before any suffix
    stubs: _Stubs
    judges: list[Any]  # promptfoo grader providers named on the way
    variables: Mapping[str, Any] = field(default_factory=dict)
    transform: str | None = None
    inherited: bool = False  # the assertion being mapped came from defaultTest


_TEXT_KINDS = {
    "contains": ("contains", False),
    "icontains": ("contains", True),
    "contains-all": ("contains", False),
    "icontains-all": ("contains", True),
    "contains-any": ("any", False),
    "icontains-any": ("any", True),
}


def _needle(value: Any, kind: str) -> str:
    if (isinstance(value, str) and value) or (
        isinstance(value, int | float) and not isinstance(value, bool) and not _nan(value)
    ):
        return js_string(value)
    raise _NeedsPerson(f"`{kind}` takes a non-empty string or a number; promptfoo refuses this")


def _nan(value: float) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _needles(value: Any, kind: str, notes: list[str]) -> list[str]:
    if isinstance(value, str):
        try:
            items: list[Any] = split_values(value)
        except ValueError as exc:
            raise _NeedsPerson(f"`{kind}`: promptfoo refuses this value ({exc})") from None
        naive = [part.strip() for part in value.split(",")]
        if items != naive and '"' in value:
            notes.append(
                f"`{kind}` value {_shown(value, 80)} read as {_shown(items, 120)}; promptfoo "
                f"releases before March 2026 read it as {_shown(naive, 120)}"
            )
    elif isinstance(value, list):
        items = value
    else:
        raise _NeedsPerson(f"`{kind}` takes a list (or a comma-separated string)")
    if not items:
        raise _NeedsPerson(f"`{kind}` with no values: promptfoo fails it on every output")
    if any(isinstance(item, dict | list) or item is None for item in items):
        raise _NeedsPerson(f"`{kind}`: a value that is not text or a number")
    return [js_string(item) for item in items]


def _file_value(value: Any, context: _Context, what: str) -> Any:
    """An assertion value given as `file://…`: .txt is its text, .json/.yaml parsed."""
    if not (isinstance(value, str) and value.startswith("file://")):
        return value
    path = context.folder.paths(value, None, what)[0]
    if path.suffix in (".json", ".yaml", ".yml"):
        return _parse(context.folder.text(path, context.folder.config), path)
    if path.suffix == ".txt":
        return context.folder.text(path, context.folder.config).strip()
    raise _NeedsPerson(f"`{what}` reads {value}, which promptfoo runs or refuses; port it by hand")


def _map_assertion(assertion: Mapping[str, Any], expect: _Expect, context: _Context) -> str:
    """Add one assertion's checks to `expect`; returns what it became, or raises _NeedsPerson."""
    kind = str(assertion.get("type", ""))
    inverse = kind.startswith("not-")
    base = kind.removeprefix("not-")
    notes: list[str] = []
    weight = assertion.get("weight", 1)
    if not isinstance(weight, int | float) or isinstance(weight, bool) or weight < 0:
        raise _NeedsPerson(f"weight {weight!r} is not a number ≥ 0")
    if weight == 0:
        return "not carried over: with `weight: 0` promptfoo never fails a test on it (a metric)"
    transform = assertion.get("transform") or context.transform
    if transform is not None and base not in ("javascript", "python"):
        raise _NeedsPerson(
            f"promptfoo judges the output after `transform: {printable(str(transform))[:120]}`; "
            "casegate judges the output text as it is"
        )
    if base in ("javascript", "python"):
        return _stub(assertion, kind, inverse, context)
    raw = assertion.get("value")
    value = _render_value(_file_value(raw, context, kind), context.variables)
    if base in _TEXT_KINDS:
        requirement, insensitive = _TEXT_KINDS[base]
        if base in ("contains", "icontains"):
            needles = [_needle(value, kind)]
        else:
            needles = _needles(value, kind, notes)
        if inverse:
            requirement = {"contains": "not_contains", "any": "not_contains"}[requirement]
            if base.endswith("-all"):
                requirement = "not_all"
        expect.texts.append(_Text(requirement, needles, insensitive))
        return _described(kind, value, notes)
    if base == "equals":
        if isinstance(value, dict | list) or value is None:
            raise _NeedsPerson("`equals` with a JSON value (deep equality) has no casegate check")
        expect.texts.append(_Text("not_equals" if inverse else "equals", [js_string(value)]))
        return _described(kind, value, notes)
    if base == "starts-with":
        if not isinstance(value, str) or not value:
            raise _NeedsPerson("`starts-with` takes a non-empty string")
        (expect.forbidden if inverse else expect.patterns).append("^" + re.escape(value))
        return _described(kind, value, notes)
    if base == "regex":
        return _map_regex(kind, value, inverse, expect)
    if base == "is-json" and not inverse:
        return _map_json(value, expect)
    if base == "word-count" and not inverse:
        return _map_words(value, expect)
    if base == "llm-rubric" and not inverse:
        if not isinstance(value, str) or not value.strip():
            raise _NeedsPerson("`llm-rubric` with a rubric that is not text")
        expect.rubrics.append(value.strip())
        context.judges.extend(p for p in (assertion.get("provider"),) if p is not None)
        for key, why in (
            ("threshold", "casegate's judge answers PASS or FAIL, with no score"),
            ("rubricPrompt", "casegate's judge prompt is its own, versioned"),
        ):
            if assertion.get(key) is not None:
                notes.append(f"`{key}` not carried over: {why}")
        return _described(kind, value, notes)
    if base == "assert-set":
        raise _NeedsPerson(
            f"`assert-set` with `threshold: {js_string(assertion.get('threshold'))}` passes when "
            "that share of its assertions passes; casegate's checks all must pass"
        )
    if base == "contains-json":
        raise _NeedsPerson("casegate's check for JSON inside prose is not built yet")
    if base in PLANNED:
        raise _NeedsPerson(f"casegate's check for `{base}` is planned, not built yet")
    raise _NeedsPerson(f"casegate has no check for `{kind}`")


def _described(kind: str, value: Any, notes: Sequence[str]) -> str:
    return f"`{kind}` {_shown(value, 120)}" + "".join(f"; {note}" for note in notes)


def _map_regex(kind: str, value: Any, inverse: bool, expect: _Expect) -> str:
    if not isinstance(value, str) or not value:
        raise _NeedsPerson("`regex` takes a non-empty pattern")
    try:
        checks.REGISTRY["regex"]("regex", value, checks.Modifiers())
    except checks.CheckSpecError as exc:
        raise _NeedsPerson(f"the pattern is not valid in Python's `re` syntax: {exc}") from None
    kept = expect.forbidden if inverse else expect.patterns
    if kept:  # the case's one `regex` (or `not_regex`) key will hold them together
        together = (_any_of if inverse else _all_of)([*kept, value])
        try:
            checks.REGISTRY["regex"]("regex", together, checks.Modifiers())
        except checks.CheckSpecError as exc:
            raise _NeedsPerson(f"it cannot share the case's pattern with others ({exc})") from None
        if _NUMBERED_REFERENCE.search(value):
            raise _NeedsPerson("its numbered back-reference would point elsewhere beside others")
    kept.append(value)
    return _described(kind, value, [])


def _map_json(value: Any, expect: _Expect) -> str:
    if value in (None, ""):
        expect.json = True
        return "`is-json` → `json: true`"
    schema = value
    if isinstance(value, str):
        try:
            schema = yaml.load(value, Loader=_Yaml12Loader)  # noqa: S506 - a SafeLoader subclass
        except (yaml.YAMLError, YamlSyntaxError, ValueError, RecursionError) as exc:
            raise _NeedsPerson(f"its JSON schema does not parse ({exc})") from None
    if not isinstance(schema, dict):
        raise _NeedsPerson("`is-json` with a schema that is not a mapping")
    schema = _plain(schema)
    try:
        checks.REGISTRY["json_schema"]("json_schema", schema, checks.Modifiers())
    except checks.CheckSpecError as exc:
        raise _NeedsPerson(str(exc)) from None
    expect.schemas.append(schema)
    return f"`is-json` with a schema → `json_schema` {_shown(schema, 120)}"


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _map_words(value: Any, expect: _Expect) -> str:
    if _whole(value):
        low = high = value
    elif isinstance(value, dict) and set(value) <= {"min", "max"} and value:
        low, high = value.get("min"), value.get("max")
        if not all(bound is None or _whole(bound) for bound in (low, high)):
            raise _NeedsPerson("`word-count` bounds must be whole numbers")
        if low is not None and high is not None and low > high:
            raise _NeedsPerson("`word-count` with min above max: promptfoo refuses it")
    else:
        raise _NeedsPerson("`word-count` takes a whole number or {min, max}")
    if low is not None:
        expect.min_words = max(low, expect.min_words or 0)
    if high is not None:
        expect.max_words = high if expect.max_words is None else min(high, expect.max_words)
    return f"`word-count` {_shown(value, 60)} → min_words/max_words"


def _stub(assertion: Mapping[str, Any], kind: str, inverse: bool, context: _Context) -> str:
    owner, base = ("defaultTest", "default") if context.inherited else (context.test, context.name)
    transform = assertion.get("transform") or context.transform
    shown = None if transform is None else printable(str(transform))
    spec = context.stubs.spec(assertion, kind, inverse, owner, base, shown)
    raise _NeedsPerson(f"`{kind}` is code: the stub `{spec}` fails until a person ports it", spec)


# --- tests → cases -------------------------------------------------------------------


@dataclass
class _Report:
    """What became of one promptfoo test, for MIGRATION.md."""

    number: int
    title: str
    where: str
    cases: list[str] = field(default_factory=list)
    mapped: list[str] = field(default_factory=list)
    needs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    assertions: int = 0
    assertions_mapped: int = 0
    skipped: list[str] = field(default_factory=list)
    became: str = ""  # the first case's `expect`, shown

    @property
    def mechanical(self) -> bool:
        return bool(self.cases) and not self.needs and not self.skipped


@dataclass
class _Draft:
    id: str
    input: dict[str, Any]
    expect: dict[str, Any]
    extra: dict[str, Any]
    report: _Report
    notes: list[str] = field(default_factory=list)


_TEST_KEYS = {"description", "vars", "assert", "threshold", "metadata", "options", "weight"}
_HANDLED_OPTIONS = {"disableDefaultAsserts", "provider", "runSerially", "transform"}


_TEST_SHAPES: dict[str, tuple[type, ...]] = {
    "vars": (dict, str),
    "assert": (list,),
    "options": (dict,),
    "metadata": (dict,),
}


def _check_shape(test: Any, path: Path, what: str) -> None:
    """A test (or defaultTest) whose parts have the types promptfoo requires; else one line."""
    if not isinstance(test, dict):
        raise _problem(path, _line(test), f"{what} must be a mapping")
    for key, shapes in _TEST_SHAPES.items():
        value = test.get(key)
        if value is not None and not isinstance(value, shapes):
            names = " or ".join("a mapping" if s is dict else f"a {s.__name__}" for s in shapes)
            raise _problem(path, _line(test, key), f"{what}: {key} must be {names}")


def _merge_default(test: Mapping[str, Any], default: Mapping[str, Any]) -> dict[str, Any]:
    """promptfoo's defaultTest merge: vars, metadata and options under the test's own."""
    merged: dict[str, Any] = {**default, **test}
    for key in ("vars", "metadata", "options"):
        inner = [part.get(key) for part in (default, test)]
        if all(isinstance(part, dict) or part is None for part in inner):
            merged[key] = {**(inner[0] or {}), **(inner[1] or {})}
    options = merged.get("options") or {}
    own = list(test.get("assert") or [])
    inherited = [] if options.get("disableDefaultAsserts") else list(default.get("assert") or [])
    merged["assert"] = [*inherited, *own]
    merged["_inherited"] = len(inherited)
    located_copy = LineDict(merged)  # keeps the test's lines for messages
    located_copy.line = _line(test) or 0
    located_copy.key_lines = dict(getattr(test, "key_lines", {}))
    return located_copy


def _combinations(variables: Mapping[str, Any]) -> list[dict[str, Any]]:
    """promptfoo's generateVarCombinations: a var holding a list of strings runs once each."""
    keys = list(variables)
    choices = [
        variables[key]
        if isinstance(variables[key], list)
        and variables[key]
        and isinstance(variables[key][0], str)
        else [variables[key]]
        for key in keys
    ]
    if math.prod(len(choice) for choice in choices) > MAX_COMBINATIONS:
        return []
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*choices)]


def _prepared_vars(
    variables: Mapping[str, Any], folder: _Folder, report: _Report
) -> dict[str, Any] | None:
    """The vars as promptfoo renders them: files read, one trailing newline dropped, `{{x}}`
    references between vars resolved. None when a var needs a person."""
    prepared: dict[str, Any] = {}
    for key, value in variables.items():
        if isinstance(value, str) and value.startswith("file://"):
            path = folder.paths(value, None, f"vars.{key}")[0]
            if path.suffix in _CODE_SUFFIXES or path.suffix in (".pdf", ".png", ".jpg", ".jpeg"):
                report.skipped.append(f"var `{key}` comes from {value}, which casegate cannot read")
                return None
            text = folder.text(path, folder.config)
            if path.suffix in (".yaml", ".yml"):
                text = json.dumps(_plain(_parse(text, path)), ensure_ascii=False, default=str)
            value = text.strip()
        if isinstance(value, str):
            value = value.removesuffix("\n")
        elif isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
            value = int(value)  # JavaScript prints 1.0 as "1"
        elif value is None:
            value = ""  # nunjucks prints null as nothing
        prepared[str(key)] = _plain(value)
    _resolve_between(prepared)
    return prepared


def _resolve_between(variables: dict[str, Any]) -> None:
    """promptfoo's resolveVariables: `{{name}}` inside a var, up to five rounds."""
    reference = re.compile(r"\{\{\s*(\w+)\s*\}\}", re.ASCII)
    for _ in range(5):
        changed = False
        for key, value in variables.items():
            match = reference.search(value) if isinstance(value, str) else None
            if match and match.group(1) in variables:
                replacement = js_string(variables[match.group(1)])
                variables[key] = value.replace(match.group(0), replacement, 1)
                changed = True
        if not changed:
            return


def _tags(metadata: Any, report: _Report) -> list[str]:
    tags: list[str] = []
    for key, value in (metadata or {}).items() if isinstance(metadata, dict) else ():
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, dict | list):
                report.notes.append(f"metadata `{key}` not carried over (not text)")
            elif key == "tags":
                tags.append(js_string(item))
            else:
                tags.append(f"{key}={js_string(item)}")
    return list(dict.fromkeys(tags))


def _test_needs(test: Mapping[str, Any], report: _Report, context: _Context) -> None:
    options: dict[str, Any] = test["options"] if isinstance(test.get("options"), dict) else {}
    if test.get("threshold") is not None:
        report.needs.append(
            f"`threshold: {js_string(test['threshold'])}`: promptfoo passes the test when the "
            "weighted score of its assertions reaches it; casegate passes a case when every "
            "check passes"
        )
    if test.get("provider") is not None:
        report.needs.append(
            f"the test runs its own provider {_shown(_scrubbed(test['provider']), 80)}; casegate "
            "runs one system per config"
        )
    if options.get("provider") is not None:
        context.judges.append(options["provider"])
    if options.get("transform") is not None:
        context.transform = str(options["transform"])
    for key in sorted(set(options) - _HANDLED_OPTIONS):
        report.needs.append(
            f"`options.{key}` {_shown(options[key], 80)} not carried over (casegate has none)"
        )
    for key in sorted(set(test) - _TEST_KEYS - {"_inherited"}):
        report.notes.append(f"`{key}` not carried over")


def _assertions(test: Mapping[str, Any], path: Path, root: Any) -> Iterator[tuple[Any, bool]]:
    """(assertion, inherited from defaultTest), `$ref`s resolved, plain assert-sets flattened."""
    inherited = int(test.get("_inherited", 0))
    for index, raw in enumerate(test.get("assert") or []):
        assertion = _resolve_ref(raw, root, path)
        if (
            isinstance(assertion, dict)
            and assertion.get("type") == "assert-set"
            and assertion.get("threshold") is None
            and isinstance(assertion.get("assert"), list)
        ):
            # Without a threshold every assertion of the set must pass: the case's own rule.
            for inner in assertion["assert"]:
                yield _resolve_ref(inner, root, path), index < inherited
        else:
            yield assertion, index < inherited


def _draft_cases(
    test: Mapping[str, Any],
    report: _Report,
    context: _Context,
    path: Path,
    root: Any,
    provenance: str,
) -> list[_Draft]:
    _test_needs(test, report, context)
    variables = test.get("vars") or {}
    if isinstance(variables, str):
        variables = context.folder.document(variables, None, f"test {report.number} vars")
    if not isinstance(variables, dict):
        raise _problem(path, _line(test, "vars"), f"test {report.number}: vars must be a mapping")
    assertions = list(_assertions(test, path, root))
    for assertion, _ in assertions:
        if not isinstance(assertion, dict) or not isinstance(assertion.get("type"), str):
            raise _problem(
                path,
                _line(assertion) or _line(test, "assert"),
                f"test {report.number}: an assertion must be a mapping with a `type`",
            )
    extra: dict[str, Any] = {"provenance": provenance}
    if isinstance(test.get("description"), str) and test["description"].strip():
        extra["note"] = test["description"].strip()
    tags = _tags(test.get("metadata"), report)
    if tags:
        extra["tags"] = tags
    weight = test.get("weight")
    if isinstance(weight, int | float) and not isinstance(weight, bool) and 0 < weight < math.inf:
        extra["weight"] = weight
    drafts: list[_Draft] = []
    combos = _combinations(variables)
    if not combos:
        report.skipped.append(
            f"its array vars make more than {MAX_COMBINATIONS:,} combinations; write the cases "
            "you want to keep by hand"
        )
        return []
    for number, combo in enumerate(combos, start=1):
        prepared = _prepared_vars(combo, context.folder, report)
        if prepared is None:
            return []
        context.variables = prepared
        expect = _Expect()
        described: list[str] = []
        needs: list[str] = []
        mapped = 0
        for assertion, inherited in assertions:
            origin = " (from defaultTest)" if inherited else ""
            context.inherited = inherited
            try:
                described.append(_map_assertion(assertion, expect, context) + origin)
                mapped += 1
            except _NeedsPerson as exc:
                needs.append(f"{exc.args[0]}{origin}; original: {_shown(assertion)}")
                if len(exc.args) > 1:
                    expect.custom.append(exc.args[1])
        built, notes = expect.build()
        if number == 1:
            report.assertions, report.assertions_mapped = len(assertions), mapped
            report.mapped.extend(described)
            report.needs.extend(needs)
            report.notes.extend(notes)
        if not built:
            report.skipped.append(
                "no assertion became a check, and a casegate case needs at least one"
                if assertions
                else "it has no assertion (promptfoo runs it for a person to read); a casegate "
                "case needs at least one check"
            )
            return []
        if number == 1:
            report.became = _shown(built, 600)
        drafts.append(_Draft("", prepared, built, extra, report))
        if len(combos) > 1 and number == 1:
            report.notes.append(f"its array vars run as {len(combos)} cases, one per combination")
    return drafts


# --- the suite ------------------------------------------------------------------------


@dataclass
class _Variant:
    provider: _Provider
    prompt: _Prompt
    config_name: str
    prompt_file: str | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    """What an import wrote and how much of the suite mapped mechanically."""

    out: Path
    written: list[Path]
    tests: int
    tests_mapped: int
    cases: int
    assertions: int
    assertions_mapped: int

    def summary_line(self) -> str:
        def share(part: int, whole: int) -> str:
            return f"{part} of {whole} ({part / whole:.0%})" if whole else "0 of 0"

        return (
            f"imported {self.tests} promptfoo test(s) as {self.cases} case(s) into {self.out}, "
            f"following {SEMANTICS}: {share(self.assertions_mapped, self.assertions)} "
            f"assertions and {share(self.tests_mapped, self.tests)} tests mapped mechanically; "
            f"what needs a person is listed in {self.out / 'MIGRATION.md'}"
        )


def _load_tests(config: Mapping[str, Any], folder: _Folder) -> list[tuple[Any, Path, Any]]:
    """(test, the file it came from, that file's document) for every test."""
    raw = config.get("tests")
    line = _line(config, "tests")
    if raw is None:
        return []
    entries = raw if isinstance(raw, list) else [raw]
    tests: list[tuple[Any, Path, Any]] = []
    for entry in entries:
        if isinstance(entry, str):
            for path in folder.paths(entry, line, "tests"):
                tests.extend(_tests_in_file(path, folder, line))
        elif isinstance(entry, dict):
            tests.append((entry, folder.config, config))
        else:
            raise _problem(folder.config, line, "tests must be test mappings or file references")
    return tests


def _tests_in_file(path: Path, folder: _Folder, line: int | None) -> list[tuple[Any, Path, Any]]:
    if path.suffix not in (".yaml", ".yml", ".json", ".jsonl"):
        raise _problem(
            folder.config,
            line,
            f"tests: {path.name}: only YAML, JSON and JSONL test files are imported "
            "(convert CSV and spreadsheets to YAML first)",
        )
    text = folder.text(path, folder.config, line)
    if path.suffix == ".jsonl":
        rows = [_parse(row, path.with_suffix(".json")) for row in text.splitlines() if row.strip()]
        return [(row, path, row) for row in rows]
    document = _parse(text, path)
    items = document if isinstance(document, list) else [document]
    return [(item, path, document) for item in items]


def _where(path: Path, folder: _Folder, line: int | None) -> str:
    shown = (
        path.resolve().relative_to(folder.root)
        if path.resolve().is_relative_to(folder.root)
        else path
    )
    return f"{shown}:{line}" if line else str(shown)


def _unique_id(base: str, taken: set[str]) -> str:
    base = base[: MAX_ID_LENGTH - 8] or "test"
    candidate, counter = base, 1
    while candidate in taken:
        counter += 1
        candidate = f"{base}-{counter}"
    taken.add(candidate)
    return candidate


class _Dumper(yaml.SafeDumper):
    """Multi-line text as `|` blocks, so prompts and rubrics stay readable in review."""


def _represent_text(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    return dumper.represent_scalar(_TAG + "str", data, style="|" if "\n" in data else None)


_Dumper.add_representer(str, _represent_text)


def _dump(data: Any) -> str:
    return yaml.dump(_plain(data), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def _validated(draft: _Draft, templates: Sequence[_Template]) -> str | None:
    """Why casegate would refuse this case (or fail to render its message), else None."""
    record = {"id": draft.id, "input": draft.input, "expect": draft.expect, **draft.extra}
    try:
        loaded = load_yaml(_dump(record))
        case = Case.model_validate(loaded)
        checks.build(case.expect)
    except (YamlSyntaxError, ValueError, checks.CheckSpecError) as exc:
        return " ".join(str(exc).split())[:300]
    if "messages" in case.input:
        return "a var named `messages` would be sent as the whole conversation in casegate"
    for template in templates:
        try:
            render(template.source, case.id, case.input)
        except SystemCallError as exc:
            return str(exc)
    return None


def _fill_missing(draft: _Draft, templates: Sequence[_Template]) -> None:
    """A var the template reads but the test lacks renders as nothing in promptfoo."""
    missing = sorted({n for t in templates for n in t.names} - set(draft.input) - {"env"})
    for name in missing:
        draft.input[name] = ""
    if missing:
        draft.notes.append(
            f"`{draft.id}`: {', '.join(missing)} set to '' (promptfoo renders a missing var as "
            "nothing; casegate refuses it)"
        )


def _variants(providers: Sequence[_Provider], prompts: Sequence[_Prompt]) -> list[_Variant]:
    variants: list[_Variant] = []
    taken: set[str] = set()
    for provider in providers:
        chosen = [
            prompt
            for prompt in prompts
            if provider.prompts is None
            or any(prompt.label == p or prompt.label.startswith(f"{p}:") for p in provider.prompts)
        ] or list(prompts)
        for prompt in chosen:
            if not variants:
                name = "casegate.yml"
            else:
                middle = provider.label + (
                    "" if len(prompts) == 1 else "." + (_slug(prompt.label, 40) or "prompt")
                )
                name = f"casegate.{middle}.yml"
                counter = 1
                while name in taken:
                    counter += 1
                    name = f"casegate.{middle}-{counter}.yml"
            taken.add(name)
            variants.append(_Variant(provider, prompt, name))
    return variants


def _judge_pin(candidates: Sequence[Any], notes: list[str]) -> dict[str, Any]:
    for candidate in candidates:
        provider_id = candidate if isinstance(candidate, str) else None
        if isinstance(candidate, dict) and isinstance(candidate.get("id"), str):
            provider_id = candidate["id"]
        classified = _classify(provider_id) if provider_id else None
        if classified:
            kind, api, model = classified
            notes.append(f"the judge is pinned to promptfoo's grader `{provider_id}`")
            pin: dict[str, Any] = {"provider": kind, "model": model, "prompt_version": 1}
            if api == "responses":
                pin["api"] = api
            return {**pin, "temperature": 0}
    return {**JUDGE_STUB, "temperature": 0}


def _suite_name(config: Mapping[str, Any], path: Path) -> str:
    description = config.get("description")
    name = _slug(description, 60) if isinstance(description, str) else ""
    name = name.lstrip("-._") or _slug(path.resolve().parent.name, 60).lstrip("-._")
    return name or "promptfoo"


def _config_problems(config: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(needs a person, notes) for the config's top-level keys casegate does not take."""
    needs, notes = [], []
    repeat = _repeat(config)
    if repeat:
        notes.append(
            f"`repeat: {repeat}` became `samples: {repeat}`: promptfoo counts each run on its "
            f"own, casegate passes a case when its {repeat} samples pass (`min_pass_rate`)"
        )
    for key, why in (
        ("scenarios", "scenarios (vars × tests) are not imported"),
        ("nunjucksFilters", "custom nunjucks filters are code casegate does not run"),
        ("extensions", "extension hooks are code casegate does not run"),
        ("redteam", "red-team generation is not imported"),
    ):
        if config.get(key) is not None:
            needs.append(f"`{key}`: {why}")
    for key, why in (
        ("derivedMetrics", "casegate reports pass rates, not derived metrics"),
        ("env", "its values are not copied; set the environment where casegate runs"),
        ("outputPath", "casegate writes its results under .casegate/"),
    ):
        if config.get(key) is not None:
            notes.append(f"`{key}` not carried over: {why}")
    return needs, notes


def _repeat(config: Mapping[str, Any]) -> int | None:
    for block in ("evaluateOptions", "commandLineOptions"):
        options = config.get(block)
        repeat = options.get("repeat") if isinstance(options, dict) else None
        if isinstance(repeat, int) and not isinstance(repeat, bool) and 1 < repeat <= 1000:
            return repeat
    return None


def import_promptfoo(config_path: Path, out: Path) -> Outcome:
    """Read a promptfoo config, write the casegate suite into `out`; PromptfooError or
    ConfigError (a file that exists) before anything is written."""
    folder = _Folder(config_path)
    if not config_path.is_file():
        raise PromptfooError(f"{config_path}: no such promptfoo config file")
    document = _parse(folder.text(config_path), config_path)
    if not isinstance(document, dict):
        raise _problem(
            config_path, 1, "a promptfoo config is a mapping (prompts, providers, tests)"
        )
    prompts = _read_prompts(document, folder)
    providers = _read_providers(document, folder)
    variants = _variants(providers, prompts)
    suite = _suite_name(document, config_path)
    default = _resolve_ref(document.get("defaultTest") or {}, document, config_path)
    if isinstance(default, str):
        default = folder.document(default, _line(document, "defaultTest"), "defaultTest")
    _check_shape(default, config_path, "defaultTest")

    stubs = _Stubs()
    judges: list[Any] = []
    reports: list[_Report] = []
    drafts: list[_Draft] = []
    taken: set[str] = set()
    templates = [variant.prompt.message for variant in variants]
    for number, (test, path, root) in enumerate(_load_tests(document, folder), start=1):
        test = _resolve_ref(test, root, path)
        _check_shape(test, path, f"test {number}")
        where = _where(path, folder, _line(test))
        title = str(test.get("description") or f"test {number}")
        report = _Report(number, printable(title), where)
        reports.append(report)
        base = _slug(test["description"], 120) if isinstance(test.get("description"), str) else ""
        base = base or f"test-{number}"
        context = _Context(
            folder,
            f"test {number}" + (f" ({printable(title)})" if test.get("description") else ""),
            base,
            stubs,
            judges,
        )
        merged = _merge_default(test, default)
        new = _draft_cases(
            merged, report, context, path, root, f"promptfoo {config_path.name}, test {number}"
        )
        for index, draft in enumerate(new, start=1):
            draft.id = _unique_id(base if len(new) == 1 else f"{base}-{index}", taken)
            _fill_missing(draft, templates)
            problem = _validated(draft, templates)
            if problem:
                report.skipped.append(f"case `{draft.id}` not written: {problem}")
                continue
            report.cases.append(draft.id)
            report.notes.extend(draft.notes)
            drafts.append(draft)
    if not drafts:
        reasons = "; ".join(dict.fromkeys(s for r in reports for s in r.skipped)) or "it has none"
        raise _problem(
            config_path, _line(document, "tests"), f"no test became a case ({reasons[:300]})"
        )

    suite_needs, suite_notes = _config_problems(document)
    uses_judge = any("judge" in draft.expect for draft in drafts)
    pin = _judge_pin(judges, suite_notes) if uses_judge else None
    files = _files(suite, variants, drafts, stubs.stubs, pin, _repeat(document), config_path)
    files["MIGRATION.md"] = _migration(
        config_path,
        suite,
        variants,
        reports,
        stubs.stubs,
        pin,
        suite_needs,
        suite_notes,
        default,
        sorted(files),
    )
    written = _write_all(out, files)
    return Outcome(
        out,
        written,
        tests=len(reports),
        tests_mapped=sum(r.mechanical for r in reports),
        cases=len(drafts),
        assertions=sum(r.assertions for r in reports),
        assertions_mapped=sum(r.assertions_mapped for r in reports),
    )


# --- writing ---------------------------------------------------------------------------


def _files(
    suite: str,
    variants: Sequence[_Variant],
    drafts: Sequence[_Draft],
    stubs: Sequence[_Stub],
    pin: dict[str, Any] | None,
    samples: int | None,
    config_path: Path,
) -> dict[str, str]:
    files: dict[str, str] = {}
    cases_file = f"cases/{suite}.yaml"
    prompt_files: dict[str, str] = {}  # system prompt text → its file
    for variant in variants:
        system = variant.prompt.system
        if system is not None and system not in prompt_files:
            name = suite if not prompt_files else f"{suite}-{len(prompt_files) + 1}"
            prompt_files[system] = f"prompts/{name}.md"
        variant.prompt_file = prompt_files.get(system) if system is not None else None
        files[variant.config_name] = _config_text(
            suite, variant, cases_file, pin, samples, config_path
        )
    for text, name in prompt_files.items():
        files[name] = text if text.endswith("\n") else text + "\n"
    files[cases_file] = (
        f"# Imported from promptfoo ({config_path.name}) by `casegate import promptfoo`, "
        f"following {SEMANTICS}.\n# MIGRATION.md says, per test, what was mapped and what "
        "needs a person.\n"
        + _dump([{"id": d.id, "input": d.input, "expect": d.expect, **d.extra} for d in drafts])
    )
    if stubs:
        files[f"{CHECKS_MODULE}.py"] = _checks_module(stubs)
    if any(not variant.provider.known for variant in variants):
        files[f"{SYSTEMS_MODULE}.py"] = _SYSTEMS_MODULE_TEXT
    return files


def _config_text(
    suite: str,
    variant: _Variant,
    cases_file: str,
    pin: dict[str, Any] | None,
    samples: int | None,
    config_path: Path,
) -> str:
    provider, prompt = variant.provider, variant.prompt
    system: dict[str, Any] = {"name": provider.label, **provider.system}
    if prompt.params and provider.known:
        merged = {**system.get("params", {})}
        for key, value in prompt.params.items():
            if _system_problems({**provider.system, "params": {key: _plain(value)}}):
                variant.notes.append(f"the prompt's config `{key}` not carried over")
            else:
                merged[key] = _plain(value)
        system["params"] = merged
    elif prompt.params:
        variant.notes.append("the prompt's config is not carried over to a stub system")
    if not system.get("params"):
        system.pop("params", None)
    if variant.prompt_file:
        system["prompt_file"] = variant.prompt_file
    system["message"] = prompt.message.source
    data: dict[str, Any] = {"suite": suite, "cases": cases_file, "system": system}
    if samples:
        data["samples"] = samples
    data.update(
        {
            "mode": "replay",
            "recordings": f"recordings/{suite}",
            "baseline": f"baselines/{suite}.json",
        }
    )
    header = (
        f"# Imported from promptfoo ({config_path.name}) by `casegate import promptfoo`, "
        f"following {SEMANTICS}.\n"
        f"# Provider `{printable(provider.id)}`, prompt {printable(prompt.label)!r}. "
        "MIGRATION.md lists what still needs a person.\n"
    )
    text = header + _dump(data)
    if pin is not None:
        text += (
            "# The judge for the cases that came from llm-rubric: pin the judge you trust (a "
            "dated model id)\n# and calibrate it (casegate judge calibrate LABELS.jsonl) before "
            "trusting those cases.\n" + _dump({"judge": pin})
        )
    return text


def _comment(text: str) -> list[str]:
    return [f"    # {printable(line)}".rstrip() for line in text.splitlines() or [""]]


def _checks_module(stubs: Sequence[_Stub]) -> str:
    lines = [
        '"""Custom checks for the `javascript` and `python` assertions imported from promptfoo.',
        "",
        "casegate never runs promptfoo's code: each check below fails, saying so, until a",
        "person ports it. A check receives the output text and the case, and returns a bool",
        'or (bool, reason); see "Checks" in casegate\'s README.',
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any",
    ]
    for stub in stubs:
        verdict = (
            "passes when it returns a score ≥ threshold"
            if stub.threshold is not None
            else ("passes when it returns true, a score > 0 or {pass: true}")
        )
        if stub.inverse:
            verdict += "; as `not-…`, the verdict is inverted"
        if stub.transform is not None:
            verdict += f"; `output` is the output after `transform: {stub.transform}`"
        reason = (
            f"not migrated: {stub.kind} assertion of promptfoo {stub.test}; port {stub.function}"
        )
        lines += [
            "",
            "",
            f"def {stub.function}(output: str, case: Any) -> tuple[bool, str]:",
            *_comment(f"promptfoo {stub.test}, `{stub.kind}` ({verdict}):"),
            *_comment(stub.code),
            f"    return (False, {reason!r})",
        ]
    return "\n".join(lines) + "\n"


_SYSTEMS_MODULE_TEXT = '''"""A stub system under test, for a promptfoo provider casegate lacks.

Write `not_migrated`, or point `system.target` at your own callable: it receives the case
input and the resolved system mapping (the promptfoo provider id and its config, secrets
left out, are under `promptfoo_provider` and `promptfoo_config`) and returns the output.
"""

from __future__ import annotations

from typing import Any


def not_migrated(case_input: dict[str, Any], system: dict[str, Any]) -> str:
    raise NotImplementedError(
        f"not migrated: promptfoo provider {system.get('promptfoo_provider')!r} has no casegate "
        "adapter; write promptfoo_systems.not_migrated, or use provider openai or anthropic"
    )
'''


def _migration(
    config_path: Path,
    suite: str,
    variants: Sequence[_Variant],
    reports: Sequence[_Report],
    stubs: Sequence[_Stub],
    pin: dict[str, Any] | None,
    suite_needs: Sequence[str],
    suite_notes: Sequence[str],
    default: Mapping[str, Any],
    written: Sequence[str],
) -> str:
    assertions = sum(r.assertions for r in reports)
    mapped = sum(r.assertions_mapped for r in reports)
    tests_mapped = sum(r.mechanical for r in reports)
    cases = sum(len(r.cases) for r in reports)
    out = [
        "# Migration from promptfoo",
        "",
        f"Imported from `{config_path.name}` by `casegate import promptfoo` on "
        f"{dt.date.today().isoformat()}, following the semantics of **{SEMANTICS}** "
        "(its documentation and assertion code).",
        "",
        CONTAINS_LIST_PARSING,
        "",
        f"**{mapped} of {assertions} assertions and {tests_mapped} of {len(reports)} tests "
        f"were mapped mechanically**; {len(reports)} test(s) became {cases} case(s). A test "
        "counts as mapped when every assertion and setting it has became casegate checks.",
        "",
        "## Written",
        "",
        *[f"- `{name}`" for name in written],
        "",
        "## The suite",
        "",
    ]
    suite_lines = [f"- {line}" for line in _suite_lines(variants, default, pin, stubs)]
    suite_lines += [f"- **needs a person**: {line}" for line in suite_needs]
    suite_lines += [f"- {line}" for line in suite_notes]
    out += [*suite_lines, "", "## Per test", ""]
    for report in reports:
        cases_text = ", ".join(f"`{c}`" for c in report.cases) or "no case"
        out += [f"### {report.number}. {_md(report.title)} ({report.where}) → {cases_text}", ""]
        out += [f"- mapped: {line}" for line in report.mapped]
        out += [f"- **needs a person**: {printable(line)}" for line in report.needs]
        out += [f"- **not written**: {printable(line)}" for line in report.skipped]
        out += [f"- note: {printable(line)}" for line in dict.fromkeys(report.notes)]
        if report.became:
            out.append(f"- casegate checks (`expect`): {report.became}")
        out.append("")
    return "\n".join(out)


def _suite_lines(
    variants: Sequence[_Variant],
    default: Mapping[str, Any],
    pin: dict[str, Any] | None,
    stubs: Sequence[_Stub],
) -> Iterable[str]:
    if len(variants) > 1:
        yield (
            f"promptfoo compares {len(variants)} provider/prompt pairs side by side; casegate "
            "runs one system per config: `casegate.yml` holds the first, and each other one "
            "has its own config over the same cases (`casegate run -c casegate.<name>.yml`; "
            "compare two runs with `casegate compare`)"
        )
    told: set[int] = set()  # a provider's own problems are said once, at its first config
    for variant in variants:
        provider, prompt = variant.provider, variant.prompt
        first = id(provider) not in told
        told.add(id(provider))
        yield (
            f"`{variant.config_name}`: provider {_code(printable(provider.id))}"
            + (f", system prompt `{variant.prompt_file}`" if variant.prompt_file else "")
            + f", message from prompt {_code(printable(prompt.label))}"
        )
        needs = [*(provider.needs if first else []), *prompt.needs, *prompt.message.needs]
        for line in needs:
            yield f"**needs a person** (`{variant.config_name}`): {printable(line)}"
        own = provider.notes if first else []
        notes = [*own, *prompt.notes, *prompt.message.notes, *variant.notes]
        for line in dict.fromkeys(notes):
            yield f"`{variant.config_name}`: {printable(line)}"
    if any("tools" in variant.provider.system for variant in variants):
        yield (
            "**needs a person**: the provider declares tools. When the model calls one, "
            "promptfoo's output is the tool calls as JSON, while casegate's output text is the "
            "message text and the calls are judged by `tool_called`, `tool_sequence` and "
            "`tool_args`: review the text assertions of tests that expect a tool call"
        )
    if default.get("assert") or default.get("vars"):
        yield (
            "`defaultTest`: casegate has no suite defaults yet, so its vars and its "
            f"{len(default.get('assert') or [])} assertion(s) were written into every case "
            '(marked "from defaultTest" below)'
        )
    if pin is not None:
        yield (
            f"**needs a person**: the judge pin ({pin['provider']} {pin['model']}) in every "
            "config is a starting point: pin the judge you trust and calibrate it "
            "(`casegate judge calibrate`) before trusting the llm-rubric cases"
        )
    if stubs:
        yield (
            f"**needs a person**: `{CHECKS_MODULE}.py` holds {len(stubs)} stub check(s), one per "
            "`javascript`/`python` assertion, each failing until ported"
        )


def _md(text: str) -> str:
    return re.sub(r"([\\`*_\[\]<>#|])", r"\\\1", printable(text))


def _write_all(out: Path, files: Mapping[str, str]) -> list[Path]:
    """Write every file or none: an existing one is never replaced (ConfigError naming it)."""
    return write_new_files(
        {out / name: text for name, text in files.items()},
        refusal=[
            "{path}: already exists; casegate import writes nothing over it",
            "import into an empty folder (--out DIR), or move those files aside",
        ],
    )
