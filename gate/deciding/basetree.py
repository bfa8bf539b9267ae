"""The base commit, read safely: which commit it is, and its files in a scratch folder.

A pull request's checkout is untrusted; the base commit's files are the trusted
ruler. They are read with git into a folder of their own, and nothing is read
through a link that leaves that folder.
"""

from __future__ import annotations

import subprocess
from pathlib import Path, PurePosixPath

from gate.errors import ConfigError
from gate.files import GIT_HARDENING


def git(*args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            ["git", *GIT_HARDENING, *args],  # noqa: S607 - git from PATH, as the image has it
            cwd=cwd,
            input=stdin,
            capture_output=True,
            check=False,
        )
    except OSError as exc:
        raise ConfigError(
            f"git is needed to read the ruler from the base commit and cannot run: {exc}"
        ) from None


def repo_root_of(path: Path) -> Path | None:
    """The checkout `path` is in, only if its git folder is the `.git` at its top.

    Anything else (a repository inside the checkout, a bare one a pull request
    committed) is not the repository the runner checked out.
    """
    found = git("rev-parse", "--show-toplevel", "--absolute-git-dir", cwd=path)
    lines = found.stdout.decode(errors="replace").splitlines()
    if found.returncode != 0 or len(lines) != 2:
        return None
    top, git_dir = Path(lines[0]), Path(lines[1])
    if git_dir.resolve() != (top / ".git").resolve():
        raise ConfigError(
            f"{path} is inside a git repository at {git_dir} that is not the checkout's own "
            ".git: casegate reads the ruler only from the repository actions/checkout made"
        )
    return top


def resolve_commit(repo_root: Path, ref: str) -> str:
    """The full sha of `ref`; a ConfigError that says how to get the history."""
    found = git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=repo_root)
    if found.returncode != 0 or not found.stdout.strip():
        raise ConfigError(
            f"the base commit {ref!r} is not in this checkout, so the ruler (gate rule, "
            "cases, baseline) cannot be read from it: check the name (`git branch -a`) or fetch "
            "it; in CI, set `fetch-depth: 0` on actions/checkout"
        )
    return found.stdout.decode().strip()


def pull_request_base(
    repo_root: Path, event_base_sha: str | None, event_head_sha: str | None = None
) -> tuple[str, list[str]]:
    """The commit a pull request is judged against, and what was noticed finding it.

    actions/checkout checks out the merge commit GitHub built; its first parent is
    the base branch as merged. `base.sha` in the event can lag behind that branch,
    so it is the fallback. The first parent is taken only when the checkout really is
    GitHub's merge: its second parent is the pull request's head (a head that is
    itself a merge commit would otherwise choose its own "base"), and the event's
    base.sha is an ancestor of the first.
    """
    # `--`: HEAD is the revision even when the pull request adds a file named HEAD.
    parents = git("rev-list", "--parents", "-n", "1", "HEAD", "--", cwd=repo_root)
    shas = parents.stdout.decode().split()
    if parents.returncode == 0 and len(shas) == 3 and event_head_sha == shas[2]:
        first = shas[1]
        ancestor = event_base_sha and git(
            "merge-base", "--is-ancestor", event_base_sha, first, cwd=repo_root
        )
        if not event_base_sha or (ancestor and ancestor.returncode == 0):
            return first, []
    if not event_base_sha:
        raise ConfigError(
            "this pull request's checkout is not GitHub's merge commit and the event names no "
            "base commit: check out the default merge ref (actions/checkout without `ref:`)"
        )
    sha = resolve_commit(repo_root, event_base_sha)
    return sha, [
        f"the checkout is not GitHub's merge commit of this pull request, so the ruler was "
        f"read from the event's base.sha {sha[:7]}, which may lag behind the base branch"
    ]


