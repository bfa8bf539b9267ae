"""Attacks on `verify: changed` (gate.pipeline.verify): a pull request's author, who controls
every file of the change, against the re-recording, judging and sealing CI does before a
replayed check.

Every test asserts the SAFE outcome: a failing test means the attack worked.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.cli import main
from gate.produce import seal
from tests.conftest import OPENAI_KEY, Project, case
from tests.fakes.actions import git, init_repository
from tests.fakes.llm_server import FakeLLMServer, Fault, Received, Reply

KEY = "k" * 16 + "-recording-key-for-the-tests-0123456789"

SPY = """
import json as _json, os as _os, sys as _sys
with open({marker!r}, "a") as _stream:
    _stream.write(_json.dumps({{"pid": _os.getpid(), "argv": _sys.orig_argv,
        "key": repr(getattr(_sys.modules.get("gate.produce.seal"), "_held", None) and
                    _sys.modules["gate.produce.seal"]._held.secret)}}) + "\\n")
"""
JUDGE = "def grade(asked, system):\n    return 'PASS: fine' if 'hello' in asked['output'] else 'FAIL: no'\n"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    env.pop(seal.KEY_ENV, None)
    env.update(extra)
    return env


def _gate(project: Project, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`casegate ARGS` in a process of its own, started with `env` (as CI starts it)."""
    return subprocess.run(
        [sys.executable, "-m", "gate", *args],
        cwd=project.root,
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _edit_outputs(project: Project, case_id: str, text: str, system: str = "echo") -> None:
    path = project.root / "recordings" / f"{case_id}.json"
    document = json.loads(path.read_text())
    for entry in document["responses"].values():
        if entry.get("system") == system:
            entry["output"]["text"] = text
            entry.pop("seal", None)
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


def _commit(project: Project, message: str = "the pull request") -> None:
    git("add", "-A", cwd=project.root)
    git("commit", "-qm", message, cwd=project.root)


def _base(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recorded by CI (sealed), baselined, committed on main; a branch `change` checked out."""
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)


# --- the pinned judge: the pull request's, asked live in the gate's own process ----------


def _judged_suite(project: Project, question: str = "hello") -> str:
    """One critical case judged by a python judge pinned on the base; the judge's module."""
    module = f"jdg_{project.module}"
    project.write_text(f"{module}.py", JUDGE)
    project.write_config(judge={"provider": "python", "target": f"{module}:grade"})
    project.write_cases(
        [case("greet", question, judge={"rubric": "greets"}, fields_={"critical": True})]
    )
    return module


def test_verify_never_runs_the_pull_requests_judge_module_in_the_gate_process(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Attack: base pins a python judge; the PR rewrites that module (no ruler change) and
    # changes a judged recording; verify's judge_live builds the PR's judge in the gate.
    module = _judged_suite(project)
    _base(project, monkeypatch)
    marker = project.root / "imported.jsonl"
    project.write_text(f"{module}.py", SPY.format(marker=str(marker)) + JUDGE)
    _edit_outputs(project, "greet", "plain: hello again")
    _commit(project)
    done = _gate(project, "check", "--base", "main", "--quiet", "--verify", "changed",
                 "--sandbox", "off", **{seal.KEY_ENV: KEY})  # fmt: skip
    seen = [json.loads(line) for line in marker.read_text().splitlines()] if marker.exists() else []
    in_gate = [s for s in seen if not any("worker" in a for a in s["argv"])]
    assert in_gate == [], (in_gate, done.stdout + done.stderr)


HOLDOUT_SECRET = "holdout-secret-that-only-the-gate-holds-0123456789"


def test_verify_never_hands_a_gate_only_secret_to_the_pull_requests_judge_pin(
    project: Project, monkeypatch: pytest.MonkeyPatch, llm_server: FakeLLMServer
) -> None:
    # Attack: the PR repins the judge (openai, its own base_url, api_key_env naming a secret
    # only the gate process holds); verify asks that judge from the gate before any ruling.
    _judged_suite(project)
    _base(project, monkeypatch)
    # The child withholds the secret; the PR's system gives the child a stand-in at import.
    project.write_system(
        "import os\n"
        "os.environ.setdefault('CASEGATE_HOLDOUT_KEY', 'stand-in')\n"
        "def answer(case_input, system):\n"
        "    return 'plain: ' + case_input['question']\n"
    )
    project.write_config(
        judge={
            "provider": "openai",
            "model": "judge-model",
            "base_url": llm_server.url + "/v1",
            "api_key_env": "CASEGATE_HOLDOUT_KEY",
            "max_retries": 0,
        }
    )
    _edit_outputs(project, "greet", "plain: hello again")
    _commit(project)
    llm_server.reply = lambda received: Reply(text="PASS: fine")
    monkeypatch.setenv("CASEGATE_HOLDOUT_KEY", HOLDOUT_SECRET)
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    main(["check", "--base", "main", "--quiet", "--verify", "changed"])
    sent = [
        r.headers.get("Authorization", r.headers.get("authorization", ""))
        for r in llm_server.received
    ]
    assert not any(HOLDOUT_SECRET in header for header in sent), sent


# --- the recording key, read by the child from where the kernel shows the gate's start -----


def test_verify_child_cannot_read_the_recording_key_from_the_gates_proc_environ(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Attack: without the sandbox (not root, or --sandbox auto that cannot drop), the PR's
    # system reads /proc/<gate>/environ: hold_from_environment pops os.environ only.
    project.write_cases([case("greet", "hello", contains="hello", fields_={"critical": True})])
    _base(project, monkeypatch)
    stolen = project.root / "stolen.txt"
    project.write_system(
        "import os, pathlib\n"
        "def answer(case_input, system):\n"
        "    data = open(f'/proc/{os.getppid()}/environ', 'rb').read()\n"
        f"    pathlib.Path({str(stolen)!r}).write_bytes(data)\n"
        "    return 'plain: ' + case_input['question']\n"
    )
    _edit_outputs(project, "greet", "plain: hello again")
    _commit(project)
    done = _gate(project, "check", "--base", "main", "--quiet", "--verify", "changed",
                 **{seal.KEY_ENV: KEY})  # fmt: skip
    assert stolen.exists(), done.stdout + done.stderr
    assert KEY.encode() not in stolen.read_bytes()


# --- a hosted system: the pull request's config chooses where CI's "live" answers come from --


def _real(received: Received) -> Reply:
    """The provider: under the PR's new prompt (v2) it fails the critical case."""
    asked = json.dumps(received.body)
    if "v2" in asked and received.last_user_text == "hello":
        return Reply(text="nothing useful")
    return Reply(text=received.last_user_text)


def _hosted(project: Project, server: FakeLLMServer, prompt: str, **extra: Any) -> None:
    project.write_config(
        system={
            "name": "bot",
            "provider": "openai",
            "model": "model-a",
            "base_url": server.url + "/v1",
            "prompt": prompt,
            "message": "{{ question }}",
            "max_retries": 0,
            "timeout_s": 5,
            **extra,
        },
        gate={"unverified_critical": "block"},
    )


HOSTED_CASES = [
    case("greet", "hello", contains="hello", fields_={"critical": True}),
    case("echo", "world", contains="world"),
]


def test_verify_does_not_seal_answers_from_an_endpoint_the_pull_request_chose(
    project: Project, monkeypatch: pytest.MonkeyPatch, llm_server: FakeLLMServer
) -> None:
    # Attack: the PR changes the prompt (the real model now fails `greet`) and points
    # system.base_url (a transport key: no ruler change, same recording keys) at its own
    # server; verify records that server's answers, CI seals them, and the check ships.
    llm_server.reply = _real
    project.write_cases(HOSTED_CASES)
    _hosted(project, llm_server, "You answer. v1")
    _base(project, monkeypatch)
    with FakeLLMServer(lambda received: Reply(text=received.last_user_text)) as evil:
        _hosted(project, evil, "You answer. v2")
        monkeypatch.delenv(seal.KEY_ENV, raising=False)  # the author holds no key
        assert main(["record", "--quiet"]) == 0  # the author's forged passing recordings
        _commit(project)
        monkeypatch.setenv(seal.KEY_ENV, KEY)
        authors = len(evil.received)  # the author's own recording, with the author's key
        code = main(["check", "--base", "main", "--quiet", "--verify", "changed"])
        leaked = [r for r in evil.received[authors:] if OPENAI_KEY in json.dumps(r.headers)]
    assert code == 2  # no verdict: the change moved the endpoint verification records at
    assert leaked == []


def test_verify_failing_on_purpose_does_not_leave_the_authors_recordings_to_ship(
    project: Project,
    monkeypatch: pytest.MonkeyPatch,
    llm_server: FakeLLMServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Attack: the PR makes every verify call fail (api_key_env: PATH, a set variable, passes
    # needed_keys; the provider refuses it) so the forged recordings are judged as they are.
    llm_server.reply = _real
    project.write_cases(HOSTED_CASES)
    _hosted(project, llm_server, "You answer. v1")
    config = yaml.safe_load(project.config_path.read_text())
    config["gate"] = {}  # the default: unverified_critical warn
    project.write_config(**config)
    _base(project, monkeypatch)
    config = yaml.safe_load(project.config_path.read_text())
    config["system"]["prompt"] = "You answer. v2"
    project.write_config(**config)
    with FakeLLMServer(lambda received: Reply(text=received.last_user_text)) as forger:
        config["system"]["base_url"] = forger.url + "/v1"
        project.write_config(**config)
        monkeypatch.delenv(seal.KEY_ENV, raising=False)  # the author holds no key
        assert main(["record", "--quiet"]) == 0  # forged passing recordings
    config["system"]["base_url"] = llm_server.url + "/v1"
    config["system"]["api_key_env"] = "PATH"
    project.write_config(**config)
    _commit(project)
    llm_server.fail("hello", *[Fault(401)] * 5)  # the provider refuses the key PATH holds
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    code = main(["check", "--base", "main", "--quiet", "--verify", "changed"])
    out, err = capsys.readouterr()
    assert code != 0, out + err


# --- the log: what verify prints before the run, raw, outside casegate's fences ----------


@pytest.mark.parametrize("field", ["model", "api_key_env"])
def test_verify_lines_carry_no_workflow_command_from_the_config(
    project: Project,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    field: str,
) -> None:
    # Attack: the PR's system.model (printed in "cost: unknown, `pricing:` has no price for
    # MODEL") or system.api_key_env (printed in "... X is not set", a fork's path) holds a
    # newline and a workflow command; verify prints both raw, outside casegate's fences.
    from tests.fakes.actions import acted_on

    project.write_cases([case("greet", "usage", contains="usage", fields_={"critical": True})])
    _base(project, monkeypatch)
    config = yaml.safe_load(project.config_path.read_text())
    config["system"][field] = "m\n::error title=casegate::SHIP approved by CI"
    project.write_config(**config)
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    assert main(["record", "--quiet"]) == 0  # the author's (a new model: new keys)
    _edit_outputs(project, "greet", "with usage, edited")
    _commit(project)
    capsys.readouterr()
    main(["check", "--base", "main", "--quiet", "--verify", "changed"])
    err = capsys.readouterr().err
    assert "verify: " in err, err
    assert acted_on(err) == [], err


# --- recordings the gate judges: the judge's verdicts are recordings the change can edit ---


def test_a_pull_request_that_edits_a_recorded_judge_verdict_has_it_verified_or_named(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Attack: the system's answer is left as the base recorded it; only the judge's recorded
    # verdict on it is flipped FAIL -> PASS. changed_cases/for_check compare system entries only.
    _judged_suite(project, question="bye")
    config = yaml.safe_load(project.config_path.read_text())
    config["gate"] = {"block_on_critical_failure": True}
    project.write_config(**config)
    _base(project, monkeypatch)
    path = project.root / "recordings" / "greet.json"
    document = json.loads(path.read_text())
    for entry in document["responses"].values():
        if entry.get("system") == "judge":
            assert entry["output"]["text"].startswith("FAIL")
            entry["output"]["text"] = "PASS: greets warmly"
            entry.pop("seal", None)
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    _commit(project)
    code, out = _verify_in_a_process(project)
    assert "recorded again by CI, live: greet" in out or "not sealed by CI: greet" in out, out
    assert code == 1, out  # the base blocks on this critical failure


# --- defended: what must be re-recorded is -------------------------------------------------


@pytest.fixture
def forged(project: Project, monkeypatch: pytest.MonkeyPatch) -> Project:
    """Sealed base; on the branch, a system whose live answer fails the critical case."""
    project.write_cases(
        [
            case("greet", "hello", contains="hello", fields_={"critical": True}),
            case("echo", "world", contains="world"),
        ]
    )
    config = yaml.safe_load(project.config_path.read_text())
    config["gate"] = {"unverified_critical": "block"}
    project.write_config(**config)
    _base(project, monkeypatch)
    project.write_system(
        "def answer(case_input, system):\n"
        "    return 'nothing useful' if case_input['question'] == 'hello' else 'world'\n"
    )
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    return project


def _verify_in_a_process(project: Project) -> tuple[int, str]:
    """`check --base main --verify changed` as CI starts it: a process of its own, which has
    imported none of the working tree's modules, with the working directory off its path as
    for the `casegate` script (-P): a python judge is the base's."""
    done = subprocess.run(
        [sys.executable, "-P", "-m", "gate", "check", "--base", "main", "--quiet", "--verify", "changed"],
        cwd=project.root, env={**os.environ, seal.KEY_ENV: KEY}, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def _verify(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    code = main(["check", "--base", "main", "--quiet", "--verify", "changed"])
    out, err = capsys.readouterr()
    return code, out + err


def test_defended_duplicate_json_keys_in_a_changed_recording(
    forged: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Attack: a duplicate key (one parser sees the forged answer, another the real one).
    path = forged.root / "recordings" / "greet.json"
    text = path.read_text()
    key = next(iter(json.loads(text)["responses"]))
    forged_entry = json.loads(text)["responses"][key]
    duplicate = f'"responses": {{\n"{key}": {json.dumps(forged_entry)},'
    path.write_text(text.replace('"responses": {', duplicate, 1))
    _commit(forged)
    code, out = _verify(capsys, monkeypatch)
    assert code != 0, out
    assert "Traceback" not in out


def test_defended_an_oversized_changed_recording(
    forged: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Attack: a changed recording past the 20 MB limit (unreadable: must not read as "same").
    path = forged.root / "recordings" / "greet.json"
    path.write_text(path.read_text() + " " * (21 * 1024 * 1024))
    _commit(forged)
    code, out = _verify(capsys, monkeypatch)
    assert code != 0, out
    assert "Traceback" not in out


def test_defended_a_base_without_recordings_folder_records_every_case(
    forged: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Attack: the PR moves the recordings to a folder the base does not have, and forges
    # the critical case's answer there. (Moved unchanged, they are compared with the base's
    # own folder and are not changed: nothing to record again.)
    config = yaml.safe_load(forged.config_path.read_text())
    config["recordings"] = "recs2"
    forged.write_config(**config)
    (forged.root / "recordings").rename(forged.root / "recs2")
    path = forged.root / "recs2" / "greet.json"
    document = json.loads(path.read_text())
    for entry in document["responses"].values():
        entry["output"]["text"] = "hello, forged"
    path.write_text(json.dumps(document))
    _commit(forged)
    code, out = _verify(capsys, monkeypatch)
    assert "recorded again by CI, live: greet" in out, out
    assert code == 1, out


def test_defended_a_case_only_in_the_pull_request_is_recorded_again(
    forged: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Attack: a new critical case, only in the PR, with a forged passing recording.
    cases = [
        case("greet", "hello", contains="hello", fields_={"critical": True}),
        case("echo", "world", contains="world"),
        case("new", "hello", contains="hello", fields_={"critical": True}),
    ]
    forged.write_cases(cases)
    path = forged.root / "recordings"
    document = json.loads((path / "greet.json").read_text())
    document["case"] = "new"
    (path / "new.json").write_text(json.dumps(document))
    _commit(forged)
    code, out = _verify(capsys, monkeypatch)
    assert "recorded again by CI, live: new" in out, out
    assert code == 1, out


def test_defended_a_renamed_critical_case_is_a_ruler_change(
    forged: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Attack: greet renamed greet2 (its recordings moved unchanged), so "nothing changed".
    forged.write_cases(
        [
            case("greet2", "hello", contains="hello", fields_={"critical": True}),
            case("echo", "world", contains="world"),
        ]
    )
    path = forged.root / "recordings"
    document = json.loads((path / "greet.json").read_text())
    document["case"] = "greet2"
    (path / "greet2.json").write_text(json.dumps(document))
    (path / "greet.json").unlink()
    _commit(forged)
    code, out = _verify(capsys, monkeypatch)
    assert code != 0, out


def test_defended_the_child_rewriting_another_cases_recording_is_named_unsealed(
    forged: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Attack: only echo changed (so only echo is recorded again); while it runs, the PR's
    # code rewrites greet's recording to a pass the live system never gave.
    greet = forged.root / "recordings" / "greet.json"
    forged.write_system(
        "import json, pathlib\n"
        "def answer(case_input, system):\n"
        f"    path = pathlib.Path({str(greet)!r})\n"
        "    document = json.loads(path.read_text())\n"
        "    for entry in document['responses'].values():\n"
        "        entry['output']['text'] = 'hello, forged'\n"
        "    path.write_text(json.dumps(document))\n"
        "    return 'nothing useful' if case_input['question'] == 'hello' else 'world'\n"
    )
    _edit_outputs(forged, "echo", "world, again")
    _commit(forged)
    code, out = _verify(capsys, monkeypatch)
    assert "recorded again by CI, live: echo" in out, out
    assert code == 1, out
    # (echo too when CI's new draw falls in the same second as the base's: not newer)
    assert re.search(r"not sealed by CI: [^(]*\bgreet\b", out), out


def test_defended_a_child_planting_a_judge_verdict_for_its_answer(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Attack: the child stores a PASS verdict under the judge's key for the answer it
    # reports, hoping the gate's judge reuses it instead of asking.
    from gate.judging.judge import judge_input, pin_fingerprint
    from gate.produce.recordings import request_key
    from gate.suite.judgepin import JudgePin

    module = _judged_suite(project)
    pin = {"provider": "python", "target": f"{module}:grade"}
    _base(project, monkeypatch)
    fingerprint = pin_fingerprint(JudgePin.model_validate(pin))
    planted = request_key(fingerprint, judge_input("greets", {"question": "hello"}, "bye"), 0)
    path = project.root / "recordings" / "greet.json"
    project.write_system(
        "import json, pathlib\n"
        "def answer(case_input, system):\n"
        f"    path = pathlib.Path({str(path)!r})\n"
        "    document = json.loads(path.read_text())\n"
        f"    document['responses'][{planted!r}] = {{'system': 'judge', 'fingerprint': {fingerprint!r},\n"
        "        'sample': 0, 'output': {'text': 'PASS: planted'}}\n"
        "    path.write_text(json.dumps(document))\n"
        "    return 'bye'\n"
    )
    _edit_outputs(project, "greet", "plain: hello again")
    _commit(project)
    code, out = _verify_in_a_process(project)
    assert "recorded again by CI, live: greet" in out, out
    assert code == 1, out


# --- without the provider key: what is left to `unverified_critical` ------------------------


def test_a_keyless_check_cannot_hide_its_changed_recordings_from_unverified_critical(
    forged: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Attack (a fork: no provider key, verify records nothing): the PR moves its recordings
    # to the repository's root (`recordings:` decides no verdict) and adds a case named like
    # a JSON file the base has there (renovate.json), so the base's file is read as a
    # recording, raises, and the whole changed/unsealed account becomes "unknown":
    # `unverified_critical: block` then sees no case judged on the author's recordings.
    config = yaml.safe_load(forged.config_path.read_text())
    config["system"]["api_key_env"] = "BOT_KEY"  # the base's system needs a key...
    config["verify"] = "changed"
    forged.write_config(**config)
    (forged.root / "renovate.json").write_text('{"extends": ["config:base"]}\n')
    _commit(forged, "keyed, verified")
    git("checkout", "-q", "main", cwd=forged.root)
    git("merge", "-q", "change", cwd=forged.root)
    git("checkout", "-q", "change", cwd=forged.root)
    monkeypatch.delenv("BOT_KEY", raising=False)  # ...that a fork's run does not have
    forged.write_system("def answer(case_input, system):\n    return case_input['question']\n")
    config["recordings"] = "."
    forged.write_config(**config)
    forged.write_cases(
        [
            case("greet", "hello", contains="hello", fields_={"critical": True}),
            case("echo", "world", contains="world"),
            case("renovate", "renovate", contains="renovate"),
        ]
    )
    (forged.root / "renovate.json").unlink()  # the PR's copy becomes that case's recording
    assert main(["record", "--quiet"]) == 0  # the author's recordings, made with passing code
    forged.write_system(
        "def answer(case_input, system):\n"
        "    return 'nothing useful' if case_input['question'] == 'hello' else case_input['question']\n"
    )
    _commit(forged)
    code, out = _verify(capsys, monkeypatch)
    assert "not recorded again: BOT_KEY is not set" in out, out
    assert code == 1, out
    assert "not sealed by CI: " in out and "greet" in out.split("not sealed by CI: ")[1], out


def test_a_keyless_fork_check_runs_none_of_the_pull_requests_code(
    project: Project, monkeypatch: pytest.MonkeyPatch, llm_server: FakeLLMServer
) -> None:
    # Attack: the base's system is hosted (needs OPENAI_API_KEY; a fork has none); the PR
    # switches it to a python system: needed_keys reads the PR's config, finds no key to need,
    # and verify runs the fork's code live (with network) in what was a replayed check.
    project.write_cases(HOSTED_CASES)
    _hosted(project, llm_server, "You answer. v1")
    config = yaml.safe_load(project.config_path.read_text())
    config["verify"] = "changed"
    project.write_config(**config)
    _base(project, monkeypatch)
    marker = project.root / "ran.txt"
    project.write_system(
        "import pathlib, sys\n"
        f"pathlib.Path({str(marker)!r}).write_text(' '.join(sys.orig_argv))\n"
        "def answer(case_input, system):\n"
        "    return case_input['question']\n"
    )
    config["system"] = {"name": "bot", "provider": "python", "target": f"{project.module}:answer"}
    project.write_config(**config)
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    assert main(["record", "--quiet"]) == 0
    marker.unlink()
    _commit(project)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    main(["check", "--base", "main", "--quiet"])
    assert not marker.exists(), marker.read_text()


# --- the Action, as shipped: the sandbox the run records in ---------------------------------


def test_verify_records_in_the_actions_sandbox(runner: Any) -> None:
    # Attack surface: the Action runs the recording child as the sandbox user, which may write
    # only its own folder, not the workspace's recordings: any pull request that changes a
    # recording makes the check exit 2 (verify: changed cannot work under sandbox: require).
    import shutil

    from tests.fakes.actions import REPO, open_pull_request

    shutil.copytree(REPO / "examples", runner.workspace / "examples")
    _commit_at(runner.workspace)
    runner.base_sha = git("rev-parse", "HEAD", cwd=runner.workspace)

    def edit(root: Path) -> None:
        path = root / "recordings" / "support" / "legal-threat-escalation.json"
        document = json.loads(path.read_text())
        for entry in document["responses"].values():
            entry["output"]["text"] += " (edited)"
        path.write_text(json.dumps(document, indent=2))

    open_pull_request(runner.workspace, edit)
    finished = runner.run(config="casegate.yml", verify="changed", sandbox="require",
                          env_extra={seal.KEY_ENV: KEY})  # fmt: skip
    log = finished.stdout + finished.stderr
    assert finished.returncode != 2, log
    assert "verify: recorded again by CI, live: legal-threat-escalation" in log, log


def _commit_at(folder: Path) -> None:
    git("add", "-A", cwd=folder)
    git("commit", "-qm", "examples", cwd=folder)


# --- ordering: verify runs the pull request's code before the ground is read -----------------


def test_verify_child_cannot_rewrite_the_base_extraction_before_the_baseline_is_read(
    forged: Project,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # Attack: without the sandbox (not root; or `sandbox: off`, the only way verify can write
    # the workspace in the Action), the recording child rewrites the base commit's extracted
    # baseline (read by read_ground *after* verify) so the critical regression is "no change".
    # The extraction goes to a temporary folder of this test's own, and the attack reaches
    # only that one: one that rewrote every /tmp/casegate-base-* would rewrite the base of
    # whichever test ran beside it.
    private = tmp_path_factory.mktemp("scratch")
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    forged.write_system(
        "import glob, json\n"
        "def answer(case_input, system):\n"
        f"    for path in glob.glob('{private}/casegate-base-*/base-*/baselines/demo.json'):\n"
        "        data = json.load(open(path))\n"
        "        for c in data['cases']:\n"
        "            if c['id'] == 'greet':\n"
        "                c.update(status='fail', passed=False, passes=0, pass_rate=0.0, critical=False)\n"
        "        json.dump(data, open(path, 'w'))\n"
        "    return 'nothing useful' if case_input['question'] == 'hello' else 'world'\n"
    )
    _edit_outputs(forged, "greet", "hello, forged")
    _commit(forged)
    code, out = _verify(capsys, monkeypatch)
    assert "recorded again by CI, live: greet" in out, out
    assert code == 1, out


def test_verify_child_reporting_a_malformed_tool_call_is_no_traceback(
    forged: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Attack: the PR's code, in the recording child, rewrites the results it reports so a
    # sample carries a tool call ToolCall refuses; seal_run validates it unguarded.
    forged.write_system(
        "import gate.results as _r\n"
        "_write = _r.RunResults.write\n"
        "def write(self, stream):\n"
        "    for c in self.cases:\n"
        "        for s in c.outputs:\n"
        "            s.tool_calls = [{'bogus': 1}]\n"
        "    return _write(self, stream)\n"
        "_r.RunResults.write = write\n"
        "def answer(case_input, system):\n"
        "    return 'nothing useful' if case_input['question'] == 'hello' else 'world'\n"
    )
    _edit_outputs(forged, "greet", "hello, forged")
    _commit(forged)
    done = _gate(forged, "check", "--base", "main", "--quiet", "--verify", "changed",
                 **{seal.KEY_ENV: KEY})  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode in (1, 2), done.stdout + done.stderr


def test_verify_in_the_base_config_leaves_a_sharded_check_able_to_gate(
    forged: Project,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    # Break: `verify: changed` in the base config runs in each shard job (its own workspace),
    # never in the merge job (parts), whose checkout still holds the author's recordings:
    # recheck finds the parts' outputs "not the recorded one" and every such PR exits 2.
    forged.config_path.write_text(forged.config_path.read_text() + "verify: changed\n")
    _commit(forged, "verify")
    git("checkout", "-q", "main", cwd=forged.root)
    git("merge", "-q", "change", cwd=forged.root)
    git("checkout", "-q", "change", cwd=forged.root)
    _edit_outputs(forged, "greet", "hello, forged")
    _edit_outputs(forged, "echo", "world, forged")
    _commit(forged)
    parts = [str(tmp_path / f"part{i}.json") for i in (1, 2)]
    for index, part in enumerate(parts, 1):
        monkeypatch.setenv(seal.KEY_ENV, KEY)
        args = ["check", "--base", "main", "--quiet", "--shard", f"{index}/2", "--out", part]
        assert main(args) == 0
        git("checkout", "-q", "--", ".", cwd=forged.root)  # each job: a fresh checkout
    code, out = _verify_args(capsys, monkeypatch, "--parts", *parts)
    assert code == 1, out  # greet fails live: a block, not "could not judge"


def _verify_args(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *extra: str
) -> tuple[int, str]:
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    code = main(["check", "--base", "main", "--quiet", *extra])
    out, err = capsys.readouterr()
    return code, out + err
