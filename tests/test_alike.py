"""`casegate gate` and `compare` outside a pull request: a re-versioned case is set aside as
such."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from tests.conftest import Project, case

BASELINE = "baselines/demo.json"
CASES = [
    case("refund-window", "refund", contains="refund", fields_={"tags": ["returns"]}),
    case("refund-slow", "slow", contains="slow", fields_={"tags": ["returns"]}),
    case("ship-date", "date", contains="date", fields_={"tags": ["shipping"], "critical": True}),
]


@pytest.fixture
def suite(project: Project) -> Project:
    """Three cases and their baseline, written by `casegate baseline`."""
    project.write_cases(CASES)
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    return project


def candidate(*args: str, out: str = "cand.json") -> str:
    assert main(["run", "--mode", "live", "--out", out, "--quiet", *args]) == 0
    return out


def edit(path: str, change: Any) -> None:
    data = json.loads(Path(path).read_text())
    change(data)
    Path(path).write_text(json.dumps(data))


def compared(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["compare", BASELINE, *args, "--format", "json"]) == 0
    found: dict[str, Any] = json.loads(capsys.readouterr().out)
    return found


# --- 4. a re-versioned case ----------------------------------------------------------------


def test_a_version_bump_is_re_versioned_not_a_silent_change_of_checks(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    bumped = [dict(c) for c in CASES]
    bumped[0] = case(
        "refund-window", "refund", contains="ref", fields_={"tags": ["returns"], "version": 2}
    )
    suite.write_cases(bumped)
    cand = candidate()
    capsys.readouterr()
    assert main(["gate", BASELINE, cand]) == 0
    out = capsys.readouterr().out
    assert "re-versioned: refund-window (v1 → v2)" in out
    assert "without a version bump" not in out
    assert main(["compare", BASELINE, cand, "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert "| re-versioned (v1 → v2) | `refund-window` | pass" in markdown
    assert compared(capsys, cand)["changed"] == ["refund-window"]
