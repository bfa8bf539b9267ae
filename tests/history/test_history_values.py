"""Values in the history export that no cache, chart or person can use are one HistoryError
naming file:line (exit 2 in a command, a "could not be read" note in a report), never a
traceback: an integer SQLite cannot hold, a number no float holds, a date that is not one,
half a character. Whatever a line holds, reading the history raises nothing else."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.cli import main
from gate.deciding.compare import Comparison, compare
from gate.history import export, queries, report
from gate.history.commands import add_run
from gate.history.records import MAX_INTEGER, HistoryError, records_of
from gate.history.report import notes_for
from gate.history.store import Store
from gate.results import RunResults
from gate.suite.config import GateConfig
from tests.factories import result, run
from tests.history.test_history_store import answers, made_run

GOOD = records_of(made_run({"a": "pass"}), "abc")[0].to_json()


def line(**change: Any) -> str:
    return json.dumps({**GOOD, **change})


def pair() -> tuple[Comparison, RunResults]:
    baseline = run([result("a", "pass"), result("b", "pass")])
    candidate = run([result("a", "fail", critical=True), result("b", "pass")])
    candidate.created_at = "2026-03-01T00:00:00+00:00"
    return compare(baseline, candidate, GateConfig()), candidate


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"version": 2**63}, f"version: Input should be less than or equal to {MAX_INTEGER}"),
        ({"input_tokens": 2**64}, f"input_tokens: Input should be less than or equal to {MAX_INTEGER}"),
        ({"output_tokens": -1}, "output_tokens: Input should be greater than or equal to 0"),
        ({"cost_usd": 10**400}, "cost_usd: Value error, must be a finite number"),
        ({"latency_ms": 1e308}, "latency_ms: Input should be less than or equal to 1000000000000000"),
        ({"weight": float("inf")}, "weight: Value error, must be a finite number"),
        ({"created_at": "yesterday"}, "created_at: Value error, must be an ISO 8601 date and time"),
        ({"created_at": "2026-02-30T10:00:00+00:00"}, "created_at: Value error, must be an ISO 8601"),
        ({"created_at": "2026-01-05"}, "created_at: Value error, must be an ISO 8601 date and time"),
        ({"system": "half \ud800"}, "system: Input should be a valid string, unable to parse raw data"),
        ({"sur\nprise": 1}, "sur\\nprise: Extra inputs are not permitted"),
        ({"schema": ["x" * 200]}, "expected schema 'casegate.history/1', found ['xxxx"),
    ],
)  # fmt: skip
def test_a_value_out_of_range_is_one_problem_naming_file_and_line(
    tmp_path: Path, change: dict[str, Any], problem: str
) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(line() + "\n" + line(**change) + "\n")
    with pytest.raises(HistoryError) as raised, Store.opened(path, None):
        pass
    (found,) = raised.value.problems
    assert found.startswith(f"{path}:2: {problem}"), found
    assert "\n" not in found and len(found) < 400


def test_a_command_reading_a_bad_export_exits_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(line() + "\n" + line(version=2**63, case="b") + "\n")
    db = tmp_path / "cache.sqlite"
    for command in ("trend", "flips"):
        assert main(["history", command, "--export", str(path), "--db", str(db)]) == 2
        err = capsys.readouterr().err
        assert err == (
            f"casegate: {path}:2: version: Input should be less than or equal to {MAX_INTEGER}\n"
        )


def test_the_report_says_a_bad_export_could_not_be_read_and_goes_on(tmp_path: Path) -> None:
    comparison, candidate = pair()
    path = tmp_path / "h.jsonl"
    path.write_text(line() + "\n" + line(input_tokens=2**63) + "\n")
    notes = notes_for(comparison, candidate, path, "h on the base", candidate_label="c")
    assert notes is not None
    problem = f"{path}:2: input_tokens: Input should be less than or equal to {MAX_INTEGER}"
    assert notes.problem == problem
    assert notes.markdown().startswith("#### History\n\nThe results history could not be read: ")
    assert notes.markdown().endswith(
        r"h.jsonl:2: input\_tokens: Input should be less than or equal to 9223372036854775807"
    )
    assert notes.lines() == [f"history: could not be read: {problem}"]


def test_a_results_file_the_history_cannot_hold_is_refused_when_added(tmp_path: Path) -> None:
    results = made_run({"a": "pass"})
    results.cases[0].input_tokens = 2**63
    with pytest.raises(HistoryError, match=r"input_tokens: Input should be less than or equal"):
        add_run(results, Path("r.json"), tmp_path / "h.jsonl", None, "abc")
    results = made_run({"a": "pass"})
    results.cases[0].cost_usd = 10**400  # type: ignore[assignment]
    with pytest.raises(HistoryError, match=r"cost_usd: Value error, must be a finite number"):
        add_run(results, Path("r.json"), tmp_path / "h.jsonl", None, "abc")
    assert not (tmp_path / "h.jsonl").exists()


def test_a_cache_built_before_the_values_were_checked_is_rebuilt(tmp_path: Path) -> None:
    # Casegate's cache of version 1 took `yesterday` for a date: this one rebuilds it from
    # the export, and the export's line is the problem named.
    path, db = tmp_path / "h.jsonl", tmp_path / "cache.sqlite"
    path.write_text(line() + "\n")
    with Store.opened(path, db):
        pass
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE meta SET value = '1' WHERE key = 'store_version'")
        connection.execute("UPDATE records SET created_at = 'yesterday'")
    path.write_text(line() + "\n")  # the same export, the same fingerprint
    with Store.opened(path, db) as store:
        assert [point.created_at for point in queries.trend(store, "s")] == [GOOD["created_at"]]


@pytest.mark.parametrize(
    ("column", "value"),
    [("created_at", b"\x00blob"), ("latency_ms", "slow"), ("weight", "heavy"), ("mode", b"\x01")],
)
def test_a_doctored_cache_row_is_a_clear_error(tmp_path: Path, column: str, value: Any) -> None:
    path, db = tmp_path / "h.jsonl", tmp_path / "cache.sqlite"
    path.write_text(line() + "\n")
    with Store.opened(path, db):
        pass
    with sqlite3.connect(db) as connection:
        connection.execute(f"UPDATE records SET {column} = ?", (value,))  # noqa: S608 - a test's constant
    stale = "the history cache holds a row casegate did not write"
    with pytest.raises(HistoryError, match=stale), Store.opened(path, db) as store:
        answers(store)


# --- whatever a line holds ---------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
ODD = st.sampled_from(
    [
        2**63, 2**63 - 1, -1, 10**400, 1e308, 1e15, float("inf"), float("nan"), -0.0, 0, True,
        "", "yesterday", "2026-01-05", "2026-02-30T00:00:00", "2026-01-05T10:00:00+00:00",
        "20260105T100000", "\ud800", "\x00", "pass", "fail", "error", "s", "a", "b",
    ]
)  # fmt: skip


@st.composite
def history_lines(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["record", "record", "record", "json", "bytes", "same"]))
    if kind == "bytes":
        return draw(st.binary(max_size=24))
    if kind == "json":
        return json.dumps(draw(JSON)).encode()
    record = dict(GOOD)
    if kind == "record":
        for key in draw(st.lists(st.sampled_from([*GOOD, "extra"]), max_size=3)):
            if draw(st.booleans()) and key != "extra":
                record.pop(key, None)
            else:
                record[key] = draw(ODD | JSON)
    return json.dumps(record).encode("utf-8", "surrogatepass")


def refusal(path: Path, db: Path | None) -> str | None:
    """Every question asked of the export: its one problem when it is refused, else None.
    Any exception but a HistoryError ends the test."""
    try:
        with Store.opened(path, db) as store:
            for suite in store.suites() or ["s"]:
                queries.trend(store, suite)
                queries.flips(store, suite)
                queries.last_failures(store, suite, queries.case_ids(store, suite))
            queries.choose_suite(store, None)
    except HistoryError as exc:
        (problem,) = exc.problems
        return problem
    return None


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(history_lines(), min_size=1, max_size=6), st.booleans())
def test_whatever_the_lines_hold_reading_raises_only_a_history_error(
    tmp_path: Path, lines: list[bytes], cached: bool
) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    db = tmp_path / "cache.sqlite" if cached else None
    problem = refusal(path, db)
    assert problem is None or "\n" not in problem
    comparison, candidate = pair()
    notes = notes_for(comparison, candidate, path, "h", candidate_label="c")
    assert notes is not None
    notes.markdown()
    notes.lines()
    json.dumps(notes.to_dict(), allow_nan=False)  # every number finite
    for point in notes.trend:
        assert math.isfinite(point.pass_rate)


def test_the_export_reads_back_every_odd_but_valid_value(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(
        "\n".join(
            [
                line(version=MAX_INTEGER, input_tokens=MAX_INTEGER, case="big"),
                line(created_at="2026-01-05T10:00:00", case="naive"),
                line(created_at="2026-01-05 10:00:00.5+02:00", case="spaced"),
                line(cost_usd=1e15, latency_ms=0, weight=0, case="extremes"),
                line(system="ünïcode ☃", case="text"),
            ]
        )
        + "\n"
    )
    records, _ = export.read_export(path)
    assert [record.case for record in records] == ["big", "naive", "spaced", "extremes", "text"]
    with Store.opened(path, None) as store:
        assert {point.cases for point in queries.trend(store, "s")} >= {1}


def test_an_export_the_report_cannot_reach_is_a_note_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object) -> Any:
        raise PermissionError(13, "Permission denied")

    comparison, candidate = pair()
    monkeypatch.setattr(Path, "is_file", refuse)
    notes = notes_for(comparison, candidate, tmp_path / "h.jsonl", "h", candidate_label="c")
    assert notes is not None and notes.problem == f"{tmp_path / 'h.jsonl'}: Permission denied"
    monkeypatch.undo()
    monkeypatch.setattr(report, "trusted_export", refuse)
    notes = report.trusted_notes(comparison, candidate, None, None)  # type: ignore[arg-type]
    assert notes is not None and notes.problem == "the history export: Permission denied"
