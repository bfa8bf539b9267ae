"""Calibrating the pairwise judge: labels of which output is better, judged in both orders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate.cli import main
from gate.judging.calibration import cohen_kappa, cohen_kappa_of
from tests.conftest import Project, case
from tests.fakes.llm_server import FakeLLMServer
from tests.judging.test_pairwise import PAIRWISE, RUBRIC, first_shown, pairwise_project, prefers


@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=60))
def test_kappa_over_categories_is_cohens_kappa_for_two(pairs: list[tuple[bool, bool]]) -> None:
    two = cohen_kappa(pairs)
    named = cohen_kappa_of([(str(a), str(b)) for a, b in pairs])
    if two is None:
        assert named is None
    else:
        assert named == pytest.approx(two)


def test_kappa_over_three_categories_known_value() -> None:
    # 10 pairs: person A,A,A,A,B,B,B,tie,tie,tie; judge A,A,A,B,B,B,tie,tie,tie,A
    person = ["A"] * 4 + ["B"] * 3 + ["tie"] * 3
    judge = ["A", "A", "A", "B", "B", "B", "tie", "tie", "tie", "A"]
    # po = 7/10; pe = .4*.4 + .3*.3 + .3*.3 = .34
    assert cohen_kappa_of(list(zip(person, judge, strict=True))) == pytest.approx(
        (0.7 - 0.34) / (1 - 0.34)
    )


def write_pairs(path: Path, rows: list[tuple[str, str, str, str]]) -> Path:
    path.write_text(
        "".join(
            json.dumps({"case": c, "baseline_output": b, "candidate_output": o, "label": label})
            + "\n"
            for c, b, o, label in rows
        )
    )
    return path


ROWS = [
    ("refund", "plain: x", "sorry: x", "B"),  # the judge says B: agree
    ("refund", "sorry: y", "plain: y", "A"),  # the judge says A: agree
    ("refund", "plain: z", "plain: z", "tie"),  # identical: a tie with no call, agree
    ("refund", "plain: w", "sorry: w", "A"),  # the judge says B: a loss it missed
]


def test_pairwise_labels_measure_agreement_missed_losses_and_order_bias(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.reply = prefers("sorry")
    pairwise_project(project, llm_server)
    labels = write_pairs(project.root / "pairs.jsonl", ROWS)
    assert main(["judge", "calibrate", str(labels), "--mode", "record"]) == 1  # 4 < 30 labels
    assert len(llm_server.received) == 6  # three differing pairs, both orders each
    out = capsys.readouterr().out
    assert "4 pairwise labels judged, fewer than min_labels 30" in out
    assert "pairwise labels: missed-loss rate 50%, above max_false_pass 0.1" in out
    assert "pairwise agreement: 75%" in out
    assert "missed-loss rate: 50%" in out  # of the two pairs a person gave to the baseline
    assert "order agreement: 100%" in out
    assert "pairs.jsonl:4: refund: person A (baseline better), judge B (candidate better)" in out
    stored = json.loads((project.root / "demo.judge-calibration.json").read_text())
    pairwise = stored["pairwise"]
    assert pairwise["confusion"]["person_A"] == {"judge_A": 1, "judge_B": 1, "judge_tie": 0}
    assert stored["labels"] == 0  # no pointwise label: those figures stay empty

    # Replayed for free; a report on a pairwise run quotes the pairwise calibration.
    assert main(["judge", "calibrate", str(labels)]) == 1
    assert len(llm_server.received) == 6
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    assert main(["record", "--quiet", "--set", "system.style=sorry"]) == 0
    assert main(["check", "--quiet", "--set", "system.style=sorry", "--report", "r.md"]) == 0
    markdown = Path("r.md").read_text()
    assert "pairwise: agreement 75% on 4 pairs, missed-loss 50%" in markdown


def test_a_judge_biased_by_position_shows_in_the_order_agreement(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.reply = first_shown
    pairwise_project(project, llm_server)
    labels = write_pairs(project.root / "pairs.jsonl", ROWS)
    assert main(["judge", "calibrate", str(labels), "--mode", "record"]) == 1
    out = capsys.readouterr().out
    assert "order agreement: 0%" in out  # every differing pair: ties by disagreement
    assert "pairwise agreement: 25%" in out  # only the identical pair, a tie, agrees


def test_pairwise_label_problems_name_the_line(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    pairwise_project(project, llm_server)
    project.write_cases(
        [
            case("refund", "i want a refund", judge=PAIRWISE),
            case("graded", "hello", judge={"rubric": RUBRIC}),
        ]
    )
    labels = project.root / "pairs.jsonl"
    labels.write_text(
        '{"case": "refund", "baseline_output": "a", "candidate_output": "b", "label": "C"}\n'
        '{"case": "graded", "baseline_output": "a", "candidate_output": "b", "label": "A"}\n'
        '{"case": "refund", "output": "a", "verdict": "pass"}\n'
        '{"case": "refund", "baseline_output": 3, "candidate_output": "b", "label": "A"}\n'
        '{"case": "refund", "baseline_output": "a", "label": "A", "extra": 1}\n'
    )
    assert main(["judge", "calibrate", str(labels)]) == 2
    err = capsys.readouterr().err
    assert "pairs.jsonl:1: label must be 'A' (the baseline_output is better)" in err
    assert "pairs.jsonl:2: case 'graded' has no pairwise judge" in err
    assert "pairs.jsonl:3: case 'refund' has a pairwise judge: label a pair instead" in err
    assert "pairs.jsonl:4: baseline_output and candidate_output must both be strings" in err
    assert "pairs.jsonl:5: expected {case, output, verdict}, or for a pairwise judge" in err
