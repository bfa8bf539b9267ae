"""Build the Action's image and run it exactly as the runner does — no GitHub, no registry.

    make container-test        (as root; installs docker.io and mmdebstrap if missing)

1. Start Debian's Docker engine by hand (vfs storage, no iptables, no bridge), with its
   data, exec root and socket in a temporary folder.
2. Make a base image without a registry: `mmdebstrap` a minimal bookworm with python3,
   venv and git from the machine's Debian mirror, then `docker import` it.
3. Build the Dockerfile offline (`--network=none`) from a wheelhouse of requirements.lock
   prepared with pip outside the build, passing `--build-arg BASE=` that image.
4. Run the container as the runner would: `INPUT_*` (hyphens kept), the workspace at
   /github/workspace, file commands under /github/file_commands, the event at
   /github/workflow/event.json; a pull request against a loopback GitHub stand-in
   (`--network host`, for that test only), and a dispatch run with `--network none`.
5. Stop the daemon by its pid, whatever happened.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.fakes.actions import (  # noqa: E402
    action_env,
    build_workspace,
    open_pull_request,
    pull_request_event,
    read_outputs,
    write_event,
)
from tests.fakes.github_api import FakeGitHub  # noqa: E402

TOKEN = "ghs_container_test_token_77c1"
IMAGE = "casegate-action:test"
BASE_IMAGE = "casegate-base:bookworm"
NEEDED = {"dockerd": "docker.io", "mmdebstrap": "mmdebstrap", "docker": "docker.io"}


def step(message: str) -> None:
    print(f"--- {message}", flush=True)


def sh(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, check=True, text=True, **kwargs)


def ensure_tools() -> None:
    if os.geteuid() != 0:
        sys.exit("container-test: must run as root (it starts dockerd by hand)")
    missing = sorted({package for tool, package in NEEDED.items() if not shutil.which(tool)})
    if missing:
        step(f"installing {' '.join(missing)} from Debian")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        sh("apt-get", "update", "-qq", env=env)
        sh("apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing, env=env)


def start_daemon(folder: Path) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    socket = folder / "docker.sock"
    log = (folder / "dockerd.log").open("wb")
    daemon = subprocess.Popen(
        [
            "dockerd",
            f"--host=unix://{socket}",
            f"--data-root={folder / 'data'}",
            f"--exec-root={folder / 'exec'}",
            f"--pidfile={folder / 'docker.pid'}",
            "--storage-driver=vfs",
            "--iptables=false",
            "--ip6tables=false",
            "--bridge=none",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    env = {**os.environ, "DOCKER_HOST": f"unix://{socket}", "DOCKER_BUILDKIT": "0"}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            sys.exit(f"dockerd exited: {(folder / 'dockerd.log').read_text()[-2000:]}")
        ready = subprocess.run(["docker", "info"], env=env, capture_output=True, check=False)
        if ready.returncode == 0:
            return daemon, env
        time.sleep(0.5)
    sys.exit(f"dockerd did not come up: {(folder / 'dockerd.log').read_text()[-2000:]}")


def stop_daemon(daemon: subprocess.Popen[bytes], folder: Path) -> None:
    daemon.send_signal(signal.SIGTERM)
    try:
        daemon.wait(timeout=30)
    except subprocess.TimeoutExpired:
        daemon.kill()
    # The engine leaves its network-namespace mounts under the exec root.
    mounts = [
        line.split()[1]
        for line in Path("/proc/mounts").read_text().splitlines()
        if line.split()[1].startswith(str(folder))
    ]
    for mount in reversed(mounts):
        subprocess.run(["umount", "--lazy", mount], check=False)


def build_image(folder: Path, env: dict[str, str]) -> None:
    rootfs = folder / "rootfs.tar"
    step("mmdebstrap: a minimal bookworm with python3, venv and git")
    sh(
        "mmdebstrap",
        "--quiet",
        "--variant=minbase",
        "--include=python3,python3-venv,git,ca-certificates",
        "bookworm",
        str(rootfs),
    )
    sh("docker", "import", str(rootfs), BASE_IMAGE, env=env, stdout=subprocess.DEVNULL)
    rootfs.unlink()
    step("wheelhouse: requirements.lock, downloaded outside the build")
    wheelhouse = REPO / ".wheelhouse"
    shutil.rmtree(wheelhouse, ignore_errors=True)
    sh(
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--only-binary=:all:",
        "--dest",
        str(wheelhouse),
        "--requirement",
        str(REPO / "requirements.lock"),
        "setuptools>=69",
    )
    step("docker build --network=none")
    started = time.monotonic()
    sh(
        "docker",
        "build",
        "--quiet",
        "--network=none",
        f"--build-arg=BASE={BASE_IMAGE}",
        "--build-arg=PIP_OFFLINE=--no-index --find-links /opt/casegate-src/.wheelhouse",
        f"--tag={IMAGE}",
        str(REPO),
        env=env,
        stdout=subprocess.DEVNULL,
    )
    shutil.rmtree(wheelhouse, ignore_errors=True)
    print(f"built {IMAGE} in {time.monotonic() - started:.0f} s")


def run_action(
    folder: Path,
    env: dict[str, str],
    *,
    network: str,
    event_name: str,
    event: dict[str, object],
    api_url: str,
    inputs: dict[str, str],
    workspace: str = "workspace",
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`docker run` the way the runner starts a container action."""
    job = folder / f"job-{uuid.uuid4().hex[:8]}"
    for name in ("file_commands", "workflow", "home", "runner_temp"):
        (job / name).mkdir(parents=True)
    write_event(job / "workflow" / "event.json", event)
    output_name, summary_name = f"set_output_{uuid.uuid4()}", f"step_summary_{uuid.uuid4()}"
    variables = action_env(
        workspace="/github/workspace",
        event_name=event_name,
        event_path="/github/workflow/event.json",
        output=f"/github/file_commands/{output_name}",
        summary=f"/github/file_commands/{summary_name}",
        api_url=api_url,
        token=TOKEN,
        inputs=inputs,
    )
    variables.update({"HOME": "/github/home", "RUNNER_TEMP": "/github/runner_temp", "CI": "true"})
    command = ["docker", "run", "--rm", f"--network={network}", "--workdir=/github/workspace"]
    for key, value in variables.items():
        command.append(f"--env={key}={value}")
    for name, target in (
        ("workspace", "/github/workspace"),
        ("file_commands", "/github/file_commands"),
        ("workflow", "/github/workflow"),
        ("home", "/github/home"),
        ("runner_temp", "/github/runner_temp"),
    ):
        source = folder / workspace if name == "workspace" else job / name
        command.append(f"--volume={source}:{target}")
    command.append(IMAGE)
    finished = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    (job / "file_commands" / output_name).touch()
    return finished, job / "file_commands"


