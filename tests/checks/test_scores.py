"""Scores beside verdicts: what each measuring check reports, what a custom check may
return, and how a score reaches the results file (and is refused there when forged)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rapidfuzz import fuzz, utils
from rapidfuzz.distance import Levenshtein

from gate import checks, usercode
from gate.errors import ResultsError
from gate.judging.sample import mean_score
from gate.outputs import Context, ToolCall
from gate.results import CheckResult, read_results, write_results
from tests.checks.test_checks import only
from tests.factories import result, run

REPO = Path(__file__).resolve().parents[2]


# --- custom checks that return scores (imported by name below) ---------------------------


def gives(text: str, case: Any, value: Any = None) -> Any:
    """Returns whatever the case's args say, so one function covers every shape."""
    return value


def graded_length(text: str, case: Any) -> tuple[float, str]:
    return min(1.0, len(text) / 10), f"{len(text)} characters of the 10 wanted"


def passes_but_scores(text: str, case: Any) -> dict[str, Any]:
    return {"score": 0.4, "passed": True, "reason": "a pass with a low score"}


@pytest.fixture(autouse=True)
def _prepared() -> None:
    for name in ("gives", "graded_length", "passes_but_scores"):
        usercode.prepare_check(f"{__name__}:{name}", REPO)


def custom(value: Any, threshold: float | None = None) -> checks.Verdict:
    entry: dict[str, Any] = {"fn": f"{__name__}:gives", "args": {"value": value}}
    if threshold is not None:
        entry["threshold"] = threshold
    return only({"check": entry}, "an answer")


class TestVerdict:
    @pytest.mark.parametrize("bad", [math.nan, math.inf, -0.01, 1.01, True])
    def test_a_score_outside_0_to_1_is_no_score(self, bad: Any) -> None:
        with pytest.raises(ValueError, match="a score is a number from 0 to 1"):
            checks.Verdict("similar", True, score=bad)

    def test_a_check_without_a_score_writes_none(self) -> None:
        assert checks.Verdict("contains", True).to_dict() == {
            "check": "contains",
            "ok": True,
            "reason": "",
        }
        assert checks.Verdict("similar", False, "far", 0.25).to_dict()["score"] == 0.25


class TestCustomScores:
    def test_a_score_meets_its_threshold_or_fails_naming_both(self) -> None:
        assert custom(0.8, threshold=0.7) == checks.Verdict("check", True, "", 0.8)
        low = custom(0.6, threshold=0.7)
        assert not low.ok and low.score == 0.6
        assert low.reason == "score 0.6 is under the threshold 0.7"

    def test_a_score_and_reason_pair(self) -> None:
        verdict = only({"check": {"fn": f"{__name__}:graded_length", "threshold": 0.9}}, "short")
        assert (verdict.ok, verdict.score) == (False, 0.5)
        assert (
            verdict.reason == "score 0.5 is under the threshold 0.9: 5 characters of the 10 wanted"
        )

    def test_a_mapping_with_passed_decides_without_a_threshold(self) -> None:
        verdict = only({"check": f"{__name__}:passes_but_scores"}, "x")
        assert (verdict.ok, verdict.score, verdict.reason) == (True, 0.4, "a pass with a low score")
        # With a threshold, both must hold.
        entry = {"fn": f"{__name__}:passes_but_scores", "threshold": 0.5}
        assert not only({"check": entry}, "x").ok

    def test_a_score_without_threshold_or_passed_fails_saying_what_to_write(self) -> None:
        verdict = custom(0.9)
        assert not verdict.ok
        assert "returned a score (0.9) and no pass or fail: give the entry a threshold" in (
            verdict.reason
        )

    @pytest.mark.parametrize(
        ("value", "said"),
        [
            (math.nan, "returned the score NaN, not a number from 0 to 1"),
            (1.5, "returned the score 1.5, not a number from 0 to 1"),
            ("0.9", 'returned "0.9", not a bool, (bool, reason), a score'),
            ({"score": 0.5, "extra": 1}, "not a bool, (bool, reason), a score"),
            ({"reason": "x"}, "it needs `score` or `passed`"),
            ({"passed": "yes"}, 'returned `passed` "yes", not true or false'),
            ((None, "x"), "not a bool, (bool, reason), a score"),
        ],
    )
    def test_anything_else_is_a_clear_failure_naming_the_check(self, value: Any, said: str) -> None:
        verdict = custom(value, threshold=0.5)
        assert not verdict.ok and verdict.score is None
        assert verdict.reason.startswith(f"{__name__}:gives")
        assert said in verdict.reason

    def test_bools_still_decide_alone(self) -> None:
        assert custom(True) == checks.Verdict("check", True)
        assert custom((False, "no")) == checks.Verdict("check", False, "no")

    @pytest.mark.parametrize("bad", [1.2, -1, "high", True])
    def test_a_threshold_outside_0_to_1_is_refused_at_load(self, bad: Any) -> None:
        with pytest.raises(checks.CheckSpecError, match=r"check\.threshold takes a number"):
            checks.build({"check": {"fn": f"{__name__}:gives", "threshold": bad}})

    def test_several_entries_score_as_their_lowest(self) -> None:
        entries = [
            {"fn": f"{__name__}:gives", "args": {"value": 0.9}, "threshold": 0.5},
            {"fn": f"{__name__}:gives", "args": {"value": 0.7}, "threshold": 0.5},
        ]
        assert only({"check": entries}, "x").score == 0.7


