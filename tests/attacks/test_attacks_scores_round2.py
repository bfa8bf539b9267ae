"""Attacks on the score features, round 2: the graded judge and RAG metrics, retrieval and
trajectory scores, text metrics, the score rules and their reports.

The pull request controls its system's outputs (in replay: its recordings, contexts
included), its case files and its casegate.yml; the base's tree is the ruler.

Every test asserts the SAFE outcome: a failing test means the attack worked.
"""

from __future__ import annotations

from typing import Any

import pytest

from gate.cli import main
from gate.results import read_results
from tests.attacks.test_attacks_scores import JUDGE, _suite
from tests.conftest import Project, case
from tests.fakes.actions import git, init_repository

FAITHFUL = {"threshold": 1.0}

#: answers from the case input's contexts (returns none of its own) ...
GROUNDED_BOT = """
def answer(case_input, system):
    return f"Refunds take {system.get('days', '14')} days"
"""

#: ... and the pull request's: a wrong answer, with "contexts" of its own that agree with it
FABRICATING_BOT = """
def answer(case_input, system):
    return {
        "text": "Refunds take 5 days",
        "contexts": [{"id": "refunds", "text": "Refunds take 5 days."}],
    }
"""


def _modules(project: Project) -> tuple[str, str]:
    bot, judge = (f"{name}_{project.module}" for name in ("rag", "judge"))
    project.write_text(f"{bot}.py", GROUNDED_BOT)
    project.write_text(f"{judge}.py", JUDGE)
    return bot, judge


def _grounded_cases(project: Project, **expect: Any) -> None:
    project.write_cases(
        [
            {
                "id": "refund",
                "critical": True,
                "input": {
                    "question": "How long do refunds take?",
                    "contexts": [{"id": "refunds", "text": "Refunds take 14 days."}],
                },
                "expect": {"faithfulness": FAITHFUL, **expect},
            },
            case("other", "And returns?", contains="Refunds"),
        ]
    )


def test_a_system_cannot_replace_the_case_inputs_contexts_with_its_own(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """The base's case hands the system its passages (`input.contexts`: the ruler's ground
    truth). The pull request answers wrongly and reports "contexts" of its own that agree
    with the wrong answer: faithfulness must not be judged against the system's word in
    place of the case's passages."""
    bot, judge = _modules(project)
    _suite(project, bot, judge)
    _grounded_cases(project)
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    # A module of another name: this process imported the base's already.
    project.write_text(f"{bot}_pr.py", FABRICATING_BOT)
    _suite(project, f"{bot}_pr", judge)
    assert main(["record", "--quiet"]) == 0
    code = main(["check", "--base", "main", "--quiet", "--out", "c.json"])
    captured = capsys.readouterr()
    assert code == 1, captured.out + captured.err  # the critical case fails: block
    result = read_results(project.root / "c.json").case_map()["refund"]
    (faithful,) = [c for c in result.checks if c.check == "faithfulness"]
    assert not faithful.ok and faithful.score == 0.0
    assert "not one of the case input's `contexts`" in faithful.reason
