"""The declared run configuration (`casegate.yml`) and its `--set` overrides."""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gate.errors import ConfigError, located
from gate.judge import JudgePin, pin_problems
from gate.yamlfile import LineDict, YamlSyntaxError, line_of, load_yaml

DEFAULT_CONFIG = "casegate.yml"
Mode = Literal["replay", "record", "live"]
MODES: tuple[str, ...] = ("replay", "record", "live")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SystemConfig(BaseModel):
    """The system under test. Providers declare which extra keys they accept."""

    model_config = ConfigDict(extra="allow")

    name: str
    provider: str
    target: str | None = None
    command: list[str] | str | None = None
    model: str | None = None
    prompt: str | None = None
    prompt_file: str | None = None
    message: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    timeout_s: float = Field(default=60.0, gt=0)


class GateConfig(_Strict):
    block_on_critical_regression: bool = True
    block_on_critical_failure: bool = False
    block_on_pass_rate_drop: bool = True
    tolerance: float = Field(default=0.0, ge=0, le=1)
    block_on_errors: bool = True
    max_cost_increase: float | None = Field(default=None, ge=0)
    max_latency_p95_increase: float | None = Field(default=None, ge=0)
    # With repeated samples (either run has a case with samples > 1):
    alpha: float = Field(default=0.02, gt=0, lt=1)
    alpha_critical: float = Field(default=0.05, gt=0, lt=1)
    non_inferiority_margin: float = Field(default=0.03, ge=0, le=1)
    on_inconclusive: Literal["ship", "block"] = "ship"
    confirm_samples: int = Field(default=20, ge=2, le=1000)
    # A critical case that fails with no valid baseline verdict to compare against.
    block_on_critical_without_baseline: bool = True
    #: the pull-request label that accepts a loosening ruler change (read from the base)
    accept_label: str = Field(
        default="casegate:accept-ruler-change", min_length=1, max_length=50, pattern=r"^[^\r\n]+$"
    )


class AdaptiveConfig(_Strict):
    """`samples: auto`: start small, spend more samples only where the verdict is open."""

    start: int = Field(default=4, ge=1)
    step: int = Field(default=4, ge=1)
    max: int = Field(default=20, ge=2)


