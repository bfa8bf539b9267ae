"""The container's git trusts the runner's workspace through its own environment, never the
job's shared global config (issue #25 trap 8: `git config --global --add` gained a line a run)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gate.github.ruling import mark_safe_directory


def test_it_is_said_once_and_after_what_the_environment_holds() -> None:
    environ = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.x", "GIT_CONFIG_VALUE_0": "y"}
    mark_safe_directory(environ)
    mark_safe_directory(environ)  # a second run in the same process adds nothing
    assert environ == {
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": "core.x",
        "GIT_CONFIG_VALUE_0": "y",
        "GIT_CONFIG_KEY_1": "safe.directory",
        "GIT_CONFIG_VALUE_1": "*",
    }
    odd = {"GIT_CONFIG_COUNT": "lots"}  # not a count: git would refuse it, so start afresh
    mark_safe_directory(odd)
    assert odd["GIT_CONFIG_COUNT"] == "1" and odd["GIT_CONFIG_KEY_0"] == "safe.directory"


def test_git_reads_it_and_the_home_config_is_left_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    environ = {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    for _ in range(3):  # three container runs in one job
        mark_safe_directory(environ)
    found = subprocess.run(
        ["git", "config", "--get-all", "safe.directory"],
        env=environ,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert found.stdout.splitlines() == ["*"]
    assert not (home / ".gitconfig").exists()
