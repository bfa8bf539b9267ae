"""Run results: per-case verdicts, the primary artefact (and the baseline format).

The field order of these models is the order of the JSON file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

from pydantic import TypeAdapter, ValidationError

from gate.errors import ResultsError

SCHEMA = "casegate.results/1"
EPSILON = 1e-9
Status = Literal["pass", "fail", "error"]


# Records are slotted dataclasses: a 100,000-case run holds half a million of them.
# A pydantic TypeAdapter validates them when a file is read and serialises them
# when one is written; unknown keys in a newer file are ignored, not refused.


@dataclass(slots=True, kw_only=True)
class CheckResult:
    check: str
    ok: bool
    reason: str = ""


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
    #: Ctrl-C stopped the run: `cases` holds only the cases that finished
    interrupted: bool = False
    summary: Summary
    cases: list[CaseResult]

    def case_map(self) -> dict[str, CaseResult]:
        return {case.id: case for case in self.cases}

    def to_dict(self) -> dict[str, Any]:
        return _RESULTS.dump_python(self, mode="json")  # type: ignore[no-any-return]

    def write(self, stream: TextIO) -> None:
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
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as stream:
        results.write(stream)


def read_results(path: Path) -> RunResults:
    """Load a results or baseline file; raises ResultsError with the cause and fix."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(
            f"{path}: no such results file (write one with `casegate run --out {path}`)"
        ) from None
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: not a readable results file: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ResultsError(f"{path}: expected schema {SCHEMA!r}, found {found!r}")
    try:
        return _RESULTS.validate_python(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise ResultsError(f"{path}: invalid results file at {where}: {error['msg']}") from None
