"""Reports: markdown that survives hostile output and GitHub's size limit."""

from __future__ import annotations

import dataclasses
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.compare import compare
from gate.config import GateConfig
from gate.junit import write_junit
from gate.report import ZWSP, cell, json_report, markdown_report, text_report
from gate.rules import decide
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
    assert "<script>" not in body
    assert "&lt;script&gt;" in body
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
