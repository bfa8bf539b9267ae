"""A fake GitHub Actions job around a checked-out copy of the example suite.

Shared by the process-level tests (tests/github/test_action.py) and the container test
(tests/container/run.py), which hand the same environment to the Action as a
process and as a container.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.fakes.github_api import FakeGitHub

REPO = Path(__file__).resolve().parents[2]
TOKEN = "ghs_action_test_token_5a9f"
#: the example suite as a checkout holds it (its code, examples/, only where a test runs it)
EXAMPLE = [
    "casegate.yml",
    "casegate.candidate.yml",
    "cases",
    "prompts",
    "recordings",
    "baselines",
    "support.judge-calibration.json",
]
PULL_NUMBER = 7


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def open_to_the_sandbox(folder: Path) -> None:
    """Let the sandbox user read `folder`, as it reads a runner's workspace.

    On a runner the workspace is readable by every user; pytest's temporary folders
    are closed to all but their owner, so the Action (which runs the suite's code as
    another user) would refuse to run there. Folders above it gain search only.
    """
    folder.chmod(0o755)
    # The interpreter too: a pyenv Python under /root is closed to other users.
    for path in (folder, Path(sys.base_prefix), Path(sys.prefix)):
        for parent in path.resolve().parents:
            mode = parent.stat().st_mode
            if mode & 0o001 == 0:
                parent.chmod((mode & 0o7777) | 0o001)


def build_workspace(workspace: Path) -> str:
    """Copy the example suite into a new git repository; returns the base commit."""
    workspace.mkdir(parents=True)
    for name in EXAMPLE:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, workspace / name)
        else:
            shutil.copy(source, workspace / name)
    return init_repository(workspace)


def init_repository(folder: Path) -> str:
    """Make `folder` a git repository whose one commit, on main, holds all of it."""
    for args in (
        ["init", "-q", "-b", "main"],
        ["config", "user.email", "ci@example.invalid"],
        ["config", "user.name", "ci"],
        ["add", "-A"],
        ["commit", "-qm", "base"],
    ):
        git(*args, cwd=folder)
    return git("rev-parse", "HEAD", cwd=folder)


def open_pull_request(workspace: Path, edit: Callable[[Path], None]) -> str:
    """Commit `edit` on a branch and check out the merge commit GitHub builds for it.

    actions/checkout checks out that merge commit (refs/pull/N/merge): its first
    parent is the base branch, its second the pull request's head. Returns its sha.
    """
    git("checkout", "-q", "-b", f"pr-{PULL_NUMBER}", cwd=workspace)
    edit(workspace)
    git("add", "-A", cwd=workspace)
    git("commit", "-q", "--allow-empty", "-m", "the pull request", cwd=workspace)
    git("checkout", "-q", "--detach", "main", cwd=workspace)
    git(
        "merge", "-q", "--no-ff", "-m", "Merge the pull request", f"pr-{PULL_NUMBER}", cwd=workspace
    )
    return git("rev-parse", "HEAD", cwd=workspace)


def pull_request_event(
    base_sha: str,
    labels: Sequence[str] = (),
    labeled_by: str | None = None,
    head_sha: str | None = None,
) -> dict[str, object]:
    """A `pull_request` event; `labeled_by` makes it the `labeled` event of the last label."""
    event: dict[str, object] = {
        "action": "synchronize",
        "number": PULL_NUMBER,
        "pull_request": {
            "number": PULL_NUMBER,
            "base": {"sha": base_sha},
            "head": {"sha": head_sha} if head_sha else {},
            "labels": [{"name": name} for name in labels],
        },
        "sender": {"login": "pr-author"},
    }
    if labeled_by is not None and labels:
        event.update(action="labeled", label={"name": labels[-1]}, sender={"login": labeled_by})
    return event


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
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "4242",
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
        # The example's casegate.yml says `verify: changed`; these runs judge the recordings
        # a test wrote unless it asks otherwise (verify="" leaves it to the base's config).
        "INPUT_VERIFY": "off",
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


def acted_on(log: str) -> list[str]:
    """The workflow-command lines a runner would act on, reading `log` as it does.

    Between `::stop-commands::TOKEN` and `::TOKEN::` nothing is a command.
    """
    acted: list[str] = []
    resume: str | None = None
    for line in log.split("\n"):
        if resume is not None:
            if line == f"::{resume}::":
                resume = None
            continue
        if line.startswith("::stop-commands::"):
            resume = line.removeprefix("::stop-commands::")
        elif line.startswith("::"):
            acted.append(line)
    return acted


def write_event(path: Path, event: dict[str, object]) -> None:
    path.write_text(json.dumps(event))


@dataclass
class Runner:
    """One job's worth of Actions environment around a checked-out workspace.

    The entrypoint runs as the runner runs it: an isolated interpreter
    (`python -I`, as the image's ENTRYPOINT), the workspace as working directory.
    """

    root: Path
    workspace: Path
    api: FakeGitHub
    base_sha: str

    def run(
        self,
        event_name: str = "pull_request",
        event: dict | None = None,
        *,
        env_extra: dict[str, str] | None = None,
        **inputs: str,
    ) -> subprocess.CompletedProcess[str]:
        files = self.root / f"files-{len(list(self.root.glob('files-*')))}"
        files.mkdir()
        if event is None and event_name == "pull_request":
            event = pull_request_event(self.base_sha, head_sha=self.head_sha())
        write_event(files / "event.json", event or {})
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("GITHUB_", "INPUT_", "RUNNER_"))
        }
        env.update(
            action_env(
                workspace=str(self.workspace),
                event_name=event_name,
                event_path=str(files / "event.json"),
                output=str(files / "output"),
                summary=str(files / "summary"),
                api_url=self.api.url,
                token=TOKEN,
                inputs=inputs,
            )
        )
        # No PYTHONPATH: the isolated interpreter would ignore it; casegate comes from
        # the installed package, as in the image.
        env.update({"HOME": str(self.root / "home"), "RUNNER_TEMP": str(files)})
        env.update(env_extra or {})
        finished = subprocess.run(
            [sys.executable, "-I", "-m", "gate.github.action"],
            cwd=self.workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        self.last_files = files
        return finished

    def drop_box(self) -> Path:
        """A folder any user may write: where an attacker's code leaves what it found
        (the sandboxed run can write nothing of the gate's, by design)."""
        box = self.root / "drop-box"
        box.mkdir(exist_ok=True)
        box.chmod(0o1777)
        return box

    def head_sha(self) -> str | None:
        """The pull request's head, when the checkout is a merge commit (its second parent)."""
        found = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", "HEAD^2"],
            cwd=self.workspace,
            capture_output=True,
            text=True,
            check=False,
        )
        return found.stdout.strip() or None

    def outputs(self) -> dict[str, str]:
        return read_outputs(self.last_files / "output")

    def summary(self) -> str:
        return (self.last_files / "summary").read_text()
