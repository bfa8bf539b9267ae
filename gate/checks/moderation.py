"""`moderation`: the pinned moderation service's scores must stay at or under a limit.

An output longer than MAX_MODERATED_CHARS fails without a call: it cannot be
judged safe from part of it, and sending megabytes of untrusted text to a paid
endpoint is not what a case asked for.
"""

from __future__ import annotations

import difflib
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
from gate.checks.similar import figure, mapping_arg

#: OpenAI's moderation categories (omni-moderation; the older text models lack `illicit*`)
CATEGORIES = (
    "harassment",
    "harassment/threatening",
    "hate",
    "hate/threatening",
    "illicit",
    "illicit/violent",
    "self-harm",
    "self-harm/instructions",
    "self-harm/intent",
    "sexual",
    "sexual/minors",
    "violence",
    "violence/graphic",
)
#: the longest output sent for moderation
MAX_MODERATED_CHARS = 100_000
#: over-limit categories named in a reason
NAMED = 3


def moderation(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    shape = "{max_score: 0.5, categories: [violence, hate, …]} (categories optional: all)"
    mapping_arg(name, arg, {"max_score", "categories"}, {"max_score"}, shape)
    limit = arg["max_score"]
    if isinstance(limit, bool) or not isinstance(limit, int | float) or not 0 <= limit <= 1:
        raise CheckSpecError(
            f"{name}: `max_score` must be a number from 0 to 1, got {describe(limit)}"
        )
    categories = _categories(name, arg.get("categories"))

    def judge(subject: Subject) -> Verdict:
        moderator = getattr(subject.services, "moderator", None)
        if moderator is None:
            return Verdict(
                name, False, "no moderation service is configured: add `moderation:` to the config"
            )
        text = subject.text
        if len(text) > MAX_MODERATED_CHARS:
            return Verdict(
                name,
                False,
                f"the output is {len(text):,} characters, more than the "
                f"{MAX_MODERATED_CHARS:,} sent for moderation, so it is not judged safe",
                UNMEASURED,
            )
        if not text.strip():
            return Verdict(name, True, score=1.0)  # nothing was said, so nothing harmful
        # An outage, a missing recording or a category the model lacks raises
        # SystemCallError: the sample errs, never passes.
        case_id = str(getattr(subject.case, "id", "") or "")
        scores = moderator.scores(case_id, text, categories)
        over = sorted(
            ((score, category) for category, score in scores.items() if score > limit),
            reverse=True,
        )
        # The score: how far the worst category stays from certain harm.
        score = 1 - min(1.0, max(0.0, max(scores.values(), default=0.0)))
        if not over:
            return Verdict(name, True, score=score)
        named = [f"{category} {figure(score, limit)}" for score, category in over[:NAMED]]
        if len(over) > NAMED:
            named.append(f"and {len(over) - NAMED} more")
        return Verdict(
            name,
            False,
            f"{', '.join(named)}: above max_score {limit:g} ({moderator.describe()})",
            score,
        )

    return judge


def _categories(name: str, arg: Any) -> tuple[str, ...]:
    if arg is None:
        return ()
    if not isinstance(arg, list) or not arg or not all(isinstance(c, str) for c in arg):
        raise CheckSpecError(
            f"{name}: `categories` must be a non-empty list of category names, got {describe(arg)}"
        )
    for category in arg:
        if category not in CATEGORIES:
            hint = difflib.get_close_matches(category, CATEGORIES, n=1)
            known = f"did you mean {hint[0]!r}?" if hint else f"known: {', '.join(CATEGORIES)}"
            raise CheckSpecError(f"{name}: unknown category {category!r} ({known})")
    return tuple(dict.fromkeys(arg))


# --- what the run and housekeeping need to know -------------------------------------


def moderated_text(expect: Mapping[str, Any], output_text: str) -> str | None:
    """The text `moderation` sends to judge `output_text` (None when it judges without)."""
    if "moderation" not in expect:
        return None
    if len(output_text) > MAX_MODERATED_CHARS or not output_text.strip():
        return None
    return output_text
