"""Run results: per-case verdicts, the primary artefact (and the baseline format).

The field order of these models is the order of the JSON file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol

from pydantic import Field, StrictFloat, StrictInt, TypeAdapter, ValidationError

from gate import heap
from gate.errors import ResultsError
from gate.files import MAX_DEPTH, OutputError, Writer, atomic_writer, parse_json, too_deep
from gate.limits import MAX_RESULTS_BYTES, read_limited
from gate.yamlfile import dotted

SCHEMA = "casegate.results/1"
#: the schemas `read_results` accepts: this one, and other versions of it (with a warning)
SCHEMA_FAMILY = r"casegate\.results/[0-9]{1,4}"
#: How every results file begins (whitespace aside): what `write_results` may replace.
SIGNATURE = '{"schema":"casegate.results/'
#: Keys of the recorded `config` that comparisons read as mappings (None is allowed).
MAPPING_KEYS = ("system", "gate", "judge")
EPSILON = 1e-9
Status = Literal["pass", "fail", "error"]


# Records are slotted dataclasses: a 100,000-case run holds half a million of them.
# A pydantic TypeAdapter validates them when a file is read and serialises them
# when one is written; unknown keys in a newer file are ignored, not refused.


def _absent(value: object) -> bool:
    return value is None


def _empty(value: object) -> bool:
    return not value


def valid_score(value: object) -> bool:
    """A score: a finite number from 0 to 1 (not a bool: True is no measurement)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= 1
    )


@dataclass(slots=True, kw_only=True)
class CheckResult:
    check: str
    ok: bool
    reason: str = ""
    #: how well the output did on a check that measures (0 to 1; None: it only passes or
    #: fails). On a case's line, the mean over its judged samples that have one.
    score: Annotated[StrictFloat | None, Field(exclude_if=_absent)] = None

    def __post_init__(self) -> None:
        # A results file is input: a score no check could give is refused, not believed.
        if self.score is not None and not valid_score(self.score):
            raise ValueError(f"{self.check}: a score is a number from 0 to 1")


@dataclass(slots=True, kw_only=True)
class SampleResult:
    sample: int
    status: Status
    text: str | None = None
    reason: str = ""
    checks: list[CheckResult] = field(default_factory=list)
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    model: str | None = None
    stop_reason: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    #: the passages the system retrieved ({id, text}, in rank order), when it reports them
    contexts: Annotated[list[dict[str, str | None]], Field(exclude_if=_empty)] = field(
        default_factory=list
    )
    #: in replay, when the replayed recording was captured (gate.drift.age); else None
    captured_at: str | None = None


class CaseOutputs(Protocol):
    """A case's samples, judged or not: a CaseResult, or a run's outputs before judging."""

    @property
    def id(self) -> str: ...

    @property
    def outputs(self) -> list[SampleResult]: ...


@dataclass(frozen=True, slots=True)
class Produced:
    """One case's outputs as produced, before the gate judges them."""

    id: str
    outputs: list[SampleResult]


@dataclass(slots=True, kw_only=True)
class JudgeConsistency:
    """How often the pinned judge disagreed with itself on one case's outputs, each asked
    `asks` times (`judge.consistency`, gate.judging.consistency)."""

    asks: int
    #: the outputs asked every time without an error
    outputs: int
    #: of those, the ones whose answers were not all the same
    flipped: int
    #: of the flipped, the ones whose verdict (the first answer) was FAIL
    flipped_failing: int = 0
    #: the pin's limit when it was measured
    max_flip_rate: float

    def __post_init__(self) -> None:
        # A results file is input: figures no run could measure are refused, not believed.
        if not (
            2 <= self.asks <= 20
            and 0 <= self.flipped_failing <= self.flipped <= self.outputs
            and math.isfinite(self.max_flip_rate)
            and 0 <= self.max_flip_rate <= 1
        ):
            raise ValueError(
                "judge_consistency holds figures no run measures (asks 2 to 20, 0 ≤ "
                "flipped_failing ≤ flipped ≤ outputs, max_flip_rate 0 to 1)"
            )

    @property
    def flipped_passing(self) -> int:
        return self.flipped - self.flipped_failing

    def flip_rate(self) -> float | None:
        return self.flipped / self.outputs if self.outputs else None

    def above(self, limit: float) -> bool:
        rate = self.flip_rate()
        return rate is not None and rate > limit + EPSILON

    def describe(self, limit: float) -> str:
        return (
            f"the judge's {self.asks} answers disagreed on {self.flipped} of {self.outputs} "
            f"output(s), above judge.max_flip_rate {limit:g}"
        )


