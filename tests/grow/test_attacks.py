"""The source files are the production world's, so untrusted: each attack is refused
with one `file:line: problem` line naming the shape expected, or written as plain text."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.cli import main
from gate.grow.exchange import SourceError
from gate.grow.logs import read_log
from gate.grow.otel import read_otel
from gate.grow.platforms import read_langfuse, read_langsmith
from gate.grow.reading import MAX_LINE_BYTES
from gate.suite.cases import load_cases
from gate.yamlfile import load_yaml
from tests.conftest import Project, case


def line(text: str) -> str:
    request = {"model": "m", "messages": [{"role": "user", "content": text}]}
    response = {"choices": [{"message": {"role": "assistant", "content": text}}]}
    return json.dumps({"request": request, "response": response}) + "\n"


@pytest.fixture
def suite(project: Project) -> Project:
    project.write_cases([case("known", "what are your opening hours", contains="9")])
    return project


def test_a_line_past_the_limit_is_refused_by_its_number(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    log = suite.root / "huge.jsonl"
    log.write_text(line("hello") + '{"request": "' + "x" * (MAX_LINE_BYTES + 10) + '"}\n')
    assert main(["add", "--from-log", str(log), "--line", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"casegate: {log}:2: a line of 8.0 MB, more than the 8 MB")
    assert "expected a request-log line" in err and "Traceback" not in err


def test_deep_nesting_is_a_located_problem_not_a_recursion_error(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    log = suite.root / "deep.jsonl"
    log.write_text(line("hi") + "[" * 100_000 + "]" * 100_000 + "\n")
    assert main(["add", "--from-log", str(log)]) == 2
    err = capsys.readouterr().err
    assert f"{log}:2: not JSON (nested more than" in err and err.count("\n") == 1
    otel = suite.root / "deep.json"
    otel.write_text('{"resourceSpans": ' + "[" * 5000 + "]" * 5000 + "}")
    assert main(["add", "--from-otel", str(otel)]) == 2
    assert "nested more than" in capsys.readouterr().err


def test_a_line_of_another_shape_names_the_shape_expected(suite: Project) -> None:
    log = suite.root / "odd.jsonl"
    log.write_text(line("ok") + '{"prompt": "hi"}\n[1, 2]\nnot json\n')
    with pytest.raises(SourceError) as raised:
        read_log(log)
    problems = raised.value.problems
    assert problems[2] == (
        f"{log}:4: not JSON (Expecting value); expected a request-log line "
        '{"request": {"model", "messages": [...]}, "response": {chat completion}, "metadata"?: '
        '{...}} or a Batch API output line {"custom_id", "response": {"status_code", "body": '
        '{chat completion}}, "error"}'
    )
    assert [p.split(";")[0] for p in problems[:2]] == [
        f"{log}:2: no `request` object",
        f"{log}:3: a list, not an object",
    ]


@pytest.mark.parametrize("bad_id", ["../escape", "a/b", "..", "x y", "é"])
def test_an_id_that_is_a_path_is_refused_before_anything_is_read(
    suite: Project, bad_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    log = suite.root / "one.jsonl"
    log.write_text(line("new question about parcels"))
    assert main(["add", "--from-log", str(log), "--id", bad_id]) == 2
    assert "is not a case id" in capsys.readouterr().err
    assert (
        not list(suite.root.rglob("*escape*")) and not (suite.root.parent / "escape.yaml").exists()
    )


def test_yaml_in_the_text_stays_text(suite: Project) -> None:
    attack = (
        "!!python/object/apply:os.system ['touch pwned']\n- id: injected\n  expect: {}\n# {{ x }}"
    )
    log = suite.root / "yaml.jsonl"
    log.write_text(line(attack))
    assert main(["add", "--from-log", str(log), "--force"]) == 0
    [written] = [p for p in (suite.root / "cases").glob("*.yaml") if p.name != "cases.yaml"]
    [draft] = load_cases([written])
    assert draft.input == {"question": attack}
    assert draft.expect == {"not_contains": "!!python/object/apply:os.system ['touch pwned']"}
    assert not (suite.root / "pwned").exists()
    # the comment quoting the output is one line: the `- id: injected` stays inside it
    assert "\n- id: injected" not in written.read_text()


def test_escape_sequences_never_reach_the_terminal(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    log = suite.root / "ansi.jsonl"
    evil = "\x1b[2J\x1b]0;owned\x07reset\r\u202ebidi"
    request = {"model": "m", "messages": [{"role": "user", "content": evil}]}
    metadata = {"request_id": evil}
    log.write_text(json.dumps({"request": request, "response": None, "metadata": metadata}) + "\n")
    for args in (
        ["--dry-run"],
        ["--dry-run", "--rank"],
        ["--select", f"request_id={evil}"],
        ["--id", evil],
    ):
        main(["add", "--from-log", str(log), *args])
        out = capsys.readouterr()
        for stream in (out.out, out.err):
            assert "\x1b" not in stream and "\r" not in stream and "\u202e" not in stream
            assert "\x07" not in stream


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=25,
)
KEYS = [
    "request",
    "response",
    "metadata",
    "messages",
    "role",
    "content",
    "choices",
    "message",
    "custom_id",
    "body",
    "resourceSpans",
    "scopeSpans",
    "spans",
    "attributes",
    "key",
    "value",
    "stringValue",
    "events",
    "name",
    "id",
    "inputs",
    "outputs",
    "observations",
    "input",
    "output",
    "type",
    "data",
    "runs",
    "parts",
    "tool_calls",
    "usage",
]
SHAPED = st.recursive(
    st.none() | st.text(max_size=20) | st.integers(),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)
    ),
    max_leaves=30,
)


@given(record=st.one_of(JSON, SHAPED))
def test_no_json_line_makes_any_reader_raise_anything_but_a_source_error(
    tmp_path_factory: pytest.TempPathFactory, record: object
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "one.jsonl"
    path.write_text(json.dumps(record) + "\n")
    for reader in (read_log, read_otel, read_langsmith, read_langfuse):
        try:
            found = reader(path)
        except SourceError as exc:
            problems = exc.problems
        else:
            problems = []
            for exchange in found:
                assert isinstance(exchange.user_text(), str)
        assert all("\n" not in p and p.startswith(str(path)) for p in problems)


def test_a_file_past_the_limit_is_refused_unread(
    suite: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("gate.grow.reading.MAX_SOURCE_BYTES", 1_000_000)
    export = suite.root / "big.json"
    export.write_text(json.dumps({"resourceSpans": [], "pad": "x" * 1_500_000}))
    assert main(["add", "--from-otel", str(export)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"casegate: {export}: 1.5 MB, more than the 1 MB a source file may be: split it (one "
        "export per day or per service) and add from each part\n"
    )


def test_a_binary_file_and_a_file_name_with_escapes_are_one_plain_line(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    export = suite.root / "trace\x1b[31m.json"
    export.write_bytes(b'{"resourceSpans": []}\n\xff\xfe\x00')
    assert main(["add", "--from-langfuse", str(export)]) == 2
    err = capsys.readouterr().err
    assert (
        err == f"casegate: {suite.root}/trace\\x1b[31m.json:2: not UTF-8 text; export it as JSON\n"
    )
    assert main(["add", "--from-log", str(suite.root / "missing.jsonl")]) == 2
    assert capsys.readouterr().err == f"casegate: {suite.root}/missing.jsonl: no such file\n"


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(min_size=1, max_size=300).filter(str.strip))
def test_any_user_text_becomes_a_draft_that_reads_back_as_that_text(
    suite: Project, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    log = suite.root / "any.jsonl"
    log.write_text(line(text), encoding="utf-8")
    assert main(["add", "--from-log", str(log), "--dry-run", "--force"]) == 0
    printed = capsys.readouterr().out
    [draft] = load_yaml(printed)  # casegate's own reader of case files
    # JSON may carry a lone surrogate no file can hold: it reads back as U+FFFD
    assert draft["input"] == {"question": re.sub("[\ud800-\udfff]", "\ufffd", text)}
    assert draft["tags"] == ["regression"]


@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    record=st.one_of(JSON, SHAPED), source=st.sampled_from(["log", "otel", "langsmith", "langfuse"])
)
def test_no_json_line_makes_the_command_traceback(
    suite: Project, capsys: pytest.CaptureFixture[str], record: object, source: str
) -> None:
    path = suite.root / "any.jsonl"
    path.write_text(json.dumps(record) + "\n")
    for extra in ([], ["--rank"]):
        code = main(["add", f"--from-{source}", str(path), "--dry-run", "--force", *extra])
        assert code in (0, 2)
        err = capsys.readouterr().err
        assert "Traceback" not in err and (code == 0 or err.startswith("casegate: "))
