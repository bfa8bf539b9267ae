"""`casegate history …` end to end on a copy of the example suite, and the Action: the
baseline refresh appends to the export, and a pull request's own edit of the export
never reaches its report (the base commit's copy does)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.actions import Runner, build_workspace, git

REPO = Path(__file__).resolve().parents[2]
REGRESSED = "complaint-no-invented-discount"


def casegate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run(
        [sys.executable, "-m", "gate", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**env, "PYTHONPATH": str(REPO)},
        check=False,
        timeout=120,
    )


@pytest.fixture(scope="module")
def candidate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example's candidate results, run once for the module."""
    out = tmp_path_factory.mktemp("candidate") / "candidate.json"
    done = casegate("run", "-c", "casegate.candidate.yml", "--out", str(out), "--quiet", cwd=REPO)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture
def workspace(tmp_path: Path, candidate: Path) -> Path:
    folder = tmp_path / "workspace"
    build_workspace(folder)
    shutil.copy(candidate, folder / "candidate.json")
    return folder


def test_add_records_a_whole_run_once(workspace: Path) -> None:
    head = git("rev-parse", "HEAD", cwd=workspace)
    first = casegate("history", "add", "baselines/support.json", cwd=workspace)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("added 48 case(s) of the run of ")
    assert first.stdout.rstrip().endswith(
        f"(commit {head[:12]}, config "
        f"{json.loads((workspace / 'baselines/support.json').read_text())['config_hash']}) to history/support.jsonl"
    )
    lines = (workspace / "history" / "support.jsonl").read_text().splitlines()
    assert len(lines) == 48 and {json.loads(line)["commit"] for line in lines} == {head}
    assert (workspace / ".casegate" / "history.sqlite").is_file()
    again = casegate("history", "add", "baselines/support.json", cwd=workspace)
    assert again.returncode == 0
    assert again.stdout.startswith("already recorded: the run of ")
    assert "nothing added" in again.stdout
    assert len((workspace / "history" / "support.jsonl").read_text().splitlines()) == 48


def test_case_trend_and_flips_answer_from_the_history(workspace: Path) -> None:
    assert casegate("history", "add", "baselines/support.json", cwd=workspace).returncode == 0
    added = casegate("history", "add", "candidate.json", "--commit", "feedc0ffee", cwd=workspace)
    assert added.returncode == 0, added.stderr

    trend = casegate("history", "trend", "--format", "json", cwd=workspace)
    points = json.loads(trend.stdout)
    assert [p["pass_rate"] for p in points] == [0.854167, 0.875]
    assert [p["system"] for p in points] == ["support-v1", "support-v2-concise"]
    assert points[1]["commit"] == "feedc0ffee" and points[1]["cases"] == 48
    assert points[0]["cost_usd"] > points[1]["cost_usd"] > 0
    assert all(p["latency_ms_p95"] is not None for p in points)
    last = json.loads(
        casegate("history", "trend", "--last", "1", "--format", "json", cwd=workspace).stdout
    )
    assert [p["commit"] for p in last] == ["feedc0ffee"]
    table = casegate("history", "trend", cwd=workspace).stdout
    assert table.splitlines()[0].split() == [
        "date",
        "commit",
        "system",
        "cases",
        "pass",
        "rate",
        "cost",
        "p95",
        "latency",
    ]
    assert "85.4%" in table and "87.5%" in table

    case = casegate("history", "case", REGRESSED, cwd=workspace)
    assert case.returncode == 0, case.stderr
    assert "support-v1: 1 run(s): 1 pass" in case.stdout
    assert "support-v2-concise: 1 run(s): 1 fail" in case.stdout
    timeline = json.loads(
        casegate("history", "case", REGRESSED, "--format", "json", cwd=workspace).stdout
    )
    assert [(r["system"], r["verdict"]) for r in timeline] == [
        ("support-v1", "pass"),
        ("support-v2-concise", "fail"),
    ]

    flips = json.loads(
        casegate("history", "flips", "--top", "3", "--format", "json", cwd=workspace).stdout
    )
    assert len(flips) == 3 and all(f["flips"] == 1 and f["runs"] == 2 for f in flips)
    assert [f["case"] for f in flips] == sorted(f["case"] for f in flips)
    shown = casegate("history", "flips", cwd=workspace).stdout
    assert REGRESSED in shown and "tighter check or more samples" in shown


def test_compare_shows_the_history_of_the_working_copy(workspace: Path) -> None:
    assert casegate("history", "add", "baselines/support.json", cwd=workspace).returncode == 0
    report = casegate(
        "compare", "baselines/support.json", "candidate.json", "--format", "markdown", cwd=workspace
    )
    assert report.returncode == 0, report.stderr
    section = report.stdout[report.stdout.index("#### History") :]
    assert section.startswith(
        "#### History\n\nFrom history/support.jsonl in the working copy: 1 recorded run(s)"
    )
    assert f"`{REGRESSED}`" in section and "never" in section
    assert section.count("```mermaid\nxychart-beta") == 2


