"""The sandbox the pull request's code runs in: another user, its own folder, no network.

casegate runs the code a pull request brings (a python system, its custom checks) in
a child process. As root (the Action's container), that child gives up root before
it imports anything of the suite's: it becomes an unprivileged user that owns
nothing but a fresh folder of its own (`HOME`, `TMPDIR`, its results), so nothing the
gate reads afterwards — the interpreter and its site-packages, `/etc`, the base
commit's extraction, the gate's scratch, the workspace's `.git` — can be changed by
it. The step's file commands, the event file and the Docker socket are closed to it
for the run. In replay it also gets a network namespace of its own: it needs no
network, so it has none.

Not root (a developer's machine), none of this can be done: the child has the
user's own rights, the plan says so, and `--sandbox require` refuses to run.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from gate.errors import CasegateError

SandboxMode = Literal["auto", "require", "off"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("auto", "require", "off")
#: each run becomes a user of its own, drawn from these ids (inside the 65,536 ids a
#: rootless container maps), that no account uses: killing "every process of this
#: user" after a run then never reaches another run's processes, or anyone else's
SANDBOX_IDS = range(60100, 64900)
#: sched.h: a new network namespace (only the loopback device, and it is down)
CLONE_NEWNET = 0x40000000
PR_SET_NO_NEW_PRIVS = 38
#: the step's files and sockets the run must not reach, besides GITHUB_* file commands
DOCKER_SOCKETS = ("/var/run/docker.sock", "/run/docker.sock")
FILE_COMMANDS = (
    "GITHUB_OUTPUT",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_ENV",
    "GITHUB_PATH",
    "GITHUB_STATE",
)


class SandboxError(CasegateError):
    """The run cannot be sandboxed as asked."""


@dataclass(frozen=True, slots=True)
class Identity:
    """Who the run becomes."""

    uid: int
    gid: int
    name: str


@dataclass(frozen=True, slots=True)
class SandboxPlan:
    """What the run will be protected by, decided before it starts (the user is the
    same for the run and for the judging process after it)."""

    mode: SandboxMode
    #: None: the run keeps this process's user
    identity: Identity | None
    #: ask for a network namespace of its own (replay: no network needed)
    isolate_network: bool
    #: what is in force, in plain words (the log says them)
    protections: tuple[str, ...] = ()
    #: what is not in force, and why
    missing: tuple[str, ...] = ()
    #: paths closed to the run while it lasts (file commands, event, sockets)
    hidden: tuple[Path, ...] = field(default=())

    def describe(self) -> list[str]:
        lines = [f"sandbox: {text}" for text in self.protections]
        lines += [f"sandbox: NOT in force: {text}" for text in self.missing]
        return lines


def identity() -> Identity:
    """A user and group id for one run, unused by any account or group on this machine."""
    import grp
    import pwd
    import secrets

    for _ in range(1000):
        uid = SANDBOX_IDS[secrets.randbelow(len(SANDBOX_IDS))]
        try:
            pwd.getpwuid(uid)
            continue
        except KeyError:
            pass
        try:
            grp.getgrgid(uid)
            continue
        except KeyError:
            return Identity(uid, uid, f"uid {uid}")
    raise SandboxError("no unused user id is left for the sandbox")


def can_drop() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0 and hasattr(os, "setresuid")


def unreachable_for(path: Path, who: Identity) -> Path | None:
    """The first folder on the way to `path` (or `path`) that `who` cannot search or read.

    Decided from the modes, as the kernel would for a user in no other group.
    """
    try:
        target = path.resolve()
        chain = [*reversed(target.parents), target]
        for index, part in enumerate(chain):
            info = part.stat()
            last = index == len(chain) - 1
            need = (os.R_OK if last else 0) | (os.X_OK if stat.S_ISDIR(info.st_mode) else 0)
            if need and not _permits(info, who, need):
                return part
    except OSError:
        return path
    return None


def _permits(info: os.stat_result, who: Identity, need: int) -> bool:
    if info.st_uid == who.uid:
        bits = (info.st_mode >> 6) & 7
    elif info.st_gid == who.gid:
        bits = (info.st_mode >> 3) & 7
    else:
        bits = info.st_mode & 7
    return bits & need == need


def plan(
    mode: SandboxMode,
    *,
    replay: bool,
    reads: Sequence[Path],
    environ: Mapping[str, str],
) -> SandboxPlan:
    """Decide the sandbox; SandboxError when `require` cannot be met.

    `reads` are what the run must read (the suite's folder, the interpreter): a user
    who cannot reach them cannot run the suite.
    """
    if mode == "off":
        return SandboxPlan(
            mode,
            None,
            False,
            missing=("turned off (--sandbox off): the run has this user's rights",),
        )
    if not can_drop():
        reason = (
            "casegate is not running as root, so it cannot drop to another user: the run has "
            "your user's rights (your files, your environment less the withheld tokens)"
        )
        if mode == "require":
            raise SandboxError(
                f"--sandbox require: {reason}; run casegate as root (as the Action's container "
                "does), or use --sandbox auto to run with what is in force"
            )
        return SandboxPlan(mode, None, False, missing=(reason,))
    who = identity()
    blocked = [(path, unreachable_for(path, who)) for path in reads]
    blocked = [(path, where) for path, where in blocked if where is not None]
    if blocked:
        path, where = blocked[0]
        reason = f"the sandbox's user cannot read {path} ({where} is closed to other users)"
        if mode == "require":
            raise SandboxError(
                f"--sandbox require: {reason}: make it readable to other users "
                f"(chmod o+rX along the path), or run it elsewhere"
            )
        return SandboxPlan(mode, None, False, missing=(reason + "; the run has root's rights",))
    hidden = tuple(_closable(environ))
    protections = (
        f"the run drops to {who.name} (uid {who.uid}, gid {who.gid}, no other groups, "
        "no new privileges) before any of the suite's code is imported",
        "it writes only a folder of its own (HOME and TMPDIR are in it); the gate reads "
        "that folder as untrusted data",
        *_closed_line(hidden, environ),
    )
    return SandboxPlan(mode, who, replay, protections, (), hidden)


def _closed_line(hidden: Sequence[Path], environ: Mapping[str, str]) -> tuple[str, ...]:
    """Name what was closed, as found: on a laptop there are no file commands or event file,
    and a line saying they were closed would describe a CI job that is not this one."""
    commands = {str(environ[name]) for name in FILE_COMMANDS if environ.get(name)}
    event = environ.get("GITHUB_EVENT_PATH")
    kinds = [
        *(["the step's file commands"] if commands else []),
        *(["the event file"] if event else []),
        *(
            ["the Docker socket"]
            if any(str(path) not in commands and str(path) != event for path in hidden)
            else []
        ),
    ]
    return (f"closed to it: {', '.join(kinds)}",) if kinds else ()


def _closable(environ: Mapping[str, str]) -> Iterator[Path]:
    """The files the run must not reach: the step's file commands, the event, Docker's socket."""
    for name in (*FILE_COMMANDS, "GITHUB_EVENT_PATH"):
        value = environ.get(name)
        if value:
            yield Path(value)
    host = environ.get("DOCKER_HOST", "")
    sockets = [
        *DOCKER_SOCKETS,
        *([host.removeprefix("unix://")] if host.startswith("unix://") else []),
    ]
    for socket in sockets:
        if os.path.lexists(socket):
            yield Path(socket)


@contextlib.contextmanager
def closed_to_others(paths: Sequence[Path]) -> Iterator[None]:
    """Take every permission away from "other" on `paths` while the block runs.

    The sandbox user is "other" to all of them (the runner's user owns the step's
    files; root and the docker group own the socket). Their owners keep their access,
    and the modes are put back afterwards.
    """
    changed: list[tuple[Path, int]] = []
    try:
        for path in dict.fromkeys(paths):
            try:
                mode = path.lstat().st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode) or not mode & 0o007:
                continue
            os.chmod(path, stat.S_IMODE(mode) & ~0o007)
            changed.append((path, stat.S_IMODE(mode)))
        yield
    finally:
        for path, mode in changed:
            with contextlib.suppress(OSError):
                os.chmod(path, mode)


@dataclass(frozen=True, slots=True)
class Folder:
    """The run's own folder, inside a scratch folder only the gate can write."""

    scratch: Path
    run: Path

    @property
    def home(self) -> Path:
        return self.run / "home"

    @property
    def tmp(self) -> Path:
        return self.run / "tmp"

    def environment(self) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "TMPDIR": str(self.tmp),
            "TMP": str(self.tmp),
            "TEMP": str(self.tmp),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
        }


