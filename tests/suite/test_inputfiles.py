"""Input files (`input_files:`): read and hashed when the cases load, merged from
`defaults:`, part of the recording key, and handed to python and command systems."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from gate.cli import main
from gate.errors import CaseFileError, ConfigError
from gate.produce.recordings import request_key
from gate.suite import inputfiles
from gate.suite.cases import Case, load_cases
from gate.suite.defaults import SuiteDefaults, merge
from gate.suite.project import load_project
from tests.conftest import Project, case

#: a system that answers with the text of every input file it was given
READER = """
from pathlib import Path

def answer(case_input, system):
    files = case_input.get("input_files", {})
    return " | ".join(f"{name}={Path(path).read_text()}" for name, path in files.items())
"""


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def reading(project: Project) -> Project:
    project.write_system(READER)
    project.write_text("tickets/a.txt", "refund please")
    project.write_text("docs/policy.md", "30 days")
    return project


def _load(project: Project) -> list[Case]:
    return list(load_project(project.config_path)[1])


# --- paths as written -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "problem"),
    [
        ("/etc/passwd", "is absolute"),
        ("C:/x.txt", "is absolute"),
        ("../outside.txt", "climbs out with `..`"),
        ("tickets/../../outside.txt", "climbs out with `..`"),
        (".git/config", "inside .git"),
        ("sub/.GIT/HEAD", "inside .git"),
        ("tickets\\a.txt", "write paths with /"),
        (".", "names no file"),
    ],
)
def test_a_path_that_could_leave_the_folder_is_refused_as_written(
    written: str, problem: str
) -> None:
    found = inputfiles.written_problem(written)
    assert found is not None and problem in found


@given(st.lists(st.sampled_from(["a", ".", "..", "/", "\\", ".git", "C:", "x.txt"]), max_size=6))
def test_an_accepted_path_never_leaves_the_folder(parts: list[str]) -> None:
    written = "".join(parts)
    if inputfiles.written_problem(written) is None:
        resolved = os.path.normpath(os.path.join("/suite", written))
        assert resolved.startswith("/suite/")
        assert ".git" not in Path(resolved).parts


def test_a_plain_relative_path_is_accepted_and_normalised() -> None:
    assert inputfiles.written_problem("./tickets/a.txt") is None
    assert inputfiles.normal("./tickets/a.txt") == "tickets/a.txt"


# --- loading ------------------------------------------------------------------------------


def test_a_case_keeps_the_sha256_of_each_file_it_names(reading: Project) -> None:
    reading.write_cases(
        [case("a", "q", contains="x", fields_={"input_files": ["./tickets/a.txt"]})]
    )
    (loaded,) = _load(reading)
    assert loaded.input_file_hashes == {"tickets/a.txt": _sha("refund please")}
    assert loaded.system_input["input_files"] == {
        "./tickets/a.txt": str(reading.root / "tickets" / "a.txt")
    }
    assert loaded.system_input["question"] == "q"
    assert "input_files" not in loaded.input  # the case's own input is left as written


def test_a_missing_file_is_named_at_its_line_with_the_fix(reading: Project) -> None:
    path = reading.write_text(
        "cases/c.yaml",
        """\
        - id: a
          input: {question: q}
          expect: {contains: x}
          input_files: [tickets/*.txt]
        """,
    )
    reading.write_config(cases=str(path.relative_to(reading.root)))
    with pytest.raises(CaseFileError) as caught:
        _load(reading)
    (problem,) = caught.value.problems
    assert problem.startswith("cases/c.yaml:4: case 'a': input_files: 'tickets/*.txt' does not")
    assert "relative to the config's folder" in problem
    assert "globs are not expanded: list each file" in problem


def test_a_folder_is_refused(reading: Project) -> None:
    reading.write_cases([case("a", "q", contains="x", fields_={"input_files": ["tickets"]})])
    with pytest.raises(CaseFileError, match="'tickets' is a folder: name each file in it"):
        _load(reading)


def test_an_input_key_named_input_files_is_refused_when_the_case_reads_files(
    reading: Project,
) -> None:
    bad = case("a", "q", contains="x", fields_={"input_files": ["tickets/a.txt"]})
    bad["input"]["input_files"] = "mine"
    reading.write_cases([bad])
    with pytest.raises(CaseFileError, match=r"input\.input_files is where the system finds"):
        _load(reading)


def test_a_file_past_the_limit_is_refused_unread(
    reading: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inputfiles, "MAX_INPUT_FILE_BYTES", 10)
    reading.write_cases([case("a", "q", contains="x", fields_={"input_files": ["tickets/a.txt"]})])
    with pytest.raises(CaseFileError, match=r"'tickets/a.txt': 0.0 MB, more than the 0 MB an"):
        _load(reading)


# --- defaults -----------------------------------------------------------------------------


def test_defaults_input_files_are_unioned_after_the_cases_own() -> None:
    defaults = SuiteDefaults(input_files=["docs/policy.md", "tickets/a.txt"])
    merged = merge({"id": "a", "input_files": ["tickets/a.txt", "x.png"]}, defaults)
    assert merged.record["input_files"] == ["tickets/a.txt", "x.png", "docs/policy.md"]
    alone = merge({"id": "b"}, defaults)
    assert alone.record["input_files"] == ["docs/policy.md", "tickets/a.txt"]


def test_every_case_reads_the_defaults_files(reading: Project) -> None:
    data = yaml.safe_load(reading.config_path.read_text())
    data["defaults"] = {"input_files": ["docs/policy.md"]}
    reading.config_path.write_text(yaml.safe_dump(data))
    reading.write_cases(
        [
            case("a", "q", contains="x", fields_={"input_files": ["tickets/a.txt"]}),
            case("b", "q", contains="x"),
        ]
    )
    first, second = _load(reading)
    assert first.input_file_hashes == {
        "docs/policy.md": _sha("30 days"),
        "tickets/a.txt": _sha("refund please"),
    }
    assert second.input_file_hashes == {"docs/policy.md": _sha("30 days")}


def test_a_bad_default_is_named_once_at_its_line_in_the_config(reading: Project) -> None:
    data = yaml.safe_load(reading.config_path.read_text())
    data["defaults"] = {"input_files": ["docs/missing.md"]}
    reading.config_path.write_text(yaml.safe_dump(data, sort_keys=False))
    reading.write_cases([case("a", "q", contains="x"), case("b", "q", contains="x")])
    with pytest.raises(ConfigError) as caught:
        _load(reading)
    (problem,) = caught.value.problems
    line = reading.config_path.read_text().splitlines().index("  input_files:") + 1
    assert problem.startswith(f"{reading.config_path}:{line}: defaults.input_files: ")
    assert "'docs/missing.md' does not exist" in problem


# --- the recording key --------------------------------------------------------------------


def test_the_key_holds_the_contents_and_is_unchanged_without_files(reading: Project) -> None:
    reading.write_cases(
        [
            case("a", "q", contains="x", fields_={"input_files": ["tickets/a.txt"]}),
            case("b", "q", contains="x"),
        ]
    )
    first, plain = _load(reading)
    assert plain.key_input is plain.input  # every recording made before input_files still fits
    before = request_key("f", first.key_input, 0)
    reading.write_text("tickets/a.txt", "refund NOW")
    (edited, _) = _load(reading)
    assert request_key("f", edited.key_input, 0) != before
    assert request_key("f", first.input, 0) != before  # never keyed on the input alone


def test_a_case_whose_files_were_never_read_cannot_be_keyed() -> None:
    built = Case.model_validate(
        {"id": "a", "input": {}, "expect": {"contains": "x"}, "input_files": ["a.txt"]}
    )
    with pytest.raises(RuntimeError, match="never read"):
        _ = built.key_input


def test_loading_without_a_folder_refuses_input_files(tmp_path: Path) -> None:
    file = tmp_path / "c.yaml"
    file.write_text(
        yaml.safe_dump(
            [{"id": "a", "input": {}, "expect": {"contains": "x"}, "input_files": ["a"]}]
        )
    )
    with pytest.raises(CaseFileError, match="cannot read input files"):
        load_cases([file])


# --- through the CLI ----------------------------------------------------------------------


def _recorded(project: Project, case_id: str) -> dict[str, Any]:
    document = json.loads((project.root / "recordings" / f"{case_id}.json").read_text())
    return dict(document["responses"])


def test_editing_a_file_needs_a_new_recording(
    reading: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    reading.write_cases(
        [case("a", "q", contains="refund", fields_={"input_files": ["tickets/a.txt"]})]
    )
    assert main(["record", "--quiet"]) == 0
    assert main(["run", "--quiet"]) == 0
    capsys.readouterr()

    reading.write_text("tickets/a.txt", "refund within 30 days")
    assert main(["run", "--quiet"]) == 2  # never the old answer, silently
    err = capsys.readouterr().err
    assert "no recording for 1 case(s) (1 sample(s))" in err
    assert "1 of them read input files" in err
    assert "(a: tickets/a.txt): an edited input file needs a new recording" in err

    assert main(["record", "--quiet"]) == 0
    assert main(["run", "--quiet", "--out", "after.json"]) == 0
    results = json.loads((reading.root / "after.json").read_text())
    (sample,) = results["cases"][0]["outputs"]
    assert sample["text"] == "tickets/a.txt=refund within 30 days"
    assert len(_recorded(reading, "a")) == 2  # the old answer is kept, under the old key
    assert main(["recordings", "prune"]) == 0  # until prune, which keys as a replay does
    (kept,) = _recorded(reading, "a").values()
    assert kept["output"]["text"] == "tickets/a.txt=refund within 30 days"


def test_a_command_system_gets_the_paths_in_its_input(reading: Project) -> None:
    reading.write_text(
        "cat_files.py",
        """\
        import json, sys
        request = json.load(sys.stdin)
        paths = request["input"]["input_files"]
        print(" ".join(open(path).read() for path in paths.values()))
        """,
    )
    data = yaml.safe_load(reading.config_path.read_text())
    data["system"] = {"name": "cat", "provider": "command", "command": "python3 cat_files.py"}
    reading.config_path.write_text(yaml.safe_dump(data))
    reading.write_cases(
        [case("a", "q", contains="30 days", fields_={"input_files": ["docs/policy.md"]})]
    )
    assert main(["run", "--mode", "live", "--quiet", "--out", "r.json"]) == 0
    results = json.loads((reading.root / "r.json").read_text())
    assert results["cases"][0]["outputs"][0]["text"] == "30 days"


def test_a_bad_default_met_while_the_cases_load_is_said_to_come_from_the_defaults(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("mine")
    file = tmp_path / "c.yaml"
    file.write_text(
        yaml.safe_dump(
            [{"id": "a", "input": {}, "expect": {"contains": "x"}, "input_files": ["a.txt"]}]
        )
    )
    defaults = SuiteDefaults(input_files=["gone.txt"])
    with pytest.raises(CaseFileError) as caught:
        load_cases([file], defaults=defaults, root=tmp_path)
    (problem,) = caught.value.problems
    assert "input_files: 'gone.txt' does not exist" in problem
    assert problem.endswith("(from `defaults.input_files`)")


def test_a_folder_swapped_for_a_link_after_it_was_looked_at_is_not_read(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path / "suite"
    (root / "tickets").mkdir(parents=True)
    (root / "tickets" / "a.txt").write_text("mine")
    assert inputfiles.locate(root, "tickets/a.txt") == root / "tickets" / "a.txt"
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "a.txt").write_text("theirs")
    (root / "tickets" / "a.txt").unlink()
    (root / "tickets").rmdir()
    (root / "tickets").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(inputfiles.InputFileError, match=r"'tickets/a.txt': cannot read"):
        inputfiles.digest(root, "tickets/a.txt")
    assert inputfiles.digest(elsewhere, "a.txt") == _sha("theirs")  # read where it is no link
