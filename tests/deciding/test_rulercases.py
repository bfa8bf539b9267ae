"""The cases' part of the ruler: input files (`input_files:`) are compared as the base's
tree holds them against the pull request's, as a case's input is."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml

from gate.cli import main
from gate.deciding import basetree, rulerdiff, rulerside
from tests.conftest import Project, case
from tests.fakes.actions import git, init_repository

READER = """
from pathlib import Path

def answer(case_input, system):
    return " ".join(Path(p).read_text() for p in case_input["input_files"].values())
"""


def _cases(**fields: object) -> list[dict[str, object]]:
    return [
        case(
            "ticket",
            "q",
            contains="refund",
            fields_={"input_files": ["tickets/a.txt"], **fields},
        ),
        case(
            "urgent",
            "q",
            contains="refund",
            fields_={"input_files": ["tickets/a.txt"], "critical": True},
        ),
    ]


@pytest.fixture
def repo(project: Project) -> Project:
    """A base commit whose cases read tickets/a.txt, recorded and with a baseline."""
    project.write_system(READER)
    project.write_text("tickets/a.txt", "refund please")
    project.write_text("tickets/b.txt", "refund twice")
    project.write_cases(_cases())
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    return project


def _base(project: Project, tmp_path: Path) -> rulerside.Side:
    tree, refused = basetree.extract_tree(project.root, "main", tmp_path / "scratch")
    return rulerside.load_side(tree / "casegate.yml", (), tree, refused=refused)


def _changes(project: Project, tmp_path: Path) -> set[str]:
    head = rulerside.load_side(project.config_path, (), project.root)
    found = rulerdiff.compare_rulers(_base(project, tmp_path), head)
    return {f"{'-' if c.loosens else '+'} {c.describe()}" for c in found}


def test_unchanged_files_change_nothing(repo: Project, tmp_path: Path) -> None:
    assert _changes(repo, tmp_path) == set()


def test_the_base_side_hashes_the_base_commits_bytes(repo: Project, tmp_path: Path) -> None:
    repo.write_text("tickets/a.txt", "refund NOW")  # in the working tree only
    base = _base(repo, tmp_path)
    blob = git("cat-file", "blob", "main:tickets/a.txt", cwd=repo.root).encode()
    assert base.case_map["ticket"].input_file_hashes == {
        "tickets/a.txt": hashlib.sha256(blob).hexdigest()
    }
    assert blob == b"refund please"


def test_an_edited_file_is_a_loosening_change_of_every_case_reading_it(
    repo: Project, tmp_path: Path
) -> None:
    repo.write_text("tickets/a.txt", "refund NOW")
    assert _changes(repo, tmp_path) == {
        "- case ticket: input_files changed without a version bump: tickets/a.txt edited",
        "- critical case urgent: input_files changed without a version bump: tickets/a.txt edited",
    }


def test_a_version_bump_sets_a_plain_case_aside_but_not_a_critical_one(
    repo: Project, tmp_path: Path
) -> None:
    repo.write_text("tickets/a.txt", "refund NOW")
    bumped = _cases(version=2)
    bumped[1]["version"] = 2
    repo.write_cases(bumped)
    assert _changes(repo, tmp_path) == {
        "- case ticket: version 1 → 2 without a change to what it expects",
        "- critical case urgent: input_files changed: tickets/a.txt edited",
        "- critical case urgent: version 1 → 2 without a change to what it expects",
    }


def test_a_file_added_or_dropped_from_the_list_is_a_change(repo: Project, tmp_path: Path) -> None:
    changed = _cases()
    changed[0]["input_files"] = ["tickets/a.txt", "tickets/b.txt"]
    changed[1]["input_files"] = []
    repo.write_cases(changed)
    assert _changes(repo, tmp_path) == {
        "- case ticket: input_files changed without a version bump: tickets/b.txt added",
        "- critical case urgent: input_files changed without a version bump: tickets/a.txt removed",
    }


def test_a_default_file_added_is_a_change_of_every_case(repo: Project, tmp_path: Path) -> None:
    data = yaml.safe_load(repo.config_path.read_text())
    data["defaults"] = {"input_files": ["tickets/b.txt"]}
    repo.config_path.write_text(yaml.safe_dump(data))
    found = _changes(repo, tmp_path)
    assert "- case ticket: input_files changed without a version bump: tickets/b.txt added" in found
    assert (
        "- critical case urgent: input_files changed without a version bump: tickets/b.txt added"
        in found
    )


def test_through_check_an_edited_and_rerecorded_file_blocks_until_accepted(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write_text("tickets/a.txt", "refund within 30 days")
    assert main(["record", "--quiet"]) == 0  # the pull request's own recordings match it
    git("add", "-A", cwd=repo.root)
    git("commit", "-qm", "swap the ticket", cwd=repo.root)
    capsys.readouterr()
    assert main(["check", "--base", "main", "--quiet", "--out", "c.json"]) == 1
    out = capsys.readouterr().out
    assert "case ticket: input_files changed without a version bump: tickets/a.txt edited" in out
    assert main(["check", "--base", "main", "--quiet", "--accept-ruler-change"]) == 0
