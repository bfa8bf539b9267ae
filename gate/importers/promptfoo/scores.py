"""promptfoo's score-based assertions as casegate's score checks.

Each score lies in [0, 1] and `threshold` turns it into pass/fail, as in promptfoo. The
defaults are promptfoo's (its documentation and assertion code, PROMPTFOO_VERSION):
`similar` 0.75 (0.8 when written in a CSV `__expected` column), `rouge-n` 0.75 with n = 1,
`bleu` 0.5, `levenshtein` 5 edits, and 0 for the RAG assertions (`context-faithfulness`,
`context-recall`, `context-relevance`, `answer-relevance`), which then pass every output.

The checks are written to the shapes casegate's checks take. A check this casegate does
not have yet (`standing_in`) is validated here, against the same shape, so an import never
writes a spec the check will refuse once it lands.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from gate import checks
from gate.checks.moderation import CATEGORIES as moderation_categories
from gate.importers.promptfoo.common import NeedsPerson
from gate.importers.promptfoo.expect import RUBRIC_SCALE, Expect
from gate.importers.promptfoo.js import js_string, shown_value

#: promptfoo's defaults for what its assertions measure
SIMILAR_THRESHOLD = 0.75
LEVENSHTEIN_THRESHOLD = 5
ROUGE_N = 1
ROUGE_THRESHOLD = 0.75
BLEU_THRESHOLD = 0.5
RAG_THRESHOLD = 0.0
EMBEDDINGS_MODEL = "text-embedding-3-large"
MODERATION_MODEL = "omni-moderation-latest"
#: casegate scores moderation; promptfoo takes the API's yes/no: a starting point
MODERATION_MAX_SCORE = 0.5

#: casegate's score checks, as their contract gives them: (keys, required keys)
SHAPES: dict[str, tuple[set[str], set[str]]] = {
    "rouge_n": ({"to", "n", "threshold"}, {"to", "threshold"}),
    "rouge_l": ({"to", "threshold"}, {"to", "threshold"}),
    "bleu": ({"to", "threshold"}, {"to", "threshold"}),
    "chrf": ({"to", "threshold"}, {"to", "threshold"}),
    "token_f1": ({"to", "threshold"}, {"to", "threshold"}),
    "faithfulness": ({"threshold"}, {"threshold"}),
    "answer_relevance": ({"threshold"}, {"threshold"}),
    "context_recall": ({"reference", "threshold"}, {"reference", "threshold"}),
    "context_precision": ({"reference", "threshold"}, {"reference", "threshold"}),
}
#: the checks that ask the pinned judge, as `judge` does
JUDGED = frozenset(
    {"judge", "faithfulness", "answer_relevance", "context_recall", "context_precision"}
)
SCALES = ("1-5", "0-10")


def shape_problem(key: str, arg: Any) -> str | None:
    """Why `arg` is not the shape of casegate's `key` check (one of SHAPES), else None."""
    keys, required = SHAPES[key]
    if not isinstance(arg, Mapping) or not required <= set(arg) or not set(arg) <= keys:
        return f"{key} takes {{{', '.join(sorted(keys))}}}, got {shown_value(arg, 80)}"
    if not _unit(arg["threshold"]):
        return f"{key}: threshold must be a number from 0 to 1"
    for text in ("to", "reference"):
        if text in arg and (not isinstance(arg[text], str) or not arg[text].strip()):
            return f"{key}: `{text}` must be a non-empty string"
    if key == "rouge_n" and arg.get("n", 1) not in (1, 2, 3, 4):
        return "rouge_n: n must be 1, 2, 3 or 4"
    return None


def graded_problem(arg: Any) -> str | None:
    """Why a graded `judge` spec is not of the contract's shape, else None."""
    if not isinstance(arg, Mapping) or arg.get("scale") not in SCALES:
        return f"judge: scale must be one of {', '.join(SCALES)}"
    if not _unit(arg.get("threshold")):
        return "judge: threshold must be a number from 0 to 1"
    return None


