"""The pinned LLM judge, as a check: for what code cannot judge."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gate.checks.base import (
    CheckSpecError,
    Judge,
    Modifiers,
    Subject,
    Verdict,
)

# --- the pinned LLM judge ------------------------------------------------------

#: `judge: {mode: …}`: grade each output alone, or compare it with the baseline's
MODES = ("pointwise", "pairwise")
#: what a pairwise judge says for each output: it compares, it does not grade
PAIRWISE_NOTE = "pairwise: compared with the baseline's output when the runs are compared"


def llm_judge(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    if (
        not isinstance(arg, Mapping)
        or "rubric" not in arg
        or set(arg) - {"rubric", "mode"}
        or not isinstance(arg["rubric"], str)
        or not arg["rubric"].strip()
    ):
        raise CheckSpecError(
            "judge takes {rubric: 'what must be true of the output'} "
            "(and optionally mode: pointwise or pairwise)"
        )
    mode = arg.get("mode", "pointwise")
    if mode not in MODES:
        raise CheckSpecError(
            f"judge mode must be 'pointwise' (grade each output, the default) or 'pairwise' "
            f"(compare it with the baseline's), got {mode!r}"
        )
    rubric = arg["rubric"].strip()

    if mode == "pairwise":
        # No per-output verdict: the comparison judges the pair (gate.judging.pairwise), so a
        # pairwise judge never fails a sample and never calls the judge here.
        def compared(subject: Subject) -> Verdict:
            return Verdict(name, True, PAIRWISE_NOTE)

        return compared

    def judge(subject: Subject) -> Verdict:
        if subject.grader is None:
            return Verdict(name, False, "no judge is pinned: add `judge:` to the config")
        # An outage or an unparseable verdict raises SystemCallError: the sample
        # becomes an error, never a pass and never a silent fail.
        ok, reason = subject.grader.verdict(subject.case, rubric, subject.text)
        return Verdict(name, ok, reason)

    return judge


def uses_judge(expect: Mapping[str, Any]) -> bool:
    """Whether the case needs the pinned judge (either mode)."""
    return "judge" in expect


def pairwise_rubric(expect: Mapping[str, Any]) -> str | None:
    """The rubric of a pairwise judge (None: the case has none). Only for loaded cases."""
    spec = expect.get("judge")
    if isinstance(spec, Mapping) and spec.get("mode") == "pairwise":
        rubric = spec.get("rubric")
        return rubric.strip() if isinstance(rubric, str) else None
    return None


def pointwise_rubric(expect: Mapping[str, Any]) -> str | None:
    """The rubric of a pointwise judge (None: the case has none, or a pairwise one)."""
    spec = expect.get("judge")
    if isinstance(spec, Mapping) and spec.get("mode", "pointwise") == "pointwise":
        rubric = spec.get("rubric")
        return rubric.strip() if isinstance(rubric, str) else None
    return None
