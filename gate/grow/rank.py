"""Clustering a whole export's requests and ranking the clusters worth a case.

Near-duplicate requests (token sort ratio ≥ nearby.THRESHOLD) form one cluster. Comparing
every pair of 10,000 requests is 50 million comparisons, so candidates are blocked first:
identical texts (after lower-casing and sorting their words) collapse into one, each
remaining text is put in the buckets of its two longest words, and only texts sharing a
bucket are compared (rapidfuzz's `cdist`, within windows of `WINDOW` texts in a sorted
bucket larger than that). Two texts that score ≥ 90 share most of their words, so they
almost always share a longest one; a pair that shares neither is left in two clusters,
which costs a reviewer a second look, never a wrong case.

Clusters rank, in order: any request failed (the source recorded an error); any was
flagged by a user; the cost of the whole cluster (USD when every request with usage is
priced by the source or `pricing:`, else tokens); how unlike it is to every existing case.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from rapidfuzz import fuzz, process, utils

from gate.grow.exchange import Exchange
from gate.grow.nearby import COMPARED_CHARS, THRESHOLD

#: texts compared at once inside one bucket (WINDOW² scores in memory, about 90 kB)
WINDOW = 300
#: blocking keys a text is filed under
KEYS_PER_TEXT = 2


@dataclass(frozen=True, slots=True)
class Cluster:
    members: tuple[Exchange, ...]
    #: the member a draft is made from: a failed one, else a flagged one, else the costliest
    representative: Exchange
    failed: int
    flagged: int
    cost: float
    #: 100 minus the best token sort ratio to any existing case (100: nothing like it)
    novelty: float
    nearest: str | None

    def reasons(self, unit: str) -> str:
        said = []
        if self.failed:
            said.append(f"{self.failed} failed")
        if self.flagged:
            said.append(f"{self.flagged} flagged")
        said.append(f"cost {self.cost:.4f} USD" if unit == "USD" else f"{self.cost:,.0f} tokens")
        said.append(f"novelty {self.novelty:.0f}")
        return ", ".join(said)


def sorted_words(text: str) -> str:
    """The text as token sort ratio compares it: lower-cased, punctuation out, words sorted."""
    return " ".join(sorted(utils.default_process(text).split()))


class _Union:
    def __init__(self, size: int) -> None:
        self.parent = list(range(size))

    def find(self, item: int) -> int:
        while self.parent[item] != item:
            self.parent[item] = self.parent[self.parent[item]]
            item = self.parent[item]
        return item

    def join(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def clusters_of(texts: Sequence[str]) -> list[list[int]]:
    """Indices of `texts` grouped into near-duplicate clusters, largest first."""
    keyed = [sorted_words(text) for text in texts]
    same: dict[str, list[int]] = defaultdict(list)
    for index, key in enumerate(keyed):
        same[key].append(index)
    unique = list(same)
    union = _Union(len(unique))
    buckets: dict[str, list[int]] = defaultdict(list)
    for index, text in enumerate(unique):
        words = sorted(set(text.split()), key=lambda word: (-len(word), word))
        for word in words[:KEYS_PER_TEXT]:
            buckets[word].append(index)
    for members in buckets.values():
        if len(members) < 2:
            continue
        members.sort(key=unique.__getitem__)
        step = WINDOW // 2 if len(members) > WINDOW else WINDOW
        for start in range(0, max(len(members) - WINDOW // 2, 1), step):
            window = members[start : start + WINDOW]
            batch = [unique[i][:COMPARED_CHARS] for i in window]
            scores = process.cdist(
                batch, batch, scorer=fuzz.ratio, score_cutoff=THRESHOLD, dtype=np.uint8
            )
            for a, b in np.argwhere(np.triu(scores, 1) >= THRESHOLD):
                union.join(window[a], window[b])
    grouped: dict[int, list[int]] = defaultdict(list)
    for index, text in enumerate(unique):
        grouped[union.find(index)].extend(same[text])
    return sorted((sorted(g) for g in grouped.values()), key=lambda g: (-len(g), g[0]))


def priced(exchanges: Sequence[Exchange], pricing: Mapping[str, Any]) -> list[float | None]:
    """Each exchange's cost in USD: the source's own figure, else `pricing:` for its model."""
    costs: list[float | None] = []
    for exchange in exchanges:
        price = pricing.get(exchange.model or "")
        if exchange.cost_usd is not None:
            costs.append(exchange.cost_usd)
        elif price is not None and exchange.tokens():
            costs.append(
                (
                    (exchange.input_tokens or 0) * price.input
                    + (exchange.output_tokens or 0) * price.output
                )
                / 1e6
            )
        else:
            costs.append(None)
    return costs


def rank(
    exchanges: Sequence[Exchange],
    existing: Sequence[str],
    pricing: Mapping[str, Any],
) -> tuple[list[Cluster], str]:
    """The clusters, best first, and the unit their cost is in ("USD" or "tokens")."""
    usd = priced(exchanges, pricing)
    in_usd = any(c is not None for c in usd) and all(
        c is not None for c, e in zip(usd, exchanges, strict=True) if e.tokens() or e.cost_usd
    )
    cost = [
        (c or 0.0) if in_usd else float(e.tokens()) for c, e in zip(usd, exchanges, strict=True)
    ]
    groups = clusters_of([e.user_text() for e in exchanges])
    picks = [
        max(
            g,
            key=lambda i: (
                exchanges[i].error is not None,
                exchanges[i].flagged is not None,
                cost[i],
                -i,
            ),
        )
        for g in groups
    ]
    nearest, likeness = _likeness([exchanges[i].user_text() for i in picks], existing)
    clusters = [
        Cluster(
            members=tuple(exchanges[i] for i in group),
            representative=exchanges[pick],
            failed=sum(exchanges[i].error is not None for i in group),
            flagged=sum(exchanges[i].flagged is not None for i in group),
            cost=sum(cost[i] for i in group),
            novelty=100.0 - like,
            nearest=near,
        )
        for group, pick, like, near in zip(groups, picks, likeness, nearest, strict=True)
    ]
    clusters.sort(key=lambda c: (c.failed > 0, c.flagged > 0, c.cost, c.novelty), reverse=True)
    return clusters, "USD" if in_usd else "tokens"


def _likeness(
    texts: Sequence[str], existing: Sequence[str]
) -> tuple[list[str | None], list[float]]:
    """For each text, the existing input most like it (as an index string) and the score."""
    if not existing or not texts:
        return [None] * len(texts), [0.0] * len(texts)
    mine = [sorted_words(t)[:COMPARED_CHARS] for t in texts]
    theirs = [sorted_words(t)[:COMPARED_CHARS] for t in existing]
    scores = process.cdist(mine, theirs, scorer=fuzz.ratio, dtype=np.uint8)
    best = scores.argmax(axis=1)
    return [str(int(b)) for b in best], [float(scores[i, b]) for i, b in enumerate(best)]