def _unit(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1


def _graded_judge_missing() -> bool:
    spec = {"rubric": "r", "scale": RUBRIC_SCALE, "threshold": 0.5}
    try:
        checks.REGISTRY["judge"]("judge", spec, checks.Modifiers())
    except checks.CheckSpecError:
        return True
    return False


def standing_in() -> list[str]:
    """The score checks this casegate lacks, which the import validates by their shape."""
    missing = sorted(key for key in SHAPES if key not in checks.REGISTRY)
    return missing + (["judge (scale, threshold)"] if _graded_judge_missing() else [])


def build_problem(expect: Mapping[str, Any]) -> str | None:
    """Why casegate would refuse `expect` (checks.build), the score checks it lacks judged
    by their shape; None when it would take it."""
    lacking = {key for key in SHAPES if key not in checks.REGISTRY}
    rest: dict[str, Any] = {}
    for key, arg in expect.items():
        if key in lacking:
            problem = shape_problem(key, arg)
            if problem:
                return problem
        elif key == "judge" and isinstance(arg, Mapping) and "scale" in arg:
            problem = graded_problem(arg)
            if problem:
                return problem
            graded_ok = not _graded_judge_missing()
            rest[key] = dict(arg) if graded_ok else {"rubric": arg.get("rubric")}
        else:
            rest[key] = arg
    if not set(rest) - checks.MODIFIERS and set(expect) & lacking:
        return None  # only checks this casegate lacks, each of the right shape
    try:
        checks.build(rest)
    except checks.CheckSpecError as exc:
        return str(exc)
    return None


@contextlib.contextmanager
def stand_ins() -> Iterator[list[str]]:
    """While open, casegate's registry takes the score checks it lacks by their shape, so a
    suite that uses them loads (bench/promptfoo_coverage.py). Yields their names."""
    added: list[str] = []
    original = checks.REGISTRY["judge"]

    def shaped(key: str) -> checks.Factory:
        def factory(name: str, arg: Any, modifiers: checks.Modifiers) -> checks.Judge:
            problem = shape_problem(key, arg)
            if problem:
                raise checks.CheckSpecError(problem)
            return lambda subject: checks.Verdict(name, False, "stand-in: not in this casegate")

        return factory

    def judge(name: str, arg: Any, modifiers: checks.Modifiers) -> checks.Judge:
        if isinstance(arg, Mapping) and "scale" in arg:
            problem = graded_problem(arg)
            if problem:
                raise checks.CheckSpecError(problem)
            arg = {k: v for k, v in arg.items() if k not in ("scale", "threshold")}
        return original(name, arg, modifiers)

    graded_missing = _graded_judge_missing()
    try:
        for key in SHAPES:
            if key not in checks.REGISTRY:
                checks.REGISTRY[key] = shaped(key)
                checks.KNOWN_KEYS.add(key)
                added.append(key)
        if graded_missing:
            checks.REGISTRY["judge"] = judge
            added.append("judge (scale, threshold)")
        yield added
    finally:
        for key in added:
            checks.REGISTRY.pop(key, None)
            checks.KNOWN_KEYS.discard(key)
        checks.REGISTRY["judge"] = original


# --- the mappings -------------------------------------------------------------------------


def threshold_of(assertion: Mapping[str, Any], default: float, low: float, high: float) -> float:
    threshold = assertion.get("threshold")
    if threshold is None:
        threshold = default
    if isinstance(threshold, str):  # a CSV `__config:…:threshold` column is text
        with contextlib.suppress(ValueError):
            threshold = float(threshold)
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not low <= threshold <= high
    ):
        raise NeedsPerson(
            f"`threshold` {js_string(threshold)} is not a number from {low:g} to {high:g}"
        )
    return threshold


def _only_one(expect: Expect, key: str, kind: str) -> None:
    if key in expect.measured:
        raise NeedsPerson(f"a second `{kind}`: a casegate case has one `{key}` check")


