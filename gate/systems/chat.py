"""What the OpenAI and Anthropic providers share: the conversation, params, tools, faults.

A request is built from the declared config only: the prompt is the system
turn, `message` (a Jinja2 template over the case input) is the user turn,
and a case whose input holds `messages` supplies the whole conversation.
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

from gate import secrets
from gate.errors import SystemCallError
from gate.outputs import Output, ToolCall
from gate.systems import Provider
from gate.systems.retry import DEFAULT_MAX_WAIT_S, RetryPolicy, Transient, retry_after_seconds

if TYPE_CHECKING:
    from pathlib import Path

    from gate.suite.config import SystemConfig

ROLES = ("system", "user", "assistant")
DEFAULT_MAX_RETRIES = 4
#: Exceptions that mean the response body was not what the API promises.
MALFORMED = (AttributeError, KeyError, TypeError, ValueError, IndexError)


@dataclass(frozen=True, slots=True)
class Conversation:
    system: str | None
    messages: list[dict[str, str]]


def conversation_for(
    system: Mapping[str, Any], case_id: str, case_input: Mapping[str, Any]
) -> Conversation:
    """The turns sent for one case; raises SystemCallError naming the case."""
    prompt = system.get("prompt")
    if "messages" in case_input:
        turns = case_input["messages"]
        problem = _messages_problem(turns)
        if problem:
            raise SystemCallError(f"case {case_id!r}: input.messages {problem}")
        return Conversation(prompt, [{"role": t["role"], "content": t["content"]} for t in turns])
    template = system.get("message")
    if template is None:
        raise SystemCallError(
            f"case {case_id!r}: the input has no `messages` and system.message is not set; "
            "set system.message to a template such as '{{ question }}'"
        )
    from gate.systems.templates import (
        render,  # Jinja2: a replay, which sends nothing, never loads it
    )

    return Conversation(
        prompt, [{"role": "user", "content": render(template, case_id, case_input)}]
    )


def _messages_problem(turns: Any) -> str | None:
    if not isinstance(turns, list) or not turns:
        return "must be a non-empty list of {role, content}"
    for index, turn in enumerate(turns):
        if not isinstance(turn, Mapping) or set(turn) != {"role", "content"}:
            return f"[{index}] must have exactly the keys role and content"
        if turn["role"] not in ROLES:
            return f"[{index}].role must be one of {', '.join(ROLES)}, not {turn['role']!r}"
        if not isinstance(turn["content"], str):
            return f"[{index}].content must be a string"
    if turns[-1]["role"] == "assistant":
        return "must end with a user turn, not an assistant turn"
    return None


def tool_problems(tools: Any) -> list[str]:
    if not isinstance(tools, list):
        return ["system.tools must be a list of {name, description, parameters}"]
    found = []
    for index, tool in enumerate(tools):
        where = f"system.tools[{index}]"
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            found.append(f"{where} needs a `name`")
            continue
        unknown = set(tool) - {"name", "description", "parameters"}
        if unknown:
            found.append(f"{where}: unknown key(s) {sorted(unknown)}")
        parameters = tool.get("parameters", {})
        import jsonschema  # here: its format checkers are slow to import

        try:
            jsonschema.Draft202012Validator.check_schema(parameters)
        except jsonschema.SchemaError as exc:
            found.append(f"{where}.parameters is not a valid JSON Schema: {exc.message}")
    return found


def tool_parameters(tool: Mapping[str, Any]) -> dict[str, Any]:
    return dict(tool.get("parameters") or {"type": "object", "properties": {}})


def parse_tool_call(name: str, arguments: Any) -> ToolCall:
    """A tool call from the API; arguments that are not a JSON object are kept, flagged."""
    if isinstance(arguments, Mapping):
        return ToolCall(name=name, arguments=dict(arguments))
    try:
        parsed = json.loads(arguments) if arguments else {}
    except (TypeError, ValueError):
        parsed = None
    if isinstance(parsed, dict):
        return ToolCall(name=name, arguments=parsed)
    return ToolCall(name=name, invalid_arguments=str(arguments))


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ChatProvider(Provider):
    """A hosted chat API reached through its official SDK (imported lazily)."""

    requires: ClassVar[tuple[str, ...]] = ("model",)
    keys: ClassVar[frozenset[str]] = frozenset(
        {"api_key_env", "base_url", "max_retries", "max_wait_s", "tools", "mode"}
    )
    calls_a_model: ClassVar[bool] = True
    #: the SDK module, its client class and the variable holding the key by default
    sdk: ClassVar[str]
    client_class: ClassVar[str]
    key_env: ClassVar[str]
    #: casegate param name → the API's name for it
    params: ClassVar[Mapping[str, str]]
    #: params the API does not have, with the reason given to the user
    unsupported: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def problems(cls, system: SystemConfig) -> list[str]:
        found = super().problems(system)
        for name in system.params:
            if name in cls.unsupported:
                found.append(f"system.params.{name}: {cls.unsupported[name]}")
            elif name not in cls.params:
                known = ", ".join(sorted(cls.params))
                found.append(
                    f"system.params.{name}: not a parameter casegate maps for provider "
                    f"{cls.name!r} (known: {known})"
                )
        extra = system.model_extra or {}
        if "tools" in extra:
            found.extend(tool_problems(extra["tools"]))
        retries = extra.get("max_retries", DEFAULT_MAX_RETRIES)
        if not isinstance(retries, int) or isinstance(retries, bool) or not 0 <= retries <= 20:
            found.append("system.max_retries must be a whole number from 0 to 20")
        mode = extra.get("mode", "batch")
        if mode != "batch":
            found.append(
                f"system.mode: {mode!r} is not a mode; `mode: batch` sends the suite through "
                f"the {cls.name} batch API (leave it out for one call per request)"
            )
        wait = extra.get("max_wait_s", DEFAULT_MAX_WAIT_S)
        if not isinstance(wait, int | float) or isinstance(wait, bool) or not 0 <= wait <= 86400:
            found.append("system.max_wait_s must be a number of seconds from 0 to 86400")
        return found

    @classmethod
    def preflight(cls, system: Mapping[str, Any], cases: Sequence[Any]) -> list[str]:
        found = []
        for case in cases:
            if getattr(case, "input_files", None):
                found.append(
                    f"{case.source}:{case.line}: case {case.id!r} names input_files, which the "
                    f"{cls.name} provider does not send (python and command systems read them): "
                    "use one of those, or remove input_files"
                )
                continue
            try:
                conversation_for(system, case.id, case.input)
            except SystemCallError as exc:
                found.append(f"{case.source}:{case.line}: {exc}")
        return found

    def __init__(self, system: dict[str, Any], root: Path, context: Mapping[str, Any]) -> None:
        self.system = system
        self.variable = system.get("api_key_env") or self.key_env
        what = str(context.get("what", "system"))
        self.key = secrets.read_key(self.variable, what)
        self.timeout_s = float(system.get("timeout_s", 60))
        self.base_url = system.get("base_url")
        self.tools = list(system.get("tools") or [])
        self.retry = RetryPolicy(
            int(system.get("max_retries", DEFAULT_MAX_RETRIES)),
            max_wait_s=float(system.get("max_wait_s", DEFAULT_MAX_WAIT_S)),
        )
        self.module = self._import_sdk()
        # The SDK's own retries are off: RetryPolicy is the one place that retries.
        self.client = self.make_client()

    def _import_sdk(self) -> ModuleType:
        # Imported on first use: `casegate --version` and replay never load an SDK.
        return importlib.import_module(self.sdk)

    def make_client(self) -> Any:
        options: dict[str, Any] = {"api_key": self.key, "timeout": self.timeout_s, "max_retries": 0}
        if self.base_url:
            options["base_url"] = self.base_url
        return getattr(self.module, self.client_class)(**options)

    def api_params(self) -> dict[str, Any]:
        return {self.params[name]: value for name, value in self.system.get("params", {}).items()}

    def complete(self, case_id: str, case_input: Mapping[str, Any]) -> Output:
        conversation = conversation_for(self.system, case_id, case_input)
        return self.retry.call(lambda: self._attempt(conversation))

    def _attempt(self, conversation: Conversation) -> Output:
        started = time.perf_counter()
        try:
            response = self.send(conversation)
        except Exception as exc:
            raise self.failure(exc) from None
        latency_ms = round((time.perf_counter() - started) * 1000, 3)
        try:
            output = self.parse(response)
        except MALFORMED as exc:
            raise Transient(f"malformed response body ({type(exc).__name__}: {exc})") from None
        output.latency_ms = latency_ms
        return output

    def request(self, conversation: Conversation) -> dict[str, Any]:
        """The request body for one conversation; shared by `send` and gate.produce.batch."""
        raise NotImplementedError

    def send(self, conversation: Conversation) -> Any:
        raise NotImplementedError

    def parse(self, response: Any) -> Output:
        raise NotImplementedError

    def failure(self, exc: Exception) -> Exception:
        """An SDK exception as a Transient (retry) or a SystemCallError (the case errs)."""
        sdk = self.module
        if isinstance(exc, sdk.APIStatusError):
            status = exc.status_code
            detail = secrets.redact(_short(str(getattr(exc, "message", exc))))
            reason = f"{self.name} API answered HTTP {status}: {detail}"
            if status in (408, 409, 429) or status >= 500:
                return Transient(reason, _retry_after(exc))
            if status in (401, 403):
                reason += f" (check the key in {self.variable})"
            return SystemCallError(reason)
        if isinstance(exc, sdk.APITimeoutError):
            return Transient(f"{self.name} API timed out after {self.timeout_s:g}s")
        if isinstance(exc, sdk.APIConnectionError):
            cause = exc.__cause__ or exc
            return Transient(f"cannot reach the {self.name} API: {_short(str(cause), 120)}")
        if isinstance(exc, MALFORMED):
            return Transient(f"malformed response body ({type(exc).__name__}: {_short(str(exc))})")
        return SystemCallError(secrets.redact(f"{type(exc).__name__}: {_short(str(exc))}"))


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    return retry_after_seconds(getattr(response, "headers", None))


def raw_of(response: Any) -> Any:
    """The response as plain JSON for forensics; never asserted on."""
    dump: Callable[..., Any] | None = getattr(response, "model_dump", None)
    return dump(mode="json", exclude_none=True, warnings=False) if dump else None


def output_with_usage(response: Any, texts: list[str], calls: list[ToolCall], stop: Any) -> Output:
    """An Output from a response whose usage says input_tokens/output_tokens (Anthropic,
    OpenAI Responses)."""
    usage = response.usage
    return Output(
        text="".join(texts),
        input_tokens=usage.input_tokens if usage else None,
        output_tokens=usage.output_tokens if usage else None,
        model=response.model,
        stop_reason=stop,
        tool_calls=calls,
        raw=raw_of(response),
    )
