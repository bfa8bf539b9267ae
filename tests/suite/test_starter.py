"""`casegate init`, and the Action's files kept true to the code that reads them."""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate import cli as cli_module
from gate.cli import main
from gate.github import action
from gate.suite import starter
from gate.suite.starter import FILES, starter_files
from tests.cli.test_cli import casegate
from tests.docs_text import page
from tests.fakes.llm_server import FakeLLMServer

REPO = Path(__file__).resolve().parents[2]


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


@pytest.mark.parametrize("provider", ["openai", "anthropic", "python", "command"])
def test_init_writes_exactly_its_templates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    # The baseline workflow names ${GITHUB_TOKEN} inside a push URL on purpose: masking
    # "credentials in URLs" must not rewrite casegate's own templates.
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--provider", provider]) == 0
    for name, content in starter_files(provider=provider).items():
        assert (tmp_path / name).read_text() == content, name
    assert (
        "x-access-token:${GITHUB_TOKEN}@"
        in (tmp_path / ".github/workflows/casegate-baseline.yml").read_text()
    )


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


def test_the_docs_show_the_starter_files_verbatim() -> None:
    text = page("getting-started")
    section = text[text.index("## Use it in your repository") :]
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
    # What the step writes: one suite's outputs (gate.github.checkrun), the `verdicts` the
    # entrypoint adds, and the roll-up's for several configs (gate.github.rollup).
    github = Path(action.__file__).parent

    def keys(module: str, function: str) -> set[str]:
        text = (github / module).read_text()
        body = text[text.index(f"def {function}") :].split("\n\n\n", 1)[0]
        return set(re.findall(r'^\s+"([a-z-]+)": ', body, re.M))

    single = keys("checkrun.py", "check_outputs") | set(
        re.findall(r'outputs\["([a-z-]+)"\]', source)
    )
    several = keys("rollup.py", "rollup_outputs")
    assert single | several == set(spec["outputs"])
    assert {"verdict", "verdicts", "report-path"} <= single & several


def test_dockerfile_follows_githubs_rules_for_container_actions() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    instructions = [
        line.split()[0] for line in dockerfile.splitlines() if line and line[0].isupper()
    ]
    assert "USER" not in instructions and "WORKDIR" not in instructions
    assert re.search(
        r"^ARG BASE=python:3\.12-slim@sha256:[0-9a-f]{64}\nFROM \$\{BASE\}", dockerfile, re.M
    )
    # -I: a repository file named like casegate or a dependency is never imported.
    assert 'ENTRYPOINT ["/opt/casegate/bin/python", "-I", "-m", "gate.github.action"]' in dockerfile


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
    runtime = {re.split(r"[<>=!~ []", dep)[0].lower() for dep in project["dependencies"]}
    assert runtime <= set(lock)
    dev_only = {"pytest", "hypothesis", "ruff", "mypy", "check-jsonschema"}
    assert not dev_only & set(lock)


# --- the workflows: what a pull request or a dispatch input cannot reach --------------


