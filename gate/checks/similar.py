"""Closeness to a reference text: `similar` (by embeddings or by words) and `levenshtein`.

Model output is untrusted and may be huge, so `similar` compares at most
MAX_TEXT_CHARS characters (an embedding model reads about that many tokens at
most) and fails a longer output instead of cutting it: a cut output could pass
on its first lines alone. `levenshtein` never computes a distance it can bound
from the lengths alone.
"""

from __future__ import annotations

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
)
from gate.checks.text import normalizer

#: the longest output (and reference) `similar` and `levenshtein` compare
MAX_TEXT_CHARS = 8_000
METHODS = ("embedding", "lexical")
#: rapidfuzz's ratio for `method: lexical`: word order, case and punctuation ignored,
#: and words the reference lacks count against the output (token_set_ratio would give
#: 100 to any output that holds every word of the reference, whatever else it says)
LEXICAL_RATIO = "token_sort_ratio"
#: the longest output `levenshtein` measures a score for once it has failed on length
MEASURED_CHARS = 4 * MAX_TEXT_CHARS
#: float32 vectors of one text give a cosine a hair below 1
TOLERANCE = 1e-6
SHOWN_CHARS = 30


def figure(score: float, limit: float) -> str:
    """`score` with as few decimals as show it on its own side of `limit`."""
    for places in (2, 3, 4, 6):
        text = f"{score:.{places}f}"
        if float(text) != limit and (float(text) < limit) == (score < limit):
            return text
    return repr(score)


def _reference(name: str, arg: Mapping[str, Any], shape: str, *, blank: bool) -> str:
    to = arg.get("to")
    if not isinstance(to, str) or (not blank and not to.strip()):
        raise CheckSpecError(f"{name}: `to` must be a non-empty string; {name} takes {shape}")
    if len(to) > MAX_TEXT_CHARS:
        raise CheckSpecError(
            f"{name}: `to` is {len(to):,} characters; the limit is {MAX_TEXT_CHARS:,}"
        )
    return to


def mapping_arg(name: str, arg: Any, keys: set[str], required: set[str], shape: str) -> None:
    if not isinstance(arg, Mapping) or not required <= set(arg) or not set(arg) <= keys:
        extra = sorted(set(arg) - keys) if isinstance(arg, Mapping) else []
        hint = f" (unknown: {', '.join(map(str, extra))})" if extra else ""
        raise CheckSpecError(f"{name} takes {shape}, got {describe(arg)}{hint}")


def similar(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    shape = '{to: "reference text", min: 0.8, method: embedding | lexical}'
    mapping_arg(name, arg, {"to", "min", "method"}, {"to", "min"}, shape)
    to = _reference(name, arg, shape, blank=False)
    minimum = arg["min"]
    if isinstance(minimum, bool) or not isinstance(minimum, int | float) or not 0 <= minimum <= 1:
        raise CheckSpecError(f"{name}: `min` must be a number from 0 to 1, got {describe(minimum)}")
    method = arg.get("method", "embedding")
    if method not in METHODS:
        raise CheckSpecError(f"{name}: `method` is embedding or lexical, got {describe(method)}")
    if method == "lexical":
        # rapidfuzz only for a suite that compares this way: every run imports this module.
        from rapidfuzz import fuzz, utils

        if not utils.default_process(to):
            raise CheckSpecError(f"{name}: `to` has no letter or digit to compare word by word")
    shown = describe(to, SHOWN_CHARS)

    def judge(subject: Subject) -> Verdict:
        text = subject.text
        if len(text) > MAX_TEXT_CHARS:
            return Verdict(
                name,
                False,
                f"the output is {len(text):,} characters, more than the {MAX_TEXT_CHARS:,} "
                f"similar compares, so it is not judged similar to {shown}",
                UNMEASURED,
            )
        if method == "lexical":
            score = fuzz.token_sort_ratio(to, text, processor=utils.default_process) / 100
            how = f"lexical, {LEXICAL_RATIO}"
        else:
            embedder = getattr(subject.services, "embedder", None)
            if embedder is None:
                return Verdict(
                    name,
                    False,
                    "no embeddings service is configured: add `embeddings:` to the config",
                    UNMEASURED,
                )
            if not text.strip():
                return Verdict(
                    name, False, f"the output is empty, so not similar to {shown}", UNMEASURED
                )
            # An outage or a missing recording raises SystemCallError: the sample errs.
            score = embedder.similarity(_case_id(subject), to, text)
            how = f"embedding, cosine, {embedder.describe()}"
        # A cosine may be negative, or a hair above 1: the score is kept inside 0 to 1.
        measured = min(1.0, max(0.0, float(score)))
        if score + TOLERANCE >= minimum:
            return Verdict(name, True, score=measured)
        return Verdict(
            name,
            False,
            f"similarity {figure(score, minimum)} ({how}) to {shown}, the minimum is {minimum:g}",
            measured,
        )

    return judge


def levenshtein(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    shape = '{to: "reference text", max: 3}'
    mapping_arg(name, arg, {"to", "max"}, {"to", "max"}, shape)
    norm = normalizer(modifiers.normalize)
    expected = norm(_reference(name, arg, shape, blank=True))
    limit = arg["max"]
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= MAX_TEXT_CHARS:
        raise CheckSpecError(
            f"{name}: `max` must be a whole number from 0 to {MAX_TEXT_CHARS:,}, "
            f"got {describe(limit)}"
        )
    shown = describe(arg["to"], SHOWN_CHARS)
    from rapidfuzz.distance import Levenshtein

    def judge(subject: Subject) -> Verdict:
        actual = norm(subject.text)
        gap = abs(len(actual) - len(expected))
        longer = max(len(actual), len(expected))
        if gap > limit:  # each edit changes the length by one at most
            # The exact score when the output is short enough to measure cheaply; a longer
            # one (it may be megabytes) scores the lowest, as any unmeasured failure does.
            measured = len(actual) <= MEASURED_CHARS
            return Verdict(
                name,
                False,
                f"edit distance at least {gap:,} to {shown} (the lengths differ by that "
                f"much), the maximum is {limit:,}",
                Levenshtein.normalized_similarity(expected, actual) if measured else UNMEASURED,
            )
        distance = Levenshtein.distance(expected, actual)
        # Levenshtein's normalised similarity: 1 - distance / the longer length.
        score = 1 - distance / longer if longer else 1.0
        if distance <= limit:
            return Verdict(name, True, score=score)
        return Verdict(
            name, False, f"edit distance {distance:,} to {shown}, the maximum is {limit:,}", score
        )

    return judge


def _case_id(subject: Subject) -> str:
    return str(getattr(subject.case, "id", "") or "")


# --- what the run and housekeeping need to know -------------------------------------


def embedding_reference(expect: Mapping[str, Any]) -> str | None:
    """The reference text of the case's `similar` when it compares embeddings, else None."""
    arg = expect.get("similar")
    if isinstance(arg, Mapping) and arg.get("method", "embedding") == "embedding":
        to = arg.get("to")
        return to if isinstance(to, str) else None
    return None


def embedded_texts(expect: Mapping[str, Any], output_text: str) -> list[str]:
    """The texts `similar` embeds to judge `output_text` (none when it judges without)."""
    reference = embedding_reference(expect)
    if reference is None or len(output_text) > MAX_TEXT_CHARS or not output_text.strip():
        return []
    return [reference, output_text]
