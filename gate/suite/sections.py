"""The sections of `casegate.yml` that are plain settings: the system under test, the gate
rule, `samples: auto`, recordings, drift, the held-out slice, privacy and prices. gate.suite.config
puts them together, with the judge and service pins, into Config."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)
from pydantic_core import PydanticCustomError

from gate.suite.defaults import MAX_SAMPLES


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SystemConfig(BaseModel):
    """The system under test. Providers declare which extra keys they accept."""

    model_config = ConfigDict(extra="allow")

    #: a label for the system, shown in reports
    name: str
    #: python, command, openai or anthropic (gate.systems' registry)
    provider: str
    #: python: `module:callable` beside the config, called with (input, system)
    target: str | None = None
    #: command: the program and its arguments; the case arrives as JSON on stdin
    command: list[str] | str | None = None
    #: openai and anthropic: the model id (a dated id, not an alias)
    model: str | None = None
    #: the system prompt as text (or `prompt_file`)
    prompt: str | None = None
    #: the system prompt's file, relative to the config, inside the repository
    prompt_file: str | None = None
    #: the user message: a Jinja2 template over the case's input (`{{ question }}`)
    message: str | None = None
    #: the provider's request parameters (`temperature`, `max_tokens` …)
    params: dict[str, Any] = Field(default_factory=dict)
    #: seconds a call may take; a timeout makes that case an error
    timeout_s: float = Field(default=60.0, gt=0)


#: a check's name as the gate's score rules name it (`similar`, `judge`, `python:fluency` …)
CHECK_NAME = r"^[A-Za-z0-9_.:-]{1,100}$"


class ScoreDrop(_Strict):
    """One entry of `max_mean_score_drop`: the check whose scores it reads, and the largest
    fall of their mean over the shared cases it lets ship (gate.deciding.scorerules)."""

    #: the check whose scores the rule reads (`similar`, `judge`, a custom check's name)
    check: str = Field(pattern=CHECK_NAME)
    #: the largest fall of its mean score over the shared cases that may ship
    drop: float = Field(ge=0, le=1, allow_inf_nan=False)


class PassHatK(_Strict):
    """`min_pass_hat_k`: the suite's pass^k (every one of k samples passes) must reach `min`."""

    #: how many samples must all pass
    k: int = Field(ge=1, le=MAX_SAMPLES, strict=True)
    #: the floor on the suite's pass^k
    min: float = Field(ge=0, le=1, allow_inf_nan=False)