@dataclass(slots=True, kw_only=True)
class CaseResult:
    id: str
    version: int = 1
    critical: bool = False
    tags: list[str] = field(default_factory=list)
    weight: float = 1.0
    status: Status
    passed: bool
    samples: int
    passes: int
    pass_rate: float
    #: the 95% Wilson interval of pass_rate
    ci_low: float | None = None
    ci_high: float | None = None
    #: some samples passed and some failed
    flaky: bool = False
    reason: str = ""
    checks: list[CheckResult] = field(default_factory=list)
    outputs: list[SampleResult] = field(default_factory=list)
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    source: str | None = None
    expect_hash: str | None = None
    note: str | None = None
    #: where the case came from (an incident, a ticket) and when it was added: the case file's own
    provenance: str | None = None
    added: str | None = None
    #: the cluster of near-duplicate cases this one belongs to (gate.deciding.noise.clusters)
    cluster: str | None = None
    #: with `judge.consistency: K`, how often the judge disagreed with itself on this case
    judge_consistency: JudgeConsistency | None = None


@dataclass(slots=True, kw_only=True)
class Summary:
    cases: int
    passed: int
    failed: int
    errors: int
    pass_rate: float
    flaky: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms_p50: float | None = None
    latency_ms_p95: float | None = None


@dataclass(slots=True, kw_only=True)
class HoldoutSummary:
    """The held-out slice of a run (gate.holdout): aggregates only, never a case."""

    schema: str = "casegate.holdout-summary/1"
    #: scored; skipped (no key, a selection: `note` says why); unscored (`note`: e.g. no
    #: recordings for this system)
    status: Literal["scored", "skipped", "unscored"]
    note: str = ""
    cases: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    pass_rate: float | None = None
    #: the slice's rotation, and how often it was scored under it (this run included)
    rotation: str | None = None
    reads: int = 0
    max_reads: int | None = None
    #: each held-out case's verdict, sealed with the slice's key (compared case by case)
    verdicts: str | None = None


@dataclass(slots=True, kw_only=True)
class RunResults:
    schema: str = SCHEMA
    suite: str
    system: str
    config: dict[str, Any]
    config_hash: str
    created_at: str
    casegate_version: str
    mode: str | None = None
    overrides: list[str] = field(default_factory=list)
    #: `--case`/`--tag` patterns when only a slice ran (gate.suite.select); None: every case
    selection: dict[str, Any] | None = None
    #: `--shard I/N` ran one part of the suite (gate.suite.shard): {"index": I, "count": N}. A
    #: part is never compared or gated; `casegate merge` joins all N into a whole run
    shard: dict[str, StrictInt] | None = None
    #: Ctrl-C stopped the run: `cases` holds only the cases that finished
    interrupted: bool = False
    summary: Summary
    #: the held-out slice, when the suite declares one (gate.holdout)
    holdout: HoldoutSummary | None = None
    cases: list[CaseResult]

    def case_map(self) -> dict[str, CaseResult]:
        return {case.id: case for case in self.cases}

    def to_dict(self) -> dict[str, Any]:
        return _RESULTS.dump_python(self, mode="json")  # type: ignore[no-any-return]

    def write(self, stream: Writer) -> None:
        """Write as JSON one case at a time, so a large run never becomes one string."""
        cases, self.cases = self.cases, []
        try:
            head = _RESULTS.dump_json(self).decode()
        finally:
            self.cases = cases
        stream.write(head[: head.rindex("[")] + "[")
        for index, case in enumerate(cases):
            stream.write(("\n" if index == 0 else ",\n") + _CASE.dump_json(case).decode())
        stream.write("\n]}\n")


