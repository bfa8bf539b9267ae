"""Attacks on the verified-recordings manifest (db2be85). Each asserts the SAFE outcome."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from gate.errors import CasegateError
from gate.produce import seal
from gate.produce.recordings import SCHEMA, RecordingStore
from gate.produce.verified import adopt, read_manifest, seals_of, write_manifest, written_since
from tests.produce.test_seal import KEY

K = seal.key_from(KEY)


def _sealed(case_id: str, request: str, captured_at: str, text: str = "hi") -> dict:
    entry = {"captured_at": captured_at, "captured_by": "ci", "output": {"text": text}}
    return {**entry, "seal": K.seal(case_id, request, entry)}


def _file(folder: Path, case_id: str, responses: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"schema": SCHEMA, "case": case_id, "responses": responses}
    (folder / f"{case_id}.json").write_text(json.dumps(doc))


@pytest.fixture
def holding(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process holds the key, as the gate does (its writes are sealed)."""
    monkeypatch.setattr(seal, "_held", K)


def test_written_since_excludes_committed_sealed_entry_from_another_run(
    tmp_path: Path, holding: None
) -> None:
    """The PR commits CI-sealed entries copied from another run (another PR's artifact),
    dated now or in the future. This verification never wrote them: they must not be in
    the manifest. (Fixed: what verification wrote is told by identity, a snapshot of the
    seals before it ran, never by a date an entry carries.)"""
    folder = tmp_path / "rec"
    now = "2026-12-02T19:00:00+00:00"
    _file(
        folder,
        "greet",
        {
            "copied": _sealed("greet", "copied", now, "other PR's answer"),
            "future": _sealed("greet", "future", "9999-01-01T00:00:00+00:00"),
        },
    )
    store = RecordingStore(folder)
    before = seals_of(store, ["greet"])  # taken as verify takes it, before it records
    store.put_entry("greet", "fresh", _sealed("greet", "fresh", now, "CI's answer now"))
    found = written_since(store, ["greet"], K, before)
    assert set(found.get("greet", {})) == {"fresh"}


def test_a_future_dated_sealed_answer_on_main_never_bars_cis_answers(
    tmp_path: Path, holding: None
) -> None:
    store = RecordingStore(tmp_path / "rec")
    store.put_entry("greet", "r", _sealed("greet", "r", "9999-01-01T00:00:00+00:00", "stuck"))
    fresh = _sealed("greet", "r", "2026-12-02T19:00:00+00:00", "CI's answer")
    adopted = adopt({"greet": {"r": fresh}}, store, {"greet"}, K)
    assert adopted.written == 1 and store.get_entry("greet", "r") == fresh


def _manifest(tmp_path: Path, entries: dict) -> Path:
    path = tmp_path / "art" / "verified-recordings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_manifest(path, K, "s", "h" * 40, entries)
    return path


def test_adopt_through_symlinked_case_file_stays_inside(tmp_path: Path) -> None:
    """Main (after the merge) holds recordings/greet.json as a symlink out of the folder."""
    outside = tmp_path / "outside.json"
    _file(tmp_path, "outside", {})
    before = outside.read_text()
    folder = tmp_path / "rec"
    folder.mkdir()
    (folder / "greet.json").symlink_to(outside)
    entries = read_manifest(
        _manifest(tmp_path, {"greet": {"r": _sealed("greet", "r", "2030-01-01T00:00:00+00:00")}}),
        K,
        "s",
        "h" * 40,
    )
    with contextlib.suppress(CasegateError):
        adopt(entries, RecordingStore(folder), {"greet"}, K)
    assert outside.read_text() == before


@pytest.mark.parametrize("shape", ["dir", "list", "responses-list", "entry-list", "huge-nesting"])
def test_adopt_on_malformed_folder_fails_cleanly(tmp_path: Path, shape: str) -> None:
    folder = tmp_path / "rec"
    folder.mkdir()
    path = folder / "greet.json"
    if shape == "dir":
        path.mkdir()
    elif shape == "list":
        path.write_text("[]")
    elif shape == "responses-list":
        path.write_text(json.dumps({"schema": SCHEMA, "case": "greet", "responses": []}))
    elif shape == "entry-list":
        path.write_text(json.dumps({"schema": SCHEMA, "case": "greet", "responses": {"r": [1]}}))
    else:
        path.write_text(
            '{{"schema": "{}", "responses": {{"r": {}1{}}}}}'.format(SCHEMA, "[" * 5000, "]" * 5000)
        )
    entries = read_manifest(
        _manifest(tmp_path, {"greet": {"r": _sealed("greet", "r", "2030-01-01T00:00:00+00:00")}}),
        K,
        "s",
        "h" * 40,
    )
    # A clean, named error is fine; a traceback is not.
    with contextlib.suppress(CasegateError):
        adopt(entries, RecordingStore(folder), {"greet"}, K)


def test_adopt_refuses_case_id_escaping_folder(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    folder.mkdir()
    entries = {"../evil": {"r": _sealed("../evil", "r", "2030-01-01T00:00:00+00:00")}}
    got = adopt(entries, RecordingStore(folder), {"greet"}, K)
    assert got.written == 0 and not (tmp_path / "evil.json").exists()


def test_manifest_symlink_in_artifact_not_followed_outside(tmp_path: Path) -> None:
    """A fork's workflow uploads an artifact whose manifest is a symlink: read_manifest
    must fail cleanly (it can't be sealed anyway)."""
    art = tmp_path / "art2"
    art.mkdir()
    (art / "verified-recordings.json").symlink_to("/etc/passwd")
    with pytest.raises(CasegateError):
        read_manifest(art, K, "s", "h" * 40)
