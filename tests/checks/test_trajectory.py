"""An agent's trajectory: the three orders and their graded scores (worked by hand),
forbidden tools and max_steps as hard failures, and properties over any trajectory."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate import checks
from gate.outputs import ToolCall
from tests.checks.test_checks import only


def run(arg: dict[str, Any], *called: str) -> checks.Verdict:
    calls = [ToolCall(name=name, arguments={}) for name in called]
    return only({"trajectory": arg}, "done", tool_calls=calls)


PLAN = ["search", "lookup", "refund"]


class TestOrders:
    def test_in_order_is_a_subsequence_by_default(self) -> None:
        found = run({"expected": PLAN}, "search", "think", "lookup", "refund")
        assert (found.ok, found.score) == (True, 1.0)

    def test_in_order_scores_the_longest_common_subsequence_over_expected(self) -> None:
        # called search → refund → lookup: the longest run in order is 2 (search, lookup or
        # search, refund) of 3 expected: 2/3
        found = run({"expected": PLAN}, "search", "refund", "lookup")
        assert (found.ok, found.score) == (False, pytest.approx(2 / 3))
        assert found.reason == (
            "expected in order search → lookup → refund, got search → refund → lookup "
            "(2 of 3 in order)"
        )

    def test_exact_costs_extra_steps_as_well_as_missing_ones(self) -> None:
        exact = {"expected": PLAN, "order": "exact"}
        assert run(exact, *PLAN).score == 1.0
        # one extra step: LCS 3 over the longer side, 4 calls: 3/4
        extra = run(exact, "search", "think", "lookup", "refund")
        assert (extra.ok, extra.score) == (False, 3 / 4)
        assert extra.reason == (
            "expected exactly search → lookup → refund, got search → think → lookup → refund"
        )
        # one step missing: LCS 2 over 3 expected: 2/3
        assert run(exact, "search", "refund").score == pytest.approx(2 / 3)
        assert run(exact).score == 0.0

    def test_any_order_reads_expected_as_a_set(self) -> None:
        loose = {"expected": ["search", "refund", "search"], "order": "any_order"}
        assert run(loose, "refund", "search").score == 1.0
        # 1 of the 2 distinct tools: 1/2
        found = run(loose, "refund", "refund")
        assert (found.ok, found.score) == (False, 1 / 2)
        assert found.reason == "not called: search (called: refund → refund)"


class TestHardFailures:
    def test_a_forbidden_call_fails_and_the_score_keeps_the_match(self) -> None:
        found = run({"expected": PLAN, "forbidden": ["delete_account"]}, *PLAN, "delete_account")
        assert (found.ok, found.score) == (False, 1.0)
        assert found.reason == "called forbidden tool: delete_account (step 4)"

    def test_too_many_steps_fails_and_reports_both_problems(self) -> None:
        found = run({"expected": ["refund"], "max_steps": 2}, "search", "search", "lookup")
        assert (found.ok, found.score) == (False, 0.0)
        assert found.reason == (
            "expected in order refund, got search → search → lookup (0 of 1 in order); "
            "3 tool calls, the maximum is 2"
        )

    def test_without_expected_it_only_passes_or_fails(self) -> None:
        guard = {"forbidden": ["delete_account"], "max_steps": 3}
        assert run(guard, "search") == checks.Verdict("trajectory", True)
        found = run(guard, "delete_account")
        assert (found.ok, found.score) == (False, None)
        assert run({"max_steps": 0}) == checks.Verdict("trajectory", True)

    def test_a_long_trajectory_is_cut_in_the_reason(self) -> None:
        found = run({"expected": ["refund"], "order": "exact"}, *(["search"] * 40))
        assert found.reason.endswith("search → … (40 calls)")
        assert found.score == 0.0


# --- properties ----------------------------------------------------------------------------

tools = st.sampled_from(["a", "b", "c", "d"])


@settings(max_examples=300, deadline=None)
@given(
    expected=st.lists(tools, min_size=1, max_size=6),
    called=st.lists(tools, max_size=10),
    order=st.sampled_from(["exact", "in_order", "any_order"]),
)
def test_scores_are_from_0_to_1_and_1_exactly_when_the_order_holds(
    expected: list[str], called: list[str], order: str
) -> None:
    found = run({"expected": expected, "order": order}, *called)
    assert found.score is not None and 0 <= found.score <= 1
    if order == "exact":
        holds = called == expected
    elif order == "in_order":
        rest = iter(called)
        holds = all(tool in rest for tool in expected)
    else:
        holds = set(expected) <= set(called)
    assert found.ok == holds == (found.score == 1)


@settings(max_examples=100, deadline=None)
@given(expected=st.lists(tools, min_size=1, max_size=6))
def test_the_expected_trajectory_itself_passes_every_order(expected: list[str]) -> None:
    for order in ("exact", "in_order", "any_order"):
        assert run({"expected": expected, "order": order}, *expected).score == 1.0


malformed = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=4),
    st.lists(tools, max_size=3),
    st.just({}),
    st.just({"order": "exact"}),
    st.fixed_dictionaries(
        {"expected": st.one_of(st.just([]), st.just("a"), st.just([1]), st.none())},
        optional={"order": st.sampled_from(["exact", "any_order"])},
    ),
    st.fixed_dictionaries(
        {"expected": st.just(["a"])},
        optional={"forbidden": st.just(["x"])},
    ).map(lambda arg: arg | {"order": "sideways"}),
    st.fixed_dictionaries({"forbidden": st.one_of(st.just([]), st.just("x"), st.just([None]))}),
    st.fixed_dictionaries(
        {"max_steps": st.one_of(st.integers(-3, -1), st.floats(), st.booleans())}
    ),
    st.just({"expected": ["a"], "forbidden": ["a"]}),
    st.just({"max_steps": 3, "steps": 4}),
)


@settings(max_examples=300, deadline=None)
@given(arg=malformed)
def test_a_malformed_argument_is_one_line_naming_the_check(arg: Any) -> None:
    with pytest.raises(checks.CheckSpecError) as caught:
        checks.build({"trajectory": arg})
    message = str(caught.value)
    assert "\n" not in message and message.startswith("trajectory")


@pytest.mark.parametrize(
    ("arg", "said"),
    [
        ({"order": "exact"}, "trajectory needs at least one of expected, forbidden or max_steps"),
        (
            {"forbidden": ["x"], "order": "exact"},
            "trajectory: `order` says how to match `expected`, which is missing",
        ),
        (
            {"expected": ["a"], "order": "loose"},
            "trajectory: `order` is exact, in_order or any_order",
        ),
        (
            {"expected": ["a", "b"], "forbidden": ["b"]},
            "trajectory: 'b' is both expected and forbidden",
        ),
        ({"max_steps": -1}, "trajectory.max_steps takes a whole number ≥ 0"),
        ({"expected": "a"}, "trajectory.expected takes a list of strings"),
    ],
)
def test_argument_errors_say_what_to_write(arg: dict[str, Any], said: str) -> None:
    with pytest.raises(checks.CheckSpecError, match="^" + re.escape(said)):
        checks.build({"trajectory": arg})


def test_tool_args_valid_judges_every_call_of_a_trajectory() -> None:
    # The trajectory check leaves arguments alone: tool_args_valid reads each step.
    declared = {"search": {"type": "object", "required": ["q"]}}
    calls = [
        ToolCall(name="search", arguments={"q": "x"}),
        ToolCall(name="search", arguments={}),
        ToolCall(name="search", arguments={"q": "y"}),
        ToolCall(name="search", invalid_arguments="{oops"),
    ]
    found = only({"tool_args_valid": True}, "", tool_calls=calls, declared_tools=declared)
    assert (found.ok, found.score) == (False, 2 / 4)
    assert found.reason.startswith("call 2 (search): ") and "call 4 (search)" in found.reason
