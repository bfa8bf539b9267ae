"""The base commit, read safely: which commit it is, and its files in a scratch folder.

A pull request's checkout is untrusted; the base commit's files are the trusted
ruler. They are read with git into a folder of their own, and nothing is read
through a link that leaves that folder.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

from gate.errors import ConfigError


def git(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)  # noqa: S607
    except OSError as exc:
        raise ConfigError(
            f"git is needed to read the ruler from the base commit and cannot run: {exc}"
        ) from None


def repo_root_of(path: Path) -> Path | None:
    found = git("rev-parse", "--show-toplevel", cwd=path)
    return Path(found.stdout.decode().strip()) if found.returncode == 0 else None


def resolve_commit(repo_root: Path, ref: str) -> str:
    """The full sha of `ref`; a ConfigError that says how to get the history."""
    found = git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=repo_root)
    if found.returncode != 0 or not found.stdout.strip():
        raise ConfigError(
            f"the base commit {ref!r} is not in this checkout, so the ruler (gate rule, "
            "cases, baseline) cannot be read from it: set `fetch-depth: 0` on actions/checkout "
            "(or fetch the base branch)"
        )
    return found.stdout.decode().strip()


def pull_request_base(repo_root: Path, event_base_sha: str | None) -> tuple[str, list[str]]:
    """The commit a pull request is judged against, and what was noticed finding it.

    actions/checkout checks out the merge commit GitHub built; its first parent is
    the base branch as merged. `base.sha` in the event can lag behind that branch,
    so it is only the fallback for a checkout that is not a merge commit.
    """
    parents = git("rev-list", "--parents", "-n", "1", "HEAD", cwd=repo_root)
    shas = parents.stdout.decode().split()
    if parents.returncode == 0 and len(shas) == 3:
        return shas[1], []
    if not event_base_sha:
        raise ConfigError(
            "this pull request's checkout is not a merge commit and the event names no base "
            "commit: check out the default merge ref (actions/checkout without `ref:`)"
        )
    sha = resolve_commit(repo_root, event_base_sha)
    return sha, [
        f"the checkout is not a merge commit, so the ruler was read from the event's "
        f"base.sha {sha[:7]}, which may lag behind the base branch"
    ]


def extract_tree(repo_root: Path, commit: str, scratch: Path) -> tuple[Path, frozenset[str]]:
    """The files of `commit` under `scratch`, and the paths left out as unsafe.

    A link out of the tree (absolute, or climbing above it) is not written; reading
    any file through it is then refused by name (see `inside`).
    """
    archive = git("archive", "--format=tar", commit, cwd=repo_root)
    if archive.returncode != 0:
        raise ConfigError(
            f"cannot read the base commit {commit[:7]}: "
            + archive.stderr.decode(errors="replace").strip()
        )
    target = scratch / f"base-{commit[:12]}"
    target.mkdir(parents=True, exist_ok=True)
    refused: set[str] = set()

    def safe_only(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        try:
            return tarfile.data_filter(member, path)
        except tarfile.FilterError:
            refused.add(member.name)
            return None

    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(target, filter=safe_only)  # noqa: S202 - each member passes data_filter
    return target, frozenset(refused)


def inside(root: Path, relative: str, what: str, refused: frozenset[str] = frozenset()) -> Path:
    """`relative` resolved inside `root`; a ConfigError for absolute paths, escapes, symlinks.

    `refused` names the paths `extract_tree` left out as links out of the tree.
    """
    if not relative or Path(relative).is_absolute():
        raise ConfigError(f"{what}: {relative!r} must be a path relative to the repository")
    path = root
    for index, part in enumerate(Path(relative).parts):
        if "/".join(Path(relative).parts[: index + 1]) in refused:
            raise ConfigError(
                f"{what}: {relative!r} goes through a symbolic link that links out of the "
                "repository; casegate reads only real files inside it"
            )
        path = path / part
        if path.is_symlink():
            raise ConfigError(
                f"{what}: {relative!r} goes through a symbolic link ({path.relative_to(root)}); "
                "casegate reads only real files inside the repository"
            )
    resolved = path.resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise ConfigError(f"{what}: {relative!r} points outside the repository")
    return resolved
