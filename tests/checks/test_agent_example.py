"""The agent example (examples/agent): `make demo-agent` replays it offline, its replay
matches the committed baseline, and its recordings are what the stand-in answers."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
AGENT = REPO / "examples" / "agent"
BLOCKED = ("close-account", "refund-damaged")


def demo(out: Path) -> subprocess.CompletedProcess[str]:
    """`make demo-agent` as a person runs it, with this interpreter's casegate and the
    results written to `out` (RUNTIME emptied: the venv is the one running the tests)."""
    make = shutil.which("make")
    assert make is not None
    settings = [f"BIN={Path(sys.executable).parent}", "RUNTIME=", f"AGENT_OUT={out}"]
    return subprocess.run(
        [make, "--no-print-directory", "demo-agent", *settings],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def cases_by_id(path: Path) -> dict[str, dict[str, Any]]:
    return {case["id"]: case for case in json.loads(path.read_text())["cases"]}


def test_make_demo_agent_replays_and_blocks_the_candidate(tmp_path: Path) -> None:
    finished = demo(tmp_path)
    assert finished.returncode == 0, finished.stderr
    replayed = cases_by_id(tmp_path / "agent-results.json")
    baseline = cases_by_id(AGENT / "baseline.json")
    assert sorted(replayed) == sorted(baseline)
    for case_id, case in baseline.items():
        got = replayed[case_id]
        assert (got["status"], got["reason"], got["checks"], got["expect_hash"]) == (
            case["status"],
            case["reason"],
            case["checks"],
            case["expect_hash"],
        ), case_id
    candidate = cases_by_id(tmp_path / "agent-candidate.json")
    failed = sorted(case_id for case_id, case in candidate.items() if case["status"] != "pass")
    assert failed == sorted(BLOCKED)
    refund = {c["check"]: c for c in candidate["refund-damaged"]["checks"]}["trajectory"]
    # the fast prompt skips check_refund_policy: 2 of the 3 expected steps in order
    assert (refund["ok"], refund["score"]) == (False, 2 / 3)
    closing = {c["check"]: c for c in candidate["close-account"]["checks"]}["trajectory"]
    assert "called forbidden tool: delete_account (step 1)" in closing["reason"]
    assert closing["score"] == 0.0  # handoff_to_human, the one tool expected, never called
    assert (
        "2 critical case(s) passed on the baseline and fail on the candidate: "
        "close-account, refund-damaged"
    ) in finished.stdout
    assert finished.stdout.count("BLOCK: agent") == 1


def _stand_in() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agent_example_system", AGENT / "agent_system.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_recordings_hold_what_the_stand_in_answers() -> None:
    # Recorded once with `casegate record`; if agent_system.py changes, record again.
    respond = _stand_in().respond
    cases = yaml.safe_load((AGENT / "cases" / "agent.yaml").read_text())
    for config in ("casegate.yml", "casegate.candidate.yml"):
        system = yaml.safe_load((AGENT / config).read_text())["system"]
        system["prompt"] = (AGENT / system["prompt_file"]).read_text()
        for case in cases:
            answer = respond(dict(case["input"]), system)
            recording = json.loads((AGENT / "recordings" / f"{case['id']}.json").read_text())
            recorded = [
                entry["output"]
                for entry in recording["responses"].values()
                if entry["system"] == system["name"]
            ]
            assert len(recorded) == 1, (config, case["id"])
            shown = {key: recorded[0].get(key, []) for key in ("text", "tool_calls", "contexts")}
            assert shown == {key: answer[key] for key in shown}, (config, case["id"])


def test_the_example_uses_every_new_metric() -> None:
    expects = [
        case["expect"] for case in yaml.safe_load((AGENT / "cases" / "agent.yaml").read_text())
    ]
    used = set().union(*expects)
    wanted = {"trajectory", "rouge_n", "rouge_l", "bleu", "chrf", "token_f1"}
    wanted |= {"retrieval_recall", "retrieval_precision", "mrr", "ndcg", "tool_args_valid"}
    assert wanted <= used