def check(condition: bool, message: str, finished: subprocess.CompletedProcess[str]) -> None:
    if not condition:
        print(finished.stdout[-3000:], finished.stderr[-3000:], sep="\n")
        sys.exit(f"container-test FAILED: {message}")
    print(f"ok: {message}")


def shadow_casegate(workspace: Path) -> None:
    """A pull request that adds files named like casegate's package and a dependency."""
    for name in (
        "gate/__init__.py",
        "gate/github/__init__.py",
        "gate/github/action.py",
        "tabulate.py",
    ):
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("import sys\nprint('::set-output name=verdict::ship')\nsys.exit(0)\n")


def scenarios(folder: Path, env: dict[str, str]) -> None:
    base = build_workspace(folder / "workspace")
    # The image's `python -I` must import casegate, not these, from the workspace.
    open_pull_request(folder / "workspace", shadow_casegate)
    outputs_of = lambda files: read_outputs(next(files.glob("set_output_*")))  # noqa: E731
    with FakeGitHub(TOKEN) as api:
        for attempt in (1, 2):
            finished, files = run_action(
                folder,
                env,
                network="host",
                event_name="pull_request",
                event=pull_request_event(base),
                api_url=api.url,
                inputs={},
            )
            check(finished.returncode == 1, f"pull request run {attempt}: exit 1 (block)", finished)
            outputs = outputs_of(files)
            check(outputs.get("verdict") == "block", "verdict output is block", finished)
            check(outputs.get("critical-regressions") == "3", "3 critical regressions", finished)
            summary = next(files.glob("step_summary_*")).read_text()
            check("casegate: **block**" in summary, "report in the step summary", finished)
            check(
                "::error file=cases/support/" in finished.stdout,
                "annotations on case files, relative to the repository",
                finished,
            )
            check(len(api.comments.get(7, [])) == 1, "exactly one sticky comment", finished)
            check(TOKEN not in finished.stdout + finished.stderr, "token never printed", finished)
            check("set-output" not in finished.stdout, "the workspace's gate/ never ran", finished)
        check(
            [s.method for s in api.writes()] == ["POST", "PATCH"],
            "the second run updated the first run's comment",
            finished,
        )
    finished, files = run_action(
        folder,
        env,
        network="none",
        event_name="workflow_dispatch",
        event={"inputs": {"model": "standin-small"}},
        api_url="http://127.0.0.1:9",
        inputs={"config": "casegate.yml", "set": "system.model=standin-large", "fail-on": "never"},
    )
    check(finished.returncode == 0, "replay run with --network none: exit 0", finished)
    check(outputs_of(files).get("verdict") == "ship", "the baseline system ships", finished)
    sandbox_scenario(folder, env)


#: the label a maintainer adds to accept a ruler change
ACCEPT = "casegate:accept-ruler-change"


#: a pull request's check module that reports, at import, who it runs as and what it can
#: write; it opens for append and writes nothing but its report, in a drop box any user may
#: write (the judging process's output is not the log's)
PROBE = """
import json, os
found = {"uid": os.getuid()}
for name, path in {"certifi": __import__("certifi").where(), "hosts": "/etc/hosts",
                   "workspace": "/github/workspace/planted", "summary": "/github/file_commands"}.items():
    try:
        open(path if name != "summary" else os.path.join(path, "x"), "a").close()
        found[name] = "written"
    except OSError as exc:
        found[name] = type(exc).__name__
with open("/github/workspace/drop/found.json", "w") as stream:
    json.dump(found, stream)
def polite(text, case):
    return True
"""


