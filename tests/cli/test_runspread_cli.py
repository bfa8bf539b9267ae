"""The shift between runs through the CLI: `history add` keeps the counts, `gate` and
`compare` read the spread from the history, and a pull request cannot bring its own."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest

from gate.results import write_results
from tests.cli.test_cli import casegate
from tests.conftest import Project, case
from tests.factories import run, sampled

#: 30 ordinary cases and one critical one; the runs below move all of them
OTHERS = 30


def _results(
    path: Path, critical: int, others: list[int], created_at: str, config_hash: str = "base-hash"
) -> Path:
    cases = [sampled("crit", critical, 20, critical=True)]
    cases += [sampled(f"o{i:02d}", passes, 20) for i, passes in enumerate(others)]
    built = run(cases, suite="demo", system="echo")
    write_results(dataclasses.replace(built, config_hash=config_hash, created_at=created_at), path)
    return path


def _shifting_history(project: Project) -> None:
    """Three earlier runs of the baseline's configuration whose cases move together."""
    for day, shift in (("01", 0), ("02", -7), ("03", 5)):
        run = _results(
            project.root / f"run{day}.json",
            critical=min(20, 17 + shift // 2),
            others=[max(1, min(19, 12 + shift + i % 3)) for i in range(OTHERS)],
            created_at=f"2026-11-{day}T08:00:00+00:00",
        )
        added = casegate("history", "add", str(run), "--commit", "a" * 40, cwd=project.root)
        assert added.returncode == 0, added.stdout + added.stderr


def _pair(project: Project) -> tuple[Path, Path]:
    others = [12 + i % 3 for i in range(OTHERS)]
    baseline = _results(project.root / "base.json", 19, others, "2026-11-04T08:00:00+00:00")
    # The candidate's critical case dropped 19/20 → 12/20; nothing else moved.
    candidate = _results(project.root / "cand.json", 12, others, "2026-11-05T08:00:00+00:00")
    return baseline, candidate


def test_history_add_keeps_each_cases_counts(project: Project) -> None:
    _shifting_history(project)
    lines = (project.root / "history" / "demo.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    assert (first["case"], first["passes"], first["samples"]) == ("crit", 17, 20)


def test_a_drop_the_histories_shifts_explain_is_inconclusive(project: Project) -> None:
    baseline, candidate = _pair(project)
    # Without repeated runs in the history, 19/20 → 12/20 on a critical case blocks.
    assert casegate("gate", str(baseline), str(candidate), cwd=project.root).returncode == 1
    _shifting_history(project)
    gated = casegate("gate", str(baseline), str(candidate), cwd=project.root)
    assert gated.returncode == 3, gated.stdout + gated.stderr  # undecided, never a ship
    assert "inconclusive: critical case(s) dropped, but no further than a shift" in gated.stdout
    assert "crit 19/20 → 12/20" in gated.stdout
    compared = casegate(
        "compare", str(baseline), str(candidate), "--format", "json", cwd=project.root
    )
    noise = json.loads(compared.stdout)["noise"]
    assert noise["shift_explained"] == ["crit"]
    spread = noise["run_spread"]
    assert spread["runs"] == 4  # the three recorded runs and the baseline itself
    assert spread["variance"] > 0
    assert spread["source"].endswith("history/demo.jsonl in the working copy")


def test_on_inconclusive_ship_cannot_ship_such_a_drop(project: Project) -> None:
    project.write_config(gate={"on_inconclusive": "ship"})
    baseline, candidate = _pair(project)
    _shifting_history(project)
    gated = casegate("gate", str(baseline), str(candidate), cwd=project.root)
    assert gated.returncode == 3, gated.stdout + gated.stderr


def test_runs_of_another_configuration_are_no_evidence(project: Project) -> None:
    baseline, candidate = _pair(project)
    _shifting_history(project)
    other = project.root / "other.json"
    data = json.loads(baseline.read_text())
    data["config_hash"] = "another-hash"
    other.write_text(json.dumps(data))
    other_candidate = project.root / "other-cand.json"
    data = json.loads(candidate.read_text())
    data["config_hash"] = "another-hash"
    other_candidate.write_text(json.dumps(data))
    gated = casegate("gate", str(other), str(other_candidate), cwd=project.root)
    assert gated.returncode == 1, gated.stdout + gated.stderr


# --- without a history: the clusters beside a case, which can only make it inconclusive --


def _families(path: Path, moved: list[int], created_at: str) -> Path:
    """Eight families of five with `clusters: {by: id_prefix}`, f1-0 critical; family k's
    cases pass moved[k] of 20."""
    cases = [
        sampled(f"f{k}-{member}", passes, 20, critical=(k, member) == (1, 0))
        for k, passes in enumerate(moved)
        for member in range(5)
    ]
    built = run(cases, suite="demo", system="echo", clusters={"by": "id_prefix"})
    write_results(dataclasses.replace(built, created_at=created_at), path)
    return path


@pytest.mark.parametrize(
    ("moved", "exit_code"),
    [
        ([12, 8, 20, 14, 19, 16, 20, 17], 3),  # families scattered; f1 no further than they
        ([18, 8, 18, 18, 18, 18, 18, 18], 1),  # f1 fell alone
    ],
)
def test_without_a_history_a_drop_the_other_families_match_is_inconclusive(
    project: Project, moved: list[int], exit_code: int
) -> None:
    baseline = _families(project.root / "base.json", [18] * 8, "2026-11-04T08:00:00+00:00")
    candidate = _families(project.root / "cand.json", moved, "2026-11-05T08:00:00+00:00")
    project.write_config(gate={"on_inconclusive": "ship"})
    gated = casegate("gate", str(baseline), str(candidate), cwd=project.root)
    assert gated.returncode == exit_code, gated.stdout + gated.stderr
    compared = casegate(
        "compare", str(baseline), str(candidate), "--format", "json", cwd=project.root
    )
    noise = json.loads(compared.stdout)["noise"]
    if exit_code == 3:
        assert "no further than the suite's other clusters moved" in gated.stdout
        assert "f1-0 18/20 → 8/20" in gated.stdout
        assert noise["shift_explained"] == ["f1-0"]
        assert noise["spread_beside"]["f1-0"]["shift_degrees_of_freedom"] == 7
    else:
        assert gated.stdout.startswith("BLOCK")
        assert noise["shift_explained"] == [] and noise["spread_beside"] == {}
    assert noise["run_spread"] is None


# --- the pull request's own history is never the evidence ------------------------------

ALTERNATING_BOT = """
import itertools
_calls = itertools.count()

def answer(case_input, system):
    question = case_input["question"]
    if question == "crit" and next(_calls) % 2:
        return "no idea"
    return "answer: " + question
"""


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)


@pytest.mark.parametrize("noisy_history", [False, True])
def test_a_pull_request_cannot_explain_its_drop_away_with_a_history_of_its_own(
    project: Project, noisy_history: bool
) -> None:
    project.write_config(samples=20)
    project.write_system(
        "def answer(case_input, system):\n    return 'answer: ' + case_input['question']\n"
    )
    project.write_cases(
        [case("crit", "crit", contains="answer", fields_={"critical": True})]
        # nine cases: with seven the suite test could not reach its level, which is a
        # reason of its own for exit 3 (tests/deciding/test_undecided.py)
        + [case(f"o{i}", f"o{i}", contains="answer") for i in range(8)]
    )
    made = casegate("baseline", "--mode", "live", "--quiet", cwd=project.root)
    assert made.returncode == 0, made.stdout + made.stderr
    _git(project.root, "init", "-q", "-b", "main")
    _git(project.root, "add", "-A")
    _git(project.root, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "base")
    # The pull request breaks its critical case half the time...
    project.write_system(ALTERNATING_BOT)
    if noisy_history:
        # ...and commits a history in which the baseline's own configuration swings wildly.
        base_hash = json.loads((project.root / "baselines" / "demo.json").read_text())
        lines = []
        for day, rate in (("01", 2), ("02", 18), ("03", 6), ("04", 16)):
            for case_id in ["crit"] + [f"o{i}" for i in range(8)]:
                record = {
                    "schema": "casegate.history/1",
                    "suite": "demo",
                    "case": case_id,
                    "version": 1,
                    "system": "echo",
                    "config_hash": base_hash["config_hash"],
                    "commit": "b" * 40,
                    "created_at": f"2026-11-{day}T08:00:00+00:00",
                    "mode": "live",
                    "verdict": "fail",
                    "pass_rate": rate / 20,
                    "passes": rate,
                    "samples": 20,
                    "weight": 1.0,
                }
                lines.append(json.dumps(record, sort_keys=True) + "\n")
        project.write_text("history/demo.jsonl", "".join(lines))
    checked = casegate("check", "--base", "main", "--mode", "live", cwd=project.root)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "shift between runs" not in checked.stdout
    assert checked.stdout.startswith("BLOCK")
    report = (project.root / ".casegate" / "demo-report.md").read_text()
    assert "shift between runs" not in report
    if noisy_history:
        # The same history, read as the trusted one (`gate` on the working copy), would
        # have made the drop undecided: the check above refused it only for its origin.
        gated = casegate(
            "gate", "baselines/demo.json", ".casegate/demo-results.json", cwd=project.root
        )
        assert gated.returncode == 3, gated.stdout + gated.stderr
        assert "no further than a shift between runs could take them" in gated.stdout
