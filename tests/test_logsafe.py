"""The job log and the step summary: no untrusted text becomes a workflow command."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.logsafe import (
    SUMMARY_LIMIT,
    Annotation,
    cap_annotations,
    command,
    escape_data,
    escape_property,
    fence,
    fit_summary,
    flatten,
)
from tests.fakes.actions import acted_on

#: lines a pull request would like the runner to act on
FORGED = [
    "::error::pwned",
    "::add-mask::casegate",
    "::set-output name=verdict::ship",
    "::stop-commands::guess",
    "::guess::",
    "::endgroup::",
]
hostile_text = st.lists(st.one_of(st.text(max_size=30), st.sampled_from(FORGED)), max_size=8).map(
    "\n".join
)


def unescape(text: str) -> str:
    """The runner's reading of an escaped value."""
    return (
        text.replace("%0D", "\r")
        .replace("%0A", "\n")
        .replace("%3A", ":")
        .replace("%2C", ",")
        .replace("%25", "%")
    )


def test_escapes_as_the_actions_toolkit_does() -> None:
    assert escape_data("100% done\r\nnext: a,b") == "100%25 done%0D%0Anext: a,b"
    assert escape_property("cases/a:b,c%\n") == "cases/a%3Ab%2Cc%25%0A"


def test_command_escapes_message_and_properties_and_drops_none() -> None:
    line = command("error", "two\nlines", file="cases/x,y.yaml", line=3, title=None)
    assert line == "::error file=cases/x%2Cy.yaml,line=3::two%0Alines"
    assert command("notice", "plain") == "::notice::plain"


@settings(max_examples=200, deadline=None)
@given(st.text(), st.text())
def test_a_command_is_one_line_and_reads_back_as_written(message: str, title: str) -> None:
    line = command("warning", message, title=title)
    assert "\n" not in line and "\r" not in line
    props, _, data = line.removeprefix("::warning ").partition("::")
    assert unescape(data) == message
    assert unescape(props.removeprefix("title=")) == title


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_flatten_leaves_one_line(text: str) -> None:
    flat = flatten(text)
    assert len(flat.splitlines()) <= 1
    assert flatten("a\r\nb\nc\u2028d") == "a b c d"


@settings(max_examples=200, deadline=None)
@given(hostile_text)
def test_nothing_fenced_is_acted_on(text: str) -> None:
    log = "\n".join(["::notice::before", fence(text), "::notice::after"])
    assert acted_on(log) == ["::notice::before", "::notice::after"]


def test_each_fence_has_a_fresh_token() -> None:
    first, second = fence("x"), fence("x")
    tokens = [re.match(r"::stop-commands::(\w+)\n", f).group(1) for f in (first, second)]  # type: ignore[union-attr]
    assert tokens[0] != tokens[1] and len(tokens[0]) == 32
    assert first.endswith(f"\n::{tokens[0]}::")


def test_a_fenced_text_keeps_its_lines() -> None:
    for text in ("one\n::error::two", "one\n::error::two\n"):
        lines = fence(text).split("\n")
        assert lines[1:3] == ["one", "::error::two"] and len(lines) == 4


def annotation(file: str | None, level: str = "error") -> Annotation:
    return Annotation(level, f"in {file}", file=file, line=1)  # type: ignore[arg-type]


def test_annotations_keep_the_first_of_each_file_within_githubs_limits() -> None:
    items = [annotation("a.yaml")] * 12 + [annotation("b.yaml", "warning")] * 3
    items += [annotation("c.yaml")] * 2
    kept, summary = cap_annotations(items)
    assert kept == [annotation("a.yaml")] * 10 + [annotation("b.yaml", "warning")] * 3
    assert summary is not None and summary.startswith("4 more annotation(s) not shown")


def test_annotations_per_file_and_in_all() -> None:
    items = [annotation(f"f{i}.yaml", "notice") for i in range(12) for _ in range(6)]
    kept, summary = cap_annotations(items, per_file=5, total=50, per_level=100)
    assert len(kept) == 50
    assert {a.file for a in kept} == {f"f{i}.yaml" for i in range(10)}
    assert all(sum(a.file == f"f{i}.yaml" for a in kept) == 5 for i in range(10))
    assert summary is not None and summary.startswith(f"{len(items) - 50} more")


def test_annotations_under_the_limits_are_all_kept() -> None:
    items = [annotation("a.yaml"), annotation(None, "warning")]
    assert cap_annotations(items) == (items, None)
    assert items[0].command() == "::error file=a.yaml,line=1::in a.yaml"
    assert items[1].command() == "::warning line=1::in None"


def test_a_summary_within_the_limit_is_unchanged() -> None:
    text = "### casegate\n\n" + "é" * 100
    assert fit_summary(text) == text
    assert fit_summary(text, limit=len(text.encode())) == text


def test_a_summary_over_the_limit_is_cut_between_lines_and_says_so() -> None:
    lines = [f"| case-{i} | 🔴 failed |" for i in range(100_000)]
    text = "\n".join(lines) + "\n"
    fitted = fit_summary(text)
    data = fitted.encode("utf-8")
    assert len(text.encode()) > SUMMARY_LIMIT >= len(data)
    head, _, note = fitted.rpartition("\n\n")
    assert text.startswith(head + "\n")
    cut = len(text.encode()) - len((head + "\n").encode())
    assert f"the last {cut:,} of {len(text.encode()):,} bytes are left out" in note


def test_a_cut_inside_pre_and_details_closes_them() -> None:
    text = "<details><summary>x</summary>\n\n<pre>" + "line\n" * 1000 + "</pre>\n</details>\n"
    fitted = fit_summary(text, limit=2_000)
    assert len(fitted.encode()) <= 2_000
    body = fitted[: fitted.index("_casegate cut")]
    assert body.rstrip().endswith("</pre>\n</details>")


@settings(max_examples=100, deadline=None)
@given(
    # No "<": a cut that closes a <pre> adds to the head, which this compares with the text.
    st.lists(st.text(st.characters(exclude_characters="<"), max_size=80), max_size=200).map(
        "\n".join
    ),
    st.integers(min_value=400, max_value=5_000),
)
def test_fit_summary_never_exceeds_the_limit(text: str, limit: int) -> None:
    fitted = fit_summary(text, limit)
    assert len(fitted.encode("utf-8")) <= limit  # strict: the file is written as UTF-8
    writable = text.encode("utf-8", errors="replace").decode("utf-8")
    if len(writable.encode("utf-8")) > limit:
        kept = fitted[: fitted.rindex("_casegate cut")].rstrip("\n")
        assert writable.startswith(kept)
    else:
        assert fitted == writable


@given(st.text(alphabet="#[]a:\n ", max_size=40))
def test_no_flattened_or_one_line_text_holds_the_runners_legacy_command_form(text: str) -> None:
    from gate.reporting.show import one_line

    assert "##[" not in flatten(text) and "##[" not in one_line(text)