def _reference_text(kind: str, value: Any) -> str:
    if isinstance(value, list):
        raise NeedsPerson(
            f"`{kind}` with several references passes when any one is close; casegate's "
            "check compares with one: pick it, or split the case"
        )
    if not isinstance(value, str) or not value.strip():
        raise NeedsPerson(f"`{kind}` takes a non-empty reference text")
    return value


def map_similar(assertion: Mapping[str, Any], value: Any, expect: Expect) -> str:
    value = _reference_text("similar", value)
    _only_one(expect, "similar", "similar")
    minimum = threshold_of(assertion, SIMILAR_THRESHOLD, 0, 1)
    expect.measured["similar"] = {"to": value, "min": minimum, "method": "embedding"}
    own = assertion.get("provider")
    note = (
        f"; its embedding provider {shown_value(own, 60)} is not carried over (one "
        "`embeddings:` pin per suite)"
        if own is not None
        else ""
    )
    return (
        f"`similar` {shown_value(value, 80)} → `similar` (method embedding, min {minimum:g}; "
        f"`embeddings:` pins promptfoo's default model {EMBEDDINGS_MODEL}){note}"
    )


def map_levenshtein(assertion: Mapping[str, Any], value: Any, expect: Expect) -> str:
    if not isinstance(value, str):
        raise NeedsPerson("`levenshtein` takes a reference text")
    _only_one(expect, "levenshtein", "levenshtein")
    limit = threshold_of(assertion, LEVENSHTEIN_THRESHOLD, 0, 8000)
    if limit != int(limit):
        raise NeedsPerson(f"`threshold` {js_string(limit)} is not a whole number of edits")
    expect.measured["levenshtein"] = {"to": value, "max": int(limit)}
    return f"`levenshtein` {shown_value(value, 80)} → `levenshtein` (max {int(limit)} edits)"


def map_moderation(assertion: Mapping[str, Any], value: Any, expect: Expect) -> str:
    categories = [] if value in (None, "") else value
    if not isinstance(categories, list) or not all(isinstance(c, str) for c in categories):
        raise NeedsPerson("`moderation` takes a list of category names")
    unknown = [c for c in categories if c not in moderation_categories]
    if unknown:
        raise NeedsPerson(f"moderation category {unknown[0]!r} is not one OpenAI's model scores")
    _only_one(expect, "moderation", "moderation")
    arg: dict[str, Any] = {"max_score": MODERATION_MAX_SCORE}
    if categories:
        arg["categories"] = list(categories)
    expect.measured["moderation"] = arg
    return (
        f"`moderation` → `moderation: {{max_score: {MODERATION_MAX_SCORE}}}`: promptfoo fails "
        "when the API flags the output, casegate when a score passes the limit (calibrate it)"
    )


def map_rouge_n(assertion: Mapping[str, Any], value: Any, expect: Expect) -> str:
    value = _reference_text("rouge-n", value)
    _only_one(expect, "rouge_n", "rouge-n")
    threshold = threshold_of(assertion, ROUGE_THRESHOLD, 0, 1)
    expect.measured["rouge_n"] = {"to": value, "n": ROUGE_N, "threshold": threshold}
    return (
        f"`rouge-n` {shown_value(value, 80)} → `rouge_n` (n {ROUGE_N}, threshold {threshold:g}); "
        "promptfoo scores ROUGE-1 recall, case-sensitive, on its own tokenizer: a score near "
        "the threshold may fall on the other side"
    )


def map_bleu(assertion: Mapping[str, Any], value: Any, expect: Expect) -> str:
    value = _reference_text("bleu", value)
    _only_one(expect, "bleu", "bleu")
    threshold = threshold_of(assertion, BLEU_THRESHOLD, 0, 1)
    expect.measured["bleu"] = {"to": value, "threshold": threshold}
    return (
        f"`bleu` {shown_value(value, 80)} → `bleu` (threshold {threshold:g}); tokenisation and "
        "smoothing may differ from promptfoo's, so a score near the threshold may move"
    )


