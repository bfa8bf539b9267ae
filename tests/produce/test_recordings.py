"""Recordings: one file per case, shared safely between recorders, clear about bad files."""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate import cli as cli_module
from gate import secrets
from gate.errors import CasegateError, ResultsError
from gate.outputs import Output
from gate.produce.recordings import WORK_FOLDER, RecordingStore, system_fingerprint
from tests.conftest import Project, case
from tests.fakes.llm_server import FakeLLMServer
from tests.judging.test_judge import grading_judge, judged_project, write_labels

SYSTEM = {"name": "s", "provider": "python", "target": "m:f"}


def put(store: RecordingStore, case_id: str, key: str, text: str = "answer") -> None:
    store.put(case_id, key, Output(text=text), system=SYSTEM, fingerprint="fp", sample=0)


def _record(folder: str, name: str, count: int) -> None:
    """One recorder process: `count` responses over four cases, as a record run writes them."""
    store = RecordingStore(Path(folder))
    for number in range(count):
        put(store, f"case-{number % 4}", f"{name}-{number}")


def test_two_recorders_on_one_folder_lose_nothing(tmp_path: Path) -> None:
    # Before the lock, each recorder kept its own copy of a case's file and wrote it
    # back whole, dropping what the other had written since (2 of 10 runs lost some).
    fork = multiprocessing.get_context("fork")
    for trial in range(10):
        folder = tmp_path / f"trial-{trial}"
        recorders = [
            fork.Process(target=_record, args=(str(folder), name, 40)) for name in ("a", "b")
        ]
        for recorder in recorders:
            recorder.start()
        for recorder in recorders:
            recorder.join(60)
            assert recorder.exitcode == 0
        found = {
            key
            for path in folder.glob("*.json")
            for key in json.loads(path.read_text())["responses"]
        }
        assert found == {f"{name}-{n}" for name in ("a", "b") for n in range(40)}, trial


def test_a_killed_recorder_leaves_nothing_for_git_and_is_swept(tmp_path: Path) -> None:
    folder = tmp_path / "recordings"
    put(RecordingStore(folder), "kept", "k1")
    # A recorder that stops for good between writing its temporary and moving it in.
    code = textwrap.dedent(
        f"""
        import os, time
        from pathlib import Path
        from gate.outputs import Output
        from gate.produce.recordings import RecordingStore
        os.replace = lambda *args: time.sleep(3600)
        RecordingStore(Path({str(folder)!r})).put(
            "doomed", "k2", Output(text="x"), system={{}}, fingerprint="f", sample=0
        )
        """
    )
    child = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2])
    work = folder / WORK_FOLDER
    try:
        for _ in range(600):
            if list(work.glob("*.casegate-tmp")):
                break
            time.sleep(0.05)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    (leftover,) = work.glob("*.casegate-tmp")
    assert sorted(p.name for p in folder.iterdir()) == [WORK_FOLDER, "kept.json"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    listed = subprocess.run(
        ["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert listed.splitlines() == ["?? recordings/kept.json"]  # .casegate/ ignores itself
    # The next recorder to write sweeps what the killed one left.
    put(RecordingStore(folder), "kept", "k3")
    assert not leftover.exists()
    assert set(json.loads((folder / "kept.json").read_text())["responses"]) == {"k1", "k3"}


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"[]", "not a casegate.recording/1 file; delete it and re-record"),
        (b'"text"', "not a casegate.recording/1 file; delete it and re-record"),
        (b'{"schema": "casegate.recording/1", "responses": [', "not a valid recording (Expecting"),
        (b'{"text": "caf\xe9"}', "not a valid recording ('utf-8' codec can't decode"),
        (b"[" * 100_000, "not a valid recording (nested more than 100 levels deep)"),
        (b'{"x": ' + b"[" * 120 + b"]" * 120 + b"}", "nested more than 100 levels deep"),
        (
            b'{"n": ' + b"7" * 5000 + b"}",
            "not a valid recording (a number has more than 4300 digits)",
        ),
    ],
)
def test_a_bad_recording_file_is_one_error_naming_it(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    store = RecordingStore(tmp_path)
    store.path_for("c").write_bytes(content)
    for read in (lambda: store.get("c", "k"), lambda: put(store, "c", "k")):
        with pytest.raises(ResultsError) as caught:
            read()
        (message,) = caught.value.problems
        assert message.startswith(f"{store.path_for('c')}: ")
        assert problem in message


def test_an_unreadable_recording_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path)
    store.path_for("c").mkdir()
    with pytest.raises(
        ResultsError, match=r"c\.json: cannot read this recording \(Is a directory\)"
    ):
        store.get("c", "k")


