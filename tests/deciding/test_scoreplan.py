"""`casegate plan` for score drops (gate.deciding.noise.scoreplan)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from gate.cli import main
from gate.deciding.noise.level import Shares
from gate.deciding.noise.scoreplan import score_lines
from gate.deciding.scorestats import sign_flip_sum_lower
from gate.suite.config import GateConfig
from tests.conftest import Project
from tests.deciding.scored import scored, scored_run

RULE = GateConfig.model_validate({"max_mean_score_drop": {"check": "similar", "drop": 0.03}})


def _baseline(cases: int, samples: int, sd: float, seed: int = 0) -> object:
    rng = random.Random(seed)
    return scored_run(
        [
            scored(f"c{i}", [min(1, max(0, 0.7 + rng.gauss(0, sd))) for _ in range(samples)])
            for i in range(cases)
        ]
    )


def test_the_planned_cases_reach_about_the_wanted_power_through_the_real_test() -> None:
    baseline = _baseline(40, 12, 0.1)
    shares = Shares(0.0, 0.01, 0.0, 0.01)
    lines = score_lines(baseline, RULE, shares, 0.9, 4, (40, 0))  # type: ignore[arg-type]
    found = re.search(r"(\d+) cases at 4 samples per case", "\n".join(lines))
    assert found is not None
    needed = int(found.group(1))
    variance = float(re.search(r"mean sample variance ([0-9.e-]+)", "\n".join(lines)).group(1))  # type: ignore[union-attr]
    # Simulate the planned suite: each case's difference of 4-sample means, every case 0.06
    # lower; the rule blocks when the exact sign-flip test finds it at the planned alpha and
    # the mean fell past the allowed 0.03.
    rng = random.Random(1)
    trials = 300
    hits = 0
    for _ in range(trials):
        falls = [rng.gauss(-0.06, (2 * variance / 4) ** 0.5) for _ in range(needed)]
        hits += sign_flip_sum_lower(falls) <= 0.01 and sum(falls) / needed < -0.03
    assert 0.8 <= hits / trials <= 0.98


def test_too_few_clusters_are_named() -> None:
    baseline = _baseline(12, 5, 0.1)
    lines = score_lines(baseline, RULE, Shares(0, 0.01, 0, 0.01), 0.9, 5, (12, 4))  # type: ignore[arg-type]
    assert any("can never reach alpha (2^-4" in line for line in lines)


def test_a_baseline_without_repeated_scores_asks_for_samples() -> None:
    baseline = _baseline(12, 1, 0.1)
    lines = score_lines(baseline, RULE, Shares(0, 0.01, 0, 0.01), 0.9, 1, (12, 0))  # type: ignore[arg-type]
    assert any("no variance is observed" in line for line in lines)


def test_plan_covers_score_drops_from_the_command_line(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_config(samples=4)
    Path("baselines").mkdir(exist_ok=True)
    Path("baselines/demo.json").write_text(
        json.dumps(
            scored_run(
                [scored(f"c{i}", [0.6, 0.7, 0.8, 0.75]) for i in range(20)], suite="demo"
            ).to_dict()
        )
    )
    assert main(["plan", "--score-drop", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "score drops (max_mean_score_drop's paired sign-flip test" in out
    assert "similar: a fall of 0.05 in every case" in out
    assert main(["plan", "--score-drop", "1.5"]) == 2
