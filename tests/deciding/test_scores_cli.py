"""The score rules end to end: `casegate compare` and `casegate gate` on results files."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.results import write_results
from tests.deciding.scored import scored, scored_run

GATE = {
    "max_mean_score_drop": {"check": "similar", "drop": 0.05},
    "min_pass_hat_k": {"k": 3, "min": 0.5},
}


def _files(tmp_path: Path, shift: float) -> tuple[Path, Path]:
    rng = random.Random(5)
    means = [0.6 + 0.35 * i / 24 for i in range(25)]

    def cases(by: float) -> list[Any]:
        return [
            scored(f"c{i:02d}", [min(1.0, max(0.0, m + by + rng.gauss(0, 0.03))) for _ in range(4)])
            for i, m in enumerate(means)
        ]

    baseline, candidate = tmp_path / "base.json", tmp_path / "cand.json"
    write_results(scored_run(cases(0.0), gate=GATE, samples=4), baseline)
    write_results(scored_run(cases(shift), gate=GATE, samples=4), candidate)
    return baseline, candidate


def test_gate_blocks_a_score_fall_and_compare_reports_it_as_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    baseline, candidate = _files(tmp_path, -0.12)
    assert main(["gate", str(baseline), str(candidate)]) == 1
    assert (
        main(["compare", str(baseline), str(candidate), "--format", "json", "--out", "c.json"]) == 0
    )
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["verdict"] == "block"
    assert "max_mean_score_drop" in [reason["rule"] for reason in data["reasons"]]
    similar = data["scores"]["checks"]["similar"]
    assert similar["mean_change"] == pytest.approx(-0.12, abs=0.03)
    assert similar["paired_cases"] == 25
    low, high = similar["cases"]["c00"]["change_ci"]
    assert low < similar["cases"]["c00"]["change"] < high
    assert data["scores"]["pass_k"]["k"] == 3


def test_gate_ships_the_same_system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    baseline, candidate = _files(tmp_path, 0.0)
    assert main(["gate", str(baseline), str(candidate)]) == 0


@pytest.mark.parametrize("forged", ["NaN", "1.5", "-0.25", '"0.9"', '"high"', "true", "1e999"])
def test_a_forged_score_is_refused_with_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], forged: str
) -> None:
    monkeypatch.chdir(tmp_path)
    baseline, candidate = _files(tmp_path, 0.0)
    data = json.loads(candidate.read_text())
    data["cases"][0]["outputs"][0]["checks"][0]["score"] = "FORGED"
    text = json.dumps(data).replace('"FORGED"', forged)
    candidate.write_text(text)
    assert main(["gate", str(baseline), str(candidate)]) == 2
    assert main(["compare", str(baseline), str(candidate), "--format", "json"]) == 2
    err = capsys.readouterr().err
    assert err.strip(), "refused without saying why"
    assert "Traceback" not in err


def _falls_but_hides_it(candidate: Path, hide: str) -> None:
    """Edit a candidate that fell by 0.12 so one case reads high, as found independently."""
    data = json.loads(candidate.read_text())
    case = data["cases"][0]
    if hide == "outputs dropped":
        # The samples gone, the case's line claiming 0.99 over its 4 samples.
        case["outputs"] = []
        case["checks"][0]["score"] = 0.99
    else:
        # The check named twice on each sample: the real score, then a perfect one.
        for sample in case["outputs"]:
            sample["checks"].append({**sample["checks"][0], "score": 1.0})
    candidate.write_text(json.dumps(data))


@pytest.mark.parametrize("hide", ["outputs dropped", "check named twice"])
def test_a_candidate_that_hides_its_samples_scores_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], hide: str
) -> None:
    monkeypatch.chdir(tmp_path)
    baseline, candidate = _files(tmp_path, -0.12)
    _falls_but_hides_it(candidate, hide)
    assert main(["gate", str(baseline), str(candidate)]) == 2
    err = capsys.readouterr().err
    said = "drew 4 sample(s) but hold 0" if hide == "outputs dropped" else "twice"
    assert said in err and "Traceback" not in err


def test_gate_says_when_the_candidate_brought_its_own_looser_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without -c (and no ./casegate.yml) `gate` reads the candidate's recorded rule: a
    candidate recorded with a drop margin of 0.5 ships its 0.12 fall, but not unnoticed."""
    monkeypatch.chdir(tmp_path)
    baseline, candidate = _files(tmp_path, -0.12)
    data = json.loads(candidate.read_text())
    data["config"]["gate"]["max_mean_score_drop"] = {"check": "similar", "drop": 0.5}
    candidate.write_text(json.dumps(data))
    assert main(["gate", str(baseline), str(candidate)]) == 0
    out = capsys.readouterr().out
    assert "recorded under another gate rule than the baseline (max_mean_score_drop)" in out
    # Gated by the baseline's rule through -c, the fall blocks.
    config = tmp_path / "rule.yml"
    config.write_text(
        "suite: s\ncases: cases\nsystem: {name: sys, provider: python, target: m:f}\n"
        "gate: {max_mean_score_drop: {check: similar, drop: 0.05}}\n"
    )
    assert main(["gate", "-c", str(config), str(baseline), str(candidate)]) == 1
