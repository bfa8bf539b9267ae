"""The declared run configuration (`casegate.yml`) and its `--set` overrides."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
)
from pydantic_core import PydanticCustomError

from gate.errors import ConfigError, located
from gate.limits import MAX_CONFIG_BYTES, read_limited
from gate.suite.configchecks import check_defaults, check_system, problem_for, read_prompt
from gate.suite.defaults import MAX_SAMPLES, SuiteDefaults
from gate.suite.judgepin import JudgePin
from gate.suite.overrides import (
    apply_overrides,
    parse_override,
)
from gate.suite.pins import EmbeddingsPin, ModerationPin
from gate.suite.sections import (
    AdaptiveConfig,
    CalibrationBar,
    ClustersConfig,
    DriftConfig,
    GateConfig,
    HistoryConfig,
    HoldoutConfig,
    Price,
    PrivacyConfig,
    RecordingsConfig,
    SystemConfig,
    _Strict,
    _without_unset,
)
from gate.yamlfile import YamlSyntaxError, load_yaml, printable

# With the sections most callers name beside the config: GateConfig, AdaptiveConfig and
# SystemConfig (gate.suite.sections holds every section).
__all__ = [
    "DEFAULT_CONFIG",
    "MODES",
    "RESULTS_KEYS",
    "SUITE_PATTERN",
    "AdaptiveConfig",
    "Config",
    "GateConfig",
    "LoadedConfig",
    "Mode",
    "SystemConfig",
    "apply_overrides",
    "load_config",
    "parse_override",
]

DEFAULT_CONFIG = "casegate.yml"
Mode = Literal["replay", "record", "live"]
MODES: tuple[str, ...] = ("replay", "record", "live")
#: The suite name is used in file names and in the pull-request comment's marker.
SUITE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
#: a baseline samples every case this many times a run's count (`adaptive.max` under auto)
BASELINE_FACTOR = 3


class Config(_Strict):
    #: the suite's name: letters, digits, `.`, `_` and `-`, at most 100; it names files
    #: and the pull-request comment's marker
    suite: str
    #: where the cases are: a file, a folder, a glob, or a list of them, relative to this file
    cases: list[str]
    #: the system under test, the one part that churns: its provider and how to call it
    system: SystemConfig
    #: samples per case (a case may set its own): 1 to 1000, or `auto` (drawn in rounds
    #: while a verdict is open, see `adaptive`)
    samples: int | Literal["auto"] = Field(default=1)
    #: the rounds of `samples: auto`: the first round's samples, each next round's, the most
    adaptive: AdaptiveConfig = Field(default_factory=AdaptiveConfig)
    #: samples per case a baseline is estimated from (Config.estimate_samples); None:
    #: three times a run's
    baseline_samples: int | None = Field(default=None, ge=1, le=MAX_SAMPLES, strict=True)
    #: derive every case's cluster (gate.deciding.noise.clusters); None: only declared ones
    clusters: ClustersConfig | None = None
    #: a case passes when its share of passing samples reaches this (a case may override)
    min_pass_rate: float = Field(default=1.0, ge=0, le=1, allow_inf_nan=False)
    #: calls in flight at once in live and record modes
    concurrency: int = Field(default=8, ge=1, le=256)
    #: `replay` (from recordings, no calls), `record` (call and store), `live` (call only)
    mode: Mode = "replay"
    #: `changed`: a pull request's replayed check records again, live, the requests whose
    #: recordings the change added or changed (gate.pipeline.verify); read from the base
    verify: Literal["off", "changed"] = "off"
    #: the recordings folder, or `{path, max_age_days}`; None: recordings/SUITE
    recordings: RecordingsConfig | None = None
    #: the committed baseline results file the candidate is compared with
    baseline: str | None = None
    #: the written gate rule: what blocks, at which level
    gate: GateConfig = Field(default_factory=GateConfig)
    #: merged under every case: `expect`, `tags`, `samples`, `min_pass_rate`, `input_files`
    defaults: SuiteDefaults = Field(default_factory=SuiteDefaults)
    #: reports warn about a baseline older than this; None: never
    baseline_max_age_days: int | None = Field(default=30, ge=1, le=36500, strict=True)
    #: per million tokens, by model name; casegate ships no prices
    pricing: dict[str, Price] = Field(default_factory=dict)
    #: the pinned LLM judge (provider, model, prompt version, temperature); only when a
    #: case asks for `judge` or a judged RAG metric
    judge: JudgePin | None = None
    #: what the judge's calibration must show before its verdicts are trusted
    calibration: CalibrationBar = Field(default_factory=CalibrationBar)
    #: the services `similar` (method embedding) and `moderation` measure with
    embeddings: EmbeddingsPin | None = None
    #: the moderation service the `moderation` check scores outputs with
    moderation: ModerationPin | None = None
    #: `casegate drift`: how many verdict flips between replay and live it accepts
    drift: DriftConfig = Field(default_factory=DriftConfig)
    #: the held-out slice: sealed cases nobody reads while writing prompts (gate.holdout)
    holdout: HoldoutConfig | None = None
    #: the committed results history (gate.history): its path (relative to the config's
    #: folder), or `{path, record}`; None: history/SUITE.jsonl, recorded on baselines
    history: HistoryConfig | None = None
    #: a JSON Schema of every case's `input`: what `casegate add` shapes a draft to
    #: (gate.grow.shape); None: the shape is read off the existing cases
    input_schema: dict[str, Any] | None = None
    #: what `casegate add` redacts from production data beside what gate.pii detects
    privacy: PrivacyConfig = Field(default_factory=PrivacyConfig)

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = _without_unset(
            self,
            handler(self),
            ("history", "clusters", "calibration", "baseline_samples", "input_schema", "privacy"),
        )
        if isinstance(data, dict) and data.get("history", "") is None:
            data.pop("history")  # `{record: all}` alone: the default path, as if unset
        return data

    @property
    def history_path(self) -> str:
        """The history export as written, relative to the config: `history/SUITE.jsonl`
        unless `history:` names another."""
        configured = self.history.path if self.history is not None else None
        return configured or f"history/{self.suite}.jsonl"

    @property
    def history_records_all(self) -> bool:
        """`history: {record: all}`: every complete run joins the history, not only
        the baseline refresh's."""
        return self.history is not None and self.history.record == "all"

    def estimate_samples(self, fixed: int | None) -> int:
        """Samples a baseline estimates one case from; `fixed` is the case's run count
        (None under `samples: auto`).

        A baseline is an estimate that every pull request is compared with, written once
        per merge: its precision is where samples pay most, and it is never stopped early
        (gate.deciding.noise.adaptive). `baseline_samples` when the suite sets it; else
        three times what a run draws. The exact test of a critical case at its share of
        the level cannot catch a 0.95 -> 0.5 drop 90% of the time with 20 samples a side
        (Boschloo's gives 89.4%, the best monotone region 89.9%); 60 baseline samples
        lift it to 98%. A one-sample case stays at one: declared deterministic, or a
        draw of one by choice.
        """
        if fixed == 1:
            return 1
        if self.baseline_samples is not None:
            return self.baseline_samples
        run = self.adaptive.max if fixed is None else fixed
        return min(BASELINE_FACTOR * run, max(MAX_SAMPLES, run))

    @field_validator("cases", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("recordings", mode="before")
    @classmethod
    def _path_or_mapping(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"path": value}
        if value is None or isinstance(value, dict):
            return value
        raise PydanticCustomError(
            "recordings",
            "give the recordings folder (recordings/suite), or a mapping with `path` and "
            "`max_age_days`; got {value}",
            {"value": _brief(value)},
        )

    @field_validator("history", mode="before")
    @classmethod
    def _history_path_or_mapping(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"path": value}
        if value is None or isinstance(value, dict):
            return value
        raise PydanticCustomError(
            "history",
            "give the history export's path (history/suite.jsonl), or a mapping with `path` "
            "and `record` (baseline or all); got {value}",
            {"value": _brief(value)},
        )

    @field_validator("holdout", mode="before")
    @classmethod
    def _holdout_path_or_mapping(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"path": value}
        if value is None or isinstance(value, dict):
            return value
        raise PydanticCustomError(
            "holdout",
            "give the held-out slice's folder (holdout/suite), or a mapping with `path`, "
            "`key_env` and `max_reads`; got {value}",
            {"value": _brief(value)},
        )

    @field_validator("suite", mode="before")
    @classmethod
    def _safe_suite(cls, value: Any) -> Any:
        if isinstance(value, str) and re.fullmatch(SUITE_PATTERN, value):
            return value
        raise PydanticCustomError(
            "suite",
            "use letters, digits, '.', '_' and '-', at most 100, starting with a letter or a "
            "digit (the name is used in file names and in the pull-request comment); got {value}",
            {"value": _brief(value)},
        )

    @field_validator("input_schema")
    @classmethod
    def _a_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        # Checked when the config loads, so `casegate add` never meets a broken schema.
        if value is not None:
            from jsonschema import Draft202012Validator, SchemaError

            try:
                Draft202012Validator.check_schema(value)
            except SchemaError as exc:
                raise PydanticCustomError(
                    "input_schema",
                    "not a JSON Schema ({reason}); see https://json-schema.org",
                    {"reason": printable(exc.message[:200])},
                ) from None
        return value

    @field_validator("samples", mode="before")
    @classmethod
    def _whole_or_auto(cls, value: Any) -> Any:
        # One message for both forms, instead of one per member of the union.
        if value == "auto" or (
            type(value) is int and 1 <= value <= MAX_SAMPLES  # bool and float are refused
        ):
            return value
        raise PydanticCustomError(
            "samples",
            "must be a whole number from 1 to {limit}, or `auto`; got {value}",
            {"limit": MAX_SAMPLES, "value": _brief(value)},
        )


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


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
    def repository(self) -> Path:
        """The nearest folder at or above the config's that holds `.git`, else the config's."""
        return next(
            (folder for folder in (self.root, *self.root.parents) if (folder / ".git").exists()),
            self.root,
        )

    def prompt_text(self) -> str | None:
        """The text of `system.prompt_file`; a ConfigError when it is outside the
        repository, missing, unreadable, or not UTF-8 text."""
        name = self.config.system.prompt_file
        if name is None:
            return None
        problem, text = read_prompt(name, self.root, self.repository)
        if problem is not None:
            raise ConfigError(f"{self.path}: system.prompt_file: {problem}")
        return text

    @property
    def recordings_dir(self) -> Path:
        recordings = self.config.recordings
        path = recordings.path if recordings is not None else None
        return self.resolve(path or f"recordings/{self.config.suite}")

    @property
    def recordings_max_age_days(self) -> int | None:
        recordings = self.config.recordings or RecordingsConfig()
        return recordings.max_age_days

    @property
    def baseline_path(self) -> Path | None:
        return self.resolve(self.config.baseline) if self.config.baseline else None

    def resolved_system(self) -> dict[str, Any]:
        """The system mapping as the provider sees it: prompt text read, overrides applied."""
        system = self.config.system.model_dump(exclude_none=True)
        if "prompt_file" in system:
            system["prompt"] = self.prompt_text()
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


#: keys that say a file is casegate's results (or baseline), not a config
RESULTS_KEYS = frozenset({"schema", "config_hash", "summary", "casegate_version"})


def load_config(path: Path, overrides: Sequence[str] = ()) -> LoadedConfig:
    """Read, override and validate a config; raises ConfigError naming file and line."""
    if not path.is_file():
        raise ConfigError(
            f"{path}: no such config file (pass -c PATH, or run `casegate init` to write one)"
        )
    try:
        fix = "is it the config you meant? (pass -c PATH)"
        raw = load_yaml(
            read_limited(path, MAX_CONFIG_BYTES, "a config", fix, ConfigError).decode("utf-8")
        )
    except YamlSyntaxError as exc:
        problem = located(path, exc.line, exc.message)
        raise ConfigError(problem, {problem: exc.excerpt} if exc.excerpt else None) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    records = raw if isinstance(raw, list) else [raw]
    if records and all(isinstance(r, dict) and {"id", "expect"} <= set(r) for r in records):
        raise ConfigError(
            f"{path}: this is a case file, not a config: pass the config with -c "
            "(it names this file under `cases:`)"
        )
    if not isinstance(raw, dict):
        raise ConfigError(located(path, 1, "the config must be a mapping of keys"))
    if len(RESULTS_KEYS & set(raw)) >= 2:
        raise ConfigError(
            f"{path}: this is a casegate results file (a run or a baseline), not a config: "
            "pass the config with -c, and results files to `compare`/`gate`"
        )
    data = apply_overrides(raw, overrides) if overrides else raw
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(
            [problem_for(Config, path, data, error, overrides) for error in exc.errors()]
        ) from None
    loaded = LoadedConfig(config, path, list(overrides))
    check_defaults(loaded, data)
    check_system(loaded, raw)
    return loaded
