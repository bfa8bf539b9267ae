"""promptfoo's providers as casegate systems."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gate.importers.promptfoo.common import SYSTEMS_MODULE
from gate.importers.promptfoo.js import plain, scrubbed, shown_value, slug_of
from gate.importers.promptfoo.reading import Folder, line_at, problem_at

_PARAMS = (
    "temperature",
    "top_p",
    "top_k",
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "stop",
    "seed",
    "frequency_penalty",
    "presence_penalty",
    "reasoning_effort",
    "reasoning",
    "response_format",
    "text",
)
_OPENAI_KINDS = frozenset(
    {
        "completion",
        "embedding",
        "embeddings",
        "assistant",
        "realtime",
        "image",
        "moderation",
        "transcription",
        "agents",
        "chatkit",
        "video",
    }
)


@dataclass
class Provider:
    id: str
    label: str
    system: dict[str, Any]
    prompts: list[str] | None = None
    needs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    known: bool = True


def classify_provider(provider_id: str) -> tuple[str, str | None, str] | None:
    """(casegate provider, api, model) for an id casegate has an adapter for, else None."""
    parts = provider_id.split(":")
    if parts[0] == "openai" and len(parts) >= 2:
        if parts[1] in ("chat", "responses") and len(parts) >= 3 and ":".join(parts[2:]):
            return "openai", parts[1], ":".join(parts[2:])
        if len(parts) == 2 and parts[1] and parts[1] not in _OPENAI_KINDS | {"chat", "responses"}:
            return "openai", "chat", parts[1]
    if parts[0] == "anthropic" and len(parts) >= 2:
        if parts[1] == "messages" and len(parts) >= 3 and parts[2]:
            return "anthropic", None, ":".join(parts[2:])
        if (
            len(parts) == 2
            and parts[1].startswith("claude-")
            and not parts[1].startswith(("claude-agent-sdk", "claude-code"))
        ):
            return "anthropic", None, parts[1]
    return None


def _provider_options(raw: Any, folder: Folder, line: int | None) -> tuple[str, dict[str, Any]]:
    if (
        isinstance(raw, str)
        and raw.startswith("file://")
        and raw.endswith((".yaml", ".yml", ".json"))
    ):
        loaded = folder.document(raw, line, "providers")
        if isinstance(loaded, list) and len(loaded) == 1:
            loaded = loaded[0]
        return _provider_options(loaded, folder, line)
    if isinstance(raw, str):
        return raw, {}
    if isinstance(raw, dict) and isinstance(raw.get("id"), str):
        return raw["id"], dict(raw)
    if isinstance(raw, dict) and len(raw) == 1:
        ((key, value),) = raw.items()
        if isinstance(value, dict):
            return str(key), {"id": key, **value}
    raise problem_at(
        folder.config, line_at(raw) or line, "a provider must be an id or {id, config}"
    )


def _tools(raw: Any, folder: Folder, line: int | None, notes: list[str]) -> list[dict[str, Any]]:
    if isinstance(raw, str) and raw.startswith("file://"):
        raw = folder.document(raw, line, "providers.config.tools")
    tools: list[dict[str, Any]] = []
    for tool in raw if isinstance(raw, list) else []:
        spec = (
            tool.get("function")
            if isinstance(tool, dict) and tool.get("type") == "function"
            else tool
        )
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            parameters = spec.get("parameters", spec.get("input_schema"))
            converted: dict[str, Any] = {"name": spec["name"]}
            if isinstance(spec.get("description"), str):
                converted["description"] = spec["description"]
            if isinstance(parameters, dict):
                converted["parameters"] = plain(parameters)
            tools.append(converted)
        else:
            notes.append(
                f"tool {shown_value(tool, 80)} not carried over (casegate sends function tools)"
            )
    if not isinstance(raw, list):
        notes.append(f"tools {shown_value(raw, 80)} not carried over (not a list)")
    return tools


def system_problems(system: Mapping[str, Any]) -> list[str]:
    from gate import systems
    from gate.config import SystemConfig

    try:
        config = SystemConfig.model_validate({"name": "x", **system})
    except ValueError as exc:
        return [str(exc).splitlines()[0]]
    return systems.config_problems(config)


def _map_provider(raw: Any, folder: Folder, line: int | None, number: int) -> Provider:
    provider_id, options = _provider_options(raw, folder, line)
    label = str(options.get("label") or provider_id)
    config: dict[str, Any] = options["config"] if isinstance(options.get("config"), dict) else {}
    prompts = options.get("prompts")
    prompt_filter = [str(p) for p in prompts] if isinstance(prompts, list) else None
    name = slug_of(label) or f"provider-{number}"
    classified = classify_provider(provider_id)
    if classified is None:
        system = {
            "provider": "python",
            "target": f"{SYSTEMS_MODULE}:not_migrated",
            "promptfoo_provider": provider_id,
        }
        if config:
            system["promptfoo_config"] = plain(scrubbed(config))
        mapped = Provider(provider_id, name, system, prompt_filter, known=False)
        mapped.needs.append(
            f"provider `{provider_id}` has no casegate adapter: the config runs the stub "
            f"`{SYSTEMS_MODULE}:not_migrated`, which fails every case until a person writes it "
            "(or points the config at an OpenAI-compatible `base_url`)"
        )
        return mapped
    kind, api, model = classified
    chat: dict[str, Any] = {"provider": kind, **({"api": api} if api else {}), "model": model}
    mapped = Provider(provider_id, name, {**chat, "params": {}}, prompt_filter)
    _apply_config(mapped, config, folder, line)
    for key in sorted(set(options) - {"id", "label", "config", "prompts"}):
        if key == "transform":
            mapped.needs.append(
                f"provider `transform` {shown_value(options[key], 80)}: promptfoo rewrites every "
                "output with it before judging; casegate judges the output as the API returns it"
            )
        else:
            mapped.notes.append(f"provider option `{key}` not carried over")
    return mapped


def _apply_config(
    provider: Provider, config: Mapping[str, Any], folder: Folder, line: int | None
) -> None:
    system = provider.system
    for key, value in config.items():
        if key in _PARAMS or key == "stop_sequences":
            param = "stop" if key == "stop_sequences" else key
            trial = {**system, "params": {param: plain(value)}}
            if system_problems(trial):
                provider.notes.append(
                    f"config `{key}` not carried over: casegate does not send it to "
                    f"{system['provider']}"
                )
            else:
                system["params"][param] = plain(value)
        elif key == "apiKey":
            provider.notes.append(
                "config `apiKey` not copied (a key never goes into a casegate file): export it "
                f"as {'OPENAI_API_KEY' if system['provider'] == 'openai' else 'ANTHROPIC_API_KEY'}"
            )
        elif key == "apiKeyEnvar" and isinstance(value, str):
            system["api_key_env"] = value
        elif key in ("apiBaseUrl", "baseUrl", "apiHost") and isinstance(value, str):
            system["base_url"] = value if key != "apiHost" else f"https://{value}/v1"
        elif key == "tools":
            tools = _tools(value, folder, line, provider.notes)
            if tools and not system_problems({**system, "tools": tools}):
                system["tools"] = tools
            elif tools:
                provider.notes.append("tools not carried over: they are not valid casegate tools")
        else:
            provider.notes.append(f"config `{key}` not carried over (casegate has no such setting)")


def read_providers(config: Mapping[str, Any], folder: Folder) -> list[Provider]:
    raw = config.get("providers", config.get("targets"))
    line = line_at(config, "providers") or line_at(config, "targets")
    if raw is None:
        placeholder = Provider("(none)", "no-provider", {"provider": "python"}, known=False)
        placeholder.system.update(
            {"target": f"{SYSTEMS_MODULE}:not_migrated", "promptfoo_provider": "(none)"}
        )
        placeholder.needs.append("the config names no provider: the system is a stub")
        return [placeholder]
    if isinstance(raw, str) or (isinstance(raw, dict) and "id" in raw):
        raw = [raw]
    elif isinstance(raw, dict):  # {id: options, …}
        raw = [{key: value} for key, value in raw.items()]
    if not isinstance(raw, list) or not raw:
        raise problem_at(folder.config, line, "providers must be an id, or a list of providers")
    return [
        _map_provider(entry, folder, line_at(entry) or line, number)
        for number, entry in enumerate(raw, start=1)
    ]
