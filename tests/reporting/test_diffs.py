"""Diffs of two outputs: word by word for prose, line by line for JSON; exact, never a crash."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.reporting.diffs import Diff, diff_texts, json_form

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)
json_texts = json_values.map(json.dumps)
prose = st.text(alphabet=st.sampled_from(list("ab c.,\n\t{}[]\"'é→\u2028\r")), max_size=80)
outputs = st.one_of(st.text(max_size=120), prose, json_texts)


def bracket(op: str, text: str) -> str:
    return {"-": f"[-{text}-]", "+": f"{{+{text}+}}"}.get(op, text)


def compared(text: str, diff: Diff) -> str:
    """What a side looks like once prepared for the diff."""
    return (json_form(text) or text) if diff.kind == "lines" else text


@settings(max_examples=300)
@given(outputs)
def test_a_text_against_itself_is_no_diff(text: str) -> None:
    diff = diff_texts(text, text)
    assert not diff
    assert diff.lines() == [] and diff.inline(bracket) == ""


@settings(max_examples=300)
@given(outputs, outputs)
def test_the_runs_rebuild_both_sides(old: str, new: str) -> None:
    diff = diff_texts(old, new)
    if not diff:
        assert compared(old, diff) == compared(new, diff)
        return
    assert diff.old() == compared(old, diff)
    assert diff.new() == compared(new, diff)
    # Applying the diff: the unchanged and "-" runs give the old side, unchanged and "+" the new.
    rebuilt_old = "".join(run.text for run in diff.runs if run.op in " -")
    rebuilt_new = "".join(run.text for run in diff.runs if run.op in " +")
    assert (rebuilt_old, rebuilt_new) == (diff.old(), diff.new())
    assert all(run.units for run in diff.runs)


@settings(max_examples=300)
@given(outputs, outputs, st.integers(min_value=0, max_value=10))
def test_rendering_never_raises_and_every_line_is_marked(old: str, new: str, context: int) -> None:
    diff = diff_texts(old, new)
    for line in diff.lines(context):
        assert line[:1] in ("-", "+", " ", "@") or line == ""
        assert len(line.splitlines()) <= 1  # no line break survives inside a line
    diff.inline(bracket, context)


@settings(max_examples=200)
@given(json_values)
def test_json_key_order_and_layout_are_no_change(value: Any) -> None:
    compact = json.dumps(value, separators=(",", ":"))
    spaced = json.dumps(value, indent=4)
    if isinstance(value, dict):
        spaced = json.dumps(dict(reversed(list(value.items()))), indent=1)
    assert not diff_texts(compact, spaced)


def test_prose_is_compared_word_by_word() -> None:
    old = "Returns are accepted within 30 days. I can offer you store credit."
    new = "Returns are accepted within 14 days. I can offer you a refund."
    diff = diff_texts(old, new)
    assert diff.kind == "words"
    assert diff.inline(bracket) == (
        "Returns are accepted within [-30-]{+14+} days. I can offer you "
        "[-store credit-]{+a refund+}."
    )
    assert diff.lines() == [
        "  Returns are accepted within",
        "- 30",
        "+ 14",
        "  days. I can offer you",
        "- store credit",
        "+ a refund",
        "  .",
    ]


def test_long_unchanged_stretches_are_cut_and_counted() -> None:
    shared = " ".join(f"w{i}" for i in range(40))
    diff = diff_texts(f"start {shared} old end", f"begin {shared} new end")
    assert diff.inline(bracket, context=2) == (
        "[-start-]{+begin+} w0 w1 … w38 w39 [-old-]{+new+} end"
    )
    assert "@@ 36 unchanged words @@" in diff.lines(context=2)


def test_json_is_pretty_printed_then_compared_line_by_line() -> None:
    old = '{"order_id": 12, "status": "shipped", "items": [1, 2]}'
    new = '{"items": [1, 2], "status": "shipped", "order_id": "12"}'
    diff = diff_texts(old, new)
    assert diff.kind == "lines"
    assert diff.lines() == [
        "  {",
        '    "items": [',
        "      1,",
        "      2",
        "    ],",
        '-   "order_id": 12,',
        '+   "order_id": "12",',
        '    "status": "shipped"',
        "  }",
    ]


def test_json_against_prose_is_a_line_diff_of_both() -> None:
    diff = diff_texts('{"a": 1}', "Sure! Here it is: {a: 1}")
    assert diff.kind == "lines"
    assert diff.lines() == ["- {", '-   "a": 1', "- }", "+ Sure! Here it is: {a: 1}"]


def test_unparseable_or_too_deep_json_is_prose() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert json_form(deep) is None
    assert json_form("[1, 2") is None
    assert json_form('"just a string"') is None
    assert diff_texts(deep, deep + " ").kind == "words"


def test_a_long_repetitive_output_is_diffed_without_stalling() -> None:
    # The exact matcher is quadratic on text like this; past its limit the diff stays fast.
    old = " ".join(["the order"] * 6_000)
    new = old.replace("order", "parcel", 3)
    diff = diff_texts(old, new)
    assert diff.old() == old and diff.new() == new


plain_prose = st.text(alphabet=st.sampled_from(list("ab c.,\né→")), max_size=80)


@settings(max_examples=300)
@given(plain_prose, plain_prose)
def test_short_prose_shows_both_sides_whole_with_the_changes_marked(old: str, new: str) -> None:
    diff = diff_texts(old, new)
    if not diff:
        return
    shown = diff.sides()
    removed = [line for line in shown if line.startswith("-")]
    added = [line for line in shown if line.startswith("+")]
    assert shown == removed + added and removed and added

    def unmarked(lines: list[str], opening: str, closing: str) -> list[str]:
        return [line[2:].replace(opening, "").replace(closing, "").rstrip() for line in lines]

    # Each side, its marks taken out, is its text, line by line (less spaces at line ends).
    def trimmed(text: str) -> list[str]:
        return [line.rstrip() for line in text.splitlines()] or [""]

    assert unmarked(removed, "[-", "-]") == trimmed(diff.old())
    assert unmarked(added, "{+", "+}") == trimmed(diff.new())


def test_a_short_answer_reads_as_its_two_versions() -> None:
    diff = diff_texts(
        "Your refund arrives in 5 business days. Sorry!",
        "Your refund will arrive in 3 business days.",
    )
    assert diff.sides() == [
        "- Your refund [-arrives-] in [-5-] business days. [-Sorry!-]",
        "+ Your refund {+will arrive+} in {+3+} business days.",
    ]
