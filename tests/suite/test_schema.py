"""gate/suite/schema.py: the editor schemas, generated from the models, tested on every config
and case file the repository holds, on what `init` and the importer write, and on mistakes."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from gate.cli import main
from gate.importers.promptfoo import import_promptfoo
from gate.suite import schema
from gate.suite.config import Config
from gate.suite.starter import DEFAULT_ACTION, PROVIDERS, starter_files
from tests.conftest import Project, case

REPO = Path(__file__).resolve().parents[2]
CONFIG = Draft202012Validator(schema.config_schema())
CASES = Draft202012Validator(schema.cases_schema())


def as_editor_reads(path: Path) -> Any:
    """The file as an editor's YAML 1.2 parser sees it: a date is a string."""
    return _plain(yaml.safe_load(path.read_text()))


def _plain(value: Any) -> Any:
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def problems(validator: Draft202012Validator, data: Any) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message[:120]}" for e in validator.iter_errors(data)]


@pytest.mark.parametrize("kind", sorted(schema.SCHEMA_FILES))
def test_the_published_schemas_are_what_the_models_generate(kind: str) -> None:
    published = REPO / "schemas" / schema.SCHEMA_FILES[kind]
    assert json.loads(published.read_text()) == schema.schema_of(kind), (
        f"schemas/ is stale: run `casegate schema {kind} --out {published.relative_to(REPO)}`"
    )
    Draft202012Validator.check_schema(schema.schema_of(kind))


REPO_CONFIGS = sorted(
    [*REPO.glob("casegate*.yml"), *REPO.glob("examples/*/casegate*.yml")], key=str
)
REPO_CASE_FILES = sorted(
    [*REPO.glob("cases/**/*.yaml"), *REPO.glob("examples/*/cases/**/*.yaml")], key=str
)


def test_the_walk_finds_the_repositorys_files() -> None:
    assert len(REPO_CONFIGS) >= 6 and len(REPO_CASE_FILES) >= 3


@pytest.mark.parametrize("path", REPO_CONFIGS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_config_in_the_repository_follows_the_schema(path: Path) -> None:
    assert problems(CONFIG, as_editor_reads(path)) == []


@pytest.mark.parametrize("path", REPO_CASE_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_case_file_in_the_repository_follows_the_schema(path: Path) -> None:
    assert problems(CASES, as_editor_reads(path)) == []


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_what_init_writes_follows_the_schema_and_names_it(provider: str) -> None:
    files = starter_files("acme/gate@v2", provider)
    for name, kind, validator in [
        ("casegate.yml", "config", CONFIG),
        ("cases/examples.yaml", "cases", CASES),
    ]:
        first, _, rest = files[name].partition("\n")
        url = f"https://raw.githubusercontent.com/acme/gate/v2/schemas/{schema.SCHEMA_FILES[kind]}"
        assert first == f"# yaml-language-server: $schema={url}"
        assert problems(validator, _plain(yaml.safe_load(rest))) == []


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("acme/gate@3d3c42e5aac5ba805825da76410c181273ba90b1", "acme/gate/3d3c42e5aac5"),
        ("acme/mono/tools/casegate@v1.2", "acme/mono/v1.2"),
        ("./", DEFAULT_ACTION.replace("@", "/")),
        ("docker://ghcr.io/acme/gate@sha256:ab", DEFAULT_ACTION.replace("@", "/")),
    ],
)
def test_the_schema_line_follows_the_action_reference(action: str, expected: str) -> None:
    url = schema.schema_url(action, "config", DEFAULT_ACTION)
    assert url.startswith(f"https://raw.githubusercontent.com/{expected}")
    assert url.endswith("/schemas/casegate.schema.json")


def test_what_the_importer_writes_follows_the_schemas(tmp_path: Path) -> None:
    written = 0
    for config in sorted((REPO / "tests/data/promptfoo").glob("*/promptfooconfig.yaml")):
        source = tmp_path / "in" / config.parent.name
        shutil.copytree(config.parent, source)
        out = tmp_path / "out" / config.parent.name
        import_promptfoo(source / "promptfooconfig.yaml", out)
        for path in out.rglob("casegate*.yml"):
            assert problems(CONFIG, as_editor_reads(path)) == [], path
            written += 1
        for path in out.rglob("cases/**/*.yaml"):
            assert problems(CASES, as_editor_reads(path)) == [], path
    assert written >= 3


def test_the_test_suites_own_config_follows_the_schema(project: Project) -> None:
    project.write_cases([case("one", "hello", contains="hello", fields_={"tags": ["a"]})])
    assert problems(CONFIG, as_editor_reads(project.config_path)) == []
    assert problems(CASES, as_editor_reads(project.root / "cases" / "cases.yaml")) == []


@pytest.mark.parametrize(
    ("config", "where"),
    [
        (
            {"suite": "s", "cases": "c", "system": {"name": "x", "provider": "python"}, "gaet": {}},
            [],
        ),
        (
            {
                "suite": "s",
                "cases": "c",
                "system": {"name": "x", "provider": "python"},
                "gate": {"max_regresions": 0},
            },
            ["gate"],
        ),
        (
            {
                "suite": "s",
                "cases": "c",
                "system": {"name": "x", "provider": "python"},
                "samples": "many",
            },
            ["samples"],
        ),
        (
            {
                "suite": "s",
                "cases": "c",
                "system": {"name": "x", "provider": "python"},
                "defaults": {"expect": {"contians": "x"}},
            },
            ["defaults", "expect"],
        ),
    ],
)
def test_a_mistake_is_marked_where_it_is_typed(config: dict[str, Any], where: list[str]) -> None:
    found = list(CONFIG.iter_errors(config))
    assert found and any(list(e.absolute_path)[: len(where)] == where for e in found)


def test_a_misspelt_check_in_a_case_is_marked() -> None:
    data = [{"id": "a", "input": {}, "expect": {"contians": "x"}}]
    assert any("contians" in message for message in problems(CASES, data))
    assert problems(CASES, [{"id": "a", "input": {}, "expect": {"contains": "x"}}]) == []


def test_the_fields_comments_are_the_descriptions_an_editor_shows() -> None:
    comments = schema.field_comments(Config)
    assert comments["baseline_max_age_days"].startswith("reports warn about a baseline")
    described = schema.config_schema()["properties"]["baseline_max_age_days"]["description"]
    assert described == comments["baseline_max_age_days"]
    contains = schema.cases_schema()["$defs"]["Case"]["properties"]["expect"]["properties"]
    assert set(contains) >= {"contains", "judge", "similar", "normalize"}


def test_the_schema_command_prints_and_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schema", "config"]) == 0
    assert json.loads(capsys.readouterr().out)["title"].startswith("casegate suite")
    out = tmp_path / "cases.schema.json"
    assert main(["schema", "cases", "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == schema.cases_schema()


def test_every_key_says_what_it_is() -> None:
    # The generated reference and the editor's hover read these: a new key needs its `#:`.
    config = schema.config_schema()
    models = {"casegate.yml": config, **config["$defs"]}
    models["a case"] = schema.cases_schema()["$defs"]["Case"]
    silent = [
        f"{name}.{key}"
        for name, model in models.items()
        for key, node in model.get("properties", {}).items()
        if not node.get("description")
    ]
    assert silent == [], "give each a `#:` comment above the field"
