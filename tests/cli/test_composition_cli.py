"""`casegate suite` and `casegate list --stats`, end to end on a temporary project."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from gate.cli import main
from gate.suite.composition import PLACEHOLDER_NOTE
from tests.conftest import Project, case

TODAY = dt.datetime.now(dt.UTC).date()


@pytest.fixture
def suite(project: Project) -> Project:
    project.write_cases(
        [
            case("ship-1", "a", contains="a", fields_={"tags": ["shipping"], "critical": True,
                 "provenance": "INC-1", "added": TODAY.isoformat()}),
            case("ship-2", "b", contains="b", fields_={"tags": ["shipping", "tone"],
                 "note": PLACEHOLDER_NOTE, "added": "2024-02-01"}),
            case("refund", "c", contains="c", fields_={"tags": ["refunds"], "cluster": "r"}),
        ],
        name="cases.jsonl",
    )  # fmt: skip
    return project


def _out(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_suite_prints_the_composition_as_text(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _out(capsys, "suite")
    assert out.startswith("3 case(s), 1 critical (33%)\n")
    assert "tags without a critical case (2): refunds, tone" in out
    assert "clusters (1, 2 case(s) in none):\n  r: 1" in out
    assert f"oldest 2024-02-01, median 2024-02-01, newest {TODAY}; 1 of 3" in out
    assert "1 of 3 case(s) (33%) say why" in out and "1 note(s) still say the placeholder" in out
    assert f"added in the 30 days to {TODAY} (1): ship-1" in out


def test_suite_json_has_the_documented_keys(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(_out(capsys, "suite", "--format", "json", "--days", "10000"))
    assert data["schema"] == "casegate.suite/1"
    assert (data["cases"], data["critical"], data["critical_share"]) == (3, 1, 0.3333)
    assert data["tags"] == {"refunds": 1, "shipping": 2, "tone": 1}
    assert data["clusters"] == {"r": 1}
    assert data["recent"] == {"days": 10000, "count": 2, "ids": ["ship-1", "ship-2"]}
    assert data["provenance"]["explained"] == 1
    assert data["holdout"] is None


def test_list_stats_is_the_same_as_suite(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _out(capsys, "list", "--stats") == _out(capsys, "suite")
    assert _out(capsys, "list", "--stats", "--json") == _out(capsys, "suite", "--format", "json")
    # A selection narrows both alike.
    narrowed = _out(capsys, "suite", "--tag", "shipping")
    assert narrowed.startswith("2 case(s), 1 critical (50%)")
    assert _out(capsys, "list", "--stats", "--tag", "shipping") == narrowed


def test_clusters_follow_the_suites_rule(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    suite.write_config(clusters={"by": "tag"})
    data = json.loads(_out(capsys, "suite", "--format", "json"))
    # A declared cluster wins; the others take their first tag.
    assert data["clusters"] == {"r": 1, "shipping": 2}


def test_a_bad_days_value_is_a_usage_error(suite: Project) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["suite", "--days", "0"])
    assert exited.value.code == 2


def test_the_default_window_is_the_one_the_help_names(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    from gate.suite.composition import RECENT_DAYS

    assert RECENT_DAYS == 30  # `--days`'s help says 30
    assert json.loads(_out(capsys, "suite", "--format", "json"))["recent"]["days"] == 30


def test_checks_report_ends_with_the_figures_of_what_it_judged(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    assert main(["check", "--mode", "live", "--quiet", "--report", "r.md"]) == 0
    last = (suite.root / "r.md").read_text().rstrip("\n").splitlines()[-1]
    assert last == (
        "Suite: 3 case(s) · 1 critical (33%) · 3 tag(s), 2 without a critical case · "
        "33% with provenance · 1 added in 30 days · 1 undated"
    )
    # A slice is gated against a baseline of the same slice.
    assert main(["baseline", "--mode", "live", "--quiet", "--tag", "shipping"]) == 0
    assert (
        main(["check", "--mode", "live", "--quiet", "--report", "s.md", "--tag", "shipping"]) == 0
    )
    last = (suite.root / "s.md").read_text().rstrip("\n").splitlines()[-1]
    assert last.startswith("Selected cases: 2 case(s) · 1 critical (50%)")
