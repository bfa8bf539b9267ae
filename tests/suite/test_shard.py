"""`--shard I/N`: a partition by case id that every matrix job computes alike."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate.cli import main
from gate.errors import ConfigError
from gate.suite.cases import Case
from gate.suite.select import Selection, select
from gate.suite.shard import MAX_SHARDS, Shard, shard_of
from tests.conftest import Project, case

case_id = st.text("abcxyz019._-", min_size=1, max_size=30)
case_ids = st.lists(case_id, min_size=1, max_size=60, unique=True)


def cases_of(ids: list[str]) -> list[Case]:
    return [Case(id=case_id, input={}, expect={}) for case_id in ids]


@given(ids=case_ids, count=st.integers(1, 12))
def test_the_shards_partition_the_suite(ids: list[str], count: int) -> None:
    slices = [
        [c.id for c in select(cases_of(ids), Selection(shard=Shard(index, count)))]
        for index in range(1, count + 1)
    ]
    flat = [case_id for part in slices for case_id in part]
    assert sorted(flat) == sorted(ids)  # every case in exactly one shard
    assert len(flat) == len(set(flat))


@given(ids=case_ids, added=case_id, count=st.integers(1, 12))
def test_adding_a_case_moves_no_other(ids: list[str], added: str, count: int) -> None:
    before = {case_id: shard_of(case_id, count) for case_id in ids}
    after = {case_id: shard_of(case_id, count) for case_id in [*ids, added]}
    assert all(after[case_id] == shard for case_id, shard in before.items())
    assert all(1 <= shard <= count for shard in after.values())


@pytest.mark.parametrize(
    ("text", "parsed"), [("1/1", Shard(1, 1)), ("3/4", Shard(3, 4)), (" 2/256 ", Shard(2, 256))]
)
def test_shard_specs_that_parse(text: str, parsed: Shard) -> None:
    assert Shard.parse(text) == parsed


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "a/b", "1-3", "1/257", "-1/3", "1/3/4", ""])
def test_shard_specs_that_are_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="I/N"):
        Shard.parse(text)


@pytest.mark.parametrize(
    "stored",
    [{"index": True, "count": 2}, {"index": 1.0, "count": 2}, {"index": 3, "count": 2}, {}],
)
def test_a_stored_shard_must_be_whole_numbers_in_range(stored: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match=r"part\.json"):
        Shard.stored(stored, "part.json")
    assert MAX_SHARDS == 256


def test_patterns_matching_nothing_are_refused_but_an_empty_shard_is_not() -> None:
    cases = cases_of(["only-one"])
    with pytest.raises(ConfigError, match="selects none"):
        select(cases, Selection(cases=("nope*",), shard=Shard(1, 2)))
    owner = shard_of("only-one", 2)
    assert select(cases, Selection(shard=Shard(3 - owner, 2))) == []
    assert [c.id for c in select(cases, Selection(shard=Shard(owner, 2)))] == ["only-one"]


def test_a_shard_run_records_its_shard_and_cannot_be_gated(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case(f"c{n}", "hi", contains="hi") for n in range(8)])
    assert main(["run", "--mode", "live", "--out", "whole.json", "--quiet"]) == 0
    assert main(["run", "--mode", "live", "--shard", "2/3", "--out", "part.json"]) == 0
    assert "shard 2/3: a part, not a verdict" in capsys.readouterr().out
    part = json.loads((project.root / "part.json").read_text())
    assert part["shard"] == {"index": 2, "count": 3}
    assert part["selection"] is None
    assert {c["id"] for c in part["cases"]} == {
        f"c{n}" for n in range(8) if shard_of(f"c{n}", 3) == 2
    }
    for pair in (["whole.json", "part.json"], ["part.json", "whole.json"]):
        assert main(["gate", *pair]) == 2
        assert "a part is never compared or gated" in capsys.readouterr().err
        assert main(["compare", *pair]) == 2


def test_a_bad_shard_option_is_a_usage_error(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("c", "hi", contains="hi")])
    with pytest.raises(SystemExit) as stopped:
        main(["run", "--shard", "5/4"])
    assert stopped.value.code == 2
    assert "expected I/N" in capsys.readouterr().err
