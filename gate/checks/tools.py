"""Checks on the tool calls a sample made."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from gate.checks.base import (
    UNMEASURED,
    CheckSpecError,
    Judge,
    Modifiers,
    Subject,
    Verdict,
    describe,
    short,
    string_list,
)
from gate.checks.structured import (
    MISSING,
    compile_schema,
    json_equal,
    parse_path,
    resolve,
    schema_problem,
)

if TYPE_CHECKING:
    import jsonschema

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

    paths = sum(len(checks) for checks in expected.values())

    def judge(subject: Subject) -> Verdict:
        problems = []
        missed = 0  # expected paths the best call of each tool gets wrong
        for tool, checks in expected.items():
            calls = [call for call in subject.tool_calls if call.name == tool]
            if not calls:
                problems.append(f"{tool}: not called")
                missed += len(checks)
                continue
            # Any one call of the tool satisfying every path is enough.
            best: list[str] | None = None
            unread = True  # no call of the tool had arguments to read
            for call in calls:
                misses = []
                if call.invalid_arguments is not None:
                    raw = short(call.invalid_arguments, 40)
                    # `best` may be [] already: a call that had every path right stands.
                    if best is None:
                        best = [f"{tool}: arguments are not a JSON object ({raw})"]
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
                    best, unread = misses, False
            problems.extend(best or [])
            missed += len(checks) if unread else len(best or [])
        # The score: the fraction of expected arguments the best call of each tool has right.
        score = 1 - missed / paths if paths else float(not problems)
        if not problems:
            return Verdict(name, True, score=score)
        return Verdict(name, False, "; ".join(problems), score)

    return judge


def declared_tools(system: Mapping[str, Any]) -> dict[str, Any] | None:
    """Tool name → `parameters` schema, from a system's `tools:` (None when it has none)."""
    tools = system.get("tools")
    if not isinstance(tools, list) or not tools:
        return None
    declared: dict[str, Any] = {}
    for tool in tools:
        if isinstance(tool, Mapping) and isinstance(tool.get("name"), str):
            declared[tool["name"]] = tool.get("parameters") or {"type": "object"}
    return declared


#: how many failing calls a reason lists before it only counts the rest
SHOWN_CALLS = 3


def _argument_problems(
    subject: Subject, schema_for: Callable[[str], jsonschema.protocols.Validator | str | None]
) -> tuple[list[str], int]:
    """One line per call whose arguments break its tool's schema (`schema_for` gives a
    validator, a reason the call cannot be judged, or None to leave the call alone), and
    how many calls were judged."""
    problems = []
    judged = 0
    for index, call in enumerate(subject.tool_calls, start=1):
        label = f"call {index} ({call.name})"
        validator = schema_for(call.name)
        if validator is None:
            continue
        judged += 1
        if isinstance(validator, str):
            problems.append(f"{label}: {validator}")
        elif call.invalid_arguments is not None:
            raw = short(call.invalid_arguments, 40)
            problems.append(f"{label}: arguments are not a JSON object ({raw})")
        elif (problem := schema_problem(validator, call.arguments)) is not None:
            problems.append(f"{label}: {problem}")
    return problems, judged


def _summarised(name: str, found: tuple[list[str], int]) -> Verdict:
    problems, judged = found
    # The score: the fraction of the judged calls whose arguments hold (none judged: 1).
    score = 1 - len(problems) / judged if judged else 1.0
    if not problems:
        return Verdict(name, True, score=score)
    shown = "; ".join(problems[:SHOWN_CALLS])
    more = len(problems) - SHOWN_CALLS
    reason = shown + (f"; and {more} more call(s)" if more > 0 else "")
    return Verdict(name, False, reason, score)


def tool_args_valid(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    if arg is not True:
        raise CheckSpecError(f"tool_args_valid takes `true`, got {describe(arg)}")
    # The schemas come from the system config, which a case does not see when it
    # loads; they are compiled on first use, once per distinct schema.
    compiled: dict[str, jsonschema.protocols.Validator | str] = {}

    def judge(subject: Subject) -> Verdict:
        declared = subject.declared_tools
        if declared is None:
            return Verdict(
                name,
                False,
                "the system declares no tools: add `tools:` with `parameters` to the system, "
                "or use tool_args_schema",
                UNMEASURED,
            )

        def schema_for(tool: str) -> jsonschema.protocols.Validator | str:
            if tool not in declared:
                known = ", ".join(sorted(declared))
                return f"the system declares no tool of this name (it declares: {known})"
            key = json.dumps(declared[tool], sort_keys=True, default=str)
            if key not in compiled:
                try:
                    compiled[key] = compile_schema(f"tools.{tool}.parameters", declared[tool])
                except CheckSpecError as exc:
                    compiled[key] = f"its declared schema cannot be used ({exc})"
            return compiled[key]

        return _summarised(name, _argument_problems(subject, schema_for))

    return judge


def tool_args_schema(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    if not isinstance(arg, Mapping) or not arg:
        raise CheckSpecError(
            f"tool_args_schema takes {{tool name: JSON Schema}}, got {describe(arg)}"
        )
    validators = {
        str(tool): compile_schema(f"tool_args_schema.{tool}", schema)
        for tool, schema in arg.items()
    }

    def judge(subject: Subject) -> Verdict:
        # Calls to other tools are not this check's business (tool_not_called is).
        return _summarised(name, _argument_problems(subject, validators.get))

    return judge
