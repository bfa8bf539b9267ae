"""Mapping an exchange's request onto the suite's input shape.

The shape is the config's `input_schema:` (a JSON Schema of a case's `input`) when it
declares one; otherwise it is read off the existing cases' input keys. A request becomes
one of three inputs: the source's own named fields (a LangSmith chain's `{question}`),
the message list (`{messages: [...]}`), or the last user message under the suite's one
text key (`{question: "…"}`). What does not fit is named, key by key; the draft is still
written (the evidence is captured before the log rotates), its input marked for a person
to complete.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gate.grow.exchange import Exchange
from gate.yamlfile import printable

#: key names a suite's one text input is usually called, in the order preferred
TEXT_KEYS = ("message", "question", "query", "input", "prompt", "text", "user_input")


@dataclass(frozen=True, slots=True)
class Shaped:
    input: dict[str, Any]
    #: how the input was made, for the command's output
    how: str
    #: what does not fit the suite's shape ("missing 'order_id'"); empty when it fits
    differences: list[str] = field(default_factory=list)


def messages_input(exchange: Exchange) -> dict[str, Any]:
    return {"messages": [{"role": m.role, "content": m.text} for m in exchange.messages]}


def shape_input(
    exchange: Exchange, schema: Mapping[str, Any] | None, inputs: Sequence[Mapping[str, Any]]
) -> Shaped:
    """The case input for `exchange`, shaped as `schema` or the existing `inputs` say."""
    if schema is not None:
        return _by_schema(exchange, schema)
    return _by_cases(exchange, inputs)


def _by_cases(exchange: Exchange, inputs: Sequence[Mapping[str, Any]]) -> Shaped:
    if not inputs:
        return Shaped(
            messages_input(exchange),
            "the suite has no case to take a shape from: the messages as they were",
        )
    shapes = Counter(frozenset(i) for i in inputs)
    # The keys every case has; when no key is shared, the shape most cases have.
    common = frozenset.intersection(*shapes) or shapes.most_common(1)[0][0]
    usual = "{" + ", ".join(sorted(common)) + "}"
    if "messages" in common:
        return Shaped(
            messages_input(exchange),
            f"the suite's cases take {usual}: the messages",
            [f"missing {k!r} (every case has it)" for k in sorted(common - {"messages"})],
        )
    if common <= set(exchange.fields):
        taken = {key: exchange.fields[key] for key in sorted(common)}
        return Shaped(taken, f"the suite's cases take {usual}: the source's own fields")
    texts = [k for k in common if all(isinstance(i[k], str) for i in inputs if k in i)]
    key = next((k for k in TEXT_KEYS if k in texts), min(texts) if texts else "message")
    made = {key: exchange.user_text()}
    missing = sorted(common - {key})
    return Shaped(
        made,
        f"the suite's cases take {usual}: the last user message is `{key}`",
        [f"missing {k!r} (every case has it)" for k in missing],
    )


def _by_schema(exchange: Exchange, schema: Mapping[str, Any]) -> Shaped:
    properties = schema.get("properties")
    names = list(properties) if isinstance(properties, dict) else []
    required = [k for k in schema.get("required", []) if isinstance(k, str)]
    candidates: list[tuple[dict[str, Any], str]] = []
    if exchange.fields:
        candidates.append((dict(exchange.fields), "the source's own fields"))
    if "messages" in names:
        candidates.append((messages_input(exchange), "the messages"))
    texts = [
        k
        for k in names
        if isinstance(properties, dict)
        and isinstance(properties[k], dict)
        and properties[k].get("type") == "string"
    ]
    key = next((k for k in TEXT_KEYS if k in texts), (required or texts or ["message"])[0])
    candidates.append(({key: exchange.user_text()}, f"the last user message is `{key}`"))
    best: tuple[dict[str, Any], str, list[str]] | None = None
    for made, how in candidates:
        problems = schema_problems(made, schema)
        if not problems:
            return Shaped(made, f"fits `input_schema`: {how}")
        if best is None or len(problems) < len(best[2]):
            best = (made, how, problems)
    assert best is not None  # there is always the one-text candidate
    return Shaped(best[0], f"`input_schema`: {best[1]}", best[2])


def schema_problems(value: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """Why `value` does not fit `schema`, one short line a problem (at most five)."""
    from jsonschema import Draft202012Validator

    problems = []
    for error in sorted(Draft202012Validator(schema).iter_errors(value), key=str)[:5]:
        where = "/".join(str(p) for p in error.absolute_path)
        if error.validator == "required":
            problems.append(f"missing {error.message.split(' is a required')[0]}")
        elif error.validator == "additionalProperties":
            problems.append(f"extra: {error.message[:200]}")
        else:
            problems.append(f"{where or 'input'}: {error.message[:200]}")
    # The messages quote the input, which is untrusted text: one printable line each.
    return [printable(problem) for problem in problems]
