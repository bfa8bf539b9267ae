"""LangSmith runs and Langfuse traces/observations, as their exports and APIs return them.

LangSmith: a JSON list of runs, `{"runs": [...]}` (the runs query API) or one run a line;
a run is `{"id", "name", "run_type", "inputs", "outputs", "error", "extra": {"metadata"},
"feedback_stats", "trace_id", "prompt_tokens", "completion_tokens", "total_cost", …}`.

Langfuse: `{"data": [...]}` (the public API's lists), a list, one record a line, or a
trace with its `observations` and `scores`; an observation is `{"id", "traceId", "type":
"GENERATION", "input", "output", "model", "metadata", "level", "statusMessage", "usage",
"calculatedTotalCost", …}`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from gate.grow.exchange import (
    MAX_MESSAGES,
    Exchange,
    Message,
    SourceError,
    chat_messages,
    clip,
    count,
    flag_in,
    flat_metadata,
    listed,
    mapping,
    money,
    text_of,
    tool_names,
)
from gate.grow.reading import documents, problem

LANGSMITH_EXPECTED = (
    'LangSmith runs: a JSON list, {"runs": [...]} or one run a line, each {"id", "run_type", '
    '"inputs", "outputs", "error", "extra": {"metadata"}, "feedback_stats"}'
)
LANGFUSE_EXPECTED = (
    'Langfuse records: {"data": [...]}, a list or one a line, each an observation {"id", '
    '"traceId", "type": "GENERATION", "input", "output", "level", "usage"} or a trace with '
    '"observations"'
)
#: feedback keys read as a user's verdict: a mean score below one half flags the run
USER_FEEDBACK = ("user", "feedback", "thumb", "rating")
_LC_ROLES = {
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
}


def _records(path: Path, expected: str, wrapper: str) -> list[tuple[int, dict[str, Any]]]:
    records: list[tuple[int, dict[str, Any]]] = []
    for line, document in documents(path, expected):
        if isinstance(document, dict) and isinstance(document.get(wrapper), list):
            document = document[wrapper]
        items = document if isinstance(document, list) else [document]
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                raise SourceError(
                    problem(path, line, f"a record without an `id`; expected {expected}")
                )
            records.append((line, item))
    return records


def read_langsmith(path: Path) -> list[Exchange]:
    runs = _records(path, LANGSMITH_EXPECTED, "runs")
    # An export holds every run of a trace (chains, tools, retrievers): the model calls are
    # what a case replays, so they are kept when there are any.
    llm = [(line, run) for line, run in runs if run.get("run_type") == "llm"]
    if not llm:
        return [_run(path, run) for _, run in runs]
    # People give feedback on the trace's root run (the chain they saw answer), and its
    # inputs are the application's own fields: the model calls under it inherit both.
    roots = {run["id"]: _run(path, run) for _, run in runs if run.get("trace_id") == run["id"]}
    found = []
    for _, run in llm:
        exchange = _run(path, run)
        root = roots.get(run.get("trace_id"))
        if root is not None and root is not exchange:
            exchange = replace(
                exchange,
                flagged=exchange.flagged or root.flagged,
                fields=exchange.fields or root.fields,
            )
        found.append(exchange)
    return found


def _run(path: Path, run: dict[str, Any]) -> Exchange:
    inputs = mapping(run.get("inputs"))
    messages = _lc_messages(inputs.get("messages")) or _prompts(inputs.get("prompts"))
    fields = {k[:200]: clip(v) for k, v in list(inputs.items())[:100] if isinstance(v, str)}
    if not messages and fields:
        messages = (Message("user", text_of("\n".join(fields.values()))),)
    extra = mapping(run.get("extra"))
    metadata = flat_metadata(extra.get("metadata"))
    outputs = run.get("outputs")
    output, calls = _run_output(outputs) if isinstance(outputs, dict) else (None, ())
    error = run.get("error")
    invocation = mapping(extra.get("invocation_params"))
    model = metadata.get("ls_model_name") or invocation.get("model")
    return Exchange(
        kind="langsmith",
        file=str(path),
        line=None,
        ids=tuple(i[:200] for i in (run["id"], run.get("trace_id")) if isinstance(i, str) and i),
        messages=messages,
        model=model[:200] if isinstance(model, str) else None,
        output=output,
        tool_calls=calls,
        error=f"run error: {text_of(error)[:200]}" if isinstance(error, str) and error else None,
        flagged=flag_in(metadata) or _feedback(run.get("feedback_stats")),
        input_tokens=count(run.get("prompt_tokens")),
        output_tokens=count(run.get("completion_tokens")),
        cost_usd=money(run.get("total_cost"))
        if not isinstance(run.get("total_cost"), str)
        else _decimal(run["total_cost"]),
        fields=fields,
        metadata=metadata,
    )


def _decimal(text: str) -> float | None:
    try:
        return money(float(text[:40]))
    except ValueError:
        return None


def _lc_messages(raw: Any) -> tuple[Message, ...]:
    """Chat messages in the forms LangSmith stores: OpenAI's, LangChain's serialised
    (`{"lc": 1, "id": [..., "HumanMessage"], "kwargs": {"content"}}`) or `{"type", "content"}`,
    and a chat model's batch of them (`[[...]]`, of which the first)."""
    if isinstance(raw, list) and raw and isinstance(raw[0], list):
        raw = raw[0]
    plain = chat_messages(raw)
    if plain is not None:
        return plain
    messages = []
    for item in raw[-MAX_MESSAGES:] if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        kwargs = mapping(item.get("kwargs")) or item
        path = listed(item.get("id"))
        kind = path[-1] if path else item.get("type")
        role = _LC_ROLES.get(kind) if isinstance(kind, str) else None
        if role:
            messages.append(Message(role, text_of(kwargs.get("content"))))
    return tuple(messages)


