"""`extract_json: true`: the JSON checks read the first object or array in prose or a fence."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate import checks
from gate.checks import jsontext
from gate.errors import CaseFileError
from gate.suite.cases import load_cases


def verdicts(expect: dict[str, Any], text: str) -> list[checks.Verdict]:
    subject = checks.Subject(text, {})
    return checks.evaluate(checks.build(expect), subject)


def only(expect: dict[str, Any], text: str) -> checks.Verdict:
    (verdict,) = verdicts(expect, text)
    return verdict


FENCED = 'Here is the ticket:\n\n```json\n{"severity": "high", "tags": ["refund"]}\n```\nThanks!'


class TestExtraction:
    def test_a_fenced_object_is_read_and_the_reason_says_from_where(self) -> None:
        parsed = jsontext.extract(FENCED)
        assert parsed.ok and parsed.value == {"severity": "high", "tags": ["refund"]}
        assert parsed.source == "the ```json fence at line 3"

    def test_a_fence_without_a_language_counts_too(self) -> None:
        parsed = jsontext.extract("Result:\n```\n[1, 2]\n```")
        assert parsed.value == [1, 2] and parsed.source == "the ``` fence at line 2"

    def test_bare_json_in_prose(self) -> None:
        parsed = jsontext.extract('Sure. The answer is {"a": {"b": [1]}} as requested.')
        assert parsed.value == {"a": {"b": [1]}}
        assert parsed.source == "the text at line 1"

    def test_a_fence_wins_over_earlier_prose(self) -> None:
        # A model that fences its answer means the fence; braces in prose before it are prose.
        parsed = jsontext.extract('I considered {"draft": 1} first.\n```json\n{"final": 2}\n```')
        assert parsed.value == {"final": 2}

    def test_prose_braces_that_are_not_json_are_skipped(self) -> None:
        parsed = jsontext.extract('Use {curly} or [square] brackets, then ["real", 1].')
        assert parsed.value == ["real", 1]

    def test_scalars_are_not_extracted(self) -> None:
        # "the first JSON object or array": a bare 42 in prose is a number, not an answer.
        assert not jsontext.extract("It costs 42 dollars").ok

    def test_nothing_found_says_where_it_looked(self) -> None:
        parsed = jsontext.extract("No structured answer here.")
        assert not parsed.ok
        assert parsed.problem == (
            "no JSON object or array found in the output (looked in ``` fences and in the prose)"
        )

    def test_a_broken_json_fence_is_named(self) -> None:
        parsed = jsontext.extract('```json\n{"a": 1,}\n```')
        assert not parsed.ok
        assert parsed.problem.endswith(
            "; the ```json fence at line 1 holds no valid JSON object or array"
        )

    def test_nan_inside_prose_is_not_json(self) -> None:
        assert not jsontext.extract('values {"a": NaN} only').ok

    def test_many_openers_cost_a_bounded_number_of_parses(self) -> None:
        # Untrusted output: 100,000 `[` must not mean 100,000 parses of a deep array.
        text = "[" * 100_000 + ' then {"late": true}'
        parsed = jsontext.extract(text)
        assert not parsed.ok


class TestChecksWithExtraction:
    def test_json_passes_and_says_what_it_read(self) -> None:
        verdict = only({"json": True, "extract_json": True}, FENCED)
        assert verdict.ok and verdict.reason == "read the JSON from the ```json fence at line 3"

    def test_without_the_modifier_the_output_must_be_json_whole(self) -> None:
        verdict = only({"json": True}, FENCED)
        assert not verdict.ok and verdict.reason.startswith("output is not JSON")

    def test_fields_failure_names_the_source(self) -> None:
        verdict = only({"fields": {"severity": "low"}, "extract_json": True}, FENCED)
        assert not verdict.ok
        assert verdict.reason == (
            'severity: expected "low", got "high" (in the JSON from the ```json fence at line 3)'
        )

    def test_json_schema_and_presence_read_the_extracted_value(self) -> None:
        schema = {"type": "object", "required": ["severity", "owner"]}
        verdict = only({"json_schema": schema, "extract_json": True}, FENCED)
        assert verdict.reason == (
            "(root): 'owner' is a required property (in the JSON from the ```json fence at line 3)"
        )
        assert only({"fields_present": ["tags.0"], "extract_json": True}, FENCED).ok

    def test_text_checks_still_read_the_whole_output(self) -> None:
        verdict = only({"starts_with": "Here is", "extract_json": True}, FENCED)
        assert verdict.ok

    def test_extract_json_false_is_the_default(self) -> None:
        assert not only({"json": True, "extract_json": False}, FENCED).ok

    @pytest.mark.parametrize("value", ["yes", 1, None, [True]])
    def test_a_non_boolean_is_refused_when_the_cases_load(self, tmp_path: Any, value: Any) -> None:
        cases = tmp_path / "cases.yaml"
        cases.write_text(
            "- id: a\n  input: {q: x}\n  expect:\n    json: true\n"
            f"    extract_json: {json.dumps(value)}\n"
        )
        with pytest.raises(CaseFileError) as caught:
            load_cases([cases])
        assert "extract_json takes true or false" in str(caught.value)
        assert f"{cases}:" in str(caught.value)

    def test_the_modifier_alone_judges_nothing(self) -> None:
        with pytest.raises(checks.CheckSpecError, match="a modifier alone judges nothing"):
            checks.build({"extract_json": True})


prose = st.text(alphabet=st.characters(exclude_characters="`{}[]"), max_size=40)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=8,
)
containers = st.lists(json_values, max_size=3) | st.dictionaries(
    st.text(max_size=4), json_values, max_size=3
)


@settings(max_examples=300, deadline=None)
@given(before=prose, value=containers, after=prose, fenced=st.booleans())
def test_an_embedded_object_or_array_is_found_whole(
    before: str, value: Any, after: str, fenced: bool
) -> None:
    body = json.dumps(value, ensure_ascii=False)
    text = f"{before}\n```json\n{body}\n```\n{after}" if fenced else f"{before} {body} {after}"
    parsed = jsontext.extract(text)
    assert parsed.ok and parsed.value == value


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300))
def test_no_json_check_raises_on_arbitrary_text_when_extracting(text: str) -> None:
    expect = {
        "json": True,
        "json_schema": {"type": "object"},
        "fields": {"a.0": "x"},
        "fields_present": ["a"],
        "fields_absent": ["b"],
        "extract_json": True,
    }
    for verdict in verdicts(expect, text):
        assert verdict.ok or verdict.reason
        assert not verdict.reason.startswith("check crashed")
