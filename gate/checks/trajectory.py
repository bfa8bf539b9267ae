"""An agent's trajectory: the sequence of tools it called, judged as a whole.

`trajectory: {expected: [tools], order: exact | in_order | any_order, forbidden: [tools],
max_steps: N}`; every key may be left out, but the entry needs expected, forbidden or
max_steps (order alone judges nothing). A step is one tool call.

- `order: in_order` (the default, as `tool_sequence`): `expected` is a subsequence of the
  calls; other calls may come between. Score: the longest common subsequence of the two,
  over len(expected).
- `order: exact`: the calls are `expected`, no more, no fewer, in that order. Score: the
  longest common subsequence over the longer of the two, so a missing step and an extra
  one both cost, and only the exact trajectory scores 1.
- `order: any_order`: each expected tool is called at least once, in any order (expected
  is read as a set). Score: the share of its distinct tools that were called.

`forbidden` and `max_steps` are hard failures: a forbidden tool called anywhere, or more
calls than max_steps, fails the check whatever else holds. They do not change the score,
which measures the expected tools alone (so a mean of scores shows how near the agent
came to the right path while its verdicts show every breach); with no `expected` the
check only passes or fails. Whether each call's arguments are valid is `tool_args_valid`
and `tool_args_schema`, which judge every call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gate.checks.base import (
    CheckSpecError,
    Judge,
    Modifiers,
    Subject,
    Verdict,
    describe,
    string_list,
    whole_number,
)
from gate.checks.similar import mapping_arg

ORDERS = ("in_order", "exact", "any_order")
SHAPE = (
    "{expected: [tool names], order: exact | in_order | any_order, "
    "forbidden: [tool names], max_steps: 10}"
)
#: the most calls a reason spells out before it cuts the list
SHOWN_STEPS = 12


def _path(calls: Sequence[str]) -> str:
    if not calls:
        return "no calls"
    shown = " → ".join(calls[:SHOWN_STEPS])
    return shown + (f" → … ({len(calls)} calls)" if len(calls) > SHOWN_STEPS else "")


def trajectory(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    keys = {"expected", "order", "forbidden", "max_steps"}
    mapping_arg(name, arg, keys, set(), SHAPE)
    if not {"expected", "forbidden", "max_steps"} & set(arg):
        raise CheckSpecError(
            f"{name} needs at least one of expected, forbidden or max_steps; it takes {SHAPE}"
        )
    expected = (
        string_list(f"{name}.expected", arg["expected"], allow_single=False)
        if "expected" in arg
        else None
    )
    order = arg.get("order", "in_order")
    if order not in ORDERS:
        raise CheckSpecError(
            f"{name}: `order` is exact, in_order or any_order, got {describe(order)}"
        )
    if "order" in arg and expected is None:
        raise CheckSpecError(f"{name}: `order` says how to match `expected`, which is missing")
    forbidden = (
        string_list(f"{name}.forbidden", arg["forbidden"], allow_single=False)
        if "forbidden" in arg
        else []
    )
    both = sorted(set(expected or ()) & set(forbidden))
    if both:
        raise CheckSpecError(f"{name}: {both[0]!r} is both expected and forbidden")
    limit = whole_number(f"{name}.max_steps", arg["max_steps"]) if "max_steps" in arg else None
    from rapidfuzz.distance import LCSseq  # bit-parallel: long trajectories stay cheap

    def matched(called: list[str]) -> tuple[float, str | None]:
        """The expected tools' score and, when they do not all match, why."""
        assert expected is not None
        if order == "any_order":
            wanted = list(dict.fromkeys(expected))
            missing = [tool for tool in wanted if tool not in called]
            score = 1 - len(missing) / len(wanted)
            why = f"not called: {', '.join(missing)} (called: {_path(called)})"
            return score, why if missing else None
        common = LCSseq.similarity(expected, called)
        if order == "exact":
            score = common / max(len(expected), len(called))
            why = f"expected exactly {_path(expected)}, got {_path(called)}"
            return score, None if called == expected else why
        score = common / len(expected)
        why = (
            f"expected in order {_path(expected)}, got {_path(called)} "
            f"({common} of {len(expected)} in order)"
        )
        return score, None if common == len(expected) else why

    def judge(subject: Subject) -> Verdict:
        called = [call.name for call in subject.tool_calls]
        problems = []
        score = None
        if expected is not None:
            score, why = matched(called)
            if why:
                problems.append(why)
        breaches = [
            f"{tool} (step {step})"
            for step, tool in enumerate(called, start=1)
            if tool in forbidden
        ]
        if breaches:
            problems.append(f"called forbidden tool: {', '.join(breaches[:SHOWN_STEPS])}")
        if limit is not None and len(called) > limit:
            problems.append(f"{len(called)} tool calls, the maximum is {limit}")
        return Verdict(name, not problems, "; ".join(problems), score)

    return judge
