"""The RAG metrics through the pinned judge (gate.checks.ragjudge): the judge lists, code
counts. Each metric's arithmetic against hand-computed vectors, the strict reading of the
judge's lists, contexts from the system or the case input (none: UNMEASURED), and the
metrics end to end through the CLI with a python stand-in judge and recordings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate import checks
from gate.checks.base import UNMEASURED, Modifiers
from gate.checks.ragjudge import (
    average_precision,
    parse_claims,
    parse_relevance,
    question_of,
    render_contexts,
)
from gate.cli import main
from gate.outputs import Context, Output
from tests.conftest import Project, case

# --- the arithmetic, by hand -----------------------------------------------------------


@pytest.mark.parametrize(
    ("relevant", "expected"),
    [
        ([True, True, True], 1.0),
        ([False, False], 0.0),
        ([True, False, True], (1 / 1 + 2 / 3) / 2),  # 0.8333…
        ([False, True, True], (1 / 2 + 2 / 3) / 2),  # 0.5833…
        ([False, False, True], (1 / 3) / 1),
        ([True, False, False, True], (1 + 2 / 4) / 2),  # 0.75
    ],
)
def test_context_precision_is_rank_weighted_average_precision(
    relevant: list[bool], expected: float
) -> None:
    assert average_precision(relevant) == pytest.approx(expected, abs=1e-12)


@given(st.lists(st.booleans(), min_size=1, max_size=12))
def test_average_precision_is_bounded_and_rewards_relevant_first(relevant: list[bool]) -> None:
    value = average_precision(relevant)
    assert 0.0 <= value <= 1.0
    assert value >= average_precision(sorted(relevant))  # relevant last scores no higher
    assert average_precision(sorted(relevant, reverse=True)) == (1.0 if any(relevant) else 0.0)


# --- reading the judge's lists strictly -------------------------------------------------


def test_a_claim_list_reads_as_its_verdicts() -> None:
    answer = "SUPPORTED: returns take 30 days\nUNSUPPORTED: shipping is free\nEND"
    assert parse_claims(answer) == [(True, "returns take 30 days"), (False, "shipping is free")]
    assert parse_claims("END") == []
    assert parse_claims("\n  SUPPORTED:  padded  \n\nEND\n") == [(True, "padded")]


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "SUPPORTED: a",  # no END: cut off
        "SUPPORTED: a\nUNSUPPORTED: b",
        "supported: a\nEND",
        "SUPPORTED a\nEND",
        "SUPPORTED:\nEND",
        "PARTLY: a\nEND",
        "SUPPORTED: a\nEND\nSUPPORTED: b",  # a line after END
        "Here are the claims:\nSUPPORTED: a\nEND",
        "SUPPORTED: a\nEND.",
        "SUPPORTED: x\n" * 101 + "END",
    ],
)
def test_every_malformed_claim_list_is_a_problem(answer: str) -> None:
    assert isinstance(parse_claims(answer), str)


def test_a_relevance_list_must_rate_every_passage_in_order() -> None:
    assert parse_relevance("1: RELEVANT: holds it\n2: IRRELEVANT\nEND", 2) == [True, False]
    for bad in [
        "1: RELEVANT\nEND",  # one of two
        "2: RELEVANT\n1: RELEVANT\nEND",  # out of order
        "1: RELEVANT\n1: IRRELEVANT\nEND",
        "1: RELEVANT\n2: MAYBE\nEND",
        "1: RELEVANT\n2: IRRELEVANT",  # no END
        "1 RELEVANT\n2 IRRELEVANT\nEND",
    ]:
        assert isinstance(parse_relevance(bad, 2), str), bad


def test_the_question_is_the_inputs_question_else_the_whole_input() -> None:
    assert question_of({"question": "How long do returns take?", "user": "u1"}) == (
        "How long do returns take?"
    )
    whole = question_of({"query": "returns", "lang": "en"})
    assert json.loads(whole) == {"query": "returns", "lang": "en"}


def test_contexts_are_shown_numbered_with_their_ids() -> None:
    shown = render_contexts((Context(id="returns", text="30 days."), Context(text="Free.")))
    assert shown == "[1] (id: returns)\n30 days.\n\n[2]\nFree."


# --- each metric on one subject, with a grader that answers from a list ---------------------


class Answers:
    """What a check sees of the judge: `ask(...)` answers the next text; keeps the asks."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.asked: list[tuple[Any, dict[str, str]]] = []

    def ask(self, case_id: str, asked: dict[str, str], repeat: Any = None, *, kind: Any = None):
        self.asked.append((kind, dict(asked)))
        return Output(text=self.texts.pop(0))


