"""Run the suite in a child process and accept only a complete, finished run.

The pull request's code (python targets, custom checks) runs in that child, with
no GitHub token in its environment. The parent, which never imports user code,
gates only when the child exited 0, said it finished, and wrote results for
every selected case. A `sys.exit(0)`, `os._exit(0)` or crash inside user code
therefore ends in "could not judge" (exit 2), never in a verdict.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gate.errors import CasegateError, ResultsError
from gate.files import write_bytes
from gate.limits import MAX_RESULTS_BYTES
from gate.produce.sandbox import (
    Folder,
    Identity,
    SandboxPlan,
    closed_to_others,
    end_every_process,
    entered,
    make_folder,
    private_file,
    read_untrusted,
    request_of,
)
from gate.results import RunResults, ensure_replaceable, read_results
from gate.suite.config import Mode
from gate.suite.select import Selection

#: a recording file's name, as gate.produce.recordings names one
_RECORDING_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,200}\.json")

#: variables the child never sees: the pull request's code must not reach them
WITHHELD = (
    "CASEGATE_RECORDING_KEY",  # only the gate seals (gate.produce.seal)
    "INPUT_GITHUB-TOKEN",
    "INPUT_GITHUB_TOKEN",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_URL",
    "GITHUB_OUTPUT",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_ENV",
    "GITHUB_PATH",
    "GITHUB_STATE",
    # the held-out slice's key (gate.holdout): the suite's code must never decrypt the slice
    "CASEGATE_HOLDOUT_KEY",
)


class IncompleteRun(CasegateError):
    """The supervised run ended without a complete results file: nothing can be gated."""


@dataclass(frozen=True, slots=True)
class ChildRun:
    results: RunResults
    #: what the child printed, when it was captured (the Action fences it in the log)
    output: str = ""
    #: what the sandbox found as the run started (e.g. whether it had a network)
    sandbox_notes: tuple[str, ...] = ()


def child_environment(environ: Mapping[str, str], withhold: Sequence[str] = ()) -> dict[str, str]:
    """`environ` without the variables the child never sees (and `withhold`, e.g. the
    variable a config names for its held-out slice's key)."""
    hidden = {*WITHHELD, *withhold}
    return {key: value for key, value in environ.items() if key not in hidden}


def _interpreter_flags() -> list[str]:
    # -P: the working directory (the pull request's checkout) is not put on sys.path;
    # an isolated parent (-I, as in the Action's image) gets an isolated child.
    return ["-I"] if sys.flags.isolated else ["-P"]


def run_supervised(
    config: Path,
    overrides: Sequence[str],
    mode: Mode,
    out: Path,
    *,
    expected: Sequence[str],
    reference: Path | None = None,
    only_missing: bool = False,
    show_progress: bool = True,
    capture: bool = False,
    environ: Mapping[str, str] | None = None,
    selection: Selection | None = None,
    reap: bool = False,
    withhold: Sequence[str] = (),
    sandbox: SandboxPlan | None = None,
    estimate: bool = False,
    gate_judges: bool = False,
    recordings_into: Path | None = None,
) -> ChildRun:
    """Run the suite in a child; the results only when they are complete.

    With a `sandbox` plan that drops privileges, the child becomes the sandbox user
    before it imports the suite's code (gate.produce.sandbox), writes only a folder of its own,
    and every process it leaves is ended before its files are read, as untrusted data.
    With `gate_judges` (`casegate check`, whose gate judges every output itself) the child
    judges only what the gate cannot (gate.pipeline.run.execute).

    With `recordings_into` (a folder of the gate's) the child records into a folder of its
    own, never the suite's, and what it wrote there is copied into `recordings_into` as
    untrusted files once it has ended: the gate decides what of it to keep.

    Raises IncompleteRun when the child ended early or wrote less than `expected`,
    and the child's own CasegateError problems when it refused to run.
    Interrupted results are returned as they are (the caller exits 130).
    """
    ensure_replaceable(out)  # before the run: a refused path must not cost a paid run
    nonce = secrets.token_hex(16)
    who = sandbox.identity if sandbox is not None else None
    environ = os.environ if environ is None else environ
    with tempfile.TemporaryDirectory(prefix="casegate-run-") as scratch_text:
        folder = make_folder(Path(scratch_text), who)
        request_path = folder.scratch / "request.json"
        if reference is not None:
            # The baseline may lie in the gate's private extraction of the base commit: the
            # run gets a copy it can read, beside its request.
            copy = folder.scratch / "reference.json"
            copy.write_bytes(reference.read_bytes())
            copy.chmod(0o644)
            reference = copy
        status_path = folder.run / "status.json"
        partial = folder.run / "results.json"
        chosen = selection or Selection()
        own_recordings = folder.run / "recordings"
        if recordings_into is not None:
            overrides = [*overrides, f"recordings={own_recordings}"]
        request = {
            "config": str(config),
            "overrides": list(overrides),
            "mode": mode,
            "out": str(partial),
            "reference": str(reference) if reference else None,
            "only_missing": only_missing,
            "show_progress": show_progress,
            "status": str(status_path),
            "nonce": nonce,
            "cases": list(chosen.cases),
            "tags": list(chosen.tags),
            "shard": str(chosen.shard or "") or None,
            "sandbox": request_of(sandbox, folder) if sandbox is not None else None,
            # a baseline: `samples: auto` samples every case at a fixed count (gate.pipeline.run)
            "estimate": estimate,
            "gate_judges": gate_judges,
        }
        private_file(request_path, json.dumps(request))  # its nonce is not the run's to read
        command = [
            sys.executable,
            *_interpreter_flags(),
            "-m",
            "gate.pipeline.worker",
            str(request_path),
        ]
        env = child_environment(environ, withhold)
        if who is not None:
            env.update(folder.environment())
        hidden = sandbox.hidden if sandbox is not None and who is not None else ()
        with closed_to_others(hidden):
            child = subprocess.Popen(
                command,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE if capture else None,
                stderr=subprocess.STDOUT if capture else None,
                text=True,
                errors="replace",
                # Its own process group: Ctrl-C reaches it once, through us, and whatever
                # the user's code leaves running is ended with it.
                start_new_session=True,
            )
            printed = wait_for_child(child, reap, who)
        notes = _sandbox_notes(folder, who)
        if recordings_into is not None:
            _copy_recordings(own_recordings, recordings_into)
        status = _status(status_path)
        code = child.returncode
        problems = status.get("problems")
        if isinstance(problems, list) and problems and code not in (0, 130):
            raise CasegateError([str(problem) for problem in problems])
        written = _written(partial)
        if code == 130 and written is not None:
            return ChildRun(_kept(written, folder, out), printed, notes)
        if code != 0 or status.get("done") != nonce or written is None:
            raise IncompleteRun(
                f"the run ended (exit code {code}) before it finished judging every case, so "
                "nothing was gated; the system under test or a custom check may have ended "
                "the process (sys.exit, os._exit, a signal)"
            )
        return ChildRun(_kept(written, folder, out, expected), printed, notes)


def _copy_recordings(source: Path, target: Path) -> None:
    """The recording files the child wrote into its own folder, copied as untrusted data:
    regular files with a recording's name and size, never a link."""
    from gate.limits import MAX_RECORDING_BYTES

    if not source.is_dir() or source.is_symlink():
        return
    with os.scandir(source) as found:
        for item in found:
            if item.name.startswith(".") or not item.name.endswith(".json"):
                continue  # the recorders' lock and temporaries
            if not item.is_file(follow_symlinks=False) or not _RECORDING_NAME.fullmatch(item.name):
                continue
            data = read_untrusted(Path(item.path), MAX_RECORDING_BYTES, "a recording the run wrote")
            write_bytes(target / item.name, data)


def _sandbox_notes(folder: Folder, who: Identity | None) -> tuple[str, ...]:
    if who is None:
        return ()
    network = entered(folder)
    if network is None:
        return ("sandbox: the run did not report entering the sandbox",)
    return (f"sandbox: the run's network: {network}",)


def _written(partial: Path) -> bytes | None:
    """The results the child wrote, read as untrusted data (None: there are none)."""
    if not os.path.lexists(partial):
        return None
    return read_untrusted(partial, MAX_RESULTS_BYTES, "the run's results")


def _kept(
    data: bytes, folder: Folder, out: Path, expected: Sequence[str] | None = None
) -> RunResults:
    """The child's results, read and written again by this process: never moved, never
    through a link (the run's folder may hold anything)."""
    own = folder.scratch / "results.json"  # the gate's file, outside the run's folder
    own.write_bytes(data)
    results = read_results(own)
    if expected is not None:
        _require_every_case(results, expected)
    write_bytes(out, data)
    return results


def wait_for_child(
    child: subprocess.Popen[str], reap: bool, sandboxed: Identity | None = None
) -> str:
    """The child's captured output once it exits; Ctrl-C is passed on, once.

    It waits for the child to exit, not for its output to end: a process the suite's
    code left behind may hold the pipe open for as long as it likes.
    """
    chunks: list[str] = []
    reader = None
    if child.stdout is not None:
        stream = child.stdout
        reader = threading.Thread(target=lambda: chunks.append(stream.read()), daemon=True)
        reader.start()
    interrupted = False
    while True:
        try:
            child.wait()
            break
        except KeyboardInterrupt:
            if not interrupted:
                child.send_signal(signal.SIGINT)  # it writes what finished, then exits 130
                interrupted = True
    with contextlib.suppress(OSError):
        os.killpg(child.pid, signal.SIGKILL)
    if sandboxed is not None:
        end_every_process(sandboxed)  # a daemon in a session of its own, too
    if reap:
        end_descendants()
    if reader is not None:
        reader.join(timeout=5)
    return "".join(chunks)


def become_subreaper() -> None:
    """Orphans of the supervised run become our children, not init's (Linux).

    A daemon the suite's code starts (`setsid` and a double fork) escapes the child's
    process group; as our child it can still be found and ended.
    """
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def end_descendants() -> None:
    """Kill and reap every process whose parent is this one (only for a process that
    runs nothing else: the Action's entrypoint, after the supervised run ended)."""
    me = str(os.getpid())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, IndexError):
                if stat.read_text().rsplit(")", 1)[1].split()[1] == me:
                    found.append(int(stat.parent.name))
        if not found:
            return
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in found:
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)


def _status(path: Path) -> dict[str, object]:
    try:
        found = json.loads(read_untrusted(path, 1 << 20, "the run's status"))
    except (CasegateError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _require_every_case(results: RunResults, expected: Sequence[str]) -> None:
    if results.interrupted:
        return
    judged = {case.id for case in results.cases}
    missing = sorted(set(expected) - judged)
    unexpected = sorted(judged - set(expected))
    if missing or unexpected or (expected and not judged):  # only a shard may be empty
        raise ResultsError(
            f"the run's results cover {len(judged)} of the {len(set(expected))} selected "
            f"case(s) (missing: {', '.join(missing[:10]) or 'none'}; unexpected: "
            f"{', '.join(unexpected[:10]) or 'none'}): an incomplete run is never gated"
        )
