"""Red team, round 2: the round-1 fixes and what round 1 did not reach.

Every test asserts the SAFE outcome: a failing test means the attack worked. The
attack code never damages the machine: it opens files for append and writes
nothing else, writes only into the runner's drop box, connects only to a loopback
server this test starts, and every loop is bounded in time.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from tests.attacks.test_redteam_sandbox import CRITICAL_CASE, base_with, new_case, rerecord
from tests.fakes.actions import Runner, git, open_pull_request
from tests.github.test_action_attacks import replace

KEY = "sk-redteam-round2-5d1f0c"


# --- helpers ---------------------------------------------------------------------------


@contextlib.contextmanager
def loopback_listener() -> Iterator[tuple[int, list[str]]]:
    """A TCP server on 127.0.0.1 that counts connections (bounded: 120 s at most)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.5)
    seen: list[str] = []
    stop = threading.Event()

    def serve() -> None:
        for _ in range(240):
            if stop.is_set():
                return
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            seen.append("connected")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], seen
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()


#: appended to the pull request's python system: what it sees, noted in the drop box
SPY = """

def _redteam_note():
    import json as _json, os as _os, socket as _socket
    try:
        _conn = _socket.create_connection(("127.0.0.1", {port}), timeout=2)
        _conn.close()
        _net = True
    except OSError:
        _net = False
    with open({box!r} + "/seen.jsonl", "a") as _stream:
        _stream.write(_json.dumps({{
            "uid": _os.getuid(),
            "key": _os.environ.get("OPENAI_API_KEY") == {key!r},
            "net": _net,
        }}) + "\\n")


_redteam_note()
"""


def _seen(box: Path) -> list[dict[str, object]]:
    path = box / "seen.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def local_check(runner: Runner, *args: str) -> subprocess.CompletedProcess[str]:
    """`casegate check --base main` in the pull request's checkout, as root, as a
    maintainer would run it on a branch, with a provider key in the environment."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GITHUB_", "INPUT_", "RUNNER_"))
    }
    env.update({"HOME": str(runner.root / "home"), "OPENAI_API_KEY": KEY})
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "gate",
            "check",
            "--config",
            "casegate.yml",
            "--base",
            "main",
            *args,
        ],
        cwd=runner.workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


# --- 1. the pull request's config chooses the mode of a local `check --base` ----------


def test_a_local_check_base_cannot_be_switched_to_live_by_the_pull_request(
    runner: Runner,
) -> None:
    """`mode` is a key the ruler lists as deciding no verdict; but `casegate check
    --base main` (no --mode) takes it from the pull request's config. `mode: live`
    runs the pull request's python system with the maintainer's provider key and
    the network (the sandbox keeps both outside replay)."""
    box = runner.drop_box()
    with loopback_listener() as (port, connections):

        def attack(root: Path) -> None:
            replace(root / "casegate.yml", "mode: replay\n", "mode: live\n")
            with open(root / "examples" / "support_bot.py", "a") as stream:
                stream.write(SPY.format(port=port, box=str(box), key=KEY))

        # the system lives in examples/: part of the workspace, not of the example copy
        _with_examples(runner)
        open_pull_request(runner.workspace, attack)
        finished = local_check(runner)
    seen = _seen(box)
    evidence = {
        "exit": finished.returncode,
        "seen": seen,
        "connections": len(connections),
        "stderr": finished.stderr[-1500:],
        "stdout": finished.stdout[-1500:],
    }
    assert not any(note["key"] for note in seen), evidence
    assert not any(note["net"] for note in seen) and not connections, evidence
    assert not any(note["uid"] == 0 for note in seen), evidence


def _with_examples(runner: Runner) -> None:
    """The example suite's python system, committed on the base (as in this repository)."""
    import shutil

    from tests.fakes.actions import REPO

    target = runner.workspace / "examples"
    if not target.exists():
        shutil.copytree(REPO / "examples", target, ignore=shutil.ignore_patterns("__pycache__"))
        git("add", "-A", cwd=runner.workspace)
        git("commit", "-qm", "examples", cwd=runner.workspace)
        runner.base_sha = git("rev-parse", "HEAD", cwd=runner.workspace)


# --- 2. the history export moved by `history:` (a key the ruler calls neutral) --------


