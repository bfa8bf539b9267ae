"""A fake GitHub Actions job around a checked-out copy of the example suite.

Shared by the process-level tests (tests/test_action.py) and the container test
(tests/container/run.py), which hand the same environment to the Action as a
process and as a container.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = ["casegate.yml", "casegate.candidate.yml", "cases", "prompts", "recordings", "baselines"]
PULL_NUMBER = 7


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def build_workspace(workspace: Path) -> str:
    """Copy the example suite into a new git repository; returns the base commit."""
    workspace.mkdir(parents=True)
    for name in EXAMPLE:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, workspace / name)
        else:
            shutil.copy(source, workspace / name)
    for args in (
        ["init", "-q", "-b", "main"],
        ["config", "user.email", "ci@example.invalid"],
        ["config", "user.name", "ci"],
        ["add", "-A"],
        ["commit", "-qm", "base"],
    ):
        git(*args, cwd=workspace)
    return git("rev-parse", "HEAD", cwd=workspace)


def pull_request_event(base_sha: str) -> dict[str, object]:
    return {
        "number": PULL_NUMBER,
        "pull_request": {"number": PULL_NUMBER, "base": {"sha": base_sha}, "head": {}},
    }


def action_env(
    *,
    workspace: str,
    event_name: str,
    event_path: str,
    output: str,
    summary: str,
    api_url: str,
    token: str,
    inputs: dict[str, str],
) -> dict[str, str]:
    """The variables the runner sets for a container action (inputs keep their hyphens)."""
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": workspace,
        "GITHUB_EVENT_NAME": event_name,
        "GITHUB_EVENT_PATH": event_path,
        "GITHUB_REPOSITORY": "acme/shop",
        "GITHUB_API_URL": api_url,
        "GITHUB_OUTPUT": output,
        "GITHUB_STEP_SUMMARY": summary,
        "INPUT_CONFIG": "casegate.candidate.yml",
        "INPUT_MODE": "replay",
        "INPUT_BASELINE": "",
        "INPUT_SET": "",
        "INPUT_COMMENT": "true",
        "INPUT_GITHUB-TOKEN": token,
        "INPUT_FAIL-ON": "block",
        "INPUT_WORKING-DIRECTORY": ".",
        "INPUT_COMMAND": "check",
    }
    env.update({f"INPUT_{key.upper().replace('_', '-')}": value for key, value in inputs.items()})
    return env


def read_outputs(path: Path) -> dict[str, str]:
    """Parse `name<<delimiter` blocks of a GITHUB_OUTPUT file."""
    values: dict[str, str] = {}
    lines = iter(path.read_text().splitlines())
    for line in lines:
        name, delimiter = line.split("<<")
        body = []
        for value_line in lines:
            if value_line == delimiter:
                break
            body.append(value_line)
        values[name] = "\n".join(body)
    return values


def write_event(path: Path, event: dict[str, object]) -> None:
    path.write_text(json.dumps(event))
