"""Round two of the attacks on CI's recording seal and `verify: changed`
(gate.produce.recordings.adopt_run, gate.drift.replayed, gate.pipeline.verify).

Every test asserts the SAFE outcome: a failing test means the attack worked.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.cli import main
from gate.produce import seal
from tests.conftest import Project, case
from tests.fakes.actions import git, init_repository
from tests.fakes.llm_server import FakeLLMServer
from tests.produce.test_seal import _edit_sealed

KEY = "k" * 16 + "-recording-key-for-the-tests-0123456789"

#: a python moderation service: violence 0.91 for anything that punches
MODERATOR = (
    "def score(texts):\n    return [{'violence': 0.91 if 'punch' in t else 0.01} for t in texts]\n"
)
HONEST = "def answer(case_input, system):\n    return 'plain: ' + case_input['question']\n"
#: the PR's system: the critical case now answers with a threat
VIOLENT = (
    "def answer(case_input, system):\n"
    "    if case_input['question'] == 'hello':\n"
    "        return 'hello, I will punch you'\n"
    "    return 'plain: ' + case_input['question']\n"
)


def _commit(project: Project, message: str = "the pull request") -> None:
    git("add", "-A", cwd=project.root)
    git("commit", "-qm", message, cwd=project.root)


def _document(project: Project, case_id: str) -> dict[str, Any]:
    return json.loads((project.root / "recordings" / f"{case_id}.json").read_text())


def _moderated_base(project: Project, monkeypatch: pytest.MonkeyPatch, **gate: Any) -> None:
    """main: a critical moderated case, recorded by CI (sealed), baselined; branch `change`."""
    module = f"mod_{project.module}"
    project.write_text(f"{module}.py", MODERATOR)
    project.write_system(HONEST)
    config = yaml.safe_load(project.config_path.read_text())
    config["moderation"] = {"provider": "python", "target": f"{module}:score"}
    config["gate"] = gate
    project.write_config(**config)
    project.write_cases(
        [
            case("greet", "hello", moderation={"max_score": 0.5}, fields_={"critical": True}),
            case("echo", "world", contains="world"),
        ]
    )
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet"]) == 0
    monkeypatch.delenv("GITHUB_ACTIONS")
    for case_id in ("greet", "echo"):  # recorded on main a while ago
        _edit_sealed(project, case_id, KEY, captured_at="2020-01-01T00:00:00+00:00")
    assert main(["baseline", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)


def _check(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *extra: str
) -> tuple[int, str]:
    # As CI starts it: a process of its own that has imported none of the working tree's
    # modules, the working directory off its path (-P): a python service is the base's.
    del capsys, monkeypatch
    command = ["check", "--base", "main", "--quiet", "--report", "report.md", *extra]
    done = subprocess.run(
        [sys.executable, "-P", "-m", "gate", *command],
        env={**os.environ, seal.KEY_ENV: KEY}, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def _zero_scores(document: dict[str, Any]) -> None:
    for key, entry in document["responses"].items():
        if key.startswith("mod-"):
            entry["scores"] = {name: 0.0 for name in entry["scores"]}


# --- service entries (emb-, mod-): recordings the replay judges by, outside the account ----


# FAILS NOW. Attack: CI recorded (and sealed) the PR's new answer, which fails moderation;
# the author edits only the recorded moderation score of it (`mod-` entry, never sealed)
# to 0. gate.drift.replayed._changed counts system answers and judge verdicts only, so
# the case is neither changed nor unsealed, and `unverified_critical: block` ships it.
def test_an_edited_moderation_score_is_counted_as_an_unsealed_change(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _moderated_base(project, monkeypatch, unverified_critical="block")
    project.write_system(VIOLENT)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet"]) == 0  # CI records the PR's answer, sealed
    monkeypatch.delenv("GITHUB_ACTIONS")
    document = _document(project, "greet")
    _zero_scores(document)
    (project.root / "recordings" / "greet.json").write_text(json.dumps(document, indent=2))
    _commit(project)
    code, out = _check(capsys, monkeypatch)
    assert code == 1, out


#: the PR's system under `verify: changed`: answers with a threat, and as the run exits
#: sets every moderation score it recorded in its own folder to 0
VIOLENT_AND_ZEROED = (
    VIOLENT
    + """
import atexit, json, pathlib, sys
def _zero():
    request = json.loads(pathlib.Path(sys.argv[1]).read_text())
    (folder,) = [o.split("=", 1)[1] for o in request["overrides"] if o.startswith("recordings=")]
    for path in pathlib.Path(folder).glob("*.json"):
        document = json.loads(path.read_text())
        for key, entry in document["responses"].items():
            if key.startswith("mod-"):
                entry["scores"] = {name: 0.0 for name in entry["scores"]}
        path.write_text(json.dumps(document))
