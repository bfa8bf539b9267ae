"""The report says what was replayed: the recordings' capture dates, how many the pull request
changed against its base, and the last drift run on record; live runs say live."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.drift.report import SCHEMA as DRIFT_SCHEMA
from tests.conftest import Project, case
from tests.fakes.actions import git, init_repository

CASES = [
    case("greet", "hello", contains="hello", fields_={"critical": True}),
    case("echo", "world", contains="world"),
]


def _redate(project: Project, case_id: str, captured_at: str) -> None:
    """Set every response of a case's recording to `captured_at`, as an author could."""
    path = project.root / "recordings" / f"{case_id}.json"
    document = json.loads(path.read_text())
    for entry in document["responses"].values():
        entry["captured_at"] = captured_at
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


def _drift_report(created_at: str, **lists: list[str]) -> dict[str, Any]:
    names = ("flips", "changed_outputs", "model_changes", "fingerprint_changes")
    counts = {name: len(lists.get(name, [])) for name in names}
    return {
        "schema": DRIFT_SCHEMA,
        "suite": "demo",
        "system": "echo",
        "created_at": created_at,
        "casegate_version": "test",
        "max_flips": 0,
        "drifted": any(counts.values()),
        "summary": {
            "cases": 2,
            **counts,
            "never_recorded": 0,
            "errors": len(lists.get("errors", [])),
            "old_recordings": 0,
        },
        **lists,
    }


@pytest.fixture
def repo(project: Project) -> Project:
    """Recorded on two days, baselined in replay, committed on main."""
    project.write_cases(CASES)
    assert main(["record", "--quiet"]) == 0
    _redate(project, "greet", "2026-10-01T09:00:00+00:00")
    _redate(project, "echo", "2026-11-15T23:30:00+00:00")
    assert main(["baseline", "--quiet"]) == 0
    init_repository(project.root)
    return project


