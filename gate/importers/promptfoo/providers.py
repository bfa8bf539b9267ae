"""promptfoo's providers as casegate systems."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gate.importers.promptfoo.common import SYSTEMS_MODULE
from gate.importers.promptfoo.js import plain, shown_value, slug_of
from gate.importers.promptfoo.reading import Folder, line_at, problem_at
from gate.importers.promptfoo.sensitive import (
    Endpoint,
    host_of,
    names_endpoint,
    names_secret,
    names_variable,
    shown_endpoint,
    words,
)
from gate.yamlfile import printable

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


#: The hosts a provider's own key is meant for; any other is a third party's.
OWN_HOSTS = {"openai": frozenset({"api.openai.com"}), "anthropic": frozenset({"api.anthropic.com"})}
DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


@dataclass
class Provider:
    id: str
    label: str
    system: dict[str, Any]
    prompts: list[str] | None = None
    needs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    known: bool = True
    #: not copied: written commented out in its config, listed in MIGRATION.md
    endpoints: list[Endpoint] = field(default_factory=list)
    #: the provider's own settings (config keys, options) and how many became casegate's
    settings: int = 0
    settings_mapped: int = 0
    #: where promptfoo sent its requests when that is not the provider's own host
    foreign_host: str | None = None


@dataclass
class Pin:
    """The judge pin written for llm-rubric cases, and the grader endpoints it left out."""

    settings: dict[str, Any]
    endpoints: list[Endpoint] = field(default_factory=list)
    foreign_host: str | None = None


def config_endpoint(key: str, value: Any, prefix: str = "") -> Endpoint:
    """An endpoint setting of promptfoo's, with casegate's equivalent when it has one."""
    parts = words(key)
    shown = shown_endpoint(value)
    setting: str | None = None
    if names_variable(key, value):
        setting = "api_key_env"
    elif parts[-1:] in (["url"], ["base"]) and ("base" in parts or "api" in parts):
        setting = "base_url"  # apiBaseUrl, baseUrl, base_url, OPENAI_API_BASE, OPENAI_BASE_URL
    elif parts[-1:] == ["host"] and isinstance(value, str):
        setting = "base_url"  # promptfoo's apiHost: requests go to https://{apiHost}/v1
        shown = shown_endpoint(f"https://{value.strip()}/v1")
    host = None if setting == "api_key_env" else host_of(key, value)
    return Endpoint(prefix + key, shown, setting, host)


def foreign_host(kind: str, endpoints: Sequence[Endpoint]) -> str | None:
    """The host (or a description of it) a request would reach that is not `kind`'s own."""
    for endpoint in endpoints:
        if endpoint.setting == "api_key_env":
            continue  # where the key is read from, not where it goes
        if endpoint.host is None:
            return f"the host in `{endpoint.path}`"
        if endpoint.host not in OWN_HOSTS.get(kind, ()):
            return endpoint.host
    return None


def key_placeholder(host: str) -> str:
    """An `api_key_env` no one has set, so nothing runs until a person chooses the key."""
    named = host if " " not in host else "the-host-promptfoo-named"
    return f"SET-A-KEY-VARIABLE-FOR-{named}"


def foreign_key_advice(kind: str, host: str) -> str:
    return (
        f"set `api_key_env` to a variable holding the key for {host}, chosen deliberately "
        f"(never {DEFAULT_KEY_ENV.get(kind, 'the provider’s own key variable')}: it would send "
        f"that key to {host})"
    )


def environment_endpoints(env: Any, prefix: str = "env.") -> list[Endpoint]:
    """The endpoints in promptfoo's `env:` block (`OPENAI_BASE_URL`, `HTTPS_PROXY`…)."""
    if not isinstance(env, Mapping):
        return []
    return [
        config_endpoint(str(key), value, prefix)
        for key, value in env.items()
        if names_endpoint(key, value) and not names_secret(key)
    ]


def _is_secret(key: object, value: object) -> bool:
    return names_secret(key) and not names_variable(key, value)


def connection(
    kind: str, config: Mapping[str, Any], inherited: Sequence[Endpoint]
) -> tuple[list[Endpoint], str | None]:
    """A chat provider's endpoints (the config's and the `env:` ones that reach it), and the
    host its requests went to when that is not the provider's own."""
    endpoints = [
        config_endpoint(str(key), value, "config.")
        for key, value in config.items()
        if not _is_secret(key, value) and names_endpoint(key, value)
    ]  # first: promptfoo prefers the config's to the environment's
    endpoints += [endpoint for endpoint in inherited if _applies_to(endpoint, kind)]
    return endpoints, foreign_host(kind, endpoints)


def _applies_to(endpoint: Endpoint, kind: str | None) -> bool:
    """Whether an `env:` endpoint reaches this kind of provider (its prefix, or none)."""
    name = endpoint.path.rpartition(".")[2].upper()
    owners = {"openai": "OPENAI_", "anthropic": "ANTHROPIC_"}
    for owner, prefix in owners.items():
        if name.startswith(prefix):
            return kind == owner
    return True


