"""Recordings: one file per case, shared safely between recorders, clear about bad files."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gate import secrets
from gate.errors import ResultsError
from gate.outputs import Output
from gate.recordings import WORK_FOLDER, RecordingStore, system_fingerprint

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
        from gate.recordings import RecordingStore
        os.replace = lambda *args: time.sleep(3600)
        RecordingStore(Path({str(folder)!r})).put(
            "doomed", "k2", Output(text="x"), system={{}}, fingerprint="f", sample=0
        )
        """
    )
    child = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).parent.parent)
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
