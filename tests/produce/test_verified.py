"""After the merge, the baseline refresh adopts what CI recorded for the pull request
(issue 22 §2: the `casegate-verified-recordings` artifact): only entries sealed under the
repository's key, for the suite's own cases, newer than the folder's own sealed answer
(gate.produce.verified, `casegate recordings adopt`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.produce import seal
from tests.conftest import Project
from tests.produce.test_seal import CASES, KEY, OTHER_KEY, _entries


def _artifact(project: Project, monkeypatch: pytest.MonkeyPatch, key: str = KEY) -> Path:
    """What a pull request's CI job uploads: the recordings folder after `verify: changed`
    recorded (here: every case) with the key, in CI. The project's own folder is left as
    the author made it."""
    folder = project.root / "recordings"
    authors = project.root.parent / f"{project.root.name}-authors"
    shutil.rmtree(authors, ignore_errors=True)
    shutil.copytree(folder, authors)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv(seal.KEY_ENV, key)
    assert main(["record", "--quiet"]) == 0
    monkeypatch.delenv("GITHUB_ACTIONS")
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    artifact = (
        project.root.parent
        / f"{project.root.name}-artifact-{len(list(project.root.parent.iterdir()))}"
    )
    shutil.copytree(folder, artifact)
    shutil.rmtree(folder)
    shutil.copytree(authors, folder)
    return artifact


def _edit_file(path: Path, change: Any) -> None:
    document = json.loads(path.read_text())
    for entry in document["responses"].values():
        change(entry)
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


@pytest.fixture
def authored(project: Project) -> Project:
    """The merged branch: recordings the author made on a laptop (unsealed)."""
    project.write_cases(CASES)
    assert main(["record", "--quiet"]) == 0
    return project


def test_ci_sealed_answers_replace_the_authors_and_nothing_else_moves(
    authored: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    artifact = _artifact(authored, monkeypatch)
    # The author's own (unsealed) file rides along in the uploaded folder.
    (artifact / "stray.json").write_text((authored.root / "recordings" / "echo.json").read_text())
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    capsys.readouterr()
    assert main(["recordings", "adopt", str(artifact)]) == 0
    out = capsys.readouterr().out
    assert "adopted 2 sealed recording(s)" in out and "(echo, greet)" in out
    assert "left out (never CI's sealed answers): 1 unsealed" in out
    key = seal.key_from(KEY)
    for case_id in ("greet", "echo"):
        (request, entry), *_ = _entries(authored, case_id).items()
        assert entry["captured_by"] == "ci"
        assert key.state(case_id, request, entry) == "sealed"
    # Adopting again writes nothing new (the key left the environment the first time).
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["recordings", "adopt", str(artifact)]) == 0
    assert "adopted 0 sealed recording(s)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("tamper", "reason"),
    [
        (lambda e: e["output"].__setitem__("text", "forged"), "1 broken"),
        (lambda e: e.__setitem__("captured_at", "2999-01-01T00:00:00+00:00"), "1 broken"),
        (lambda e: e.pop("seal"), "1 unsealed"),
    ],
)
def test_an_edited_entry_in_the_artifact_is_left_out(
    authored: Project,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tamper: Any,
    reason: str,
) -> None:
    artifact = _artifact(authored, monkeypatch)
    before = _entries(authored, "greet")
    _edit_file(artifact / "greet.json", tamper)
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    capsys.readouterr()
    assert main(["recordings", "adopt", str(artifact)]) == 0
    out = capsys.readouterr().out
    assert reason in out and "adopted 1 sealed recording(s)" in out
    assert _entries(authored, "greet") == before  # the author's entry stays as it was


def test_entries_sealed_under_another_key_are_left_out(
    authored: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    artifact = _artifact(authored, monkeypatch, key=OTHER_KEY)
    before = {c: _entries(authored, c) for c in ("greet", "echo")}
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    capsys.readouterr()
    assert main(["recordings", "adopt", str(artifact)]) == 0
    assert "2 other key" in capsys.readouterr().out
    assert {c: _entries(authored, c) for c in ("greet", "echo")} == before


def test_without_the_key_nothing_is_adopted(
    authored: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    artifact = _artifact(authored, monkeypatch)
    before = _entries(authored, "greet")
    assert main(["recordings", "adopt", str(artifact)]) == 2
    err = capsys.readouterr().err
    assert seal.KEY_ENV in err and "Traceback" not in err
    assert _entries(authored, "greet") == before


def test_other_suites_symlinks_and_bad_files_are_never_read_into_the_suite(
    authored: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    artifact = _artifact(authored, monkeypatch)
    # A sealed answer for a case this suite does not have.
    document = json.loads((artifact / "greet.json").read_text())
    document["case"] = "elsewhere"
    (artifact / "elsewhere.json").write_text(json.dumps(document))
    # A symlink to a sealed file outside the artifact, and one to a folder.
    outside = authored.root.parent / "outside"
    outside.mkdir()
    shutil.move(str(artifact / "echo.json"), outside / "echo.json")
    (artifact / "echo.json").symlink_to(outside / "echo.json")
    (artifact / "linked").symlink_to(outside, target_is_directory=True)
    (artifact / "broken.json").write_text("{not json")
    before = _entries(authored, "echo")
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    capsys.readouterr()
    assert main(["recordings", "adopt", str(artifact)]) == 0
    out = capsys.readouterr().out
    assert "adopted 1 sealed recording(s)" in out and "(greet)" in out
    assert "1 of no case in this suite" in out and "1 unreadable file(s)" in out
    assert _entries(authored, "echo") == before
    assert not (authored.root / "recordings" / "elsewhere.json").exists()


def test_a_newer_sealed_answer_in_the_folder_is_kept(
    authored: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    older = _artifact(authored, monkeypatch)
    _edit_file(older / "greet.json", lambda e: e.__setitem__("captured_at", "2001-01-01"))
    newer = _artifact(authored, monkeypatch)
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["recordings", "adopt", str(newer)]) == 0
    kept = _entries(authored, "greet")
    capsys.readouterr()
    # The older artifact's greet was edited after sealing: broken, so reseal it as CI would.
    key = seal.key_from(KEY)
    path = older / "greet.json"
    document = json.loads(path.read_text())
    for request, entry in document["responses"].items():
        entry["seal"] = key.seal("greet", request, entry)
    path.write_text(json.dumps(document))
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["recordings", "adopt", str(older)]) == 0
    assert "1 older than the folder's own sealed answer" in capsys.readouterr().out
    assert _entries(authored, "greet") == kept


def test_a_missing_folder_is_a_one_line_error(
    authored: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["recordings", "adopt", "nowhere"]) == 2
    err = capsys.readouterr().err
    assert "nowhere: not a folder of recordings" in err and "Traceback" not in err
