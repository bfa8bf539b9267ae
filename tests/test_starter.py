"""`casegate init`, and the Action's files kept true to the code that reads them."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

from gate import action
from gate.cli import main
from gate.starter import FILES, starter_files

REPO = Path(__file__).resolve().parent.parent


def test_init_writes_a_project_that_validates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 0
    written = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert written == set(FILES.values())
    assert (
        "uses: casegate/casegate@v1"
        in (tmp_path / ".github/workflows/casegate-pull-request.yml").read_text()
    )
    cases = yaml.safe_load((tmp_path / "cases/examples.yaml").read_text())
    assert any(case.get("critical") for case in cases)
    assert any(case.get("note") for case in cases)
    capsys.readouterr()
    assert main(["validate"]) == 0
    assert "ok: 2 cases" in capsys.readouterr().out


def test_init_never_overwrites(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("casegate.yml").write_text("mine\n")
    assert main(["init"]) == 2
    assert "casegate.yml: already exists" in capsys.readouterr().err
    assert Path("casegate.yml").read_text() == "mine\n"
    assert not Path("cases").exists()  # all or nothing


def test_this_repositorys_workflows_are_the_starter_ones() -> None:
    for name, content in starter_files("./").items():
        if name.startswith(".github/"):
            assert (REPO / name).read_text() == content, name


def test_readme_shows_the_starter_files_verbatim() -> None:
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Use it in your repository") :]
    section = section[: section.index("\n## ", 3)]
    for name, content in starter_files().items():
        assert content in section, name


def test_action_yml_matches_what_the_entrypoint_reads_and_writes() -> None:
    spec = yaml.safe_load((REPO / "action.yml").read_text())
    assert spec["runs"] == {"using": "docker", "image": "Dockerfile"}
    source = Path(action.__file__).read_text()
    read = set(re.findall(r'read_input\(environ, "([a-z-]+)"', source))
    assert read == set(spec["inputs"])
    assert spec["inputs"]["github-token"]["default"] == "${{ github.token }}"
    assert spec["inputs"]["mode"]["default"] == "replay"
    outputs = set(
        re.findall(r'^\s+"([a-z-]+)": ', source[source.index("def check_outputs") :], re.M)
    )
    assert outputs == set(spec["outputs"])


def test_dockerfile_follows_githubs_rules_for_container_actions() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    instructions = [
        line.split()[0] for line in dockerfile.splitlines() if line and line[0].isupper()
    ]
    assert "USER" not in instructions and "WORKDIR" not in instructions
    assert "ARG BASE=python:3.12-slim\nFROM ${BASE}" in dockerfile
    assert 'ENTRYPOINT ["/opt/casegate/bin/python", "-m", "gate.action"]' in dockerfile


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_the_image_lock_is_the_runtime_part_of_the_constraints() -> None:
    lock, constraints = _pins(REPO / "requirements.lock"), _pins(REPO / "constraints.txt")
    assert {name: constraints.get(name) for name in lock} == lock
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    runtime = {re.split(r"[<>=!~ ]", dep)[0].lower() for dep in project["dependencies"]}
    assert runtime <= set(lock)
    dev_only = {"pytest", "hypothesis", "ruff", "mypy", "check-jsonschema"}
    assert not dev_only & set(lock)
