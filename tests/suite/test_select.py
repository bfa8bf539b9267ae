"""Run a slice: --case and --tag, `casegate list`, and a slice is never gated as the whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate.cli import main
from gate.suite.cases import Case
from gate.suite.select import Selection
from tests.conftest import Project, case

CASES = [
    case("refund-window", "refund", contains="refund", fields_={"tags": ["returns"]}),
    case("refund-slow", "slow", contains="slow", fields_={"tags": ["returns", "slow"]}),
    case("ship-date", "date", contains="date", fields_={"tags": ["shipping"], "critical": True}),
]


def ids(args: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["list", "--json", *args]) == 0
    return [row["id"] for row in json.loads(capsys.readouterr().out)]


@pytest.fixture
def suite(project: Project) -> Project:
    project.write_cases(CASES)
    return project


def test_patterns_and_tags(suite: Project, capsys: pytest.CaptureFixture[str]) -> None:
    assert ids([], capsys) == ["refund-slow", "refund-window", "ship-date"]
    assert ids(["--case", "refund-*"], capsys) == ["refund-slow", "refund-window"]
    assert ids(["--tag", "returns", "--tag", "!slow"], capsys) == ["refund-window"]
    assert ids(["--tag", "critical"], capsys) == ["ship-date"]  # critical: true counts
    assert ids(["--case", "refund-*", "--tag", "!slow"], capsys) == ["refund-window"]
    assert ids(["--tag", "ship*"], capsys) == ["ship-date"]


def test_list_shows_where_each_case_is(suite: Project, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[2] == {
        "id": "ship-date",
        "tags": ["shipping"],
        "critical": True,
        "samples": 1,
        "source": "cases/cases.yaml:16",
    }
    assert main(["list"]) == 0
    assert "3 case(s), 1 critical" in capsys.readouterr().out


def test_a_selection_that_matches_nothing_is_exit_2(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--mode", "live", "--tag", "nope"]) == 2
    assert "--tag nope selects none of the 3 case(s)" in capsys.readouterr().err


def test_a_slice_records_its_selection_and_is_not_gated_against_the_whole(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    assert main(["run", "--mode", "live", "--tag", "returns", "--out", "slice.json"]) == 0
    stored = json.loads(Path("slice.json").read_text())
    assert stored["selection"] == {"cases": [], "tags": ["returns"]}
    assert [c["id"] for c in stored["cases"]] == ["refund-slow", "refund-window"]
    capsys.readouterr()
    assert main(["gate", "baselines/demo.json", "slice.json"]) == 2
    err = capsys.readouterr().err
    assert "the candidate ran --tag returns but the baseline the whole suite" in err
    assert main(["check", "--mode", "live", "--tag", "returns", "--quiet"]) == 2
    # A baseline of the same slice gates it.
    assert main(["run", "--mode", "live", "--tag", "returns", "--out", "base-slice.json"]) == 0
    assert main(["gate", "base-slice.json", "slice.json"]) == 0
    whole = json.loads(Path("baselines/demo.json").read_text())
    assert whole["selection"] is None


tags = st.lists(st.sampled_from(["a", "b", "slow", "critical"]), max_size=3, unique=True)


@given(case_tags=tags, wanted=tags, unwanted=tags)
def test_an_excluded_tag_is_never_selected(
    case_tags: list[str], wanted: list[str], unwanted: list[str]
) -> None:
    subject = Case.model_validate({"id": "x", "input": {}, "expect": {}, "tags": case_tags})
    selection = Selection(tags=(*wanted, *(f"!{t}" for t in unwanted)))
    chosen = selection.includes(subject)
    if set(case_tags) & set(unwanted):
        assert not chosen
    elif wanted:
        assert chosen == bool(set(case_tags) & set(wanted))
    else:
        assert chosen


def test_a_slice_says_so_in_its_summary(suite: Project, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--mode", "live", "--tag", "returns"]) == 0
    assert "· slice: --tag returns" in capsys.readouterr().out


def test_a_baseline_whose_critical_case_fails_warns(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    suite.write_cases([*CASES[:2], {**CASES[2], "expect": {"contains": "never said"}}])
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "warning: 1 critical case(s) fail in this baseline (ship-date)" in err
