"""The OpenAI and Anthropic providers through the real SDKs, against a loopback server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.errors import ConfigError, SystemCallError
from gate.suite.config import SystemConfig, load_config
from gate.systems import config_problems, create
from tests.conftest import ANTHROPIC_KEY, OPENAI_KEY, Project, chat_system
from tests.fakes.llm_server import FakeLLMServer, Fault, Reply

PROVIDERS = ["openai", "anthropic"]
TOOLS = [
    {
        "name": "lookup_order",
        "description": "Find an order by number",
        "parameters": {
            "type": "object",
            "properties": {"order": {"type": "string"}},
            "required": ["order"],
        },
    }
]


def build(system: dict[str, Any]) -> Any:
    return create(system, Path("."), {})


@pytest.mark.parametrize("provider", PROVIDERS)
def test_template_prompt_and_usage(llm_server: FakeLLMServer, provider: str) -> None:
    output = build(chat_system(provider, llm_server)).complete("c1", {"question": "where?"})
    assert output.text == "echo: where?"
    assert (output.input_tokens, output.output_tokens) == (12, 7)
    assert output.model == "model-a"
    assert output.latency_ms is not None and output.latency_ms > 0
    assert output.raw is not None
    body = llm_server.received[-1].body
    if provider == "openai":
        assert body["messages"] == [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "where?"},
        ]
        assert output.system_fingerprint == "fp_fake1"
        assert output.stop_reason == "stop"
    else:
        assert body["system"] == "You are terse."
        assert body["messages"] == [{"role": "user", "content": "where?"}]
        assert body["max_tokens"] == 1024  # the Messages API requires one
        assert output.stop_reason == "end_turn"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_case_can_supply_the_whole_conversation(llm_server: FakeLLMServer, provider: str) -> None:
    turns = [
        {"role": "user", "content": "my order is late"},
        {"role": "assistant", "content": "Which order?"},
        {"role": "user", "content": "A-17"},
    ]
    output = build(chat_system(provider, llm_server)).complete("c", {"messages": turns})
    assert output.text == "echo: A-17"
    sent = llm_server.received[-1].body["messages"]
    assert sent[-3:] == turns


def test_params_map_onto_each_api(llm_server: FakeLLMServer) -> None:
    params = {"temperature": 0.2, "max_tokens": 50, "top_p": 0.9, "stop": "END"}
    build(chat_system("openai", llm_server, params={**params, "seed": 7})).complete(
        "c", {"question": "q"}
    )
    sent = llm_server.received[-1].body
    assert {k: sent[k] for k in ("temperature", "max_tokens", "top_p", "stop", "seed")} == {
        **params,
        "seed": 7,
    }

    build(chat_system("openai", llm_server, api="responses", params={"max_tokens": 50})).complete(
        "c", {"question": "q"}
    )
    received = llm_server.received[-1]
    assert received.path == "/v1/responses"
    assert received.body["max_output_tokens"] == 50
    assert received.body["instructions"] == "You are terse."

    build(chat_system("anthropic", llm_server, params=params)).complete("c", {"question": "q"})
    sent = llm_server.received[-1].body
    assert sent["stop_sequences"] == ["END"]
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"]) == (0.2, 0.9, 50)


@pytest.mark.parametrize(
    ("provider", "params", "message"),
    [
        ("openai", {"temprature": 0}, "system.params.temprature: not a parameter"),
        ("anthropic", {"seed": 1}, "has no seed"),
        ("openai", {"seed": 1, "api": None}, "the responses API has no such parameter"),
    ],
)
def test_an_unknown_param_is_a_config_problem(provider: str, params: Any, message: str) -> None:
    extra = {"api": "responses"} if "api" in params else {}
    params = {k: v for k, v in params.items() if k != "api"}
    system = SystemConfig.model_validate(
        {"name": "s", "provider": provider, "model": "m", "params": params, **extra}
    )
    assert any(message in problem for problem in config_problems(system))


def test_bad_tools_and_unknown_keys_are_config_problems() -> None:
    system = SystemConfig.model_validate(
        {
            "name": "s",
            "provider": "anthropic",
            "model": "m",
            "tools": [{"name": "t", "parameters": {"type": "objekt"}}, {"description": "x"}],
            "temprature": 1,
        }
    )
    problems = config_problems(system)
    assert any("system.tools[0].parameters is not a valid JSON Schema" in p for p in problems)
    assert any("system.tools[1] needs a `name`" in p for p in problems)
    assert any("unknown key 'system.temprature'" in p for p in problems)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_tools_are_sent_in_each_format_and_calls_recorded(
    llm_server: FakeLLMServer, provider: str
) -> None:
    # Anthropic sends arguments as an object; OpenAI as a JSON string, which can be broken.
    second = "{not json" if provider == "openai" else {"amount": 5}
    llm_server.reply = lambda received: Reply(
        text="", tool_calls=[("lookup_order", {"order": "A-17"}), ("refund", second)]
    )
    output = build(chat_system(provider, llm_server, tools=TOOLS)).complete("c", {"question": "q"})
    assert [call.name for call in output.tool_calls] == ["lookup_order", "refund"]
    assert output.tool_calls[0].arguments == {"order": "A-17"}
    sent_tool = llm_server.received[-1].body["tools"][0]
    if provider == "openai":
        assert sent_tool["type"] == "function"
        assert sent_tool["function"]["parameters"] == TOOLS[0]["parameters"]
        # Malformed arguments are kept and flagged, not silently emptied.
        assert output.tool_calls[1].invalid_arguments == "{not json"
    else:
        assert sent_tool["input_schema"] == TOOLS[0]["parameters"]
        assert output.tool_calls[1].arguments == {"amount": 5}


def test_responses_api_tool_calls(llm_server: FakeLLMServer) -> None:
    llm_server.reply = lambda received: Reply(text="ok", tool_calls=[("lookup_order", {"x": 1})])
    output = build(chat_system("openai", llm_server, api="responses", tools=TOOLS)).complete(
        "c", {"question": "q"}
    )
    assert output.text == "ok"
    assert output.tool_calls[0].arguments == {"x": 1}
    assert llm_server.received[-1].body["tools"][0]["name"] == "lookup_order"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_missing_key_names_the_variable(
    llm_server: FakeLLMServer, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ConfigError, match="MY_KEY is not set"):
        build(chat_system(provider, llm_server, api_key_env="MY_KEY"))
    assert llm_server.received == []


@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_with_retry_after_is_honoured(llm_server: FakeLLMServer, provider: str) -> None:
    llm_server.fail("slow down", Fault(429, headers={"retry-after": "1"}))
    output = build(chat_system(provider, llm_server)).complete("c", {"question": "slow down"})
    assert output.text == "echo: slow down"
    first, second = llm_server.received[-2:]
    assert second.at - first.at >= 0.95


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    "fault",
    [
        Fault(500),
        Fault(529),
        Fault(200, body="{this is not json"),
        Fault(200, body=json.dumps({"id": "x"})),
        Fault(200, hang_s=1.5, body="{}"),
    ],
    ids=["500", "529", "not-json", "missing-fields", "timeout"],
)
def test_transient_faults_are_retried_then_succeed(
    llm_server: FakeLLMServer, provider: str, fault: Fault
) -> None:
    llm_server.fail("flaky", fault)
    system = build(chat_system(provider, llm_server, timeout_s=1))
    assert system.complete("c", {"question": "flaky"}).text == "echo: flaky"
    assert len(llm_server.received) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_persistent_faults_become_an_error_with_the_reason(
    llm_server: FakeLLMServer, provider: str
) -> None:
    llm_server.fail("down", *[Fault(503, headers={"retry-after-ms": "10"})] * 3)
    with pytest.raises(SystemCallError, match=r"HTTP 503.*gave up after 3 attempts"):
        build(chat_system(provider, llm_server)).complete("c", {"question": "down"})


@pytest.mark.parametrize("provider", PROVIDERS)
def test_client_errors_are_not_retried_and_never_show_the_key(
    llm_server: FakeLLMServer, provider: str
) -> None:
    key = OPENAI_KEY if provider == "openai" else ANTHROPIC_KEY
    echo = json.dumps({"error": {"message": f"Incorrect API key provided: {key}"}})
    llm_server.fail("auth", Fault(401, body=echo))
    with pytest.raises(SystemCallError) as caught:
        build(chat_system(provider, llm_server)).complete("c", {"question": "auth"})
    assert "HTTP 401" in str(caught.value)
    assert "check the key in" in str(caught.value)
    assert key not in str(caught.value)
    assert len(llm_server.received) == 1


def test_connection_refused_is_an_error_after_retries(llm_server: FakeLLMServer) -> None:
    system = chat_system("openai", llm_server, base_url="http://127.0.0.1:9/v1", max_retries=1)
    with pytest.raises(SystemCallError, match=r"cannot reach the openai API.*2 attempts"):
        build(system).complete("c", {"question": "q"})


def test_a_case_without_message_or_messages_names_the_fix(llm_server: FakeLLMServer) -> None:
    system = chat_system("openai", llm_server)
    del system["message"]
    with pytest.raises(SystemCallError, match=r"set system\.message"):
        build(system).complete("c", {"question": "q"})
    with pytest.raises(SystemCallError, match=r"input.messages \[0\].role must be one of"):
        build(chat_system("openai", llm_server)).complete(
            "c", {"messages": [{"role": "robot", "content": "x"}]}
        )


@pytest.mark.parametrize(
    ("provider", "variable", "suffix"),
    [("openai", "OPENAI_BASE_URL", "/v1"), ("anthropic", "ANTHROPIC_BASE_URL", "")],
)
def test_the_sdks_own_base_url_variable_selects_the_server(
    llm_server: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    provider: str,
    variable: str,
    suffix: str,
) -> None:
    monkeypatch.setenv(variable, llm_server.url + suffix)
    system = chat_system(provider, llm_server)
    del system["base_url"]
    assert build(system).complete("c", {"question": "via env"}).text == "echo: via env"


def test_anthropic_takes_a_conversations_system_turns_after_the_prompt(
    llm_server: FakeLLMServer,
) -> None:
    turns = [
        {"role": "system", "content": "The customer is a VIP."},
        {"role": "user", "content": "hi"},
    ]
    build(chat_system("anthropic", llm_server)).complete("c", {"messages": turns})
    body = llm_server.received[-1].body
    assert body["system"] == "You are terse.\n\nThe customer is a VIP."
    assert body["messages"] == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_server_that_keeps_asking_for_an_hour_does_not_stall_the_run(
    llm_server: FakeLLMServer, provider: str
) -> None:
    llm_server.fail("busy", *[Fault(429, headers={"retry-after": "3600"})] * 5)
    system = build(chat_system(provider, llm_server, max_retries=4))  # max_wait_s: 300 s
    with pytest.raises(SystemCallError) as caught:
        system.complete("c", {"question": "busy"})
    assert "HTTP 429" in str(caught.value)
    assert "the server asked for a 3600 s pause, past this run's retry deadline" in str(
        caught.value
    )
    assert "system.max_wait_s" in str(caught.value)
    assert len(llm_server.received) == 1  # no retry was started, so none waited


@pytest.mark.parametrize("value", [-1, "soon", True, float("nan"), 100_000])
def test_max_wait_s_must_be_a_sane_number_of_seconds(value: object) -> None:
    system = SystemConfig.model_validate(
        {"name": "s", "provider": "openai", "model": "m", "max_wait_s": value}
    )
    assert "system.max_wait_s must be a number of seconds from 0 to 86400" in config_problems(
        system
    )
    fine = SystemConfig.model_validate(
        {"name": "s", "provider": "anthropic", "model": "m", "max_wait_s": 30}
    )
    assert config_problems(fine) == []


@pytest.mark.parametrize(
    ("typo", "hint"),
    [
        ("modle", " (did you mean 'model' or 'mode'?)"),  # a swap of two letters is one edit
        ("promt", " (did you mean 'prompt'?)"),
        ("zzzqqq", ""),
    ],
)
def test_an_unknown_system_key_names_the_keys_it_is_near(typo: str, hint: str) -> None:
    system = SystemConfig.model_validate(
        {"name": "s", "provider": "openai", "model": "m", typo: "x"}
    )
    assert f"unknown key 'system.{typo}' for provider 'openai'{hint}" in config_problems(system)


def test_a_typo_in_set_is_blamed_on_set_not_the_config(project: Project) -> None:
    """Issue #25 trap 6: `--set system.modle=…` was blamed on the config's line."""
    project.write_config(system={"name": "s", "provider": "openai", "model": "m"})
    with pytest.raises(ConfigError) as raised:
        load_config(project.config_path, ["system.modle=gpt-x"])
    assert str(raised.value) == (
        "--set system.modle=gpt-x: unknown key 'system.modle' for provider 'openai' "
        "(did you mean 'model' or 'mode'?)"
    )


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_case_with_input_files_is_refused_before_a_call(
    project: Project, llm_server: FakeLLMServer, provider: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A chat provider sends text only: a case that names files it would not attach is
    refused before the first paid call, not answered without them."""
    from gate.cli import main
    from tests.conftest import case

    project.write_config(system=chat_system(provider, llm_server))
    project.write_text("tickets/a.txt", "refund please")
    project.write_cases([case("a", "q", contains="x", fields_={"input_files": ["tickets/a.txt"]})])
    assert main(["run", "--mode", "live", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"case 'a' names input_files, which the {provider} provider does not send" in err
    assert llm_server.received == []
