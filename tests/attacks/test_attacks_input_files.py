"""Attacks through input files (`input_files:`, gate.suite.inputfiles): a case that names
a file outside the suite, a link, a folder, a pipe or a huge file; and a pull request that
swaps a fixture so that its own recording matches, or swaps it for a link.

Every test asserts the SAFE outcome: a failing test means the attack worked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gate.cli import main
from gate.limits import MAX_INPUT_FILE_BYTES
from tests.conftest import Project, case
from tests.fakes.actions import (
    REPO,
    Runner,
    git,
    init_repository,
    open_pull_request,
    open_to_the_sandbox,
)

READER = """
from pathlib import Path

def answer(case_input, system):
    return " ".join(Path(p).read_text() for p in case_input.get("input_files", {}).values())
"""


@pytest.fixture
def suite(project: Project) -> Project:
    project.write_system(READER)
    project.write_text("tickets/a.txt", "refund please")
    return project


def _reads(project: Project, *paths: str, critical: bool = False) -> None:
    fields: dict[str, object] = {"input_files": list(paths)}
    if critical:
        fields["critical"] = True
    project.write_cases([case("a", "q", contains="refund", fields_=fields)])


def _validate(capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["validate"])
    return code, capsys.readouterr().err


# --- what a case may name -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("../secret.txt", "climbs out with `..`"),
        ("tickets/../../secret.txt", "climbs out with `..`"),
        ("/etc/hostname", "is absolute"),
        (".git/config", "is inside .git"),
        ("tickets", "is a folder"),
    ],
)
def test_a_file_outside_the_suite_or_not_a_file_is_refused_at_load(
    suite: Project, capsys: pytest.CaptureFixture[str], written: str, said: str
) -> None:
    (suite.root / ".git").mkdir()
    (suite.root / ".git" / "config").write_text("[core]\n")
    (suite.root.parent / "secret.txt").write_text("refund")
    _reads(suite, written)
    code, err = _validate(capsys)
    assert code == 2
    # at the line of the case's `input_files:`
    assert f"cases/cases.yaml:6: case 'a': input_files: {written!r}" in err
    assert said in err


def test_a_link_to_a_file_outside_is_refused(
    suite: Project, capsys: pytest.CaptureFixture[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside") / "secret.txt"
    outside.write_text("refund from elsewhere")
    (suite.root / "tickets" / "link.txt").symlink_to(outside)
    _reads(suite, "tickets/link.txt")
    code, err = _validate(capsys)
    assert code == 2
    assert "'tickets/link.txt' goes through a symbolic link (tickets/link.txt)" in err


def test_a_linked_folder_on_the_way_is_refused(
    suite: Project, capsys: pytest.CaptureFixture[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (outside / "a.txt").write_text("refund")
    (suite.root / "linked").symlink_to(outside, target_is_directory=True)
    _reads(suite, "linked/a.txt")
    code, err = _validate(capsys)
    assert code == 2
    assert "'linked/a.txt' goes through a symbolic link (linked)" in err


def test_a_link_inside_the_suite_is_refused_too(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    (suite.root / "tickets" / "same.txt").symlink_to("a.txt")
    _reads(suite, "tickets/same.txt")
    code, err = _validate(capsys)
    assert code == 2
    assert "name the file itself" in err


def test_a_pipe_is_refused_without_waiting_for_a_writer(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    os.mkfifo(suite.root / "tickets" / "pipe")
    _reads(suite, "tickets/pipe")
    code, err = _validate(capsys)
    assert code == 2
    assert "'tickets/pipe' is not a regular file" in err


def test_a_huge_file_is_refused_unread(suite: Project, capsys: pytest.CaptureFixture[str]) -> None:
    huge = suite.root / "tickets" / "huge.bin"
    with huge.open("wb") as stream:  # sparse: its size costs no disk and no reading
        stream.truncate(MAX_INPUT_FILE_BYTES + 1)
    _reads(suite, "tickets/huge.bin")
    code, err = _validate(capsys)
    assert code == 2
    assert "'tickets/huge.bin': 50.0 MB, more than the 50 MB an input file may be" in err


def test_too_many_files_are_refused(suite: Project, capsys: pytest.CaptureFixture[str]) -> None:
    _reads(suite, *[f"tickets/{n}.txt" for n in range(101)])
    code, err = _validate(capsys)
    assert code == 2
    assert "input_files: List should have at most 100 items" in err


def test_defaults_cannot_name_a_file_outside_either(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    data = yaml.safe_load(suite.config_path.read_text())
    data["defaults"] = {"input_files": ["../secret.txt"]}
    suite.config_path.write_text(yaml.safe_dump(data))
    suite.write_cases([case("a", "q", contains="refund")])
    code, err = _validate(capsys)
    assert code == 2
    assert "defaults.input_files: '../secret.txt' climbs out with `..`" in err


# --- a pull request against the base -------------------------------------------------------


@pytest.fixture
def base(suite: Project) -> Project:
    _reads(suite, "tickets/a.txt", critical=True)
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    init_repository(suite.root)
    git("checkout", "-qb", "change", cwd=suite.root)
    return suite


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["check", "--base", "main", "--quiet", "--out", "c.json", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _commit(project: Project) -> None:
    git("add", "-A", cwd=project.root)
    git("commit", "-qm", "the pull request", cwd=project.root)


def test_a_swapped_fixture_with_a_matching_recording_is_a_ruler_change(
    base: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pull request rewrites the ticket and records against it: the replay finds its
    recording, so only the ruler (the base's bytes against the pull request's) can see it."""
    base.write_text("tickets/a.txt", "refund denied")
    assert main(["record", "--quiet"]) == 0
    _commit(base)
    capsys.readouterr()
    code, out = _check(capsys)
    assert code == 1
    assert (
        "critical case a: input_files changed without a version bump: tickets/a.txt edited" in out
    )


