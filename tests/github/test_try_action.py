"""The newcomer's path, from `casegate init` to a blocked pull request, against the
loopback GitHub (`make try-action`, tests/fakes/try_action.py).

A repository made by `init --provider python`, a real answer committed on main with
its baseline, then two branches recorded the way the docs say (`record
--for-baseline`): one breaks the critical case, one changes the prompt harmlessly.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.cli import main
from tests.cli.test_cli import casegate
from tests.fakes import try_action
from tests.fakes.actions import git, init_repository

ANSWER = """
def answer(case_input, system):
    if "return" in case_input["question"]:
        return "{days} days to return it, no questions asked."
    return "We will let you know when it ships."
"""


def recorded(repo: Path, *command: str) -> None:
    for args in (["record", "--for-baseline", "--quiet"], *([list(command)] if command else [])):
        finished = casegate(*args, cwd=repo)  # a process of its own imports system.py
        assert finished.returncode == 0, finished.stdout + finished.stderr


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    assert main(["init", "--dir", str(root), "--provider", "python", "--action", "./"]) == 0
    (root / "system.py").write_text(ANSWER.format(days=30))
    recorded(root, "baseline", "--quiet")
    init_repository(root)
    return root


def branch(repo: Path, name: str, edit: dict[str, str]) -> None:
    git("checkout", "-q", "-b", name, "main", cwd=repo)
    for relative, text in edit.items():
        (repo / relative).write_text(text)
    recorded(repo)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", name, cwd=repo)


def test_a_pull_request_that_breaks_the_critical_case_is_blocked(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    branch(repo, "shorter-window", {"system.py": ANSWER.format(days=14)})
    assert try_action.main([str(repo), "shorter-window"]) == 1
    out = capsys.readouterr().out
    comment = out[out.index("--- the sticky comment on pull request #7 (1 posted):") :]
    assert "### ❌ casegate: **block** — assistant" in comment and "`refund-window`" in comment
    assert "judged by, read from the base `" in comment and ": nothing changed" in comment
    assert "verdict: block" in out and "--- the step exited 1 (shorter-window → main)" in out
    assert git("status", "--porcelain", cwd=repo) == ""  # the user's repository is untouched


def test_a_harmless_prompt_change_ships(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prompt = (repo / "prompts/assistant.md").read_text() + "\nBe kind.\n"
    branch(repo, "kinder", {"prompts/assistant.md": prompt})
    assert try_action.main([str(repo), "kinder"]) == 0
    out = capsys.readouterr().out
    assert "### ✅ casegate: **ship** — assistant" in out and "verdict: ship" in out


def test_an_unknown_branch_is_one_line_and_exit_2(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert try_action.main([str(repo), "no-such-branch"]) == 2
    out = capsys.readouterr().out
    assert out == (
        f"try-action: cannot open the pull request no-such-branch → main: {repo} has no "
        "branch 'no-such-branch' (its branches: main)\n"
    )
    assert try_action.main([str(repo), "main"]) == 2
    assert "main is the branch it would merge into" in capsys.readouterr().out


def test_a_branch_that_does_not_merge_says_how_to_make_it(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompt = repo / "prompts/assistant.md"
    original = prompt.read_text()
    branch(repo, "first", {"prompts/assistant.md": original + "\nBe brief.\n"})
    branch(repo, "second", {"prompts/assistant.md": original + "\nBe thorough.\n"})
    git("checkout", "-q", "main", cwd=repo)
    git("merge", "-q", "--no-ff", "-m", "first", "first", cwd=repo)
    capsys.readouterr()
    assert try_action.main([str(repo), "second"]) == 2
    out = capsys.readouterr().out
    assert "second does not merge cleanly into main (conflicts in " in out
    assert "prompts/assistant.md" in out and "merge main into second" in out
    assert "Traceback" not in out


def test_an_action_that_stops_early_prints_no_traceback(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    git("checkout", "-q", "-b", "no-config", "main", cwd=repo)
    git("commit", "-q", "--allow-empty", "-m", "nothing", cwd=repo)
    assert try_action.main([str(repo), "no-config", "--config", "casegate.yaml"]) == 2
    out = capsys.readouterr().out
    assert "casegate.yaml: no such config file" in out
    assert "--- the step wrote no outputs" in out and "Traceback" not in out


def test_a_folder_that_is_no_repository_and_uncommitted_work_are_said(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert try_action.main([str(plain), "main"]) == 2
    assert capsys.readouterr().out == (
        f"try-action: {plain} is not a git repository: give REPO=PATH of one\n"
    )
    branch(repo, "kinder", {"prompts/assistant.md": "Be kind.\n"})
    (repo / "prompts/assistant.md").write_text("Be unkind.\n")  # not committed
    try_action.main([str(repo), "kinder"])
    assert "has changes not committed; the pull request is kinder as committed" in (
        capsys.readouterr().out
    )
