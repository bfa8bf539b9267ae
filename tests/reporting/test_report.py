"""Reports: markdown that survives hostile output and GitHub's size limit."""

from __future__ import annotations

import dataclasses
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.deciding.compare import Comparison, compare
from gate.deciding.rulerside import RulerChange, RulerReview
from gate.deciding.rules import Reason, Verdict, decide
from gate.github.api import marker_for
from gate.reporting.diffs import diff_texts
from gate.reporting.junit import write_junit
from gate.reporting.markup import ZWSP, cell, code, diff_block
from gate.reporting.report import json_report, markdown_report, text_report
from gate.results import CaseResult
from gate.suite.config import GateConfig
from tests.factories import result, run

HOSTILE = "a | b `code` <script>alert(1)</script> @org/team thanks @alice see #123 **bold** [x](y)"


def reports(baseline_cases, candidate_cases, **kwargs):  # type: ignore[no-untyped-def]
    comparison = compare(run(baseline_cases), run(candidate_cases))
    verdict = decide(comparison, GateConfig())
    return comparison, verdict, markdown_report(comparison, verdict, **kwargs)


def table_rows(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("|")]


def test_hostile_output_cannot_break_tables_render_html_or_ping() -> None:
    _, _, body = reports(
        [result("x", "pass", critical=True)],
        [result("x", "fail", critical=True, text=HOSTILE, reason=HOSTILE)],
    )
    markdown = "\n".join(outside_pre(body))  # in the diff's fence, <script> is shown as text
    assert "<script>" not in markdown
    assert "&lt;script&gt;" in markdown
    assert "@org" not in body and "@alice" not in body
    assert f"@{ZWSP}org/team" in body
    assert "#123" not in body and f"#{ZWSP}123" in body
    for row in table_rows(body):
        # Every unescaped pipe is a column border: the header has 3 columns, so 4 borders.
        assert len(re.findall(r"(?<!\\)\|", row)) == 4, row


def test_cell_escapes_markdown_and_flattens_lines() -> None:
    assert cell("a|b\nc") == "a\\|b c"
    assert cell("`x`") == "\\`x\\`"
    assert cell("<b>") == "&lt;b&gt;"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_cell_never_leaves_a_raw_pipe_newline_or_tag(text: str) -> None:
    escaped = cell(text)
    assert "\n" not in escaped
    assert "<" not in escaped
    assert not re.search(r"(?<!\\)\|", escaped)
    assert not re.search(r"@[A-Za-z0-9]", escaped)


def test_a_huge_output_is_truncated_under_the_comment_limit() -> None:
    huge = "x" * 100_000
    baseline = [result(f"c{i:03d}", "pass") for i in range(300)]
    candidate = [result(f"c{i:03d}", "fail", text=huge, reason=huge) for i in range(300)]
    _, _, body = reports(baseline, candidate)
    assert len(body) <= 60_000
    assert "Regressions (300)" in body  # the most important section survives
    assert "Truncated" in body


RUN = "https://github.com/acme/shop/actions/runs/4242"


def test_the_viewer_link_heads_the_comment_and_the_truncation_note_points_to_it() -> None:
    huge = "x" * 100_000
    before = run([result(f"c{i:03d}", "pass") for i in range(300)])
    after = run([result(f"c{i:03d}", "fail", text=huge, reason=huge) for i in range(300)])
    comparison = compare(before, after, GateConfig())
    verdict = decide(comparison, GateConfig())
    body = markdown_report(comparison, verdict, link=RUN)
    assert len(body) <= 60_000
    assert f"the `casegate-viewer` artifact of [this run]({RUN}) (one HTML page" in body
    note = body[body.index("_Truncated: ") :]
    assert f"The HTML viewer, the `casegate-viewer` artifact of [this run]({RUN})" in note
    # Without a run (the CLI's check), the note names the command that draws the page.
    plain = markdown_report(comparison, verdict)
    assert "casegate-viewer" not in plain
    assert "`casegate view RESULTS --baseline BASELINE` draws them" in plain


