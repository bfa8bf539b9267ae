"""The RAG example (examples/rag, `make demo-rag`): its committed recordings replay, offline
and without any SDK, to its committed baseline, score for score; the candidate's padding
is caught by faithfulness on every case, and the gate blocks it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.pipeline.test_speed_paths import NEVER_IN_REPLAY, modules_after

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "rag"


def _copy(destination: Path) -> Path:
    target = destination / "rag"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns(".casegate", "__pycache__"))
    return target


def _casegate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter each time: the example's modules are the suite's own code."""
    return subprocess.run(
        [sys.executable, "-m", "gate", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _checks(path: Path) -> dict[str, Any]:
    cases = json.loads(path.read_text())["cases"]
    return {c["id"]: (c["status"], c["reason"], c["checks"]) for c in cases}


def test_the_rag_example_replays_to_its_committed_baseline_offline(tmp_path: Path) -> None:
    suite = _copy(tmp_path)
    loaded = modules_after(["baseline", "--quiet"], suite)
    assert sorted(set(NEVER_IN_REPLAY) & loaded) == []
    replayed = _checks(suite / "baselines" / "rag.json")
    committed = _checks(EXAMPLE / "baselines" / "rag.json")
    assert replayed == committed
    # Every metric the cases name measured a score, and the baseline passes them all.
    scored = {c["check"] for _, _, checks in committed.values() for c in checks}
    assert scored == {
        "retrieval_recall",
        "faithfulness",
        "answer_relevance",
        "context_recall",
        "context_precision",
        "judge",
    }
    assert all(c.get("score") is not None for _, _, cs in committed.values() for c in cs)
    assert {status for status, _, _ in committed.values()} == {"pass"}


def test_the_rag_examples_candidate_is_blocked_for_unsupported_claims(tmp_path: Path) -> None:
    suite = _copy(tmp_path)
    ran = _casegate(suite, "run", "-c", "casegate.candidate.yml", "--out", "cand.json", "--quiet")
    assert ran.returncode == 0, ran.stderr
    candidate = json.loads((suite / "cand.json").read_text())["cases"]
    for result in candidate:
        [faithful] = [c for c in result["checks"] if c["check"] == "faithfulness"]
        assert not faithful["ok"] and faithful["score"] == 0.5, result["id"]
        assert "Most customers have this sorted within the hour" in faithful["reason"]
    gate = _casegate(suite, "gate", "baselines/rag.json", "cand.json")
    assert gate.returncode == 1, gate.stdout + gate.stderr


def test_the_rag_examples_calibration_replays_from_its_recordings(tmp_path: Path) -> None:
    suite = _copy(tmp_path)
    calibrated = _casegate(suite, "judge", "calibrate", "labels/rag.jsonl", "--out", "cal.json")
    # Below the default bar (8 labels, fewer than 30): exit 1, and it says so.
    assert calibrated.returncode == 1, calibrated.stderr
    assert "fewer than min_labels 30" in calibrated.stdout + calibrated.stderr
    again = json.loads((suite / "cal.json").read_text())
    committed = json.loads((EXAMPLE / "rag.judge-calibration.json").read_text())
    for key in ("labels", "judged", "agreement", "kappa", "false_pass_rate", "confusion"):
        assert again[key] == committed[key], key
    assert again["disagreements"] == committed["disagreements"]
