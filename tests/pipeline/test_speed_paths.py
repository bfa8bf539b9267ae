"""The fast replay path: what it imports, and that it decides exactly as before.

No test here times anything: each checks what the optimisations must not change
(results, verdicts, error messages) or what they must avoid (imports).
"""

from __future__ import annotations

import gc
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate import heap, systems
from gate.checks.base import CheckSpecError, compile_pattern
from gate.checks.text import normalizer
from gate.errors import ConfigError
from gate.files import MAX_DEPTH, parse_json, too_deep
from gate.produce.recordings import SCHEMA, RecordingStore, request_key, system_fingerprint
from gate.suite.config import load_config
from tests.conftest import Project

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_SUITE = ("casegate.yml", "cases", "recordings", "baselines", "prompts", "examples")
#: modules a replay must never load: the SDKs, their HTTP client, the chat adapters
NEVER_IN_REPLAY = (
    "openai",
    "anthropic",
    "httpx",
    "gate.systems.openai",
    "gate.systems.anthropic",
    "gate.systems.chat",
    "gate.systems.command",
    "jinja2",
)

LOADED_AFTER_RUN = """
import json, sys
from gate.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    assert not exc.code, exc.code
print(json.dumps(sorted(sys.modules)))
"""


def modules_after(args: list[str], cwd: Path) -> set[str]:
    """Every module loaded by a `casegate` command run in a fresh interpreter."""
    finished = subprocess.run(
        [sys.executable, "-c", LOADED_AFTER_RUN, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert finished.returncode == 0, finished.stderr
    return set(json.loads(finished.stdout.splitlines()[-1]))


def copy_example_suite(destination: Path) -> None:
    for name in EXAMPLE_SUITE:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, destination / name)
        else:
            shutil.copy2(source, destination / name)


def test_the_example_suite_replays_to_its_committed_baseline(tmp_path: Path) -> None:
    copy_example_suite(tmp_path)
    # Under `samples: auto` a run stops each case early; the baseline is estimated from every
    # recorded sample (three times adaptive.max), so `casegate baseline` replays it whole.
    loaded = modules_after(["baseline", "--quiet"], tmp_path)
    assert sorted(set(NEVER_IN_REPLAY) & loaded) == []
    assert "gate.systems.python" in loaded  # the one adapter the config names
    written = json.loads((tmp_path / "baselines" / "support.json").read_text())
    replayed = {case["id"]: case for case in written["cases"]}
    baseline = json.loads((REPO / "baselines" / "support.json").read_text())
    assert sorted(replayed) == sorted(case["id"] for case in baseline["cases"])
    for case in baseline["cases"]:
        got = replayed[case["id"]]
        assert (got["status"], got["reason"], got["checks"]) == (
            case["status"],
            case["reason"],
            case["checks"],
        ), case["id"]
        assert got["expect_hash"] == case["expect_hash"], case["id"]


def test_replaying_a_chat_provider_imports_no_sdk(project: Project) -> None:
    project.write_config(
        system={"name": "chat", "provider": "openai", "model": "m", "message": "{{ question }}"}
    )
    project.write_cases([{"id": "a", "input": {"question": "hi"}, "expect": {"contains": "ok"}}])
    system = load_config(project.config_path).resolved_system()
    key = request_key(system_fingerprint(system), {"question": "hi"}, 0)
    (project.root / "recordings").mkdir()
    (project.root / "recordings" / "a.json").write_text(
        json.dumps({"schema": SCHEMA, "case": "a", "responses": {key: {"output": {"text": "ok"}}}})
    )
    loaded = modules_after(["run", "--out", "r.json", "--quiet"], project.root)
    # The openai adapter itself is loaded (the config's provider checks live on its class),
    # but neither its SDK nor Jinja2, which only a request being sent needs.
    never = {"openai", "anthropic", "httpx", "gate.systems.anthropic", "jinja2"}
    assert sorted(never & loaded) == []
    assert json.loads((project.root / "r.json").read_text())["summary"]["passed"] == 1


def test_the_registry_names_every_provider_by_its_class() -> None:
    for name in systems.PROVIDERS:
        provider = systems.provider_class(name)
        assert issubclass(provider, systems.Provider)
        assert provider.name == name


def test_validate_still_refuses_unknown_providers_and_keys(project: Project) -> None:
    project.write_cases([{"id": "a", "input": {}, "expect": {"contains": "x"}}])
    project.write_config(system={"name": "s", "provider": "openia", "model": "m"})
    with pytest.raises(ConfigError, match=r"unknown provider 'openia' \(known: anthropic, command"):
        load_config(project.config_path)
    project.write_config(system={"name": "s", "provider": "openai", "model": "m", "colour": 1})
    with pytest.raises(ConfigError, match=r"unknown key 'system\.colour' for provider 'openai'"):
        load_config(project.config_path)


def test_a_recording_read_twice_is_the_same(project: Project) -> None:
    store = RecordingStore(project.root / "recordings")
    store.folder.mkdir()
    store.path_for("a").write_text(
        json.dumps({"schema": SCHEMA, "case": "a", "responses": {"k": {"output": {"text": "t"}}}})
    )
    assert store.read_file(store.path_for("a")) == store.read_file(str(store.path_for("a")))
    (output, _), (absent, _) = store.get_many_dated("a", ["k", "other"])
    assert (output and output.text, absent) == ("t", None)


def walked(text: str | bytes) -> Any:
    """parse_json without its shortcut: every document walked for its depth."""
    document = parse_json(text, unique_keys=True)  # errors: parse_json's own words
    if too_deep(document):
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    return document


def unique(text: str | bytes) -> Any:
    return parse_json(text, unique_keys=True)


def _outcome(parse: Any, text: str | bytes) -> tuple[str, Any]:
    try:
        return "ok", parse(text)
    except ValueError as exc:
        return "error", str(exc)


JSON_TEXT = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=20,
).map(json.dumps)


@given(st.one_of(JSON_TEXT, st.text(alphabet='{}[]":,0a "', max_size=40)))
def test_skipping_the_depth_walk_changes_no_answer(text: str) -> None:
    assert _outcome(unique, text) == _outcome(walked, text)
    assert _outcome(unique, text.encode()) == _outcome(walked, text.encode())


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
        "[" * (MAX_DEPTH // 2) + "]" * (MAX_DEPTH // 2),
        "1" * 5000,
        b"\xff{}",
        "",
    ],
)
def test_the_shortcut_refuses_what_the_walk_refuses(text: str | bytes) -> None:
    assert _outcome(unique, text) == _outcome(walked, text)


def test_a_cached_pattern_is_refused_each_time_it_is_bad() -> None:
    assert compile_pattern("regex", r"\d+") is compile_pattern("regex", r"\d+")
    for _ in range(2):
        with pytest.raises(CheckSpecError, match=r"not_regex: invalid regular expression"):
            compile_pattern("not_regex", "(")


def test_normalizing_nothing_returns_the_text() -> None:
    assert normalizer(())("  A  b ") == "  A  b "
    assert normalizer(("strip", "lower"))("  A  b ") == "a  b"


def test_bulk_restores_the_collector_as_it_found_it() -> None:
    assert gc.isenabled()
    with heap.bulk():
        assert not gc.isenabled()
        with heap.bulk():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with heap.bulk():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
