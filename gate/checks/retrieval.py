"""Retrieval metrics: the passages' ids, in rank order, against the documents expected.

The ranking is `Subject.passages()`: the contexts the system reported, else the case
input's `contexts:`. Relevance is binary: a passage is relevant when its id is one of
`expected`. Every metric is a number from 0 to 1:

- `retrieval_recall` @k: the expected ids among the first k passages, over all expected.
- `retrieval_precision` @k: the relevant passages among the first k, over k (trec_eval's
  P@k: a system that returns fewer than k passages is not excused the empty places).
- `mrr`: 1 / the rank of the first relevant passage, 0 when none is (the reciprocal rank
  of one query; the mean is over the samples, as for every score).
- `ndcg` @k: DCG@k / IDCG@k with DCG@k = Σ_{i=1..k} rel_i / log2(i + 1) (rank i from 1,
  so the first place counts 1, the second 1/log2 3) and IDCG@k the DCG of the best
  ranking, every expected id first: Σ_{i=1..min(k, |expected|)} 1 / log2(i + 1).

An id that appears again lower in the ranking counts once: the repeat keeps its place
(it takes a slot of the k) and is not relevant, so a system cannot earn twice by
returning a document twice. A passage without an id, among those a metric reads (the
first k; every passage for `mrr`), cannot be judged: the check fails unmeasured.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from gate.checks.base import (
    UNMEASURED,
    CheckSpecError,
    Judge,
    Modifiers,
    Subject,
    Verdict,
    describe,
    meets,
)
from gate.checks.overlap import threshold_arg
from gate.checks.similar import figure, mapping_arg

#: the most expected ids a case may list, and the deepest cutoff
MAX_EXPECTED = 1_000
MAX_K = 1_000
SHOWN_IDS = 5


def _expected(name: str, arg: Any, shape: str) -> list[str]:
    given = arg.get("expected")
    if (
        not isinstance(given, list)
        or not given
        or len(given) > MAX_EXPECTED
        or not all(isinstance(i, str | int) and not isinstance(i, bool) for i in given)
    ):
        raise CheckSpecError(
            f"{name}: `expected` must be a non-empty list of document ids "
            f"(at most {MAX_EXPECTED:,}), got {describe(given)}; {name} takes {shape}"
        )
    ids = [str(i) for i in given]  # a passage's id reads numbers as text, so do these
    repeated = sorted(i for i, times in Counter(ids).items() if times > 1)
    if repeated:
        raise CheckSpecError(f"{name}: `expected` lists {describe(repeated[0])} more than once")
    return ids


def _cutoff(name: str, arg: Any, shape: str) -> int:
    k = arg.get("k")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise CheckSpecError(
            f"{name}: `k` must be a whole number from 1 to {MAX_K:,} (how many of the first "
            f"passages count), got {describe(k)}; {name} takes {shape}"
        )
    return k


def gains(ranking: Sequence[str], expected: set[str]) -> list[int]:
    """1 where a passage is relevant and its id is not a repeat of one above it, else 0."""
    seen: set[str] = set()
    marks = []
    for ident in ranking:
        marks.append(int(ident in expected and ident not in seen))
        seen.add(ident)
    return marks


def recall_at(ranking: Sequence[str], expected: set[str], k: int) -> float:
    return sum(gains(ranking[:k], expected)) / len(expected)


def precision_at(ranking: Sequence[str], expected: set[str], k: int) -> float:
    return sum(gains(ranking[:k], expected)) / k


def reciprocal_rank(ranking: Sequence[str], expected: set[str]) -> float:
    for rank, gain in enumerate(gains(ranking, expected), start=1):
        if gain:
            return 1 / rank
    return 0.0


def ndcg_at(ranking: Sequence[str], expected: set[str], k: int) -> float:
    dcg = sum(g / math.log2(i + 1) for i, g in enumerate(gains(ranking[:k], expected), start=1))
    ideal = sum(1 / math.log2(i + 1) for i in range(1, min(k, len(expected)) + 1))
    return dcg / ideal


Measure = Callable[[Sequence[str], set[str]], float]


def _judge(
    name: str, label: str, measure: Measure, expected: list[str], k: int | None, limit: float
) -> Judge:
    wanted = set(expected)
    shown = ", ".join(expected[:SHOWN_IDS]) + (" …" if len(expected) > SHOWN_IDS else "")

    def judge(subject: Subject) -> Verdict:
        passages = subject.passages()
        if isinstance(passages, str):
            return Verdict(name, False, passages, UNMEASURED)
        read = passages if k is None else passages[:k]
        unnamed = [rank for rank, p in enumerate(read, start=1) if p.id is None]
        if unnamed:
            return Verdict(
                name,
                False,
                f"passage {unnamed[0]} has no id, so {name} cannot judge the ranking: "
                "give every context an `id`",
                UNMEASURED,
            )
        ranking = [str(p.id) for p in read]
        measured = measure(ranking, wanted)
        score = min(1.0, measured)  # a float sum may land a hair past 1
        if meets(measured, limit):
            return Verdict(name, True, score=score)
        got = ", ".join(ranking[:SHOWN_IDS]) + (" …" if len(ranking) > SHOWN_IDS else "")
        return Verdict(
            name,
            False,
            f"{label} {figure(score, limit)} (expected {shown}; ranked {got or 'nothing'}), "
            f"the threshold is {limit:g}",
            score,
        )

    return judge


def retrieval_recall(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    shape = "{expected: [document ids], k: 5, threshold: 0.8}"
    mapping_arg(name, arg, {"expected", "k", "threshold"}, {"expected", "k", "threshold"}, shape)
    expected, k = _expected(name, arg, shape), _cutoff(name, arg, shape)
    return _judge(
        name,
        f"recall@{k}",
        lambda r, e: recall_at(r, e, k),
        expected,
        k,
        threshold_arg(name, arg),
    )


def retrieval_precision(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    shape = "{expected: [document ids], k: 5, threshold: 0.4}"
    mapping_arg(name, arg, {"expected", "k", "threshold"}, {"expected", "k", "threshold"}, shape)
    expected, k = _expected(name, arg, shape), _cutoff(name, arg, shape)
    return _judge(
        name,
        f"precision@{k}",
        lambda r, e: precision_at(r, e, k),
        expected,
        k,
        threshold_arg(name, arg),
    )


def mrr(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    shape = "{expected: [document ids], threshold: 0.5}"
    mapping_arg(name, arg, {"expected", "threshold"}, {"expected", "threshold"}, shape)
    expected = _expected(name, arg, shape)
    return _judge(
        name, "reciprocal rank", reciprocal_rank, expected, None, threshold_arg(name, arg)
    )


def ndcg(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    shape = "{expected: [document ids], k: 5, threshold: 0.7}"
    mapping_arg(name, arg, {"expected", "k", "threshold"}, {"expected", "k", "threshold"}, shape)
    expected, k = _expected(name, arg, shape), _cutoff(name, arg, shape)
    return _judge(
        name,
        f"nDCG@{k}",
        lambda r, e: ndcg_at(r, e, k),
        expected,
        k,
        threshold_arg(name, arg),
    )
