"""docs/hooks/reference.py: the generated references hold every key, check and command."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from gate import checks
from gate.cli import build_parser
from gate.suite.cases import Case
from gate.suite.config import Config

REPO = Path(__file__).resolve().parent.parent


def hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reference", REPO / "docs/hooks/reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_config_reference_has_every_key_of_the_config_and_of_a_case() -> None:
    page = hook().config_reference()
    for key in [*Config.model_fields, *Case.model_fields]:
        assert f"| `{key}` |" in page, key
    for name in checks.KNOWN_KEYS:
        assert f"| `{name}` |" in page, name


def test_the_cli_reference_has_every_command_and_option() -> None:
    page = hook().cli_reference()
    found = 0
    stack = [("casegate", build_parser())]
    while stack:
        name, parser = stack.pop()
        assert f"## `{name}`" in page
        found += 1
        for action in parser._actions:
            for option in action.option_strings:
                assert option in page, (name, option)
            if isinstance(action, argparse._SubParsersAction):
                stack += [(f"{name} {sub}", p) for sub, p in action.choices.items()]
    assert found > 20


def test_the_cli_reference_is_the_same_whatever_the_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    narrow = hook().cli_reference()
    monkeypatch.setenv("COLUMNS", "300")
    assert hook().cli_reference() == narrow
