"""After the merge, the baseline refresh adopts exactly what CI verified for the pull
request (issue 22 §2): the check's sealed manifest, bound to the suite and the pull
request's head, and nothing else (gate.produce.verified, `casegate recordings adopt`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.produce import seal
from gate.produce.recordings import RecordingStore
from gate.produce.verified import MANIFEST, adopt, read_manifest, write_manifest
from tests.conftest import Project, case
from tests.fakes.actions import git, init_repository
from tests.produce.test_seal import KEY, OTHER_KEY

CASES = [
    case("greet", "hello", contains="hello", fields_={"critical": True}),
    case("echo", "world", contains="world"),
]


def _head(project: Project) -> str:
    return git("rev-parse", "HEAD", cwd=project.root).strip()


def _entries(project: Project, case_id: str) -> dict[str, Any]:
    path = project.root / "recordings" / f"{case_id}.json"
    return json.loads(path.read_text())["responses"]  # type: ignore[no-any-return]


@pytest.fixture
def verified(project: Project, monkeypatch: pytest.MonkeyPatch) -> tuple[Project, str]:
    """A pull request whose `greet` answer the author re-recorded on a laptop, checked with
    `verify: changed` and the key: CI's answer, sealed, in the manifest beside the results."""
    project.write_cases(CASES)
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    path = project.root / "recordings" / "greet.json"
    document = json.loads(path.read_text())
    for entry in document["responses"].values():
        entry["output"]["text"] = "hello, as the author recorded it"
        entry.pop("seal", None)
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    git("add", "-A", cwd=project.root)
    git("commit", "-qm", "the pull request", cwd=project.root)
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["check", "--base", "main", "--quiet", "--verify", "changed"]) in (0, 1)
    manifest = project.root / ".casegate" / MANIFEST
    assert manifest.is_file()
    # The merge: main now holds the author's recordings, as the branch committed them.
    git("checkout", "-q", "--", "recordings", cwd=project.root)
    return project, _head(project)


def test_the_manifest_holds_what_verify_sealed_bound_to_the_head(
    verified: tuple[Project, str],
) -> None:
    project, head = verified
    document = json.loads((project.root / ".casegate" / MANIFEST).read_text())
    assert document["head"] == head and document["suite"] == "demo"
    assert set(document["entries"]) == {"greet"}  # the one case the change touched
    (entry,) = document["entries"]["greet"].values()
    assert entry["output"]["text"] == "plain: hello"  # the echo bot, asked again by CI
    assert KEY not in json.dumps(document)


def test_adopt_takes_cis_answer_in_place_of_the_authors(
    verified: tuple[Project, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    project, head = verified
    (authored,) = _entries(project, "greet").values()
    assert authored["output"]["text"] == "hello, as the author recorded it"
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    capsys.readouterr()
    assert main(["recordings", "adopt", ".casegate", "--head", head]) == 0
    assert "adopted 1 sealed recording(s)" in capsys.readouterr().out
    ((request, entry),) = _entries(project, "greet").items()
    assert entry["output"]["text"] == "plain: hello"
    assert seal.key_from(KEY).state("greet", request, entry) == "sealed"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("head", "not on"),  # another run's manifest: verified on another commit
        ("entry", "its seal is not this repository's recording key's"),
        ("suite", "its seal is not this repository's recording key's"),
        ("key", "its seal is not this repository's recording key's"),
    ],
)
def test_a_manifest_of_another_run_or_edited_is_refused_whole(
    verified: tuple[Project, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    change: str,
    expected: str,
) -> None:
    project, head = verified
    path = project.root / ".casegate" / MANIFEST
    document = json.loads(path.read_text())
    if change == "entry":
        (entry,) = document["entries"]["greet"].values()
        entry["output"]["text"] = "hello from another pull request's code"
    elif change == "suite":
        document["suite"] = "other"
    path.write_text(json.dumps(document))
    before = _entries(project, "greet")
    monkeypatch.setenv(seal.KEY_ENV, OTHER_KEY if change == "key" else KEY)
    asked = "0" * 40 if change == "head" else head
    assert main(["recordings", "adopt", ".casegate", "--head", asked]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err, err
    assert _entries(project, "greet") == before


def test_without_the_key_or_the_manifest_nothing_is_adopted(
    verified: tuple[Project, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    project, head = verified
    before = _entries(project, "greet")
    assert main(["recordings", "adopt", ".casegate", "--head", head]) == 2
    assert seal.KEY_ENV in capsys.readouterr().err
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["recordings", "adopt", "recordings", "--head", head]) == 2
    err = capsys.readouterr().err
    assert "no manifest of verified recordings" in err and "Traceback" not in err
    assert _entries(project, "greet") == before


def _sealed(key: seal.RecordingKey, case_id: str, request: str, text: str, at: str) -> Any:
    entry = {"captured_at": at, "captured_by": "ci", "output": {"text": text}}
    return {**entry, "seal": key.seal(case_id, request, entry)}


def test_only_sealed_entries_of_the_suites_cases_not_older_than_the_folders_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key, other = seal.key_from(KEY), seal.key_from(OTHER_KEY)
    # The store seals what it writes with the key the process holds, as `recordings adopt`
    # holds it; without this the test leaned on a key another test left held.
    monkeypatch.setattr(seal, "_held", key)
    store = RecordingStore(tmp_path / "recordings")
    newer = _sealed(key, "kept", "r1", "made later", "2026-12-02T10:00:00+00:00")
    store.put_entry("kept", "r1", newer)
    entries = {
        "greet": {"r1": _sealed(key, "greet", "r1", "CI's", "2026-12-01T00:00:00+00:00")},
        "kept": {"r1": _sealed(key, "kept", "r1", "made earlier", "2026-12-01T00:00:00+00:00")},
        "moved": {"r1": _sealed(key, "greet", "r1", "sealed for greet", "2026-12-01")},
        "foreign": {"r1": _sealed(other, "foreign", "r1", "other key", "2026-12-01")},
        "stranger": {"r1": _sealed(key, "stranger", "r1", "no such case", "2026-12-01")},
    }
    write_manifest(tmp_path / MANIFEST, key, "demo", "abc", entries)
    found = read_manifest(tmp_path, key, "demo", "abc")
    adopted = adopt(found, store, {"greet", "kept", "moved", "foreign"}, key)
    assert adopted.written == 1 and adopted.cases == ("greet",)
    assert adopted.refused == {
        "older than the folder's own sealed answer": 1,
        "without a seal of this key": 2,  # moved to another case; sealed under another key
        "of no case in this suite": 1,
    }
    assert store.get_entry("kept", "r1") == newer
    assert store.get_entry("moved", "r1") is None
