"""gate/github/workspace.py: the files a container run leaves in the workspace are the
workspace owner's, and nothing outside the workspace is handed over through a link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gate.github.action import main
from gate.github.workspace import hand_back

#: a uid and gid no account here has: the runner's user, as the workspace's owner
RUNNER = (54321, 54322)


def owned(path: Path) -> tuple[int, int]:
    info = path.lstat()
    return info.st_uid, info.st_gid


def runner_workspace(tmp_path: Path) -> Path:
    assert os.geteuid() == 0, "these tests run as root, as the Action's container does"
    workspace = tmp_path / "workspace"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("checked out\n")
    for path in (workspace, workspace / "src", workspace / "src" / "app.py"):
        os.chown(path, *RUNNER)
    return workspace


def test_what_the_run_made_as_root_is_handed_to_the_workspaces_owner(tmp_path: Path) -> None:
    workspace = runner_workspace(tmp_path)
    made = [workspace / ".casegate", workspace / ".casegate" / "r.json", workspace / "history"]
    made[0].mkdir()
    made[1].write_text("{}")
    made[2].mkdir()
    assert owned(made[0]) == (0, 0)
    assert hand_back(workspace) == 3
    assert all(owned(path) == RUNNER for path in made)
    assert hand_back(workspace) == 0  # once only: nothing left to change


def test_a_link_hands_over_nothing_outside(tmp_path: Path) -> None:
    workspace = runner_workspace(tmp_path)
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "key").write_text("root's")
    (workspace / "to-folder").symlink_to(outside)
    (workspace / "to-file").symlink_to(outside / "key")
    os.link(outside / "key", workspace / "hard")  # a second name for a file elsewhere
    hand_back(workspace)
    assert owned(outside) == (0, 0) and owned(outside / "key") == (0, 0)
    assert owned(workspace / "to-folder") == RUNNER  # the link itself, as `rm` needs
    assert owned(workspace / "hard") == (0, 0)


def test_nothing_is_done_for_a_workspace_root_owns(tmp_path: Path) -> None:
    (tmp_path / "made").mkdir()
    os.chown(tmp_path / "made", *RUNNER)
    assert hand_back(tmp_path) == 0 and owned(tmp_path / "made") == RUNNER


def test_the_entrypoint_hands_back_even_when_it_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = runner_workspace(tmp_path)
    (workspace / ".casegate").mkdir()
    env = {"GITHUB_WORKSPACE": str(workspace), "INPUT_CONFIG": "missing.yml"}
    for name in [k for k in os.environ if k.startswith(("INPUT_", "GITHUB_"))]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(workspace)
    assert main() == 2
    assert owned(workspace / ".casegate") == RUNNER
