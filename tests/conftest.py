"""Shared helpers: build a small casegate project in a temporary folder."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import settings

from tests.fakes.actions import TOKEN, Runner, build_workspace, open_to_the_sandbox
from tests.fakes.github_api import FakeGitHub
from tests.fakes.llm_server import FakeLLMServer

# No test asserts on wall time: a slow example on a busy machine is not a failure.
# In CI the examples are derived from each test's name, so a red run replays as it was.
settings.register_profile("casegate", deadline=None, derandomize=bool(os.environ.get("CI")))
settings.load_profile("casegate")

_counter = itertools.count()

# The runner a test runs on must not leak into what casegate sees: CI=true would mark new
# recordings as made in CI, a runner's GITHUB_* files would take the Action's outputs, and a
# key in the environment would seal. Tests that want one of these set it themselves.
_RUNNER_PREFIXES = ("GITHUB_", "RUNNER_", "CASEGATE_")


@pytest.fixture(autouse=True)
def _hermetic_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name == "CI" or name.startswith(_RUNNER_PREFIXES):
            monkeypatch.delenv(name)


# A system written the way a user would write one: keyword rules, no model.
ECHO_BOT = """
def answer(case_input, system):
    question = case_input.get("question", "")
    if question == "boom":
        raise RuntimeError("the backend is down")
    if question == "json":
        return '{"severity": "high", "tags": ["a"]}'
    if question == "usage":
        return {"text": "with usage", "input_tokens": 10, "output_tokens": 5}
    style = system.get("style", "plain")
    return f"{style}: {question}"
"""


class Project:
    """A folder holding casegate.yml, cases/ and a python system module."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.module = f"bot_{next(_counter)}"

    @property
    def config_path(self) -> Path:
        return self.root / "casegate.yml"

    def write_system(self, code: str = ECHO_BOT) -> None:
        (self.root / f"{self.module}.py").write_text(textwrap.dedent(code))

    def write_config(self, **overrides: Any) -> Path:
        config: dict[str, Any] = {
            "suite": "demo",
            "cases": "cases",
            "system": {"name": "echo", "provider": "python", "target": f"{self.module}:answer"},
            "recordings": "recordings",
            "baseline": "baselines/demo.json",
        }
        config.update(overrides)
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        return self.config_path

    def write_cases(self, cases: list[dict[str, Any]], name: str = "cases.yaml") -> Path:
        path = self.root / "cases" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".jsonl"):
            path.write_text("".join(json.dumps(case) + "\n" for case in cases))
        else:
            path.write_text(yaml.safe_dump(cases, sort_keys=False, allow_unicode=True))
        return path

    def write_text(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    monkeypatch.chdir(tmp_path)
    built = Project(tmp_path)
    built.write_system()
    built.write_config()
    return built


def case(case_id: str, question: str, **expect_and_fields: Any) -> dict[str, Any]:
    """A case dict: `expect` from keyword args, other fields via `fields=`."""
    fields = expect_and_fields.pop("fields_", {})
    return {"id": case_id, "input": {"question": question}, "expect": expect_and_fields, **fields}


CaseFactory = Callable[..., dict[str, Any]]


OPENAI_KEY = "sk-test-openai-4f1c9d2b7a"
ANTHROPIC_KEY = "sk-ant-test-8e3b5a61c0"


@pytest.fixture
def llm_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    """A loopback OpenAI/Anthropic server, with test keys in the environment."""
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    for variable in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GITHUB_ACTIONS"):
        monkeypatch.delenv(variable, raising=False)
    with FakeLLMServer() as server:
        yield server


def chat_system(provider: str, server: FakeLLMServer, **extra: Any) -> dict[str, Any]:
    """A system mapping for a chat provider pointed at the fake server."""
    base = server.url + "/v1" if provider == "openai" else server.url
    system: dict[str, Any] = {
        "name": f"{provider}-test",
        "provider": provider,
        "model": "model-a",
        "base_url": base,
        "prompt": "You are terse.",
        "message": "{{ question }}",
        "max_retries": 2,
        "timeout_s": 5,
    }
    system.update(extra)
    return system


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A temporary folder other users can read, as a runner's workspace is: the Action runs
    the suite's code as the sandbox user. Not pytest's own, which it closes to others
    (again whenever another pytest session starts)."""
    folder = Path(tempfile.mkdtemp(prefix="casegate-test-"))
    open_to_the_sandbox(folder)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def runner(open_tmp: Path) -> Iterator[Runner]:
    """A fake Actions job around a checkout of the example suite, with the loopback GitHub."""
    base = build_workspace(open_tmp / "workspace")
    (open_tmp / "home").mkdir()
    with FakeGitHub(TOKEN) as api:
        yield Runner(open_tmp, open_tmp / "workspace", api, base)


#: the modules that run the Action's entrypoint end to end, many times each
SLOW_MODULES = frozenset(
    {
        "test_action_attacks",
        "test_action_hardening",
        "test_basetree_attacks",
        "test_holdout_noleak",
        "test_redteam_holdout_history",
        "test_redteam_sandbox",
        "test_sandbox_attacks",
        "test_shard_attacks",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the end-to-end attack suites `slow`: `make test-fast` deselects them."""
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and module.__name__.rsplit(".", 1)[-1] in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
