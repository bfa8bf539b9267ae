"""A stand-in embedder for the example suite — NOT a model.

Each word adds to a slot of a 64-number vector chosen by the word's hash, so texts
that share words score close by cosine and paraphrases score lower than a real
embedding model would score them; it knows no meaning. It is an instrument, like a
judge: the ruler hashes this file, so a pull request that changes it is a ruler change.
"""

from __future__ import annotations

import hashlib
import re

#: dimensions of the stand-in embedder's vectors
EMBEDDING_SIZE = 64


def embed(texts: list[str]) -> list[list[float]]:
    """A stand-in embedder, NOT a model: each word adds to a slot chosen by its hash."""
    vectors = []
    for text in texts:
        vector = [0.0] * EMBEDDING_SIZE
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            digest = hashlib.sha256(word.encode()).digest()
            vector[digest[0] % EMBEDDING_SIZE] += 1.0 if digest[1] % 2 else -1.0
        vectors.append(vector)
    return vectors