def test_a_link_that_is_not_a_runs_page_is_left_out() -> None:
    comparison = compare(run([result("a")]), run([result("a")]), GateConfig())
    verdict = decide(comparison, GateConfig())
    for link in (
        "javascript:alert(1)",
        "https://evil.example/x)](https://github.com",
        f"{RUN}/../../pull/1",
        "http://github.com/acme/shop/actions/runs/1",
    ):
        assert "casegate-viewer" not in markdown_report(comparison, verdict, link=link), link


def test_verdict_line_and_sections() -> None:
    _, _, body = reports(
        [result("c", "pass", critical=True), result("f", "fail")],
        [result("c", "fail", critical=True), result("f", "pass")],
        marker="<!-- m -->",
    )
    lines = body.splitlines()
    assert lines[0] == "<!-- m -->"
    assert lines[2].startswith("### ❌ casegate: **block**")
    assert "**1/2 → 1/2 passed (50.0% → 50.0%)**" in body
    assert "| 🔴 critical | `c`" in body
    assert "#### Fixes (1)" in body
    assert "<details><summary>c (critical): pass → fail</summary>" in body


def test_text_and_json_reports() -> None:
    comparison, verdict, _ = reports(
        [result("a", "pass"), result("b", "fail")], [result("a", "fail"), result("b", "pass")]
    )
    text = text_report(comparison, verdict)
    assert text.startswith("SHIP: s — 1/2 → 1/2 passed")
    data = json_report(comparison, verdict)
    assert data["verdict"] == "ship"
    assert data["regressions"] == ["a"]
    assert data["fixes"] == ["b"]
    assert {
        "baseline",
        "candidate",
        "unchanged_pass",
        "unchanged_fail",
        "errors",
        "added",
        "removed",
        "changed",
        "reasons",
    } <= set(data)
    assert set(data["baseline"]) == {"system", "pass_rate", "passed", "cases"}
    json.dumps(data)


def test_the_text_report_names_a_few_ids_per_line_and_counts_the_rest() -> None:
    """A 10,000-case suite once printed every unchanged failure on one terminal line."""
    failing = [result(f"c{i:03d}", "fail") for i in range(25)]
    comparison, verdict, _ = reports(failing, [*failing, *(result(f"n{i}") for i in range(3))])
    text = text_report(comparison, verdict)
    unchanged = next(line for line in text.splitlines() if line.startswith("unchanged:"))
    assert "c019" in unchanged and "c020" not in unchanged
    assert unchanged.endswith("and 5 more (the results file names them all))")
    assert "added: n0, n1, n2\n" in text + "\n"  # a short list is whole
    assert json_report(comparison, verdict)["unchanged_fail"] == [c.id for c in failing]


def test_junit(tmp_path: Path) -> None:
    results = run(
        [
            result("ok"),
            result("bad", "fail", critical=True, reason="missing 'x'"),
            result("down", "error", reason="503"),
        ]
    )
    path = tmp_path / "junit.xml"
    write_junit(results, path, frozenset({"bad"}))
    suite = ET.parse(path).getroot().find("testsuite")  # noqa: S314 - our own file
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    failure = cases["bad"].find("failure")
    assert failure is not None and failure.get("message") == "[critical] regression: missing 'x'"
    assert cases["down"].find("error") is not None
    assert list(cases["ok"]) == []


def test_notes_and_instrument_facts_are_separate_paragraphs() -> None:
    comparison = compare(run([result("a"), result("b")]), run([result("a", "fail"), result("b")]))
    verdict = dataclasses.replace(
        decide(comparison, GateConfig()),
        notes=["first note", "second note"],
        instrument=["LLM judge: x", "calibrated: y"],
    )
    body = markdown_report(comparison, verdict)
    assert "> ⚠️ first note\n>\n> ⚠️ second note" in body
    assert "> ℹ️ LLM judge: x\n>\n> ℹ️ calibrated: y" in body
    assert "  i LLM judge: x" in text_report(comparison, verdict)
    assert json_report(comparison, verdict)["instrument"] == ["LLM judge: x", "calibrated: y"]


