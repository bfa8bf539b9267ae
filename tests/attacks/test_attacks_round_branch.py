"""Attacks on the surfaces added with branch-aware checks: the withdrawn comment, the implied
base of a local check, the system-code comparison, record --for-baseline. Each test asserts
the safe behaviour."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gate.github.api import marker_for
from tests.cli.test_branch_flow import CASES, break_and_rebaseline
from tests.conftest import Project
from tests.fakes.actions import Runner, git, init_repository, open_pull_request


def _blocked_then(runner: Runner) -> dict:
    open_pull_request(runner.workspace, lambda root: None)
    assert runner.run().returncode == 1
    (comment,) = runner.api.comments[7]
    assert "casegate: **block**" in comment["body"]
    return comment


def test_a_link_loop_the_pull_request_commits_withdraws_the_earlier_verdict(
    runner: Runner,
) -> None:
    # A case file committed as a loop of symbolic links stops the check (exit 2), as a tab
    # in a case file does; the earlier push's verdict must not stand beside it either.
    _blocked_then(runner)
    prompts = runner.workspace / "prompts"
    for name in os.listdir(prompts):
        (prompts / name).unlink()
        os.symlink(name, prompts / name)  # each a link to itself
    failed = runner.run()
    assert failed.returncode == 2, failed.stdout + failed.stderr
    (withdrawn,) = runner.api.comments[7]
    assert "casegate: **block**" not in withdrawn["body"], failed.stdout + failed.stderr
    assert withdrawn["body"].startswith(
        marker_for("support") + "\n### ⚠️ casegate: **could not run**"
    )


def test_a_forks_failed_run_withdraws_the_verdict_its_earlier_push_got(tmp_path: Path) -> None:
    # The fork flow (report-dir, then casegate-comment.yml): the first push's report was
    # posted; the next push cannot be judged (exit 2), so its run uploads no report. The
    # comment workflow must not leave the earlier verdict standing beside the failed check
    # (the Action's own path withdraws it; this one said only "nothing to post").
    from tests.fakes.actions import PULL_NUMBER, TOKEN, build_workspace
    from tests.fakes.github_api import FakeGitHub
    from tests.github.test_forkcomment import BRANCH, FORK, HEAD_SHA, workflow_run_event

    build_workspace(tmp_path / "workspace")
    (tmp_path / "home").mkdir()
    with FakeGitHub(TOKEN) as api:
        api.add_pull(PULL_NUMBER, HEAD_SHA, FORK, BRANCH)
        earlier = api.add_comment(
            PULL_NUMBER,
            marker_for("support") + "\n## ✅ casegate: **ship**",
            login="github-actions[bot]",
        )
        runner = Runner(tmp_path, tmp_path / "workspace", api, base_sha="")
        finished = runner.run(
            "workflow_run", workflow_run_event(), command="comment", report_dir="casegate-report"
        )
        assert finished.returncode == 0, finished.stdout + finished.stderr
        (comment,) = api.comments[PULL_NUMBER]
        assert comment["id"] == earlier["id"]
        assert "**ship**" not in comment["body"], finished.stdout
        assert comment["body"].startswith(
            marker_for("support") + "\n### ⚠️ casegate: **could not run**"
        )


# --- the implied base of a local check --------------------------------------------------


@pytest.fixture
def branch_repo(project: Project) -> Project:
    """A repository on main whose one commit holds a baseline; then a branch off it."""
    from gate.cli import main as cli

    project.write_cases(CASES)
    assert cli(["baseline", "--mode", "live", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-q", "-b", "feature", cwd=project.root)
    return project


def test_a_branch_check_with_no_default_branch_found_says_its_ruler_is_its_own_baseline(
    branch_repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = branch_repo
    # A repository with both main and master and no remote HEAD (a migration half done, a
    # clone without origin/HEAD): no default branch is found, and the check on a branch
    # silently compared with the branch's own re-recorded baseline, the trap the implied
    # base closes, and shipped its regression without a word.
    from gate.cli import main as cli

    git("branch", "master", "main", cwd=repo.root)
    break_and_rebaseline(repo)
    capsys.readouterr()
    code = cli(["check", "--mode", "live", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 or ("working copy" in err and "--base" in err), err


def test_one_suites_failed_step_leaves_another_suites_verdict_of_this_commit_standing(
    runner: Runner,
) -> None:
    # One step per suite (the matrix a roll-up's refusal recommends): suite `other` judged
    # this very commit and blocked it. The `support` step fails (a tab in a case file) and
    # rewrote every casegate comment, `other`'s block with its regressions included, to
    # "could not run", quoting support's problem under other's marker.
    open_pull_request(runner.workspace, lambda root: None)
    other = runner.api.add_comment(
        7,
        marker_for("other") + "\n## ⛔ casegate: **block** (3 regressions)",
        login="github-actions[bot]",
    )
    (runner.workspace / "cases/support/zz-broken.yaml").write_text("- id: x\n\tinput: {}\n")
    failed = runner.run()
    assert failed.returncode == 2
    assert other["body"] == marker_for("other") + "\n## ⛔ casegate: **block** (3 regressions)"


def test_a_pull_request_that_renames_its_suite_still_withdraws_the_old_suites_verdict(
    runner: Runner,
) -> None:
    # Withdrawal is scoped to the step's own suite: the one its config names in the pull
    # request and on the base commit, so renaming the suite in the same push does not keep
    # the earlier verdict standing.
    _blocked_then(runner)
    config = runner.workspace / "casegate.candidate.yml"
    config.write_text(config.read_text().replace("suite: support", "suite: renamed", 1))
    (runner.workspace / "cases/support/zz-broken.yaml").write_text("- id: x\n\tinput: {}\n")
    failed = runner.run()
    assert failed.returncode == 2, failed.stdout + failed.stderr
    (withdrawn,) = runner.api.comments[7]
    assert "casegate: **block**" not in withdrawn["body"]
    assert "could not run" in withdrawn["body"]


def test_a_config_that_does_not_parse_withdraws_every_casegate_comment(runner: Runner) -> None:
    # When the step's suite cannot be told, every casegate comment is withdrawn (fail closed).
    _blocked_then(runner)
    runner.api.add_comment(7, marker_for("other") + "\nship", login="github-actions[bot]")
    (runner.workspace / "casegate.candidate.yml").write_text("suite: [unclosed\n")
    failed = runner.run()
    assert failed.returncode == 2, failed.stdout + failed.stderr
    assert all("could not run" in c["body"] for c in runner.api.comments[7])


# --- make try-action --------------------------------------------------------------------


def test_a_branch_name_given_to_make_try_action_runs_no_command(tmp_path: Path) -> None:
    # A git branch may be named x`id>FILE` (backticks and `>` are allowed in ref names): the
    # recipe put it inside double quotes, where the shell runs what backticks hold.
    import shutil
    import subprocess

    # `make test` is how the suite runs: make is always there, and a missing one must fail.
    assert shutil.which("make") is not None, "make is needed to run the tests (`make test`)"
    pwned = tmp_path / "pwned"
    branch = f"x`id>{pwned}`"
    assert subprocess.run(["git", "check-ref-format", f"refs/heads/{branch}"]).returncode == 0
    subprocess.run(
        ["make", "-s", "try-action", f"REPO={tmp_path / 'nothing'}", f"BRANCH={branch}"],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert not pwned.exists()