class _Case:
    id = "c"


def _run(name: str, spec: dict[str, Any], grader: Answers, **subject: Any) -> checks.Verdict:
    judge = checks.REGISTRY[name](name, spec, Modifiers())
    case_input = subject.pop("case_input", {"question": "How long do returns take?"})
    return judge(
        checks.Subject(
            "Returns take 30 days; shipping is free.",
            case_input,
            case=_Case(),
            grader=grader,
            **subject,
        )
    )


RETRIEVED = (
    Context(id="returns", text="Returns are accepted within 30 days."),
    Context(id="hours", text="We open at 9."),
)


def test_faithfulness_is_supported_claims_over_claims_and_names_the_unsupported() -> None:
    grader = Answers(
        "SUPPORTED: returns take 30 days\nUNSUPPORTED: shipping is free\n"
        "SUPPORTED: returns are possible\nEND"
    )
    verdict = _run("faithfulness", {"threshold": 0.6}, grader, contexts=RETRIEVED)
    assert verdict.score == pytest.approx(2 / 3) and verdict.ok
    assert "2/3 claims supported" in verdict.reason and "'shipping is free'" in verdict.reason
    [(kind, asked)] = grader.asked
    assert kind == "faithfulness" and set(asked) == {"contexts", "answer"}
    assert asked["contexts"] == render_contexts(RETRIEVED)
    strict = _run(
        "faithfulness",
        {"threshold": 0.7},
        Answers(grader_text := ("SUPPORTED: a\nUNSUPPORTED: b\nSUPPORTED: c\nEND")),
        contexts=RETRIEVED,
    )
    assert not strict.ok and strict.score == pytest.approx(2 / 3), grader_text


def test_faithfulness_of_an_answer_without_claims_is_unmeasured_never_a_pass() -> None:
    verdict = _run("faithfulness", {"threshold": 0.0}, Answers("END"), contexts=RETRIEVED)
    assert (verdict.ok, verdict.score) == (False, UNMEASURED)
    assert "no claims" in verdict.reason


def test_a_malformed_metric_answer_fails_unmeasured() -> None:
    for name, spec in [
        ("faithfulness", {"threshold": 0.0}),
        ("context_recall", {"reference": "30 days.", "threshold": 0.0}),
        ("context_precision", {"reference": "30 days.", "threshold": 0.0}),
        ("answer_relevance", {"threshold": 0.0}),
    ]:
        verdict = _run(name, spec, Answers("Looks good to me!"), contexts=RETRIEVED)
        assert (verdict.ok, verdict.score) == (False, UNMEASURED), name
        assert "the judge's answer" in verdict.reason


def test_answer_relevance_normalises_one_to_five() -> None:
    grader = Answers("SCORE 4: mostly")
    verdict = _run("answer_relevance", {"threshold": 0.75}, grader)
    assert (verdict.ok, verdict.score) == (True, 0.75)
    [(kind, asked)] = grader.asked
    assert kind == "answer_relevance" and asked["question"] == "How long do returns take?"
    low = _run("answer_relevance", {"threshold": 0.75}, Answers("SCORE 3: half"))
    assert (low.ok, low.score) == (False, 0.5)


def test_context_recall_counts_the_references_supported_statements() -> None:
    grader = Answers(
        "SUPPORTED: returns within 30 days\nUNSUPPORTED: refunds in 5 days\n"
        "UNSUPPORTED: free label\nSUPPORTED: in any store\nEND"
    )
    spec = {"reference": "Returns within 30 days, in any store.", "threshold": 0.5}
    verdict = _run("context_recall", spec, grader, contexts=RETRIEVED)
    assert (verdict.ok, verdict.score) == (True, 0.5)
    assert "2/4 statements" in verdict.reason
    [(kind, asked)] = grader.asked
    assert kind == "context_recall" and asked["reference"] == spec["reference"]


