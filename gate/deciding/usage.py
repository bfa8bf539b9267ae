"""What each side used: cost, tokens and latency, per answer and in total.

A run draws as many samples a case as its config asks, and a `samples: auto` check
draws fewer than the baseline refresh (3 x `adaptive.max` a case) does, so totals over
the two runs compare unequal draws. What a change costs is what one answer costs: the
per-answer figures are each case's mean over its answers, averaged over the cases both
runs answered, so each case weighs the same on both sides; `max_cost_increase` reads
those. The totals stay for what the run itself cost (the history, the JSON report).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gate.results import RunResults, missing_cost_reason

#: the per-answer figures, by the sample field each averages
PER_ANSWER = {
    "cost_usd_per_answer": "cost_usd",
    "input_tokens_per_answer": "input_tokens",
    "output_tokens_per_answer": "output_tokens",
}


@dataclass(frozen=True, slots=True)
class Delta:
    """One usage figure on both sides, with absolute and relative change."""

    name: str
    baseline: float | None
    candidate: float | None

    @property
    def change(self) -> float | None:
        if self.baseline is None or self.candidate is None:
            return None
        return self.candidate - self.baseline

    @property
    def relative(self) -> float | None:
        change = self.change
        if change is None or not self.baseline:
            return None
        return change / self.baseline

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "change": self.change,
            "relative_change": self.relative,
        }


def usage_deltas(baseline: RunResults, candidate: RunResults, shared: Iterable[str]) -> list[Delta]:
    """Per answer over the `shared` cases, the latency percentiles, then each run's totals."""
    ids = list(shared)
    per_answer = [
        Delta(name, *_per_answer(baseline, candidate, ids, field))
        for name, field in PER_ANSWER.items()
    ]
    b, c = baseline.summary, candidate.summary
    return [
        *per_answer,
        Delta("latency_ms_p50", b.latency_ms_p50, c.latency_ms_p50),
        Delta("latency_ms_p95", b.latency_ms_p95, c.latency_ms_p95),
        Delta("cost_usd", b.cost_usd, c.cost_usd),
        Delta("input_tokens", b.input_tokens, c.input_tokens),
        Delta("output_tokens", b.output_tokens, c.output_tokens),
    ]


def _per_answer(
    baseline: RunResults, candidate: RunResults, ids: list[str], field: str
) -> tuple[float | None, float | None]:
    """The mean over the cases both runs answered with the figure known of each case's
    mean over its answers (errors gave none); None on both sides when no case has it."""
    before, after = _case_means(baseline, ids, field), _case_means(candidate, ids, field)
    both = [case_id for case_id in ids if case_id in before and case_id in after]
    if not both:
        return None, None
    return (
        math.fsum(before[i] for i in both) / len(both),
        math.fsum(after[i] for i in both) / len(both),
    )


def unpriced(baseline: RunResults, candidate: RunResults, shared: Iterable[str]) -> list[str]:
    """The shared cases the baseline priced whose candidate answered (not only errors) with
    no cost known: the cost per answer leaves them out, so it cannot speak for them."""
    ids = list(shared)
    before, after = _case_means(baseline, ids, "cost_usd"), _case_means(candidate, ids, "cost_usd")
    cases = candidate.case_map()
    return sorted(
        case_id
        for case_id in ids
        if case_id in before
        and case_id not in after
        and case_id in cases
        and any(sample.status != "error" for sample in cases[case_id].outputs)
    )


def _case_means(run: RunResults, ids: list[str], field: str) -> dict[str, float]:
    cases = run.case_map()
    means = {}
    for case_id in ids:
        case = cases.get(case_id)
        if case is None:
            continue
        values = [
            value
            for sample in case.outputs
            if sample.status != "error" and (value := getattr(sample, field)) is not None
        ]
        if values:
            means[case_id] = math.fsum(values) / len(values)
    return means


def usage_notes(baseline: RunResults, candidate: RunResults) -> list[str]:
    """Why a cost reads n/a, for the sides where it does, when usage is shown at all."""
    if baseline.summary.cost_usd is None and candidate.summary.cost_usd is None:
        tokens = (baseline.summary.input_tokens, candidate.summary.input_tokens)
        if all(count is None for count in tokens):
            return []  # nothing of usage is shown: nothing to explain
    found = [
        missing_cost_reason(run, side)
        for run, side in ((baseline, "baseline"), (candidate, "candidate"))
    ]
    return [note for note in found if note is not None]