def make_folder(scratch: Path, who: Identity | None) -> Folder:
    """`scratch/run`, owned by the sandbox user; `scratch` itself only searchable by it."""
    run = scratch / "run"
    for path in (run, run / "home", run / "tmp"):
        path.mkdir(mode=0o700)
    if who is not None:
        os.chmod(scratch, 0o711)  # noqa: S103 - the run may pass through, not list or write
        for path in (run, run / "home", run / "tmp"):
            os.chown(path, who.uid, who.gid)
    return Folder(scratch, run)


def request_of(plan_: SandboxPlan, folder: Folder) -> dict[str, Any] | None:
    """What the child needs to enter the sandbox (None: it runs as it starts)."""
    if plan_.identity is None:
        return None
    return {
        "uid": plan_.identity.uid,
        "gid": plan_.identity.gid,
        "network": plan_.isolate_network,
        # written by the child while it is still root, so the run cannot change it
        "report": str(folder.scratch / "entered.json"),
    }


def enter(request: Mapping[str, Any]) -> None:
    """In the child, before any of the suite's code: leave the network, then drop root.

    Raises SandboxError when the drop does not hold: the child then runs nothing.
    """
    network = "kept (the run needs it outside replay)"
    if request.get("network"):
        network = _leave_network()
    Path(request["report"]).write_text(json.dumps({"network": network}), encoding="utf-8")
    uid, gid = int(request["uid"]), int(request["gid"])
    _limit_processes()
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    _no_new_privileges()
    os.umask(0o077)
    if os.getuid() != uid or os.geteuid() != uid or os.getgid() != gid or os.getgroups():
        raise SandboxError("the run could not drop its privileges; nothing of the suite ran")
    try:
        os.setuid(0)
    except PermissionError:
        return
    raise SandboxError("the run could regain root after dropping it; nothing of the suite ran")


