"""`casegate plan`: the sample-size formula, held to exact power, and the command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy import stats as scipy_stats

from gate.cli import main
from gate.deciding.noise.plan import case_samples, suite_cases
from tests.conftest import Project
from tests.factories import run, sampled


def exact_power(p0: float, nb: int, p1: float, n: int, alpha: float) -> float:
    """Fisher's one-sided test, summed over every pair of outcomes."""
    total = 0.0
    for kb in range(nb + 1):
        for kc in range(n + 1):
            table = [[kb, nb - kb], [kc, n - kc]]
            if scipy_stats.fisher_exact(table, alternative="greater").pvalue <= alpha:
                total += scipy_stats.binom.pmf(kb, nb, p0) * scipy_stats.binom.pmf(kc, n, p1)
    return total


def test_the_planned_samples_come_close_to_the_wanted_power() -> None:
    # 0.9 -> 0.5 against a 40-sample baseline, one-sided alpha 0.01, power 0.9.
    n = case_samples((36 + 1) / (40 + 2), 40, 0.4, 0.01, 0.9)
    assert n is not None and 10 <= n <= 40
    assert exact_power(0.9, 40, 0.5, n, 0.01) >= 0.8  # the approximation, within reach
    assert case_samples(0.5, 2, 0.4, 0.001, 0.99) is None  # a 2-sample baseline limits it


def test_suite_cases_grow_with_the_spread() -> None:
    z = scipy_stats.norm.ppf(0.99) + scipy_stats.norm.ppf(0.9)
    assert suite_cases(0.2, 0.05, 0.01, 0.9) == pytest.approx((z * 0.2 / 0.05) ** 2, abs=1)
    assert suite_cases(0.4, 0.05, 0.01, 0.9) > suite_cases(0.2, 0.05, 0.01, 0.9)


def test_plan_reads_the_baseline(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    project.write_config(samples="auto")
    cases = [sampled(f"c{i}", 18, 20, critical=i == 0) for i in range(10)]
    Path("baselines").mkdir(exist_ok=True)
    Path("baselines/demo.json").write_text(json.dumps(run(cases, suite="demo").to_dict()))
    assert main(["plan", "--drop", "0.3", "--power", "0.9"]) == 0
    out = capsys.readouterr().out
    assert "detect a drop of 30% with power 90%" in out
    assert "c0: baseline rate 0.90 →" in out and "samples" in out
    assert "samples: auto (no change" in out and "formula: D >=" in out