def _prompts(raw: Any) -> tuple[Message, ...]:
    if isinstance(raw, list) and raw and isinstance(raw[-1], str):
        return (Message("user", text_of(raw[-1])),)
    return ()


def _run_output(outputs: dict[str, Any]) -> tuple[str | None, tuple[str, ...]]:
    generations = outputs.get("generations")
    if isinstance(generations, list) and generations:
        first = (
            generations[0][0]
            if isinstance(generations[0], list) and generations[0]
            else generations[0]
        )
        if isinstance(first, dict):
            message = mapping(first.get("message"))
            kwargs = mapping(message.get("kwargs")) or message
            text = (
                first.get("text") if isinstance(first.get("text"), str) else kwargs.get("content")
            )
            return text_of(text), tool_names(kwargs.get("tool_calls"))
    choices = outputs.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = mapping(choices[0].get("message"))
        return text_of(message.get("content")), tool_names(message.get("tool_calls"))
    for key in ("output", "answer", "text", "content"):
        if isinstance(outputs.get(key), str):
            return text_of(outputs[key]), ()
    return None, ()


def _feedback(stats: Any) -> str | None:
    """Negative user feedback in a run's `feedback_stats` ({key: {"n", "avg"}})."""
    if not isinstance(stats, dict):
        return None
    for key, value in list(stats.items())[:100]:
        avg = value.get("avg") if isinstance(value, dict) else None
        if (
            isinstance(key, str)
            and any(word in key.lower() for word in USER_FEEDBACK)
            and isinstance(avg, int | float)
            and avg < 0.5
        ):
            return f"feedback {key[:60]} avg {avg:g}"
    return None


def read_langfuse(path: Path) -> list[Exchange]:
    found: list[Exchange] = []
    for _, record in _records(path, LANGFUSE_EXPECTED, "data"):
        observations = record.get("observations")
        scores = record.get("scores")
        nested = (
            [o for o in observations if isinstance(o, dict)]
            if isinstance(observations, list)
            else []
        )
        generations = [o for o in nested if o.get("type") == "GENERATION"]
        if generations:
            found.extend(_observation(path, o, scores, record) for o in generations)
        elif record.get("type", "GENERATION") == "GENERATION" and "input" in record:
            found.append(_observation(path, record, scores, record))
    return found


def _observation(path: Path, item: dict[str, Any], scores: Any, trace: dict[str, Any]) -> Exchange:
    raw = item.get("input")
    if isinstance(raw, dict) and "messages" in raw:
        raw = raw["messages"]
    messages = chat_messages(raw) or ()
    fields = (
        {k[:200]: clip(v) for k, v in list(raw.items())[:100] if isinstance(v, str)}
        if isinstance(raw, dict)
        else {}
    )
    if not messages and (isinstance(raw, str) or fields):
        messages = (
            Message("user", text_of(raw if isinstance(raw, str) else "\n".join(fields.values()))),
        )
    output = item.get("output")
    calls: tuple[str, ...] = ()
    if isinstance(output, dict):
        calls = tool_names(output.get("tool_calls"))
        output = output.get("content")
    metadata = flat_metadata(item.get("metadata")) or flat_metadata(trace.get("metadata"))
    usage = (
        item.get("usageDetails")
        if isinstance(item.get("usageDetails"), dict)
        else item.get("usage")
    )
    usage = usage if isinstance(usage, dict) else {}
    status = item.get("statusMessage")
    error = None
    if item.get("level") == "ERROR":
        error = "level ERROR" + (f": {text_of(status)[:200]}" if isinstance(status, str) else "")
    trace_id = item.get("traceId") if isinstance(item.get("traceId"), str) else trace.get("id")
    return Exchange(
        kind="langfuse",
        file=str(path),
        line=None,
        ids=tuple(i[:200] for i in (item.get("id"), trace_id) if isinstance(i, str) and i),
        messages=messages,
        model=item["model"][:200] if isinstance(item.get("model"), str) else None,
        output=text_of(output) if output is not None else None,
        tool_calls=calls,
        error=error,
        flagged=flag_in(metadata) or _scores(scores),
        input_tokens=count(usage.get("input")),
        output_tokens=count(usage.get("output")),
        cost_usd=money(item.get("calculatedTotalCost")),
        fields=fields,
        metadata=metadata,
    )


def _scores(scores: Any) -> str | None:
    """A user's negative score on the trace: a feedback-like name with value 0 (or below
    one half, or false)."""
    for score in scores[:100] if isinstance(scores, list) else []:
        if not isinstance(score, dict) or not isinstance(score.get("name"), str):
            continue
        value = score.get("value")
        if any(word in score["name"].lower() for word in USER_FEEDBACK) and (
            value is False or (isinstance(value, int | float) and value < 0.5)
        ):
            return f"score {score['name'][:60]}={value}"
    return None
