"""Checks on the tool calls a sample made."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gate.checks.base import (
    CheckSpecError,
    Judge,
    Modifiers,
    Subject,
    Verdict,
    describe,
    short,
    string_list,
)
from gate.checks.structured import MISSING, json_equal, parse_path, resolve

# --- tool-call checks ---------------------------------------------------------


def _called(subject: Subject) -> list[str]:
    return [call.name for call in subject.tool_calls]


def tool_called(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    wanted = string_list(name, arg)

    def judge(subject: Subject) -> Verdict:
        called = _called(subject)
        missing = [tool for tool in wanted if tool not in called]
        if not missing:
            return Verdict(name, True)
        return Verdict(
            name, False, f"not called: {', '.join(missing)} (called: {', '.join(called) or 'none'})"
        )

    return judge


def tool_not_called(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    forbidden = string_list(name, arg)

    def judge(subject: Subject) -> Verdict:
        found = [tool for tool in forbidden if tool in _called(subject)]
        if not found:
            return Verdict(name, True)
        return Verdict(name, False, f"called forbidden tool: {', '.join(found)}")

    return judge


def tool_sequence(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    sequence = string_list(name, arg, allow_single=False)

    def judge(subject: Subject) -> Verdict:
        called = iter(_called(subject))
        # A subsequence test: other calls may come between the named ones.
        if all(any(tool == c for c in called) for tool in sequence):
            return Verdict(name, True)
        return Verdict(
            name,
            False,
            f"expected calls in order {' → '.join(sequence)}, "
            f"got {' → '.join(_called(subject)) or 'no calls'}",
        )

    return judge


def tool_args(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    if not isinstance(arg, Mapping) or not all(isinstance(v, Mapping) for v in arg.values()):
        raise CheckSpecError("tool_args takes {tool name: {dotted path: expected value}}")
    expected = {
        tool: [(str(p), parse_path(str(p)), v) for p, v in paths.items()]
        for tool, paths in arg.items()
    }

    def judge(subject: Subject) -> Verdict:
        problems = []
        for tool, checks in expected.items():
            calls = [call for call in subject.tool_calls if call.name == tool]
            if not calls:
                problems.append(f"{tool}: not called")
                continue
            # Any one call of the tool satisfying every path is enough.
            best: list[str] | None = None
            for call in calls:
                misses = []
                if call.invalid_arguments is not None:
                    raw = short(call.invalid_arguments, 40)
                    best = best or [f"{tool}: arguments are not a JSON object ({raw})"]
                    continue
                for label, path, value in checks:
                    actual = resolve(call.arguments, path)
                    if actual is MISSING:
                        misses.append(f"{tool}.{label}: missing")
                    elif not json_equal(actual, value):
                        misses.append(
                            f"{tool}.{label}: expected {describe(value)}, got {describe(actual)}"
                        )
                if best is None or len(misses) < len(best):
                    best = misses
            problems.extend(best or [])
        if not problems:
            return Verdict(name, True)
        return Verdict(name, False, "; ".join(problems))

    return judge
