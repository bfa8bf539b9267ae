"""Calibrating a graded judge and the RAG metrics: labels are pass or fail, judged as the
gate judges them (the score held to the case's threshold), pooled with the pass/fail
labels; `check` names which judged check a label is about, `contexts` what it read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.cli import main
from tests.conftest import Project, case

#: scores an output by its length in words (graded); a claim is supported when the
#: contexts hold it word for word (faithfulness); pass/fail by the word "sorry"
JUDGE = """
def grade(asked, system):
    prompt = system["prompt"]
    if "factual claims" in prompt:
        claims = [c.strip() for c in asked["answer"].split(".") if c.strip()]
        lines = [
            ("SUPPORTED: " if c in asked["contexts"] else "UNSUPPORTED: ") + c for c in claims
        ]
        return "\\n".join([*lines, "END"])
    if "SCORE <n>" in prompt:
        return f"SCORE {min(5, len(asked['output'].split()))}: by length"
    return "PASS: sorry" if "sorry" in asked["output"] else "FAIL: no sorry"
"""

GRADED = {"rubric": "Says enough.", "scale": "1-5", "threshold": 0.75}  # 4 words or more


def _suite(project: Project) -> None:
    judge = f"judge_{project.module}"
    project.write_text(f"{judge}.py", JUDGE)
    project.write_config(judge={"provider": "python", "target": f"{judge}:grade", "model": "s"})
    project.write_cases(
        [
            case("graded", "q", judge=GRADED),
            case("both", "q", judge={"rubric": "Apologises."}, faithfulness={"threshold": 1}),
            case("rag", "q", faithfulness={"threshold": 1}, answer_relevance={"threshold": 0.5}),
        ]
    )


def _labels(project: Project, *lines: dict[str, object]) -> None:
    project.write_text("labels.jsonl", "".join(json.dumps(line) + "\n" for line in lines))


CONTEXTS = ["Refunds take 5 days", {"id": "k", "text": "Returns take 30 days"}]


def test_graded_and_metric_labels_are_judged_at_their_threshold_and_pooled(
    project: Project,
) -> None:
    _suite(project)
    _labels(
        project,
        # graded: 4 words scores 4 (0.75): pass; 2 words scores 2: fail
        {"case": "graded", "output": "one two three four", "verdict": "pass"},
        {"case": "graded", "output": "one two", "verdict": "pass"},  # the judge fails it
        # `both`: the pass/fail judge by default, faithfulness when named
        {"case": "both", "output": "sorry", "verdict": "pass"},
        {"case": "both", "check": "faithfulness", "output": "Refunds take 5 days.",
         "contexts": CONTEXTS, "verdict": "pass"},
        {"case": "rag", "check": "faithfulness", "output": "Refunds take 9 days.",
         "contexts": CONTEXTS, "verdict": "fail"},
        {"case": "rag", "check": "faithfulness", "output": "Returns take 30 days.",
         "contexts": CONTEXTS, "verdict": "fail"},  # the judge passes it: a false pass
    )  # fmt: skip
    assert main(["judge", "calibrate", "--mode", "record", "labels.jsonl", "--out", "c.json"]) == 1
    result = json.loads(Path("c.json").read_text())
    assert (result["labels"], result["judged"], result["errors"]) == (6, 6, 0)
    assert result["confusion"] == {
        "both_pass": 3,
        "both_fail": 1,
        "judge_pass_human_fail": 1,
        "judge_fail_human_pass": 1,
    }
    assert result["agreement"] == pytest.approx(4 / 6)
    assert result["false_pass_rate"] == pytest.approx(1 / 2)
    missed = {(m["line"], m["judge"]) for m in result["disagreements"]}
    assert missed == {(2, "fail"), (6, "pass")}
    # Replayed for free, to the same figures.
    assert main(["judge", "calibrate", "labels.jsonl", "--out", "again.json"]) == 1
    again = json.loads(Path("again.json").read_text())
    assert again["confusion"] == result["confusion"]


@pytest.mark.parametrize(
    ("label", "said"),
    [
        ({"case": "rag", "output": "x", "verdict": "pass"}, "say which with `check`"),
        ({"case": "graded", "check": "faithfulness", "output": "x", "verdict": "pass"},
         "check must be one of the case's judged checks (judge)"),
        ({"case": "rag", "check": "faithfulness", "output": "x", "verdict": "pass",
          "contexts": "not a list"}, "contexts must be a list"),
        ({"case": "rag", "check": "faithfulness", "output": "x", "verdict": "pass",
          "contexts": [{"txt": "typo"}]}, "contexts must be a list"),
    ],
)  # fmt: skip
def test_a_label_that_cannot_say_what_it_is_about_is_refused_naming_its_line(
    project: Project, capsys: pytest.CaptureFixture[str], label: dict[str, object], said: str
) -> None:
    _suite(project)
    _labels(project, {"case": "graded", "output": "fine words here now", "verdict": "pass"}, label)
    assert main(["judge", "calibrate", "--mode", "record", "labels.jsonl"]) == 2
    err = capsys.readouterr().err
    assert "labels.jsonl:2:" in err and said in err
