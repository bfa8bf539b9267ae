"""Confirmation reruns in a live check: only a drop that holds on fresh samples blocks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gate.cli import main
from tests.conftest import Project

# Deterministic "noise": the candidate's first 20 calls for `blip` fail (a bad patch of
# draws), later ones pass; `crit` is really broken on the candidate. The calls are
# counted in a file: the check's run and its confirmation rerun are separate processes.
FLAKY_BOT = """
import json
from pathlib import Path

COUNTS = Path(__file__).with_name("calls.json")

def answer(case_input, system):
    case = case_input["case"]
    calls = json.loads(COUNTS.read_text()) if COUNTS.exists() else {}
    key = system["variant"] + "/" + case
    calls[key] = calls.get(key, 0) + 1
    COUNTS.write_text(json.dumps(calls))
    if system["variant"] == "new":
        if case == "crit":
            return "bad"
        if case == "blip" and calls[key] <= 20:
            return "bad"
    return "good"
"""


def write(project: Project, name: str, variant: str) -> Path:
    config = {
        "suite": "demo",
        "cases": "cases",
        "system": {
            "name": f"bot-{variant}",
            "provider": "python",
            "target": f"{project.module}:answer",
            "variant": variant,
        },
        "samples": 20,
        "concurrency": 1,
        "mode": "live",
        "baseline": "baselines/demo.json",
        "gate": {"confirm_samples": 12},
    }
    path = project.root / name
    path.write_text(yaml.safe_dump(config))
    return path


def setup_project(project: Project, *case_ids: str) -> None:
    """The bot, a baseline config and a candidate config, and the named cases."""
    project.write_system(FLAKY_BOT)
    write(project, "casegate.yml", "base")
    write(project, "candidate.yml", "new")
    project.write_cases(
        [
            {
                "id": case_id,
                "critical": case_id != "fine",
                "input": {"case": case_id},
                "expect": {"equals": "good"},
            }
            for case_id in case_ids
        ]
    )


def test_flagged_regressions_are_rerun_and_only_confirmed_ones_block(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    setup_project(project, "crit", "blip", "fine")
    assert main(["baseline", "--quiet"]) == 0
    code = main(["check", "-c", "candidate.yml", "--quiet", "--report", "r.md"])
    assert code == 1
    report = Path("r.md").read_text()
    assert "`crit`" in report and "regression, confirmed on rerun (12/12 → 0/12)" in report
    assert "within noise" in report and "NOT confirmed on rerun (12/12 → 12/12)" in report
    out = capsys.readouterr().out
    assert "1 critical case(s) dropped significantly" in out and ": crit" in out
    results = json.loads(Path(".casegate/demo-results.json").read_text())
    assert {c["id"]: c["passes"] for c in results["cases"]} == {"blip": 0, "crit": 0, "fine": 20}


def test_without_a_runnable_baseline_the_candidate_is_rerun_alone(project: Project) -> None:
    setup_project(project, "crit")
    assert main(["baseline", "--quiet"]) == 0
    baseline = json.loads(Path("baselines/demo.json").read_text())
    baseline["config"]["system"]["target"] = "gone_module:answer"
    Path("baselines/demo.json").write_text(json.dumps(baseline))
    assert main(["check", "-c", "candidate.yml", "--quiet", "--report", "r.md"]) == 1
    report = Path("r.md").read_text()
    assert "the baseline system could not be run again" in report
    assert "confirmed on rerun (60/60 → 0/12, baseline not re-run)" in report


def test_a_suite_level_drop_is_confirmed_only_on_fresh_samples() -> None:
    from gate.pipeline.confirm import confirmed_cases, suite_confirmed
    from gate.suite.config import GateConfig
    from tests.factories import sampled

    rule = GateConfig()
    base = [sampled(f"c{i:02d}", 18, 20) for i in range(30)]
    lower = [sampled(f"c{i:02d}", 16, 20) for i in range(30)]
    # The drop holds on the fresh samples: confirmed; the fresh samples show none: cleared.
    assert suite_confirmed(list(zip(base, lower, strict=True)), rule, None)
    assert not suite_confirmed(list(zip(base, base, strict=True)), rule, None)
    # Three clusters of ten near-duplicates cannot show it at this level (p = 1/8).
    clusters = {f"c{i:02d}": f"k{i // 10}" for i in range(30)}
    assert not suite_confirmed(list(zip(base, lower, strict=True)), rule, clusters)
    crit = (sampled("crit", 20, 20, critical=True), sampled("crit", 5, 20, critical=True))
    blip = (sampled("blip", 20, 20, critical=True), sampled("blip", 19, 20, critical=True))
    assert confirmed_cases([crit, blip], rule) == {"crit"}
