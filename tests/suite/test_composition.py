"""What a suite is made of (gate.suite.composition), on cases built by hand."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gate.suite.cases import Case
from gate.suite.composition import PLACEHOLDER_NOTE, composition

TODAY = dt.date(2026, 12, 3)


def make(case_id: str, **fields: Any) -> Case:
    return Case.model_validate({"id": case_id, "input": {"q": case_id}, "expect": {}, **fields})


def test_counts_tags_and_clusters_and_the_critical_share() -> None:
    cases = [
        make("a", tags=["shipping", "policy"], critical=True, cluster="ship"),
        make("b", tags=["shipping"], cluster="ship"),
        make("c", tags=["critical", "refunds"]),  # the tag `critical` makes it critical
        make("d", tags=["tone"]),
        make("e"),
    ]
    found = composition(cases, today=TODAY)
    assert found.cases == 5
    assert found.critical == 2
    assert found.critical_share == 0.4
    # `critical` is the criticality marker, counted there, not as a tag.
    assert found.by_tag == (("policy", 1), ("refunds", 1), ("shipping", 2), ("tone", 1))
    assert found.untagged == 1
    assert found.by_cluster == (("ship", 2),)
    assert found.unclustered == 3
    assert found.tags_without_critical == ("tone",)


def test_a_tag_guarded_by_one_critical_case_is_not_listed_as_unguarded() -> None:
    cases = [make("a", tags=["x"]), make("b", tags=["x"], critical=True), make("c", tags=["y"])]
    assert composition(cases, today=TODAY).tags_without_critical == ("y",)


def test_the_cluster_rule_given_by_the_caller_is_used() -> None:
    cases = [make("refund-01"), make("refund-02"), make("lone")]
    found = composition(cases, today=TODAY, cluster=lambda case: case.id.split("-")[0])
    assert found.by_cluster == (("lone", 1), ("refund", 2))
    assert found.unclustered == 0


def test_age_counts_undated_cases_and_reads_iso_strings() -> None:
    cases = [
        make("old", added=dt.date(2025, 1, 10)),
        make("mid", added="2026-06-01"),  # a JSONL case gives a string
        make("new", added=dt.date(2026, 11, 20)),
        make("none"),
        make("vague", added="last spring"),  # not a date: counted with the undated
    ]
    found = composition(cases, today=TODAY)
    assert (found.dated, found.undated) == (3, 2)
    assert found.oldest == dt.date(2025, 1, 10)
    assert found.median == dt.date(2026, 6, 1)
    assert found.newest == dt.date(2026, 11, 20)
    assert found.to_dict()["age"] == {
        "dated": 3,
        "undated": 2,
        "oldest": "2025-01-10",
        "median": "2026-06-01",
        "newest": "2026-11-20",
    }


def test_a_suite_without_a_date_has_no_oldest_nor_newest() -> None:
    found = composition([make("a"), make("b")], today=TODAY)
    assert (found.dated, found.undated, found.oldest, found.median, found.newest) == (
        0,
        2,
        None,
        None,
        None,
    )
    assert found.recent == ()


def test_recent_additions_are_the_last_30_days_newest_first() -> None:
    cases = [
        make("today", added=TODAY),
        make("edge", added=TODAY - dt.timedelta(days=29)),  # the 30th day, counted
        make("outside", added=TODAY - dt.timedelta(days=30)),
        make("also-today", added=TODAY),
        make("future", added=TODAY + dt.timedelta(days=1)),  # not added yet: not recent
    ]
    found = composition(cases, today=TODAY)
    assert found.recent == ("also-today", "today", "edge")
    assert composition(cases, today=TODAY, recent_days=1).recent == ("also-today", "today")


def test_provenance_or_a_real_note_explains_a_case_and_the_placeholder_does_not() -> None:
    cases = [
        make("sourced", provenance="https://tickets.example/1"),
        make("noted", note="INC-2307: promised Friday delivery"),
        make("placeholder", note=PLACEHOLDER_NOTE),
        make("padded", note=f"  {PLACEHOLDER_NOTE}\n"),
        make("blank", note="   ", provenance=""),
        make("silent"),
        make("both", note=PLACEHOLDER_NOTE, provenance="spec §4"),  # the provenance says why
    ]
    found = composition(cases, today=TODAY)
    assert found.explained == 3
    assert found.placeholder_notes == 3
    assert found.to_dict()["provenance"] == {
        "explained": 3,
        "unexplained": 4,
        "share": round(3 / 7, 4),
        "placeholder_notes": 3,
    }


def test_an_empty_suite_has_zero_shares_not_a_division_error() -> None:
    found = composition([], today=TODAY)
    assert (found.cases, found.critical_share, found.explained_share) == (0, 0.0, 0.0)
    assert found.by_tag == () and found.tags_without_critical == ()


def test_the_json_keys_are_the_documented_ones() -> None:
    data = composition([make("a", tags=["t"], critical=True)], today=TODAY).to_dict()
    assert list(data) == [
        "schema",
        "as_of",
        "cases",
        "critical",
        "critical_share",
        "tags",
        "untagged",
        "clusters",
        "unclustered",
        "tags_without_critical",
        "age",
        "provenance",
        "recent",
    ]
    assert data["schema"] == "casegate.suite/1"
    assert data["as_of"] == "2026-12-03"
    assert data["tags"] == {"t": 1} and data["tags_without_critical"] == []
    assert data["recent"] == {"days": 30, "count": 0, "ids": []}


_TAGS = st.lists(st.sampled_from(["a", "b", "c", "critical"]), max_size=3)
_DATES = st.one_of(st.none(), st.dates(dt.date(2020, 1, 1), dt.date(2027, 1, 1)))
_NOTES = st.one_of(st.none(), st.just(PLACEHOLDER_NOTE), st.just("why"), st.just(" "))


@given(
    st.lists(
        st.tuples(_TAGS, st.booleans(), _DATES, _NOTES, st.sampled_from([None, "", "src"])),
        max_size=12,
    )
)
@settings(max_examples=60, deadline=None)
def test_the_figures_agree_with_each_other(drawn: list[tuple[Any, ...]]) -> None:
    cases = [
        make(f"c{i}", tags=tags, critical=critical, added=added, note=note, provenance=source)
        for i, (tags, critical, added, note, source) in enumerate(drawn)
    ]
    found = composition(cases, today=TODAY)
    assert found.dated + found.undated == found.cases == len(cases)
    assert 0 <= found.explained <= found.cases and 0 <= found.critical <= found.cases
    assert found.untagged + max((n for _, n in found.by_tag), default=0) <= found.cases
    assert set(found.tags_without_critical) <= {tag for tag, _ in found.by_tag}
    assert "critical" not in dict(found.by_tag)
    assert len(found.recent) <= found.dated
    if found.dated:
        assert found.oldest is not None and found.newest is not None
        assert found.oldest <= (found.median or found.oldest) <= found.newest
    critical_tags = {t for c in cases if c.is_critical for t in c.tags if t != "critical"}
    assert set(found.tags_without_critical).isdisjoint(critical_tags)
