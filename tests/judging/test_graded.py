"""The graded judge (`judge: {rubric, scale, threshold}`): a score on a scale, normalised to
0–1 and held to a threshold; a malformed answer fails (never passes), an outage is an
error; its own prompt, so the pass/fail judge's prompt and keys are untouched."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate import checks
from gate.checks.base import UNMEASURED, Modifiers
from gate.checks.graded import SCALES, llm_judge, normalised, parse_score
from gate.cli import main
from gate.judging.judge import judge_input, pin_fingerprint
from gate.produce.recordings import request_key
from gate.suite.judgepin import GRADED_PROMPTS, PROMPT_TABLES, PROMPTS, JudgePin, judge_system
from tests.conftest import Project, case
from tests.fakes.llm_server import FakeLLMServer, Fault, Received, Reply
from tests.judging.test_judge import RUBRIC, judge_pin

GRADED = {"rubric": RUBRIC, "scale": "1-5", "threshold": 0.75}

# --- the answer, read strictly -------------------------------------------------------


def test_a_well_formed_answer_reads_as_its_score_and_reason() -> None:
    assert parse_score("SCORE 4: apologises first", 1, 5) == (4, "apologises first")
    assert parse_score("  SCORE 0:   nothing  \n", 0, 10) == (0, "nothing")
    assert parse_score("SCORE 10: all of it", 0, 10) == (10, "all of it")


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "   ",
        "SCORE 4",
        "SCORE 4:",
        "SCORE: 4: fine",
        "score 4: fine",
        "Score 4: fine",
        "4: fine",
        "SCORE four: fine",
        "SCORE 4.5: fine",
        "SCORE -1: fine",
        "SCORE +4: fine",
        "SCORE 4 : fine",
        "The SCORE 4: fine",
        "SCORE 4: fine\nSCORE 5: better",
        "SCORE 4: fine\n\nextra",
        "PASS: fine",
        "SCORE 4: " + "x" * 600,
        "SCORE 1234: fine",
    ],
)
def test_every_malformed_answer_is_a_problem_never_a_score(answer: str) -> None:
    assert isinstance(parse_score(answer, 1, 5), str)


@pytest.mark.parametrize(
    ("answer", "scale"),
    [("SCORE 0: none", "1-5"), ("SCORE 6: more", "1-5"), ("SCORE 11: x", "0-10")],
)
def test_a_score_outside_the_scale_is_a_problem(answer: str, scale: str) -> None:
    problem = parse_score(answer, *SCALES[scale])
    assert isinstance(problem, str) and f"outside the scale {scale}" in problem


def test_scores_are_normalised_exactly() -> None:
    assert [normalised(s, 1, 5) for s in range(1, 6)] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert [normalised(s, 0, 10) for s in range(11)] == [s / 10 for s in range(11)]


class Answers:
    """A grader that answers every question with the next of `texts` (what a check sees of
    the judge: `ask(...).text`), and keeps what it was asked."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.asked: list[tuple[str | None, dict[str, str]]] = []

    def ask(self, case_id: str, asked: dict[str, str], repeat: Any = None, *, kind: Any = None):
        from gate.outputs import Output

        self.asked.append((kind, dict(asked)))
        return Output(text=self.texts.pop(0))


class _Case:
    id = "c"
    input = {"question": "it broke"}


def _verdict(spec: dict[str, Any], answer: str) -> checks.Verdict:
    judge = llm_judge("judge", spec, Modifiers())
    subject = checks.Subject("sorry it broke", _Case.input, case=_Case(), grader=Answers(answer))
    return judge(subject)


@given(st.text(max_size=120))
def test_the_graded_check_never_passes_what_it_cannot_read(answer: str) -> None:
    verdict = _verdict(GRADED, answer)
    parsed = parse_score(answer, 1, 5)
    if isinstance(parsed, str):
        assert not verdict.ok and verdict.score == UNMEASURED and verdict.reason == parsed
    else:
        assert verdict.score == normalised(parsed[0], 1, 5)
        assert verdict.ok is (parsed[0] >= 4)  # threshold 0.75 on 1-5: 4 and 5 pass


def test_the_threshold_is_held_on_the_normalised_score() -> None:
    at = _verdict({"rubric": RUBRIC, "scale": "0-10", "threshold": 0.7}, "SCORE 7: enough")
    below = _verdict({"rubric": RUBRIC, "scale": "0-10", "threshold": 0.7}, "SCORE 6: not quite")
    assert (at.ok, at.score) == (True, 0.7)
    assert (below.ok, below.score) == (False, 0.6)
    assert below.reason == "scored 6 on 0-10 (0.60, threshold 0.7): not quite"