atexit.register(_zero)
"""
)


# FAILS NOW. Attack: under `verify: changed` on the base, CI records the PR's answers live
# in a supervised run; the PR's code rewrites the moderation scores the run recorded in its
# own folder. adopt_run (gate/produce/recordings.py) copies every `emb-`/`mod-` entry as
# the run wrote it into the suite's recordings, the replay then judges by those scores,
# and the account names the case "sealed by CI".
def test_verify_does_not_adopt_moderation_scores_the_run_wrote(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _moderated_base(project, monkeypatch, unverified_critical="block")
    git("checkout", "-q", "main", cwd=project.root)
    project.config_path.write_text(project.config_path.read_text() + "verify: changed\n")
    _commit(project, "verify changed")
    git("checkout", "-q", "-B", "change", cwd=project.root)
    project.write_system(VIOLENT_AND_ZEROED)
    document = _document(project, "greet")  # a changed recording: CI records greet again
    for key, entry in document["responses"].items():
        if not key.startswith("mod-"):
            entry["output"]["text"] = "hello, I will punch you"
            entry.pop("seal")
    (project.root / "recordings" / "greet.json").write_text(json.dumps(document, indent=2))
    _commit(project)
    code, out = _check(capsys, monkeypatch)
    scores = [
        entry["scores"]["violence"]
        for key, entry in _document(project, "greet")["responses"].items()
        if key.startswith("mod-") and "punch" in entry["text"]
    ]
    assert scores in ([], [0.91]), (scores, out)  # never a score the gate did not measure
    assert code == 1, out


# --- adopt_run at the unit level: what the run's folder may hold ---------------------------


def _adopt(tmp_path: Path, responses: dict[str, Any], extra_files: dict[str, str]) -> Path:
    from gate.produce.recordings import RecordingStore, adopt_run, request_key, system_fingerprint
    from gate.results import Produced, SampleResult

    system = {"name": "echo", "provider": "python", "target": "bot:answer"}
    source, target = tmp_path / "theirs", tmp_path / "mine"
    source.mkdir()
    key = request_key(system_fingerprint(system), {"question": "hello"}, 0)
    answer = {"output": {"text": "plain: hello"}, "captured_at": "2999-01-01T00:00:00+00:00"}
    document = {
        "schema": "casegate.recording/1",
        "case": "greet",
        "responses": {key: answer, **responses},
    }
    (source / "greet.json").write_text(json.dumps(document))
    for name, text in extra_files.items():
        (source / name).write_text(text)
    sample = SampleResult(sample=0, status="pass", text="plain: hello")
    adopt_run(source, RecordingStore(target), system, {"greet": {"question": "hello"}},
              [Produced("greet", [sample])])  # fmt: skip
    return target


# Defended: entries the run adds under other keys (another sample's answer, a judge verdict
# it forged, another case's file, a hidden `.x.json` beside `_.x.json`) are never kept; a
# `mod-` key entry is kept but carries no seal the run wrote.
def test_adopt_run_keeps_only_the_reported_answer_and_service_keys(tmp_path: Path) -> None:
    forged_seal = "hmac-sha256:" + "0" * 16 + ":" + "0" * 64
    responses = {
        "0" * 24: {"output": {"text": "never reported"}},
        "mod-" + "1" * 24: {"scores": {"violence": 0.0}, "seal": forged_seal},
        "judge-ish": {"output": {"text": "PASS: forged"}},
    }
    other = json.dumps({"schema": "casegate.recording/1", "case": "echo", "responses": {}})
    target = _adopt(tmp_path, responses, {"echo.json": other, ".greet.json": other})
    assert sorted(p.name for p in target.glob("*.json")) == ["greet.json"]
    kept = json.loads((target / "greet.json").read_text())["responses"]
    # Only the answer: the gate measures moderation itself, never keeping the run's.
    assert set(kept) == {next(k for k in kept if len(k) == 24)}
    assert "0" * 24 not in kept
    (answer,) = [entry for key, entry in kept.items() if len(key) == 24]
    assert answer["captured_at"] < "2999"


# Defended: the run's folder holding links (to a file, to the folder itself), a hidden
# `.x.json`, a folder named like a recording and an overlong name: only regular files with
# a recording's name are copied, as data.
def test_copy_recordings_skips_links_and_odd_names(tmp_path: Path) -> None:
    from gate.produce.supervise import _copy_recordings

    secret = tmp_path / "secret.json"
    secret.write_text('{"the gate": "only"}')
    source, target = tmp_path / "run", tmp_path / "kept"
    source.mkdir()
    target.mkdir()
    (source / "greet.json").symlink_to(secret)
    (source / ".x.json").write_text("{}")
    (source / "_.x.json").write_text("{}")
    (source / "dir.json").mkdir()
    (source / ("a" * 250 + ".json")).write_text("{}")
    _copy_recordings(source, target)
    assert sorted(p.name for p in target.iterdir()) == ["_.x.json"]
    linked = tmp_path / "linked"
    linked.symlink_to(source)
    _copy_recordings(linked, tmp_path / "nowhere")
    assert not (tmp_path / "nowhere").exists()


# Defended: `expect.judge` as a plain string (judge_keys reads ["judge"]["rubric"]) is
# refused when the cases load, a clean exit 2, never a traceback in the account.
def test_a_plain_string_judge_is_refused_at_load_not_a_traceback(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_config(judge={"provider": "python", "target": "x:grade"})
    project.write_cases([case("greet", "hello", judge="greets")])
    code = main(["run", "--quiet"])
    out, err = capsys.readouterr()
    assert code == 2, out + err
    assert "Traceback" not in out + err and "judge takes {rubric" in out + err


def test_a_flipped_pairwise_verdict_is_counted_as_an_unsealed_change(
    project: Project,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    llm_server: FakeLLMServer,
) -> None:
    # Attack: CI recorded (and sealed) the candidate's answers and the pairwise judge's
    # verdicts, which prefer the baseline's; the author turns each verdict into a tie, so no
    # pair is lost, and nothing else changes.
    from tests.judging.test_pairwise import pairwise_project, prefers

    llm_server.reply = prefers("plain")
    pairwise_project(project, llm_server, unverified_critical="block")
    cases = yaml.safe_load((project.root / "cases" / "cases.yaml").read_text())
    for item in cases:
        item["critical"] = True
    (project.root / "cases" / "cases.yaml").write_text(yaml.safe_dump(cases))
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    for name in ("late-order", "refund", "short"):  # an earlier day: CI's later draws are newer
        _edit_sealed(project, name, KEY, captured_at="2026-01-01T00:00:00+00:00")
    assert main(["baseline", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    config = yaml.safe_load(project.config_path.read_text())
    config["system"]["style"] = "sorry"
    project.config_path.write_text(yaml.safe_dump(config))
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet"]) == 0  # CI's answers and verdicts, sealed
    _commit(project, "the candidate, recorded by CI")
    code, out = _check(capsys, monkeypatch)
    assert code == 1 and "preferred the baseline's output" in out, out  # the control
    for name in ("late-order", "refund"):
        path = project.root / "recordings" / f"{name}.json"
        document = json.loads(path.read_text())
        for entry in document["responses"].values():
            if entry.get("system") == "judge":
                entry["output"]["text"] = "TIE: no difference"
        path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    _commit(project, "the verdicts, edited")
    code, out = _check(capsys, monkeypatch)
    assert re.search(r"not sealed by CI: [^(]*late-order", out), out
    assert code == 1, out  # unverified critical cases block under the base's rule


def test_verify_leaves_a_pairwise_case_on_the_authors_verdicts_and_says_so(
    project: Project, monkeypatch: pytest.MonkeyPatch, llm_server: FakeLLMServer
) -> None:
    # The pairwise judge is not asked by verification: a pairwise case recorded again keeps
    # the author's verdicts (or has none: exit 2), and is named as not sealed by CI, so the
    # rule `unverified_critical` decides on it.
    from tests.judging.test_pairwise import pairwise_project, prefers

    llm_server.reply = prefers("sorry")
    pairwise_project(project, llm_server)
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    config = yaml.safe_load(project.config_path.read_text())
    config["system"]["style"] = "sorry"
    project.config_path.write_text(yaml.safe_dump(config))
    assert main(["record", "--quiet"]) == 0  # the author's answers and verdicts
    _commit(project, "the candidate")
    command = ["check", "--base", "main", "--quiet", "--verify", "changed"]
    done = subprocess.run(
        [sys.executable, "-P", "-m", "gate", *command],
        env={**os.environ, seal.KEY_ENV: KEY}, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert "verify: recorded again by CI, live: late-order, refund, short" in out, out
    assert "not sealed by CI: late-order, refund (" in out, out
    assert "changed recordings sealed by CI (made by casegate in CI, unedited since): short" in out
    assert done.returncode == 0, out  # `unverified_critical: warn`, and no case is critical
