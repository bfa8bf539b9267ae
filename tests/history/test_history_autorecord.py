"""`history: {record: all}`: complete runs join the history; partial ones and a pull
request's never do (gate.history.autorecord)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from gate.cli import main
from gate.history.autorecord import UNDER_A_RULING, incomplete, record_run
from gate.suite.cases import Case
from gate.suite.config import load_config
from tests.conftest import Project, case
from tests.factories import result, run
from tests.fakes.actions import Runner, git, open_pull_request

EXPORT = "history/demo.jsonl"
CRASHING_BOT = """
def answer(case_input, system):
    if case_input["question"] == "explode":
        raise RuntimeError("the backend choked")
    return "echo: " + case_input["question"]
"""


def runs_in(project: Project, relative: str = EXPORT) -> list[tuple[str, str]]:
    """The distinct runs in the export: (config_hash, created_at), in the order written."""
    path = project.root / relative
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return list(dict.fromkeys((line["config_hash"], line["created_at"]) for line in lines))


@pytest.fixture
def suite(project: Project, monkeypatch: pytest.MonkeyPatch) -> Project:
    monkeypatch.setenv("GITHUB_SHA", "c0ffee")
    project.write_cases([case("a", "hi", contains="hi"), case("b", "yo", contains="nope")])
    project.write_config(history={"record": "all"})
    return project


def test_record_baseline_appends_no_run(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("a", "hi", contains="hi")])
    project.write_config(history="history/demo.jsonl")  # the string form: baselines only
    assert main(["run", "--mode", "live", "--quiet"]) == 0
    assert runs_in(project) == []
    assert "history" not in capsys.readouterr().err


def test_record_all_appends_every_complete_run_model_swaps_included(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--mode", "live", "--quiet"]) == 0
    assert "casegate: history: added 2 case(s) of the run of" in capsys.readouterr().err
    assert main(["run", "--mode", "live", "--quiet", "--set", "system.model=other"]) == 0
    found = runs_in(suite)
    assert len(found) == 2
    assert found[0][0] != found[1][0]  # the swap is a run of another configuration
    lines = (suite.root / EXPORT).read_text().splitlines()
    assert {json.loads(line)["commit"] for line in lines} == {"c0ffee"}
    assert {json.loads(line)["verdict"] for line in lines} == {"pass", "fail"}


def test_a_selection_or_a_shard_is_not_appended_and_says_why(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--mode", "live", "--quiet", "--case", "a"]) == 0
    said = capsys.readouterr().err
    assert "history: not recorded (history.record: all takes complete runs only)" in said
    assert "a selection (--case/--tag)" in said
    assert main(["run", "--mode", "live", "--quiet", "--shard", "1/2"]) == 0
    assert "one shard (1/2) of the suite" in capsys.readouterr().err
    assert runs_in(suite) == []


def test_a_run_with_an_error_is_not_appended(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    suite.write_system(CRASHING_BOT)
    suite.write_cases([case("a", "hi", contains="hi"), case("boom", "explode", contains="x")])
    assert main(["run", "--mode", "live", "--quiet"]) == 0
    assert "a run with 1 case(s) in error" in capsys.readouterr().err
    assert runs_in(suite) == []


def _cases(*ids: str) -> list[Case]:
    return [Case.model_validate({"id": i, "input": {}, "expect": {}}) for i in ids]


def test_a_run_missing_a_case_of_the_suite_is_incomplete() -> None:
    results = run([result("a"), result("b")])
    assert incomplete(results, _cases("a", "b")) is None
    assert incomplete(results, _cases("a", "b", "c")) == (
        "a run without a result for 1 of the suite's 3 case(s)"
    )
    interrupted = run([result("a")])
    interrupted.interrupted = True
    assert "interrupted after 1 case(s)" in (incomplete(interrupted, _cases("a")) or "")


def test_a_ruled_run_never_writes_the_history(suite: Project) -> None:
    loaded = load_config(suite.config_path)
    results = run([result("a"), result("b", "fail")], suite="demo")
    assert record_run(loaded, _cases("a", "b"), results, ruled=True) == UNDER_A_RULING
    assert runs_in(suite) == []
    said = record_run(loaded, _cases("a", "b"), results)
    assert said is not None and said.startswith("history: added 2 case(s)")
    assert len(runs_in(suite)) == 1


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def test_check_appends_outside_a_pull_request_and_not_with_base(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["record", "--quiet"]) == 0  # a complete recording run: appended
    assert main(["baseline", "--quiet"]) == 0  # appended too (or the same second's run)
    before = len(runs_in(suite))
    assert before >= 1
    _git(suite.root, "init", "-q", "-b", "main")
    _git(suite.root, "add", "-A")
    _git(suite.root, "commit", "-q", "-m", "base")
    capsys.readouterr()
    assert main(["check", "--base", "HEAD", "--quiet", "--sandbox", "off"]) == 0
    assert UNDER_A_RULING in capsys.readouterr().err.replace("\n", " ")
    assert len(runs_in(suite)) == before
    # A run is known by its suite, config, commit and second: the next one is another.
    time.sleep(1.1)
    assert main(["check", "--quiet", "--sandbox", "off"]) == 0
    assert "casegate: history: added 2 case(s)" in capsys.readouterr().err
    assert len(runs_in(suite)) == before + 1


# --- the Action --------------------------------------------------------------------------


def test_the_action_appends_a_dispatched_check_but_never_a_pull_requests(
    runner: Runner,
) -> None:
    config = runner.workspace / "casegate.candidate.yml"  # the fake job's `config:`
    config.write_text(config.read_text() + "history: {record: all}\n")
    git("commit", "-qam", "keep every complete run", cwd=runner.workspace)
    runner.base_sha = git("rev-parse", "HEAD", cwd=runner.workspace)
    export = runner.workspace / "history" / "support.jsonl"
    before = export.read_bytes() if export.exists() else b""

    open_pull_request(runner.workspace, lambda root: (root / "NOTES.md").write_text("docs\n"))
    pulled = runner.run()
    assert "history: not recorded: a pull request's run" in pulled.stdout, pulled.stderr
    assert (export.read_bytes() if export.exists() else b"") == before

    git("checkout", "-q", "main", cwd=runner.workspace)
    dispatched = runner.run("workflow_dispatch", {})
    assert "history: added 48 case(s) of the run of" in dispatched.stdout, dispatched.stderr
    added = export.read_bytes()[len(before) :].decode().splitlines()
    assert len(added) == 48
    assert export.read_bytes().startswith(before)  # appended, nothing rewritten
