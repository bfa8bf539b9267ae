"""User-written checks, named `module:function` in a case, with arguments if they take any.

A check is called `fn(output_text, case)`; with `{fn, args}` the args are keyword
arguments; a function with a third positional parameter also receives a
`SampleView` of the sample. It returns a verdict (`bool` or `(bool, reason)`) or a
score from 0 to 1 (a number, `(score, reason)` or `{score, passed, reason}`), which the
entry's `threshold` turns into pass or fail. Loading cases never imports user code: the
run imports every custom check up front (gate.usercode.prepare_check).
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from gate import usercode
from gate.checks.base import (
    CheckSpecError,
    Judge,
    Modifiers,
    Subject,
    Verdict,
    describe,
    meets,
    short,
)
from gate.checks.figures import finish_name
from gate.outputs import Context, ToolCall
from gate.results import valid_score

_SHAPE = (
    "check takes 'module:function', {fn: 'module:function', args: {…}, threshold: 0.7}, "
    "or a list of them"
)
_KEYS = {"fn", "args", "threshold"}
_RETURNS = "a bool, (bool, reason), a score from 0 to 1, (score, reason) or {score, passed, reason}"


@dataclass(frozen=True, slots=True)
class CustomCheck:
    """One `check:` entry: the function's spec and the keyword arguments the case gives it."""

    spec: str
    args: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    #: the score at or above which a function that returns a score passes
    threshold: float | None = None


@dataclass(frozen=True, slots=True)
class SampleView:
    """What a three-parameter check sees of the sample; a copy, so changing it changes
    nothing another check reads."""

    text: str
    #: the output parsed as JSON (the extracted object with `extract_json`); None if not JSON
    json: Any
    tool_calls: tuple[ToolCall, ...]
    #: the passages the system retrieved, in rank order (empty: it reported none)
    contexts: tuple[Context, ...]
    #: in OpenAI's words (`stop`, `length`, `tool_calls`, …), None when unreported
    finish_reason: str | None
    latency_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    model: str | None


def _parse_one(item: Any) -> CustomCheck:
    threshold = None
    if isinstance(item, str):
        spec, args = item, {}
    elif isinstance(item, Mapping) and "fn" in item and set(item) <= _KEYS:
        spec, args = item["fn"], item.get("args", {})
        threshold = item.get("threshold")
        if threshold is not None and not valid_score(threshold):
            raise CheckSpecError(
                f"check.threshold takes a number from 0 to 1, got {describe(threshold)}"
            )
        if not isinstance(spec, str):
            raise CheckSpecError(f"check.fn takes 'module:function', got {describe(spec)}")
        if not isinstance(args, Mapping) or not all(
            isinstance(key, str) and key.isidentifier() for key in args
        ):
            raise CheckSpecError(
                f"check.args takes a mapping of argument name → value, got {describe(args)}"
            )
    elif isinstance(item, Mapping) and "fn" in item:
        unknown = sorted(str(key) for key in set(item) - _KEYS)
        raise CheckSpecError(f"check: unknown key {unknown[0]!r} (it takes fn, args and threshold)")
    else:
        raise CheckSpecError(f"{_SHAPE}, got {describe(item)}")
    try:
        usercode.parse_spec(spec, "check")
    except usercode.UserCodeError as exc:
        raise CheckSpecError(str(exc)) from None
    return CustomCheck(spec, MappingProxyType(copy.deepcopy(dict(args))), threshold)


def parse_custom(arg: Any) -> list[CustomCheck]:
    """The entries of a `check:` key; CheckSpecError when one is malformed."""
    items = arg if isinstance(arg, list) else [arg]
    if not items:
        raise CheckSpecError(f"{_SHAPE}, got []")
    return [_parse_one(item) for item in items]


def custom_specs(expect: Mapping[str, Any]) -> list[str]:
    """The `module:function` specs a case's `check:` names (its user code)."""
    if "check" not in expect:
        return []
    return [entry.spec for entry in parse_custom(expect["check"])]


def takes_sample(function: Callable[..., Any], entry: CustomCheck) -> bool:
    """Whether the function has a third positional parameter (beside its keyword args)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: the two-argument form
        return False
    positional = [
        parameter
        for parameter in parameters
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
        and parameter.name not in entry.args
    ]
    return len(positional) >= 3


def call_problem(function: Callable[..., Any], entry: CustomCheck) -> str | None:
    """Why the function cannot be called with the case's args, or None."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    extra = [None] if takes_sample(function, entry) else []
    try:
        signature.bind("", None, *extra, **entry.args)
    except TypeError as exc:
        return f"{entry.spec} cannot be called with this case's args ({exc})"
    return None


