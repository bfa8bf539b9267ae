"""Checks on a sample's recorded figures: finish reason, latency, cost, tokens."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from gate.checks.base import (
    CheckSpecError,
    Factory,
    Judge,
    Modifiers,
    Subject,
    Verdict,
    describe,
    string_list,
)

# --- the sample's recorded figures ---------------------------------------------

#: providers' own stop reasons, by what they mean (OpenAI's names)
FINISH_REASONS = {
    "end_turn": "stop",  # Anthropic
    "stop_sequence": "stop",  # Anthropic
    "completed": "stop",  # OpenAI Responses
    "max_tokens": "length",  # Anthropic
    "tool_use": "tool_calls",  # Anthropic
}


def finish_name(reason: str) -> str:
    """A provider's stop reason by what it means, in OpenAI's words."""
    return FINISH_REASONS.get(reason, reason)


def finish_reason(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    allowed = string_list(name, arg)
    wanted = {finish_name(reason) for reason in allowed}
    expected = " or ".join(describe(reason) for reason in allowed)

    def judge(subject: Subject) -> Verdict:
        recorded = subject.stop_reason
        if not isinstance(recorded, str) or not recorded:
            return Verdict(name, False, "unknown finish reason (the provider reported none)")
        meaning = finish_name(recorded)
        if meaning in wanted:
            return Verdict(name, True)
        shown = describe(recorded) + (f" ({meaning})" if meaning != recorded else "")
        if meaning == "length":
            return Verdict(
                name,
                False,
                f"the answer was cut off at the output token limit (finish reason {shown}, "
                f"expected {expected}): raise max_tokens or ask for a shorter answer",
            )
        return Verdict(name, False, f"finish reason {shown}, expected {expected}")

    return judge


def _limit(name: str, arg: Any, *, whole: bool) -> float:
    number = isinstance(arg, int) if whole else isinstance(arg, int | float)
    infinite = isinstance(arg, float) and not math.isfinite(arg)
    if isinstance(arg, bool) or not number or infinite or arg < 0:
        kind = "a whole number ≥ 0" if whole else "a number ≥ 0"
        raise CheckSpecError(f"{name} takes {kind}, got {describe(arg)}")
    limit: float = arg  # an int stays exact: a YAML integer may be too large for a float
    return limit


def _budget(
    unknown: str,
    read: Callable[[Subject], Any],
    figure: Callable[[float], str],
    limit_of: Callable[[float], str],
    *,
    whole: bool = False,
) -> Factory:
    """A check that a recorded figure is within a limit; an unknown figure fails."""

    def factory(name: str, arg: Any, modifiers: Modifiers) -> Judge:
        limit = _limit(name, arg, whole=whole)

        def judge(subject: Subject) -> Verdict:
            value = read(subject)
            if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
                return Verdict(name, False, unknown)  # None, or NaN: no figure to judge
            if value <= limit:
                return Verdict(name, True)
            return Verdict(name, False, f"{figure(value)}, the limit is {limit_of(limit)}")

        return judge

    return factory


def _number(value: float) -> str:
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.1f}".removesuffix(".0")


def _usd(value: float) -> str:
    if isinstance(value, int) or math.isinf(value):
        return f"${value}"
    return "$" + (f"{value:.6f}".rstrip("0").rstrip(".") if value >= 0.000001 else f"{value:g}")


max_latency_ms = _budget(
    "unknown latency (the provider reported none)",
    lambda subject: subject.latency_ms,
    lambda ms: f"recorded latency {_number(ms)} ms",
    lambda ms: f"{_number(ms)} ms",
)
max_cost_usd = _budget(
    "unknown cost (the provider reported none, and `pricing` in the config has no price for "
    "this model)",
    lambda subject: subject.cost_usd,
    lambda usd: f"recorded cost {_usd(usd)}",
    _usd,
)
max_output_tokens = _budget(
    "unknown output tokens (the provider reported none)",
    lambda subject: subject.output_tokens,
    lambda count: f"{_number(count)} output tokens",
    _number,
    whole=True,
)