# --- everything the pull request wrote is untrusted ------------------------------------

#: fragments that would speak for casegate if they got through as written
ATTACKS = [
    "\n# forged heading",
    "\n### ✅ casegate: **ship** — s",
    "\n> quoted",
    "\n- listed",
    "\n1. numbered",
    "\n| a | b |",
    "\r\n## crlf",
    "\u2028## separator",
    "<!-- casegate:sticky-comment suite=s -->",
    "-->",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "</pre>",
    "</details>",
    "</code>",
    "@alice",
    "@org/team",
    "#123",
    "GH-7",
    "`",
    "``x``",
    "|",
    "\\",
    "\\|",
    "*bold*",
    "$\\Huge{ship}$",
    "&lt;b&gt;",
    "&#64;bob",
    "[x](https://example.com)",
    "\u202e",
]
untrusted = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(ATTACKS)), max_size=5).map(
    "".join
)
OWN_TAGS = re.compile(
    r"<!-- casegate:sticky-comment suite=[A-Za-z0-9._-]* -->|</?(?:code|pre|details|summary)>"
)
BLOCK_START = re.compile(r" {0,3}(#{1,6}(?= |$)|>|[-+*](?= |$)|\d{1,9}[.)](?= |$)|\||<|$)")


def hostile_comparison(words: list[str]) -> tuple[Comparison, Verdict]:
    """A comparison in which every string a pull request controls is one of `words`."""
    (suite, system_a, system_b, model, case_a, case_b, reason, output, check, note, fact,
     message, subject, change, where, base, accepted_by, how) = words  # fmt: skip
    regressed = result("a" + case_a, "fail", critical=True, reason=reason, text=output)
    regressed.checks[0].check = check
    regressed.tags, regressed.note = [note], note
    fixed = result("b" + case_b, "pass")
    was = result("a" + case_a, "pass", critical=True, text="was: " + reason + output)
    baseline = run(
        [was, result("b" + case_b, "fail", reason=reason)],
        suite=suite,
        system=system_a,
        model="m",
    )
    candidate = run(
        [regressed, fixed, result("c" + case_a, "error", reason=reason)],
        suite=suite,
        system=system_b,
        model=model,
    )
    review = RulerReview(
        base=base,
        changes=[
            RulerChange(subject, change, where, loosens=True),
            RulerChange(change, subject, "", loosens=False),
        ],
        accepted_by=accepted_by,
        notes=[note],
        how_to_accept=how,
    )
    comparison = compare(baseline, candidate, ruler=review)
    verdict = dataclasses.replace(
        decide(comparison, GateConfig()),
        notes=[note],
        instrument=[fact],
    )
    verdict.reasons.append(Reason("custom", message, ["a" + case_a, "b" + case_b]))
    return comparison, verdict


def outside_pre(body: str) -> list[str]:
    """The lines markdown is read in: all but the insides of <pre> blocks and code fences.

    A fence ends only on a line of at least as many backticks as opened it (up to three
    spaces before them); every fence casegate opens must end on its own closing line.
    """
    lines, inside, fence = [], False, ""
    for line in body.split("\n"):
        if fence:
            if line == fence:
                fence = ""
            else:  # nothing inside may end the fence early
                assert not re.fullmatch(rf" {{0,3}}`{{{len(fence)},}}\s*", line), line
            continue
        if not inside:
            lines.append(line)
        if not inside and (opening := re.fullmatch(r"(`{3,})diff", line)):
            fence = opening.group(1)
        elif line.count("<pre>") > line.count("</pre>"):
            inside = True
        elif inside and "</pre>" in line:
            inside = False
    assert not fence, "a code fence was left open"
    return lines


def skeleton(body: str) -> list[str]:
    """What starts each line: a heading, a quote, a list item, a table row, HTML, text."""
    return [
        match.group(1) if (match := BLOCK_START.match(line)) else "text"
        for line in outside_pre(body)
    ]