def _workflow(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((REPO / ".github/workflows" / name).read_text())
    return loaded


def _steps(name: str) -> list[dict[str, Any]]:
    return [step for job in _workflow(name)["jobs"].values() for step in job["steps"]]


WORKFLOWS = [
    "casegate-pull-request.yml",
    "casegate-model-swap.yml",
    "casegate-baseline.yml",
    "casegate-comment.yml",
    "casegate-drift.yml",
]
#: this repository's own, not a user's: it publishes casegate's image on a release tag
REPOSITORY_ONLY = ["casegate-release.yml"]


def test_init_writes_every_workflow() -> None:
    assert sorted(name for name in FILES.values() if name.startswith(".github/")) == sorted(
        f".github/workflows/{name}" for name in WORKFLOWS
    )
    found = sorted(p.name for p in (REPO / ".github/workflows").glob("*.yml"))
    assert found == sorted(WORKFLOWS + REPOSITORY_ONLY)


def test_the_workflows_pass_actionlint(tmp_path: Path) -> None:
    actionlint = shutil.which("actionlint", path=str(Path(sys.executable).parent))
    assert actionlint is not None, "actionlint is a dev dependency: `make test` installs it"
    # This repository's copies, and the ones `casegate init` writes for a user.
    for name, content in starter_files().items():
        if name.startswith(".github/"):
            (tmp_path / Path(name).name).write_text(content)
    paths = [*sorted((REPO / ".github/workflows").glob("*.yml")), *sorted(tmp_path.glob("*.yml"))]
    assert len(paths) == 2 * len(WORKFLOWS) + len(REPOSITORY_ONLY)
    finished = subprocess.run(
        [actionlint, "-no-color", *map(str, paths)], capture_output=True, text=True, check=False
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr


@pytest.mark.parametrize("name", WORKFLOWS + REPOSITORY_ONLY)
def test_every_third_party_action_is_pinned_by_commit_with_its_tag_beside(name: str) -> None:
    # A tag can be moved to other code by whoever controls the action's repository; a
    # commit cannot. The tag stays in a comment so a reader (and Dependabot) sees the release.
    for source in (REPO / ".github/workflows" / name, None):
        text = source.read_text() if source else starter_files().get(f".github/workflows/{name}")
        if text is None:
            continue  # casegate-release.yml is this repository's alone
        used = re.findall(r"uses: (\S+)(.*)", text)
        third_party = [(ref, rest) for ref, rest in used if ref.startswith("actions/")]
        assert third_party, name
        for ref, rest in third_party:
            assert re.fullmatch(r"actions/[a-z-]+@[0-9a-f]{40}", ref), (name, ref)
            assert re.fullmatch(r" # v\d+\.\d+\.\d+", rest), (name, ref, rest)


@pytest.mark.parametrize("name", WORKFLOWS + REPOSITORY_ONLY)
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


# --- pull requests from forks: an artifact, and a workflow_run that posts it -----------


REPORT = "casegate-report"  # the artifact casegate-comment.yml reads


def _step(name: str, uses: str) -> dict[str, Any]:
    [step] = [s for s in _steps(name) if s.get("uses", "").startswith(uses)]
    return step


def test_the_pull_request_run_uploads_the_report_and_nothing_else() -> None:
    steps = _steps("casegate-pull-request.yml")
    check = _step("casegate-pull-request.yml", "./")
    upload, results, viewer, verified = [
        s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@")
    ]
    assert steps.index(upload) == steps.index(check) + 1
    folder = check["with"]["report-dir"]
    assert check["with"].get("comment", True) is True  # same-repository pull requests comment here
    assert upload["if"] == "${{ !cancelled() }}"  # a blocking check still uploads its report
    assert upload["with"]["name"] == "casegate-report"
    assert upload["with"]["path"].split() == [f"{folder}/report.md", f"{folder}/verdict.json"]
    # Issue #25 trap 3: a cut comment points to every case, so the results file is uploaded,
    # as an artifact of its own (casegate-comment.yml reads only casegate-report).
    assert results["with"]["name"] == "casegate-results"
    assert results["with"]["path"] == f"${{{{ steps.{check['id']}.outputs.results-path }}}}"
    assert "!cancelled()" in results["if"]
    # The HTML viewer, which the comment links to (the run's artifacts page).
    assert viewer["with"]["name"] == "casegate-viewer"
    assert viewer["with"]["path"] == f"${{{{ steps.{check['id']}.outputs.viewer-path }}}}"
    assert "!cancelled()" in viewer["if"]
    # What `verify: changed` recorded again, only when it recorded anything.
    assert verified["with"]["name"] == "casegate-verified-recordings"
    assert f"steps.{check['id']}.outputs.verified != '0'" in verified["if"]


def test_the_comment_workflow_runs_none_of_the_pull_requests_code() -> None:
    workflow = _workflow("casegate-comment.yml")
    on = workflow.get("on", workflow.get(True))
    assert on == {
        "workflow_run": {
            "workflows": [_workflow("casegate-pull-request.yml")["name"]],
            "types": ["completed"],
        }
    }
    assert workflow["permissions"] == {
        "actions": "read",
        "contents": "read",
        "pull-requests": "write",
    }
    [job] = workflow["jobs"].values()
    assert job["if"] == "github.event.workflow_run.event == 'pull_request'"
    steps = job["steps"]
    # The default branch's checkout (the Action itself when it is `./`), no other ref,
    # and no shell step: nothing the pull request wrote is ever run with this token.
    checkout = _step("casegate-comment.yml", "actions/checkout@")
    assert set(checkout["with"]) == {"persist-credentials"}
    assert not [step for step in steps if "run" in step]
    download = _step("casegate-comment.yml", "actions/download-artifact@")
    upload = next(
        s for s in _steps("casegate-pull-request.yml") if s.get("with", {}).get("name") == REPORT
    )
    assert download["with"]["name"] == upload["with"]["name"]
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    assert download["with"]["github-token"] == "${{ github.token }}"
    post = _step("casegate-comment.yml", "./")
    assert post["with"] == {"command": "comment", "report-dir": download["with"]["path"]}
    assert steps.index(checkout) < steps.index(download) < steps.index(post)


# --- `casegate init --provider`, `.gitignore`, and the next three commands ------------


@pytest.fixture
def cli() -> Callable[[list[str]], int]:
    return cli_module.main


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dummy keys, and any attempt to open a connection fails the test."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-openai-0000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-dummy-0000")

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"a network connection was attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def user_module_system(tmp_path: Path) -> Iterator[None]:
    """validate imports `system` from tmp_path: forget it afterwards, for the next test."""
    yield
    sys.modules.pop("system", None)
    with contextlib.suppress(ValueError):
        sys.path.remove(str(tmp_path.resolve()))


EXPECTED_FILES = {
    "openai": set(FILES.values()),
    "anthropic": set(FILES.values()),
    "python": set(FILES.values()) | {"system.py"},
    "command": set(FILES.values()) | {"system.py"},
}


@pytest.mark.parametrize("provider", sorted(starter.PROVIDERS))
@pytest.mark.usefixtures("offline", "user_module_system")
def test_init_for_each_provider_writes_a_config_that_validates(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli: Callable[[list[str]], int],
    provider: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli(["init", "--provider", provider]) == 0
    written = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert written == EXPECTED_FILES[provider]
    config = yaml.safe_load(Path("casegate.yml").read_text())
    assert config["system"]["provider"] == provider
    # A model's answers vary: its starter samples until the verdict is clear, within a bound.
    sampled = provider in ("openai", "anthropic")
    assert config.get("samples", 1) == ("auto" if sampled else 1)
    assert config.get("adaptive") == ({"max": starter.STARTER_MAX} if sampled else None)
    out = capsys.readouterr().out.splitlines()
    assert "added .casegate/ to .gitignore" in out
    steps = out[-3:] if sampled else out[-4:]
    assert [line.split("#")[0].split() for line in steps] == (
        [
            ["casegate", "validate"],
            ["casegate", "baseline", "--mode", "record"],
            ["casegate", "check"],
        ]
        if sampled
        else [
            ["casegate", "validate"],
            ["casegate", "record"],
            ["casegate", "baseline"],
            ["casegate", "check"],
        ]
    )
    assert main(["validate"]) == 0
    assert "ok: 2 cases" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("provider", "says"),
    [
        ("openai", "with OPENAI_API_KEY set: 36 calls per case (samples: auto"),
        ("anthropic", "with ANTHROPIC_API_KEY set: 36 calls per case (samples: auto"),
        ("python", "calls answer() in system.py"),
        ("command", "runs `python3 system.py`"),
    ],
)
def test_the_next_commands_say_what_recording_does_for_the_provider(
    provider: str, says: str
) -> None:
    steps = starter.next_steps(Path("."), provider)
    assert len(steps) == (3 if provider in ("openai", "anthropic") else 4) and says in steps[1]
    sampled = provider in ("openai", "anthropic")
    assert [step.split("#")[0].strip() for step in starter.next_steps(Path("app"), provider)] == (
        [
            "casegate validate -c app/casegate.yml",
            "casegate baseline --mode record -c app/casegate.yml",
            "casegate check -c app/casegate.yml",
        ]
        if sampled
        else [
            "casegate validate -c app/casegate.yml",
            "casegate record -c app/casegate.yml",
            "casegate baseline -c app/casegate.yml",
            "casegate check -c app/casegate.yml",
        ]
    )


@pytest.mark.usefixtures("user_module_system")
def test_a_model_starter_records_its_baseline_under_auto_and_its_check_replays_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    llm_server: FakeLLMServer,
) -> None:
    """init's next steps, as printed, against a loopback model: the check replays for free."""
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 0
    capsys.readouterr()
    where = ["--set", f"system.base_url={llm_server.url}/v1"]  # transport: not in the keys
    assert main(["baseline", "--mode", "record", "--quiet", *where]) == 0
    calls = len(llm_server.received)
    assert calls == 2 * 3 * starter.STARTER_MAX
    capsys.readouterr()
    assert main(["check", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert len(llm_server.received) == calls  # replayed: no call
    assert "SHIP: assistant (replayed, not live)" in out
    assert "sampling: baseline samples: auto, 36 samples per case, candidate samples: auto, " in out
    assert "the system is not deterministic (provider openai calls a model" in out


@pytest.mark.parametrize("provider", ["python", "command"])
def test_the_stub_system_answers_at_once_so_the_next_commands_work(
    tmp_path: Path, cli: Callable[[list[str]], int], provider: str
) -> None:
    assert cli(["init", "--dir", str(tmp_path), "--provider", provider]) == 0
    for command in (["validate"], ["record", "--quiet"], ["baseline", "--quiet"]):
        finished = casegate(*command, cwd=tmp_path)  # a process of its own imports system.py
        assert finished.returncode == 0, finished.stderr
    recorded = json.loads((tmp_path / "recordings/assistant/refund-window.json").read_text())
    (entry,) = recorded["responses"].values()
    assert entry["output"]["text"] == "(stub) you asked: How long do I have to return a blender?"
    baseline = json.loads((tmp_path / "baselines/assistant.json").read_text())
    # The stub knows no policy: a failing case is a result, not an error.
    assert {case["id"]: case["status"] for case in baseline["cases"]} == {
        "refund-window": "fail",
        "no-promised-delivery-date": "pass",
    }


@pytest.mark.parametrize("provider", ["openai", "anthropic", "python", "command"])
@pytest.mark.parametrize("shards", [None, 2])
def test_the_workflows_run_when_any_file_init_wrote_for_the_system_changes(
    provider: str, shards: int | None
) -> None:
    # A pull request that edits only system.py changes every answer: a `paths:` filter that
    # leaves it out would never run the check the pull request must pass.
    written = starter_files(provider=provider, shards=shards)
    answers_from = [
        name for name in written if not name.startswith(".github/") and name != ".gitignore"
    ]
    for name, content in written.items():
        workflow = yaml.safe_load(content) if name.startswith(".github/") else None
        if not workflow:
            continue
        triggers = workflow[True]  # YAML 1.1 reads the key `on` as true
        for event in ("pull_request", "push"):
            patterns = (triggers.get(event) or {}).get("paths")
            if patterns is None:
                continue
            for path in answers_from:
                assert any(fnmatch.fnmatch(path, p.replace("**", "*")) for p in patterns), (
                    name,
                    event,
                    path,
                )


def test_init_appends_to_a_gitignore_once_and_keeps_what_was_there(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli: Callable[[list[str]], int],
) -> None:
    monkeypatch.chdir(tmp_path)
    Path(".gitignore").write_text("node_modules/\n*.log")  # no final newline
    assert cli(["init"]) == 0
    assert Path(".gitignore").read_text() == (
        "node_modules/\n*.log\n\n# casegate's results and reports: every run writes them again\n"
        ".casegate/\n"
    )
    assert "added .casegate/ to .gitignore" in capsys.readouterr().out


@pytest.mark.parametrize("line", [".casegate/", ".casegate", "/.casegate/", "  /.casegate/**"])
def test_init_leaves_a_gitignore_that_already_ignores_casegate_alone(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cli: Callable[[list[str]], int],
    line: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    Path(".gitignore").write_text(f"build/\n{line}\n")
    assert cli(["init"]) == 0
    assert Path(".gitignore").read_text() == f"build/\n{line}\n"
    assert ".gitignore" not in capsys.readouterr().out


@pytest.mark.parametrize("line", ["!.casegate/", ".casegate-old/", "# .casegate/", "x/.casegate/"])
def test_lines_that_do_not_ignore_casegates_folder_are_not_taken_for_it(line: str) -> None:
    assert not starter.ignored(f"{line}\n")


def test_a_refused_init_leaves_the_gitignore_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path(".gitignore").write_text("build/\n")
    Path("casegate.yml").write_text("mine\n")
    assert main(["init"]) == 2
    assert Path(".gitignore").read_text() == "build/\n"
    Path("casegate.yml").unlink()
    Path(".gitignore").write_bytes(b"caf\xe9/\n")  # Latin-1: casegate does not guess
    assert main(["init"]) == 2
    assert ".gitignore: not UTF-8 text, so casegate init does not edit it" in (
        capsys.readouterr().err
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [".gitignore"]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=a@b", "-c", "user.name=a", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _refreshed_on(root: Path) -> list[str]:
    workflow = yaml.safe_load((root / ".github/workflows/casegate-baseline.yml").read_text())
    return workflow[True]["push"]["branches"]  # yaml reads `on:` as True


@pytest.mark.parametrize(
    ("branches", "remote_head", "expected", "said"),
    [
        (["master"], None, "master", "the repository has master and no main"),
        (["main"], None, "main", "the repository has main and no master"),
        (["main", "master"], None, "main", "no default branch found, so the usual main"),
        (["trunk"], "trunk", "trunk", "the remote's default branch"),
    ],
)
def test_the_baseline_refreshes_on_the_branch_merges_land_on(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    branches: list[str],
    remote_head: str | None,
    expected: str,
    said: str,
) -> None:
    """Issue #25 trap 2: a repository whose default branch is master never refreshed its
    baseline, since the workflow always said main. The branch checked out is never taken:
    casegate is often added on a feature branch."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", branches[0])
    _git(repo, "commit", "-q", "--allow-empty", "-m", "first")
    for name in branches[1:]:
        _git(repo, "branch", name)
    if remote_head is not None:
        _git(repo, "update-ref", f"refs/remotes/origin/{remote_head}", "HEAD")
        _git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", f"refs/remotes/origin/{remote_head}")
    _git(repo, "checkout", "-q", "-b", "add-casegate")
    monkeypatch.chdir(repo)
    assert main(["init"]) == 0
    assert _refreshed_on(repo) == [expected]
    assert f"the baseline refreshes after merges to {expected} ({said};" in capsys.readouterr().out


def test_branch_chooses_it_and_refuses_what_would_break_the_workflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # not a repository: main, unless told
    with pytest.raises(SystemExit):
        main(["init", "--branch", "main]\n  paths: []"])
    assert "expected a branch name" in capsys.readouterr().err
    assert not (tmp_path / ".github").exists()
    assert main(["init", "--branch", "release/v2"]) == 0
    assert _refreshed_on(tmp_path) == ["release/v2"]


def test_init_says_which_action_the_workflows_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #25 trap 1: init wrote `uses: casegate/casegate@v1` and never said so."""
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 0
    out = capsys.readouterr().out
    assert "the workflows run the Action as `uses: casegate/casegate@v1`" in out
    assert "pass --action OWNER/REPO@REF" in out
    pinned = "acme/casegate@0123456789abcdef0123456789abcdef01234567"
    assert main(["init", "--dir", "other", "--action", pinned]) == 0
    out = capsys.readouterr().out
    assert f"the workflows run the Action as `uses: {pinned}`\n" in out
    assert (
        f"uses: {pinned}"
        in (tmp_path / "other/.github/workflows/casegate-baseline.yml").read_text()
    )