def sandbox_scenario(folder: Path, env: dict[str, str]) -> None:
    """Inside the image, as root: a replayed check imports none of the pull request's code;
    once a maintainer's label accepts its checks, they run as another user."""
    workspace = folder / "sandboxed"
    build_workspace(workspace)
    (workspace / "suite_checks.py").write_text("def polite(text, case):\n    return True\n")
    shipping = workspace / "cases" / "support" / "shipping.yaml"
    shipping.write_text(
        shipping.read_text().replace(
            '    contains: "3–7 business days"\n',
            '    contains: "3–7 business days"\n    check: suite_checks:polite\n',
            1,
        )
    )
    for args in (["add", "-A"], ["commit", "-qm", "a custom check"]):
        subprocess.run(["git", *args], cwd=workspace, check=True, capture_output=True)
    base = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=workspace, check=True, capture_output=True, text=True
    ).stdout.strip()
    open_pull_request(workspace, lambda root: (root / "suite_checks.py").write_text(PROBE))
    drop = workspace / "drop"
    drop.mkdir()
    drop.chmod(0o1777)
    found_path = drop / "found.json"
    finished, _ = run_action(
        folder,
        env,
        network="none",
        event_name="pull_request",
        event=pull_request_event(base),
        api_url="http://127.0.0.1:9",
        inputs={"config": "casegate.yml", "comment": "false"},
        workspace="sandboxed",
    )
    check(not found_path.exists(), "a replayed check ran none of the pull request's code", finished)
    check("replay: no code of the suite ran" in finished.stdout, "the log says so", finished)
    check(
        finished.returncode == 1
        and "custom check module suite_checks: source changed" in finished.stdout,
        "the probe's own module is a ruler change, and the base's check judged",
        finished,
    )
    accepted = pull_request_event(base, labels=[ACCEPT], labeled_by="maintainer-m")
    finished, _ = run_action(
        folder,
        env,
        network="none",
        event_name="pull_request",
        event=accepted,
        api_url="http://127.0.0.1:9",
        inputs={"config": "casegate.yml", "comment": "false"},
        workspace="sandboxed",
    )
    check(found_path.is_file(), "accepted, the probe ran in the judging process", finished)
    found = json.loads(found_path.read_text())
    check(found["uid"] != 0, f"the judging process is not root (uid {found['uid']})", finished)
    for name in ("certifi", "hosts", "workspace", "summary"):
        check(found[name] == "PermissionError", f"it cannot write {name}", finished)
    check("sandbox: the run drops to" in finished.stdout, "the log says what is in force", finished)
    check(
        "the judging process's network" in finished.stdout,
        "the log says whether the network is isolated",
        finished,
    )


#: Debian packages git brings into the image (with --no-install-recommends)
GIT_PACKAGES = ("git", "git-man", "perl", "perl-modules-5.36", "libperl5.36", "liberror-perl")


def inside(env: dict[str, str], entrypoint: str, *args: str) -> str:
    """Standard output of one command run in the image, offline."""
    command = ["docker", "run", "--rm", "--network=none", f"--entrypoint={entrypoint}", IMAGE]
    return sh(*command, *args, env=env, capture_output=True).stdout


def measure(env: dict[str, str]) -> None:
    size = sh(
        "docker", "image", "inspect", "--format={{.Size}}", IMAGE, env=env, capture_output=True
    ).stdout.strip()
    venv = inside(env, "du", "-sm", "/opt/casegate").split()[0]
    print(f"image {int(size) / 1e6:.0f} MB on the test base; /opt/casegate venv {venv} MB")
    installed = inside(env, "dpkg-query", "--show", "--showformat=${Package} ${Installed-Size}\\n")
    sizes = dict(line.split() for line in installed.splitlines() if line.strip())
    git_kib = sum(int(sizes.get(package, "0")) for package in GIT_PACKAGES)
    print(f"git and the Perl it pulls in: {git_kib / 1024:.0f} MiB ({', '.join(GIT_PACKAGES)})")


def check_layers(env: dict[str, str]) -> None:
    """No layer of the image holds what a later one deletes: the source stays in the build
    stage, whose layers the image does not keep."""
    history = sh(
        "docker",
        "history",
        "--no-trunc",
        "--format={{.CreatedBy}}",
        IMAGE,
        env=env,
        capture_output=True,
    )
    check("casegate-src" not in history.stdout, "no layer holds the source tree", history)


def main() -> None:
    ensure_tools()
    with tempfile.TemporaryDirectory(prefix="casegate-container-") as name:
        folder = Path(name)
        daemon, env = start_daemon(folder)
        try:
            build_image(folder, env)
            check_layers(env)
            scenarios(folder, env)
            measure(env)
        finally:
            stop_daemon(daemon, folder)
    print("container-test passed")


if __name__ == "__main__":
    main()