class GateConfig(_Strict):
    #: a critical case that passed on the baseline and fails on the candidate blocks
    block_on_critical_regression: bool = True
    #: any critical case failing on the candidate blocks, even one that failed before
    block_on_critical_failure: bool = False
    #: a candidate pass rate below the baseline's (less `tolerance`) blocks
    block_on_pass_rate_drop: bool = True
    #: how far the pass rate may fall before `block_on_pass_rate_drop` counts it
    tolerance: float = Field(default=0.0, ge=0, le=1)
    #: a case in error on the candidate blocks (an outage is never a pass)
    block_on_errors: bool = True
    #: the largest rise in the cost per answer, as a share (0.2: 20%); None: off
    max_cost_increase: float | None = Field(default=None, ge=0)
    #: the largest rise in p95 latency, as a share; None: off
    max_latency_p95_increase: float | None = Field(default=None, ge=0)
    #: with repeated samples, the gate's level: the chance that an unchanged system is
    #: blocked, shared among the rules that test (gate.deciding.noise.level)
    alpha: float = Field(default=0.02, gt=0, lt=1)
    #: set: the critical cases are tested at this level of their own, beside `alpha`
    alpha_critical: float | None = Field(default=None, gt=0, lt=1)
    #: a drop this large must be ruled out, or the verdict is inconclusive
    non_inferiority_margin: float = Field(default=0.03, ge=0, le=1)
    #: what an inconclusive verdict does: ship (exit 0, with a warning) or block (exit 3)
    on_inconclusive: Literal["ship", "block"] = "ship"
    #: live `check`: fresh samples drawn for each flagged regression before it blocks
    confirm_samples: int = Field(default=20, ge=2, le=1000)
    #: a failing critical case with no valid baseline verdict to compare against blocks
    block_on_critical_without_baseline: bool = True
    #: the pull-request label that accepts a loosening ruler change (read from the base)
    accept_label: str = Field(
        default="casegate:accept-ruler-change", min_length=1, max_length=50, pattern=r"^[^\r\n]+$"
    )
    # Absolute floors and budgets of the candidate run, whatever the baseline (None: off).
    #: the candidate's pass rate must reach this (proven, under repeated samples); None: off
    min_pass_rate: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    #: the run's total cost, in dollars; None: off
    max_cost_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    #: the run's p95 latency over every sample, in milliseconds; None: off
    max_latency_p95_ms: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    #: cases in error on the candidate (with `block_on_errors: false`); None: off
    max_errors: int | None = Field(default=None, ge=0, strict=True)
    #: pairwise judge cases: the largest share of judged pairs the baseline's output may
    #: win (blocks when significantly more); None: off
    max_pairwise_loss_rate: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    #: the held-out slice (gate.holdout): the largest allowed fall of its pass rate; None: off
    holdout_max_drop: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    #: a critical case judged on a recording the pull request added or changed that CI did
    #: not seal (gate.produce.seal): `block`, or `warn` (named in the report's notes)
    unverified_critical: Literal["block", "warn"] = "warn"
    # Scores (a check's number in [0, 1], gate.deciding.scorerules; None: off). One entry or a
    # list of them: several checks are one Holm family at the score rule's share of `alpha`.
    #: `{check, drop}` or a list: blocks a significant fall of a check's mean score by more
    #: than `drop`; None: off
    max_mean_score_drop: list[ScoreDrop] | None = None
    #: per check, the floor of the candidate's mean score over the cases the baseline has
    min_mean_score: dict[str, float] | None = None
    #: `{k, min}`: the suite's pass^k (every one of k samples passes) must reach `min`
    min_pass_hat_k: PassHatK | None = None

    @field_validator("max_mean_score_drop", mode="before")
    @classmethod
    def _one_or_more_drops(cls, value: Any) -> Any:
        found = [value] if isinstance(value, dict) else value
        if isinstance(found, list):
            checks = [item.get("check") for item in found if isinstance(item, dict)]
            repeated = sorted({c for c in checks if checks.count(c) > 1 and isinstance(c, str)})
            if repeated:
                raise PydanticCustomError(
                    "max_mean_score_drop",
                    "names check {check} twice: give each check one drop",
                    {"check": repeated[0]},
                )
            if not found:
                raise PydanticCustomError(
                    "max_mean_score_drop", "is an empty list: give {check: NAME, drop: 0.05}", {}
                )
        return found

    @field_validator("min_mean_score", mode="before")
    @classmethod
    def _floors_per_check(cls, value: Any) -> Any:
        if value is None:
            return value
        if not isinstance(value, dict) or not value:
            raise PydanticCustomError(
                "min_mean_score",
                "give a floor per check, e.g. {similar: 0.8}; got {value}",
                {"value": repr(value)[:40]},
            )
        for check, floor in value.items():
            if not isinstance(check, str) or not re.fullmatch(CHECK_NAME, check):
                raise PydanticCustomError(
                    "min_mean_score", "{check} is not a check's name", {"check": repr(check)[:40]}
                )
            if type(floor) not in (int, float) or not math.isfinite(floor) or not 0 <= floor <= 1:
                raise PydanticCustomError(
                    "min_mean_score",
                    "the floor of {check} must be a number from 0 to 1; got {floor}",
                    {"check": check, "floor": repr(floor)[:40]},
                )
        return value

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> Any:
        # Unset, the score rules leave every config's hash (and its baselines) as it was.
        return _without_unset(
            self, handler(self), ("max_mean_score_drop", "min_mean_score", "min_pass_hat_k")
        )


class ClustersConfig(BaseModel):
    """`clusters:` how cases are grouped when none declares its own `cluster:`
    (gate.deciding.noise.clusters)."""

    model_config = ConfigDict(extra="forbid")

    #: `tag` (a case's first tag) or `id_prefix` (refund-01 → refund)
    by: Literal["tag", "id_prefix"]


class AdaptiveConfig(_Strict):
    """`samples: auto`: start small, spend more samples only where the verdict is open."""

    #: samples every case draws first
    start: int = Field(default=4, ge=1, le=MAX_SAMPLES)
    #: samples each further round draws, for the cases whose verdict is still open
    step: int = Field(default=4, ge=1, le=MAX_SAMPLES)
    # 24, not 20: the spend keeps the level at any max, and only cases that look worse
    # draw past 20 (bench/stats_simulation.py: power 0.95 -> 0.5 over 90% at 0.32 of n = 20).
    #: the most samples a case draws in a run (a baseline: three times this)
    max: int = Field(default=24, ge=2, le=MAX_SAMPLES)


class RecordingsConfig(_Strict):
    """`recordings:` a folder path, or a mapping `{path, max_age_days}`."""

    #: the recordings folder, relative to the config; None: recordings/SUITE
    path: str | None = None
    #: reports flag recordings captured longer ago than this; None: never (gate.drift.age)
    max_age_days: int | None = Field(default=90, ge=1, le=36500, strict=True)

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> Any:
        # The plain path form stays a string in results, as every config wrote it before,
        # so a baseline written then is not taken for one of another config.
        if "max_age_days" not in self.model_fields_set:
            return self.path
        return handler(self)