def test_context_precision_weights_by_rank() -> None:
    spec = {"reference": "Returns within 30 days.", "threshold": 0.8}
    first = _run(
        "context_precision", spec, Answers("1: RELEVANT\n2: IRRELEVANT\nEND"), contexts=RETRIEVED
    )
    assert (first.ok, first.score) == (True, 1.0)
    second = _run(
        "context_precision", spec, Answers("1: IRRELEVANT\n2: RELEVANT\nEND"), contexts=RETRIEVED
    )
    assert (second.ok, second.score) == (False, 0.5)
    assert "relevant at rank(s) 2 of 2" in second.reason


def test_contexts_come_from_the_case_input_when_the_system_returns_none() -> None:
    grader = Answers("SUPPORTED: a\nEND")
    case_input = {
        "question": "q",
        "contexts": ["Returns within 30 days.", {"id": "x", "text": "t"}],
    }
    verdict = _run("faithfulness", {"threshold": 1}, grader, case_input=case_input)
    assert verdict.ok
    assert grader.asked[0][1]["contexts"] == "[1]\nReturns within 30 days.\n\n[2] (id: x)\nt"


@pytest.mark.parametrize("name", ["faithfulness", "context_recall", "context_precision"])
def test_without_contexts_a_metric_fails_unmeasured_and_says_where_they_come_from(
    name: str,
) -> None:
    spec = {"threshold": 0.0} | ({} if name == "faithfulness" else {"reference": "r"})
    grader = Answers()
    verdict = _run(name, spec, grader)
    assert (verdict.ok, verdict.score) == (False, UNMEASURED)
    assert "return `contexts` from the system, or give `contexts:` in the case input" in (
        verdict.reason
    )
    assert grader.asked == []  # nothing to ask about


def test_without_a_judge_pinned_a_metric_fails() -> None:
    judge = checks.REGISTRY["faithfulness"]("faithfulness", {"threshold": 0.5}, Modifiers())
    verdict = judge(checks.Subject("a", {}, contexts=RETRIEVED))
    assert not verdict.ok and "no judge is pinned" in verdict.reason


@pytest.mark.parametrize(
    ("name", "spec", "said"),
    [
        ("faithfulness", {}, "faithfulness takes {threshold"),
        ("faithfulness", {"threshold": 2}, "threshold takes a number from 0 to 1"),
        ("faithfulness", {"threshold": 0.5, "reference": "r"}, "faithfulness takes"),
        ("faithfulness", 0.5, "faithfulness takes"),
        ("answer_relevance", {"threshold": None}, "threshold takes"),
        ("context_recall", {"threshold": 0.5}, "reference takes the reference answer"),
        ("context_recall", {"reference": " ", "threshold": 0.5}, "reference takes"),
        ("context_precision", {"reference": "r"}, "context_precision takes"),
    ],
)
def test_bad_metric_specs_are_load_errors(name: str, spec: Any, said: str) -> None:
    with pytest.raises(checks.CheckSpecError, match=said):
        checks.REGISTRY[name](name, spec, Modifiers())


def test_the_gate_asks_the_metrics_itself() -> None:
    assert {"faithfulness", "answer_relevance", "context_recall", "context_precision"} <= (
        checks.RUN_JUDGED
    )
    assert checks.uses_judge({"faithfulness": {"threshold": 0.5}})


# --- end to end: a RAG system, a python stand-in judge, recordings --------------------------

RAG_SYSTEM = """
DOCS = {
    "returns": "Returns are accepted within 30 days of delivery.",
    "shipping": "Standard shipping takes 3 to 5 business days.",
}

def answer(case_input, system):
    question = case_input["question"]
    ids = ["returns", "shipping"] if "return" in question else ["shipping", "returns"]
    text = "Returns take 30 days." if "return" in question else "Shipping is free and instant."
    return {"text": text, "contexts": [{"id": i, "text": DOCS[i]} for i in ids]}
"""

RAG_JUDGE = """
import re

def grade(asked, system):
    prompt = system["prompt"]
    if "numbered passage" in prompt:  # context_precision
        lines = [
            f"{n}: {'RELEVANT' if 'Returns' in text else 'IRRELEVANT'}"
            for n, text in enumerate(re.split(r"\\n\\n(?=\\[\\d+\\])", asked["contexts"]), 1)
        ]
        return "\\n".join([*lines, "END"])
    if "reference answer into its statements" in prompt:  # context_recall
        return "SUPPORTED: returns within 30 days\\nUNSUPPORTED: refunds in 5 days\\nEND"
    if "how well an answer addresses" in prompt:  # answer_relevance
        return "SCORE 5: direct" if "Returns" in asked["answer"] else "SCORE 2: off"
    # faithfulness
    claims = [c.strip() for c in asked["answer"].split(" and ") if c.strip()]
    return "\\n".join(
        [*(f"{'SUPPORTED' if '30 days' in c else 'UNSUPPORTED'}: {c}" for c in claims), "END"]
    )
"""

