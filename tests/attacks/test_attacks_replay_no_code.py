"""Attacks on the replayed check (issue 21): can any of the pull request's code run in the gate's own process during a
replayed `casegate check`? The python system, a custom check, a python embedder and a
python judge are all rewritten, after recording, to note every process that imports them.

Every test asserts the SAFE outcome: a failing test means the attack worked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gate.cli import main
from tests.conftest import Project, case

SPY = """
import json as _json, os as _os, sys as _sys
with open({marker!r}, "a") as _stream:
    _stream.write(_json.dumps({{"pid": _os.getpid(), "argv": _sys.orig_argv}}) + "\\n")
"""

SYSTEM = "def answer(case_input, system):\n    return 'hello ' + case_input['question']\n"
CHECK = "def ok(text, case):\n    return 'hello' in text\n"
EMBED = "def embed(texts):\n    return [[1.0, float(len(t) % 3 + 1)] for t in texts]\n"
JUDGE = "def grade(judge_input, system):\n    return 'PASS: fine'\n"


def test_a_replayed_check_imports_none_of_the_pull_requests_modules(project: Project) -> None:
    m = project.module
    files = {
        f"sys_{m}": SYSTEM,
        f"chk_{m}": CHECK,
        f"emb_{m}": EMBED,
        f"jdg_{m}": JUDGE,
    }
    for name, body in files.items():
        project.write_text(f"{name}.py", body)
    project.write_config(
        system={"name": "echo", "provider": "python", "target": f"sys_{m}:answer"},
        judge={"provider": "python", "target": f"jdg_{m}:grade"},
        embeddings={"provider": "python", "target": f"emb_{m}:embed", "model": "e1"},
    )
    project.write_cases(
        [
            case("a", "a", check=f"chk_{m}:ok", fields_={"critical": True}),
            case("b", "b", judge={"rubric": "says hello"}),
            case("c", "c", similar={"to": "hello c", "method": "embedding", "min": 0.1}),
        ]
    )
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    marker = project.root / "imported.jsonl"
    for name, body in files.items():
        project.write_text(f"{name}.py", SPY.format(marker=str(marker)) + body)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    checked = subprocess.run(
        [sys.executable, "-m", "gate", "check", "--quiet", "--sandbox", "off", "--out", "c.json"],
        cwd=project.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    seen = [json.loads(line) for line in marker.read_text().splitlines()] if marker.exists() else []
    in_gate = [s for s in seen if "gate.judging.judgeworker" not in " ".join(s["argv"])]
    assert in_gate == [], in_gate
    # The custom check was imported, by the judging process only.
    assert any("gate.judging.judgeworker" in " ".join(s["argv"]) for s in seen)
    assert "replay: no code of the suite ran" in checked.stdout + checked.stderr
