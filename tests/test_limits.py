"""gate/limits.py: a case, config, results or recording file past its size limit is refused
unread, in one line naming it and the limit, and the CLI exits 2.

The oversized files are sparse: real text, then zeros up to the size. Parsed, the zeros
would be a syntax or encoding error; the size message proves nothing was parsed.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import pytest

from gate.cli import main
from gate.errors import CaseFileError, ConfigError, ResultsError
from gate.limits import (
    MAX_CASE_FILE_BYTES,
    MAX_CONFIG_BYTES,
    MAX_RECORDING_BYTES,
    MAX_RESULTS_BYTES,
    MB,
    read_limited,
)
from gate.produce.recordings import RecordingStore
from gate.results import read_results, write_results
from gate.suite.cases import load_cases
from gate.suite.config import load_config
from tests.conftest import Project
from tests.factories import result, run


def inflate(path: Path, size: int) -> Path:
    """`path` grown to `size` bytes with zeros, without writing them (a sparse file)."""
    os.truncate(path, size)
    return path


def test_the_limits_are_documented_figures() -> None:
    assert (MAX_CASE_FILE_BYTES, MAX_CONFIG_BYTES, MAX_RECORDING_BYTES) == (20 * MB,) * 3
    assert MAX_RESULTS_BYTES == 256 * MB


def test_a_case_file_over_the_limit_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "ok.yaml").write_text("- {id: a, input: {}, expect: {json: true}}\n")
    big = tmp_path / "cases" / "big.yaml"
    big.parent.mkdir()
    big.write_text("- {id: b, input: {}, expect: {json: true}}\n")
    inflate(big, MAX_CASE_FILE_BYTES + 5 * MB)
    with pytest.raises(CaseFileError) as caught:
        load_cases([tmp_path / "ok.yaml", big], display_root=tmp_path)
    assert caught.value.problems == [
        "cases/big.yaml: 25.0 MB, more than the 20 MB a case file may be: split it into "
        "several files (`cases:` takes folders and globs)"
    ]
    inflate(big, MAX_CASE_FILE_BYTES)  # at the limit: read, and its zeros are refused
    with pytest.raises(CaseFileError) as caught:
        load_cases([big], display_root=tmp_path)
    assert "MB" not in caught.value.problems[0]


def test_a_jsonl_case_file_over_the_limit_is_refused_too(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    big.write_text('{"id": "a", "input": {}, "expect": {"json": true}}\n')
    inflate(big, MAX_CASE_FILE_BYTES + 1)
    with pytest.raises(CaseFileError) as caught:
        load_cases([big], display_root=tmp_path)
    assert caught.value.problems[0].startswith("big.jsonl: 20.0 MB, more than the 20 MB a case")


def test_an_oversized_case_file_is_exit_2_through_the_cli(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    big = project.write_cases([{"id": "a", "input": {}, "expect": {"json": True}}])
    inflate(big, 21 * MB)
    assert main(["validate"]) == 2
    assert capsys.readouterr().err == (
        "casegate: cases/cases.yaml: 21.0 MB, more than the 20 MB a case file may be: split "
        "it into several files (`cases:` takes folders and globs)\n"
    )


def test_a_config_over_the_limit_is_refused_by_name(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    inflate(project.config_path, MAX_CONFIG_BYTES + 5 * MB)
    with pytest.raises(ConfigError) as caught:
        load_config(project.config_path)
    assert caught.value.problems == [
        f"{project.config_path}: 25.0 MB, more than the 20 MB a config may be: is it the "
        "config you meant? (pass -c PATH)"
    ]
    assert main(["validate"]) == 2
    assert "casegate.yml: 25.0 MB, more than the 20 MB a config may be" in capsys.readouterr().err


def test_a_results_file_over_the_limit_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = tmp_path / "small.json"
    write_results(run([result("a")]), small)
    big = tmp_path / "big.json"
    write_results(run([result("a")]), big)
    inflate(big, MAX_RESULTS_BYTES + 44 * MB)
    with pytest.raises(ResultsError) as caught:
        read_results(big)
    assert caught.value.problems == [
        f"{big}: 300.0 MB, more than the 256 MB a results file may be: is it a results file? "
        "(`casegate run --out PATH` writes one)"
    ]
    assert main(["compare", str(big), str(small)]) == 2
    assert "big.json: 300.0 MB, more than the 256 MB" in capsys.readouterr().err
    assert read_results(small).cases[0].id == "a"


def test_a_recording_over_the_limit_is_refused_by_name(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path)
    path = store.path_for("a")
    path.write_text('{"schema": "casegate.recording/1", "case": "a", "responses": {}}')
    store.read_file(path)
    inflate(path, MAX_RECORDING_BYTES + 5 * MB)
    with pytest.raises(ResultsError) as caught:
        store.read_file(path)
    assert caught.value.problems == [
        f"{path}: 25.0 MB, more than the 20 MB a recording may be: delete it and re-record "
        "(`casegate record`)"
    ]


def test_a_stream_of_unknown_size_is_cut_off_past_the_limit(tmp_path: Path) -> None:
    # A pipe says nothing of its size: the limit holds on what is read.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed(size: int) -> None:
        # The reader stops past the limit and closes its end: the rest is a broken pipe.
        with contextlib.suppress(BrokenPipeError), fifo.open("wb") as stream:
            stream.write(b"x" * size)

    for size, refused in ((1000, False), (1001, True), (300_000, True)):
        writer = threading.Thread(target=feed, args=(size,))
        writer.start()
        try:
            if refused:
                with pytest.raises(CaseFileError) as caught:
                    read_limited(fifo, 1000, "a case file", "fix it", CaseFileError)
                assert caught.value.problems[0].startswith(f"{fifo}: 0.0 MB, more than the 0 MB")
            else:
                assert read_limited(fifo, 1000, "a case file", "fix it", CaseFileError) == (
                    b"x" * size
                )
        finally:
            writer.join()


def test_a_case_file_keeps_its_lines_whatever_its_line_ends(tmp_path: Path) -> None:
    # Read as bytes now, not through open()'s newline translation: \r\n and \r are still
    # line ends, in YAML (libyaml's own rule) and in JSONL.
    text = (
        "- id: a\r\n  input: {}\r\n  expect: {json: true}\r\n- id: b\r  input: {}\r  expect: {}\r"
    )
    (tmp_path / "crlf.yaml").write_bytes(text.encode())
    jsonl = '{"id": "c", "input": {}, "expect": {"json": true}}\r\n\r{"id": "d", "expect": {}}\r'
    (tmp_path / "crlf.jsonl").write_bytes(jsonl.encode())
    with pytest.raises(CaseFileError) as caught:
        load_cases([tmp_path / "crlf.yaml", tmp_path / "crlf.jsonl"], display_root=tmp_path)
    assert [problem.split(" case")[0] for problem in caught.value.problems] == [
        "crlf.yaml:6:",
        "crlf.jsonl:3:",
    ]


def test_a_jsonl_case_keeps_a_raw_line_separator_inside_its_strings(tmp_path: Path) -> None:
    # JSON allows U+2028, U+2029 and U+0085 unescaped in a string: they end no line.
    text = '{"id": "a", "input": {"q": "x\u2028y\u2029z\x85"}, "expect": {"json": true}}\n'
    (tmp_path / "odd.jsonl").write_text(text + text.replace('"a"', '"b"'), encoding="utf-8")
    cases = load_cases([tmp_path / "odd.jsonl"], display_root=tmp_path)
    assert [(case.id, case.input["q"], case.line) for case in cases] == [
        ("a", "x\u2028y\u2029z\x85", 1),
        ("b", "x\u2028y\u2029z\x85", 2),
    ]
