"""Deterministic checks: the judgement of an output, owned by the suite.

Each check is a factory: it receives the argument from a case's `expect`
entry, validates it (raising `CheckSpecError`, which the case loader turns
into a `file:line` problem) and returns a callable that judges one output.
A check never raises on odd output; it fails with a reason a person can act on.
The modules group them by what they read: the text, the recorded figures,
JSON, tool calls; the pinned judge and user-written checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gate.checks.base import (
    MAX_PATTERN_SIZE,
    CheckSpecError,
    Factory,
    Judge,
    Modifiers,
    Subject,
    Verdict,
    pattern_size,
)
from gate.checks.custom import SampleView, custom, custom_specs, prepared_problems
from gate.checks.figures import (
    finish_reason,
    max_cost_usd,
    max_latency_ms,
    max_output_tokens,
)
from gate.checks.graded import JUDGED, judged_checks, llm_judge, uses_judge
from gate.checks.moderation import moderated_text, moderation
from gate.checks.overlap import bleu, chrf, rouge_l, rouge_n, token_f1
from gate.checks.privacy import no_pii
from gate.checks.ragjudge import (
    answer_relevance,
    context_precision,
    context_recall,
    faithfulness,
)
from gate.checks.retrieval import mrr, ndcg, retrieval_precision, retrieval_recall
from gate.checks.similar import embedded_texts, embedding_reference, levenshtein, similar
from gate.checks.structured import (
    citations,
    fields,
    fields_absent,
    fields_present,
    json_check,
    json_schema,
)
from gate.checks.text import (
    contains,
    contains_any,
    ends_with,
    equals,
    max_chars,
    max_words,
    min_chars,
    min_words,
    not_contains,
    not_regex,
    parse_normalize,
    regex,
    starts_with,
)
from gate.checks.tools import (
    declared_tools,
    tool_args,
    tool_args_schema,
    tool_args_valid,
    tool_called,
    tool_not_called,
    tool_sequence,
)
from gate.checks.trajectory import trajectory
from gate.errors import SystemCallError

__all__ = [
    "KNOWN_KEYS",
    "MAX_PATTERN_SIZE",
    "REGISTRY",
    "RUN_JUDGED",
    "CheckSpecError",
    "Factory",
    "Judge",
    "Modifiers",
    "SampleView",
    "Subject",
    "Verdict",
    "build",
    "custom_specs",
    "declared_tools",
    "embedded_texts",
    "embedding_reference",
    "evaluate",
    "judged_checks",
    "llm_judge",
    "moderated_text",
    "pattern_size",
    "prepared_problems",
    "run_judged",
    "service_checks",
    "uses_judge",
]

REGISTRY: dict[str, Factory] = {
    "equals": equals,
    "contains": contains,
    "contains_any": contains_any,
    "not_contains": not_contains,
    "regex": regex,
    "not_regex": not_regex,
    "max_words": max_words,
    "min_words": min_words,
    "max_chars": max_chars,
    "min_chars": min_chars,
    "starts_with": starts_with,
    "ends_with": ends_with,
    "finish_reason": finish_reason,
    "max_latency_ms": max_latency_ms,
    "max_cost_usd": max_cost_usd,
    "max_output_tokens": max_output_tokens,
    "json": json_check,
    "json_schema": json_schema,
    "fields": fields,
    "fields_present": fields_present,
    "fields_absent": fields_absent,
    "citations": citations,
    "tool_called": tool_called,
    "tool_not_called": tool_not_called,
    "tool_sequence": tool_sequence,
    "tool_args": tool_args,
    "tool_args_valid": tool_args_valid,
    "tool_args_schema": tool_args_schema,
    "check": custom,
    "judge": llm_judge,
    "similar": similar,
    "levenshtein": levenshtein,
    "moderation": moderation,
    # issue #24: production-derived outputs must not carry personal data (gate.pii)
    "no_pii": no_pii,
    # issue #23's deterministic metrics: overlap with a reference, retrieval, trajectories
    "rouge_n": rouge_n,
    "rouge_l": rouge_l,
    "bleu": bleu,
    "chrf": chrf,
    "token_f1": token_f1,
    "retrieval_recall": retrieval_recall,
    "retrieval_precision": retrieval_precision,
    "mrr": mrr,
    "ndcg": ndcg,
    "trajectory": trajectory,
    # the RAG metrics, through the pinned judge (gate.checks.ragjudge)
    "faithfulness": faithfulness,
    "answer_relevance": answer_relevance,
    "context_recall": context_recall,
    "context_precision": context_precision,
}

MODIFIERS = {"normalize", "extract_json"}
KNOWN_KEYS = set(REGISTRY) | MODIFIERS


def service_checks(expect: Mapping[str, Any]) -> set[str]:
    """The case's checks that measure with a pinned service (embeddings, moderation)."""
    names = {"similar"} if embedding_reference(expect) is not None else set()
    return names | ({"moderation"} & set(expect))


#: checks that ask the pinned judge (gate.judging.judge): the gate asks it itself, apart
#: from the rest (gate.pipeline.replay, gate.pipeline.livejudge), and gate.deciding.recheck
#: takes that answer as given: the judge and the RAG metrics (gate.checks.ragjudge)
RUN_JUDGED = frozenset(JUDGED)


def run_judged(expect: Mapping[str, Any], *, replay: bool) -> set[str]:
    """The case's checks a supervised run judges when the gate judges the rest
    (gate.deciding.recheck): outside replay the service checks, which only the run measured
    (in replay the gate measures them from the recordings it read first). Never the judge:
    the gate asks it itself."""
    return set() if replay else service_checks(expect)


def modifiers_of(expect: Mapping[str, Any]) -> Modifiers:
    extract = expect.get("extract_json", False)
    if not isinstance(extract, bool):
        raise CheckSpecError(f"extract_json takes true or false, got {extract!r}")
    normalize = parse_normalize(expect["normalize"]) if "normalize" in expect else []
    return Modifiers(normalize=tuple(normalize), extract_json=extract)


def build(expect: Mapping[str, Any]) -> list[tuple[str, Judge]]:
    """Turn a case's `expect` mapping into judges; raises CheckSpecError(key, ...)."""
    modifiers = modifiers_of(expect)
    judges = []
    for key, arg in expect.items():
        if key in MODIFIERS:
            continue
        factory = REGISTRY.get(key)
        if factory is None:
            raise CheckSpecError(f"unknown check {key!r}")
        judges.append((key, factory(key, arg, modifiers)))
    if not judges:
        raise CheckSpecError("expect names no check (a modifier alone judges nothing)")
    return judges


def evaluate(judges: Sequence[tuple[str, Judge]], subject: Subject) -> list[Verdict]:
    """Run every judge; a judge that raises anyway becomes a failed verdict."""
    verdicts = []
    for name, judge in judges:
        try:
            verdicts.append(judge(subject))
        except SystemCallError:
            raise  # the judge could not judge: the caller makes the sample an error
        except Exception as exc:  # a bug in a check must not end the run
            verdicts.append(Verdict(name, False, f"check crashed: {type(exc).__name__}: {exc}"))
    return verdicts
