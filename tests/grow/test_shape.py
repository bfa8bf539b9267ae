"""Mapping a request onto the suite's input shape (gate/grow/shape.py)."""

from __future__ import annotations

import pytest

from gate.cli import main
from gate.grow.exchange import Exchange, Message
from gate.grow.shape import shape_input
from tests.conftest import Project, case
from tests.grow.test_sources import DATA

CHAT = (
    Message("system", "You help."),
    Message("user", "first"),
    Message("assistant", "ok"),
    Message("user", "Where is order A12345?"),
)


def exchange(**fields: object) -> Exchange:
    return Exchange(kind="log", file="f", line=1, ids=(), messages=CHAT, **fields)  # type: ignore[arg-type]


def test_a_suite_of_one_text_key_gets_the_last_user_message() -> None:
    shaped = shape_input(exchange(), None, [{"message": "a"}, {"message": "b"}])
    assert shaped.input == {"message": "Where is order A12345?"} and shaped.differences == []


def test_a_suite_of_message_lists_keeps_the_conversation() -> None:
    shaped = shape_input(exchange(), None, [{"messages": [{"role": "user", "content": "x"}]}])
    assert shaped.input["messages"][0] == {"role": "system", "content": "You help."}
    assert [m["role"] for m in shaped.input["messages"]] == ["system", "user", "assistant", "user"]


def test_a_message_list_beside_other_keys_names_them_and_no_shared_key_takes_the_usual() -> None:
    shaped = shape_input(exchange(), None, [{"messages": [], "locale": "en"}])
    assert list(shaped.input) == ["messages"]
    assert shaped.differences == ["missing 'locale' (every case has it)"]
    mixed = [{"query": "a"}, {"query": "b"}, {"prompt": "c"}]
    assert shape_input(exchange(), None, mixed).input == {"query": "Where is order A12345?"}


def test_keys_the_request_cannot_fill_are_named() -> None:
    inputs = [
        {"question": "a", "order_id": "A1", "locale": "en"},
        {"question": "b", "order_id": "A2", "locale": "de"},
    ]
    shaped = shape_input(exchange(), None, inputs)
    assert shaped.input == {"question": "Where is order A12345?"}
    assert shaped.differences == [
        "missing 'locale' (every case has it)",
        "missing 'order_id' (every case has it)",
    ]


def test_the_sources_own_fields_fill_the_suites_keys_as_they_are() -> None:
    shaped = shape_input(
        exchange(fields={"question": "q", "order_id": "A9", "noise": "x"}),
        None,
        [{"question": "a", "order_id": "A1"}],
    )
    assert shaped.input == {"order_id": "A9", "question": "q"} and shaped.differences == []


def test_input_schema_wins_over_the_cases_and_names_what_does_not_fit() -> None:
    schema = {
        "type": "object",
        "required": ["query"],
        "properties": {"query": {"type": "string"}},
        "additionalProperties": False,
    }
    shaped = shape_input(exchange(), schema, [{"message": "a"}])
    assert shaped.input == {"query": "Where is order A12345?"} and shaped.differences == []
    strict = {
        **schema,
        "required": ["query", "tenant"],
        "properties": {**schema["properties"], "tenant": {"type": "string"}},
    }
    shaped = shape_input(exchange(), strict, [])
    assert shaped.differences == ["missing 'tenant'"]
    messages = {
        "type": "object",
        "required": ["messages"],
        "properties": {"messages": {"type": "array", "minItems": 1}},
    }
    assert "messages" in shape_input(exchange(), messages, []).input


def test_a_draft_that_does_not_fit_is_written_and_says_what_to_complete(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_config(
        input_schema={
            "type": "object",
            "required": ["question", "order_id"],
            "properties": {"question": {"type": "string"}, "order_id": {"type": "string"}},
        }
    )
    project.write_cases(
        [
            {
                **case("a", "hello"),
                "input": {"question": "hello", "order_id": "A1"},
                "expect": {"contains": "x"},
            }
        ]
    )
    assert main(["add", "--from-log", str(DATA / "requests.jsonl"), "--line", "2"]) == 0
    out = capsys.readouterr().err
    assert "requests.jsonl:2: input does not fit: missing 'order_id'" in out
    [written] = [p for p in (project.root / "cases").glob("*.yaml") if p.name != "cases.yaml"]
    assert (
        "  # DRAFT input: it does not fit the suite's shape; complete it:\n  # missing 'order_id'\n"
        in written.read_text()
    )


def test_a_broken_input_schema_is_refused_when_the_config_loads(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_config(input_schema={"type": "objekt"})
    project.write_cases([case("a", "hello", contains="x")])
    assert main(["validate"]) == 2
    assert "input_schema: not a JSON Schema" in capsys.readouterr().err