class DriftConfig(_Strict):
    """`casegate drift`: the suite run live against its recordings."""

    #: more cases than this whose verdict flipped make `casegate drift` exit 1
    max_flips: int = Field(default=0, ge=0, le=1_000_000, strict=True)


class CalibrationBar(_Strict):
    """`calibration:` what the judge's calibration must show before its verdicts are
    trusted (gate.judging.trust). A judge's verdict is a model's claim: 5 labels, or a
    kappa near chance, prove nothing, and a judge that passes what a person failed hides
    exactly the regressions the gate exists to catch."""

    #: labels the judge must have judged (each of pointwise and pairwise, where present)
    min_labels: int = Field(default=30, ge=1, le=1_000_000, strict=True)
    #: the share of labels on which judge and person agreed; None: not checked
    min_agreement: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    #: Cohen's kappa (agreement beyond chance); 0.6 is "substantial" (Landis and Koch 1977)
    min_kappa: float | None = Field(default=0.6, ge=-1, le=1, allow_inf_nan=False)
    #: of the outputs a person failed, the share the judge passed (pairwise: of the pairs a
    #: person preferred the baseline's output in, the share the judge did not); None: not checked
    max_false_pass: float | None = Field(default=0.1, ge=0, le=1, allow_inf_nan=False)


class HoldoutConfig(_Strict):
    """`holdout:` a folder path, or a mapping `{path, key_env, max_reads}` (gate.holdout)."""

    #: the folder holding slice.sealed and recordings.sealed, relative to the config
    path: str = Field(min_length=1, max_length=500, pattern=r"^[^\r\n\x00]+$")
    #: the environment variable (an Actions secret) that holds the slice's key
    key_env: str = Field(default="CASEGATE_HOLDOUT_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
    #: reports warn once the slice was scored this often since its last rotation; None: never
    max_reads: int | None = Field(default=20, ge=1, le=1_000_000, strict=True)

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> Any:
        if self.model_fields_set <= {"path"}:
            return self.path
        return handler(self)


class HistoryConfig(_Strict):
    """`history:` the export's path, or a mapping `{path, record}` (gate.history)."""

    #: the export, relative to the config's folder; None: history/SUITE.jsonl
    path: str | None = Field(default=None, min_length=1, max_length=500)
    #: which runs are appended to it: `baseline` (the baseline refresh only) or `all`
    #: (also every complete run of `run`, `record` and `check` outside a pull request:
    #: gate.history.autorecord)
    record: Literal["baseline", "all"] = "baseline"

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> Any:
        # The path alone, as the string form wrote it: `record` says which runs are kept,
        # not what a run measures, so it stays out of the config hash (and the path, as
        # ever, is no difference a stale baseline warns about).
        return self.path


class PrivacyConfig(_Strict):
    """`privacy:` what is kept out of cases made from production data (gate.pii, used by
    `casegate add`): the value of every key named in `redact_keys`, at any depth of a
    logged request or trace, becomes `<REDACTED_KEY>` whole, whatever it holds."""

    #: key names matched case-insensitively (`Authorization` names `authorization` too)
    redact_keys: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        default_factory=list, max_length=1000
    )

    @field_validator("redact_keys", mode="before")
    @classmethod
    def _a_list_of_names(cls, value: Any) -> Any:
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return value
        raise PydanticCustomError(
            "redact_keys",
            "give a list of key names, e.g. [password, authorization, ssn]; got {value}",
            {"value": repr(value)[:40]},
        )


def _without_unset(model: BaseModel, data: Any, keys: Sequence[str]) -> Any:
    """`data` without the keys a config left unset: a key added to the format later keeps
    every config written before it, and so its baselines' config hash, as it was."""
    if isinstance(data, dict):
        for key in keys:
            if key not in model.model_fields_set or getattr(model, key) is None:
                data.pop(key, None)
    return data


class Price(_Strict):
    """Prices per million tokens; the tool ships none, since they go stale."""

    #: dollars per million input tokens
    input: float = Field(ge=0)
    #: dollars per million output tokens
    output: float = Field(ge=0)
    #: what the provider's batch API charges (gate.produce.batch); None: the normal price,
    #: with a warning
    batch_input: float | None = Field(default=None, ge=0)
    #: the batch API's price per million output tokens; None: the normal price, with a warning
    batch_output: float | None = Field(default=None, ge=0)

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> Any:
        return _without_unset(self, handler(self), ("batch_input", "batch_output"))