@settings(max_examples=150, deadline=None)
@given(st.lists(untrusted, min_size=18, max_size=18))
def test_nothing_a_pull_request_writes_speaks_for_casegate(words: list[str]) -> None:
    comparison, verdict = hostile_comparison(words)
    marker = marker_for(comparison.suite)
    body = markdown_report(comparison, verdict, marker=marker, extra_notes=[words[9]])
    benign = markdown_report(
        *hostile_comparison([f"w{i}" for i in range(18)]), marker=marker, extra_notes=["w9"]
    )
    # One marker, first; no second one, nor any other HTML comment.
    assert body.startswith(marker + "\n") and body.count("<!--") == 1
    # Every "<" left is casegate's own tag (or text inside a code fence, which shows it).
    assert "<" not in OWN_TAGS.sub("", "\n".join(outside_pre(body)))
    assert body.count("```diff") == 1  # the regression's output change, as a diff
    # Nobody is pinged, no issue is linked.
    assert not re.search(r"@[A-Za-z0-9]", body)
    assert not re.search(r"#\d", body)
    # The same blocks, line for line, as with harmless words: nothing started a line.
    assert skeleton(body) == skeleton(benign)
    headings = [line for line in outside_pre(body) if line.startswith("#")]
    assert headings[0].startswith("### ❌ casegate: **block** — ")
    assert headings[1] == "#### Ruler changes"
    borders = None
    for line in outside_pre(body):
        if line.startswith("|"):  # every row as many column borders as its table's header
            count = len(re.findall(r"(?<!\\)\|", line))
            borders = borders or count
            assert count == borders, line
        else:
            borders = None
        # (raw HTML, <details> or <pre>, and a fence's opening line: no code spans there)
        if not line.startswith("<") and not re.fullmatch(r"`{3,}diff", line):
            assert len(re.findall(r"(?<!\\)`", line)) % 2 == 0, line


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_code_is_safe_for_any_string(text: str) -> None:
    shown = code(text)
    assert "\n" not in shown and "\r" not in shown
    if shown.startswith("<code>"):
        inner = shown.removeprefix("<code>").removesuffix("</code>")
        assert inner == cell(text)
    else:
        assert shown == f"`{text}`"
        assert not re.search(r"[`|<@#\\]", text)


def test_code_shows_identifiers_as_written_and_escapes_the_rest() -> None:
    assert code("refund-window_2") == "`refund-window_2`"
    assert code("gpt-4.1-mini-2025-04-14") == "`gpt-4.1-mini-2025-04-14`"
    assert code("a`b") == "<code>a\\`b</code>"
    assert code("x|y\n# z") == "<code>x\\|y # z</code>"
    assert code("<b>@bob") == f"<code>&lt;b&gt;@{ZWSP}bob</code>"
    assert code("x" * 300).endswith("…</code>")


def test_cell_neutralises_references_math_and_reordering() -> None:
    assert cell("see GH-12 and #3") == f"see GH{ZWSP}-12 and #{ZWSP}3"
    assert cell("$x$") == "\\$x\\$"
    assert cell("evil\u202eoff") == "eviloff"


def ruled(review: RulerReview) -> tuple[Comparison, Verdict]:
    comparison = compare(
        run([result("a", "pass", critical=True), result("b")]),
        run([result("a", "fail", critical=True), result("b")]),
    )
    comparison = dataclasses.replace(comparison, ruler=review)
    return comparison, decide(comparison, GateConfig())


LOOSER = RulerChange(
    "gate rule", "block_on_critical_regression true → false", "casegate.yml:9", True
)
TIGHTER = RulerChange("case a", "min_pass_rate 0.8 → 0.9", "cases/a.yaml:3", False)


