"""Open a pull request from a branch of your repository and run the Action on it, offline.

    make try-action REPO=path/to/your/repo BRANCH=your-branch [CONFIG=casegate.yml]

What GitHub would do, with stand-ins: the repository is cloned into a scratch folder,
the branch is merged into the default branch as `actions/checkout` checks out a pull
request (a merge commit whose first parent is the base), and the Action's entrypoint
runs there as a container action runs (`python -I -m gate.github.action`), against
the loopback GitHub of the tests (tests/fakes/github_api.py) in place of
api.github.com. It prints the step's log, the sticky comment it posted, its outputs,
and exits as the step would. Nothing of your repository changes, and nothing leaves
this machine: the check replays your committed recordings (`verify: off`, since the
stand-in GitHub holds no run to seal them).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from gate.suite.branches import default_branch
from tests.fakes.actions import PULL_NUMBER, TOKEN, Runner, git, pull_request_event
from tests.fakes.github_api import FakeGitHub


class CannotOpen(Exception):
    """The pull request cannot be built from the repository as it is: the reason, and the fix."""


def merged_checkout(repository: Path, branch: str, base: str, workspace: Path) -> tuple[str, str]:
    """Clone `repository` into `workspace` at `branch` merged into `base`: (base, head) shas."""
    if branch == base:
        raise CannotOpen(f"{branch} is the branch it would merge into: name another branch")
    git("clone", "-q", "--no-local", str(repository.resolve()), str(workspace), cwd=Path.cwd())
    shas = []
    for name in (base, branch):
        found = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"refs/remotes/origin/{name}^{{commit}}"],
            cwd=workspace,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        if not found:
            known = git("branch", "-r", "--format=%(refname:lstrip=3)", cwd=workspace).split()
            listed = ", ".join(b for b in known if b != "HEAD") or "none"
            raise CannotOpen(f"{repository} has no branch {name!r} (its branches: {listed})")
        shas.append(found)
    base_sha, head_sha = shas
    git("checkout", "-q", "--detach", base_sha, cwd=workspace)
    merged = subprocess.run(
        ["git", "-c", "user.name=casegate try-action", "-c", "user.email=try@example.invalid",
         "merge", "-q", "--no-ff", "-m", f"Merge {branch} into {base}", head_sha],
        cwd=workspace, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if merged.returncode != 0:
        conflicted = git("diff", "--name-only", "--diff-filter=U", cwd=workspace).split()
        raise CannotOpen(
            f"{branch} does not merge cleanly into {base}"
            + (f" (conflicts in {', '.join(conflicted)})" if conflicted else "")
            + f": merge {base} into {branch}, resolve and commit (recordings in conflict: take "
            f"{base}'s, then `casegate record --for-baseline` again), and try again"
        )
    return base_sha, head_sha


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="try-action", description=__doc__.split("\n")[0])
    parser.add_argument("repository", type=Path, help="your repository (a folder holding .git)")
    parser.add_argument("branch", help="the branch the pull request would come from")
    parser.add_argument("--base", help="the branch it would merge into (default: the default)")
    parser.add_argument("--config", default="casegate.yml", help="the Action's `config:` input")
    args = parser.parse_args(argv)
    found = subprocess.run(
        ["git", "-C", str(args.repository), "rev-parse", "--show-toplevel"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if found.returncode != 0:
        print(f"try-action: {args.repository} is not a git repository: give REPO=PATH of one")
        return 2
    dirty = subprocess.run(
        ["git", "-C", str(args.repository), "status", "--porcelain"],
        capture_output=True, text=True, check=False,
    ).stdout  # fmt: skip
    if dirty.strip():
        print(
            f"try-action: note: {args.repository} has changes not committed; the pull request "
            f"is {args.branch} as committed (commit them to see them judged)"
        )
    base = args.base or default_branch(args.repository)[0]
    root = Path(tempfile.mkdtemp(prefix="casegate-try-action-"))
    try:
        root.chmod(0o755)  # a runner's workspace is readable by the sandbox's user
        (root / "home").mkdir()
        try:
            base_sha, head_sha = merged_checkout(args.repository, args.branch, base, root / "ws")
        except CannotOpen as exc:
            print(f"try-action: cannot open the pull request {args.branch} → {base}: {exc}")
            return 2
        except subprocess.CalledProcessError as exc:  # git's own words say what went wrong
            detail = (exc.stderr or str(exc)).strip()
            print(f"try-action: cannot open the pull request {args.branch} → {base}: {detail}")
            return 2
        with FakeGitHub(TOKEN) as api:
            runner = Runner(root, root / "ws", api, base_sha)
            event = pull_request_event(base_sha, head_sha=head_sha)
            # sandbox auto: a checkout under a folder closed to other users cannot be read by
            # the sandbox's user; the log then says what was not in force, as it would on a
            # runner that could not confine the run.
            finished = runner.run(event=event, config=args.config, verify="off", sandbox="auto")
            print(finished.stdout + finished.stderr)
            comments = api.comments.get(PULL_NUMBER, [])
            print(
                f"--- the sticky comment on pull request #{PULL_NUMBER} ({len(comments)} posted):"
            )
            for comment in comments:
                print(comment["body"])
            written = runner.last_files / "output"
            outputs = runner.outputs() if written.is_file() and written.read_text() else {}
            print("--- the step's outputs:" if outputs else "--- the step wrote no outputs")
            for name, value in outputs.items():
                if "\n" not in value:
                    print(f"{name}: {value}")
        print(f"--- the step exited {finished.returncode} ({args.branch} → {base})")
        return finished.returncode
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
