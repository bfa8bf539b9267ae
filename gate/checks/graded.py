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


def llm_judge(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    if (
        not isinstance(arg, Mapping)
        or set(arg) != {"rubric"}
        or not isinstance(arg["rubric"], str)
        or not arg["rubric"].strip()
    ):
        raise CheckSpecError("judge takes {rubric: 'what must be true of the output'}")
    rubric = arg["rubric"].strip()

    def judge(subject: Subject) -> Verdict:
        if subject.grader is None:
            return Verdict(name, False, "no judge is pinned: add `judge:` to the config")
        # An outage or an unparseable verdict raises SystemCallError: the sample
        # becomes an error, never a pass and never a silent fail.
        ok, reason = subject.grader.verdict(subject.case, rubric, subject.text)
        return Verdict(name, ok, reason)

    return judge


def uses_judge(expect: Mapping[str, Any]) -> bool:
    return "judge" in expect