def test_the_ruler_section_comes_first_after_the_headline() -> None:
    review = RulerReview(
        base="abc1234",
        changes=[TIGHTER, LOOSER],
        notes=["not a merge commit: used base.sha"],
        how_to_accept="add the label x",
    )
    comparison, verdict = ruled(review)
    body = markdown_report(comparison, verdict)
    lines = body.splitlines()
    assert lines[0].startswith("### ❌ casegate: **block**")
    assert lines[2].startswith("**2/2 → 1/2 passed")
    assert lines[4] == "#### Ruler changes"
    assert lines[6] == (
        "The gate this pull request is judged by, read from the base `abc1234`: "
        "1 change loosens it, 1 change tightens it."
    )
    # Loosening first, each with where it is.
    assert lines[8:10] == [
        "- 🔓 **loosens** · gate rule: block\\_on\\_critical\\_regression true → false "
        "(`casegate.yml:9`)",
        "- 🔒 tightens · case a: min\\_pass\\_rate 0.8 → 0.9 (`cases/a.yaml:3`)",
    ]
    assert lines[11] == (
        "❌ **The loosening changes block this pull request until they are accepted on "
        "purpose** (add the label x)."
    )
    assert lines[13] == "> ℹ️ not a merge commit: used base.sha"
    assert body.index("#### Ruler changes") < body.index("**Why it blocks**")


def test_an_accepted_ruler_change_says_by_what() -> None:
    review = RulerReview(
        base="abc1234",
        changes=[LOOSER],
        accepted=True,
        accepted_by="label `casegate:accept-ruler-change` (added by @maintainer)",
    )
    comparison, verdict = ruled(review)
    body = markdown_report(comparison, verdict)
    assert (
        "✅ These changes were **accepted on purpose** by label \\`casegate:accept-ruler-change\\` "
        f"(added by @{ZWSP}maintainer): they do not block." in body
    )
    assert "block this pull request until" not in body
    text = text_report(comparison, verdict)
    assert text.splitlines()[2] == (
        "ruler changes against the base abc1234: 1 change loosens it — accepted on purpose by "
        "label `casegate:accept-ruler-change` (added by @maintainer)"
    )


def test_the_ruler_in_the_text_and_json_reports() -> None:
    review = RulerReview(base="abc1234", changes=[TIGHTER, LOOSER], notes=["n\nforged"])
    comparison, verdict = ruled(review)
    lines = text_report(comparison, verdict).splitlines()
    assert lines[2:6] == [
        "ruler changes against the base abc1234: 1 change loosens it, 1 change tightens it — "
        "the loosening changes block until they are accepted on purpose",
        "  ✗ loosens: gate rule: block_on_critical_regression true → false (casegate.yml:9)",
        "  + tightens: case a: min_pass_rate 0.8 → 0.9 (cases/a.yaml:3)",
        "  i n forged",
    ]
    data = json_report(comparison, verdict)
    assert data["ruler"] == review.to_dict()
    assert data["ruler"]["blocks"] is True
    json.dumps(data)


def test_without_a_ruler_nothing_changes() -> None:
    comparison, verdict, body = reports([result("a")], [result("a", "fail")])
    assert comparison.ruler is None
    assert "Ruler" not in body and "ruler changes" not in text_report(comparison, verdict)
    assert json_report(comparison, verdict)["ruler"] is None


def test_the_ruler_section_is_never_dropped_only_shortened() -> None:
    changes = [
        RulerChange(f"case c{i:04d}", "critical true → false", f"cases/a.yaml:{i}", i % 3 == 0)
        for i in range(3_000)
    ]
    huge = "x" * 100_000
    comparison = compare(
        run([result(f"c{i:03d}", "pass") for i in range(300)]),
        run([result(f"c{i:03d}", "fail", text=huge, reason=huge) for i in range(300)]),
    )
    comparison = dataclasses.replace(comparison, ruler=RulerReview(base="abc1234", changes=changes))
    verdict = decide(comparison, GateConfig())
    for limit in (60_000, 20_000):
        body = markdown_report(comparison, verdict, limit=limit)
        assert len(body) <= limit
        section = body[body.index("#### Ruler changes") :]
        shown = section.count("\n- 🔓") + section.count("\n- 🔒")
        assert 10 < shown < 1_000
        # Loosening changes first: with 1,000 of them, every one shown loosens.
        assert section.count("\n- 🔓") == shown
        assert f"- … and {3_000 - shown} more, {1_000 - shown} of them loosening" in section


