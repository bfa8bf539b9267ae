"""Leave the workspace as the runner's user can use it: casegate's files handed back.

A container action runs as root, but the job's other steps run as the runner's user, who
owns the workspace (`GITHUB_WORKSPACE`). Folders casegate makes there as root (`.casegate/`,
`history/`, a report folder, git's objects) would be left to that user unreadable or
undeletable: a later `rm -rf` or a cache step fails on them. So, when the step ends, every
entry in the workspace that the workspace's owner does not own is given to that owner.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def hand_back(workspace: Path) -> int:
    """Give every entry under `workspace` (itself aside) to the uid and gid that own it;
    the number of entries changed. Nothing when this process cannot chown (not root), or
    the workspace is root's own.

    Links are changed, never followed (`lchown`, a walk that does not enter linked folders),
    and a file with a second hard link is left alone: a link made in the workspace to a file
    elsewhere must not hand that file over.
    """
    if os.geteuid() != 0:
        return 0
    try:
        owner = workspace.lstat()
    except OSError:
        return 0
    if owner.st_uid == 0 or not stat.S_ISDIR(owner.st_mode):
        return 0
    changed = 0
    for folder, dirs, files in os.walk(workspace, followlinks=False):
        for name in [*dirs, *files]:
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
                if (info.st_uid, info.st_gid) == (owner.st_uid, owner.st_gid):
                    continue
                if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
                    continue
                os.lchown(path, owner.st_uid, owner.st_gid)
                changed += 1
            except OSError:
                continue  # gone meanwhile, or on a file system that refuses: not worth a failure
    return changed