_RESULTS = TypeAdapter(RunResults)
_CASE = TypeAdapter(CaseResult)


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """Linear-interpolated percentile (the 'inclusive' definition); None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    low, high = math.floor(position), math.ceil(position)
    value = ordered[low] + (ordered[high] - ordered[low]) * (position - low)
    return round(value, 3)


def _total(values: Sequence[float | int | None]) -> Any:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def summarise(cases: Sequence[CaseResult]) -> Summary:
    total_weight = sum(case.weight for case in cases)
    passed_weight = sum(case.weight for case in cases if case.passed)
    latencies = [
        sample.latency_ms
        for case in cases
        for sample in case.outputs
        if sample.latency_ms is not None
    ]
    cost = _total([case.cost_usd for case in cases])
    return Summary(
        cases=len(cases),
        passed=sum(1 for case in cases if case.status == "pass"),
        failed=sum(1 for case in cases if case.status == "fail"),
        errors=sum(1 for case in cases if case.status == "error"),
        pass_rate=round(passed_weight / total_weight, 6) if total_weight else 0.0,
        flaky=sum(1 for case in cases if case.flaky),
        input_tokens=_total([case.input_tokens for case in cases]),
        output_tokens=_total([case.output_tokens for case in cases]),
        cost_usd=round(cost, 8) if cost is not None else None,
        latency_ms_p50=percentile(latencies, 0.50),
        latency_ms_p95=percentile(latencies, 0.95),
    )


def write_results(results: RunResults, path: Path) -> None:
    """Write atomically, secrets masked; never over a file that is not a results file."""
    ensure_replaceable(path)
    with atomic_writer(path) as stream:
        results.write(stream)


def ensure_replaceable(path: Path) -> None:
    """An OutputError when `path` holds something other than casegate results (or nothing)."""
    try:
        if path.is_dir():
            raise OutputError(f"{path}: is a folder, not a results file; pass a file path")
        if not path.is_file():  # nothing there, or a device such as /dev/null
            return
        with path.open("rb") as stream:
            head = stream.read(256)  # a results file may be 100 MB: its start says enough
    except OSError as exc:
        raise OutputError(f"{path}: cannot check what it holds ({exc.strerror or exc})") from None
    if head and not b"".join(head.split()).startswith(SIGNATURE.encode()):
        raise OutputError(
            f"{path}: exists and is not a casegate results file; casegate will not replace "
            "it: pick another path (--out PATH)"
        )


def read_results(path: Path) -> RunResults:
    """Load a results or baseline file; raises ResultsError with the cause and fix."""
    # A results file holds records for every sample: built with the collector paused
    # (gate.heap), since `check` reads two of 10,000 cases beside its snapshot.
    with heap.bulk():
        return _read_results(path)


def _read_results(path: Path) -> RunResults:
    try:
        fix = "is it a results file? (`casegate run --out PATH` writes one)"
        raw = read_limited(path, MAX_RESULTS_BYTES, "a results file", fix, ResultsError)
    except FileNotFoundError:
        raise ResultsError(
            f"{path}: no such results file (write one with `casegate run --out {path}`)"
        ) from None
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    return read_fast(raw) or read_carefully(raw, path)


def read_carefully(raw: bytes, path: Path) -> RunResults:
    """The file parsed, walked for its depth and validated, with a message for each fault."""
    try:
        data = parse_json(raw)
    except ValueError as exc:  # not JSON, not UTF-8, too deep, a number too long
        raise ResultsError(f"{path}: not a readable results file: {exc}") from None
    # Another version of the schema is read as far as this one reaches (unknown keys are
    # ignored) and kept in `schema`, so a report can say the baseline is stale.
    schema = data.get("schema") if isinstance(data, dict) else None
    if not isinstance(schema, str) or not re.fullmatch(SCHEMA_FAMILY, schema):
        found = schema if isinstance(data, dict) else type(data).__name__
        raise ResultsError(f"{path}: expected schema {SCHEMA!r}, found {found!r}")
    try:
        results = _RESULTS.validate_python(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = dotted(error["loc"])
        raise ResultsError(f"{path}: invalid results file at {where}: {error['msg']}") from None
    return _finished(results, path)


def _finished(results: RunResults, path: Path | None) -> RunResults:
    """The checks on a validated file that its schema cannot state; with `path` None, a
    ResultsError is raised without its message (the fast read then falls back)."""
    for key in MAPPING_KEYS:
        value = results.config.get(key)
        if value is not None and not isinstance(value, dict):
            raise ResultsError(
                f"{path}: invalid results file at config.{key}: expected a mapping, "
                f"found {type(value).__name__}"
            )
    # The counts a report heads with are the cases', never the file's own claim about them:
    # a summary edited (or left behind when a case was cut out) would contradict the table.
    results.summary = summarise(results.cases)
    return results


#: every digit as b"1", any other byte as b"0": runs of digits found with one `find`
_DIGITS = bytes(0x31 if 0x30 <= byte <= 0x39 else 0x30 for byte in range(256))
#: 309 digits: the shortest integer past the largest float (1.8e308)
_LONGEST_FLOAT_RUN = b"1" * 309


def read_fast(raw: bytes) -> RunResults | None:
    """The file validated straight from its bytes (pydantic's JSON parser: half the time of
    parsing, walking and validating a 10,000-case file), or None when anything is unusual:
    the careful read then gives the answer, and its message.

    The careful read's rules hold here too: a number longer than Python's digit limit is
    out of range for this parser as well; what the schema does not fix (the config, the
    selection, tool call arguments) is walked for its depth, at its place in the file. A key
    the schema does not know is skipped unread (the careful read refuses it when it nests
    past MAX_DEPTH; here nothing of it is kept to nest).
    """
    if not raw.startswith(SIGNATURE.encode()):
        # Not as casegate writes it: another encoding, a byte-order mark, or no schema
        # first (which the dataclass's default would fill in).
        return None
    if raw.translate(_DIGITS).find(_LONGEST_FLOAT_RUN) != -1:
        # This parser takes an integer past a float's range, in a float's place, as
        # infinity; the careful read refuses it.
        return None
    try:
        results = _RESULTS.validate_json(raw)
    except ValidationError:
        return None
    if not re.fullmatch(SCHEMA_FAMILY, results.schema):
        return None
    # The root is level 1: the config and the selection sit at level 2, tool calls at 6
    # (root, cases, a case, its outputs, a sample, its calls).
    if too_deep(results.config, MAX_DEPTH - 1) or too_deep(results.selection, MAX_DEPTH - 1):
        return None
    if any(
        too_deep(sample.tool_calls, MAX_DEPTH - 5)
        for case in results.cases
        for sample in case.outputs
        if sample.tool_calls
    ):
        return None
    try:
        return _finished(results, None)
    except ResultsError:
        return None


def missing_cost_reason(results: RunResults, side: str) -> str | None:
    """Why a run's cost reads n/a (plain text: the caller escapes), or None when it has one.

    A model swap exists to compare cost, so "n/a" alone would hide the one figure asked for.
    """
    if results.summary.cost_usd is not None:
        return None
    samples = [sample for case in results.cases for sample in case.outputs]
    if not any(s.input_tokens is not None or s.output_tokens is not None for s in samples):
        return f"cost n/a for the {side}: its system reported no token usage"
    pricing = results.config.get("pricing")
    priced = set(pricing) if isinstance(pricing, dict) else set()
    system = results.config.get("system")
    configured = system.get("model") if isinstance(system, dict) else None
    models = sorted(
        {m for m in (s.model or configured for s in samples) if isinstance(m, str)} - priced
    )
    if not models:
        return f"cost n/a for the {side}: its model is not named, so no price applies"
    shown = ", ".join(models[:3]) + (f" and {len(models) - 3} more" if len(models) > 3 else "")
    return f"cost n/a for the {side}: the config's pricing: has no price for {shown}; add one"