def test_a_head_too_long_is_cut_between_lines_after_the_ruler() -> None:
    comparison, verdict = ruled(RulerReview(base="abc1234", changes=[LOOSER]))
    notes = [f"note {i}: " + "y" * 390 for i in range(200)]
    body = markdown_report(comparison, verdict, extra_notes=notes, limit=20_000)
    assert len(body) <= 20_000
    assert body.endswith("\n\n_Truncated to fit GitHub's comment limit._\n")
    assert "#### Ruler changes" in body and "🔓 **loosens** · gate rule" in body
    kept = body.removesuffix("\n_Truncated to fit GitHub's comment limit._\n")
    # Whole lines only: the last note kept is whole.
    last = [line for line in kept.splitlines() if line != ">"][-1]
    assert re.fullmatch(r"> ⚠️ note \d+: y{390}", last)


def test_a_line_break_in_a_name_or_reason_forges_no_line_of_the_text_report() -> None:
    comparison, verdict, _ = reports(
        [result("a")], [result("a", "fail", reason="x\nSHIP: s — all good")]
    )
    text = text_report(comparison, verdict)
    assert not [line for line in text.splitlines() if line.startswith("SHIP")]
    assert "  a: x SHIP: s — all good" in text


# --- the output's change, as a diff ----------------------------------------------------

BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
hostile_text = st.lists(
    st.one_of(
        st.text(max_size=12),
        st.sampled_from([*ATTACKS, "```", "````````", "\n```\n", "\n   ~~~\n", '"k": 1']),
    ),
    max_size=8,
).map("".join)
hostile_outputs = st.one_of(
    hostile_text,
    st.dictionaries(hostile_text, hostile_text, max_size=3).map(json.dumps),
)


@settings(max_examples=300, deadline=None)
@given(
    hostile_outputs,
    hostile_outputs,
    st.integers(min_value=200, max_value=3_000),
    st.booleans(),  # the pieces, or both sides whole with the words marked
)
def test_a_diff_block_cannot_end_early_ping_or_reorder(
    old: str, new: str, limit: int, short: bool
) -> None:
    diff = diff_texts(old, new)
    if not diff:
        return
    fenced, cut = diff_block(diff.sides() if short else diff.lines(), limit)
    lines = fenced.split("\n")
    fence = lines[0].removesuffix("diff")
    assert re.fullmatch("`{3,}", fence) and lines[-1] == fence
    inside = lines[1:-1]
    for line in inside:
        assert not re.fullmatch(rf" {{0,3}}`{{{len(fence)},}}\s*", line), line
        assert re.match(r"[-+ @]", line) or line in ("", "-", "+"), line
    body = "\n".join(inside)
    for line in inside:  # no other line break (CR, U+2028 …) is left inside a line
        assert line.splitlines() in ([], [line]), line
    assert not re.search(r"@[A-Za-z0-9]|#\d|(?<![A-Za-z0-9])GH-\d", body, re.IGNORECASE)
    assert not BIDI.search(body) and "<!--" not in body
    assert len(body) <= limit and cut >= 0


def test_the_details_show_the_change_as_a_diff() -> None:
    before = '{"order_id": 12, "status": "shipped"}'
    after = '{"status": "shipped", "order_id": "12"}'
    _, _, body = reports(
        [result("x", "pass", critical=True, text=before)],
        [result("x", "fail", critical=True, text=after)],
    )
    details = body[body.index("<details>") :]
    assert "Baseline output" not in details
    assert (
        "Output, baseline → candidate (by line, JSON pretty-printed):\n\n"
        '```diff\n  {\n-   "order_id": 12,\n+   "order_id": "12",\n    "status": "shipped"\n  }\n```'
    ) in details


