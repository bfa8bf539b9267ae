"""Attacks on the replayed check (issue 21): `samples: auto` rounds in the in-gate replay (gate.pipeline.replay._stopped)
are stopped by the pull request's own `gate:` rule, not the base's.

Every test asserts the SAFE outcome: a failing test means the attack worked.
"""

from __future__ import annotations

import json

import pytest

from gate.cli import main
from tests.conftest import Project, case
from tests.deciding.test_staleness import edit_config
from tests.fakes.actions import git, init_repository

#: which recorded samples of the critical case fail (the pull request's honest recording:
#: the new prompt breaks the case about half of the time)
FAILING = {0, 2, 5, 7, 9, 12, 13, 15, 18, 20, 21, 23}


def _regress(project: Project, case_id: str, failing: set[int]) -> None:
    """The pull request's recordings of `case_id`: the listed samples now miss the
    expected word (its prompt changed; re-recorded honestly)."""
    path = project.root / "recordings" / f"{case_id}.json"
    document = json.loads(path.read_text())
    for entry in document["responses"].values():
        if entry.get("sample") in failing:
            entry["output"]["text"] = "sorry, no"
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


@pytest.fixture
def repo(project: Project) -> Project:
    project.write_config(samples="auto")
    project.write_cases(
        [
            case("crit", "ok", contains="ok", fields_={"critical": True}),
            *[case(f"other-{n}", f"fine {n}", contains="fine") for n in range(15)],
        ]
    )
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    return project


def test_control_the_regression_blocks_under_the_bases_rule(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    _regress(repo, "crit", FAILING)
    code = main(["check", "--base", "main", "--quiet", "--out", "c.json"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "crit: 72/72 → 4/8, p = 0.0014, regression" in out, out


def test_a_raised_alpha_cannot_stop_a_critical_case_before_the_bases_rule_sees_the_drop(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """`gate.alpha` raised is a tightening change (listed, not blocking); the base's rule
    decides. But the rounds `samples: auto` draws are cut with the pull request's alpha,
    so the case stops at the first look, where the base's alpha cannot reject."""
    _regress(repo, "crit", FAILING)
    edit_config(repo, gate={"alpha": 0.9})
    code = main(["check", "--base", "main", "--quiet", "--out", "c.json"])
    out = capsys.readouterr().out
    # The verdict is the base's rule's: a critical case at 12/24 (and 2 of its first 4)
    # against 72/72 blocks, as the control shows.
    assert code == 1, out
    assert "crit: 72/72 → 2/4" not in out
