"""A tiny local retriever for the RAG example: BM25 over the documents in docs/.

Okapi BM25 (k1 1.5, b 0.75) in a few lines of Python, no dependency: each document is one
Markdown file, its id the file name without `.md`. Deterministic: ties keep the files'
alphabetical order.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

DOCS = Path(__file__).resolve().parent / "docs"
K1, B = 1.5, 0.75

#: words that say nothing about which document holds an answer
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "the",
        "then",
        "to",
        "what",
        "when",
        "with",
        "you",
        "your",
    ]
)


def words(text: str) -> list[str]:
    """Lower-cased words and numbers, stop words left out."""
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS]


@lru_cache(maxsize=1)
def corpus() -> tuple[tuple[str, str], ...]:
    """(id, text) of every document, the Markdown title line left out."""
    found = []
    for path in sorted(DOCS.glob("*.md")):
        lines = path.read_text(encoding="utf-8").splitlines()
        body = " ".join(line for line in lines if line and not line.startswith("#"))
        found.append((path.stem, body.strip()))
    return tuple(found)


def retrieve(query: str, k: int = 3) -> list[tuple[str, str]]:
    """The `k` documents BM25 ranks highest for `query`, best first, as (id, text)."""
    docs = corpus()
    tokens = [Counter(words(text)) for _, text in docs]
    average = sum(sum(t.values()) for t in tokens) / len(tokens)
    frequency = Counter(word for t in tokens for word in t)
    n = len(docs)

    def score(counts: Counter[str]) -> float:
        length = sum(counts.values())
        total = 0.0
        for word in set(words(query)):
            if word not in counts:
                continue
            idf = math.log(1 + (n - frequency[word] + 0.5) / (frequency[word] + 0.5))
            tf = counts[word]
            total += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
        return total

    ranked = sorted(range(n), key=lambda i: -score(tokens[i]))  # stable: ties by file name
    return [docs[i] for i in ranked[:k]]
