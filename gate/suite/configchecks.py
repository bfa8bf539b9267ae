"""What the config's schema cannot say alone: each problem as one line at its file and
line (or at the `--set` that caused it), a prompt file read safely, and the checks made
once the config is validated (defaults, the system, the judge pin, the services)."""

from __future__ import annotations

import difflib
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from gate import systems
from gate.errors import ConfigError, located
from gate.suite import inputfiles
from gate.suite.defaults import expect_problems
from gate.suite.judgepin import JudgePin, judge_system, prompt_version_problem
from gate.suite.overrides import blamed_override, blamed_system_key
from gate.suite.sections import SystemConfig
from gate.yamlfile import LineDict, dotted, line_of, printable

if TYPE_CHECKING:
    from gate.suite.config import LoadedConfig


def read_prompt(name: str, root: Path, repository: Path) -> tuple[str | None, str | None]:
    """(problem, text): a prompt file must be a relative path to UTF-8 text in the repository."""
    if Path(name).is_absolute():
        return f"{name!r} is an absolute path; give a path relative to the config", None
    path = (root / name).resolve()  # follows symbolic links, so a link out is caught too
    if not path.is_relative_to(repository.resolve()):
        return (
            f"{name!r} lies outside the repository ({repository}); keep prompts inside it",
            None,
        )
    if not path.is_file():
        return f"{name!r} does not exist", None
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        return f"{name!r} cannot be read ({exc.strerror or exc})", None
    except UnicodeDecodeError as exc:
        return f"{name!r} is not UTF-8 text ({exc.reason} at byte {exc.start})", None
    if "\x00" in text:
        return f"{name!r} is a binary file, not a text prompt", None
    return None, text


def _fields_at(model: type[BaseModel], location: Sequence[str]) -> dict[str, Any]:
    """The keys the config section at `location` takes (`gate`, `privacy`, …); none when
    the location is not a section of fixed keys."""
    for part in location:
        field = model.model_fields.get(part)
        if field is None:
            return {}
        inner = [field.annotation, *typing.get_args(field.annotation)]
        found = [kind for kind in inner if isinstance(kind, type) and issubclass(kind, BaseModel)]
        if not found:
            return {}
        model = found[0]
    return dict(model.model_fields)


def problem_for(
    model: type[BaseModel], path: Path, raw: Any, error: Any, overrides: Sequence[str] = ()
) -> str:
    """One pydantic error as one line: file and line (or the `--set` that caused it), and a
    did-you-mean for an unknown key among the keys its section takes."""
    location = [str(part) for part in error["loc"]]
    node, line = raw, line_of(raw)
    for part in location:
        if isinstance(node, dict) and part in node:
            line = line_of(node, part) or line
            node = node[part]
        else:
            if isinstance(node, LineDict):
                line = node.line
            break
    where = dotted(location)
    if error["type"] == "extra_forbidden":
        hint = difflib.get_close_matches(location[-1], _fields_at(model, location[:-1]), n=1)
        message = f"unknown key '{where}'" + (f" (did you mean {hint[0]!r}?)" if hint else "")
    elif error["type"] == "missing":
        message = f"missing required key '{where}'"
    else:
        message = f"{where}: {error['msg']}"
    blamed = blamed_override(location, overrides)
    if blamed is not None:
        return f"--set {printable(blamed)}: {message}"
    return located(path, line, message)


def check_defaults(loaded: LoadedConfig, data: dict[str, Any]) -> None:
    """`defaults.expect` is checked as a case's `expect` is, each problem at its line;
    `defaults.input_files` as a case's input files are."""
    section = data.get("defaults")
    expect = section.get("expect") if isinstance(section, dict) else None
    problems = []
    for key, message in expect_problems(loaded.config.defaults.expect):
        text = printable(f"defaults.expect: {message}")
        blamed = blamed_override(["defaults", "expect", key], loaded.overrides)
        if blamed is not None:
            problems.append(f"--set {printable(blamed)}: {text}")
        else:
            line = line_of(expect, key) or line_of(section, "expect")
            problems.append(located(loaded.path, line, text))
    for written in loaded.config.defaults.input_files:
        # Checked once here, not once for every case it is merged into.
        try:
            inputfiles.locate(loaded.root, written)
            inputfiles.digest(loaded.root, written)
        except inputfiles.InputFileError as exc:
            text = printable(f"defaults.input_files: {exc}")
            line = line_of(section, "input_files") if isinstance(section, dict) else None
            problems.append(located(loaded.path, line, text))
    if problems:
        raise ConfigError(problems)


