"""gate.produce.batch's parts: the wait's schedule, result lines read from anything, the mapping
back to requests, the state file, batch prices and the config keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate.cli import main
from gate.errors import SystemCallError
from gate.outputs import Output
from gate.produce.batch import lines, poll, state
from gate.produce.batch.anthropic import AnthropicBatches
from gate.produce.batch.api import Line, Status
from gate.produce.batch.cost import batch_cost
from gate.produce.batch.mapping import map_results
from gate.produce.batch.openai import OpenAIBatches
from gate.suite.config import SystemConfig, load_config
from gate.systems import config_problems, create
from gate.systems.retry import Transient
from tests.conftest import ANTHROPIC_KEY, OPENAI_KEY, Project, case

HINT = "casegate batch resume b1"


class ScriptedBatch:
    """A BatchAPI that answers polls from a script: a Status, or an exception to raise."""

    provider = "openai"
    limit = 10

    def __init__(self, script: list[Status | Exception]) -> None:
        self.script = script
        self.polled = 0

    def submit(self, requests: Any) -> str:
        raise AssertionError("a wait never submits")

    def status(self, batch_id: str) -> Status:
        step = self.script[min(self.polled, len(self.script) - 1)]
        self.polled += 1
        if isinstance(step, Exception):
            raise step
        return step

    def results(self, batch_id: str, status: Status) -> list[Line]:
        return []


RUNNING = Status(ended=False, state="in_progress", finished=1)
ENDED = Status(ended=True, state="completed", finished=2)


def test_the_wait_doubles_from_one_second_to_a_minute_and_never_really_sleeps() -> None:
    slept: list[float] = []
    waiter = poll.Waiter(sleep=slept.append, clock=lambda: 0.0)
    api = ScriptedBatch([RUNNING] * 9 + [ENDED])
    status = poll.wait(api, "b1", 2, HINT, show_progress=False, waiter=waiter)
    assert status == ENDED
    assert slept == [1, 2, 4, 8, 16, 32, 60, 60, 60]
    assert waiter.pauses == slept


def test_transient_poll_failures_are_waited_out_then_give_up_with_the_resume_command() -> None:
    waiter = poll.Waiter(sleep=lambda s: None)
    api = ScriptedBatch([Transient("HTTP 503"), Transient("HTTP 503"), ENDED])
    assert poll.wait(api, "b1", 2, HINT, show_progress=False, waiter=waiter) == ENDED

    down = ScriptedBatch([Transient("HTTP 503")])
    with pytest.raises(poll.PollError) as raised:
        poll.wait(down, "b1", 2, HINT, show_progress=False, waiter=waiter)
    assert down.polled == poll.POLL_FAILURES
    assert raised.value.problems[-1] == HINT

    refused = ScriptedBatch([SystemCallError("HTTP 404: no such batch")])
    with pytest.raises(poll.PollError, match="cannot be polled: HTTP 404"):
        poll.wait(refused, "b1", 2, HINT, show_progress=False, waiter=waiter)
    assert refused.polled == 1


def test_ctrl_c_during_the_wait_returns_none() -> None:
    def interrupt(seconds: float) -> None:
        raise KeyboardInterrupt

    api = ScriptedBatch([RUNNING])
    waiter = poll.Waiter(sleep=interrupt)
    assert poll.wait(api, "b1", 2, HINT, show_progress=False, waiter=waiter) is None


def test_progress_lines_count_finished_requests(capsys: pytest.CaptureFixture[str]) -> None:
    waiter = poll.Waiter(sleep=lambda s: None, clock=lambda: 0.0)
    script: list[Status | Exception] = [
        Status(ended=False, state="in_progress", finished=5, failed=1),
        Status(ended=True, state="ended", finished=10, failed=1),
    ]
    poll.wait(ScriptedBatch(script), "b1", 10, HINT, show_progress=True, waiter=waiter)
    err = capsys.readouterr().err
    assert "batch b1 5/10 (50%)" in err and "batch b1 10/10 (100%)" in err
    assert "1 error" in err


def entry(case_id: str, key: str, sample: int = 0) -> state.Entry:
    return state.Entry(case=case_id, key=key, sample=sample)


def a_state(count: int = 3) -> state.BatchState:
    requests = {state.custom_id(i, f"{i:024x}"): entry(f"c{i}", f"{i:024x}") for i in range(count)}
    return state.BatchState(
        provider="openai",
        batch_id="batch_1",
        suite="demo",
        config_hash="h",
        fingerprint="f",
        mode="live",
        submitted_at="2026-01-01T00:00:00+00:00",
        requests=requests,
    )


line_strategy = st.one_of(
    st.builds(
        Line,
        st.one_of(st.none(), st.sampled_from(list(a_state().requests)), st.text(max_size=8)),
        st.one_of(st.none(), st.builds(Output, text=st.text(max_size=5))),
        st.one_of(st.none(), st.text(max_size=10)),
    )
)


@given(st.lists(line_strategy, max_size=12), st.booleans())
def test_every_request_gets_exactly_one_answer_whatever_the_lines(
    found: list[Line], failed_batch: bool
) -> None:
    batch = a_state()
    status = Status(ended=True, state="x", problem="refused" if failed_batch else None)
    mapped = map_results(batch, found, status)
    assert set(mapped.answers) == set(batch.requests)
    for cid, (output, error) in mapped.answers.items():
        assert (output is None) != (error is None)
        if output is not None:
            mine = [line for line in found if line.custom_id == cid]
            assert len(mine) == 1 and mine[0].output is output and not failed_batch


@pytest.fixture(scope="module")
def adapters() -> tuple[OpenAIBatches, AnthropicBatches]:
    common = {"name": "t", "model": "m", "message": "{{ q }}", "mode": "batch"}
    # Nothing is sent: the base URL only keeps the clients off the real APIs.
    local = "http://127.0.0.1:9"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_API_KEY", OPENAI_KEY)
        env.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        openai = create({**common, "provider": "openai", "base_url": local}, Path("."), {})
        anthropic = create({**common, "provider": "anthropic", "base_url": local}, Path("."), {})
    return OpenAIBatches(openai), AnthropicBatches(anthropic)  # type: ignore[arg-type]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
shaped = st.fixed_dictionaries(
    {"custom_id": st.text(max_size=6)},
    optional={
        "result": st.fixed_dictionaries(
            {"type": st.sampled_from(["succeeded", "errored", "canceled", "expired", "x"])},
            optional={"message": json_values, "error": json_values},
        ),
        "response": st.fixed_dictionaries(
            {"status_code": st.sampled_from([200, 500, None])},
            optional={"body": json_values},
        ),
        "error": json_values,
    },
)


@given(st.lists(st.one_of(shaped, json_values), max_size=5), st.text(max_size=30))
def test_odd_result_lines_never_raise(
    adapters: tuple[OpenAIBatches, AnthropicBatches], items: list[Any], noise: str
) -> None:
    text = "\n".join([*(json.dumps(item) for item in items), noise])
    for adapter in adapters:
        for line in lines.split(text, adapter._line):
            assert (line.output is None) != (line.error is None)


def test_a_succeeded_line_is_parsed_as_a_call_s_response_would_be(
    adapters: tuple[OpenAIBatches, AnthropicBatches],
) -> None:
    openai, anthropic = adapters
    body = {
        "id": "x",
        "model": "m",
        "system_fingerprint": "fp",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c", "type": "function",
                         "function": {"name": "f", "arguments": '{"a": 1}'}}
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
    }  # fmt: skip
    line = {"custom_id": "r0-a", "response": {"status_code": 200, "body": body}}
    [parsed] = lines.split(json.dumps(line), openai._line)
    assert parsed.output is not None
    assert parsed.output.tool_calls[0].arguments == {"a": 1}
    assert (parsed.output.input_tokens, parsed.output.stop_reason) == (3, "tool_calls")
    assert parsed.output.system_fingerprint == "fp"
    message = {
        "id": "m",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 5, "output_tokens": 6},
    }
    result = {"custom_id": "r0-a", "result": {"type": "succeeded", "message": message}}
    [parsed] = lines.split(json.dumps(result), anthropic._line)
    assert parsed.output is not None
    assert (parsed.output.text, parsed.output.output_tokens) == ("hi", 6)


def test_a_state_file_round_trips_and_refuses_edits(tmp_path: Path) -> None:
    batch = a_state()
    path = state.write(tmp_path, batch)
    assert path == tmp_path / ".casegate" / "batches" / "batch_1.json"
    assert state.read(path) == batch
    document = json.loads(path.read_text())

    renamed = path.with_name("batch_2.json")
    renamed.write_text(path.read_text())
    with pytest.raises(state.StateError, match="holds batch 'batch_1', not 'batch_2'"):
        state.read(renamed)
    renamed.unlink()

    first = next(iter(document["requests"]))
    document["requests"][first]["key"] = "f" * 24
    path.write_text(json.dumps(document))
    with pytest.raises(state.StateError, match="was not submitted for case 'c0'"):
        state.read(path)

    path.write_text('{"schema": "casegate.batch/1", "api_key": "sk-1"}')
    with pytest.raises(state.StateError, match=r"not a casegate\.batch/1 file"):
        state.read(path)
    with pytest.raises(state.StateError, match="not a batch id"):
        state.path_for(tmp_path, "../x")


def test_pending_finds_only_an_uncollected_batch_of_the_same_requests(tmp_path: Path) -> None:
    batch = a_state()
    state.write(tmp_path, batch)
    same = batch.signature()
    assert state.pending(tmp_path, "openai", "h", "f", same) == batch
    assert state.pending(tmp_path, "anthropic", "h", "f", same) is None
    assert state.pending(tmp_path, "openai", "other", "f", same) is None
    assert state.pending(tmp_path, "openai", "h", "f", same - {("c0", f"{0:024x}", 0)}) is None
    batch.status = "collected"
    state.write(tmp_path, batch)
    assert state.pending(tmp_path, "openai", "h", "f", same) is None


def test_batch_prices_fall_back_to_the_normal_price_one_figure_at_a_time(
    project: Project,
) -> None:
    project.write_config(pricing={"m": {"input": 2.0, "output": 8.0, "batch_output": 4.0}})
    loaded = load_config(project.config_path)
    output = Output(text="x", model="m", input_tokens=10, output_tokens=10)
    cost, missing = batch_cost(loaded, output)
    assert cost == pytest.approx((10 * 2.0 + 10 * 4.0) / 1e6)
    assert missing == ["pricing.m.batch_input"]
    assert batch_cost(loaded, Output(text="x", model="other")) == (None, [])
    # Unset batch prices stay out of the results' config, so its hash is as before.
    assert "batch_input" not in json.dumps(loaded.as_dict())


def test_mode_is_batch_or_absent_and_only_for_openai_and_anthropic(
    project: Project, llm_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    system = SystemConfig(name="t", provider="openai", model="m", mode="fast")
    assert config_problems(system) == [
        "system.mode: 'fast' is not a mode; `mode: batch` sends the suite through the openai "
        "batch API (leave it out for one call per request)"
    ]
    assert (
        config_problems(SystemConfig(name="t", provider="anthropic", model="m", mode="batch")) == []
    )

    project.write_config(
        system={"name": "echo", "provider": "python", "target": f"{project.module}:answer",
                "mode": "batch"}
    )  # fmt: skip
    project.write_cases([case("a", "hello", contains="hello")])
    for command in (["validate"], ["record"]):  # refused before any run
        assert main(command) == 2
        refused = capsys.readouterr().err
        assert "system.mode: batch works with providers anthropic and openai" in refused
        assert "not 'python': remove `mode: batch`" in refused
    assert not (project.root / "recordings").exists()
