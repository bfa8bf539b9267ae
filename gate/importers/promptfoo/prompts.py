"""promptfoo's prompts: text, chat turns and files, as casegate prompts and messages."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gate.importers.promptfoo.js import plain
from gate.importers.promptfoo.nunjucks import (
    TEMPLATE_SYNTAX,
    Template,
    jinja_literal,
    port_template,
)
from gate.importers.promptfoo.reading import Folder, line_at, problem_at


@dataclass
class Prompt:
    label: str
    system: str | None
    message: Template
    params: dict[str, Any] = field(default_factory=dict)
    needs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


CODE_SUFFIXES = (".js", ".cjs", ".mjs", ".ts", ".py", ".sh", ".bash", ".rb", ".pl", ".exe")
_PROMPT_SUFFIXES = (".txt", ".md", ".j2", ".json", ".jsonl", ".yaml", ".yml", *CODE_SUFFIXES)


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


def _prompt_from(raw: Any, label: str, params: dict[str, Any]) -> Prompt:
    """One prompt: a chat-format one gives the system turn and the user turn, text is the turn."""
    turns = _chat_turns(raw)
    if turns is None:
        text = raw if isinstance(raw, str) else json.dumps(plain(raw), ensure_ascii=False)
        return Prompt(label, None, port_template(text, f"prompt {label!r}"), params)
    needs: list[str] = []
    systems = [t for t in turns if t["role"] in ("system", "developer")]
    rest = [t for t in turns if t["role"] not in ("system", "developer")]
    system = "\n\n".join(str(t["content"]) for t in systems) or None
    if system is not None and any(mark in system for mark in TEMPLATE_SYNTAX):
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
        last = json.dumps(plain(last), ensure_ascii=False)
    prompt = Prompt(label, system, port_template(last, f"prompt {label!r}"), params, needs)
    return prompt


def _text_prompts(text: str) -> list[str]:
    """A .txt prompt file: several prompts separated by lines of `---`."""
    parts = re.split(r"^---[ \t]*$", text, flags=re.MULTILINE)
    return [part.strip() for part in parts if part.strip()]


def _prompts_from_file(
    folder: Folder, reference: str, label: str | None, params: dict[str, Any], line: int | None
) -> list[Prompt]:
    name = reference.removeprefix("file://")
    if name.startswith("exec:") or name.partition(":")[0].endswith(CODE_SUFFIXES):
        return [_code_prompt(reference, label, params)]
    prompts: list[Prompt] = []
    for path in folder.paths(reference, line, "prompts"):
        shown = label or path.relative_to(folder.root).as_posix()
        if path.suffix in CODE_SUFFIXES:
            prompts.append(_code_prompt(reference, label, params))
            continue
        text = folder.text(path, folder.config, line)
        if path.suffix in (".yaml", ".yml"):
            prompts.append(_prompt_from(folder.parse(text, path), shown, params))
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


def _code_prompt(reference: str, label: str | None, params: dict[str, Any]) -> Prompt:
    shown = label or reference
    placeholder = jinja_literal(f"(not migrated: the prompt comes from code, {reference})")
    prompt = Prompt(shown, None, Template(placeholder), params)
    prompt.needs.append(
        f"prompt {shown!r} is code ({reference}); casegate never runs it: write its output as "
        "`system.message` (a Jinja2 template over the case input)"
    )
    return prompt


def read_prompts(config: Mapping[str, Any], folder: Folder) -> list[Prompt]:
    raw = config.get("prompts")
    line = line_at(config, "prompts")
    if raw is None:
        # promptfoo's default prompt passes the `prompt` var through.
        return [Prompt("{{prompt}}", None, port_template("{{prompt}}", "the default prompt"))]
    if isinstance(raw, str):
        raw = [raw]
    if isinstance(raw, dict):  # the older {path: label} form
        raw = [{"id": key, "label": value} for key, value in raw.items()]
    if not isinstance(raw, list):
        raise problem_at(folder.config, line, "prompts must be a string, a list or a mapping")
    prompts: list[Prompt] = []
    for number, entry in enumerate(raw, start=1):
        where = line_at(entry) or line
        label: str | None = None
        params: dict[str, Any] = {}
        if isinstance(entry, dict):
            label = str(entry["label"]) if entry.get("label") is not None else None
            params = (
                dict(entry.get("config") or {}) if isinstance(entry.get("config"), dict) else {}
            )
            entry = entry.get("raw", entry.get("id"))
        if not isinstance(entry, str) or not entry.strip():
            raise problem_at(folder.config, where, f"prompts[{number - 1}] has no text or file")
        if entry.startswith("file://") or _looks_like_file(entry, folder):
            prompts.extend(_prompts_from_file(folder, entry, label, params, where))
        elif entry.startswith(("exec:", "langfuse://", "portkey://", "helicone://")):
            prompts.append(_code_prompt(entry, label, params))
        else:
            prompts.append(_prompt_from(entry, label or f"prompt {number}", params))
    if not prompts:
        raise problem_at(folder.config, line, "prompts is empty")
    return prompts


def _looks_like_file(text: str, folder: Folder) -> bool:
    """promptfoo also reads a bare path (`prompts: [prompt.txt]`) as a file reference."""
    if any(char.isspace() or char == "{" for char in text) or not text.endswith(_PROMPT_SUFFIXES):
        return False
    return text.partition(":")[0].endswith(CODE_SUFFIXES) or (folder.root / text).exists()