#: processes the sandbox user may have at once (its id is its own): room for a suite's
#: worker pool, not for a fork bomb
MAX_PROCESSES = 512


def _limit_processes() -> None:
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        resource.setrlimit(resource.RLIMIT_NPROC, (MAX_PROCESSES, MAX_PROCESSES))


def private_file(path: Path, text: str) -> None:
    """Write `text` to a new file only this user may read (a request holding a nonce)."""
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        stream.write(text)


def _leave_network() -> str:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_NEWNET) == 0:
            return "none (a network namespace of its own)"
        error = ctypes.get_errno()
        return f"network isolation is not in force: unshare failed ({os.strerror(error)})"
    except (OSError, AttributeError) as exc:
        return f"network isolation is not in force: {exc}"


def _no_new_privileges() -> None:
    """A setuid program the run starts cannot give it back what it gave up (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def entered(folder: Folder) -> str | None:
    """How the child said the network was left (None: it never entered the sandbox)."""
    try:
        found = json.loads((folder.scratch / "entered.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return str(found.get("network")) if isinstance(found, dict) else None


def end_every_process(who: Identity, *, within: float = 20.0) -> None:
    """Stop, then kill, every process of the sandbox user, until none is left.

    Done as root, from /proc: a process of that user cannot dodge it (killing its
    killer, forking faster than a pass, hiding its /proc entry's owner by turning
    non-dumpable). Each pass first stops them all, so none forks while the others
    die. SandboxError when some are still alive after `within` seconds: then nothing
    they could have touched is read.
    """
    import signal
    import time

    deadline = time.monotonic() + within
    while True:
        alive = processes_of(who.uid)
        if not alive:
            return
        if time.monotonic() > deadline:
            raise SandboxError(
                f"{len(alive)} process(es) of the sandboxed run (uid {who.uid}) could not be "
                "ended, so nothing it could have touched was read"
            )
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in processes_of(who.uid) if sig == signal.SIGKILL else alive:
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
        time.sleep(0.005)


def processes_of(uid: int) -> list[int]:
    """The live processes (not zombies) whose real, effective, saved or file-system uid
    is `uid`."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue  # it ended while we looked
        state = uids = ""
        for line in text.splitlines():
            if line.startswith("State:"):
                state = line.split()[1]
            elif line.startswith("Uid:"):
                uids = line
                break
        if state != "Z" and str(uid) in uids.split()[1:]:
            found.append(int(status.parent.name))
    return found


def read_untrusted(path: Path, limit: int, what: str) -> bytes:
    """A file the sandboxed run wrote: a regular file, read without following a link.

    Raises CasegateError naming it when it is a link, not a regular file, or larger
    than `limit` bytes.
    """
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise CasegateError(f"{what} ({path}) cannot be read: {exc.strerror or exc}") from None
    with os.fdopen(handle, "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise CasegateError(f"{what} ({path}) is not a regular file")
        if info.st_size > limit:
            raise CasegateError(f"{what} ({path}) is larger than {limit} bytes")
        return stream.read(limit + 1)[:limit]