class TestBuiltInScores:
    def test_similar_lexical_scores_rapidfuzz_token_sort_ratio(self) -> None:
        reference = "Your refund was issued today"
        text = "today your refund was sent"
        verdict = only({"similar": {"to": reference, "min": 0.9, "method": "lexical"}}, text)
        expected = fuzz.token_sort_ratio(reference, text, processor=utils.default_process) / 100
        assert verdict.score == pytest.approx(expected)
        assert not verdict.ok

    def test_similar_too_long_scores_the_lowest(self) -> None:
        verdict = only({"similar": {"to": "a b", "min": 0.5, "method": "lexical"}}, "x" * 9000)
        assert (verdict.ok, verdict.score) == (False, 0.0)

    @given(st.text(max_size=40), st.text(max_size=40))
    def test_levenshtein_scores_the_normalised_similarity(self, reference: str, text: str) -> None:
        verdict = only({"levenshtein": {"to": reference, "max": 3}}, text)
        assert verdict.score == pytest.approx(Levenshtein.normalized_similarity(reference, text))

    def test_levenshtein_far_off_scores_what_the_lengths_allow(self) -> None:
        verdict = only({"levenshtein": {"to": "abcd", "max": 1}}, "abcdefghijkl")
        # A distance of at least 8 over 12 characters: the exact score, here.
        assert verdict.score == pytest.approx(1 - 8 / 12)

    def test_fields_score_the_fraction_right(self) -> None:
        expect = {"fields": {"a": 1, "b.c": "x", "d": True, "e": None}}
        verdict = only(expect, json.dumps({"a": 1, "b": {"c": "y"}, "d": True}))
        assert (verdict.ok, verdict.score) == (False, 0.5)
        assert only(expect, "not json").score == 0.0

    def test_json_schema_scores_its_properties_and_the_whole(self) -> None:
        schema = {
            "type": "object",
            "properties": {
                "label": {"$ref": "#/$defs/label"},
                "score": {"type": "number"},
                "note": {"type": "string"},
            },
            "required": ["label", "score"],
            "$defs": {"label": {"enum": ["spam", "ham"]}},
        }
        expect = {"json_schema": schema}
        assert only(expect, '{"label": "ham", "score": 1}').score == 1.0
        # label breaks its $ref, score holds, note is absent and optional: 2 of 3 + the whole.
        verdict = only(expect, '{"label": "eggs", "score": 1}')
        assert (verdict.ok, verdict.score) == (False, 2 / 4)
        # A missing required property counts against it.
        assert only(expect, '{"label": "ham"}').score == 2 / 4
        assert only(expect, "[1, 2]").score == 0.0

    def test_tool_args_score_the_expected_arguments_right(self) -> None:
        expect = {"tool_args": {"refund": {"order": "A1", "amount": 20}, "notify": {"to": "x"}}}
        calls = [
            ToolCall(name="refund", arguments={"order": "A1", "amount": 25}),
            ToolCall(name="refund", arguments={"order": "B2", "amount": 30}),
        ]
        verdict = only(expect, "", tool_calls=calls)
        # The best refund call gets 1 of 2 right; notify was never called: 1 of 3.
        assert verdict.score == pytest.approx(1 / 3)

    def test_a_good_call_stands_beside_a_later_unreadable_one(self) -> None:
        expect = {"tool_args": {"refund": {"order": "A1"}}}
        calls = [
            ToolCall(name="refund", arguments={"order": "A1"}),
            ToolCall(name="refund", invalid_arguments="{not json"),
        ]
        assert only(expect, "", tool_calls=calls) == checks.Verdict("tool_args", True, "", 1.0)

    def test_tool_args_schema_scores_the_calls_that_hold(self) -> None:
        expect = {"tool_args_schema": {"lookup": {"type": "object", "required": ["id"]}}}
        calls = [
            ToolCall(name="lookup", arguments={"id": 1}),
            ToolCall(name="lookup", arguments={}),
            ToolCall(name="other", arguments={}),
        ]
        assert only(expect, "", tool_calls=calls).score == 0.5