def test_recordings_are_written_with_secrets_masked(tmp_path: Path) -> None:
    secrets.remember("sk-recorded-0f9e8d7c6b5a")
    store = RecordingStore(tmp_path)
    put(store, "c", "k", text="the key is sk-recorded-0f9e8d7c6b5a")
    written = store.path_for("c").read_text()
    assert "sk-recorded-0f9e8d7c6b5a" not in written
    assert store.get("c", "k") == Output(text=f"the key is {secrets.MASK}")


def test_max_wait_s_is_transport_not_part_of_the_fingerprint() -> None:
    assert system_fingerprint({**SYSTEM, "max_wait_s": 10}) == system_fingerprint(SYSTEM)
    assert system_fingerprint({**SYSTEM, "model": "other"}) != system_fingerprint(SYSTEM)


# --- housekeeping: `casegate recordings prune` and `casegate recordings mv` ----------


@pytest.fixture
def cli() -> Callable[[list[str]], int]:
    return cli_module.main


def edit_config(path: Path, **changes: Any) -> None:
    config = yaml.safe_load(path.read_text())
    for dotted_key, value in changes.items():
        *parents, last = dotted_key.split("__")
        target = config
        for parent in parents:
            target = target.setdefault(parent, {})
        target[last] = value
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def responses_in(folder: Path) -> dict[str, set[str]]:
    return {
        path.name: set(json.loads(path.read_text())["responses"])
        for path in sorted(folder.glob("*.json"))
    }


