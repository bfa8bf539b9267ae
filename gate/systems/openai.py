"""`provider: openai` — the official `openai` SDK, Chat Completions or Responses.

`api: chat` (the default) is what every OpenAI-compatible server speaks (vLLM,
Ollama, LiteLLM, gateways); `api: responses` is OpenAI's Responses API.
`base_url` in the config, else the SDK's own OPENAI_BASE_URL, picks the server.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from gate.outputs import Output, ToolCall
from gate.systems.chat import (
    ChatProvider,
    Conversation,
    output_with_usage,
    parse_tool_call,
    raw_of,
    tool_parameters,
)

CHAT_PARAMS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "max_tokens": "max_tokens",
    "max_completion_tokens": "max_completion_tokens",
    "stop": "stop",
    "seed": "seed",
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
    "reasoning_effort": "reasoning_effort",
    "response_format": "response_format",
}
RESPONSES_PARAMS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "max_tokens": "max_output_tokens",
    "max_output_tokens": "max_output_tokens",
    "reasoning": "reasoning",
    "text": "text",
}
APIS = ("chat", "responses")


class OpenAISystem(ChatProvider):
    name: ClassVar[str] = "openai"
    sdk: ClassVar[str] = "openai"
    client_class: ClassVar[str] = "OpenAI"
    key_env: ClassVar[str] = "OPENAI_API_KEY"
    keys: ClassVar[frozenset[str]] = ChatProvider.keys | {"api"}
    params: ClassVar[dict[str, str]] = CHAT_PARAMS | RESPONSES_PARAMS

    @classmethod
    def problems(cls, system: Any) -> list[str]:
        api = (system.model_extra or {}).get("api", "chat")
        if api not in APIS:
            return [f"system.api must be 'chat' or 'responses', not {api!r}"]
        found = super().problems(system)
        table = CHAT_PARAMS if api == "chat" else RESPONSES_PARAMS
        for name in system.params:
            if name in cls.params and name not in table:
                found.append(f"system.params.{name}: the {api} API has no such parameter")
        return found

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.api = self.system.get("api", "chat")

    def api_params(self) -> dict[str, Any]:
        table = CHAT_PARAMS if self.api == "chat" else RESPONSES_PARAMS
        return {table[name]: value for name, value in self.system.get("params", {}).items()}

    def request(self, conversation: Conversation) -> dict[str, Any]:
        """The request body for one conversation, as the API (and its batch API) takes it."""
        if self.api == "responses":
            return responses_request(self.system, self.tools, self.api_params(), conversation)
        return chat_request(self.system, self.tools, self.api_params(), conversation)

    def send(self, conversation: Conversation) -> Any:
        body = self.request(conversation)
        if self.api == "responses":
            return self.client.responses.create(**body)
        return self.client.chat.completions.create(**body)

    def parse(self, response: Any) -> Output:
        if self.api == "responses":
            return parse_response(response)
        return parse_chat_completion(response)


def chat_request(
    system: Mapping[str, Any],
    tools: list[dict[str, Any]],
    params: dict[str, Any],
    conversation: Conversation,
) -> dict[str, Any]:
    """A Chat Completions request body."""
    extra = dict(params)
    messages = list(conversation.messages)
    if conversation.system is not None:
        messages.insert(0, {"role": "system", "content": conversation.system})
    if tools:
        extra["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "description": tool.get("description", ""),
                    "parameters": tool_parameters(tool),
                },
            }
            for tool in tools
        ]
    return {"model": system["model"], "messages": messages, **extra}


def responses_request(
    system: Mapping[str, Any],
    tools: list[dict[str, Any]],
    params: dict[str, Any],
    conversation: Conversation,
) -> dict[str, Any]:
    """A Responses request body."""
    extra = dict(params)
    if tools:
        extra["tools"] = [
            {
                "type": "function",
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": tool_parameters(tool),
            }
            for tool in tools
        ]
    if conversation.system is not None:
        extra["instructions"] = conversation.system
    return {"model": system["model"], "input": conversation.messages, **extra}


def parse_chat_completion(response: Any) -> Output:
    """An Output from a Chat Completions response (an SDK object, attribute access)."""
    choice = response.choices[0]
    message = choice.message
    calls = [
        parse_tool_call(call.function.name, call.function.arguments)
        for call in message.tool_calls or []
    ]
    usage = response.usage
    return Output(
        # A refusal arrives in its own field; the checks should see it as the answer.
        text=message.content or getattr(message, "refusal", None) or "",
        input_tokens=usage.prompt_tokens if usage else None,
        output_tokens=usage.completion_tokens if usage else None,
        model=response.model,
        stop_reason=choice.finish_reason,
        system_fingerprint=response.system_fingerprint,
        tool_calls=calls,
        raw=raw_of(response),
    )


def parse_response(response: Any) -> Output:
    """An Output from a Responses response (an SDK object, attribute access)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for item in response.output:
        if item.type == "message":
            texts.extend(part.text for part in item.content if part.type == "output_text")
        elif item.type == "function_call":
            calls.append(parse_tool_call(item.name, item.arguments))
    return output_with_usage(response, texts, calls, response.status)
