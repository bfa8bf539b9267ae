"""The score sections of the reports (gate.reporting.scorereport)."""

from __future__ import annotations

import json

from gate.deciding.compare import compare
from gate.deciding.rules import decide
from gate.reporting.report import json_report, markdown_report, text_report
from gate.suite.config import GateConfig
from tests.deciding.scored import scored, scored_run

RULE = GateConfig.model_validate({"max_mean_score_drop": {"check": "similar", "drop": 0.05}})


def _pair() -> tuple[object, object]:
    base = [
        scored("a-steady", [0.8, 0.8, 0.8]),
        scored("b-slips", [0.9, 0.9, 0.9]),
        scored("c-falls", [0.9, 0.8, 0.9]),
        scored("d-rises", [0.5, 0.6, 0.55]),
        scored("e-gone", [0.7, 0.7, 0.7]),
    ]
    cand = [
        scored("a-steady", [0.8, 0.8, 0.8]),
        scored("b-slips", [0.85, 0.8, 0.85]),
        scored("c-falls", [0.3, 0.2, 0.45]),  # every sample now fails (threshold 0.5)
        scored("d-rises", [0.7, 0.75, 0.7]),
        scored("e-gone", [None, None, None]),
    ]
    comparison = compare(scored_run(base, samples=3), scored_run(cand, samples=3), RULE)
    return comparison, decide(comparison, RULE)


def test_markdown_lists_score_changes_largest_fall_first_beside_the_flips() -> None:
    comparison, verdict = _pair()
    report = markdown_report(comparison, verdict)  # type: ignore[arg-type]
    section = report[report.index("#### Scores") :]
    order = [section.index(f"`{i}`") for i in ("e-gone", "c-falls", "b-slips", "d-rises")]
    assert order == sorted(order)
    assert "`a-steady`" not in section.split("pass^")[0]  # unchanged: not listed
    falls = next(line for line in section.splitlines() if "`c-falls`" in line)
    assert "-0.550" in falls and "pass → fail" in falls
    assert "no score on the candidate" in section
    assert "pass^3 (all 3 samples pass)" in section


def test_text_and_json_carry_the_scores() -> None:
    comparison, verdict = _pair()
    text = text_report(comparison, verdict)  # type: ignore[arg-type]
    assert "scores similar: mean change" in text
    assert "c-falls: 0.867 → 0.317" in text
    data = json.loads(json.dumps(json_report(comparison, verdict)))  # type: ignore[arg-type]
    cases = data["scores"]["checks"]["similar"]["cases"]
    assert cases["c-falls"]["change"] < cases["b-slips"]["change"] < 0
    assert data["scores"]["checks"]["similar"]["missing_on_candidate"] == ["e-gone"]
    assert data["scores"]["pass_k"]["cases"]["c-falls"]["candidate_pass_hat_k"] == 0.0


def test_a_hostile_check_name_and_case_id_are_escaped() -> None:
    hostile = "x|y @team <b>"
    base = [scored(hostile, [0.9, 0.9], check="s|@owner")]
    cand = [scored(hostile, [0.1, 0.2], check="s|@owner")]
    comparison = compare(scored_run(base), scored_run(cand), GateConfig())
    section = markdown_report(comparison, decide(comparison, GateConfig()))
    scores = section[section.index("#### Scores") :]
    assert "<b>" not in scores
    assert "@team" not in scores and "@owner" not in scores


def test_the_score_section_leaves_nothing_a_forks_report_check_would_refuse() -> None:
    """pass@3 in a table header once read as a live mention, and every fork's report was
    refused (gate.github.forkcomment)."""
    from gate.reporting.markup import neutralise

    comparison, verdict = _pair()
    report = markdown_report(comparison, verdict)  # type: ignore[arg-type]
    assert "pass@" in report.replace("\u200b", "")
    assert neutralise(report) == report