def extract_tree(repo_root: Path, commit: str, scratch: Path) -> tuple[Path, frozenset[str]]:
    """The files of `commit` under `scratch`, and the paths left out as unsafe.

    Read as raw blobs (`ls-tree` + `cat-file`): no filter, attribute or hook of the
    repository runs. A link out of the tree (absolute, or climbing above it) is not
    written; reading any file through it is then refused by name (see `inside`).
    """
    listing = git("ls-tree", "-r", "-z", "--full-tree", commit, cwd=repo_root)
    if listing.returncode != 0:
        raise ConfigError(
            f"cannot read the base commit {commit[:7]}: "
            + listing.stderr.decode(errors="replace").strip()
        )
    entries: list[tuple[str, str, str]] = []
    for record in listing.stdout.split(b"\0"):
        if not record:
            continue
        head, _, raw_name = record.partition(b"\t")
        mode, kind, sha = head.decode().split()
        if kind == "blob":  # submodules (commits) are not part of the ruler
            entries.append((mode, sha, raw_name.decode("utf-8", errors="surrogateescape")))
    blobs = _blobs(repo_root, [sha for _, sha, _ in entries])
    target = scratch / f"base-{commit[:12]}"
    target.mkdir(parents=True, exist_ok=True)
    left_out: set[str] = set()
    for mode, sha, name in entries:
        link = blobs[sha].decode("utf-8", errors="surrogateescape") if mode == "120000" else None
        if not _stays_inside(name, link):
            left_out.add(name)
            continue
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if link is not None:
            path.symlink_to(link)
        else:
            path.write_bytes(blobs[sha])
    return target, frozenset(left_out)


def _blobs(repo_root: Path, shas: list[str]) -> dict[str, bytes]:
    """Every blob's raw content, in one `git cat-file --batch`."""
    unique = list(dict.fromkeys(shas))
    found = git(
        "cat-file", "--batch", cwd=repo_root, stdin="".join(f"{s}\n" for s in unique).encode()
    )
    if found.returncode != 0:
        raise ConfigError("cannot read the base commit's files: " + found.stderr.decode().strip())
    out, position, blobs = found.stdout, 0, {}
    for sha in unique:
        end = out.index(b"\n", position)
        size = out[position:end].split()[-1].decode()
        start = end + 1
        blobs[sha] = out[start : start + int(size)]
        position = start + int(size) + 1
    return blobs


def _stays_inside(name: str, link: str | None) -> bool:
    """A path, and a link's target, that stay inside the tree."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or ".git" in path.parts:
        return False
    if link is None:
        return True
    target = PurePosixPath(link)
    if target.is_absolute():
        return False
    depth = len(path.parent.parts)
    for part in target.parts:
        depth += -1 if part == ".." else (0 if part == "." else 1)
        if depth < 0:
            return False
    return True


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


def tracked_under(repo_root: Path, folder: Path) -> list[str]:
    """The files git tracks under `folder`: what the checked-out commit put there."""
    found = git("ls-files", "-z", "--", str(folder), cwd=repo_root)
    if found.returncode != 0:
        raise ConfigError(f"git cannot list the files under {folder}: it is not in the checkout")
    return [name for name in found.stdout.decode(errors="replace").split("\0") if name]


def files_in_commit(repo_root: Path, commit: str, under: str = "") -> list[str]:
    """The regular files of `commit` under the folder `under` (repository-relative, posix).

    Links and submodules are left out: the ruler is read only from real files.
    """
    args = ["ls-tree", "-r", "-z", "--full-tree", commit]
    if under and under != ".":
        args += ["--", f"{under.rstrip('/')}/"]
    listing = git(*args, cwd=repo_root)
    if listing.returncode != 0:
        raise ConfigError(
            f"cannot list the base commit {commit[:7]}: "
            + listing.stderr.decode(errors="replace").strip()
        )
    found = []
    for record in listing.stdout.split(b"\0"):
        head, _, raw_name = record.partition(b"\t")
        if record and head.split()[0] in (b"100644", b"100755"):
            found.append(raw_name.decode("utf-8", errors="surrogateescape"))
    return found
