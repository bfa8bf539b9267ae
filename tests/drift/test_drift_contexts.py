"""Drift counts a changed retrieval: the same answer from other passages has drifted."""

from __future__ import annotations

import json
from pathlib import Path

from gate.cli import main
from tests.conftest import Project

#: answers the same words whatever it retrieved; the ranking comes from a file the test edits
RANKED_BOT = """
from pathlib import Path

def answer(case_input, system):
    order = Path(__file__).with_name("ranking.txt").read_text().split()
    return {"text": "Refunds take 5 to 7 business days.",
            "contexts": [{"id": ident, "text": f"passage {ident}"} for ident in order]}
"""


def test_a_changed_ranking_is_a_changed_output_with_its_diff(project: Project) -> None:
    project.write_system(RANKED_BOT)
    (project.root / "ranking.txt").write_text("kb-1 kb-2")
    project.write_cases(
        [{"id": "refund", "input": {"question": "refund?"}, "expect": {"contains": "5 to 7"}}]
    )
    assert main(["record", "--quiet", "--out", "rec.json"]) == 0
    (project.root / "ranking.txt").write_text("kb-3 kb-1")
    code = main(["drift", "--quiet", "--format", "json", "--out", "drift.json"])
    report = json.loads(Path("drift.json").read_text())
    assert code == 0  # no verdict flipped
    assert report["changed_outputs"] == ["refund"]
    [sample] = report["cases"][0]["samples"]
    assert sample["diff"][-4:] == [
        "- context: kb-1: passage kb-1",
        "- context: kb-2: passage kb-2",
        "+ context: kb-3: passage kb-3",
        "+ context: kb-1: passage kb-1",
    ]
    # Nothing retrieved differently: no drift.
    (project.root / "ranking.txt").write_text("kb-1 kb-2")
    main(["drift", "--quiet", "--format", "json", "--out", "drift.json"])
    assert json.loads(Path("drift.json").read_text())["changed_outputs"] == []
