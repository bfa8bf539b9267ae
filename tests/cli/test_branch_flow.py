"""Work on a branch as its pull request will be judged: against the merge base.

Two traps this closes. On a branch, `casegate baseline --mode record` rewrote the
baseline with the branch's own answers, so a check against that file found nothing
changed and shipped the regression the branch brought. And a pull request carrying
that rewritten baseline is blocked as a ruler change until a maintainer accepts it,
so the branch records with `record --for-baseline`, which writes no baseline."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from gate.cli import main
from gate.suite.branches import implied_base
from tests.conftest import Project, case
from tests.fakes.actions import git, init_repository

CASES = [
    case("greet", "hello", contains="hello", fields_={"critical": True}),
    case("echo", "world", contains="world"),
]
BROKEN = "def answer(case_input, system):\n    return 'nothing useful'\n"


@pytest.fixture
def repo(project: Project) -> Project:
    """A repository on main whose one commit holds a baseline; then a branch off it."""
    project.write_cases(CASES)
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-q", "-b", "feature", cwd=project.root)
    return project


def break_and_rebaseline(repo: Project) -> None:
    repo.write_system(BROKEN)
    sys.modules.pop(repo.module, None)  # `baseline` runs in this process: import it afresh
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0  # the branch's own answers
    git("commit", "-qam", "a regression, and a baseline that agrees with it", cwd=repo.root)


def test_a_plain_check_on_a_branch_blocks_what_its_own_baseline_would_hide(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    break_and_rebaseline(repo)
    capsys.readouterr()
    assert main(["check", "--mode", "live", "--quiet"]) == 1
    captured = capsys.readouterr()
    merge_base = git("rev-parse", "main", cwd=repo.root)
    assert (
        f"check: branch 'feature' is judged as its pull request into 'main' will be: the gate "
        f"rule, cases and baseline are read from their merge base {merge_base[:12]}"
    ) in captured.err
    assert "1 critical case(s) passed on the baseline and fail on the candidate" in captured.out
    assert "commit(s) this branch does not have" not in captured.err  # main has not moved
    # The way back to the working copy's baseline is named and works.
    assert main(["check", "--mode", "live", "--quiet", "--no-base"]) == 0
    assert "judged as its pull request" not in capsys.readouterr().err


def test_on_the_default_branch_the_working_copy_is_the_ruler(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    git("checkout", "-q", "main", cwd=repo.root)
    break_and_rebaseline(repo)  # the baseline workflow's own refresh, say
    assert main(["check", "--mode", "live", "--quiet"]) == 0
    assert "judged as its pull request" not in capsys.readouterr().err


def test_an_explicit_base_wins(repo: Project, capsys: pytest.CaptureFixture[str]) -> None:
    break_and_rebaseline(repo)
    capsys.readouterr()
    assert main(["check", "--mode", "live", "--quiet", "--base", "HEAD"]) == 0
    assert "judged as its pull request" not in capsys.readouterr().err


def test_base_and_no_base_together_are_refused(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["check", "--base", "main", "--no-base"])
    assert raised.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_the_merge_base_is_where_the_branch_left_not_the_default_branchs_tip(
    repo: Project,
) -> None:
    left_at = git("rev-parse", "HEAD", cwd=repo.root)
    git("commit", "-q", "--allow-empty", "-m", "on the branch", cwd=repo.root)
    git("checkout", "-q", "main", cwd=repo.root)
    git("commit", "-q", "--allow-empty", "-m", "main moved on", cwd=repo.root)
    git("checkout", "-q", "feature", cwd=repo.root)
    found = implied_base(repo.root)
    assert found is not None
    assert (found.commit, found.branch, found.default) == (left_at, "feature", "main")
    # The pull request is judged against main as it is now: the check says it cannot see that.
    assert found.behind == 1
    assert (
        "casegate: warning: 'main' has 1 commit(s) this branch does not have: its pull "
        "request is judged against 'main' as it is now; merge 'main' into 'feature'"
    ) in found.describe()


def test_the_remotes_default_branch_is_preferred(repo: Project) -> None:
    # origin/HEAD names the branch pull requests go to; a local `main` may be stale.
    git("update-ref", "refs/remotes/origin/trunk", "main", cwd=repo.root)
    git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/trunk", cwd=repo.root)
    found = implied_base(repo.root)
    assert found is not None and found.default == "origin/trunk"


@pytest.mark.parametrize("where", ["detached", "no default branch", "unrelated history"])
def test_without_a_branch_to_judge_against_nothing_is_implied(repo: Project, where: str) -> None:
    if where == "detached":
        git("checkout", "-q", "--detach", cwd=repo.root)
    elif where == "no default branch":
        git("branch", "-q", "-D", "main", cwd=repo.root)
    else:
        git("checkout", "-q", "--orphan", "elsewhere", cwd=repo.root)
        git("commit", "-qm", "a root of its own", cwd=repo.root)
        git("branch", "-q", "-D", "feature", cwd=repo.root)
        git("checkout", "-q", "-b", "feature", cwd=repo.root)
        git("branch", "-q", "-D", "elsewhere", cwd=repo.root)
    assert implied_base(repo.root) is None


def test_outside_a_repository_nothing_is_implied(tmp_path_factory: pytest.TempPathFactory) -> None:
    assert implied_base(tmp_path_factory.mktemp("plain")) is None


def recorded_counts(repo: Project) -> dict[str, int]:
    folder = repo.root / "recordings"
    return {
        path.stem: len(json.loads(path.read_text())["responses"])
        for path in sorted(folder.rglob("*.json"))
    }


def test_record_for_baseline_records_what_the_refresh_replays_and_leaves_the_baseline(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write_config(samples=2)  # a baseline is estimated from 3 x 2 = 6 samples a case
    shutil.rmtree(repo.root / "recordings", ignore_errors=True)
    before = (repo.root / "baselines/demo.json").read_bytes()
    assert main(["record", "--quiet"]) == 0
    assert set(recorded_counts(repo).values()) == {2}  # a check's count: the refresh would miss
    assert main(["record", "--for-baseline", "--quiet"]) == 0
    assert set(recorded_counts(repo).values()) == {6}
    assert (repo.root / "baselines/demo.json").read_bytes() == before
    capsys.readouterr()
    # What casegate-baseline.yml runs after the merge: a replay at the baseline's count.
    assert main(["baseline", "--quiet"]) == 0


def test_record_for_baseline_dry_run_prices_the_baselines_count(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write_config(samples=2)
    capsys.readouterr()
    assert main(["record", "--for-baseline", "--dry-run"]) == 0
    assert "would call the system 12 time(s) for 2 case(s)" in capsys.readouterr().out  # 2 x 6


def test_a_baseline_written_on_a_branch_says_its_pull_request_would_block(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "casegate: warning: on branch 'feature', demo.json is main's to write" in err
    assert "git restore -- baselines/demo.json" in err and "record --for-baseline" in err
    git("checkout", "-q", "main", cwd=repo.root)
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    assert "to write" not in capsys.readouterr().err  # the default branch writes its own


def test_the_branch_that_brings_the_first_baseline_is_not_warned(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    # The pull request adding casegate: the default branch has no baseline to keep.
    git("rm", "-q", "--cached", "baselines/demo.json", cwd=repo.root)
    git("commit", "-qm", "no baseline yet", cwd=repo.root)
    git("checkout", "-q", "-b", "adds-casegate", cwd=repo.root)
    git("branch", "-q", "-f", "main", "HEAD", cwd=repo.root)
    capsys.readouterr()
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    assert "to write" not in capsys.readouterr().err


@pytest.fixture
def recorded_repo(project: Project) -> Project:
    """On main: recordings, and a baseline replayed from them; then a branch off it."""
    project.write_cases(CASES)
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-q", "-b", "feature", cwd=project.root)
    return project


def test_a_code_change_alone_is_named_beside_the_old_codes_answers(
    recorded_repo: Project, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Recordings are keyed on the config: replay judges the answers the old code gave.
    recorded_repo.write_system(BROKEN)
    git("commit", "-qam", "the code alone", cwd=recorded_repo.root)
    capsys.readouterr()
    out_file = tmp_path / "r.json"
    assert main(["check", "--quiet", "--out", str(out_file)]) == 0
    out = capsys.readouterr().out
    module = f"{recorded_repo.module}.py"
    assert f"system: echo → echo (the same config; the system's code changed: {module})" in out
    assert (
        f"the system's code changed in this pull request ({module}) and no recording did: "
        "these are the old code's answers; bump `system.version` and record again"
    ) in out
    report = (tmp_path / "demo-report.md").read_text()  # beside the results
    assert "and no recording did: these are the old code" in report
    # Beside the verdict too, not only in the replay's account.
    assert "and no recording did: this verdict judges the old code's answers" in out
    assert "and no recording did: this verdict judges the old code's answers" in report


def test_a_version_bump_recorded_again_says_nothing_of_old_code(
    recorded_repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded_repo.write_system(BROKEN)
    sys.modules.pop(recorded_repo.module, None)
    system = {"name": "echo", "provider": "python", "target": f"{recorded_repo.module}:answer"}
    recorded_repo.write_config(system={**system, "version": 2})
    assert main(["record", "--for-baseline", "--quiet"]) == 0
    git("add", "-A", cwd=recorded_repo.root)
    git("commit", "-qm", "new code, new version, recorded again", cwd=recorded_repo.root)
    capsys.readouterr()
    assert main(["check", "--quiet"]) == 1  # the new code's answers: the regression shows
    out = capsys.readouterr().out
    assert "old code" not in out and "code changed" not in out


def test_an_unchanged_system_says_nothing_of_its_code(
    recorded_repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    git("commit", "-q", "--allow-empty", "-m", "nothing", cwd=recorded_repo.root)
    capsys.readouterr()
    assert main(["check", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "no change to the system under test" in out and "code changed" not in out


@pytest.mark.parametrize("planted", ["link to a device", "pipe", "link out", "too large"])
def test_what_a_pull_request_puts_at_the_systems_path_is_never_read_through(
    recorded_repo: Project,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
    planted: str,
) -> None:
    # The code comparison reads the pull request's file: a link, a pipe or a huge file there
    # must neither hang the check nor be read; it is named as changed.
    module = recorded_repo.root / f"{recorded_repo.module}.py"
    code = module.read_text()
    # The fixture's in-process record imported it: a module whose file becomes a link to
    # /dev/zero or a pipe must leave this process, or whatever reads loaded modules' source
    # later (Hypothesis collects constants from it) reads forever.
    sys.modules.pop(recorded_repo.module, None)
    module.unlink()
    request.addfinalizer(module.unlink)
    if planted == "link to a device":
        module.symlink_to("/dev/zero")
    elif planted == "pipe":
        os.mkfifo(module)
    elif planted == "link out":
        outside = recorded_repo.root.parent / "elsewhere.py"
        outside.write_text(code)
        module.symlink_to(outside)
    else:
        module.write_text(code + "#" * (11 * 1024 * 1024) + "\n")
    if planted != "pipe":  # git cannot commit a pipe: it is in the working copy only
        git("add", "-A", cwd=recorded_repo.root)
        git("commit", "-qm", planted, cwd=recorded_repo.root)
    capsys.readouterr()
    assert main(["check", "--quiet"]) == 0  # replay: the recordings are the answers
    out = capsys.readouterr().out
    assert f"the system's code changed: {recorded_repo.module}.py" in out


def test_the_branch_that_adds_casegate_is_judged_by_its_own_ruler_and_told_why(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    # The default branch predates casegate: nothing to read a ruler from.
    (project.root / "README").write_text("a project\n")
    init_repository(project.root)
    git("rm", "-q", "--cached", "-r", ".", cwd=project.root)
    git("add", "README", cwd=project.root)
    git("commit", "-qm", "before casegate", cwd=project.root)
    git("checkout", "-q", "-b", "add-casegate", cwd=project.root)
    project.write_cases(CASES)
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["check", "--mode", "live", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert (
        "check: 'main' has no casegate.yml yet, so branch 'add-casegate' is judged by its own"
        in err
    )
    assert "merge base" not in err