class TestContexts:
    def test_the_system_contexts_come_first_then_the_case_input_s(self) -> None:
        subject = checks.Subject("a", {"contexts": ["given"]})
        assert subject.passages() == (Context(text="given"),)
        subject.contexts = (Context(id="d1", text="retrieved"),)
        assert isinstance(subject.passages(), str)  # not one of the case input's
        alone = checks.Subject("a", {"question": "q"})
        alone.contexts = (Context(id="d1", text="retrieved"),)
        assert alone.passages() == (Context(id="d1", text="retrieved"),)

    def test_with_the_case_inputs_contexts_the_system_reports_only_theirs(self) -> None:
        given = {"contexts": ["one", {"id": "d2", "text": "two"}]}
        subject = checks.Subject("a", given)
        # Reordered, a subset, an id added to an unnamed passage: the case's passages.
        subject.contexts = (Context(id="d2", text="two"), Context(id="x", text="one"))
        assert subject.passages() == subject.contexts
        for foreign in (Context(id="d2", text="three"), Context(id="d9", text="two")):
            subject.contexts = (Context(text="one"), foreign)
            found = subject.passages()
            assert isinstance(found, str) and "passage 2" in found

    @pytest.mark.parametrize(
        "given", ["one string", [], [{"id": "a", "body": "x"}], [3], [{"id": ["a"]}]]
    )
    def test_malformed_case_contexts_say_why(self, given: Any) -> None:
        found = checks.Subject("a", {"contexts": given}).passages()
        assert isinstance(found, str) and "contexts" in found

    def test_ids_may_be_numbers_and_are_read_as_text(self) -> None:
        found = checks.Subject("a", {"contexts": [{"id": 7, "text": "x"}]}).passages()
        assert found == (Context(id="7", text="x"),)


class TestResults:
    def test_a_case_line_scores_the_mean_of_its_samples(self) -> None:
        lines = [
            CheckResult(check="similar", ok=True, score=0.9),
            CheckResult(check="similar", ok=False, score=0.4),
            CheckResult(check="similar", ok=False),  # no score: not in the mean
        ]
        assert mean_score(lines) == pytest.approx(0.65)
        assert mean_score([CheckResult(check="contains", ok=True)]) is None

    @given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
    def test_a_mean_of_scores_is_a_score(self, scores: list[float]) -> None:
        mean = mean_score([CheckResult(check="c", ok=True, score=s) for s in scores])
        assert mean is not None and min(scores) - 1e-12 <= mean <= max(scores) + 1e-12
        assert 0 <= mean <= 1

    @pytest.mark.parametrize("forged", ['"0.9"', "true", "1.5", "-0.2", "NaN", "1e999"])
    def test_a_forged_score_in_a_results_file_is_refused(self, tmp_path: Path, forged: str) -> None:
        path = tmp_path / "results.json"
        write_results(run([result("a")]), path)
        text = path.read_text()
        line = '{"check":"contains","ok":true,"reason":""}'
        assert text.count(line) == 2  # the case's line and its sample's
        path.write_text(text.replace(line, line[:-1] + ',"score":' + forged + "}"))
        with pytest.raises(ResultsError):
            read_results(path)

    def test_a_score_survives_the_file_and_none_is_not_written(self, tmp_path: Path) -> None:
        case = result("a")
        case.checks = [CheckResult(check="similar", ok=True, score=0.75)]
        path = tmp_path / "results.json"
        write_results(run([case, result("b")]), path)
        text = path.read_text()
        assert text.count('"score"') == 1
        again = read_results(path).case_map()
        assert again["a"].checks[0].score == 0.75
        assert again["b"].checks[0].score is None
