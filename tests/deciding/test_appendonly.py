"""gate/deciding/appendonly.py: appending lines is the only change to the history export that
reports nothing; every base line a head changes, removes, reorders or inserts before is
reported with its line number on the base."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate.deciding import appendonly as integrity
from gate.deciding.appendonly import Rewrite, rewritten_lines, summary
from gate.history.export import line_of
from gate.history.records import records_of
from tests.history.test_history_store import made_run

PATH = "history/support.jsonl"
RECORDS = [
    line_of(record).encode() for record in records_of(made_run(dict.fromkeys("abcd", "pass")), "x")
]
BASE = b"".join(line + b"\n" for line in RECORDS)


def joined(*lines: bytes, end: bytes = b"\n") -> bytes:
    return b"\n".join(lines) + end


def found(base: bytes, head: bytes) -> list[tuple[int, str]]:
    return [(r.line, r.kind) for r in rewritten_lines(base, head, PATH)]


@pytest.mark.parametrize(
    "head",
    [
        BASE,
        BASE + RECORDS[0] + b"\n",  # a line appended again, word for word
        BASE + b"\n\n" + RECORDS[1] + b"\n",  # blank lines appended
        BASE + b'{"not": "a record"}\n',  # appended, whatever it holds: the reader judges it
        BASE + b"no newline at the end",
    ],
)
def test_appending_is_no_rewrite(head: bytes) -> None:
    assert rewritten_lines(BASE, head, PATH) == []


def test_a_new_export_and_a_base_without_a_final_newline_are_appended_to() -> None:
    assert rewritten_lines(b"", BASE, PATH) == []
    assert rewritten_lines(BASE[:-1], BASE + RECORDS[0] + b"\n", PATH) == []
    assert rewritten_lines(BASE, BASE[:-1], PATH) == []  # the last newline dropped: no line lost


def test_a_changed_line_is_named_with_its_case_and_run() -> None:
    edited = RECORDS[1].replace(b'"verdict":"pass"', b'"verdict":"fail"')
    assert edited != RECORDS[1]
    (rewrite,) = rewritten_lines(BASE, joined(RECORDS[0], edited, *RECORDS[2:]), PATH)
    assert rewrite == Rewrite(
        PATH, 2, "changed", "changed (case 'b', run of '2026-01-01T00:00:00+00:00')"
    )
    assert rewrite.message() == (
        "history/support.jsonl:2: changed (case 'b', run of '2026-01-01T00:00:00+00:00')"
    )


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (joined(RECORDS[0], *RECORDS[2:]), [(2, "removed")]),
        (joined(*RECORDS[:2]), [(3, "removed"), (4, "removed")]),
        (b"", [(1, "removed"), (2, "removed"), (3, "removed"), (4, "removed")]),
        (joined(RECORDS[1], RECORDS[0], *RECORDS[2:]), [(1, "changed"), (2, "removed")]),
        (joined(RECORDS[0], b"{}", *RECORDS[1:]), [(2, "changed")]),
        (joined(*RECORDS[:3], RECORDS[3] + b" "), [(4, "changed")]),
        (BASE.replace(b"\n", b"\r\n"), [(1, "changed"), (2, "changed"), (3, "changed"), (4, "changed")]),
        (joined(*RECORDS[:3], b"{}", b"{}", b"{}"), [(4, "changed")]),
    ],
)  # fmt: skip
def test_every_rewritten_base_line_is_reported(
    head: bytes, expected: list[tuple[int, str]]
) -> None:
    assert found(BASE, head) == expected


def test_an_insertion_says_so_on_the_line_it_moved() -> None:
    (rewrite,) = rewritten_lines(BASE, joined(RECORDS[0], b"{}", b"{}", *RECORDS[1:]), PATH)
    assert (
        rewrite.text
        == "2 line(s) inserted before it (case 'b', run of '2026-01-01T00:00:00+00:00')"
    )


def test_a_base_line_without_its_newline_that_grows_is_a_change() -> None:
    assert found(joined(b"a", b"b", end=b""), joined(b"a", b"bc")) == [(2, "changed")]
    assert found(joined(b"a", b"", b"b"), joined(b"a", b"b")) == [(2, "removed")]


def test_odd_base_lines_are_described_in_one_short_line() -> None:
    base = joined(
        b"\xff\xfe not utf-8", b"[" * 5000, json.dumps({"case": "x\n" * 100}).encode(), b""
    )
    rewrites = rewritten_lines(base, b"", PATH)
    assert [r.text[:9] for r in rewrites] == ["removed (", "removed (", "removed (", "removed ("]
    assert rewrites[3].text == "removed (a blank line)"
    assert all("\n" not in r.message() and len(r.message()) < 150 for r in rewrites)


def test_the_summary_names_the_first_few() -> None:
    rewrites = rewritten_lines(BASE, b"", PATH)
    assert summary(rewrites, limit=2) == (
        "history/support.jsonl: 4 line(s) the base commit's history holds were rewritten "
        "(line 1 removed (case 'a', run of '2026-01-01T00:00:00+00:00'), line 2 removed "
        "(case 'b', run of '2026-01-01T00:00:00+00:00'), and 2 more); the history is only "
        "ever appended to"
    )


def test_past_the_alignment_limit_lines_are_judged_by_position(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(integrity, "ALIGN_LIMIT", 1)
    assert found(BASE, joined(RECORDS[1], RECORDS[0], *RECORDS[2:])) == [
        (1, "changed"),
        (2, "changed"),
    ]
    assert found(BASE, joined(RECORDS[0], *RECORDS[2:])) == [
        (2, "changed"),
        (3, "changed"),
        (4, "removed"),
    ]


# --- properties --------------------------------------------------------------------------

# Lines as the export holds them: any bytes but the newline that ends them.
LINE = st.binary(max_size=12).map(lambda data: data.replace(b"\n", b""))


@given(st.lists(LINE, max_size=12), st.lists(LINE, max_size=6), st.booleans())
def test_base_lines_and_appended_lines_are_never_a_rewrite(
    base_lines: list[bytes], appended: list[bytes], final_newline: bool
) -> None:
    base = b"\n".join(base_lines) + (b"\n" if final_newline and base_lines else b"")
    head = b"".join(line + b"\n" for line in [*base_lines, *appended])
    assert rewritten_lines(base, head, PATH) == []


@given(
    st.lists(LINE.filter(bool), min_size=1, max_size=12, unique=True),
    st.data(),
    st.sampled_from(["edit", "remove"]),
)
def test_an_edited_or_removed_base_line_is_reported_at_its_line(
    base_lines: list[bytes], data: st.DataObject, change: str
) -> None:
    index = data.draw(st.integers(min_value=0, max_value=len(base_lines) - 1))
    replacement = data.draw(LINE.filter(lambda line: line not in base_lines))
    appended = data.draw(st.lists(LINE.filter(lambda line: line not in base_lines), max_size=4))
    head_lines = list(base_lines)
    if change == "edit":
        head_lines[index] = replacement
    else:
        del head_lines[index]
    base = b"".join(line + b"\n" for line in base_lines)
    head = b"".join(line + b"\n" for line in [*head_lines, *appended])
    rewrites = rewritten_lines(base, head, PATH)
    # The base's lines are unique, and neither the new line nor the appended ones are
    # among them: the one line changed is the one line reported. (The last line removed
    # and lines appended is the same bytes as that line changed: either word will do.)
    assert [r.line for r in rewrites] == [index + 1]
    last_replaced = index == len(base_lines) - 1 and appended
    assert rewrites[0].kind == ("changed" if change == "edit" or last_replaced else "removed")


@given(st.lists(LINE, max_size=10), st.lists(LINE, max_size=10))
def test_a_rewrite_is_reported_exactly_when_the_head_does_not_open_with_the_base(
    base_lines: list[bytes], head_lines: list[bytes]
) -> None:
    base = b"".join(line + b"\n" for line in base_lines)
    head = b"".join(line + b"\n" for line in head_lines)
    rewrites = rewritten_lines(base, head, PATH)
    first = next(
        (i for i, line in enumerate(base_lines) if i >= len(head_lines) or head_lines[i] != line),
        None,
    )
    if first is None:
        assert rewrites == []
    else:
        assert rewrites
        assert rewrites[0].line == first + 1  # the first line not in place, always
        lines = [r.line for r in rewrites]
        assert lines == sorted(set(lines)) and all(1 <= n <= len(base_lines) for n in lines)
