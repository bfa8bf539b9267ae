"""`casegate merge` and `check --parts`: the parts of a sharded run, joined or refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.suite.shard import shard_of

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the shipped example suite, replayed; outputs go to tmp_path


def parts_of(tmp_path: Path, count: int, *extra: str) -> list[Path]:
    paths = []
    for index in range(1, count + 1):
        path = tmp_path / f"part-{index}.json"
        command = ["run", *extra, "--shard", f"{index}/{count}", "--out", str(path), "--quiet"]
        assert main(command) == 0
        paths.append(path)
    return paths


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data))
    return path


def merge_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(["merge", *argv]) == 2
    return capsys.readouterr().err


def test_merged_parts_equal_the_unsharded_run(tmp_path: Path, in_repo: None) -> None:
    whole = tmp_path / "whole.json"
    assert main(["run", "--out", str(whole), "--quiet"]) == 0
    parts = parts_of(tmp_path, 3)
    merged = tmp_path / "merged.json"
    assert main(["merge", *map(str, parts), "--out", str(merged), "--quiet"]) == 0
    expected, found = read(whole), read(merged)
    assert all(read(part)["cases"] for part in parts)  # 48 cases over 3 shards: none empty
    expected.pop("created_at")
    found.pop("created_at")
    assert found == expected
    assert merged.read_text().count('"id":') == expected["summary"]["cases"]


def test_gaps_overlaps_and_foreign_parts_are_refused(
    tmp_path: Path, in_repo: None, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two, three = map(str, parts_of(tmp_path, 3))
    out = str(tmp_path / "m.json")
    assert "a gap: no part for shard 3/3" in merge_error(capsys, one, two, "--out", out)
    assert "overlapping parts: shard 2/3" in merge_error(capsys, one, two, two, three, "--out", out)
    other = parts_of(tmp_path / "two", 2)  # a 2-way split of the same run
    assert "of a 2-way split" in merge_error(capsys, one, two, three, str(other[0]), "--out", out)
    whole = tmp_path / "whole.json"
    assert main(["run", "--out", str(whole), "--quiet"]) == 0
    assert "not a shard's results" in merge_error(capsys, str(whole), "--out", out)
    candidate = parts_of(tmp_path / "candidate", 3, "-c", "casegate.candidate.yml")
    assert "differs from" in merge_error(capsys, one, two, str(candidate[2]), "--out", out)
    # Parts of another config, merged against this one: refused by the config's hash.
    refused = merge_error(capsys, *map(str, candidate), "--out", out)
    assert "the parts ran another config" in refused
    assert not Path(out).exists()


def test_a_tampered_part_is_refused(
    tmp_path: Path, in_repo: None, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = parts_of(tmp_path, 2)
    first, second = read(paths[0]), read(paths[1])
    out = str(tmp_path / "m.json")
    # A case moved into the other part: it does not hash to that shard.
    moved = {**first, "cases": [*first["cases"], second["cases"][0]]}
    trimmed = {**second, "cases": second["cases"][1:]}
    forged = [write(tmp_path / "a.json", moved), write(tmp_path / "b.json", trimmed)]
    assert "which belongs to shard 2/2" in merge_error(capsys, *map(str, forged), "--out", out)
    # A case dropped from its part: the merged run would look whole and judge less.
    write(tmp_path / "b.json", trimmed)
    error = merge_error(capsys, str(paths[0]), str(tmp_path / "b.json"), "--out", out)
    assert (
        f"a gap: 1 case(s) of the whole suite are in no part ('{second['cases'][0]['id']}')"
        in error
    )
    # An interrupted part, and a part claiming another shard number.
    write(tmp_path / "c.json", {**second, "interrupted": True})
    assert "was interrupted" in merge_error(
        capsys, str(paths[0]), str(tmp_path / "c.json"), "--out", out
    )
    write(tmp_path / "d.json", {**second, "shard": {"index": True, "count": 2}})
    assert "invalid results file at shard.index" in merge_error(
        capsys, str(paths[0]), str(tmp_path / "d.json"), "--out", out
    )


def test_check_parts_gates_like_an_unsharded_check(
    tmp_path: Path, in_repo: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """The committed candidate blocks on three critical regressions, sharded or not."""
    baseline = "baselines/support.json"
    parts = parts_of(tmp_path, 3, "-c", "casegate.candidate.yml")
    capsys.readouterr()
    merged, report = tmp_path / "merged.json", tmp_path / "report.md"
    command = ["check", "-c", "casegate.candidate.yml", "--baseline", baseline]
    status = main(
        [*command, "--parts", *map(str, parts), "--out", str(merged), "--report", str(report)]
    )
    sharded = capsys.readouterr().out
    assert status == 1
    assert sharded.startswith("BLOCK: support")
    whole, whole_report = tmp_path / "whole.json", tmp_path / "whole.md"
    assert main([*command, "--out", str(whole), "--report", str(whole_report)]) == 1
    unsharded = capsys.readouterr().out
    assert sharded.split("results:")[0] == unsharded.split("results:")[0]
    assert read(merged)["shard"] is None
    assert "3 critical case(s) dropped significantly" in report.read_text()  # samples: auto


def test_check_parts_judges_the_parts_again(
    tmp_path: Path, in_repo: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """A part whose failing critical cases were rewritten as passes still blocks on them."""
    parts = parts_of(tmp_path, 2, "-c", "casegate.candidate.yml")
    baseline = read(REPO / "baselines" / "support.json")
    critical_passes = {c["id"] for c in baseline["cases"] if c["critical"] and c["passed"]}
    for path in parts:
        data = read(path)
        for result in data["cases"]:
            if result["id"] in critical_passes and not result["passed"]:
                result.update(status="pass", passed=True, passes=result["samples"], pass_rate=1.0)
                for sample in result["outputs"]:
                    sample.update(status="pass", reason="")
                    for check in sample["checks"]:
                        check.update(ok=True, reason="")
        write(path, data)
    capsys.readouterr()
    command = ["check", "-c", "casegate.candidate.yml", "--parts", *map(str, parts)]
    assert main([*command, "--out", str(tmp_path / "m.json")]) == 1
    printed = capsys.readouterr().out
    assert printed.startswith("BLOCK: support")
    assert "3 critical case(s) dropped significantly" in printed  # samples: auto


def test_check_shard_writes_a_part_and_no_verdict(
    tmp_path: Path, in_repo: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "part.json"
    status = main(
        ["check", "--shard", "1/2", "--out", str(out), "--report", str(tmp_path / "r.md")]
    )
    printed = capsys.readouterr().out
    assert status == 0
    assert "shard 1/2: a part, not a verdict" in printed
    assert "SHIP" not in printed
    assert not (tmp_path / "r.md").exists()
    part = read(out)
    assert part["shard"] == {"index": 1, "count": 2}
    assert all(shard_of(c["id"], 2) == 1 for c in part["cases"])
    with pytest.raises(SystemExit):
        main(["check", "--shard", "1/2", "--parts", str(out)])  # one or the other


def test_check_parts_refuses_another_mode_or_selection(
    tmp_path: Path, in_repo: None, capsys: pytest.CaptureFixture[str]
) -> None:
    parts = [str(path) for path in parts_of(tmp_path, 2)]
    capsys.readouterr()
    out = str(tmp_path / "m.json")
    assert main(["check", "--parts", *parts, "--mode", "live", "--out", out]) == 2
    assert "the parts ran in replay mode, this check is in live mode" in capsys.readouterr().err
    assert main(["check", "--parts", *parts, "--tag", "orders", "--out", out]) == 2
    assert "the parts ran the whole suite, this check --tag orders" in capsys.readouterr().err
    tagged = [str(path) for path in parts_of(tmp_path / "t", 2, "--tag", "critical")]
    capsys.readouterr()
    assert main(["check", "--parts", *tagged, "--out", out]) == 2
    assert "the parts ran --tag critical, this check the whole suite" in capsys.readouterr().err