def _judge_problems(pin: JudgePin) -> list[str]:
    """The pin as the system it runs as: every provider check a system gets."""
    problem = prompt_version_problem(pin)
    if problem is not None:
        return [problem]
    config = SystemConfig.model_validate(judge_system(pin))
    return [f"judge: {problem}" for problem in systems.config_problems(config)]


def check_system(loaded: LoadedConfig, raw: dict[str, Any]) -> None:
    path, system = loaded.path, loaded.config.system
    line = line_of(raw.get("system"), "provider") or line_of(raw.get("system"))
    problems = []
    if system.prompt is not None and system.prompt_file is not None:
        problems.append(located(path, line, "system: give prompt or prompt_file, not both"))
    if system.prompt_file is not None:
        problem, _ = read_prompt(system.prompt_file, loaded.root, loaded.repository)
        if problem is not None:
            where = line_of(raw.get("system"), "prompt_file") or line
            problems.append(located(path, where, f"system.prompt_file: {problem}"))
    # Providers name the keys they refuse as written, and a key may hold a line break.
    for problem in systems.config_problems(system):
        blamed = blamed_system_key(problem, loaded.overrides)
        problems.append(
            f"--set {printable(blamed)}: {printable(problem)}"
            if blamed is not None
            else located(path, line, printable(problem))
        )
    loaded.warnings.extend(_near_misses(loaded, raw))
    pin = loaded.config.judge
    if pin is not None:
        judge_line = line_of(raw.get("judge"), "provider") or line_of(raw, "judge")
        problems.extend(located(path, judge_line, printable(p)) for p in _judge_problems(pin))
        if pin.judges_itself(system.provider, system.model) and not pin.allow_self_judge:
            where = line_of(raw.get("judge"), "model") or judge_line
            problems.append(
                located(
                    path,
                    where,
                    printable(
                        f"judge: the judge is the system under test ({pin.provider} "
                        f"{pin.model}); a model grading its own answers tends to agree with "
                        "itself — pin a different model, or set `judge.allow_self_judge: true` "
                        "to accept it (every report then says so)"
                    ),
                )
            )
        elif pin.judges_itself(system.provider, system.model):
            loaded.warnings.append(
                printable(
                    f"{path}: the judge is the system under test ({pin.provider} {pin.model}), "
                    "allowed by judge.allow_self_judge"
                )
            )
    for key in ("embeddings", "moderation"):
        service = getattr(loaded.config, key)
        if service is not None:
            where = line_of(raw.get(key), "provider") or line_of(raw, key)
            problems.extend(located(path, where, printable(p)) for p in service.problems(key))
    if problems:
        raise ConfigError(problems)


#: keys of `system:` casegate reads though the model lets providers take any: the version
#: the recordings are keyed on, the declared tools, batch mode
READ_FROM_EXTRA = ("version", "tools", "mode")


def _near_misses(loaded: LoadedConfig, raw: dict[str, Any]) -> list[str]:
    """A key of `system:` that casegate does not know but is a letter or two from one it does:
    the python and command providers hand unknown keys to the user's code, so `promt_file`
    would pass silently and the run would go without its prompt."""
    extra = loaded.config.system.model_extra or {}
    known = [*SystemConfig.model_fields, *READ_FROM_EXTRA]
    said = []
    for key in extra:
        if key in READ_FROM_EXTRA:
            continue
        hint = difflib.get_close_matches(str(key), known, n=1, cutoff=0.8)
        if hint:
            line = line_of(raw.get("system"), str(key))
            said.append(
                located(
                    loaded.path,
                    line,
                    printable(
                        f"system.{key}: not a key casegate knows, so it is passed to the "
                        f"system as it is; did you mean {hint[0]!r}?"
                    ),
                )
            )
    return said
