"""The suite's composition in words: `casegate suite`'s text and the report's footer."""

from __future__ import annotations

import datetime as dt

from gate.deciding.compare import compare
from gate.deciding.rules import decide
from gate.reporting.composition import footer, text
from gate.reporting.report import markdown_report
from gate.suite.composition import PLACEHOLDER_NOTE, composition
from gate.suite.config import GateConfig
from tests.factories import result, run
from tests.suite.test_composition import TODAY, make

CASES = [
    make("a", tags=["shipping"], critical=True, provenance="INC-1", added=TODAY),
    make("b", tags=["shipping", "tone"], note="a complaint", added=dt.date(2026, 1, 5)),
    make("c", tags=["refunds"], note=PLACEHOLDER_NOTE),
    make("d", cluster="para"),
]


def test_the_footer_states_the_figures_in_one_line() -> None:
    line = footer(composition(CASES, today=TODAY))
    assert line == (
        "Suite: 4 case(s) · 1 critical (25%) · 3 tag(s), 2 without a critical case · "
        "50% with provenance · 1 added in 30 days · 2 undated"
    )


def test_the_footer_names_no_tag_and_no_case() -> None:
    hostile = [make("x-id", tags=["@org/team <b>"], critical=True)]
    line = footer(composition(hostile, today=TODAY))
    assert "x-id" not in line and "@org" not in line and "<b>" not in line
    assert "1 tag(s), 0 without a critical case" in line


def test_the_text_lists_tags_clusters_unguarded_tags_and_recent_ids() -> None:
    shown = text(composition(CASES, today=TODAY), holdout="holdout/s")
    assert shown.splitlines()[0] == "4 case(s), 1 critical (25%)"
    assert "  shipping: 2" in shown and "  refunds: 1" in shown
    assert "tags without a critical case (2): refunds, tone" in shown
    assert "clusters (1, 3 case(s) in none):\n  para: 1" in shown
    assert "oldest 2026-01-05, median 2026-01-05, newest 2026-12-03; 2 of 4" in shown
    assert "2 of 4 case(s) (50%) say why" in shown
    assert "1 note(s) still say the placeholder" in shown
    assert "added in the 30 days to 2026-12-03 (1): a" in shown
    assert shown.endswith("and a held-out slice in holdout/s (sealed: never counted here)")


def test_a_name_with_a_line_break_stays_on_its_line() -> None:
    shown = text(composition([make("a", tags=["one\ntwo"])], today=TODAY))
    assert "  one\\ntwo: 1" in shown  # escaped onto its line, as `show` does


def _report(**kwargs):  # type: ignore[no-untyped-def]
    comparison = compare(run([result("a", "pass")]), run([result("a", "fail")]))
    return markdown_report(comparison, decide(comparison, GateConfig()), **kwargs)


def test_the_markdown_report_ends_with_the_footer() -> None:
    found = composition(CASES, today=TODAY)
    body = _report(composition=found)
    assert body.rstrip("\n").splitlines()[-1] == footer(found)
    assert "Suite:" not in _report()  # without the cases, no footer


def test_the_footer_outlives_truncation() -> None:
    found = composition(CASES, today=TODAY)
    limit = len(_report(composition=found)) - 20
    body = _report(composition=found, limit=limit)
    assert "_Truncated:" in body  # a section was left out, the footer was not
    assert body.rstrip("\n").endswith(footer(found))
    assert len(body) <= limit


def test_a_selections_footer_says_it_is_not_the_whole_suite() -> None:
    found = composition(CASES[:2], today=TODAY)
    assert footer(found, selected=True).startswith("Selected cases: 2 case(s) · 1 critical")
    assert (
        _report(composition=found, selected=True)
        .rstrip("\n")
        .endswith(footer(found, selected=True))
    )