def _rag_threshold(assertion: Mapping[str, Any]) -> tuple[float, str]:
    threshold = threshold_of(assertion, RAG_THRESHOLD, 0, 1)
    note = (
        "; promptfoo's default threshold is 0, which passes every output: raise it"
        if assertion.get("threshold") is None
        else ""
    )
    return threshold, note


def _context_note(assertion: Mapping[str, Any], variables: Mapping[str, Any]) -> str:
    if assertion.get("contextTransform") is not None:
        raise NeedsPerson(
            "`contextTransform` is code that reads the contexts out of the output; casegate "
            "reads them from the output the system returns: make the system return them"
        )
    if "context" in variables:
        return "; the contexts from the `context` var, as the case input's `contexts`"
    return "; the test has no `context` var: casegate reads the contexts from the system's output"


def map_rag(
    kind: str,
    assertion: Mapping[str, Any],
    value: Any,
    variables: Mapping[str, Any],
    expect: Expect,
) -> str:
    """`context-faithfulness`, `context-recall`, `context-relevance`, `answer-relevance`."""
    threshold, note = _rag_threshold(assertion)
    query = variables.get("query")
    if kind == "answer-relevance":
        _only_one(expect, "answer_relevance", kind)
        expect.measured["answer_relevance"] = {"threshold": threshold}
        asked = "the `query` var" if isinstance(query, str) else "the rendered prompt"
        return (
            f"`answer-relevance` → `answer_relevance` (threshold {threshold:g}): promptfoo "
            f"compares questions generated from the answer with {asked} by embeddings; casegate "
            f"asks the judge whether the answer addresses the case input{note}"
        )
    context = _context_note(assertion, variables)
    if kind == "context-faithfulness":
        if not isinstance(query, str):
            raise NeedsPerson("`context-faithfulness` needs a `query` var; promptfoo refuses it")
        _only_one(expect, "faithfulness", kind)
        expect.measured["faithfulness"] = {"threshold": threshold}
        return f"`context-faithfulness` → `faithfulness` (threshold {threshold:g}){context}{note}"
    if kind == "context-recall":
        reference = _reference_text(kind, value)
        _only_one(expect, "context_recall", kind)
        expect.measured["context_recall"] = {"reference": reference, "threshold": threshold}
        return (
            f"`context-recall` {shown_value(reference, 80)} → `context_recall` (threshold "
            f"{threshold:g}){context}; without a `context` var promptfoo read the prompt as the "
            f"context{note}"
        )
    if not isinstance(query, str) or not query.strip():
        raise NeedsPerson("`context-relevance` needs a `query` var; promptfoo refuses it")
    _only_one(expect, "context_precision", kind)
    expect.measured["context_precision"] = {"reference": query, "threshold": threshold}
    return (
        f"`context-relevance` → `context_precision` with the `query` var as reference (threshold "
        f"{threshold:g}){context}; promptfoo scores the share of the context's sentences that "
        "help answer the query, casegate the share of the contexts relevant to the reference, "
        f"ranked: the two scores differ when relevant text sits in a few of many contexts{note}"
    )


MEASURED: dict[str, Callable[[Mapping[str, Any], Any, Expect], str]] = {
    "similar": map_similar,
    "levenshtein": map_levenshtein,
    "moderation": map_moderation,
    "rouge-n": map_rouge_n,
    "bleu": map_bleu,
}
RAG = ("context-faithfulness", "context-recall", "context-relevance", "answer-relevance")


def service_pins(expects: list[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The `embeddings:` and `moderation:` pins the imported cases need."""
    pins: dict[str, dict[str, Any]] = {}
    if any(e.get("similar", {}).get("method") == "embedding" for e in expects):
        pins["embeddings"] = {"provider": "openai", "model": EMBEDDINGS_MODEL}
    if any("moderation" in e for e in expects):
        pins["moderation"] = {"provider": "openai", "model": MODERATION_MODEL}
    return pins


def uses_judge(expect: Mapping[str, Any]) -> bool:
    return bool(JUDGED & set(expect))