def without_endpoints(value: Any, path: str, found: list[Endpoint]) -> Any:
    """`value` (a provider config) without its endpoints, which are added to `found`."""
    if isinstance(value, Mapping):
        kept: dict[str, Any] = {}
        for key, item in value.items():
            where = f"{path}.{printable(str(key))}" if path else printable(str(key))
            if names_endpoint(key, item) and not _is_secret(key, item):
                found.append(Endpoint(where, shown_endpoint(item)))
            else:
                kept[str(key)] = without_endpoints(item, where, found)
        return kept
    if isinstance(value, list):
        items = []
        for index, item in enumerate(value):
            where = f"{path}[{index}]"
            if isinstance(item, str) and names_endpoint("", item):
                found.append(Endpoint(where, shown_endpoint(item)))
            else:
                items.append(without_endpoints(item, where, found))
        return items
    return value


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
    from gate.suite.config import SystemConfig

    try:
        config = SystemConfig.model_validate({"name": "x", **system})
    except ValueError as exc:
        return [str(exc).splitlines()[0]]
    return systems.config_problems(config)


def _map_provider(
    raw: Any, folder: Folder, line: int | None, number: int, inherited: Sequence[Endpoint]
) -> Provider:
    """One provider as a casegate system; `inherited`: the endpoints of the config's `env:`."""
    provider_id, options = _provider_options(raw, folder, line)
    label = str(options.get("label") or provider_id)
    config: dict[str, Any] = options["config"] if isinstance(options.get("config"), dict) else {}
    prompts = options.get("prompts")
    prompt_filter = [str(p) for p in prompts] if isinstance(prompts, list) else None
    name = slug_of(label) or f"provider-{number}"
    extra = sorted(set(options) - {"id", "label", "config", "prompts"})
    classified = classify_provider(provider_id)
    inherited = [*inherited, *environment_endpoints(options.get("env"))]
    if classified is None:
        system = {
            "provider": "python",
            "target": f"{SYSTEMS_MODULE}:not_migrated",
            "promptfoo_provider": provider_id,
        }
        mapped = Provider(provider_id, name, system, prompt_filter, known=False)
        mapped.endpoints.extend(e for e in inherited if _applies_to(e, None))
        if config:
            kept = without_endpoints(plain(config), "config", mapped.endpoints)
            if kept:
                system["promptfoo_config"] = kept
        mapped.settings = len(config) + len(extra)  # a stub: none of them is mapped
        mapped.needs.append(
            f"provider `{provider_id}` has no casegate adapter: the config runs the stub "
            f"`{SYSTEMS_MODULE}:not_migrated`, which fails every case until a person writes it "
            "(or points the config at an OpenAI-compatible `base_url`)"
        )
        return mapped
    kind, api, model = classified
    chat: dict[str, Any] = {"provider": kind, **({"api": api} if api else {}), "model": model}
    mapped = Provider(provider_id, name, {**chat, "params": {}}, prompt_filter)
    mapped.endpoints, mapped.foreign_host = connection(kind, config, inherited)
    _apply_config(mapped, config, folder, line)
    if mapped.foreign_host is not None:
        # Never the provider's own key variable: a person chooses the key for that host.
        mapped.system["api_key_env"] = key_placeholder(mapped.foreign_host)
    for key in extra:
        mapped.settings += 1
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
    """Carry the config's settings over; its endpoints are `provider.endpoints` already."""
    system = provider.system
    kind = str(system["provider"])
    for key, value in config.items():
        provider.settings += 1
        if _is_secret(key, value):
            provider.notes.append(_secret_note(str(key), kind, provider.foreign_host))
        elif names_endpoint(key, value):
            continue  # listed with the provider's endpoints, never copied
        elif key in _PARAMS or key == "stop_sequences":
            param = "stop" if key == "stop_sequences" else key
            trial = {**system, "params": {param: plain(value)}}
            if system_problems(trial):
                provider.notes.append(
                    f"config `{key}` not carried over: casegate does not send it to "
                    f"{system['provider']}"
                )
            else:
                system["params"][param] = plain(value)
                provider.settings_mapped += 1
        elif key == "tools":
            tools = _tools(value, folder, line, provider.notes)
            if tools and not system_problems({**system, "tools": tools}):
                system["tools"] = tools
                provider.settings_mapped += 1
            elif tools:
                provider.notes.append("tools not carried over: they are not valid casegate tools")
        else:
            provider.notes.append(f"config `{key}` not carried over (casegate has no such setting)")


def _secret_note(key: str, kind: str, host: str | None) -> str:
    """What to do about a dropped secret; the API key's variable is named, never its value."""
    note = (
        f"config `{key}` not copied (its name says it holds a secret, and a secret never goes "
        "into a casegate file)"
    )
    if "key" not in words(key):
        return note
    if host is not None:
        return f"{note}: it was the key for {host}; {foreign_key_advice(kind, host)}"
    return f"{note}: export it as {DEFAULT_KEY_ENV[kind]}"


def read_providers(
    config: Mapping[str, Any], folder: Folder, inherited: Sequence[Endpoint] = ()
) -> list[Provider]:
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
        _map_provider(entry, folder, line_at(entry) or line, number, inherited)
        for number, entry in enumerate(raw, start=1)
    ]