def test_bad_input_is_one_line_and_exit_2(workspace: Path) -> None:
    assert casegate("history", "add", "baselines/support.json", cwd=workspace).returncode == 0
    unknown = casegate("history", "case", "complaint-no-invented-discoun", cwd=workspace)
    assert unknown.returncode == 2
    assert unknown.stderr == (
        "casegate: history/support.jsonl: no case 'complaint-no-invented-discoun' in the "
        "history (did you mean 'complaint-no-invented-discount'?)\n"
    )

    data = json.loads((workspace / "baselines/support.json").read_text())
    data["interrupted"] = True
    (workspace / "partial.json").write_text(json.dumps(data))
    partial = casegate("history", "add", "partial.json", cwd=workspace)
    assert partial.returncode == 2 and partial.stderr.count("\n") == 1
    assert (
        "partial.json: the history records whole runs only, and this is interrupted"
        in partial.stderr
    )

    data = json.loads((workspace / "baselines/support.json").read_text())
    data["suite"] = "other"
    (workspace / "other.json").write_text(json.dumps(data))
    other = casegate("history", "add", "other.json", cwd=workspace)
    assert other.returncode == 2
    assert "a run of suite 'other', but the config is suite 'support'" in other.stderr

    with (workspace / "history" / "support.jsonl").open("a") as stream:
        stream.write('{"schema": "casegate.history/1", "case": 3}\n')
    for args in (("trend",), ("add", "candidate.json")):
        broken = casegate("history", *args, cwd=workspace)
        assert broken.returncode == 2
        assert broken.stderr.startswith("casegate: history/support.jsonl:49: ")
        assert broken.stderr.count("\n") == 1 and "Traceback" not in broken.stderr


def test_export_and_db_options_and_the_history_key(workspace: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    added = casegate(
        "history",
        "add",
        str(workspace / "candidate.json"),
        "--export",
        "runs.jsonl",
        "--db",
        "cache.sqlite",
        "--commit",
        "abc",
        cwd=elsewhere,
    )
    assert added.returncode == 0, added.stderr
    assert (elsewhere / "runs.jsonl").is_file() and (elsewhere / "cache.sqlite").is_file()
    trend = casegate(
        "history", "trend", "--export", "runs.jsonl", "--format", "json", cwd=elsewhere
    )
    assert [p["commit"] for p in json.loads(trend.stdout)] == ["abc"]
    nothing = casegate("history", "trend", cwd=elsewhere)
    assert nothing.returncode == 2 and "pass -c CONFIG or --export PATH" in nothing.stderr

    config = workspace / "casegate.yml"
    config.write_text(config.read_text() + "history: records/support-history.jsonl\n")
    assert casegate("history", "add", "baselines/support.json", cwd=workspace).returncode == 0
    assert len((workspace / "records/support-history.jsonl").read_text().splitlines()) == 48
    assert not (workspace / "history").exists()


# --- the Action --------------------------------------------------------------------------


def test_the_baseline_refresh_appends_its_run_to_the_export(runner: Runner) -> None:
    finished = runner.run(
        "push", {"ref": "refs/heads/main"}, command="baseline", config="casegate.candidate.yml"
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    export = runner.workspace / "history" / "support.jsonl"
    records = [json.loads(line) for line in export.read_text().splitlines()]
    assert len(records) == 48
    assert {r["system"] for r in records} == {"support-v2-concise"}
    assert {r["commit"] for r in records} == {git("rev-parse", "HEAD", cwd=runner.workspace)}
    assert "added 48 case(s) of the run of " in finished.stdout
    assert not (runner.workspace / ".casegate" / "history.sqlite").exists()  # no cache kept


def test_a_pull_request_cannot_rewrite_the_history_its_report_shows(runner: Runner) -> None:
    # On the base: an earlier run where the critical case failed, on support-v0.
    older = json.loads((REPO / "baselines/support.json").read_text())
    for case in older["cases"]:
        if case["id"] == REGRESSED:
            case.update(status="fail", passed=False, passes=0, pass_rate=0.0)
    # Another system is another configuration: a repeated run of the baseline's own would be
    # read as the spread between runs (gate.history.spread), not as an earlier failure.
    older.update(system="support-v0", created_at="2026-01-05T00:00:00+00:00", config_hash="5a" * 8)
    (runner.root / "older.json").write_text(json.dumps(older))
    for results in (runner.root / "older.json", runner.workspace / "baselines/support.json"):
        done = casegate(
            "history", "add", str(results), "--commit", "0badc0de" * 5, cwd=runner.workspace
        )
        assert done.returncode == 0, done.stderr
    git("add", "history", cwd=runner.workspace)
    git("commit", "-qm", "history", cwd=runner.workspace)
    runner.base_sha = git("rev-parse", "HEAD", cwd=runner.workspace)
    # The pull request rewrites it: a clean record on a system of its own naming.
    export = runner.workspace / "history" / "support.jsonl"
    export.write_text(
        export.read_text()
        .replace("support-v0", "forged-by-pr")
        .replace('"verdict":"fail"', '"verdict":"pass"')
    )
    git("commit", "-qam", "a cleaner past", cwd=runner.workspace)

    finished = runner.run()
    assert finished.returncode == 1, finished.stdout + finished.stderr
    body = runner.api.comments[7][0]["body"]
    section = body[body.index("#### History") :]
    assert section.startswith(
        f"#### History\n\nFrom history/support.jsonl on the base commit {runner.base_sha[:7]}: "
        "2 recorded run(s)"
    )
    row = next(line for line in section.splitlines() if f"`{REGRESSED}`" in line)
    assert "2026-01-05 (fail)" in row and "`support-v0`" in row and "`0badc0de0bad`" in row
    assert "forged-by-pr" not in body and "forged-by-pr" not in runner.summary()
    assert "```mermaid" in section
