"""Results files: written whole and masked, never over a stranger's file, read with clear errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gate import secrets
from gate.cli import main
from gate.errors import ResultsError
from gate.files import OutputError
from gate.results import SCHEMA, read_carefully, read_fast, read_results, write_results
from tests.conftest import Project, case
from tests.factories import result, run


def written(tmp_path: Path, **changes: object) -> Path:
    """A valid results file, with top-level or `config` keys changed."""
    path = tmp_path / "results.json"
    write_results(run([result("a")]), path)
    data = json.loads(path.read_text())
    for key, value in changes.items():
        if key.startswith("config_"):
            data["config"][key.removeprefix("config_")] = value
        else:
            data[key] = value
    path.write_text(json.dumps(data))
    return path


def problem_of(path: Path) -> str:
    with pytest.raises(ResultsError) as caught:
        read_results(path)
    (problem,) = caught.value.problems
    return problem


def test_a_written_file_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "folder" / "r.json"
    original = run([result("a"), result("b", "fail")])
    write_results(original, path)
    assert read_results(path) == original
    assert path.read_bytes().startswith(b'{"schema":"casegate.results/')


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"config_system": "support-v1"}, "config.system: expected a mapping, found str"),
        ({"config_system": ["a"]}, "config.system: expected a mapping, found list"),
        ({"config_gate": 3}, "config.gate: expected a mapping, found int"),
        ({"config_judge": "claude"}, "config.judge: expected a mapping, found str"),
        ({"config": ["suite"]}, "config: Input should be a valid dictionary"),
    ],
)
def test_config_keys_the_comparison_reads_must_be_mappings(
    tmp_path: Path, changes: dict[str, object], problem: str
) -> None:
    path = written(tmp_path, **changes)
    assert problem_of(path) == f"{path}: invalid results file at {problem}"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"[" * 100_000, "nested more than 100 levels deep"),
        (
            b'{"schema": "casegate.results/1", "x": ' + b"[" * 150 + b"]" * 150 + b"}",
            "nested more than 100 levels deep",
        ),
        (
            b'{"schema": "casegate.results/1", "n": ' + b"1" * 5000 + b"}",
            "a number has more than 4300 digits",
        ),
        (b'{"schema": "casegate.results/1", "cases": [', "Expecting value"),
        (b'{"text": "caf\xe9"}', "'utf-8' codec can't decode byte 0xe9"),
    ],
)
def test_unreadable_content_is_one_clear_error(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(content)
    message = problem_of(path)
    assert message.startswith(f"{path}: not a readable results file: ")
    assert problem in message


@pytest.mark.parametrize(("where", "lists"), [("config", 99), ("tool call", 93)])
@pytest.mark.parametrize("over", [0, 1])
def test_what_the_schema_leaves_open_is_held_to_the_depth_limit(
    tmp_path: Path, where: str, lists: int, over: int
) -> None:
    """The fast read validates from the bytes; it walks what the schema does not fix. The
    file's root is level 1: a config value sits at level 3, a tool call's argument at 9."""
    seeded = run([result("a")])
    deep: object = "x"
    for _ in range(lists - 1 + over):
        deep = [deep]
    if where == "config":
        seeded.config["extra"] = deep
    else:
        seeded.cases[0].outputs[0].tool_calls = [{"name": "f", "arguments": {"a": deep}}]
    path = tmp_path / "r.json"
    write_results(seeded, path)
    raw = path.read_bytes()
    if over:
        assert read_fast(raw) is None
        assert "nested more than 100 levels deep" in problem_of(path)
    else:  # exactly 100 levels: both reads take it
        fast = read_fast(raw)
        assert fast is not None and fast == read_carefully(raw, path)


def test_the_fast_read_gives_what_the_careful_one_gives(tmp_path: Path) -> None:
    seeded = run([result("a"), result("b", "fail", critical=True)])
    seeded.cases[0].outputs[0].tool_calls = [{"name": "f", "arguments": {"a": [[1, {"b": 2}]]}}]
    path = tmp_path / "r.json"
    write_results(seeded, path)
    raw = path.read_bytes()
    fast = read_fast(raw)
    assert fast is not None and fast == read_carefully(raw, path) == seeded


def test_a_folder_is_not_a_results_file(tmp_path: Path) -> None:
    assert problem_of(tmp_path) == f"{tmp_path}: cannot read it (Is a directory)"


def test_write_refuses_to_replace_a_file_that_is_not_results(tmp_path: Path) -> None:
    config = tmp_path / "casegate.yml"
    config.write_text("suite: demo\n")
    with pytest.raises(OutputError) as caught:
        write_results(run([result("a")]), config)
    assert caught.value.problems == [
        f"{config}: exists and is not a casegate results file; casegate will not replace it: "
        "pick another path (--out PATH)"
    ]
    assert config.read_text() == "suite: demo\n"
    # Results (also pretty-printed ones) and empty files may be replaced.
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps({"schema": SCHEMA, "suite": "old"}, indent=2))
    empty = tmp_path / "empty.json"
    empty.touch()
    for path in (pretty, empty):
        write_results(run([result("b")]), path)
        assert [c.id for c in read_results(path).cases] == ["b"]


def test_run_out_over_the_config_is_exit_2_and_the_config_survives(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("a", "hi", contains="hi")])
    before = project.config_path.read_text()
    assert main(["run", "--mode", "live", "--out", "casegate.yml", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "casegate.yml: exists and is not a casegate results file" in err
    assert "pick another path" in err and "Traceback" not in err
    assert project.config_path.read_text() == before


@pytest.mark.parametrize("option", ["--out", "--junit"])
def test_an_unwritable_output_path_is_exit_2_not_a_traceback(
    project: Project, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    project.write_cases([case("a", "hi", contains="hi")])
    (project.root / "blocker").write_text("a file where a folder should be\n")
    assert main(["run", "--mode", "live", option, "blocker/out.xml", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "casegate: blocker/out.xml: cannot write it (blocker is a file, not a folder); "
        "choose a path you can write to\n"
    )
    assert "Traceback" not in err


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_results(run([result("a")]), path)
    before = path.read_bytes()
    broken = run([result("b")])
    broken.cases[0].outputs[0].tool_calls = [{"arguments": object()}]  # cannot be serialised
    with pytest.raises(Exception, match="Unable to serialize"):
        write_results(broken, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_results_are_written_with_secrets_masked(tmp_path: Path) -> None:
    secrets.remember("sk-results-1a2b3c4d5e6f")
    path = tmp_path / "r.json"
    write_results(run([result("a", "fail", reason="echoed sk-results-1a2b3c4d5e6f back")]), path)
    assert "sk-results-1a2b3c4d5e6f" not in path.read_text()
    assert read_results(path).cases[0].reason == f"echoed {secrets.MASK} back"


def test_results_may_go_to_a_device_but_not_over_a_folder(tmp_path: Path) -> None:
    write_results(run([result("a")]), Path(os.devnull))
    assert not Path(os.devnull).is_file()
    with pytest.raises(OutputError, match="is a folder, not a results file; pass a file path"):
        write_results(run([result("a")]), tmp_path)


def test_the_summary_is_counted_from_the_cases_not_taken_from_the_file(
    tmp_path: Path,
) -> None:
    """A hand-cut results file once headed its report with the counts it had before the cut."""
    path = tmp_path / "r.json"
    write_results(run([result("a"), result("b", status="fail"), result("c")]), path)
    data = json.loads(path.read_text())
    data["cases"] = [c for c in data["cases"] if c["id"] != "b"]  # the summary still says 3
    data["summary"]["passed"] = 99
    path.write_text(json.dumps(data))
    summary = read_results(path).summary
    assert (summary.cases, summary.passed, summary.failed) == (2, 2, 0)
    assert summary.pass_rate == 1.0
