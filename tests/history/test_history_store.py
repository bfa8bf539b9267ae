"""The history export and its SQLite cache: whole runs only, a duplicate add is a no-op,
a malformed line is one problem naming file:line, and a cache rebuilt from the export
answers every question as the one built run by run did."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate.history import export, queries
from gate.history.commands import add_run
from gate.history.records import HistoryError, records_of
from gate.history.store import Store
from gate.results import RunResults
from tests.factories import result, run


def made_run(
    verdicts: dict[str, str],
    *,
    created_at: str = "2026-01-01T00:00:00+00:00",
    config_hash: str = "h1",
    system: str = "sys",
    cost: float | None = 0.001,
    latency: float | None = 10.0,
    versions: dict[str, int] | None = None,
) -> RunResults:
    cases = [
        result(
            case_id, status, cost=cost, latency=latency, version=(versions or {}).get(case_id, 1)
        )
        for case_id, status in verdicts.items()
    ]
    results = run(cases, system=system)
    results.created_at = created_at
    results.config_hash = config_hash
    results.mode = "replay"
    return results


def answers(store: Store) -> dict[str, Any]:
    """Every question the history answers, as plain data."""
    suite = queries.choose_suite(store, None)
    if suite is None:
        return {}
    ids = queries.case_ids(store, suite)
    return {
        "trend": [point.to_dict() for point in queries.trend(store, suite)],
        "last3": [point.to_dict() for point in queries.trend(store, suite, 3)],
        "flips": [item.to_dict() for item in queries.flips(store, suite)],
        "timelines": {i: [r.to_json() for r in queries.timeline(store, suite, i)] for i in ids},
        "failures": {k: v.to_dict() for k, v in queries.last_failures(store, suite, ids).items()},
    }


# --- adding runs -------------------------------------------------------------------------


def test_a_run_becomes_one_sorted_versioned_line_per_case(tmp_path: Path) -> None:
    path = tmp_path / "history" / "s.jsonl"
    said = add_run(made_run({"a": "pass", "b": "fail"}), Path("r.json"), path, None, "abc123")
    assert said.startswith("added 2 case(s) of the run of 2026-01-01T00:00:00+00:00")
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert list(first) == sorted(first)
    assert first["schema"] == "casegate.history/1"
    assert (first["case"], first["verdict"], first["commit"]) == ("a", "pass", "abc123")
    assert (first["suite"], first["system"], first["config_hash"]) == ("s", "sys", "h1")
    assert first["cost_usd"] == 0.001 and first["latency_ms"] == 10.0
    assert json.loads(lines[1])["verdict"] == "fail"


def test_adding_the_same_run_twice_is_a_no_op(tmp_path: Path) -> None:
    path, db = tmp_path / "h.jsonl", tmp_path / ".casegate" / "history.sqlite"
    results = made_run({"a": "pass"})
    add_run(results, Path("r.json"), path, db, "abc")
    before = path.read_bytes()
    said = add_run(results, Path("r.json"), path, db, "abc")
    assert said.startswith("already recorded: the run of 2026-01-01T00:00:00+00:00")
    assert said.endswith("nothing added")
    assert path.read_bytes() == before
    # Without the cache too: the export alone says the run is there.
    db.unlink()
    assert add_run(results, Path("r.json"), path, db, "abc").startswith("already recorded")
    assert path.read_bytes() == before
    # Another commit is another run of the same results.
    assert add_run(results, Path("r.json"), path, db, "def").startswith("added 1 case(s)")


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"interrupted": True}, "interrupted after 1 case(s)"),
        ({"selection": {"cases": ["a*"], "tags": []}}, "a selection (--case/--tag)"),
        ({"cases": []}, "judged no case"),
    ],
)
def test_only_whole_runs_are_recorded(tmp_path: Path, change: dict[str, Any], words: str) -> None:
    results = made_run({"a": "pass"})
    for key, value in change.items():
        setattr(results, key, value)
    with pytest.raises(HistoryError) as raised:
        add_run(results, Path("part.json"), tmp_path / "h.jsonl", None, "abc")
    assert str(raised.value).startswith("part.json: the history records whole runs only")
    assert words in str(raised.value)
    assert not (tmp_path / "h.jsonl").exists()


def test_a_shard_is_refused(tmp_path: Path) -> None:
    results = made_run({"a": "pass"})
    object.__setattr__(results, "shard", {"index": 1, "count": 3})
    with pytest.raises(HistoryError, match=r"one shard \(1/3\) of the suite: join every part"):
        add_run(results, Path("p.json"), tmp_path / "h.jsonl", None, "abc")


# --- a malformed export ------------------------------------------------------------------


GOOD = records_of(made_run({"a": "pass"}), "abc")[0]


def _line(**change: Any) -> str:
    data = {**GOOD.to_json(), **change}
    return json.dumps(data)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json\n", ":2: not a JSON line"),
        ("[1, 2]\n", ":2: expected a history record (a JSON object), found list"),
        (
            _line(schema="casegate.history/9") + "\n",
            ":2: expected schema 'casegate.history/1', found 'casegate.history/9': upgrade casegate",
        ),
        (_line(schema="other") + "\n", ":2: expected schema 'casegate.history/1', found 'other'"),
        (_line(verdict="maybe") + "\n", ":2: verdict: Input should be 'pass', 'fail' or 'error'"),
        (_line(pass_rate=1.5) + "\n", ":2: pass_rate: Input should be less than or equal to 1"),
        (
            _line(pass_rate=float("nan")) + "\n",
            ":2: pass_rate: Value error, must be a finite number",
        ),
        (_line(version="1") + "\n", ":2: version: Input should be a valid integer"),
        (_line(surprise=1) + "\n", ":2: surprise: Extra inputs are not permitted"),
        (
            _line(verdict="fail") + "\n",
            ":2: case 'a' of the run of 2026-01-01T00:00:00+00:00 (commit abc, config h1) is already on line 1 with other values",
        ),
    ],
)
def test_a_malformed_line_is_one_problem_naming_file_and_line(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text(export.line_of(GOOD) + "\n" + text)
    with pytest.raises(HistoryError) as raised, Store.opened(path, None):
        pass
    assert len(raised.value.problems) == 1 and "\n" not in raised.value.problems[0]
    assert raised.value.problems[0].startswith(f"{path}{problem}")


def test_bytes_that_are_not_utf8_are_named(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_bytes(b"\n\n\xff\xfe{}\n")
    with pytest.raises(HistoryError, match=r"h\.jsonl:3: not UTF-8 text"), Store.opened(path, None):
        pass


def test_a_line_repeated_word_for_word_is_read_once(tmp_path: Path) -> None:
    # Two branches that both appended the same run, merged: the run is still one run.
    path = tmp_path / "h.jsonl"
    path.write_text((export.line_of(GOOD) + "\n") * 2 + "\n")
    with Store.opened(path, None) as store:
        assert [p.cases for p in queries.trend(store, "s")] == [1]


# --- the cache ---------------------------------------------------------------------------


def test_the_cache_follows_the_export(tmp_path: Path) -> None:
    path, db = tmp_path / "h.jsonl", tmp_path / "c.sqlite"
    add_run(made_run({"a": "pass"}), Path("r"), path, db, "abc")
    # A `git pull` brings a run the cache has not seen: it is rebuilt.
    other = tmp_path / "other.jsonl"
    add_run(
        made_run({"a": "fail"}, created_at="2026-02-01T00:00:00+00:00"),
        Path("r"),
        other,
        None,
        "def",
    )
    with path.open("a") as stream:
        stream.write(other.read_text())
    with Store.opened(path, db) as store:
        assert [p.commit for p in queries.trend(store, "s")] == ["abc", "def"]
    # A cache that is not a database at all is only a cache: rebuilt.
    db.write_bytes(b"this is not sqlite" * 100)
    with Store.opened(path, db) as store:
        assert [p.passed for p in queries.trend(store, "s")] == [1, 0]
    # A cache of another export is rebuilt from this one.
    with Store.opened(other, db) as store:
        assert [p.commit for p in queries.trend(store, "s")] == ["def"]
    with sqlite3.connect(db) as connection:
        meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
    assert meta["export"] == str(other.resolve())
    assert meta["export_sha256"] == export.fingerprint(other).sha256


def test_a_missing_export_is_an_empty_history(tmp_path: Path) -> None:
    with Store.opened(tmp_path / "none.jsonl", None) as store:
        assert queries.choose_suite(store, None) is None
        assert answers(store) == {}


def test_several_suites_in_one_export_need_a_choice(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    add_run(made_run({"a": "pass"}), Path("r"), path, None, "abc")
    other = made_run({"a": "pass"})
    other.suite = "t"
    add_run(other, Path("r"), path, None, "abc")
    with Store.opened(path, None) as store:
        with pytest.raises(
            HistoryError, match=r"holds runs of several suites \(s, t\): pass --suite"
        ):
            queries.choose_suite(store, None)
        assert queries.choose_suite(store, "t") == "t"


# --- the questions -----------------------------------------------------------------------


def test_trend_flips_and_last_failures(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    runs = [
        ({"a": "pass", "b": "pass", "c": "pass"}, "v1", 1),
        ({"a": "fail", "b": "pass", "c": "error"}, "v1", 1),
        ({"a": "pass", "b": "fail", "c": "pass"}, "v2", 1),
        ({"a": "fail", "b": "fail", "c": "pass"}, "v2", 2),  # b's expectation moved
    ]
    for day, (verdicts, system, b_version) in enumerate(runs, start=1):
        results = made_run(
            verdicts,
            created_at=f"2026-01-0{day}T00:00:00+00:00",
            system=system,
            latency=float(day * 100),
            versions={"b": b_version},
        )
        add_run(results, Path("r"), path, None, f"c{day}")
    with Store.opened(path, None) as store:
        trend = queries.trend(store, "s")
        assert [p.pass_rate for p in trend] == [
            1.0,
            round(1 / 3, 6),
            round(2 / 3, 6),
            round(1 / 3, 6),
        ]
        assert [p.cost_usd for p in trend] == [0.003] * 4
        assert [p.latency_ms_p95 for p in trend] == [100.0, 200.0, 300.0, 400.0]
        assert [p.commit for p in queries.trend(store, "s", 2)] == ["c3", "c4"]
        flips = queries.flips(store, "s")
        # a: pass→fail→pass→fail; b: one flip, then a new version; c: the error is no verdict.
        assert [(f.case, f.flips) for f in flips] == [("a", 3), ("b", 1)]
        assert (flips[0].runs, flips[0].passes, flips[0].fails, flips[0].last) == (4, 2, 2, "fail")
        assert [f.case for f in queries.flips(store, "s", 1)] == ["a"]
        found = queries.last_failures(store, "s", ["a", "c", "zzz"])
        assert set(found) == {"a", "c"}
        assert found["a"].last is not None and found["a"].last.commit == "c4"
        assert (found["a"].runs, found["a"].failures) == (4, 2)
        assert found["c"].last is not None and found["c"].last.verdict == "error"
        # "before" the run being judged: that run itself is left out.
        before = queries.last_failures(store, "s", ["a"], ("h1", "2026-01-04T00:00:00+00:00"))
        assert before["a"].last is not None and before["a"].last.commit == "c2"
        assert [r.system for r in queries.timeline(store, "s", "b")] == ["v1", "v1", "v2", "v2"]


# --- export → rebuild → the same answers ------------------------------------------------

_IDS = st.sampled_from(["a", "b", "c", "d", "refund-window", "ünï/code"])
_RUN = st.fixed_dictionaries(
    {
        "verdicts": st.dictionaries(_IDS, st.sampled_from(["pass", "fail", "error"]), min_size=1),
        "day": st.integers(1, 28),
        "hour": st.integers(0, 23),
        "config": st.sampled_from(["h1", "h2"]),
        "commit": st.text(alphabet="0123456789abcdef", min_size=1, max_size=8),
        "system": st.text(min_size=0, max_size=12),
        "cost": st.none() | st.floats(0, 5, allow_nan=False),
        "latency": st.none() | st.floats(0, 1e5, allow_nan=False),
        "version": st.integers(1, 3),
    }
)


@given(st.lists(_RUN, min_size=1, max_size=8))
def test_a_cache_rebuilt_from_the_export_answers_as_the_one_built_run_by_run(
    specs: list[dict[str, Any]],
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path, db = Path(folder) / "h.jsonl", Path(folder) / "built.sqlite"
        for spec in specs:
            results = made_run(
                spec["verdicts"],
                created_at=f"2026-01-{spec['day']:02d}T{spec['hour']:02d}:00:00+00:00",
                config_hash=spec["config"],
                system=spec["system"],
                cost=spec["cost"],
                latency=spec["latency"],
                versions=dict.fromkeys(spec["verdicts"], spec["version"]),
            )
            first = path.read_bytes() if path.exists() else b""
            said = add_run(results, Path("r"), path, db, spec["commit"])
            if said.startswith("already recorded"):
                assert path.read_bytes() == first  # a duplicate never writes a line
            # The same results again: never a second copy.
            assert add_run(results, Path("r"), path, db, spec["commit"]).startswith(
                "already recorded"
            )
        with Store.opened(path, db) as store:
            built = answers(store)
        with Store.opened(path, Path(folder) / "fresh.sqlite") as store:
            rebuilt = answers(store)
        with Store.opened(path, None) as store:
            in_memory = answers(store)
        assert built == rebuilt == in_memory
        runs = {(s["config"], s["commit"], s["day"], s["hour"]) for s in specs}
        assert len(built["trend"]) == len(runs)
        lines = path.read_text().splitlines()
        assert len(lines) == sum(p["cases"] for p in built["trend"])
