"""A retrieval-augmented system's contexts: returned by the system, recorded with its
answer, replayed exactly, and read by the checks; a run cannot report other ones."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.deciding.recheck import UntrustedRun, recheck, snapshot
from gate.errors import SystemCallError
from gate.results import read_results
from gate.suite.project import load_project
from gate.systems.python import output_from_value
from tests.conftest import Project

RAG_BOT = """
def answer(case_input, system):
    documents = {"kb-1": "Refunds take 5 to 7 business days.", "kb-2": "Returns: 30 days."}
    ranked = sorted(documents, reverse=case_input["question"].startswith("return"))
    return {
        "text": documents[ranked[0]],
        "contexts": [{"id": ident, "text": documents[ident]} for ident in ranked],
    }
"""

#: a custom check that passes when the first retrieved passage is the one the case names
FIRST_PASSAGE = """
def first_is(text, case, sample, want):
    ids = [context.id for context in sample.contexts]
    return (bool(ids) and ids[0] == want, f"retrieved {ids}")
"""


def test_a_python_system_may_return_contexts_as_strings_or_id_and_text() -> None:
    output = output_from_value({"text": "a", "contexts": [{"id": "d1", "text": "x"}]}, "m:f")
    assert [(c.id, c.text) for c in output.contexts] == [("d1", "x")]
    with pytest.raises(SystemCallError, match="returned an invalid output"):
        output_from_value({"text": "a", "contexts": [{"id": "d1", "body": "x"}]}, "m:f")


def _rag_project(project: Project) -> None:
    project.write_system(RAG_BOT)
    # One module name per project: a test process imports each name once.
    checks = f"checks_{project.module}"
    (project.root / f"{checks}.py").write_text(FIRST_PASSAGE)
    project.write_cases(
        [
            {
                "id": "refund",
                "input": {"question": "refund timing"},
                "expect": {"check": {"fn": f"{checks}:first_is", "args": {"want": "kb-1"}}},
            },
            {
                "id": "returns",
                "input": {"question": "return window"},
                "expect": {"check": {"fn": f"{checks}:first_is", "args": {"want": "kb-2"}}},
            },
        ]
    )


def test_contexts_are_recorded_replayed_and_read_by_checks(project: Project) -> None:
    _rag_project(project)
    assert main(["record", "--out", "recorded.json", "--quiet"]) == 0
    assert main(["run", "--out", "replayed.json", "--quiet"]) == 0
    recorded = json.loads(Path("recorded.json").read_text())
    replayed = json.loads(Path("replayed.json").read_text())
    for results in (recorded, replayed):
        cases = {case["id"]: case for case in results["cases"]}
        assert cases["refund"]["status"] == "pass" and cases["returns"]["status"] == "pass"
        assert [c["id"] for c in cases["returns"]["outputs"][0]["contexts"]] == ["kb-2", "kb-1"]
    stored = json.loads((project.root / "recordings" / "returns.json").read_text())
    (entry,) = stored["responses"].values()
    assert [c["id"] for c in entry["output"]["contexts"]] == ["kb-2", "kb-1"]


@pytest.mark.parametrize(
    "forge",
    [
        lambda contexts: contexts.reverse(),  # the ranking the recall checks read
        lambda contexts: contexts.append({"id": "kb-9", "text": "planted"}),
        lambda contexts: contexts.clear(),  # fall back on the case input's contexts
    ],
)
def test_the_gate_refuses_a_run_whose_contexts_are_not_the_recorded_ones(
    project: Project, forge: Callable[[list[dict[str, Any]]], None]
) -> None:
    """The gate judges the run's outputs again against the recordings it read before the
    run started: a run that reports other contexts is refused, never judged on them."""
    _rag_project(project)
    assert main(["record", "--out", "run.json", "--quiet"]) == 0
    loaded, cases = load_project(project.config_path)
    before = snapshot(loaded, cases, "replay")
    claimed = read_results(project.root / "run.json")
    forge(claimed.case_map()["refund"].outputs[0].contexts)
    with pytest.raises(UntrustedRun, match="is not the recorded one"):
        recheck(claimed, loaded, cases, before)
    # The same results, untouched, are judged as the run said.
    honest = read_results(project.root / "run.json")
    assert recheck(honest, loaded, cases, before).case_map()["refund"].status == "pass"
