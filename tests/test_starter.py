"""`casegate init`, and the Action's files kept true to the code that reads them."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Any

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


def test_init_into_an_unwritable_dir_is_exit_2_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("taken").write_text("a file, not a folder\n")
    assert main(["init", "--dir", "taken"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "casegate: taken/casegate.yml: cannot write it (taken is a file, not a folder); "
        "choose a path you can write to\n"
    )
    assert Path("taken").read_text() == "a file, not a folder\n"


def test_init_that_fails_halfway_takes_back_what_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path(".github").write_text("not a folder\n")  # the workflows come last and cannot be written
    assert main(["init"]) == 2
    assert "casegate: .github/workflows/casegate-pull-request.yml: cannot write it" in (
        capsys.readouterr().err
    )
    assert sorted(p.as_posix() for p in Path().rglob("*")) == [".github"]


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
    # -I: a repository file named like casegate or a dependency is never imported.
    assert 'ENTRYPOINT ["/opt/casegate/bin/python", "-I", "-m", "gate.action"]' in dockerfile


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


# --- the workflows: what a pull request or a dispatch input cannot reach --------------


def _workflow(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((REPO / ".github/workflows" / name).read_text())
    return loaded


def _steps(name: str) -> list[dict[str, Any]]:
    return [step for job in _workflow(name)["jobs"].values() for step in job["steps"]]


@pytest.mark.parametrize(
    "name", ["casegate-pull-request.yml", "casegate-model-swap.yml", "casegate-baseline.yml"]
)
def test_checkout_leaves_no_token_behind(name: str) -> None:
    checkouts = [s for s in _steps(name) if s.get("uses", "").startswith("actions/checkout@")]
    assert checkouts and all(s["with"]["persist-credentials"] is False for s in checkouts)


def test_adding_the_acceptance_label_reruns_the_check() -> None:
    workflow = _workflow("casegate-pull-request.yml")
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert on["pull_request"]["types"] == [
        "opened",
        "synchronize",
        "reopened",
        "labeled",
        "unlabeled",
    ]


@pytest.mark.parametrize(
    ("model", "accepted"),
    [
        ("gpt-4.1-mini-2025-04-14", True),
        ("claude-3-5-sonnet@20240620", True),
        ("models/gemini-1.5-pro:latest", True),
        ("m" * 100, True),
        ("m" * 101, False),
        ("", False),
        ("-rf", False),
        ("gpt-4o\nsystem.base_url=https://collector.example", False),
        ("gpt-4o\n", False),
        ("gpt 4o", False),
        ("gpt-4o\t", False),
        ("gpt-4o;curl", False),
        ("gpt-4o$(id)", False),
        ("modèle", False),
    ],
)
def test_the_model_swap_takes_one_model_id_and_nothing_else(model: str, accepted: bool) -> None:
    steps = _steps("casegate-model-swap.yml")
    names = [step.get("name") or step.get("uses") for step in steps]
    check = steps[names.index("Check the model input")]
    # The input reaches the script through the environment, never pasted into it …
    assert check["env"] == {"MODEL": "${{ inputs.model }}"} and "${{" not in check["run"]
    # … and is checked before the step that uses it.
    assert names.index("Check the model input") < names.index("./")
    finished = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", check["run"]],
        env={"MODEL": model, "PATH": os.environ["PATH"], "LANG": "C.UTF-8"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (finished.returncode == 0) is accepted, finished.stdout
    if not accepted:
        assert finished.stdout.startswith("::error title=casegate model swap::the model input")
