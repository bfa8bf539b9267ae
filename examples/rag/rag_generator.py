"""A scripted stand-in for the RAG example's generator — NOT a language model.

It retrieves with BM25 (rag_retriever.py) and "answers" by copying the retrieved sentence
that shares the most words with the question, so its answers are grounded by construction.
It returns `{"text", "contexts": [{"id", "text"}, ...]}`: casegate records the contexts with
the answer, and the RAG metrics judge the answer against them.

`system.variant: chatty` (the candidate config) stands in for a prompt change that makes a
model pad its answers: it adds a reassuring sentence no document supports, and retrieves
`system.top_k` passages (the candidate asks for 1).
"""

from __future__ import annotations

import re
from typing import Any

from rag_retriever import retrieve, words

#: what the chatty variant adds: friendly, and supported by no document
PADDING = "Most customers have this sorted within the hour, and our team is always happy to help."


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


def answer(case_input: dict[str, Any], system: dict[str, Any]) -> dict[str, Any]:
    question = str(case_input.get("question", ""))
    hits = retrieve(question, int(system.get("top_k", 3)))
    asked = set(words(question))
    candidates = [
        (len(asked & set(words(sentence))), -rank, sentence)
        for rank, (_, text) in enumerate(hits)
        for sentence in _sentences(text)
    ]
    overlap, _, best = max(candidates) if candidates else (0, 0, "")
    text = best if overlap else "I could not find that in the help centre."
    if system.get("variant") == "chatty":
        text = f"{text} {PADDING}"
    return {
        "text": text,
        "contexts": [{"id": doc_id, "text": body} for doc_id, body in hits],
        "input_tokens": 40 + sum(len(body.split()) for _, body in hits),
        "output_tokens": len(text.split()),
        "model": system.get("model"),
        "stop_reason": "stop",
    }
