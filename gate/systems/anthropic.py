"""`provider: anthropic` — the official `anthropic` SDK, Messages API.

`base_url` in the config, else the SDK's own ANTHROPIC_BASE_URL, picks the server.
"""

from __future__ import annotations

from typing import Any, ClassVar

from gate.outputs import Output, ToolCall
from gate.systems.chat import (
    ChatProvider,
    Conversation,
    output_with_usage,
    parse_tool_call,
    tool_parameters,
)

#: The Messages API requires max_tokens; this applies when params do not set it.
DEFAULT_MAX_TOKENS = 1024
#: Sampling params the current SDK no longer declares (newer models reject them);
#: they go in the request body as given, so older models still receive them.
BODY_PARAMS = frozenset({"temperature", "top_p", "top_k"})


class AnthropicSystem(ChatProvider):
    name: ClassVar[str] = "anthropic"
    sdk: ClassVar[str] = "anthropic"
    client_class: ClassVar[str] = "Anthropic"
    key_env: ClassVar[str] = "ANTHROPIC_API_KEY"
    params: ClassVar[dict[str, str]] = {
        "max_tokens": "max_tokens",
        "stop": "stop_sequences",
        "temperature": "temperature",
        "top_p": "top_p",
        "top_k": "top_k",
    }
    unsupported: ClassVar[dict[str, str]] = {
        "seed": "the Anthropic Messages API has no seed; remove it",
    }

    def request(self, conversation: Conversation) -> dict[str, Any]:
        """The Messages request body for one conversation, as the API (and its Message
        Batches API, as a request's `params`) takes it."""
        system_turns = [m["content"] for m in conversation.messages if m["role"] == "system"]
        turns = [m for m in conversation.messages if m["role"] != "system"]
        # Anthropic takes the system prompt apart from the turns; a conversation's
        # own system turns follow the configured prompt.
        prompt = "\n\n".join(part for part in [conversation.system or "", *system_turns] if part)
        params = self.api_params()
        stop = params.get("stop_sequences")
        if isinstance(stop, str):
            params["stop_sequences"] = [stop]
        params.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
        if prompt:
            params["system"] = prompt
        if self.tools:
            params["tools"] = [
                {
                    "name": tool["name"],
                    "description": tool.get("description", ""),
                    "input_schema": tool_parameters(tool),
                }
                for tool in self.tools
            ]
        return {"model": self.system["model"], "messages": turns, **params}

    def send(self, conversation: Conversation) -> Any:
        params = self.request(conversation)
        body = {name: params.pop(name) for name in list(params) if name in BODY_PARAMS}
        if body:
            params["extra_body"] = body
        return self.client.messages.create(**params)

    def parse(self, response: Any) -> Output:
        return parse_message(response)


def parse_message(response: Any) -> Output:
    """An Output from a Messages response (an SDK object, attribute access)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in response.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(parse_tool_call(block.name, block.input))
    return output_with_usage(response, texts, calls, response.stop_reason)
