"""The pull request's code runs in the sandbox: what it tries, as the runner would see it.

Each test commits a custom check on the base, then opens a pull request whose check
module does something hostile *when it is imported*, and runs the Action's entrypoint
as root, as GitHub runs a container action. A replayed check imports none of the pull
request's code (the outputs are the recordings), so these checks run where it does:
live (the supervised run imports the suite's checks), or with the ruler change
accepted by a maintainer's label (the judging process imports the pull request's
checks). The module never damages anything on its own: it opens files for append and
writes nothing, then leaves what it found in a drop box any user may write.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gate.produce.sandbox import SANDBOX_IDS
from tests.fakes.actions import Runner, git, open_pull_request, pull_request_event
from tests.github.test_action_attacks import ACCEPT, with_custom_check, with_live_check

PROBE = """
import json, os, socket, sys
found = {{"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups()}}
def attempt(name, action):
    try:
        action()
        found[name] = "done"
    except Exception as exc:
        found[name] = type(exc).__name__
for name, path in {targets!r}.items():
    attempt(name, lambda path=path: open(path, "a").close())
for name, path in {readable!r}.items():
    attempt(name, lambda path=path: open(path, "rb").read(1))
def connect_unix(path):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    s.connect(path)
def connect_tcp(port):
    s = socket.socket()
    s.settimeout(2)
    s.connect(("127.0.0.1", port))
if {socket_path!r}:
    attempt("docker socket", lambda: connect_unix({socket_path!r}))
if {port!r}:
    attempt("loopback network", lambda: connect_tcp({port!r}))
attempt("parent environ", lambda: open(f"/proc/{{os.getppid()}}/environ", "rb").read())
found["home"] = os.environ.get("HOME")
found["tmp"] = os.environ.get("TMPDIR")
with open({drop!r}, "w") as stream:
    json.dump(found, stream)
def polite(text, case):
    return True
"""


def probe(runner: Runner, **extra: object) -> dict[str, object]:
    """Open the pull request with the probe as its check module; what the probe found.

    Checked live unless `inputs` say otherwise: a replayed check would not import it."""
    drop = runner.drop_box() / "found.json"
    code = PROBE.format(
        targets=extra.get("targets", {}),
        readable=extra.get("readable", {}),
        socket_path=extra.get("socket_path", ""),
        port=extra.get("port", 0),
        drop=str(drop),
    )
    open_pull_request(runner.workspace, lambda root: (root / "suite_checks.py").write_text(code))
    inputs = extra.get("inputs", {"mode": "live"})
    finished = runner.run(config="casegate.yml", event=extra.get("event"), **inputs)  # type: ignore[arg-type]
    runner.finished = finished  # type: ignore[attr-defined]
    assert drop.is_file(), finished.stdout + finished.stderr
    return json.loads(drop.read_text())


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_replayed_check_runs_none_of_the_pull_requests_code(runner: Runner) -> None:
    with_custom_check(runner)
    ran = runner.drop_box() / "ran.txt"
    code = f"open({str(ran)!r}, 'w').write('ran')\ndef polite(text, case):\n    return True\n"
    open_pull_request(runner.workspace, lambda root: (root / "suite_checks.py").write_text(code))
    finished = runner.run(config="casegate.yml")
    assert "replay: no code of the suite ran" in finished.stdout, finished.stdout[-3000:]
    assert not ran.exists()
    # The base's copy of the check judged; the changed module is a ruler change that blocks.
    assert finished.returncode == 1
    assert "custom check module suite_checks: source changed" in finished.stdout


def test_the_run_is_another_user_with_a_home_of_its_own(runner: Runner) -> None:
    with_live_check(runner)
    found = probe(runner)
    assert found["uid"] in SANDBOX_IDS and found["gid"] == found["uid"]
    assert found["groups"] == []
    assert str(found["home"]).startswith("/") and "casegate-run-" in str(found["home"])
    assert str(found["tmp"]).startswith(str(found["home"]).rsplit("/", 1)[0])
    assert "sandbox: the run drops to" in runner.finished.stdout  # type: ignore[attr-defined]


def test_the_run_cannot_write_what_the_gate_reads_afterwards(runner: Runner) -> None:
    """certifi's bundle and /etc/hosts (a token sent to the pull request's server after
    the run), the workspace's .git and files, the gate's scratch and the step's files."""
    import certifi

    with_live_check(runner)
    files = runner.root / f"files-{len(list(runner.root.glob('files-*')))}"
    bundle, hosts = Path(certifi.where()), Path("/etc/hosts")
    before = {bundle: digest(bundle), hosts: digest(hosts)}
    targets = {
        "certifi": str(bundle),
        "/etc/hosts": str(hosts),
        "interpreter": os.path.realpath(os.sys.executable),  # type: ignore[attr-defined]
        ".git/config": str(runner.workspace / ".git" / "config"),
        "a case file": str(runner.workspace / "cases" / "support" / "shipping.yaml"),
        "the baseline": str(runner.workspace / "baselines" / "support.json"),
        "step summary": str(files / "summary"),
        "step outputs": str(files / "output"),
        "runner temp": str(files / "planted.txt"),
        "workspace root": str(runner.workspace / "planted.txt"),
    }
    found = probe(runner, targets=targets, readable={"event": str(files / "event.json")})
    for name in targets:
        assert found[name] in ("PermissionError", "FileNotFoundError"), (name, found[name])
    assert found["event"] == "PermissionError"
    assert found["parent environ"] == "PermissionError"
    assert {bundle: digest(bundle), hosts: digest(hosts)} == before
    assert not (runner.workspace / "planted.txt").exists()
    # The step's files are the runner's again afterwards, and casegate wrote its summary.
    assert "casegate" in (files / "summary").read_text()
    assert (files / "event.json").stat().st_mode & 0o007 == 0o004


@pytest.fixture
def docker_socket(open_tmp: Path) -> Iterator[Path]:
    """A stand-in for the Docker socket GitHub mounts into container actions: anyone may
    connect to this one (0666), unlike the real one, so only the sandbox closes it."""
    path = open_tmp / "docker.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    path.chmod(0o666)
    server.listen(4)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path
    stop.set()
    thread.join()
    server.close()


def test_the_docker_socket_and_the_network_are_out_of_reach(
    runner: Runner, docker_socket: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{docker_socket}")
    with_custom_check(runner)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    port = listener.getsockname()[1]
    try:
        # In replay, with the pull request's checks accepted: its code runs in the judging
        # process, which replay gives no network.
        accepted = pull_request_event(runner.base_sha, labels=[ACCEPT], labeled_by="maintainer-m")
        found = probe(runner, socket_path=str(docker_socket), port=port, inputs={}, event=accepted)
    finally:
        listener.close()
    assert found["docker socket"] == "PermissionError"
    # replay needs no network, so the judging process has none (this machine allows it)
    assert found["loopback network"] in ("OSError", "ConnectionRefusedError", "TimeoutError")
    assert "the judging process's network: none" in runner.finished.stdout  # type: ignore[attr-defined]
    assert docker_socket.stat().st_mode & 0o777 == 0o666  # given back afterwards


def test_a_daemon_of_the_sandbox_user_is_ended(runner: Runner) -> None:
    with_live_check(runner)
    pid_file = runner.drop_box() / "daemon.pid"
    code = (
        "import os, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'],"
        " start_new_session=True)\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "def polite(text, case):\n    return True\n"
    )
    open_pull_request(runner.workspace, lambda root: (root / "suite_checks.py").write_text(code))
    runner.run(config="casegate.yml", mode="live")
    pid = int(pid_file.read_text())
    status = Path(f"/proc/{pid}/status")
    alive = status.exists() and "State:\tZ" not in status.read_text()
    assert not alive


def test_sandbox_off_says_nothing_is_in_force(runner: Runner) -> None:
    with_custom_check(runner)
    open_pull_request(runner.workspace, lambda root: None)
    finished = runner.run(config="casegate.yml", sandbox="off")
    assert "sandbox: NOT in force: turned off" in finished.stdout
    assert finished.returncode == 0, finished.stdout


def test_an_unreadable_workspace_is_refused_under_require(runner: Runner) -> None:
    open_pull_request(runner.workspace, lambda root: None)
    runner.workspace.chmod(0o700)
    finished = runner.run()
    assert finished.returncode == 2
    assert "cannot read" in finished.stdout and "chmod o+rX" in finished.stdout
    git("status", cwd=runner.workspace)  # the checkout itself is untouched


def test_not_root_require_refuses_and_auto_says_what_is_missing(open_tmp: Path) -> None:
    """A developer's machine: casegate cannot drop privileges, and says so."""
    import shutil
    import subprocess
    import sys

    from gate.produce.sandbox import identity
    from tests.fakes.actions import EXAMPLE, REPO

    project = open_tmp / "project"
    project.mkdir()
    for name in EXAMPLE:
        source = REPO / name
        copy = shutil.copytree if source.is_dir() else shutil.copy
        copy(source, project / name)
    (project / "examples").mkdir()
    for name in ("support_bot.py", "standin_embeddings.py", "standin_judge.py"):
        shutil.copy(REPO / "examples" / name, project / "examples" / name)
    user = identity()
    for path in [project, *project.rglob("*")]:
        os.chown(path, user.uid, user.gid)

    def check(mode: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            # live: the suite's code runs (a replay without custom checks runs none of it,
            # and its log says nothing of a sandbox)
            [
                sys.executable,
                "-I",
                "-m",
                "gate",
                "check",
                "--mode",
                "live",
                "--sandbox",
                mode,
                "--quiet",
            ],
            cwd=project,
            user=user.uid,
            group=user.gid,
            extra_groups=[],
            env={"PATH": os.environ["PATH"], "HOME": str(project)},
            capture_output=True,
            text=True,
            check=False,
        )

    refused = check("require")
    assert refused.returncode == 2, refused.stderr
    assert "--sandbox require: casegate is not running as root" in refused.stderr
    assert not (project / ".casegate").exists()  # refused before anything ran
    allowed = check("auto")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "sandbox: NOT in force: casegate is not running as root" in allowed.stderr


def test_verify_records_under_the_sandbox_and_the_gate_writes_what_it_judged(
    runner: Runner,
) -> None:
    # The author edits a recorded answer; `verify: changed` records the case again in the
    # sandbox (the run owns only its own folder) and the gate writes and seals the answer.
    with_live_check(runner)
    recording = Path("recordings") / "support" / "cancel-window.json"

    def forge(root: Path) -> None:
        document = json.loads((root / recording).read_text())
        for entry in document["responses"].values():
            entry["output"]["text"] = "forged by the author"
        (root / recording).write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")

    open_pull_request(runner.workspace, forge)
    key = "a-recording-key-for-the-sandbox-test-0123456789"
    finished = runner.run(
        config="casegate.yml", verify="changed", env_extra={"CASEGATE_RECORDING_KEY": key}
    )
    log = finished.stdout + finished.stderr
    assert "verify: recorded again by CI, live: cancel-window" in log, log[-3000:]
    assert "sandbox: the run drops to" in log
    assert "answer(s) written by the gate and sealed with CASEGATE_RECORDING_KEY" in log
    assert "changed recordings sealed by CI (made by casegate in CI, unedited since): " in log
    # The entries the check replayed are the gate's: under `samples: auto` the 4 samples of
    # its first look (adaptive.start), each recorded again. The rest keep the author's edit
    # (the other config of the example shares the file), and nothing replays them here.
    document = json.loads((runner.workspace / recording).read_text())
    written = [entry for entry in document["responses"].values() if "seal" in entry]
    assert sorted(entry["sample"] for entry in written) == [0, 1, 2, 3]
    assert all(entry["captured_by"] == "ci" for entry in written)
    assert all(e["output"]["text"].startswith("You can cancel within 1 hour") for e in written)
    assert finished.returncode == 0, log[-3000:]
    assert key not in log