RAG_EXPECT = {
    "faithfulness": {"threshold": 0.9},
    "answer_relevance": {"threshold": 0.75},
    "context_recall": {"reference": "Returns within 30 days; refunds in 5 days.", "threshold": 0.5},
    "context_precision": {"reference": "Returns within 30 days.", "threshold": 0.9},
}


def rag_project(project: Project, **pin: Any) -> None:
    # Module names unique per test: an imported module is never stood in for by another.
    bot, judge = f"{project.module}_rag", f"{project.module}_judge"
    project.write_text(f"{bot}.py", RAG_SYSTEM)
    project.write_text(f"{judge}.py", RAG_JUDGE)
    project.write_config(
        system={"name": "rag", "provider": "python", "target": f"{bot}:answer"},
        judge={"provider": "python", "target": f"{judge}:grade", "model": "standin", **pin},
    )
    project.write_cases(
        [
            case("returns", "How do returns work?", **RAG_EXPECT),
            case("shipping", "How long is shipping?", **RAG_EXPECT),
        ]
    )


def _checks(path: str, case_id: str) -> dict[str, tuple[bool, float | None]]:
    cases = {c["id"]: c for c in json.loads(Path(path).read_text())["cases"]}
    return {c["check"]: (c["ok"], c.get("score")) for c in cases[case_id]["checks"]}


def test_the_metrics_record_and_replay_through_the_cli(project: Project) -> None:
    rag_project(project)
    assert main(["record", "--quiet", "--out", "rec.json"]) == 0
    assert main(["run", "--quiet", "--out", "replay.json"]) == 0
    returns = _checks("replay.json", "returns")
    assert returns == {
        "faithfulness": (True, 1.0),
        "answer_relevance": (True, 1.0),
        "context_recall": (True, 0.5),
        "context_precision": (True, 1.0),  # the relevant passage ranked first
    }
    shipping = _checks("replay.json", "shipping")
    assert shipping["faithfulness"] == (False, 0.0)
    assert shipping["answer_relevance"] == (False, 0.25)
    assert shipping["context_precision"] == (False, 0.5)  # relevant at rank 2 of 2
    assert _checks("rec.json", "shipping") == shipping


def test_a_replay_without_the_metrics_answers_is_refused_naming_the_case(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    rag_project(project)
    assert main(["record", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["run", "--quiet", "--set", "judge.temperature=0.5"]) == 2
    err = capsys.readouterr().err
    assert "no judge recording for 2 case(s)" in err and "returns" in err


def _answers(folder: str = "recordings") -> int:
    return sum(len(json.loads(p.read_text())["responses"]) for p in Path(folder).glob("*.json"))


def test_prune_keeps_every_metric_answer_and_drops_a_removed_ones(project: Project) -> None:
    rag_project(project, consistency=2)
    assert main(["record", "--quiet"]) == 0
    recorded = _answers()
    assert recorded == 2 * (1 + 4 * 2)  # per case: its output, four metrics asked twice
    assert main(["recordings", "prune"]) == 0
    assert _answers() == recorded  # every answer is in use: nothing pruned
    assert main(["run", "--quiet", "--out", "replay.json"]) == 0
    # The control: a metric taken off the cases leaves its answers unused, and prune sees it.
    expect = {k: v for k, v in RAG_EXPECT.items() if k != "context_precision"}
    project.write_cases([case("returns", "How do returns work?", **expect)])
    assert main(["recordings", "prune"]) == 0
    assert _answers() == 1 + 3 * 2
    assert main(["run", "--quiet", "--out", "replay.json"]) == 0


def test_a_report_on_metrics_alone_names_the_judge_and_its_missing_calibration(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    rag_project(project)
    project.write_cases([case("returns", "How do returns work?", faithfulness={"threshold": 1})])
    assert main(["record", "--quiet", "--out", "a.json"]) == 0
    capsys.readouterr()
    assert main(["compare", "a.json", "a.json", "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert "LLM judge: python standin" in out
    assert "the LLM judge has never been calibrated for this suite" in out