def test_a_swapped_fixture_without_a_recording_stops_the_replay(
    base: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    base.write_text("tickets/a.txt", "refund denied")
    _commit(base)
    capsys.readouterr()
    code, out = _check(capsys)
    assert code == 2  # never the old recording, judged as if for the new file
    assert "an edited input file needs a new recording" in out


def test_a_fixture_swapped_for_a_link_stops_the_check(
    base: Project, capsys: pytest.CaptureFixture[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The pull request replaces the ticket with a link: to a copy of the base's bytes (so
    the hash would not move) whose target it could change after the ruler read it."""
    copy = tmp_path_factory.mktemp("elsewhere") / "a.txt"
    copy.write_text("refund please")
    ticket = base.root / "tickets" / "a.txt"
    ticket.unlink()
    ticket.symlink_to(copy)
    _commit(base)
    capsys.readouterr()
    code, out = _check(capsys)
    assert code == 2
    assert "'tickets/a.txt' goes through a symbolic link" in out


def test_a_pull_request_that_names_another_file_is_a_ruler_change(
    base: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    base.write_text("tickets/b.txt", "refund please, but another")
    _reads(base, "tickets/b.txt", critical=True)
    assert main(["record", "--quiet"]) == 0
    _commit(base)
    capsys.readouterr()
    code, out = _check(capsys)
    assert code == 1
    assert "tickets/a.txt removed, tickets/b.txt added" in out


def test_a_pull_request_that_drops_input_files_is_a_ruler_change(
    base: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    base.write_cases([case("a", "q", contains="refund", fields_={"critical": True})])
    (base.root / "recordings" / "a.json").unlink()
    base.write_system("def answer(case_input, system):\n    return 'refund'\n")
    assert main(["record", "--quiet"]) == 0
    _commit(base)
    capsys.readouterr()
    code, out = _check(capsys)
    assert code == 1
    assert "critical case a: input_files changed without a version bump: tickets/a.txt removed" in (
        out
    )


def test_a_pull_request_that_adds_a_default_file_is_a_ruler_change(
    base: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    base.write_text("docs/policy.md", "refunds: never")
    data = yaml.safe_load(base.config_path.read_text())
    data["defaults"] = {"input_files": ["docs/policy.md"]}
    base.config_path.write_text(yaml.safe_dump(data))
    assert main(["record", "--quiet"]) == 0
    _commit(base)
    capsys.readouterr()
    code, out = _check(capsys)
    assert code == 1
    assert "critical case a: input_files changed without a version bump: docs/policy.md added" in (
        out
    )


# --- the sandbox --------------------------------------------------------------------------


def test_a_fixture_the_sandbox_user_cannot_read_is_named_before_a_live_run(
    open_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As root (the Action), the run drops to a user of its own: a fixture closed to it
    is refused under `--sandbox require` before anything runs, naming the file."""
    project = Project(open_tmp)
    monkeypatch.chdir(open_tmp)
    project.write_system(READER)
    project.write_config()
    ticket = project.write_text("tickets/a.txt", "refund please")
    _reads(project, "tickets/a.txt")
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    open_to_the_sandbox(open_tmp)
    ticket.chmod(0o600)
    # A replay calls no system: the gate itself read the file, and nothing else needs it.
    assert main(["check", "--sandbox", "require", "--quiet", "--out", "replayed.json"]) == 0
    capsys.readouterr()
    code = main(["check", "--mode", "live", "--sandbox", "require", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"the sandbox's user cannot read {ticket}" in err


# --- the Action, on GitHub's merge commit ----------------------------------------------------


def _casegate(workspace: Path, *args: str) -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "gate", *args],
        cwd=workspace,
        capture_output=True,
        text=True,
        check=False,
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr


def _with_ticket(runner: Runner) -> None:
    """The example suite's base, with one case reading a ticket, recorded."""
    shutil.copytree(REPO / "examples", runner.workspace / "examples")
    (runner.workspace / "tickets").mkdir()
    (runner.workspace / "tickets" / "a.txt").write_text("How long does shipping take?")
    shipping = runner.workspace / "cases" / "support" / "shipping.yaml"
    shipping.write_text(
        shipping.read_text().replace(
            '    contains: "3–7 business days"\n',
            '    contains: "3–7 business days"\n  input_files: [tickets/a.txt]\n',
            1,
        )
    )
    _casegate(runner.workspace, "record", "--only-missing", "--quiet", "--case", "shipping-*")
    git("add", "-A", cwd=runner.workspace)
    git("commit", "-qm", "a case reads a ticket", cwd=runner.workspace)
    runner.base_sha = git("rev-parse", "HEAD", cwd=runner.workspace)


def test_the_action_blocks_a_pull_request_that_edits_a_ticket(runner: Runner) -> None:
    """On `pull_request`: the base's ticket, read from its commit, against the merge's.
    The example suite verifies changed recordings, so CI records the edited case again
    itself: the recordings then match, and only the ruler can see the swap."""
    _with_ticket(runner)
    open_pull_request(
        runner.workspace,
        lambda root: (root / "tickets" / "a.txt").write_text("Refund me now, no questions."),
    )
    finished = runner.run(config="casegate.yml", verify="")  # the base's `verify: changed`
    out = finished.stdout + finished.stderr
    assert finished.returncode == 1, out[-3000:]
    assert "verify: recorded again by CI, live: shipping-estimate" in out
    assert (
        "case shipping-estimate: input_files changed without a version bump: tickets/a.txt edited"
        in out
    )


def test_without_verification_an_edited_ticket_stops_the_action(runner: Runner) -> None:
    """A fork's run (no verification): the author's recordings are for the old ticket."""
    _with_ticket(runner)
    open_pull_request(
        runner.workspace,
        lambda root: (root / "tickets" / "a.txt").write_text("Refund me now, no questions."),
    )
    finished = runner.run(config="casegate.yml")  # verify: off
    out = finished.stdout + finished.stderr
    assert finished.returncode == 2, out[-3000:]
    assert "(shipping-estimate: tickets/a.txt): an edited input file needs a new recording" in out


def test_the_action_refuses_a_ticket_swapped_for_a_link(runner: Runner) -> None:
    _with_ticket(runner)

    def swap(root: Path) -> None:
        ticket = root / "tickets" / "a.txt"
        ticket.unlink()
        ticket.symlink_to("../casegate.yml")

    open_pull_request(runner.workspace, swap)
    finished = runner.run(config="casegate.yml")
    out = finished.stdout + finished.stderr
    assert finished.returncode == 2, out[-3000:]
    assert "'tickets/a.txt' goes through a symbolic link" in out