def test_a_short_answers_change_is_its_two_versions_with_the_words_marked() -> None:
    """Not a line for each changed piece: one sentence stays one line a side."""
    _, _, body = reports(
        [result("x", "pass", text="Your refund arrives in 5 business days. Sorry!")],
        [result("x", "fail", text="Your refund will arrive in 3 business days.")],
    )
    details = body[body.index("<details>") :]
    assert (
        "Output, baseline → candidate (by word: [-removed-] {+added+}):\n\n```diff\n"
        "- Your refund [-arrives-] in [-5-] business days. [-Sorry!-]\n"
        "+ Your refund {+will arrive+} in {+3+} business days.\n```"
    ) in details


def test_a_long_diff_is_cut_and_says_so() -> None:
    before = " ".join(f"word{i}" for i in range(3_000))
    after = " ".join(f"word{i}" if i % 7 else f"WORD{i}" for i in range(3_000))
    _, _, body = reports([result("x", text=before)], [result("x", "fail", text=after)])
    fenced = re.search(r"```diff\n(.*?)\n```", body, re.S)
    assert fenced is not None and len(fenced.group(1)) <= 2_400
    assert re.search(
        r"_The diff is cut short here \(\d+ line\(s\) not shown in full\): "
        r"`casegate show x` prints it whole, with both outputs\._",
        body,
    )


def test_long_lines_are_wrapped_keeping_their_marker_and_indent() -> None:
    sentence = "Thank you for your patience while we look into this for you. " * 6
    fenced, cut = diff_block(diff_texts("Hello.", "Hello. " + sentence).lines())
    inside = fenced.split("\n")[1:-1]
    assert cut == 0 and len(inside) > 4
    assert inside[0] == "  Hello."
    assert all(line.startswith("+ ") and len(line) <= 100 for line in inside[1:])
    assert " ".join(line[2:] for line in inside[1:]) == sentence.strip()
    value = {"note": "x " * 80}
    fenced, _ = diff_block(diff_texts("{}", json.dumps(value)).lines())
    assert fenced.split("\n")[3].startswith('+   "note": "x x')
    assert fenced.split("\n")[4].startswith("+   x x")


def test_unchanged_or_missing_outputs_are_shown_as_they_are() -> None:
    _, _, same = reports(
        [result("x", text='{"a": 1, "b": 2}')], [result("x", "fail", text='{"b": 2, "a": 1}')]
    )
    # The same document once its keys are sorted: no diff to show, the output as it is.
    assert 'Output, the same as the baseline\'s:\n<pre>{"b": 2, "a": 1}</pre>' in same
    _, _, errored = reports([result("x", text="fine")], [result("x", "error", reason="down")])
    assert "Baseline output:\n<pre>fine</pre>" in errored
    assert "Candidate output:\n<pre>(no output)</pre>" in errored


def _calling(case_id: str, status: str, order_id: str) -> CaseResult:
    case = result(case_id, status, text="Let me look that order up.")
    call = {"name": "lookup_order", "arguments": {"order_id": order_id}}
    sample = dataclasses.replace(case.outputs[0], tool_calls=[call])
    return dataclasses.replace(case, outputs=[sample])


def test_a_regression_in_a_tool_calls_arguments_shows_the_call_that_changed() -> None:
    """Issue #25 trap 7: the text was the same, so the details said so and showed nothing
    of the call whose argument broke the case."""
    base = run([_calling("order", "pass", "A1234")])
    cand = run([_calling("order", "fail", "1234")])
    comparison = compare(base, cand, GateConfig())
    markdown = markdown_report(comparison, decide(comparison, GateConfig()))
    details = markdown[markdown.index("<details>") :]
    assert "Output, the same as the baseline's" in details
    assert "Tool calls, baseline → candidate (by line):" in details
    assert re.search(r'^-\s+"order_id": "A1234"', details, re.M)
    assert re.search(r'^\+\s+"order_id": "1234"', details, re.M)


def test_unchanged_tool_calls_add_nothing() -> None:
    base = run([_calling("order", "pass", "A1234")])
    cand = run([_calling("order", "fail", "A1234")])
    comparison = compare(base, cand, GateConfig())
    assert "Tool calls" not in markdown_report(comparison, decide(comparison, GateConfig()))