def test_the_graded_judge_asks_its_own_prompt_with_the_scale() -> None:
    grader = Answers("SCORE 5: fully")
    judge = llm_judge("judge", GRADED, Modifiers())
    judge(checks.Subject("sorry", _Case.input, case=_Case(), grader=grader))
    [(kind, asked)] = grader.asked
    assert kind == "graded"
    assert asked["scale"] == "a whole number from 1 (lowest) to 5 (highest)"
    assert asked["rubric"] == RUBRIC and asked["output"] == "sorry"


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ({"rubric": RUBRIC, "scale": "1-5"}, "needs a threshold"),
        ({"rubric": RUBRIC, "scale": "1-10", "threshold": 0.5}, "scale must be '1-5' or '0-10'"),
        ({"rubric": RUBRIC, "threshold": 0.5}, "scale must be '1-5' or '0-10'"),
        ({"rubric": RUBRIC, "scale": "1-5", "threshold": 1.5}, "threshold takes a number"),
        ({"rubric": RUBRIC, "scale": "1-5", "threshold": True}, "threshold takes a number"),
        ({"rubric": RUBRIC, "scale": "1-5", "threshold": "0.5"}, "threshold takes a number"),
        (
            {"rubric": RUBRIC, "scale": "1-5", "threshold": 0.5, "mode": "pairwise"},
            "no mode: pairwise",
        ),
        ({"rubric": RUBRIC, "scale": "1-5", "threshold": 0.5, "extra": 1}, "judge takes"),
    ],
)
def test_a_bad_graded_spec_is_a_load_error(spec: dict[str, Any], said: str) -> None:
    with pytest.raises(checks.CheckSpecError, match=said):
        llm_judge("judge", spec, Modifiers())


# --- the pass/fail judge untouched -----------------------------------------------------


def test_the_pass_fail_prompt_and_keys_are_what_they_were() -> None:
    pin = JudgePin(provider="openai", model="m", max_tokens=200)
    pointwise = judge_system(pin)
    assert pointwise["prompt"] == PROMPTS[1].system and pointwise["message"] == PROMPTS[1].message
    assert pointwise["params"] == {"max_tokens": 200, "temperature": 0}
    # Each prompt kind is its own system, so its own fingerprint and its own keys.
    fingerprints = {kind: pin_fingerprint(pin, kind) for kind in PROMPT_TABLES}  # type: ignore[arg-type]
    assert len(set(fingerprints.values())) == len(PROMPT_TABLES)
    assert judge_system(pin, "graded")["prompt"] == GRADED_PROMPTS[1].system
    asked = judge_input(RUBRIC, {"question": "q"}, "a")
    assert request_key(fingerprints["pointwise"], asked, 0) != request_key(
        fingerprints["graded"], asked, 0
    )


# --- end to end, through the CLI, with a loopback judge ----------------------------------


def graded_judge(received: Received) -> Reply:
    """Scores a response by a word in it; garbles, or leaves the scale, on others."""
    system = received.body["messages"][0]["content"]
    response = received.last_user_text.split("<response>", 1)[1]
    if "SCORE <n>" not in system:
        return Reply(text="PASS: a pass/fail question")
    for word, answer in [
        ("sorry", "SCORE 5: acknowledges it first"),
        ("policy", "SCORE 2: states the policy first"),
        ("mumble", "I would say about a four"),
        ("wild", "SCORE 9: off the scale"),
    ]:
        if word in response:
            return Reply(text=answer)
    return Reply(text="SCORE 3: partly")


def _results(path: str) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in json.loads(Path(path).read_text())["cases"]}


def _score(result: dict[str, Any]) -> tuple[bool, float | None]:
    [judged] = [c for c in result["checks"] if c["check"] == "judge"]
    return judged["ok"], judged.get("score")


GRADED_CASES = [
    case("apology", "sorry it broke", judge=GRADED),
    case("blunt", "policy says no", judge=GRADED),
    case("garbled", "mumble", judge=GRADED),
    case("wild", "wild guess", judge=GRADED),
    case("pf", "policy says no", judge={"rubric": RUBRIC}),
]


