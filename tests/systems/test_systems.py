"""The python and command providers: outputs, and failures that become case errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gate.errors import SystemCallError
from gate.systems import create
from gate.systems.command import CommandSystem
from tests.conftest import Project


def python_system(project: Project, code: str, **extra: object):  # type: ignore[no-untyped-def]
    project.write_system(code)
    return create(
        {"name": "t", "provider": "python", "target": f"{project.module}:answer", **extra},
        project.root,
        {},
    )


def test_python_string_and_dict_outputs(project: Project) -> None:
    system = create(
        {"name": "t", "provider": "python", "target": f"{project.module}:answer", "style": "loud"},
        project.root,
        {},
    )
    assert system.complete("c", {"question": "hi"}).text == "loud: hi"
    output = system.complete("c", {"question": "usage"})
    assert (output.text, output.input_tokens, output.output_tokens) == ("with usage", 10, 5)
    assert output.latency_ms is not None and output.latency_ms >= 0


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("def answer(i, s):\n    raise KeyError('model')\n", "KeyError: 'model'"),
        (
            "def answer(i, s):\n    return 42\n",
            "returned int; expected a string or a dict with 'text'",
        ),
        (
            "def answer(i, s):\n    return {'text': 'x', 'surprise': 1}\n",
            "unknown key(s) ['surprise']",
        ),
        ("def answer(i, s):\n    return {'text': 'x', 'input_tokens': 'many'}\n", "invalid output"),
    ],
)
def test_python_failures_are_system_call_errors(project: Project, code: str, message: str) -> None:
    system = python_system(project, code)
    with pytest.raises(
        SystemCallError,
        match=message.replace("(", r"\(")
        .replace(")", r"\)")
        .replace("[", r"\[")
        .replace("]", r"\]"),
    ):
        system.complete("c", {})


def test_python_timeout(project: Project) -> None:
    system = python_system(
        project, "import time\ndef answer(i, s):\n    time.sleep(5)\n", timeout_s=0.2
    )
    with pytest.raises(SystemCallError, match=r"timed out after 0\.2s"):
        system.complete("c", {})


def command(tmp_path: Path, script: str, **extra: object) -> CommandSystem:
    path = tmp_path / "bot.py"
    path.write_text(script)
    return CommandSystem(
        {
            "name": "cmd",
            "provider": "command",
            "command": [sys.executable, str(path)],
            "flavour": "mint",
            **extra,
        },
        tmp_path,
        {},
    )


def test_command_gets_json_on_stdin(tmp_path: Path) -> None:
    system = command(
        tmp_path,
        "import json, sys\nreq = json.load(sys.stdin)\n"
        "print(req['input']['q'], req['system']['flavour'])\n",
    )
    output = system.complete("c", {"q": "hello"})
    assert output.text == "hello mint"
    assert output.latency_ms is not None


def test_command_keeps_inner_newlines(tmp_path: Path) -> None:
    system = command(tmp_path, "print('a\\n\\nb\\n')\n")
    assert system.complete("c", {}).text == "a\n\nb\n"


def test_command_nonzero_exit(tmp_path: Path) -> None:
    system = command(
        tmp_path, "import sys\nprint('quota exceeded', file=sys.stderr)\nsys.exit(3)\n"
    )
    with pytest.raises(SystemCallError, match="command exited 3: quota exceeded"):
        system.complete("c", {})


def test_command_timeout(tmp_path: Path) -> None:
    system = command(tmp_path, "import time\ntime.sleep(5)\n", timeout_s=0.3)
    with pytest.raises(SystemCallError, match=r"timed out after 0\.3s"):
        system.complete("c", {})


def test_command_missing_program(tmp_path: Path) -> None:
    system = CommandSystem(
        {"name": "x", "provider": "command", "command": "no-such-program-xyz --flag"}, tmp_path, {}
    )
    with pytest.raises(SystemCallError, match="cannot run 'no-such-program-xyz'"):
        system.complete("c", {})
