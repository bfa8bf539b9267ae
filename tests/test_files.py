"""Writing artefacts whole, masked and with a clear error; reading JSON within Python's limits."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gate import secrets
from gate.errors import CasegateError
from gate.files import MAX_DEPTH, OutputError, atomic_writer, parse_json, write_bytes, write_text


def test_write_text_creates_the_folder_and_replaces_the_file(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "report.md"
    write_text(path, "first\n")
    write_text(path, "second ✓\n")
    assert path.read_text(encoding="utf-8") == "second ✓\n"
    assert [p.name for p in path.parent.iterdir()] == ["report.md"]


def test_the_file_mode_follows_the_umask_like_any_file_the_user_writes(tmp_path: Path) -> None:
    previous = os.umask(0o027)
    try:
        write_text(tmp_path / "r.json", "{}")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == 0o640


def test_a_failure_midway_keeps_the_old_file_and_removes_the_temporary(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text("old")

    def write_then_fail() -> None:
        with atomic_writer(path) as stream:
            stream.write("half of the new")
            raise RuntimeError("disk gremlin")

    with pytest.raises(RuntimeError, match="disk gremlin"):
        write_then_fail()
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_an_unwritable_path_is_an_output_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError) as caught:
        write_text(tmp_path / "file" / "out.md", "text")
    assert isinstance(caught.value, CasegateError) and caught.value.exit_code == 2
    assert caught.value.problems == [
        f"{tmp_path / 'file' / 'out.md'}: cannot write it ({tmp_path / 'file'} is a file, "
        "not a folder); choose a path you can write to"
    ]
    (tmp_path / "folder").mkdir()
    with pytest.raises(OutputError, match=r"folder: cannot write it \(Is a directory\)"):
        write_text(tmp_path / "folder", "text")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "folder"]  # no temporary left


def test_every_write_is_masked(tmp_path: Path) -> None:
    secrets.remember("sk-files-77aa88bb99cc")
    with atomic_writer(tmp_path / "log.txt") as stream:
        stream.write("first piece sk-files-77aa88bb99cc, ")
        stream.write("second piece sk-files-77aa88bb99cc\n")
    write_text(tmp_path / "one.txt", "key=sk-files-77aa88bb99cc")
    assert (tmp_path / "log.txt").read_text() == "first piece ***, second piece ***\n"
    assert (tmp_path / "one.txt").read_text() == "key=***"


def test_a_scratch_folder_holds_the_temporary(tmp_path: Path) -> None:
    scratch = tmp_path / ".work"
    seen: list[str] = []
    with atomic_writer(tmp_path / "r.json", scratch=scratch) as stream:
        seen = [p.name for p in scratch.iterdir()]
        stream.write("{}")
    assert len(seen) == 1 and seen[0].startswith(".r.json.")
    assert [p.name for p in scratch.iterdir()] == []
    assert (tmp_path / "r.json").read_text() == "{}"


def test_a_lone_surrogate_is_written_as_its_json_escape(tmp_path: Path) -> None:
    write_text(tmp_path / "r.json", '{"text": "\ud800"}')
    assert parse_json((tmp_path / "r.json").read_bytes()) == {"text": "\ud800"}


def test_parse_json_reads_ordinary_documents() -> None:
    assert parse_json('{"a": [1, 2.5, null, "x"]}') == {"a": [1, 2.5, None, "x"]}
    assert parse_json(b"7") == 7
    assert parse_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested more than 100 levels deep"),
        ('{"a": ' * 500 + "1" + "}" * 500, "nested more than 100 levels deep"),
        ("[" * 100_000, "nested more than 100 levels deep"),
        ("9" * 5000, "a number has more than 4300 digits"),
        ("{oops", "Expecting property name"),
    ],
)
def test_parse_json_turns_what_python_cannot_hold_into_value_errors(
    text: str, problem: str
) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_json(text)


def test_a_device_is_written_through_never_replaced(tmp_path: Path) -> None:
    write_text(Path(os.devnull), "discarded\n")
    assert Path(os.devnull).exists() and not Path(os.devnull).is_file()  # still the device


def test_a_link_is_never_written_through(tmp_path: Path) -> None:
    # Issue #19: a checkout can hold links a pull request committed; casegate's writes
    # never follow one (it used to write the file the link named).
    (tmp_path / "real.md").write_text("old")
    (tmp_path / "link.md").symlink_to(tmp_path / "real.md")
    with pytest.raises(OutputError, match=r"link\.md: is a symbolic link"):
        write_text(tmp_path / "link.md", "new")
    assert (tmp_path / "real.md").read_text() == "old"
    (tmp_path / "dangling.md").symlink_to(tmp_path / "nowhere.md")
    with pytest.raises(OutputError, match="is a symbolic link"):
        write_bytes(tmp_path / "dangling.md", b"new")
    assert not (tmp_path / "nowhere.md").exists()


def test_a_folder_link_below_the_working_directory_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    Path(".casegate").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OutputError, match=r"the folder .*\.casegate on its way"):
        write_text(Path(".casegate") / "report.md", "x")
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_link_to_a_device_is_written_as_a_stream(tmp_path: Path) -> None:
    (tmp_path / "sink").symlink_to(os.devnull)
    write_text(tmp_path / "sink", "discarded")
    assert (tmp_path / "sink").is_symlink()
