"""The pinned LLM judge, as a check: for what code cannot judge.

`judge: {rubric}` asks the pointwise prompt for PASS or FAIL (an unparseable verdict is
an error: SystemCallError). `judge: {rubric, scale, threshold}` asks the graded prompt for
a score on the scale, normalised to 0–1 and held to the threshold; an answer that is not
one `SCORE <n>: reason` line with <n> on the scale fails the check (never a pass).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from gate.checks.base import (
    UNMEASURED,
    CheckSpecError,
    Judge,
    Modifiers,
    Subject,
    Verdict,
    describe,
    meets,
    short,
)

# --- the pinned LLM judge ------------------------------------------------------

#: `judge: {mode: …}`: grade each output alone, or compare it with the baseline's
MODES = ("pointwise", "pairwise")
#: what a pairwise judge says for each output: it compares, it does not grade
PAIRWISE_NOTE = "pairwise: compared with the baseline's output when the runs are compared"
#: `judge: {scale: …}`: the graded judge's scales, by name → (lowest, highest)
SCALES: dict[str, tuple[int, int]] = {"1-5": (1, 5), "0-10": (0, 10)}
#: the checks that ask the pinned judge about one output: the gate asks it itself
#: (gate.checks.RUN_JUDGED); the RAG metrics are gate.checks.ragjudge's
RAG_METRICS = ("faithfulness", "answer_relevance", "context_recall", "context_precision")
JUDGED = ("judge", *RAG_METRICS)
#: a judge's answer longer than this is not "one line plus a reason"
MAX_ANSWER_LINE = 500

_SCORE = re.compile(r"SCORE (\d{1,3}):\s*(\S.*)")


def threshold_of(name: str, arg: Mapping[str, Any]) -> float:
    """`threshold:` as given: a number from 0 to 1."""
    value = arg.get("threshold")
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise CheckSpecError(
            f"{name}: threshold takes a number from 0 to 1 (on the normalised score), "
            f"got {describe(value)}"
        )
    return float(value)


def rendered_input(case_input: Mapping[str, Any]) -> str:
    """The case input as the judge is shown it (as gate.judging.judge renders it)."""
    return json.dumps(dict(case_input), ensure_ascii=False, indent=2, default=str)


def parse_score(text: str, low: int, high: int) -> tuple[int, str] | str:
    """`SCORE <n>: reason`, one line, n a whole number from `low` to `high`: (n, reason);
    anything else: the problem, in words (the check fails with it)."""
    stripped = text.strip()
    one_line = len(stripped.splitlines()) == 1
    match = _SCORE.fullmatch(stripped) if one_line else None
    shown = short(" ".join(stripped.split()), 80) or "an empty answer"
    if match is None or len(stripped) > MAX_ANSWER_LINE:
        return f"the judge's answer is not one `SCORE <n>: reason` line: {shown!r}"
    score = int(match.group(1))
    if not low <= score <= high:
        return f"the judge's score {score} is outside the scale {low}-{high}: {shown!r}"
    return score, match.group(2).strip()


def normalised(score: int, low: int, high: int) -> float:
    """(s − low) / (high − low): 0 at the bottom of the scale, 1 at the top."""
    return (score - low) / (high - low)


def held(score: float, threshold: float) -> bool:
    return meets(score, threshold)


def no_judge(name: str) -> Verdict:
    return Verdict(name, False, "no judge is pinned: add `judge:` to the config", UNMEASURED)


def graded_input(
    rubric: str, scale: str, case_input: Mapping[str, Any], text: str
) -> dict[str, str]:
    """What the graded judge is asked (and its answer is keyed on)."""
    low, high = SCALES[scale]
    return {
        "rubric": rubric,
        "scale": f"a whole number from {low} (lowest) to {high} (highest)",
        "input": rendered_input(case_input),
        "output": text,
    }


def llm_judge(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    if (
        not isinstance(arg, Mapping)
        or "rubric" not in arg
        or set(arg) - {"rubric", "mode", "scale", "threshold"}
        or not isinstance(arg["rubric"], str)
        or not arg["rubric"].strip()
    ):
        raise CheckSpecError(
            "judge takes {rubric: 'what must be true of the output'} "
            "(and optionally mode: pointwise or pairwise, or scale: '1-5' or '0-10' with "
            "threshold: 0 to 1)"
        )
    mode = arg.get("mode", "pointwise")
    if mode not in MODES:
        raise CheckSpecError(
            f"judge mode must be 'pointwise' (grade each output, the default) or 'pairwise' "
            f"(compare it with the baseline's), got {mode!r}"
        )
    rubric = arg["rubric"].strip()
    if "scale" in arg or "threshold" in arg:
        return _graded(name, arg, rubric, mode)

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


def _graded(name: str, arg: Mapping[str, Any], rubric: str, mode: str) -> Judge:
    scale = arg.get("scale")
    if mode != "pointwise":
        raise CheckSpecError("judge: a scale grades each output: it takes no mode: pairwise")
    if scale not in SCALES:
        raise CheckSpecError(
            f"judge scale must be '1-5' or '0-10' (with a threshold), got {describe(scale)}"
        )
    if "threshold" not in arg:
        raise CheckSpecError(
            f"judge with scale {scale!r} needs a threshold: a number from 0 to 1 on the "
            "normalised score ((score − lowest) / (highest − lowest)) that passes"
        )
    threshold = threshold_of(name, arg)
    low, high = SCALES[scale]

    def graded(subject: Subject) -> Verdict:
        if subject.grader is None:
            return no_judge(name)
        asked = graded_input(rubric, scale, subject.case_input, subject.text)
        # An outage raises SystemCallError (the sample is an error); a malformed answer fails.
        answer = subject.grader.ask(subject.case.id, asked, kind="graded").text
        parsed = parse_score(answer, low, high)
        if isinstance(parsed, str):
            return Verdict(name, False, parsed, UNMEASURED)
        raw, why = parsed
        score = normalised(raw, low, high)
        said = f"scored {raw} on {low}-{high} ({score:.2f}, threshold {threshold:g}): {why}"
        return Verdict(name, held(score, threshold), said, score)

    return graded


def uses_judge(expect: Mapping[str, Any]) -> bool:
    """Whether the case needs the pinned judge (any mode, or a RAG metric)."""
    return any(name in expect for name in JUDGED)


def judged_checks(expect: Mapping[str, Any]) -> list[str]:
    """The case's checks that ask the judge about each output: a pointwise or graded
    judge and the RAG metrics (never a pairwise judge, which judges pairs)."""
    names = [name for name in RAG_METRICS if name in expect]
    spec = expect.get("judge")
    if isinstance(spec, Mapping) and spec.get("mode", "pointwise") == "pointwise":
        names.insert(0, "judge")
    return names


def pairwise_rubric(expect: Mapping[str, Any]) -> str | None:
    """The rubric of a pairwise judge (None: the case has none). Only for loaded cases."""
    spec = expect.get("judge")
    if isinstance(spec, Mapping) and spec.get("mode") == "pairwise":
        rubric = spec.get("rubric")
        return rubric.strip() if isinstance(rubric, str) else None
    return None


def pointwise_rubric(expect: Mapping[str, Any]) -> str | None:
    """The rubric of a pass/fail pointwise judge (None: the case has none, or a pairwise
    or graded one)."""
    spec = expect.get("judge")
    if (
        isinstance(spec, Mapping)
        and spec.get("mode", "pointwise") == "pointwise"
        and "scale" not in spec
    ):
        rubric = spec.get("rubric")
        return rubric.strip() if isinstance(rubric, str) else None
    return None