def test_a_replayed_check_names_its_recordings_and_the_changes_against_the_base(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    git("checkout", "-qb", "change", cwd=repo.root)
    _redate(repo, "echo", "2026-11-20T08:00:00+00:00")  # re-recorded in the pull request
    code = main(["check", "--base", "main", "--quiet", "--report", "report.md"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("SHIP: demo (replayed, not live) — 2/2 → 2/2 passed")
    assert (
        "replayed from recordings captured 2026-10-01–2026-11-20 (1 changed in this pull "
        "request, against the base commit " in out
    )
    assert "this verdict judges those recorded answers, not what the live system answers" in out
    assert "no drift run on record (looked for history/demo-drift.json on the base commit" in out
    markdown = Path("report.md").read_text()
    assert "### ✅ casegate: **ship** — demo (replayed, not live)" in markdown
    assert "> 🔁 **Replayed, not live**, from recordings captured 2026-10-01–2026-11-20 (1 " in (
        markdown
    )
    # Nothing changed: none counted.
    git("checkout", "-q", "--", "recordings", cwd=repo.root)
    assert main(["check", "--base", "main", "--quiet"]) == 0
    assert "(0 changed in this pull request, against the base commit" in capsys.readouterr().out


def test_without_a_base_the_count_is_left_out_and_live_says_live(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "◦ replayed from recordings captured 2026-10-01–2026-11-15\n" in out
    assert "changed in this pull request" not in out
    assert main(["check", "--quiet", "--mode", "live", "--report", "live.md"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("SHIP: demo (live) — ")
    assert "live: every output came from the system during this run" in out
    assert "replayed from" not in out and "not live" not in out
    assert "> 📡 **Live**: every output came from the system" in Path("live.md").read_text()


def test_the_last_drift_run_is_the_base_commits_never_the_pull_requests(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    record = repo.root / "history" / "demo-drift.json"
    record.parent.mkdir(exist_ok=True)
    record.write_text(json.dumps(_drift_report("2026-11-16T06:17:00+00:00", flips=["greet"])))
    git("add", "-A", cwd=repo.root)
    git("commit", "-qm", "drift", cwd=repo.root)
    git("checkout", "-qb", "change", cwd=repo.root)
    # The pull request claims a clean drift run of its own: not believed.
    record.write_text(json.dumps(_drift_report("2026-12-01T06:17:00+00:00")))
    assert main(["check", "--base", "main", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "last drift run: 2026-11-16, drifted: 1 verdict flip(s)" in out
    assert "2026-12-01" not in out
    # Recordings newer than the drift run were never compared with the live system by it.
    _redate(repo, "echo", "2026-11-20T08:00:00+00:00")
    assert main(["check", "--base", "main", "--quiet"]) == 0
    assert "some of these recordings are newer than it" in capsys.readouterr().out
    # A plain check on the branch is judged as its pull request: the base's drift run.
    assert main(["check", "--quiet"]) == 0
    assert "last drift run: 2026-11-16, drifted: 1 verdict flip(s)" in capsys.readouterr().out
    # On the trusted branch itself, the working copy is the trusted branch's.
    git("checkout", "-q", "main", cwd=repo.root)
    record.write_text(json.dumps(_drift_report("2026-12-01T06:17:00+00:00")))
    assert main(["check", "--quiet"]) == 0
    assert "last drift run: 2026-12-01, in step (2 case(s) run live" in capsys.readouterr().out


def test_an_unreadable_drift_record_is_named_and_changes_no_verdict(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    record = repo.root / "history" / "demo-drift.json"
    record.parent.mkdir(exist_ok=True)
    record.write_text('{"schema": "casegate.drift/1", "suite": 3}')
    assert main(["check", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "last drift run unknown: history/demo-drift.json in the working copy: invalid" in out


def test_compare_json_names_the_mode_and_what_was_replayed(
    repo: Project, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    candidate = tmp_path / "candidate.json"
    assert main(["run", "--quiet", "--out", str(candidate)]) == 0
    capsys.readouterr()
    assert main(["compare", "baselines/demo.json", str(candidate), "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["mode"] == "replay"
    replay = found["replay"]
    assert (replay["captured_from"], replay["captured_to"]) == ("2026-10-01", "2026-11-15")
    assert replay["samples"] == 2 and replay["undated"] == 0
    assert replay["changed_in_pr"] is None and replay["last_drift"] is None
    live = tmp_path / "live.json"
    assert main(["run", "--quiet", "--mode", "live", "--out", str(live)]) == 0
    capsys.readouterr()
    assert main(["compare", "baselines/demo.json", str(live), "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert (found["mode"], found["replay"]) == ("live", None)


HOSTILE = "2026-11-30T00:00:00 <img src=x onerror=alert(1)> @admin #1 **ship** | x"


def test_a_pull_requests_recording_dates_cannot_write_into_the_report_or_move_the_verdict(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    git("checkout", "-qb", "change", cwd=repo.root)
    repo.write_system("def answer(case_input, system):\n    return 'nothing useful'\n")
    assert main(["check", "--base", "main", "--mode", "live", "--quiet"]) == 1  # it fails live
    capsys.readouterr()
    # The author's recordings say it passes, dated with markup; the replayed verdict is the
    # recordings' (ship), and the dates are no text at all: unreadable, so counted undated.
    _redate(repo, "greet", HOSTILE)
    _redate(repo, "echo", "9999-12-31T00:00:00+00:00")
    code = main(["check", "--base", "main", "--quiet", "--report", "report.md"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "replayed from recordings captured 9999-12-31 (1 of 2 have no capture date)" in out
    assert "(2 changed in this pull request" in out
    # The cases those recordings judge are named, as the author's, in both reports.
    named = (
        "judged on recordings this change added or changed, not sealed by CI: echo, greet "
        "(CASEGATE_RECORDING_KEY is not set, so no seal could be checked"
    )
    assert named in out
    markdown = Path("report.md").read_text()
    assert (
        "Judged on recordings this change added or changed, not sealed by CI: echo, greet"
        in markdown
    )
    for planted in ("<img", "@admin", "#1", "**ship** |", "onerror"):
        assert planted not in markdown
    assert markdown.count("casegate: **") == 1
    assert "not what the live system answers today" in markdown
