"""Every check: what passes, what fails and the reason it gives; never a crash."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate import checks, usercode
from gate.errors import CaseFileError
from gate.outputs import Output, ToolCall
from gate.suite.cases import load_cases

REPO = Path(__file__).resolve().parents[2]


def judge(
    expect: dict[str, Any],
    text: str,
    case_input: dict[str, Any] | None = None,
    tool_calls: list[ToolCall] | None = None,
    **figures: Any,
) -> list[checks.Verdict]:
    built = checks.build(expect)
    subject = checks.Subject(text, case_input or {}, tool_calls or [], **figures)
    return checks.evaluate(built, subject)


def only(expect: dict[str, Any], text: str, **kwargs: Any) -> checks.Verdict:
    verdicts = judge(expect, text, **kwargs)
    assert len(verdicts) == 1
    return verdicts[0]


class TestText:
    def test_equals_is_exact_without_normalize(self) -> None:
        assert only({"equals": "cancel_order"}, "cancel_order").ok
        verdict = only({"equals": "cancel_order"}, "cancel_order\n")
        assert not verdict.ok
        assert verdict.reason == 'expected "cancel_order", got "cancel_order\\n"'

    def test_equals_on_long_text_names_the_first_difference_with_context(self) -> None:
        expected = '{"customer": "Priya Natarajan", "order_id": 12, "items": ["blender"]}'
        actual = '{"customer": "Priya Natarajan", "order_id": "12", "items": ["blender"]}'
        verdict = only({"equals": expected}, actual)
        assert verdict.reason == (
            'differs at character 45: expected …Natarajan", "order_id": 12, "items": ["blender"]…, '
            'got …Natarajan", "order_id": "12", "items": ["blender…'
        )

    def test_equals_says_where_one_text_ends_and_the_other_goes_on(self) -> None:
        answer = "Your parcel left our warehouse on Monday and is on its way to you."
        verdict = only({"equals": answer}, answer + "\nAnything else?")
        assert verdict.reason == (
            "differs at character 67: expected …nd is on its way to you. (end of text), "
            "got …nd is on its way to you.\\nAnything else?"
        )
        empty = only({"equals": ""}, answer)
        assert (
            empty.reason
            == "differs at character 1: expected (empty), got Your parcel left our war…"
        )

    def test_equals_names_the_position_after_normalize(self) -> None:
        expect = {"equals": "a" * 70, "normalize": ["lower"]}
        verdict = only(expect, "A" * 69 + "B")
        assert verdict.reason.startswith("differs at character 70 (after normalize): expected …aaa")
        assert verdict.reason.endswith("got …" + "a" * 24 + "b")

    def test_normalize_removes_only_what_it_names(self) -> None:
        expect = {"equals": "cancel_order", "normalize": ["strip", "lower"]}
        assert only(expect, "  Cancel_Order \n").ok
        assert not only(expect, "cancel_order.").ok

    def test_collapse_whitespace(self) -> None:
        expect = {"contains": "14 days", "normalize": ["collapse_whitespace"]}
        assert only(expect, "within 14\n   days").ok
        assert not only({"contains": "14 days"}, "within 14\n   days").ok

    def test_contains_lists_every_missing_needle(self) -> None:
        verdict = only({"contains": ["14 days", "receipt", "refund"]}, "a refund")
        assert not verdict.ok
        assert verdict.reason == 'missing "14 days", "receipt"'

    def test_contains_any(self) -> None:
        assert only({"contains_any": ["sorry", "apolog"]}, "we apologise").ok
        verdict = only({"contains_any": ["sorry", "apolog"]}, "tough luck")
        assert verdict.reason == 'none of "sorry", "apolog"'

    def test_not_contains_with_normalize(self) -> None:
        verdict = only({"not_contains": "Discount", "normalize": ["lower"]}, "a DISCOUNT for you")
        assert not verdict.ok
        assert "forbidden" in verdict.reason
        assert only({"not_contains": ["x", "y"]}, "abc").ok

    def test_regex_and_not_regex(self) -> None:
        assert only({"regex": r"\d{3}"}, "code 123").ok
        assert only({"regex": r"\d{3}"}, "none").reason == r"no match for /\d{3}/"
        verdict = only({"not_regex": r"(?i)arrive by \w+"}, "It will arrive by Friday.")
        assert verdict.reason == 'matches forbidden /(?i)arrive by \\w+/: "arrive by Friday"'

    @pytest.mark.parametrize(
        ("expect", "text", "reason"),
        [
            ({"max_words": 3}, "one two three four", "4 words, the limit is 3"),
            ({"min_words": 3}, "one two", "2 words, the minimum is 3"),
            ({"max_chars": 5}, "abcdef", "6 characters, the limit is 5"),
        ],
    )
    def test_lengths(self, expect: dict[str, Any], text: str, reason: str) -> None:
        verdict = only(expect, text)
        assert not verdict.ok
        assert verdict.reason == reason

    def test_lengths_at_the_limit_pass(self) -> None:
        assert only({"max_words": 2}, "one two").ok
        assert only({"min_words": 2}, "one two").ok
        assert only({"max_chars": 3}, "abc").ok
        assert only({"min_chars": 3}, "abc").ok

    def test_min_chars(self) -> None:
        assert only({"min_chars": 3}, "ab").reason == "2 characters, the minimum is 3"

    def test_starts_and_ends_with(self) -> None:
        text = "Dear Ana, your refund is on its way.\nBest regards"
        assert all(
            v.ok for v in judge({"starts_with": "Dear Ana", "ends_with": "Best regards"}, text)
        )
        verdict = only({"starts_with": "Hello"}, text)
        assert verdict.reason == 'expected to start with "Hello", starts: Dear Ana, your …'
        verdict = only({"ends_with": "Kind regards"}, text)
        assert (
            verdict.reason == 'expected to end with "Kind regards", ends: … its way.\\nBest regards'
        )
        verdict = only({"ends_with": "regards"}, "")
        assert verdict.reason == 'expected to end with "regards", got (empty)'

    def test_starts_and_ends_with_honour_normalize(self) -> None:
        text = "  DEAR Ana,\n thanks.  \n"
        assert only({"starts_with": "dear ana", "normalize": ["strip", "lower"]}, text).ok
        assert only({"ends_with": "Thanks.", "normalize": ["strip", "lower"]}, text).ok
        assert not only({"ends_with": "thanks."}, text).ok  # trailing space counts without strip
        verdict = only({"starts_with": "Hi", "normalize": ["strip"]}, "  Hey")
        assert verdict.reason == 'expected to start with "Hi", starts (after normalize): Hey'

    @pytest.mark.parametrize("check", ["starts_with", "ends_with"])
    @pytest.mark.parametrize("arg", ["", ["a"], 3])
    def test_starts_and_ends_with_take_one_string(self, check: str, arg: Any) -> None:
        with pytest.raises(checks.CheckSpecError, match="takes a non-empty string"):
            checks.build({check: arg})


class TestRecordedFigures:
    def test_finish_reason(self) -> None:
        assert only({"finish_reason": "stop"}, "x", stop_reason="stop").ok
        verdict = only({"finish_reason": "stop"}, "x", stop_reason="tool_calls")
        assert verdict.reason == 'finish reason "tool_calls", expected "stop"'
        assert only({"finish_reason": ["stop", "tool_calls"]}, "x", stop_reason="tool_calls").ok

    @pytest.mark.parametrize("recorded", ["length", "max_tokens"])
    def test_a_cut_off_answer_says_so(self, recorded: str) -> None:
        verdict = only({"finish_reason": "stop"}, "x", stop_reason=recorded)
        assert verdict.reason.startswith("the answer was cut off at the output token limit")
        assert "raise max_tokens or ask for a shorter answer" in verdict.reason

    @pytest.mark.parametrize("recorded", ["end_turn", "stop_sequence", "completed"])
    def test_providers_names_for_stop_are_stop(self, recorded: str) -> None:
        assert only({"finish_reason": "stop"}, "x", stop_reason=recorded).ok

    @pytest.mark.parametrize(
        ("expect", "figures", "reason"),
        [
            (
                {"max_latency_ms": 2000},
                {"latency_ms": 2340.4},
                "recorded latency 2,340.4 ms, the limit is 2,000 ms",
            ),
            (
                {"max_cost_usd": 0.01},
                {"cost_usd": 0.0123},
                "recorded cost $0.0123, the limit is $0.01",
            ),
            (
                {"max_output_tokens": 500},
                {"output_tokens": 812},
                "812 output tokens, the limit is 500",
            ),
            ({"finish_reason": "stop"}, {}, "unknown finish reason (the provider reported none)"),
            ({"max_latency_ms": 1}, {}, "unknown latency (the provider reported none)"),
            ({"max_output_tokens": 1}, {}, "unknown output tokens (the provider reported none)"),
            (
                {"max_cost_usd": 1},
                {},
                "unknown cost (the provider reported none, and `pricing` in the config has no "
                "price for this model)",
            ),
        ],
    )
    def test_budgets_judge_the_recorded_figures(
        self, expect: dict[str, Any], figures: dict[str, Any], reason: str
    ) -> None:
        verdict = only(expect, "x", **figures)
        assert not verdict.ok
        assert verdict.reason == reason

    def test_huge_figures_and_limits_are_judged_not_crashed(self) -> None:
        huge = 10**400  # YAML reads integers of any size; a float cannot hold this one
        assert only({"max_output_tokens": huge}, "x", output_tokens=812).ok
        verdict = only({"max_output_tokens": 5}, "x", output_tokens=huge)
        assert verdict.reason.endswith(" output tokens, the limit is 5")
        verdict = only({"max_latency_ms": 1}, "x", latency_ms=float("nan"))
        assert verdict.reason == "unknown latency (the provider reported none)"
        verdict = only({"max_cost_usd": 1}, "x", cost_usd=float("inf"))
        assert verdict.reason == "recorded cost $inf, the limit is $1"

    def test_budgets_at_the_limit_pass(self) -> None:
        figures = {"latency_ms": 2000.0, "cost_usd": 0.01, "output_tokens": 500}
        expect = {"max_latency_ms": 2000, "max_cost_usd": 0.01, "max_output_tokens": 500}
        assert all(v.ok for v in judge(expect, "x", **figures))

    @pytest.mark.parametrize(
        ("expect", "message"),
        [
            ({"max_latency_ms": -1}, "a number ≥ 0"),
            ({"max_latency_ms": "2s"}, "a number ≥ 0"),
            ({"max_cost_usd": True}, "a number ≥ 0"),
            ({"max_cost_usd": float("inf")}, "a number ≥ 0"),
            ({"max_output_tokens": 1.5}, "a whole number ≥ 0"),
            ({"finish_reason": []}, "a string or a non-empty list of strings"),
        ],
    )
    def test_limits_are_checked_at_load(self, expect: dict[str, Any], message: str) -> None:
        with pytest.raises(checks.CheckSpecError, match=message):
            checks.build(expect)

    def test_the_subject_carries_the_outputs_figures(self) -> None:
        class Case:
            input: dict[str, Any] = {}

        output = Output(text="x", latency_ms=12.5, output_tokens=7, stop_reason="length")
        subject = checks.Subject.of(output, Case(), cost_usd=0.002)  # priced from the config
        assert (subject.latency_ms, subject.output_tokens, subject.stop_reason) == (
            12.5,
            7,
            "length",
        )
        assert subject.cost_usd == 0.002
        reported = checks.Subject.of(
            output.model_copy(update={"cost_usd": 0.5}), Case(), cost_usd=0.002
        )
        assert reported.cost_usd == 0.5


class TestJson:
    def test_json(self) -> None:
        assert only({"json": True}, '{"a": 1}').ok
        verdict = only({"json": True}, "Sure! {")
        assert verdict.reason.startswith("output is not JSON")

    @pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
    @pytest.mark.parametrize(
        "check", [{"json": True}, {"json_schema": {}}, {"fields_absent": ["b"]}]
    )
    def test_nan_and_infinity_are_not_json(self, constant: str, check: dict[str, Any]) -> None:
        # Python's json reads them; RFC 8259 does not, nor will the consumer's parser.
        verdict = only(check, f'{{"a": [1, {constant}]}}')
        assert not verdict.ok
        assert verdict.reason == (
            f"output is not JSON: it contains {constant}, which RFC 8259 does not allow"
        )

    def test_the_same_words_inside_strings_are_fine(self) -> None:
        assert only({"json": True}, '{"a": "NaN", "b": "-Infinity"}').ok

    def test_json_schema_reason_names_the_path(self) -> None:
        schema = {
            "type": "object",
            "properties": {"severity": {"enum": ["low", "high"]}},
            "required": ["severity"],
        }
        assert only({"json_schema": schema}, '{"severity": "low"}').ok
        verdict = only({"json_schema": schema}, '{"severity": []}')
        assert verdict.reason.startswith("severity: [] is not one of")

    def test_json_schema_checks_format(self) -> None:
        schema = {"type": "object", "properties": {"date": {"type": "string", "format": "date"}}}
        assert only({"json_schema": schema}, '{"date": "2026-11-30"}').ok
        verdict = only({"json_schema": schema}, '{"date": "not a date"}')
        assert not verdict.ok
        assert verdict.reason == "date: 'not a date' is not a 'date'"

    @pytest.mark.parametrize(
        ("fmt", "valid", "invalid"),
        [
            ("date", "2026-02-28", "2026-02-30"),
            ("date-time", "2026-02-28T10:00:00Z", "2026-02-28 10:00"),
            ("email", "ana@example.com", "ana at example.com"),
            ("uri", "https://example.com/a?b=1", "example.com/a"),
            ("uuid", "12345678-1234-5678-1234-567812345678", "1234-5678"),
            ("ipv4", "192.168.0.1", "256.1.1.1"),
        ],
    )
    def test_each_documented_format_is_really_checked(
        self, fmt: str, valid: str, invalid: str
    ) -> None:
        expect = {"json_schema": {"format": fmt}}
        assert only(expect, json.dumps(valid)).ok
        verdict = only(expect, json.dumps(invalid))
        assert verdict.reason == f"(root): {invalid!r} is not a {fmt!r}"

    def test_a_format_nothing_checks_is_refused_at_load(self) -> None:
        schema = {"properties": {"phone": {"anyOf": [{"format": "phone"}, {"type": "null"}]}}}
        with pytest.raises(
            checks.CheckSpecError, match=r"format 'phone' cannot be checked, so it would be ignored"
        ):
            checks.build({"json_schema": schema})

    def test_format_as_data_or_as_a_property_name_is_not_an_assertion(self) -> None:
        schema = {
            "properties": {"format": {"type": "string"}},
            "const": {"format": "phone"},
            "examples": [{"format": "fax"}],
        }
        assert only({"json_schema": schema}, '{"format": "phone"}').ok

    def test_json_schema_on_non_json(self) -> None:
        verdict = only({"json_schema": {"type": "object"}}, "not json")
        assert not verdict.ok
        assert "not JSON" in verdict.reason

    def test_fields_with_dotted_paths_and_indices(self) -> None:
        text = json.dumps({"a": {"b": [{"c": 1}]}, "flag": True})
        assert only({"fields": {"a.b.0.c": 1, "flag": True}}, text).ok
        verdict = only({"fields": {"a.b.0.c": 2, "a.x": 1}}, text)
        assert verdict.reason == "a.b.0.c: expected 2, got 1; a.x: missing (expected 1)"

    def test_fields_shows_whole_values_up_to_a_readable_size(self) -> None:
        summary = "The customer asks where parcel 4471 is; it left the warehouse on Monday. " * 2
        verdict = only({"fields": {"summary": "x"}}, json.dumps({"summary": summary.strip()}))
        assert verdict.reason == f'summary: expected "x", got "{summary.strip()}"'
        huge = {"items": list(range(100))}
        verdict = only({"fields": {"order": {"items": [1]}}}, json.dumps({"order": huge}))
        shown = json.dumps(huge)[:199] + "…"
        assert verdict.reason == (
            f'order: expected {{"items": [1]}}, got {shown} '
            "(values cut short: `casegate show` prints the whole output)"
        )

    def test_fields_on_two_long_strings_names_the_first_difference(self) -> None:
        before = "Refunds take 5 to 10 business days to reach your account. " * 4
        after = before[:150] + before[150:].replace("10 business", "14 business")
        verdict = only({"fields": {"note": before}}, json.dumps({"note": after}))
        assert verdict.reason == (
            "note: differs at character 194: expected …unt. Refunds take 5 to 10 business days to "
            "reach…, got …unt. Refunds take 5 to 14 business days to reach… "
            "(values cut short: `casegate show` prints the whole output)"
        )

    def test_fields_true_is_not_one(self) -> None:
        verdict = only({"fields": {"flag": 1}}, '{"flag": true}')
        assert not verdict.ok

    def test_fields_on_a_list_root_or_scalar(self) -> None:
        assert not only({"fields": {"a": 1}}, "[1, 2]").ok
        assert not only({"fields": {"a": 1}}, "3").ok

    def test_present_and_absent(self) -> None:
        text = '{"name": "x", "empty": "  ", "none": null, "zero": 0}'
        assert only({"fields_present": ["name", "zero"]}, text).ok
        verdict = only({"fields_present": ["name", "empty", "none", "gone"]}, text)
        assert verdict.reason == "missing or empty: empty, none, gone"
        assert only({"fields_absent": ["empty", "none", "gone"]}, text).ok
        assert only({"fields_absent": ["name"]}, text).reason == "present: name"


class TestCitations:
    EXPECT = {"citations": {"pattern": r"\[(kb-\d+)\]", "source": "documents", "min": 1}}
    INPUT = {"documents": [{"id": "kb-1"}, "kb-2"]}

    def test_cites_only_supplied_documents(self) -> None:
        assert only(self.EXPECT, "See [kb-1] and [kb-2].", case_input=self.INPUT).ok
        verdict = only(self.EXPECT, "See [kb-1] and [kb-9].", case_input=self.INPUT)
        assert verdict.reason == "cites kb-9, not among the supplied documents (kb-1, kb-2)"

    def test_minimum(self) -> None:
        expect = {"citations": {**self.EXPECT["citations"], "min": 2}}
        verdict = only(expect, "See [kb-1] and again [kb-1].", case_input=self.INPUT)
        assert verdict.reason == "1 distinct citations, at least 2 needed"

    def test_source_not_a_list(self) -> None:
        verdict = only(self.EXPECT, "[kb-1]", case_input={"documents": "kb-1"})
        assert "not a list" in verdict.reason

    def test_pattern_needs_one_group(self) -> None:
        with pytest.raises(checks.CheckSpecError, match="exactly one group"):
            checks.build({"citations": {"pattern": r"\[kb-\d+\]", "source": "documents"}})


class TestTools:
    CALLS = [
        ToolCall(name="lookup_order", arguments={"order": {"id": "A1"}}),
        ToolCall(name="issue_refund", arguments={"amount": 20}),
    ]

    def test_called_and_not_called(self) -> None:
        assert only({"tool_called": "lookup_order"}, "", tool_calls=self.CALLS).ok
        verdict = only({"tool_called": ["escalate"]}, "", tool_calls=self.CALLS)
        assert verdict.reason == "not called: escalate (called: lookup_order, issue_refund)"
        verdict = only({"tool_not_called": "issue_refund"}, "", tool_calls=self.CALLS)
        assert verdict.reason == "called forbidden tool: issue_refund"

    def test_sequence_is_ordered(self) -> None:
        assert only(
            {"tool_sequence": ["lookup_order", "issue_refund"]}, "", tool_calls=self.CALLS
        ).ok
        verdict = only(
            {"tool_sequence": ["issue_refund", "lookup_order"]}, "", tool_calls=self.CALLS
        )
        assert not verdict.ok

    def test_args(self) -> None:
        assert only(
            {"tool_args": {"lookup_order": {"order.id": "A1"}}}, "", tool_calls=self.CALLS
        ).ok
        verdict = only({"tool_args": {"issue_refund": {"amount": 25}}}, "", tool_calls=self.CALLS)
        assert verdict.reason == "issue_refund.amount: expected 25, got 20"


class TestToolArgumentSchemas:
    DECLARED = {
        "lookup_order": {
            "type": "object",
            "properties": {"order_id": {"type": "string", "pattern": "^A[0-9]+$"}},
            "required": ["order_id"],
            "additionalProperties": False,
        },
        "issue_refund": {
            "type": "object",
            "properties": {"amount": {"type": "number", "minimum": 0, "maximum": 100}},
            "required": ["amount"],
        },
    }

    def valid(self, *calls: ToolCall, declared: Any = DECLARED) -> checks.Verdict:
        return only({"tool_args_valid": True}, "", tool_calls=list(calls), declared_tools=declared)

    def test_calls_that_fit_their_declared_schemas_pass(self) -> None:
        verdict = self.valid(
            ToolCall(name="lookup_order", arguments={"order_id": "A12"}),
            ToolCall(name="issue_refund", arguments={"amount": 20}),
        )
        assert verdict.ok

    def test_no_calls_is_nothing_to_judge(self) -> None:
        # Pair it with tool_called to demand a call.
        assert self.valid().ok

    def test_each_bad_call_is_named_with_its_path(self) -> None:
        verdict = self.valid(
            ToolCall(name="lookup_order", arguments={"order_id": "12"}),
            ToolCall(name="issue_refund", arguments={"amount": 250}),
        )
        assert verdict.reason == (
            "call 1 (lookup_order): order_id: '12' does not match '^A[0-9]+$'; "
            "call 2 (issue_refund): amount: 250 is greater than the maximum of 100"
        )

    def test_a_missing_required_argument_is_named(self) -> None:
        verdict = self.valid(ToolCall(name="lookup_order", arguments={"order": "A1"}))
        assert verdict.reason == "call 1 (lookup_order): (root): 'order_id' is a required property"

    def test_an_undeclared_tool_fails(self) -> None:
        verdict = self.valid(ToolCall(name="delete_account", arguments={}))
        assert verdict.reason == (
            "call 1 (delete_account): the system declares no tool of this name "
            "(it declares: issue_refund, lookup_order)"
        )

    def test_arguments_that_are_not_an_object_fail_with_the_raw_text(self) -> None:
        verdict = self.valid(ToolCall(name="issue_refund", invalid_arguments='{"amount": 2'))
        assert verdict.reason == (
            'call 1 (issue_refund): arguments are not a JSON object ({"amount": 2)'
        )

    def test_a_system_without_tools_says_how_to_declare_them(self) -> None:
        verdict = self.valid(ToolCall(name="x", arguments={}), declared=None)
        assert verdict.reason.startswith("the system declares no tools: add `tools:`")

    def test_an_unusable_declared_schema_fails_the_call_not_the_run(self) -> None:
        verdict = self.valid(
            ToolCall(name="x", arguments={}), declared={"x": {"type": "no-such-type"}}
        )
        assert verdict.reason.startswith("call 1 (x): its declared schema cannot be used (")

    def test_many_bad_calls_are_counted_after_three(self) -> None:
        calls = [ToolCall(name="issue_refund", arguments={"amount": -n - 1}) for n in range(5)]
        verdict = self.valid(*calls)
        assert verdict.reason.count("is less than the minimum of 0") == 3
        assert verdict.reason.endswith("; and 2 more call(s)")

    def test_declared_tools_reads_the_system_config(self) -> None:
        system = {"tools": [{"name": "a", "parameters": {"type": "object"}}, {"name": "b"}]}
        assert checks.declared_tools(system) == {
            "a": {"type": "object"},
            "b": {"type": "object"},
        }
        assert checks.declared_tools({}) is None

    def test_an_explicit_schema_judges_only_its_tools(self) -> None:
        expect = {"tool_args_schema": {"issue_refund": {"properties": {"amount": {"maximum": 50}}}}}
        calls = [
            ToolCall(name="lookup_order", arguments={"anything": True}),
            ToolCall(name="issue_refund", arguments={"amount": 75}),
        ]
        verdict = only(expect, "", tool_calls=calls)
        assert verdict.reason == (
            "call 2 (issue_refund): amount: 75 is greater than the maximum of 50"
        )
        assert only(expect, "", tool_calls=calls[:1]).ok

    @pytest.mark.parametrize(
        ("arg", "problem"),
        [
            (True, "tool_args_schema takes {tool name: JSON Schema}"),
            ({}, "tool_args_schema takes {tool name: JSON Schema}"),
            ({"t": {"type": "nope"}}, "tool_args_schema.t: invalid schema"),
            ({"t": {"$ref": "https://example.com/s.json"}}, "does not resolve inside the schema"),
        ],
    )
    def test_explicit_schemas_are_checked_when_the_cases_load(self, arg: Any, problem: str) -> None:
        with pytest.raises(checks.CheckSpecError, match=re.escape(problem)):
            checks.build({"tool_args_schema": arg})

    def test_tool_args_valid_takes_true(self) -> None:
        with pytest.raises(checks.CheckSpecError, match="tool_args_valid takes `true`"):
            checks.build({"tool_args_valid": "yes"})


@settings(max_examples=200, deadline=None)
@given(
    arguments=st.dictionaries(st.text(max_size=5), st.none() | st.integers() | st.text(max_size=5)),
    raw=st.none() | st.text(max_size=30),
    tool=st.sampled_from(["lookup_order", "issue_refund", "other"]),
)
def test_tool_schema_checks_never_raise(
    arguments: dict[str, Any], raw: str | None, tool: str
) -> None:
    call = ToolCall(name=tool, arguments=arguments, invalid_arguments=raw)
    expect = {
        "tool_args_valid": True,
        "tool_args_schema": {"issue_refund": TestToolArgumentSchemas.DECLARED["issue_refund"]},
    }
    for verdict in judge(
        expect, "", tool_calls=[call], declared_tools=TestToolArgumentSchemas.DECLARED
    ):
        assert verdict.ok or verdict.reason
        assert not verdict.reason.startswith("check crashed")


def is_polite(text: str, case: Any) -> Any:
    if "please" in text:
        return True
    return False, "no 'please'"


def crashes(text: str, case: Any) -> bool:
    raise ValueError("bad day")


def within_refund_limit(text: str, case: Any, *, limit: float, currency: str = "EUR") -> Any:
    amounts = [float(word) for word in text.split() if word.replace(".", "", 1).isdigit()]
    over = [amount for amount in amounts if amount > limit]
    return (not over, f"offers {over[0]:g} {currency}, the limit is {limit:g}" if over else "")


SEEN: list[Any] = []


def sees_the_sample(text: str, case: Any, sample: Any) -> bool:
    SEEN.append(sample)
    if isinstance(sample.json, dict):
        sample.json["tampered"] = True  # a copy: the next check must not see this
    return True


def with_args_and_sample(text: str, case: Any, sample: Any, *, field: str) -> Any:
    value = sample.json.get(field) if isinstance(sample.json, dict) else None
    return (value is not None, f"{field} is missing from {sample.model}'s answer")


class TestCustom:
    @pytest.fixture(autouse=True)
    def _prepared(self) -> None:
        SEEN.clear()
        for name in (
            "is_polite",
            "crashes",
            "within_refund_limit",
            "sees_the_sample",
            "with_args_and_sample",
        ):
            usercode.prepare_check(f"{__name__}:{name}", REPO)

    def test_args_reach_the_function_as_keywords(self) -> None:
        expect = {"check": {"fn": f"{__name__}:within_refund_limit", "args": {"limit": 50}}}
        assert only(expect, "We can refund 40 today").ok
        assert only(expect, "We can refund 75 today").reason == "offers 75 EUR, the limit is 50"

    def test_three_parameters_receive_a_view_of_the_sample(self) -> None:
        calls = [ToolCall(name="lookup", arguments={"id": "A1"})]
        text = '{"severity": "high"}'
        expect = {"check": [f"{__name__}:sees_the_sample", f"{__name__}:sees_the_sample"]}
        verdicts = judge(
            expect,
            text,
            tool_calls=calls,
            stop_reason="end_turn",
            latency_ms=812.0,
            input_tokens=120,
            output_tokens=9,
            cost_usd=0.0004,
            model="claude-x",
        )
        assert [v.ok for v in verdicts] == [True]
        first, second = SEEN
        assert first.text == text and first.tool_calls == tuple(calls)
        assert (first.finish_reason, first.latency_ms, first.model) == ("stop", 812.0, "claude-x")
        assert (first.input_tokens, first.output_tokens, first.cost_usd) == (120, 9, 0.0004)
        # Each call gets its own copy: the first one's change is invisible to the second.
        assert first.json == {"severity": "high", "tampered": True}
        assert second.json == {"severity": "high", "tampered": True}
        assert first.json is not second.json
        with pytest.raises(AttributeError):
            first.text = "rewritten"

    def test_the_view_reads_extracted_json_and_none_when_there_is_none(self) -> None:
        expect = {"check": f"{__name__}:sees_the_sample", "extract_json": True}
        only(expect, 'Answer:\n```json\n{"a": 1}\n```')
        only({"check": f"{__name__}:sees_the_sample"}, "plain prose")
        assert SEEN[0].json == {"a": 1, "tampered": True}
        assert SEEN[1].json is None

    def test_args_and_a_sample_together(self) -> None:
        expect = {"check": {"fn": f"{__name__}:with_args_and_sample", "args": {"field": "owner"}}}
        verdict = only(expect, '{"severity": "low"}', model="standin-small")
        assert verdict.reason == "owner is missing from standin-small's answer"

    @pytest.mark.parametrize(
        ("entry", "problem"),
        [
            (
                {"fn": "within_refund_limit"},
                "within_refund_limit cannot be called with this case's args "
                "(missing a required argument: 'limit')",
            ),
            (
                {"fn": "within_refund_limit", "args": {"limit": 5, "limt": 1}},
                "within_refund_limit cannot be called with this case's args "
                "(got an unexpected keyword argument 'limt')",
            ),
        ],
    )
    def test_args_the_function_cannot_take_fail_with_the_reason(
        self, entry: dict[str, Any], problem: str
    ) -> None:
        entry = {**entry, "fn": f"{__name__}:{entry['fn']}"}
        assert only({"check": entry}, "refund 10").reason == f"{__name__}:{problem}"
        assert checks.prepared_problems({"check": entry}) == [f"{__name__}:{problem}"]

    @pytest.mark.parametrize(
        ("arg", "problem"),
        [
            ({"fn": 3}, "check.fn takes 'module:function', got 3"),
            ({"fn": "m:f", "args": [1]}, "check.args takes a mapping of argument name → value"),
            ({"fn": "m:f", "args": {"not a name": 1}}, "check.args takes a mapping"),
            (
                {"fn": "m:f", "arg": {}},
                "check: unknown key 'arg' (it takes fn, args and threshold)",
            ),
            ({"function": "m:f"}, "check takes 'module:function', {fn: 'module:function'"),
            ([], "check takes 'module:function', {fn"),
            ({"fn": "m f:g"}, "check takes 'module:function', got 'm f:g'"),
        ],
    )
    def test_malformed_entries_are_refused_at_load(self, arg: Any, problem: str) -> None:
        with pytest.raises(checks.CheckSpecError, match=re.escape(problem)):
            checks.build({"check": arg})

    def test_the_specs_of_every_form_are_listed_for_the_ruler(self) -> None:
        arg = ["a:one", {"fn": "b.c:two", "args": {"x": 1}}]
        assert checks.custom_specs({"check": arg}) == ["a:one", "b.c:two"]

    def test_bool_and_reason(self) -> None:
        assert only({"check": f"{__name__}:is_polite"}, "please").ok
        assert only({"check": f"{__name__}:is_polite"}, "now").reason == "no 'please'"

    def test_a_crashing_check_fails_the_case(self) -> None:
        verdict = only({"check": f"{__name__}:crashes"}, "x")
        assert verdict.reason == f"{__name__}:crashes raised ValueError: bad day"

    def test_loading_a_case_imports_no_user_code(self) -> None:
        # The spec is read at load; the import waits for the run (gate.usercode).
        judges = checks.build({"check": "no_such_module_xyz:fn"})
        verdict = checks.evaluate(judges, checks.Subject("x", {}, []))[0]
        assert verdict.reason == "no_such_module_xyz:fn was not imported before the run"

    def test_unimportable_check_is_refused_when_prepared(self) -> None:
        with pytest.raises(usercode.UserCodeError, match="cannot import 'no_such_module_xyz'"):
            usercode.prepare_check("no_such_module_xyz:fn", REPO)

    @pytest.mark.parametrize("spec", ["nomodule", "a b:c", "mod:", ":fn", "mod:f-n"])
    def test_malformed_spec_is_refused_at_load(self, spec: str) -> None:
        with pytest.raises(checks.CheckSpecError, match="takes 'module:function'"):
            checks.build({"check": spec})


class TestSpecErrors:
    @pytest.mark.parametrize(
        ("expect", "message"),
        [
            ({"contain": "x"}, "unknown check 'contain'"),
            ({"max_words": -1}, "whole number"),
            ({"max_words": True}, "whole number"),
            ({"regex": "("}, "invalid regular expression"),
            ({"normalize": ["upper"], "equals": "x"}, "unknown step 'upper'"),
            ({"json_schema": {"type": "nope"}}, "invalid schema"),
            ({"normalize": ["lower"]}, "names no check"),
            ({"json": "yes"}, "json takes `true`"),
            ({"json_schema": {"$schema": ["x"]}}, "not a usable JSON Schema"),
            ({"json_schema": {"const": dt.date(2026, 1, 1)}}, "not a usable JSON Schema"),
        ],
    )
    def test_refused(self, expect: dict[str, Any], message: str) -> None:
        with pytest.raises(checks.CheckSpecError, match=message):
            checks.build(expect)


class TestPatterns:
    @pytest.mark.parametrize("check", ["regex", "not_regex", "citations"])
    @pytest.mark.parametrize(
        "pattern", ["a{99999999999}", "x{4294967294}", "(?:a{1000}){1000}", "((a{50}){50}){50}"]
    )
    def test_repeats_that_would_exhaust_memory_are_refused_at_load(
        self, check: str, pattern: str
    ) -> None:
        arg: Any = {"pattern": f"({pattern})", "source": "d"} if check == "citations" else pattern
        with pytest.raises(checks.CheckSpecError, match=r"repeats too much \(its counted repeats"):
            checks.build({check: arg})

    def test_the_refusal_is_a_file_line_problem(self, tmp_path: Path) -> None:
        path = tmp_path / "r.yaml"
        path.write_text(
            "- id: a\n  input: {}\n  expect:\n    json: true\n    regex: 'a{99999999999}'\n"
        )
        with pytest.raises(CaseFileError) as caught:
            load_cases([path], display_root=tmp_path)
        assert caught.value.problems == [
            "r.yaml:5: case 'a': regex: the regular expression \"a{99999999999}\" repeats too much "
            "(its counted repeats would build more than 20,000 elements); use a smaller {count}, or + or *"
        ]

    @pytest.mark.parametrize(
        "pattern",
        [r"\d{3}-\d{4}", r"[{}]{2,5}", r"\p{L}{3}", "a{1,100000}", "(ab|cd){1000}", "a{,9}"],
    )
    def test_ordinary_counts_compile(self, pattern: str) -> None:
        assert checks.pattern_size(pattern) <= checks.MAX_PATTERN_SIZE
        checks.build({"regex": pattern})

    def test_groups_nested_too_deeply_are_refused(self) -> None:
        with pytest.raises(checks.CheckSpecError, match="its groups nest too deeply"):
            checks.build({"regex": "(" * 5000 + ")" * 5000})

    @pytest.mark.parametrize(
        ("expect", "case_input"),
        [
            ({"regex": "(a+)+$"}, {}),
            ({"not_regex": "(a|aa)+$"}, {}),
            ({"citations": {"pattern": "(a+)+$", "source": "docs"}}, {"docs": ["a"]}),
        ],
    )
    def test_catastrophic_backtracking_fails_the_check_instead_of_hanging(
        self, monkeypatch: pytest.MonkeyPatch, expect: dict[str, Any], case_input: dict[str, Any]
    ) -> None:
        monkeypatch.setattr(checks.base, "REGEX_TIMEOUT_S", 0.1)
        verdict = only(expect, "a" * 50_000 + "b", case_input=case_input)
        pattern = "(a|aa)+$" if "not_regex" in expect else "(a+)+$"
        assert not verdict.ok
        assert verdict.reason == (
            f"/{pattern}/ took longer than 0.1 s on this output (catastrophic backtracking?); "
            "simplify the pattern"
        )

    def test_re_syntax_and_semantics_still_hold(self) -> None:
        assert only({"regex": r"(?i)^refund\b"}, "Refund within 30 days").ok
        assert only({"regex": r"(?P<n>\d+) days"}, "30 days").ok
        assert not only({"regex": r"\Aabc\Z"}, "abc\n").ok  # \Z is the very end, as in re
        verdict = only({"not_regex": r"arrive (by|on) \w+"}, "It will arrive on Friday.")
        assert verdict.reason == 'matches forbidden /arrive (by|on) \\w+/: "arrive on Friday"'


# Every check with a valid argument, to be fed arbitrary output.
ALL_CHECKS: dict[str, Any] = {
    "equals": "x",
    "contains": ["a", "b"],
    "contains_any": ["a", "b"],
    "not_contains": "a",
    "regex": "a+",
    "not_regex": "b+",
    "max_words": 3,
    "min_words": 1,
    "max_chars": 10,
    "min_chars": 2,
    "starts_with": "a",
    "ends_with": "b",
    "finish_reason": ["stop", "tool_calls"],
    "max_latency_ms": 1500,
    "max_cost_usd": 0.01,
    "max_output_tokens": 100,
    "json": True,
    "json_schema": {
        "type": "object",
        "properties": {
            "a": {"type": "array", "items": {"type": "string", "format": "date-time"}},
            "": {"format": "uri"},
            "b": {"anyOf": [{"format": "email"}, {"format": "date"}, {"format": "ipv4"}]},
            "c": {"format": "uuid"},
        },
    },
    "fields": {"a.0": "x", "b.c": [1, {"d": None}]},
    "fields_present": ["a", "a.0"],
    "fields_absent": ["b"],
    "citations": {"pattern": r"\[(\w+)\]", "source": "docs"},
    "tool_called": "t",
    "tool_not_called": "u",
    "tool_sequence": ["t", "u"],
    "tool_args": {"t": {"a.b": 1}},
    "tool_args_valid": True,
    "tool_args_schema": {"t": {"type": "object", "required": ["a"]}},
    "similar": {"to": "a b", "min": 0.5, "method": "lexical"},
    "levenshtein": {"to": "ab", "max": 2},
    "moderation": {"max_score": 0.5},
    "no_pii": True,
    "rouge_n": {"to": "a b c", "n": 2, "threshold": 0.5},
    "rouge_l": {"to": ["a b", "c"], "threshold": 0.5},
    "bleu": {"to": "a b c d", "threshold": 0.3},
    "chrf": {"to": ["ab", "cd"], "threshold": 0.5},
    "token_f1": {"to": "a cat", "threshold": 0.5},
    "retrieval_recall": {"expected": ["a"], "k": 2, "threshold": 1},
    "retrieval_precision": {"expected": ["a", 7], "k": 3, "threshold": 0.3},
    "mrr": {"expected": ["a"], "threshold": 0.5},
    "ndcg": {"expected": ["a", "b"], "k": 5, "threshold": 0.7},
    "trajectory": {"expected": ["t", "u"], "order": "exact", "forbidden": ["v"], "max_steps": 3},
    "normalize": ["strip", "lower", "collapse_whitespace"],
}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=12,
)


def test_all_checks_covered() -> None:
    # `judge` needs a grader; tests/judging/test_judge.py covers it.
    # `extract_json` changes how the JSON checks read: tests/checks/test_jsontext.py covers it.
    # The RAG metrics need a grader too: tests/judging/test_rag_judge.py covers them.
    rag = {"faithfulness", "answer_relevance", "context_recall", "context_precision"}
    assert set(ALL_CHECKS) | {"check", "judge", "extract_json"} | rag == checks.KNOWN_KEYS


@settings(max_examples=300, deadline=None)
@given(expected=st.text(max_size=120), actual=st.text(max_size=120))
def test_equals_reason_is_bounded_and_points_at_the_first_difference(
    expected: str, actual: str
) -> None:
    verdict = only({"equals": expected}, actual)
    assert verdict.ok == (expected == actual)
    if verdict.ok:
        return
    assert "\n" not in verdict.reason and len(verdict.reason) < 250
    if verdict.reason.startswith("differs at character "):
        at = int(verdict.reason.split()[3].rstrip(":")) - 1
        assert expected[:at] == actual[:at]
        assert expected[at : at + 1] != actual[at : at + 1]


figures = st.fixed_dictionaries(
    {},
    optional={
        "stop_reason": st.none() | st.sampled_from(["stop", "length", "end_turn"]) | st.text(),
        "latency_ms": st.none() | st.floats() | st.integers(),
        "cost_usd": st.none() | st.floats() | st.integers(),
        "output_tokens": st.none() | st.integers(),
    },
)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300), recorded=figures)
def test_no_check_raises_on_arbitrary_text(text: str, recorded: dict[str, Any]) -> None:
    verdicts = judge(ALL_CHECKS, text, case_input={"docs": ["a"]}, **recorded)
    assert len(verdicts) == len(ALL_CHECKS) - 1
    assert all(isinstance(v.ok, bool) and (v.ok or v.reason) for v in verdicts)
    assert not any(v.reason.startswith("check crashed") for v in verdicts)


@settings(max_examples=300, deadline=None)
@given(
    document=json_values, case_input=st.dictionaries(st.text(max_size=5), json_values, max_size=3)
)
def test_no_check_raises_on_arbitrary_json(document: Any, case_input: dict[str, Any]) -> None:
    text = json.dumps(document)
    verdicts = judge(ALL_CHECKS, text, case_input=case_input)
    assert not any(v.reason.startswith("check crashed") for v in verdicts)
    assert all(v.ok or v.reason for v in verdicts)


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/missing"},
        {"properties": {"a": {"$ref": "https://schemas.example/a.json"}}},
        {"items": {"$ref": "#/items/3"}},
        {"$ref": "other.json#/x"},
    ],
)
def test_a_dangling_or_remote_ref_is_refused_at_load(schema: dict[str, Any]) -> None:
    with pytest.raises(checks.CheckSpecError, match="does not resolve inside the schema"):
        checks.build({"json_schema": schema})


def test_a_local_ref_is_kept() -> None:
    schema = {
        "$defs": {"level": {"enum": ["low", "high"]}},
        "properties": {"severity": {"$ref": "#/$defs/level"}, "tree": {"$ref": "#"}},
    }
    assert only({"json_schema": schema}, '{"severity": "high"}').ok
    assert not only({"json_schema": schema}, '{"severity": "mid"}').ok
