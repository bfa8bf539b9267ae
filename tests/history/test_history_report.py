"""The pull request's History section: when a regressed case last failed, the trend as
Mermaid charts, and nothing a crafted name, id or commit can break out of."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from gate.deciding.compare import Comparison, compare
from gate.deciding.rules import decide
from gate.history.commands import add_run
from gate.history.report import HistoryNotes, mermaid_chart, mermaid_label, notes_for
from gate.reporting.report import json_report, markdown_report, text_report
from gate.suite.config import GateConfig
from tests.factories import result, run
from tests.history.test_history_store import made_run


def _pair(case_id: str = "refund-window") -> tuple[Comparison, object]:
    baseline = run([result(case_id, "pass", cost=0.01), result("other", "pass", cost=0.01)])
    candidate = run(
        [result(case_id, "fail", critical=True, cost=0.02), result("other", "pass", cost=0.01)]
    )
    candidate.created_at = "2026-03-01T00:00:00+00:00"
    return compare(baseline, candidate, GateConfig()), candidate


def _history(tmp_path: Path, runs: list[tuple[dict[str, str], str, str, str]]) -> Path:
    path = tmp_path / "history" / "s.jsonl"
    for verdicts, day, system, commit in runs:
        add_run(
            made_run(verdicts, created_at=f"2026-01-{day}T09:00:00+00:00", system=system),
            Path("r"),
            path,
            None,
            commit,
        )
    return path


def test_a_regressed_case_says_when_it_last_failed_and_on_which_system(tmp_path: Path) -> None:
    path = _history(
        tmp_path,
        [
            ({"refund-window": "pass", "other": "pass"}, "01", "support-v1", "a" * 40),
            ({"refund-window": "fail", "other": "pass"}, "05", "support-v0", "b" * 40),
            ({"refund-window": "pass", "other": "fail"}, "09", "support-v1", "c" * 40),
        ],
    )
    comparison, candidate = _pair()
    history = notes_for(
        comparison,
        candidate,
        path,
        "history/s.jsonl on the base commit 1234567",  # type: ignore[arg-type]
        candidate_label="this change",
    )
    comparison = dataclasses.replace(comparison, history=history)
    markdown = markdown_report(comparison, decide(comparison, GateConfig()))
    section = markdown[markdown.index("#### History") :]
    assert markdown.index("#### Regressions") < markdown.index("#### History")
    assert "From history/s.jsonl on the base commit 1234567: 3 recorded run(s)" in section
    assert (
        "| `refund-window` | 2026-01-05 (fail) | `support-v0` | `bbbbbbbbbbbb` | 1 of 3 run(s) |"
        in re.sub(r" +\|", " |", re.sub(r"\| +", "| ", section))
    )
    assert "```mermaid\nxychart-beta\n" in section
    assert (
        '    x-axis ["01-01 aaaaaaa", "01-05 bbbbbbb", "01-09 ccccccc", "this change"]' in section
    )
    assert "    line [100, 50, 50, 50]" in section
    assert "    bar [0.002, 0.002, 0.002, 0.03]" in section
    text = text_report(comparison, decide(comparison, GateConfig()))
    assert (
        "  refund-window: last failed before 2026-01-05 (fail) on support-v0, commit "
        "bbbbbbbbbbbb; failed in 1 of 3 recorded run(s)" in text
    )
    found = json_report(comparison, decide(comparison, GateConfig()))["history"]
    assert found["regressions"]["refund-window"]["last"]["system"] == "support-v0"
    assert [point["commit"] for point in found["trend"]] == ["a" * 40, "b" * 40, "c" * 40]


def test_a_case_that_never_failed_or_is_new_says_so(tmp_path: Path) -> None:
    path = _history(tmp_path, [({"refund-window": "pass"}, "01", "v1", "abc")])
    comparison, candidate = _pair()
    notes = notes_for(comparison, candidate, path, "h", candidate_label="c")  # type: ignore[arg-type]
    assert notes is not None
    assert "| never " in notes.markdown() and "0 of 1 run(s)" in notes.markdown()
    comparison, candidate = _pair("brand-new")
    notes = notes_for(comparison, candidate, path, "h", candidate_label="c")  # type: ignore[arg-type]
    assert notes is not None and "not in the history yet" in notes.markdown()


def test_no_export_no_section_and_a_broken_one_is_named_not_fatal(tmp_path: Path) -> None:
    comparison, candidate = _pair()
    missing = tmp_path / "none.jsonl"
    assert notes_for(comparison, candidate, missing, "h", candidate_label="c") is None  # type: ignore[arg-type]
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{oops\n")
    notes = notes_for(comparison, candidate, broken, "h", candidate_label="c")  # type: ignore[arg-type]
    assert notes is not None
    assert notes.markdown().startswith("#### History\n\nThe results history could not be read: ")
    assert "broken.jsonl:1: not a JSON line" in notes.markdown()


def test_the_candidate_already_added_is_not_its_own_history(tmp_path: Path) -> None:
    comparison, candidate = _pair()
    path = tmp_path / "h.jsonl"
    add_run(candidate, Path("r"), path, None, "abc")  # type: ignore[arg-type]
    notes = notes_for(comparison, candidate, path, "h", candidate_label="c")  # type: ignore[arg-type]
    assert notes is not None and notes.runs == 0 and notes.trend == []
    assert "No run of this suite is recorded in h yet." in notes.markdown()


def test_the_history_is_dropped_before_the_regressions_when_the_comment_is_too_long(
    tmp_path: Path,
) -> None:
    path = _history(tmp_path, [({"refund-window": "fail"}, "01", "v1", "abc")])
    comparison, candidate = _pair()
    verdict = decide(comparison, GateConfig())
    full = markdown_report(comparison, verdict)
    notes = notes_for(comparison, candidate, path, "h", candidate_label="c")  # type: ignore[arg-type]
    assert notes is not None
    comparison = dataclasses.replace(
        comparison, history=HistoryNotes(**{**_fields(notes), "source": "x" * 3000})
    )
    fitted = markdown_report(comparison, verdict, limit=len(full) + 500)
    assert "#### History" not in fitted
    assert "#### Regressions (1)" in fitted and "casegate: **block**" in fitted
    assert "_Truncated: " in fitted


def _fields(notes: HistoryNotes) -> dict[str, object]:
    return {name: getattr(notes, name) for name in HistoryNotes.__dataclass_fields__}


# --- attacks --------------------------------------------------------------------------

ATTACKS = [
    "`` ` ``",
    "x\n```\n## injected",
    "a --> b",
    "click A href 'javascript:alert(1)'",
    '%%{init: {"theme": "dark"}}%%',
    "</details><img src=x onerror=alert(1)>",
    '"]\n    line [1, 2]\n    x-axis ["',
    "| a | b |\n|---|---|",
    "@octocat #1",
]

#: every line a chart may have, with labels of the safe charset only
_LABEL = r'"[A-Za-z0-9._ -]*"'
_CHART_LINE = re.compile(
    rf"```mermaid|```|xychart-beta|    title {_LABEL}|    x-axis \[{_LABEL}(, {_LABEL})*\]"
    rf"|    y-axis {_LABEL}( [0-9.]+ --> [0-9.]+)?|    (line|bar) \[[0-9.]+(, [0-9.]+)*\]"
)


def _charts_are_safe(markdown: str) -> None:
    lines = markdown.split("\n")
    inside = False
    for line in lines:
        if line == "```mermaid":
            assert not inside
            inside = True
        if inside:
            assert _CHART_LINE.fullmatch(line), line
            if line == "```":
                inside = False
    assert not inside


def _table_is_safe(markdown: str, columns: int) -> None:
    section = markdown[markdown.index("#### History") :]
    section = section[: section.index("####", 4)] if "####" in section[4:] else section
    rows = [line for line in section.split("\n") if line.startswith("|")]
    assert rows
    for row in rows:
        # Unescaped pipes only: a row keeps its columns whatever the cells say.
        assert len(re.findall(r"(?<!\\)\|", row)) == columns + 1, row
    assert "</details>" not in section and "<img" not in section
    assert "@octocat" not in section


@given(
    system=st.sampled_from(ATTACKS) | st.text(max_size=40),
    case_id=st.sampled_from(ATTACKS) | st.text(min_size=1, max_size=40),
    commit=st.sampled_from(ATTACKS) | st.text(min_size=1, max_size=40),
)
def test_crafted_names_ids_and_commits_stay_in_their_cell_and_out_of_the_chart(
    system: str, case_id: str, commit: str
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "h.jsonl"
        for day in ("01", "02"):
            add_run(
                made_run(
                    {case_id: "fail"}, created_at=f"2026-01-{day}T00:00:00+00:00", system=system
                ),
                Path("r"),
                path,
                None,
                commit,
            )
        comparison, candidate = _pair(case_id)
        history = notes_for(
            comparison, candidate, path, f"{commit} {system}", candidate_label=system
        )  # type: ignore[arg-type]
        comparison = dataclasses.replace(comparison, history=history)
        markdown = markdown_report(comparison, decide(comparison, GateConfig()))
    assert "#### History" in markdown
    _charts_are_safe(markdown)
    _table_is_safe(markdown, 5)
    assert markdown.count("```mermaid") == 2


def test_a_label_is_reduced_to_its_safe_letters() -> None:
    assert mermaid_label('%%{init: {"theme":"dark"}}%%') == '"init theme dark"'
    assert mermaid_label("a --> b\nclick") == '"a -- b click"'
    assert mermaid_label("```") == '"unnamed"'
    assert mermaid_label("x" * 100) == '"' + "x" * 24 + '"'
    chart = mermaid_chart("T", "y", ['"]\n```'], "line", [12.5], (0, 100))
    assert chart == (
        '```mermaid\nxychart-beta\n    title "T"\n    x-axis ["unnamed"]\n'
        '    y-axis "y" 0 --> 100\n    line [12.5]\n```'
    )


def test_a_report_with_history_passes_the_fork_comment_check(tmp_path: Path) -> None:
    from gate.github.api import marker_for
    from gate.github.forkcomment import report_problem

    path = tmp_path / "h.jsonl"
    for index, attack in enumerate(ATTACKS):
        add_run(
            made_run(
                {attack: "fail"},
                created_at=f"2026-01-{index + 1:02d}T00:00:00+00:00",
                system=attack,
            ),
            Path("r"),
            path,
            None,
            attack,
        )
    for attack in ATTACKS:
        comparison, candidate = _pair(attack)
        history = notes_for(comparison, candidate, path, attack, candidate_label=attack)  # type: ignore[arg-type]
        comparison = dataclasses.replace(comparison, history=history)
        markdown = markdown_report(
            comparison, decide(comparison, GateConfig()), marker=marker_for("s")
        )
        assert "#### History" in markdown and "```mermaid" in markdown
        assert report_problem(markdown, "s") is None
