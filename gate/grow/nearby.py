"""Is the new input already in the suite? Token ratio always; embeddings when recorded.

A near-duplicate is a case whose input text scores at least `THRESHOLD` on rapidfuzz's
token sort ratio (0-100: the same words, in any order, with a few typed differently);
with a recorded embedder, also one whose recorded embedding is within `EMBEDDING_THRESHOLD`
cosine of the new input's recorded one. `add` never calls a service: an embedding it
does not find recorded is skipped, and the output says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz, process, utils

from gate.errors import CasegateError

#: token sort ratio at or above which an input duplicates a case's (the same words, in
#: any order, with about one word in ten different)
THRESHOLD = 90.0
#: cosine similarity of recorded embeddings at or above which the inputs mean the same
EMBEDDING_THRESHOLD = 0.95


@dataclass(frozen=True, slots=True)
class Near:
    case_id: str
    score: float
    how: str


def input_text(value: Mapping[str, Any]) -> str:
    """The text an input holds, as compared: the last user message of `messages`, else its
    string values in key order."""
    messages = value.get("messages")
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, dict) and message.get("role") == "user":
                content = message.get("content")
                return content if isinstance(content, str) else ""
    return "\n".join(str(value[k]) for k in sorted(value) if isinstance(value[k], str))


#: characters of a text's sorted words that any near-duplicate test compares
COMPARED_CHARS = 4_000


def compared(text: str) -> str:
    """What the ratio sees of a text: lower-cased, punctuation out, words sorted (token sort
    ratio's own form), cut to COMPARED_CHARS."""
    return " ".join(sorted(utils.default_process(text).split()))[:COMPARED_CHARS]


def near_duplicate(text: str, cases: Iterable[tuple[str, str]]) -> Near | None:
    """The case (id, input text) most like `text`, when it scores at least THRESHOLD."""
    # Token sort ratio, written out so both sides can be capped: the ratio is quadratic in
    # length, and a 100,000-character draft against every case took hours under --rank.
    choices = {key: compared(value) for key, value in dict(cases).items()}
    if not choices or not text.strip():
        return None
    found = process.extractOne(
        compared(text), choices, scorer=fuzz.ratio, processor=None, score_cutoff=THRESHOLD
    )
    if found is None:
        return None
    _, score, case_id = found
    return Near(str(case_id), float(score), f"token sort ratio {score:.0f} ≥ {THRESHOLD:.0f}")


def embedded_duplicate(
    loaded: Any, text: str, cases: Sequence[tuple[str, str]]
) -> tuple[Near | None, str | None]:
    """(a near-duplicate by recorded embeddings, a note on why none was measured)."""
    pin = loaded.config.embeddings
    if pin is None:
        return None, None
    from gate.produce.recordings import RecordingStore
    from gate.produce.services.embeddings import Embedder, cosine
    from gate.produce.services.recorded import entry_key, fingerprint_of

    store = RecordingStore(loaded.recordings_dir)
    embedder = Embedder(pin, mode="replay", entries=store)
    fingerprint = fingerprint_of(pin)
    vectors: dict[str, Any] = {}
    mine = None
    wanted = entry_key("embeddings", fingerprint, text)
    for case_id, case_text in cases:
        try:
            entries = store.entries(case_id)  # one read of the case's file for both keys
            entry = entries.get(entry_key("embeddings", fingerprint, case_text))
            if isinstance(entry, dict):
                vectors[case_id] = embedder.decode(entry)
            if mine is None and isinstance(entries.get(wanted), dict):
                mine = embedder.decode(entries[wanted])
        except (CasegateError, KeyError, TypeError, ValueError, OSError):
            continue  # an unreadable recording is `validate`'s to report, not add's
    if mine is None:
        return None, (
            f"embedding similarity skipped: the new input has no recorded embedding under "
            f"{pin.describe()}, and `add` makes no live call (token ratio only)"
        )
    best: Near | None = None
    for case_id, vector in vectors.items():
        try:
            score = cosine(mine, vector)
        except ValueError:
            continue
        if score >= EMBEDDING_THRESHOLD and (best is None or score > best.score):
            best = Near(case_id, score, f"recorded embeddings' cosine {score:.3f}")
    return best, None