def test_prune_keeps_what_any_given_config_uses_and_lists_before_it_deletes(
    project: Project, cli: Callable[[list[str]], int], capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("a", "hi", contains="hi"), case("b", "there", contains="there")])
    candidate = project.root / "candidate.yml"
    candidate.write_text(project.config_path.read_text())
    edit_config(candidate, system__style="fancy", system__name="echo-fancy")
    for config in ("casegate.yml", "candidate.yml"):
        assert cli(["record", "-c", config, "--quiet"]) == 0
    # Case a is deleted and case b asks another question: what both recorded for them is stale.
    project.write_cases([case("b", "there?", contains="there")])
    for config in ("casegate.yml", "candidate.yml"):
        assert cli(["record", "-c", config, "--quiet"]) == 0
    folder = project.root / "recordings"
    before = {path.name: path.read_bytes() for path in folder.glob("*.json")}
    capsys.readouterr()

    both = ["-c", "casegate.yml", "-c", "candidate.yml"]
    assert cli(["recordings", "prune", "--dry-run", *both]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "configs considered: casegate.yml, candidate.yml"
    assert out[1] == "recordings: keeping what casegate.yml and candidate.yml use"
    assert out[2] == "recordings/a.json: no current case files its recordings here (2 responses)"
    assert out[3] == "recordings/b.json: 2 of 4 responses unused"
    assert sorted(line.split(", ", 1)[1] for line in out[4:6]) == [
        f"echo, python, captured {dt.date.today().isoformat()}",
        f"echo-fancy, python, captured {dt.date.today().isoformat()}",
    ]
    assert all(re.fullmatch(r"  [0-9a-f]{24}  sample 0, .+", line) for line in out[4:6])
    assert (
        out[6]
        == "would delete 1 file and 2 responses inside other files (--dry-run: nothing was deleted)"
    )
    assert {path.name: path.read_bytes() for path in folder.glob("*.json")} == before

    assert cli(["recordings", "prune", *both]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "deleted 1 file and 2 responses inside other files"
    )
    assert set(responses_in(folder)) == {"b.json"}
    assert len(responses_in(folder)["b.json"]) == 2
    # Both configs still replay: nothing either of them uses was deleted.
    for config in ("casegate.yml", "candidate.yml"):
        assert cli(["run", "-c", config, "--quiet", "--out", f"{config}.json"]) == 0
    assert cli(["recordings", "prune", *both]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "nothing to prune: every recording is in use"

    # With the default config only, the candidate's recordings are not kept, and it says so.
    assert cli(["recordings", "prune", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == [
        "configs considered: casegate.yml",
        "  (pass -c once for every config that replays from the same recordings folder)",
    ]
    assert out[-1].startswith("would delete 0 files and 1 response inside other files")


def test_prune_keeps_every_sample_a_case_can_ask_for(
    project: Project, cli: Callable[[list[str]], int], capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("a", "hi", contains="hi")])
    edit_config(project.config_path, samples=3)
    assert cli(["record", "--quiet"]) == 0
    edit_config(project.config_path, samples="auto", adaptive={"start": 1, "step": 1, "max": 3})
    capsys.readouterr()
    assert cli(["recordings", "prune", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "nothing to prune: every recording is in use"
    # A run of 2 still keeps the third: a baseline is estimated from three times 2 samples.
    edit_config(project.config_path, samples=2)
    assert cli(["recordings", "prune", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "nothing to prune: every recording is in use"
    edit_config(project.config_path, samples=2, baseline_samples=2)
    assert cli(["recordings", "prune"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-3] == "recordings/a.json: 1 of 3 responses unused"
    assert out[-2].endswith(f"sample 2, echo, python, captured {dt.date.today().isoformat()}")
    assert cli(["run", "--quiet"]) == 0


def test_prune_keeps_the_judge_verdicts_current_outputs_use(
    project: Project,
    llm_server: FakeLLMServer,
    cli: Callable[[list[str]], int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    llm_server.reply = grading_judge
    judged_project(project, llm_server)
    assert cli(["record", "--quiet"]) == 2  # the garbled verdict: recorded, and an error
    # A new system answers otherwise: its outputs, and the verdicts on them, replace the old.
    edit_config(project.config_path, system__style="fancy")
    assert cli(["record", "--quiet"]) == 2
    folder = project.root / "recordings"
    assert [len(keys) for keys in responses_in(folder).values()] == [4, 4, 4, 2]
    capsys.readouterr()
    assert cli(["recordings", "prune"]) == 0
    out = capsys.readouterr().out
    assert "recordings/apology.json: 2 of 4 responses unused" in out
    assert "deleted 0 files and 7 responses inside other files" in out  # 3 verdicts, 4 outputs
    assert [len(keys) for keys in responses_in(folder).values()] == [2, 2, 2, 1]
    calls = len(llm_server.received)
    assert cli(["run", "--quiet", "--out", "replayed.json"]) == 0  # every verdict replays
    assert len(llm_server.received) == calls
    assert json.loads(Path("replayed.json").read_text())["summary"]["errors"] == 1  # garbled

    # Calibration verdicts are keyed on the labels' outputs, which prune cannot see:
    # under the calibrated pin, every verdict stays.
    labels = write_labels(project.root / "labels.jsonl", [("apology", "so sorry", "pass")])
    assert (
        cli(["judge", "calibrate", str(labels), "--mode", "record"]) == 1
    )  # 1 label: below the bar
    capsys.readouterr()
    assert cli(["recordings", "prune"]) == 0
    out = capsys.readouterr().out
    assert "casegate.yml's calibrated judge pin is kept" in out
    assert out.endswith("nothing to prune: every recording is in use\n")
    assert cli(["judge", "calibrate", str(labels)]) == 1  # replayed, no call
    assert len(llm_server.received) == calls + 1


def test_prune_keeps_every_ask_of_a_judge_asked_for_its_consistency(
    project: Project,
    llm_server: FakeLLMServer,
    cli: Callable[[list[str]], int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    # judge.consistency: 3 asks about every judged output three times, each its own
    # recording, and a replay needs all three: prune once kept only the first.
    llm_server.reply = grading_judge
    judged_project(project, llm_server, consistency=3)
    assert cli(["record", "--quiet"]) == 2  # the garbled verdict: recorded, and an error
    folder = project.root / "recordings"
    before = responses_in(folder)
    capsys.readouterr()
    assert cli(["recordings", "prune"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "nothing to prune: every recording is in use"
    assert responses_in(folder) == before
    calls = len(llm_server.received)
    assert cli(["run", "--quiet", "--out", "replayed.json"]) == 0  # every ask replays
    assert len(llm_server.received) == calls


def test_prune_leaves_a_file_it_cannot_read_alone_and_says_so(
    project: Project, cli: Callable[[list[str]], int], capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("a", "hi", contains="hi")])
    assert cli(["record", "--quiet"]) == 0
    broken = project.root / "recordings" / "notes.json"
    broken.write_text("[]")
    capsys.readouterr()
    assert cli(["recordings", "prune"]) == 0
    out = capsys.readouterr().out
    assert "warning: " in out and "notes.json: not a casegate.recording/1 file" in out
    assert "(left alone)" in out and broken.read_text() == "[]"


def test_prune_waits_for_a_recorder_holding_the_lock(
    project: Project, cli: Callable[[list[str]], int], capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("a", "hi", contains="hi")])
    assert cli(["record", "--quiet"]) == 0
    stale = project.root / "recordings" / "gone.json"
    stale.write_text(
        json.dumps({"schema": "casegate.recording/1", "case": "gone", "responses": {}})
    )
    pruner = threading.Thread(target=cli, args=(["recordings", "prune"],))
    with RecordingStore(project.root / "recordings").exclusive():
        pruner.start()
        pruner.join(0.5)
        # Not a timing assert: whatever the machine's speed, prune cannot get past the lock.
        assert pruner.is_alive() and stale.exists()
    pruner.join()
    assert not stale.exists()


def test_mv_moves_a_renamed_cases_recordings(
    project: Project, cli: Callable[[list[str]], int], capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("a", "hi", contains="hi"), case("b", "yo", contains="yo")])
    assert cli(["record", "--quiet"]) == 0
    project.write_cases([case("a-renamed", "hi", contains="hi"), case("b", "yo", contains="yo")])
    assert cli(["run", "--quiet"]) == 2  # replay misses the renamed case
    capsys.readouterr()
    assert cli(["recordings", "mv", "a", "a-renamed"]) == 0
    assert capsys.readouterr().out == (
        "renamed recordings/a.json → recordings/a-renamed.json (case 'a' → 'a-renamed')\n"
    )
    folder = project.root / "recordings"
    assert sorted(p.name for p in folder.glob("*.json")) == ["a-renamed.json", "b.json"]
    assert json.loads((folder / "a-renamed.json").read_text())["case"] == "a-renamed"
    assert cli(["run", "--quiet"]) == 0


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ("a", "b", "recordings/b.json: case 'b' already has recordings"),
        ("missing", "c", "recordings/missing.json: no recording file for case 'missing'"),
        ("a", "../escape", "NEW '../escape' is not a case id"),
        ("a/b", "c", "OLD 'a/b' is not a case id"),
    ],
)
def test_mv_refuses_and_changes_nothing(
    project: Project,
    cli: Callable[[list[str]], int],
    capsys: pytest.CaptureFixture[str],
    old: str,
    new: str,
    problem: str,
) -> None:
    project.write_cases([case("a", "hi", contains="hi"), case("b", "yo", contains="yo")])
    assert cli(["record", "--quiet"]) == 0
    folder = project.root / "recordings"
    before = {path.name: path.read_bytes() for path in folder.glob("*.json")}
    capsys.readouterr()
    assert cli(["recordings", "mv", old, new]) == 2
    err = capsys.readouterr().err
    assert err.startswith("casegate: ") and problem in err
    assert {path.name: path.read_bytes() for path in folder.glob("*.json")} == before


def test_a_dry_run_writes_nothing_not_even_the_lock(
    project: Project, cli: Callable[[list[str]], int], capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("a", "hi", contains="hi")])
    folder = project.root / "recordings"
    folder.mkdir()
    stale = folder / "old.json"
    stale.write_text(json.dumps({"schema": "casegate.recording/1", "case": "old", "responses": {}}))
    assert cli(["recordings", "prune", "--dry-run"]) == 0
    assert "recordings/old.json: no current case files its recordings here (0 responses)" in (
        capsys.readouterr().out
    )
    assert sorted(p.name for p in folder.iterdir()) == ["old.json"]


def test_a_recording_that_names_a_key_twice_is_refused(tmp_path: Path) -> None:
    # json.loads keeps the last of two keys, while a reader of the file sees the first.
    store = RecordingStore(tmp_path)
    (tmp_path / "a.json").write_text(
        '{"schema": "casegate.recording/1", "case": "a", "responses": {}, "responses": {}}'
    )
    with pytest.raises(CasegateError, match="'responses' appears twice"):
        store.get("a", "k")