class Price(_Strict):
    """Prices per million tokens; the tool ships none, since they go stale."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)


class Config(_Strict):
    suite: str = Field(min_length=1)
    cases: list[str]
    system: SystemConfig
    samples: int | Literal["auto"] = Field(default=1)
    adaptive: AdaptiveConfig = Field(default_factory=AdaptiveConfig)
    min_pass_rate: float = Field(default=1.0, ge=0, le=1)
    concurrency: int = Field(default=8, ge=1, le=256)
    mode: Mode = "replay"
    recordings: str | None = None
    baseline: str | None = None
    gate: GateConfig = Field(default_factory=GateConfig)
    pricing: dict[str, Price] = Field(default_factory=dict)
    judge: JudgePin | None = None

    @field_validator("cases", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class LoadedConfig:
    """A validated config plus where it lives and what was overridden."""

    def __init__(self, config: Config, path: Path, overrides: list[str]) -> None:
        self.config = config
        self.path = path
        self.root = path.resolve().parent
        self.overrides = overrides
        #: things worth saying that do not stop the run
        self.warnings: list[str] = []

    def resolve(self, relative: str) -> Path:
        return (self.root / relative).resolve()

    @property
    def recordings_dir(self) -> Path:
        return self.resolve(self.config.recordings or f"recordings/{self.config.suite}")

    @property
    def baseline_path(self) -> Path | None:
        return self.resolve(self.config.baseline) if self.config.baseline else None

    def resolved_system(self) -> dict[str, Any]:
        """The system mapping as the provider sees it: prompt text read, overrides applied."""
        system = self.config.system.model_dump(exclude_none=True)
        if "prompt_file" in system:
            system["prompt"] = self.resolve(system["prompt_file"]).read_text(encoding="utf-8")
        return system

    def as_dict(self) -> dict[str, Any]:
        data = self.config.model_dump(mode="json")
        data["system"] = self.resolved_system()
        return data

    def cost_of(
        self, model: str | None, input_tokens: int | None, output_tokens: int | None
    ) -> float | None:
        """Cost from the pricing table, or None when the model or usage is unknown."""
        price = self.config.pricing.get(model or "") or self.config.pricing.get(
            self.config.system.model or ""
        )
        if price is None or (input_tokens is None and output_tokens is None):
            return None
        return ((input_tokens or 0) * price.input + (output_tokens or 0) * price.output) / 1e6

    def config_hash(self) -> str:
        blob = json.dumps(self.as_dict(), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def parse_override(text: str) -> tuple[list[str], Any]:
    """`system.params.temperature=0.2` → (["system", "params", "temperature"], 0.2)."""
    key, sep, raw_value = text.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise ConfigError(f"--set {text!r}: expected key.path=value, e.g. system.model=gpt-4.1")
    try:
        value = yaml.safe_load(raw_value) if raw_value.strip() else ""
    except yaml.YAMLError:
        value = raw_value
    if isinstance(value, dict | list) and raw_value.strip()[:1] not in "{[":
        value = raw_value
    return key.split("."), value


def apply_overrides(data: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    data = copy.deepcopy(data)
    for text in overrides:
        path, value = parse_override(text)
        target = data
        for part in path[:-1]:
            child = target.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"--set {text!r}: {part!r} is not a mapping")
            target = child
        target[path[-1]] = value
    return data


def _problem_for(path: Path, raw: Any, error: Any) -> str:
    location = [str(part) for part in error["loc"]]
    node, line = raw, line_of(raw)
    for part in location:
        if isinstance(node, dict) and part in node:
            line = line_of(node, part) or line
            node = node[part]
        else:
            if isinstance(node, LineDict):
                line = node.line
            break
    where = ".".join(location)
    if error["type"] == "extra_forbidden":
        parent = Config.model_fields if len(location) == 1 else {}
        if location[:1] == ["gate"]:
            parent = GateConfig.model_fields
        hint = difflib.get_close_matches(location[-1], parent, n=1)
        message = f"unknown key {where!r}" + (f" (did you mean {hint[0]!r}?)" if hint else "")
    elif error["type"] == "missing":
        message = f"missing required key {where!r}"
    else:
        message = f"{where}: {error['msg']}"
    return located(path, line, message)


def load_config(path: Path, overrides: Sequence[str] = ()) -> LoadedConfig:
    """Read, override and validate a config; raises ConfigError naming file and line."""
    if not path.is_file():
        raise ConfigError(
            f"{path}: no such config file (pass -c PATH, or run `casegate init` to write one)"
        )
    try:
        raw = load_yaml(path.read_text(encoding="utf-8"))
    except YamlSyntaxError as exc:
        raise ConfigError(located(path, exc.line, exc.message)) from None
    if not isinstance(raw, dict):
        raise ConfigError(located(path, 1, "the config must be a mapping of keys"))
    data = apply_overrides(raw, overrides) if overrides else raw
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError([_problem_for(path, data, error) for error in exc.errors()]) from None
    loaded = LoadedConfig(config, path, list(overrides))
    _check_system(loaded, raw)
    return loaded


def _check_system(loaded: LoadedConfig, raw: dict[str, Any]) -> None:
    from gate import systems  # the registry imports config types

    path, system = loaded.path, loaded.config.system
    line = line_of(raw.get("system"), "provider") or line_of(raw.get("system"))
    problems = []
    if system.prompt is not None and system.prompt_file is not None:
        problems.append(located(path, line, "system: give prompt or prompt_file, not both"))
    if system.prompt_file is not None and not loaded.resolve(system.prompt_file).is_file():
        problems.append(
            located(
                path,
                line_of(raw.get("system"), "prompt_file") or line,
                f"system.prompt_file: {system.prompt_file!r} does not exist",
            )
        )
    problems.extend(located(path, line, p) for p in systems.config_problems(system))
    pin = loaded.config.judge
    if pin is not None:
        judge_line = line_of(raw.get("judge"), "provider") or line_of(raw, "judge")
        problems.extend(located(path, judge_line, p) for p in pin_problems(pin))
        if (pin.provider, pin.model) == (system.provider, system.model):
            loaded.warnings.append(
                f"{path}: the judge is the system under test ({pin.provider} {pin.model}); "
                "a model grading itself tends to agree with itself — pin a different model"
            )
    if problems:
        raise ConfigError(problems)
