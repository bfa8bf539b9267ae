"""Hand-built results with scores, for the score rules' tests (tests/factories.py builds the
pass/fail ones)."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean
from typing import Any

from gate.results import CaseResult, CheckResult, RunResults, SampleResult
from tests.factories import run


def scored(
    case_id: str,
    scores: Sequence[float | None],
    *,
    check: str = "similar",
    threshold: float = 0.5,
    cluster: str | None = None,
    critical: bool = False,
) -> CaseResult:
    """A case whose samples scored `scores` on `check` (None: the sample is in error); a
    sample passes when its score reaches `threshold`."""
    outputs = []
    for index, score in enumerate(scores):
        if score is None:
            outputs.append(SampleResult(sample=index, status="error", reason="timeout"))
            continue
        ok = score >= threshold
        outputs.append(
            SampleResult(
                sample=index,
                status="pass" if ok else "fail",
                text="answer",
                checks=[CheckResult(check=check, ok=ok, score=score)],
            )
        )
    judged = [s for s in scores if s is not None]
    passes = sum(1 for s in judged if s >= threshold)
    status = "error" if not judged else ("pass" if passes == len(scores) else "fail")
    return CaseResult(
        id=case_id,
        critical=critical,
        cluster=cluster,
        status=status,  # type: ignore[arg-type]
        passed=passes == len(scores),
        samples=len(scores),
        passes=passes,
        pass_rate=passes / len(scores),
        flaky=0 < passes < len(scores),
        checks=[
            CheckResult(
                check=check, ok=passes == len(scores), score=fmean(judged) if judged else None
            )
        ]
        if judged
        else [],
        outputs=outputs,
    )


def scored_run(
    cases: list[CaseResult], gate: dict[str, Any] | None = None, **config: Any
) -> RunResults:
    return run(cases, gate=gate, **config)
