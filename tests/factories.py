"""Hand-built results files for comparison and gate tests."""

from __future__ import annotations

from typing import Any

from gate.results import CaseResult, CheckResult, RunResults, SampleResult, summarise


def result(
    case_id: str,
    status: str = "pass",
    *,
    critical: bool = False,
    version: int = 1,
    text: str = "ok",
    reason: str = "",
    cost: float | None = None,
    latency: float | None = None,
    weight: float = 1.0,
) -> CaseResult:
    if status == "fail" and not reason:
        reason = "contains: missing 'x'"
    checks = (
        []
        if status == "error"
        else [CheckResult(check="contains", ok=status == "pass", reason=reason)]
    )
    sample = SampleResult(
        sample=0,
        status=status,
        text=None if status == "error" else text,  # type: ignore[arg-type]
        reason=reason,
        checks=checks,
        latency_ms=latency,
        cost_usd=cost,
    )
    return CaseResult(
        id=case_id,
        version=version,
        critical=critical,
        weight=weight,
        status=status,  # type: ignore[arg-type]
        passed=status == "pass",
        samples=1,
        passes=int(status == "pass"),
        pass_rate=float(status == "pass"),
        reason=reason,
        checks=checks,
        outputs=[sample],
        latency_ms=latency,
        cost_usd=cost,
    )


def run(
    cases: list[CaseResult],
    *,
    suite: str = "s",
    system: str = "sys",
    model: str = "m",
    gate: dict[str, Any] | None = None,
    **config: Any,
) -> RunResults:
    full_config = {
        "suite": suite,
        "system": {"name": system, "provider": "python", "model": model},
        **config,
    }
    if gate is not None:
        full_config["gate"] = gate
    ordered = sorted(cases, key=lambda c: c.id)
    return RunResults(
        suite=suite,
        system=system,
        config=full_config,
        config_hash="h",
        created_at="2026-01-01T00:00:00+00:00",
        casegate_version="test",
        summary=summarise(ordered),
        cases=ordered,
    )


def sampled(case_id: str, passes: int, samples: int, *, critical: bool = False) -> CaseResult:
    """A case run `samples` times, `passes` of them passing (min_pass_rate 1.0)."""
    outputs = [
        SampleResult(
            sample=index,
            status="pass" if index < passes else "fail",
            text="ok",
            reason="" if index < passes else "contains: missing 'x'",
            checks=[CheckResult(check="contains", ok=index < passes)],
        )
        for index in range(samples)
    ]
    return CaseResult(
        id=case_id,
        critical=critical,
        status="pass" if passes == samples else "fail",
        passed=passes == samples,
        samples=samples,
        passes=passes,
        pass_rate=passes / samples,
        flaky=0 < passes < samples,
        reason="" if passes == samples else f"{passes}/{samples} samples passed",
        outputs=outputs,
    )
