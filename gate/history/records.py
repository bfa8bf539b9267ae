"""One line of the history: a case's verdict in one run, typed and versioned.

A run is identified by (suite, config hash, commit, created_at): the same results
added twice are the same run.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any, Literal, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from gate.errors import CasegateError
from gate.results import RunResults

SCHEMA = "casegate.history/1"
Verdict = Literal["pass", "fail", "error"]
#: what a run's commit is when neither --commit, GITHUB_SHA nor git can say
UNKNOWN_COMMIT = "unknown"
#: SQLite's largest integer: the cache cannot hold a larger one (an OverflowError)
MAX_INTEGER = 2**63 - 1
#: No cost, latency or weight is this large; it keeps a run's sums of them finite too
MAX_AMOUNT = 1e15


class HistoryError(CasegateError):
    """The history export or the results to add are unusable; one line each, exit 2."""


class RunKey(NamedTuple):
    suite: str
    config_hash: str
    commit: str
    created_at: str

    def describe(self) -> str:
        return (
            f"the run of {self.created_at} (commit {self.commit[:12]}, config {self.config_hash})"
        )


class HistoryRecord(BaseModel):
    """A case's verdict in one run; field names are the JSONL keys (written sorted)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    schema_: Literal["casegate.history/1"] = Field(default="casegate.history/1", alias="schema")
    suite: str = Field(min_length=1, max_length=200)
    case: str = Field(min_length=1, max_length=500)
    version: int = Field(ge=0, le=MAX_INTEGER)
    system: str = Field(max_length=500)
    config_hash: str = Field(max_length=200)
    commit: str = Field(min_length=1, max_length=200)
    created_at: str = Field(min_length=1, max_length=100)
    mode: str | None = Field(default=None, max_length=50)
    verdict: Verdict
    pass_rate: float = Field(ge=0, le=1)
    #: the counts behind pass_rate (absent on lines written before casegate kept them):
    #: repeated runs of one configuration show how far a case moves between runs
    passes: int | None = Field(default=None, ge=0, le=MAX_INTEGER)
    samples: int | None = Field(default=None, ge=1, le=MAX_INTEGER)
    weight: float = Field(default=1.0, ge=0, le=MAX_AMOUNT)
    input_tokens: int | None = Field(default=None, ge=0, le=MAX_INTEGER)
    output_tokens: int | None = Field(default=None, ge=0, le=MAX_INTEGER)
    cost_usd: float | None = Field(default=None, ge=0, le=MAX_AMOUNT)
    latency_ms: float | None = Field(default=None, ge=0, le=MAX_AMOUNT)

    @field_validator("pass_rate", "weight", "cost_usd", "latency_ms", mode="before")
    @classmethod
    def _finite(cls, value: Any) -> Any:
        # JSON has no NaN, but Python's json reads one; a chart cannot draw it.
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                return float(value)  # 1 and 1.0 are the same rate
            except OverflowError:  # past 1.8e308: no float holds it
                raise ValueError("must be a finite number") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @field_validator("created_at")
    @classmethod
    def _date_time(cls, value: str) -> str:
        # The trend orders runs by it and the report shows its day: a date and a time
        # (a date alone is a date-time to `datetime.fromisoformat`, not to a person).
        if _parses(dt.datetime.fromisoformat, value) and not _parses(dt.date.fromisoformat, value):
            return value
        raise ValueError("must be an ISO 8601 date and time, such as 2026-11-30T08:15:25+00:00")

    @model_validator(mode="after")
    def _counts(self) -> HistoryRecord:
        if (self.passes is None) != (self.samples is None):
            raise ValueError("passes and samples go together: give both or neither")
        if self.passes is not None and self.samples is not None:
            if self.passes > self.samples:
                raise ValueError(f"passes ({self.passes}) exceed samples ({self.samples})")
            if abs(self.passes / self.samples - self.pass_rate) > 1e-9:
                raise ValueError(
                    f"pass_rate {self.pass_rate} is not passes / samples "
                    f"({self.passes}/{self.samples})"
                )
        return self

    @property
    def key(self) -> RunKey:
        return RunKey(self.suite, self.config_hash, self.commit, self.created_at)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def _parses(parse: Any, value: str) -> bool:
    try:
        parse(value)
    except ValueError:
        return False
    return True


def whole_run_problem(results: RunResults) -> str | None:
    """Why `results` is not a whole run (history records whole runs only), or None."""
    shard = getattr(results, "shard", None)  # added with `--shard`; older results lack it
    if shard is not None:
        return (
            f"one shard ({_shard_text(shard)}) of the suite: join every part first "
            "(`casegate merge`), then add the whole run"
        )
    if results.interrupted:
        return f"interrupted after {len(results.cases)} case(s): run it again to the end"
    if results.selection is not None:
        return "a selection (--case/--tag), not the whole suite: add a run of every case"
    if not results.cases:
        return "a run that judged no case"
    return None


def _shard_text(shard: Any) -> str:
    if isinstance(shard, dict):
        return f"{shard.get('index')}/{shard.get('count')}"
    return str(shard)


def records_of(results: RunResults, commit: str) -> list[HistoryRecord]:
    """One record per case of a whole run, in the run's case order."""
    mode = results.mode if isinstance(results.mode, str) else None
    try:
        return _records(results, commit, mode)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise HistoryError(
            f"the results cannot be recorded in the history: {where}: {error['msg']}"
        ) from None


def _records(results: RunResults, commit: str, mode: str | None) -> list[HistoryRecord]:
    return [
        HistoryRecord(
            suite=results.suite,
            case=case.id,
            version=case.version,
            system=results.system,
            config_hash=results.config_hash,
            commit=commit,
            created_at=results.created_at,
            mode=mode,
            verdict=case.status,
            # Numbers as they are: the record's validators turn an integer into a float,
            # and refuse one no float (or SQLite) can hold.
            pass_rate=case.pass_rate,
            # Counts only where they say what pass_rate says (a results file edited by
            # hand, or a case with no sample, keeps its rate and no counts).
            passes=case.passes if _counted(case) else None,
            samples=case.samples if _counted(case) else None,
            weight=case.weight,
            input_tokens=case.input_tokens,
            output_tokens=case.output_tokens,
            cost_usd=case.cost_usd,
            latency_ms=case.latency_ms,
        )
        for case in results.cases
    ]


def _counted(case: Any) -> bool:
    samples, passes = case.samples, case.passes
    if not (isinstance(samples, int) and isinstance(passes, int)) or not 0 <= passes <= samples:
        return False
    return samples > 0 and abs(passes / samples - case.pass_rate) <= 1e-9