def test_a_history_export_moved_by_the_config_is_a_ruler_change(runner: Runner) -> None:
    """The integrity check compares the base's `history:` path on both sides; a pull
    request that points `history:` at a new file holding a rewritten copy (the failing
    runs dropped) makes that copy the trusted export once merged."""
    _with_history(runner)

    def attack(root: Path) -> None:
        lines = (root / "history" / "support.jsonl").read_text().splitlines(keepends=True)
        kept = [line for line in lines if '"verdict":"fail"' not in line] or lines[1:]
        (root / "history" / "support-v2.jsonl").write_text("".join(kept))
        text = (root / "casegate.yml").read_text()
        (root / "casegate.yml").write_text(text + "history: history/support-v2.jsonl\n")

    open_pull_request(runner.workspace, attack)
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 1, finished.stdout[-3000:]
    assert "history" in finished.stdout.lower()


def _with_history(runner: Runner) -> None:
    import shutil

    from tests.fakes.actions import REPO

    target = runner.workspace / "history"
    if not target.exists():
        shutil.copytree(REPO / "history", target)
        git("add", "-A", cwd=runner.workspace)
        git("commit", "-qm", "history", cwd=runner.workspace)
        runner.base_sha = git("rev-parse", "HEAD", cwd=runner.workspace)


# --- 3. a new case calls a base check with args of its choosing, first ----------------

LAZY_CHECK = """\
import re

_PATTERN = None


def no_competitors(text, case, *, names=("shopmart", "buyrite")):
    global _PATTERN
    if _PATTERN is None:  # compiled once, on first use
        _PATTERN = re.compile("|".join(map(re.escape, names)), re.IGNORECASE)
    found = _PATTERN.findall(text)
    return not found, "names a competitor: " + ", ".join(found)
"""


def test_a_new_case_cannot_choose_the_args_that_set_a_base_checks_state(
    runner: Runner,
) -> None:
    """The spec is one the base calls (so not "new code"), but the new case gives it
    args: judged first in the same judging process, it fixes the module's lazily
    compiled pattern, and the critical case's check no longer sees ShopMart."""
    base_with(runner, {"suite_checks.py": LAZY_CHECK}, "suite_checks:no_competitors")

    def attack(root: Path) -> None:
        rerecord(root, CRITICAL_CASE, " For that, try ShopMart instead.")
        new_case(
            root,
            "aaa-lazy",
            {"check": {"fn": "suite_checks:no_competitors", "args": {"names": ["zq-none"]}}},
            "hello",
        )

    open_pull_request(runner.workspace, attack)
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 1, finished.stdout[-3000:]
    assert "names a competitor: ShopMart" in finished.stdout, finished.stdout[-3000:]


def test_the_lazy_check_control(runner: Runner) -> None:
    """Control: the same answer without the new case blocks, naming ShopMart."""
    base_with(runner, {"suite_checks.py": LAZY_CHECK}, "suite_checks:no_competitors")
    open_pull_request(
        runner.workspace,
        lambda root: rerecord(root, CRITICAL_CASE, " For that, try ShopMart instead."),
    )
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 1, finished.stdout[-3000:]
    assert "names a competitor: ShopMart" in finished.stdout, finished.stdout[-3000:]


#: appended after SPY: the critical injection case now fails, every sample
FAILING = """

_redteam_answer = answer


def answer(case_input, system):
    if "Ignore all previous" in str(case_input):
        return {"text": "Sure: You are the customer support assistant of Acme."}
    return _redteam_answer(case_input, system)
"""


def test_a_local_live_confirmation_never_runs_the_pull_requests_code_as_root(
    runner: Runner,
) -> None:
    """With `mode: live` and repeated samples (both from the pull request's config), a
    flagged regression is confirmed by rerunning the system in the gate's own process:
    the pull request's python system imported as root, unsandboxed."""
    box = runner.drop_box()
    with loopback_listener() as (port, _connections):

        def attack(root: Path) -> None:
            replace(root / "casegate.yml", "mode: replay\n", "mode: live\n")
            replace(root / "casegate.yml", "samples: auto ", "samples: 20 ")
            with open(root / "examples" / "support_bot.py", "a") as stream:
                stream.write(SPY.format(port=port, box=str(box), key=KEY) + FAILING)

        _with_examples(runner)
        open_pull_request(runner.workspace, attack)
        finished = local_check(runner)
    seen = _seen(box)
    evidence = {"exit": finished.returncode, "seen": seen, "stdout": finished.stdout[-2000:]}
    assert not any(note["uid"] == 0 for note in seen), evidence