def test_graded_scores_record_replay_and_fail_closed(
    project: Project, llm_server: FakeLLMServer
) -> None:
    llm_server.reply = graded_judge
    project.write_config(judge=judge_pin(llm_server))
    project.write_cases(GRADED_CASES)
    assert main(["record", "--quiet", "--out", "rec.json"]) == 0
    asked = len(llm_server.received)
    assert asked == 5
    assert main(["run", "--quiet", "--out", "replay.json"]) == 0
    assert len(llm_server.received) == asked  # replayed for free
    results = _results("replay.json")
    assert _score(results["apology"]) == (True, 1.0)
    assert _score(results["blunt"]) == (False, 0.25)
    assert "scored 2 on 1-5 (0.25, threshold 0.75)" in results["blunt"]["reason"]
    for malformed in ("garbled", "wild"):  # a fail with a reason, never a pass, never a score
        assert results[malformed]["status"] == "fail"
        assert _score(results[malformed]) == (False, UNMEASURED)
    assert "not one `SCORE <n>: reason` line" in results["garbled"]["reason"]
    assert "outside the scale 1-5" in results["wild"]["reason"]
    assert _score(results["pf"]) == (True, None)  # the pass/fail judge: no score, as before
    recorded = _results("rec.json")  # the recording run judged the same answers the same
    assert {k: _score(v) for k, v in recorded.items()} == {k: _score(v) for k, v in results.items()}


def test_a_graded_judge_outage_is_an_error(project: Project, llm_server: FakeLLMServer) -> None:
    llm_server.reply = graded_judge
    llm_server.fail("sorry it broke", *[Fault(503)] * 2)
    project.write_config(judge=judge_pin(llm_server))
    project.write_cases(GRADED_CASES[:1])
    assert main(["run", "--mode", "live", "--quiet", "--out", "live.json"]) == 0
    apology = _results("live.json")["apology"]
    assert apology["status"] == "error" and "HTTP 503" in apology["reason"]


def test_a_replay_missing_a_graded_answer_is_refused_naming_the_case(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.reply = graded_judge
    project.write_config(judge=judge_pin(llm_server))
    project.write_cases([case("apology", "sorry it broke", judge={"rubric": RUBRIC})])
    assert main(["record", "--quiet"]) == 0
    project.write_cases([case("apology", "sorry it broke", judge=GRADED)])  # now graded
    assert main(["run", "--quiet", "--out", "replay.json"]) == 2
    err = capsys.readouterr().err
    assert "no judge recording for 1 case(s)" in err and "apology" in err


def scripted_scores(script: list[int]) -> Any:
    """A graded judge whose n-th answer is SCORE script[n] (the last once they run out)."""
    asked: Counter[str] = Counter()

    def reply(received: Received) -> Reply:
        n = asked["n"]
        asked["n"] += 1
        return Reply(text=f"SCORE {script[min(n, len(script) - 1)]}: scripted")

    return reply


@pytest.mark.parametrize(
    ("script", "flipped"),
    [
        ([4, 5, 4], 0),  # three scores, all on the passing side: no flip
        ([4, 2, 4], 1),  # one ask falls below the threshold: a flip
        ([2, 1, 3], 0),  # all below: the scores differ, the verdict does not
    ],
)
def test_a_graded_judge_flips_only_across_its_threshold(
    project: Project, llm_server: FakeLLMServer, script: list[int], flipped: int
) -> None:
    llm_server.reply = scripted_scores(script)
    project.write_config(judge=judge_pin(llm_server, consistency=3))
    project.write_cases([case("apology", "sorry it broke", judge=GRADED)])
    assert main(["record", "--quiet", "--out", "rec.json"]) == 0
    assert len(llm_server.received) == 3
    measured = _results("rec.json")["apology"]["judge_consistency"]
    assert (measured["outputs"], measured["flipped"]) == (1, flipped)
    assert main(["run", "--quiet", "--out", "replay.json"]) == 0
    assert _results("replay.json")["apology"]["judge_consistency"]["flipped"] == flipped


def test_a_new_pin_judges_the_baselines_scores_again(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = "judge-model-2025-01-01", "judge-model-2026-01-01"

    def two_judges(received: Received) -> Reply:
        return Reply(
            text="SCORE 5: lenient" if received.body["model"] == old else "SCORE 2: strict"
        )

    llm_server.reply = two_judges
    project.write_config(judge=judge_pin(llm_server, model=old))
    project.write_cases([case("apology", "sorry it broke", judge=GRADED)])
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    assert _score(_results("baselines/demo.json")["apology"]) == (True, 1.0)
    with_new = ["--set", f"judge.model={new}"]
    assert main(["record", "--quiet", *with_new]) == 0
    assert "recorded for `check`: the baseline's outputs on 1 case(s)" in capsys.readouterr().err
    assert main(["check", "--quiet", *with_new, "--report", "r.md"]) == 0
    markdown = Path("r.md").read_text()
    # Both sides scored 2 by the new judge: unchanged, not a regression from 1.0.
    assert "judged again under this judge pin" in markdown
    assert "Regressions (0)" in markdown
