"""Which branch merges land on, and what a branch's check is judged against.

`init` writes the default branch into the baseline workflow. A `check` on another
branch is judged as its pull request will be: against the ruler (gate rule, cases,
baseline) at the commit where the branch left the default branch. Without that, a
branch whose `casegate baseline --mode record` rewrote the baseline would be compared
with its own new answers, and ship whatever it broke.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gate.files import GIT_HARDENING

DEFAULT_BRANCH = "main"
#: a branch name the baseline workflow's `branches:` list can hold as it is
BRANCH_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}"


def _git(target: Path, *args: str) -> list[str]:
    """git's output split on whitespace; nothing when git is missing or says no."""
    try:
        done = subprocess.run(
            ["git", *GIT_HARDENING, "-C", str(target), *args],  # noqa: S607 - from PATH
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return done.stdout.split() if done.returncode == 0 else []


def _found_default(target: Path) -> tuple[str, str, str | None]:
    """The default branch's name, how it was found, and the ref holding it (None: not found)."""
    remote = _git(target, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    if remote and remote[0].startswith("origin/"):
        name = remote[0].removeprefix("origin/")
        if re.fullmatch(BRANCH_PATTERN, name):
            return name, "the remote's default branch", remote[0]
    local = _git(
        target, "for-each-ref", "--format=%(refname:short)", "refs/heads/main", "refs/heads/master"
    )
    if len(local) == 1:
        other = "master" if local[0] == "main" else "main"
        return local[0], f"the repository has {local[0]} and no {other}", local[0]
    return DEFAULT_BRANCH, "no default branch found, so the usual main", None


def default_branch(target: Path) -> tuple[str, str]:
    """The branch merges land on in the repository at `target`, and how it was found.

    The remote's HEAD says it; else the one of `main` and `master` the repository has;
    else `main`. Never the branch checked out now: casegate is often added on a branch.
    """
    name, how, _ref = _found_default(target)
    return name, how


@dataclass(frozen=True, slots=True)
class BranchBase:
    """The commit a branch's check reads its ruler from, had no --base been given."""

    #: the merge base of HEAD and the default branch, a full commit id
    commit: str
    #: the branch checked out
    branch: str
    #: the default branch's ref (`origin/main`, or `main`)
    default: str
    #: commits the default branch has gained since the branch left it
    behind: int = 0

    def describe(self) -> str:
        said = (
            f"check: branch '{self.branch}' is judged as its pull request into "
            f"'{self.default}' will be: the gate rule, cases and baseline are read from their "
            f"merge base {self.commit[:12]} (--base REF to choose another commit, --no-base to "
            "compare with the working copy's baseline)"
        )
        if self.behind:
            # GitHub judges the merge with the default branch as it is now: its baseline, its
            # rule, its recordings. This check cannot see those until the branch takes them in.
            said += (
                f"\ncasegate: warning: '{self.default}' has {self.behind} commit(s) this branch "
                f"does not have: its pull request is judged against '{self.default}' as it is "
                f"now; merge '{self.default}' into '{self.branch}' (and record again what "
                "conflicts) to see that verdict here"
            )
        return said


def implied_base(target: Path) -> BranchBase | None:
    """The merge base a check on a branch other than the default one is judged against.

    None on the default branch itself, on a detached HEAD, and when no default branch
    is found or it shares no history with HEAD: then the working copy is the ruler.
    """
    branch = _git(target, "symbolic-ref", "--quiet", "--short", "HEAD")
    name, _how, ref = _found_default(target)
    if len(branch) != 1 or ref is None or branch[0] in (name, ref):
        return None
    if not _git(target, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"):
        return None
    found = _git(target, "merge-base", "HEAD", ref)
    if len(found) != 1 or not re.fullmatch(r"[0-9a-f]{40,64}", found[0]):
        return None
    behind = _git(target, "rev-list", "--count", f"{found[0]}..{ref}")
    count = int(behind[0]) if len(behind) == 1 and behind[0].isdigit() else 0
    return BranchBase(found[0], branch[0], ref, count)


def unjudged_branch(target: Path) -> str | None:
    """Why a check on a branch falls back to the working copy's ruler (None: it does not).

    Only where no default branch is found: the branch's own baseline is then the ruler,
    so a baseline it re-recorded hides what it broke. The check says so, and how to judge
    as the pull request will be."""
    branch = _git(target, "symbolic-ref", "--quiet", "--short", "HEAD")
    name, _how, ref = _found_default(target)
    if len(branch) != 1 or ref is not None or branch[0] == name:
        return None
    return (
        f"casegate: warning: on branch '{branch[0]}' no default branch was found ("
        "neither refs/remotes/origin/HEAD nor exactly one of main and master), so the working "
        "copy's gate rule, cases and baseline are the ruler; a baseline this branch recorded "
        "again would hide what it broke. Give --base REF (the branch its pull request goes "
        "into) to be judged as the pull request will be, or `git remote set-head origin --auto`"
    )


def holds(target: Path, commit: str, path: Path) -> bool:
    """Whether `commit` has a file at `path` (a path under `target`'s repository)."""
    relative = Path(os.path.relpath(Path(path).resolve(), target.resolve())).as_posix()
    try:
        done = subprocess.run(
            ["git", *GIT_HARDENING, "-C", str(target), "cat-file", "-e", f"{commit}:./{relative}"],  # noqa: S607 - from PATH
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        # git missing or hung: as if the file were there, the safe side for both callers
        # (a check then reads the base's ruler, which says what is missing; a warning shows)
        return True
    return done.returncode == 0
