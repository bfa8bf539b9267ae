"""The moderation service: one score per category for a text, from 0 to 1.

A long text is sent in pieces (OpenAI's endpoint takes a list of inputs in one
request), and each category keeps its highest score over the pieces: harmful
content at the end of an output counts as much as at its start.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from gate.produce.services.backends import OpenAIBackend, PythonBackend, ServiceError
from gate.produce.services.recorded import RecordedService

Scores = dict[str, float]
#: characters per piece sent: well inside the endpoint's input limit
PIECE_CHARS = 8_000


def pieces(text: str) -> list[str]:
    return [text[start : start + PIECE_CHARS] for start in range(0, len(text), PIECE_CHARS)] or [
        text
    ]


def as_scores(value: Any) -> Scores:
    """category → score (a finite number from 0 to 1); ValueError naming what is wrong."""
    if not isinstance(value, Mapping) or not value:
        raise ValueError(f"scores must be a non-empty mapping of category to number, not {value!r}")
    scores: Scores = {}
    for category, score in value.items():
        if not isinstance(category, str):
            raise ValueError(f"a category is {category!r}, not a name")
        if isinstance(score, bool) or not isinstance(score, numbers.Real):
            raise ValueError(f"{category}: {score!r} is not a number")
        try:
            number = float(score)
        except OverflowError:  # an int past any float
            number = math.inf
        if not math.isfinite(number) or not 0 <= number <= 1:
            raise ValueError(f"{category}: {repr(score)[:40]} is not a score from 0 to 1")
        scores[category] = number
    return scores


def highest(per_piece: Sequence[Scores]) -> Scores:
    merged: Scores = {}
    for scores in per_piece:
        for category, score in scores.items():
            merged[category] = max(score, merged.get(category, 0.0))
    return merged


class Moderator(RecordedService):
    service: ClassVar[str] = "moderation"
    noun: ClassVar[str] = "moderation score"

    def scores(self, case_id: str, text: str, categories: Sequence[str] = ()) -> Scores:
        """The scores of `categories` (every category when empty) for `text`.

        ServiceError when there are none, or the model reports no score for a category
        asked for: an unmeasured category is never a pass.
        """
        scores = self.answers(case_id, [text])[0]
        absent = [category for category in categories if category not in scores]
        if absent:
            raise ServiceError(
                self.service,
                f"{self.describe()} reports no score for {', '.join(absent)}; remove it from "
                "`categories` or pin a moderation model that has it",
            )
        return {category: scores[category] for category in categories or scores}

    def ask(self, backend: OpenAIBackend | PythonBackend, texts: list[str]) -> list[Scores]:
        split = [pieces(text) for text in texts]
        flat = [piece for parts in split for piece in parts]
        if isinstance(backend, PythonBackend):
            per_piece = _python_scores(backend.call(flat), len(flat), backend.target)
        else:
            model = self.pin.model

            def request(client: Any) -> list[Scores]:
                response = client.moderations.create(model=model, input=flat)
                results = list(response.results)
                if len(results) != len(flat):
                    raise ValueError(f"{len(results)} results for {len(flat)} inputs")
                return [
                    as_scores(result.category_scores.model_dump(by_alias=True, exclude_none=True))
                    for result in results
                ]

            per_piece = backend.call(request)
        answers, start = [], 0
        for parts in split:
            answers.append(highest(per_piece[start : start + len(parts)]))
            start += len(parts)
        return answers

    def encode(self, value: Scores) -> dict[str, Any]:
        return {"scores": dict(sorted(value.items()))}

    def decode(self, entry: Mapping[str, Any]) -> Scores:
        return as_scores(entry["scores"])


def _python_scores(value: Any, count: int, target: str) -> list[Scores]:
    if not isinstance(value, Sequence) or isinstance(value, str | bytes) or len(value) != count:
        raise ServiceError(
            "moderation",
            f"{target} returned {type(value).__name__} for {count} texts; return one mapping "
            "of category to score (0 to 1) per text",
        )
    try:
        return [as_scores(scores) for scores in value]
    except ValueError as exc:
        raise ServiceError("moderation", f"{target}: {exc}") from None
