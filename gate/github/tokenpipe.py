"""The GitHub token kept out of every environment the user's code could read: the entrypoint
starts itself again with the token, and the step's file paths, passed through a pipe."""

from __future__ import annotations

import json
import os
import sys

#: where a token may sit in the Action's environment; all are removed at start
TOKEN_VARIABLES = ("INPUT_GITHUB-TOKEN", "INPUT_GITHUB_TOKEN", "GITHUB_TOKEN", "GH_TOKEN")


TOKEN_FD = "CASEGATE_TOKEN_FD"  # noqa: S105 - the name of a variable, not a secret


#: handed to the restarted entrypoint through a pipe, never through its environment
PIPED = (
    *TOKEN_VARIABLES,
    "GITHUB_OUTPUT",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_ENV",
    "GITHUB_PATH",
    "GITHUB_STATE",
    "CASEGATE_HOLDOUT_KEY",  # the held-out slice's key (gate.holdout), under its default name
    "CASEGATE_RECORDING_KEY",  # the key CI seals its recordings with (gate.produce.seal)
)


def start_without_token() -> None:
    """Start this entrypoint again with the token out of the process environment.

    `os.environ.pop` changes Python's copy only: the kernel keeps the environment the
    process started with in /proc/PID/environ, where code running as the same user
    (the supervised run) could read it. So the token — and the paths of the step's
    output and summary files — travel through a pipe, and the process image is
    replaced by one whose environment never held them.
    """
    piped = {key: os.environ[key] for key in PIPED if key in os.environ}
    read_end, write_end = os.pipe()
    os.write(write_end, json.dumps(piped).encode())
    os.close(write_end)
    os.set_inheritable(read_end, True)
    environment = {k: v for k, v in os.environ.items() if k not in PIPED}
    environment[TOKEN_FD] = str(read_end)
    flags = ["-I"] if sys.flags.isolated else []
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, *flags, "-m", "gate.github.action"], environment)  # noqa: S606


def restore_piped(environ: dict[str, str]) -> None:
    """Put what `start_without_token` piped back into `environ` (not os.environ)."""
    descriptor = environ.pop(TOKEN_FD, None)
    os.environ.pop(TOKEN_FD, None)
    if descriptor is None or not descriptor.isdigit():
        return
    with os.fdopen(int(descriptor), "rb") as stream:
        piped = json.loads(stream.read().decode() or "{}")
    environ.update({str(k): str(v) for k, v in piped.items() if k in PIPED})


def not_dumpable() -> None:
    """Keep same-user processes out of /proc/PID (environ, fd/1) of this one (Linux)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):  # not Linux: nothing to do
        pass