def view_of(subject: Subject, modifiers: Modifiers) -> SampleView:
    parsed = subject.parsed_json(extract=modifiers.extract_json)
    return SampleView(
        text=subject.text,
        json=copy.deepcopy(parsed.value) if parsed.ok else None,
        tool_calls=tuple(call.model_copy(deep=True) for call in subject.tool_calls),
        contexts=tuple(subject.contexts),
        finish_reason=None if subject.stop_reason is None else finish_name(subject.stop_reason),
        latency_ms=subject.latency_ms,
        input_tokens=subject.input_tokens,
        output_tokens=subject.output_tokens,
        cost_usd=subject.cost_usd,
        model=subject.model,
    )


def _outcome(entry: CustomCheck, outcome: Any) -> tuple[bool, str, float | None] | str:
    """(ok, reason, score) from what the check returned, or why that is not a verdict."""
    passed: Any = None
    score: Any = None
    reason: Any = ""
    if isinstance(outcome, bool):
        passed = outcome
    elif isinstance(outcome, int | float):
        score = outcome
    elif isinstance(outcome, tuple) and len(outcome) == 2:
        first, reason = outcome
        passed, score = (first, None) if isinstance(first, bool) else (None, first)
        if not isinstance(first, bool | int | float):
            return f"{entry.spec} returned {describe(outcome)}, not {_RETURNS}"
    elif isinstance(outcome, Mapping) and outcome and set(outcome) <= {"score", "passed", "reason"}:
        passed, score, reason = (
            outcome.get("passed"),
            outcome.get("score"),
            outcome.get("reason", ""),
        )
        if passed is None and score is None:
            return f"{entry.spec} returned {describe(outcome)}: it needs `score` or `passed`"
        if passed is not None and not isinstance(passed, bool):
            return f"{entry.spec} returned `passed` {describe(passed)}, not true or false"
    else:
        return f"{entry.spec} returned {describe(outcome)}, not {_RETURNS}"
    if score is not None:
        # The number itself, not what a subclass's __float__ or comparisons say it is.
        if isinstance(score, float):
            score = float.__float__(score)
        elif isinstance(score, int) and not isinstance(score, bool):
            score = float(int.__int__(score))
        if not valid_score(score):
            return f"{entry.spec} returned the score {describe(score)}, not a number from 0 to 1"
    reason = reason if isinstance(reason, str) else str(reason)
    if score is None:
        return bool(passed), reason, None
    if entry.threshold is None:
        if passed is None:
            return (
                f"{entry.spec} returned a score ({score:g}) and no pass or fail: give the "
                f"entry a threshold ({{fn: {entry.spec}, threshold: 0.7}})"
            )
        return passed, reason, score
    if not meets(score, entry.threshold):
        under = f"score {score:g} is under the threshold {entry.threshold:g}"
        return False, f"{under}: {reason}" if reason else under, score
    return passed is not False, reason, score


def prepared_problems(expect: Mapping[str, Any]) -> list[str]:
    """Why a case's prepared checks cannot take its args (for the run's preflight)."""
    if "check" not in expect:
        return []
    problems = []
    for entry in parse_custom(expect["check"]):
        problem = call_problem(usercode.check_function(entry.spec), entry)
        if problem is not None:
            problems.append(problem)
    return problems


def custom(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    entries = parse_custom(arg)
    # How each function is called, worked out once: a signature is slow to read.
    shapes: dict[tuple[int, Callable[..., Any]], tuple[str | None, bool]] = {}

    def judge(subject: Subject) -> Verdict:
        scores: list[float] = []
        said: list[str] = []  # what the scored entries said: a score's reason is kept
        for index, entry in enumerate(entries):
            try:
                function = usercode.check_function(entry.spec)
            except KeyError:
                return Verdict(name, False, f"{entry.spec} was not imported before the run")
            shape = shapes.get((index, function))
            if shape is None:
                shape = (call_problem(function, entry), takes_sample(function, entry))
                shapes[(index, function)] = shape
            problem, with_sample = shape
            if problem is not None:
                return Verdict(name, False, problem)
            extra = [view_of(subject, modifiers)] if with_sample else []
            try:
                outcome = function(subject.text, subject.case, *extra, **entry.args)
            except Exception as exc:
                return Verdict(
                    name, False, f"{entry.spec} raised {type(exc).__name__}: {short(str(exc))}"
                )
            verdict = _outcome(entry, outcome)
            if isinstance(verdict, str):
                return Verdict(name, False, verdict)
            ok, reason, score = verdict
            if score is not None:
                scores.append(score)
                said += [reason] if reason else []
            # Several entries are one check: its score is the lowest of theirs.
            lowest = min(scores) if scores else None
            if not ok:
                return Verdict(name, False, reason or f"{entry.spec} returned False", lowest)
        return Verdict(name, True, "; ".join(said), min(scores) if scores else None)

    return judge
