"""Recall@k, precision@k, MRR and nDCG@k over the passages' ids in rank order:
hand-computed figures (sklearn is not installed, so no library reference), repeats
counted once, passages without ids unmeasured, and properties over any ranking."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate import checks
from gate.outputs import Context

CHECKS = ("retrieval_recall", "retrieval_precision", "mrr", "ndcg")


def retrieved(*ids: str | None) -> tuple[Context, ...]:
    return tuple(Context(id=i, text=f"passage {i}") for i in ids)


def verdict(check: str, ranking: tuple[Context, ...], **arg: Any) -> checks.Verdict:
    built = checks.build({check: {"threshold": 0, **arg}})
    subject = checks.Subject("answer", {}, contexts=ranking)
    return checks.evaluate(built, subject)[0]


def score(check: str, ranking: tuple[Context, ...], **arg: Any) -> float:
    found = verdict(check, ranking, **arg)
    assert found.ok and found.score is not None, found.reason
    return found.score


RANKING = retrieved("d3", "d1", "d7", "d2", "d9")
EXPECTED = ["d1", "d2", "d4"]


class TestHandComputed:
    def test_recall_at_k(self) -> None:
        # top 5 holds d1 and d2 of the 3 expected: 2/3; top 2 holds d1 only: 1/3
        assert score("retrieval_recall", RANKING, expected=EXPECTED, k=5) == pytest.approx(2 / 3)
        assert score("retrieval_recall", RANKING, expected=EXPECTED, k=2) == pytest.approx(1 / 3)

    def test_precision_at_k_divides_by_k(self) -> None:
        # 2 relevant of the first 5: 2/5; 1 of the first 3: 1/3
        assert score("retrieval_precision", RANKING, expected=EXPECTED, k=5) == 2 / 5
        assert score("retrieval_precision", RANKING, expected=EXPECTED, k=3) == pytest.approx(1 / 3)
        # 5 passages returned, k = 10: the empty places count against it: 2/10
        assert score("retrieval_precision", RANKING, expected=EXPECTED, k=10) == 2 / 10

    def test_mrr_is_the_reciprocal_of_the_first_relevant_rank(self) -> None:
        assert score("mrr", RANKING, expected=EXPECTED) == 1 / 2  # d1 at rank 2
        assert score("mrr", RANKING, expected=["d9"]) == 1 / 5
        assert score("mrr", RANKING, expected=["nowhere"]) == 0.0

    def test_ndcg_with_log2_discounts(self) -> None:
        # DCG@5 = 1/log2(3) (d1, rank 2) + 1/log2(5) (d2, rank 4) = 0.630930 + 0.430677 = 1.061606
        # IDCG@5 = 1/log2(2) + 1/log2(3) + 1/log2(4) = 1 + 0.630930 + 0.5 = 2.130930 (3 expected)
        dcg = 1 / math.log2(3) + 1 / math.log2(5)
        ideal = 1 + 1 / math.log2(3) + 1 / 2
        got = score("ndcg", RANKING, expected=EXPECTED, k=5)
        assert got == pytest.approx(dcg / ideal) and got == pytest.approx(
            1.061606 / 2.130930, abs=1e-6
        )
        # k = 2: DCG = 1/log2(3); IDCG@2 = 1 + 1/log2(3) (only 2 places to fill)
        two = score("ndcg", RANKING, expected=EXPECTED, k=2)
        assert two == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))

    def test_a_repeated_id_counts_once_and_keeps_its_place(self) -> None:
        ranking = retrieved("d2", "d1", "d1")
        # recall@3: d1 is found, once, of [d1, d5]: 1/2
        assert score("retrieval_recall", ranking, expected=["d1", "d5"], k=3) == 1 / 2
        # precision@3: the repeat fills a place and earns nothing: 1/3, not 2/3
        assert score("retrieval_precision", ranking, expected=["d1", "d5"], k=3) == pytest.approx(
            1 / 3
        )
        # nDCG@3: DCG = 1/log2(3) (rank 2 only); IDCG@3 = 1 + 1/log2(3) (2 expected ids)
        got = score("ndcg", ranking, expected=["d1", "d5"], k=3)
        assert got == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))


class TestJudging:
    def test_under_the_threshold_names_the_figure_and_both_rankings(self) -> None:
        found = verdict("retrieval_recall", RANKING, expected=EXPECTED, k=5, threshold=0.8)
        assert (found.ok, found.score) == (False, pytest.approx(2 / 3))
        assert found.reason == (
            "recall@5 0.67 (expected d1, d2, d4; ranked d3, d1, d7, d2, d9), the threshold is 0.8"
        )

    def test_a_passage_without_an_id_cannot_be_judged(self) -> None:
        ranking = retrieved("d1", None, "d2")
        found = verdict("ndcg", ranking, expected=["d2"], k=3)
        assert (found.ok, found.score) == (False, 0.0)
        assert found.reason == (
            "passage 2 has no id, so ndcg cannot judge the ranking: give every context an `id`"
        )
        # Below the cutoff it is not read: the first passage alone is judged.
        assert score("retrieval_precision", ranking, expected=["d1"], k=1) == 1.0
        assert not verdict("mrr", ranking, expected=["d1"]).ok  # mrr reads every passage

    def test_without_passages_it_says_why(self) -> None:
        found = verdict("mrr", (), expected=["d1"])
        assert (found.ok, found.score) == (False, 0.0)
        assert "no contexts" in found.reason

    def test_the_case_inputs_contexts_and_numeric_ids(self) -> None:
        built = checks.build({"mrr": {"expected": [7, "x"], "threshold": 1}})
        given = {"contexts": [{"id": 7, "text": "seven"}, {"id": "x", "text": "ex"}]}
        found = checks.evaluate(built, checks.Subject("a", given))[0]
        assert (found.ok, found.score) == (True, 1.0)


# --- properties ----------------------------------------------------------------------------

ids = st.sampled_from([f"d{i}" for i in range(8)])


@settings(max_examples=200, deadline=None)
@given(
    check=st.sampled_from(CHECKS),
    ranking=st.lists(ids, max_size=12),
    expected=st.lists(ids, min_size=1, max_size=6, unique=True),
    k=st.integers(1, 15),
)
def test_scores_are_always_from_0_to_1(
    check: str, ranking: list[str], expected: list[str], k: int
) -> None:
    arg: dict[str, Any] = {"expected": expected} | ({} if check == "mrr" else {"k": k})
    found = verdict(check, retrieved(*ranking), **arg)
    assert found.score is not None and 0 <= found.score <= 1


@settings(max_examples=200, deadline=None)
@given(
    expected=st.lists(ids, min_size=1, max_size=6, unique=True),
    after=st.lists(ids, max_size=6),
    extra_k=st.integers(0, 4),
)
def test_the_ideal_ranking_scores_1(expected: list[str], after: list[str], extra_k: int) -> None:
    ranking = retrieved(*expected, *after)  # every expected id first, anything after
    k = len(expected) + extra_k
    assert score("retrieval_recall", ranking, expected=expected, k=k) == 1.0
    assert score("ndcg", ranking, expected=expected, k=k) == pytest.approx(1.0)
    assert score("mrr", ranking, expected=expected) == 1.0
    assert score("retrieval_precision", ranking, expected=expected, k=len(expected)) == 1.0


@settings(max_examples=200, deadline=None)
@given(
    ranking=st.lists(ids, min_size=1, max_size=10), expected=st.lists(ids, min_size=1, unique=True)
)
def test_ndcg_is_0_only_without_a_hit(ranking: list[str], expected: list[str]) -> None:
    got = score("ndcg", retrieved(*ranking), expected=expected, k=10)
    assert (got == 0) == (not set(ranking) & set(expected))


malformed = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=5),
    st.lists(st.text(max_size=3), max_size=2),
    st.fixed_dictionaries(
        {
            "expected": st.one_of(
                st.none(), st.just([]), st.just(["a", "a"]), st.just([True]), st.just("a")
            )
        },
        optional={
            "k": st.one_of(st.integers(-2, 0), st.booleans(), st.floats(), st.integers(1, 5)),
            "threshold": st.one_of(st.floats(), st.booleans(), st.integers()),
            "top": st.integers(),
        },
    ),
    st.fixed_dictionaries(
        {"expected": st.just(["a"]), "k": st.integers(1, 5)},
        optional={"threshold": st.one_of(st.none(), st.floats(1.01, 9), st.text(max_size=3))},
    ),
)


@settings(max_examples=300, deadline=None)
@given(check=st.sampled_from(CHECKS), arg=malformed)
def test_a_malformed_argument_is_one_line_naming_the_check(check: str, arg: Any) -> None:
    with pytest.raises(checks.CheckSpecError) as caught:
        checks.build({check: arg})
    message = str(caught.value)
    assert "\n" not in message and message.startswith(check)


@pytest.mark.parametrize(
    ("check", "arg", "said"),
    [
        ("ndcg", {"expected": ["a"], "threshold": 0.5}, "ndcg takes {expected:"),
        ("mrr", {"expected": ["a"], "k": 3, "threshold": 0.5}, "mrr takes {expected:"),
        (
            "retrieval_recall",
            {"expected": ["a", "b", "a"], "k": 3, "threshold": 1},
            'retrieval_recall: `expected` lists "a" more than once',
        ),
        (
            "retrieval_precision",
            {"expected": ["a"], "k": 0, "threshold": 1},
            "retrieval_precision: `k` must be a whole number from 1 to 1,000",
        ),
    ],
)
def test_argument_errors_say_what_to_write(check: str, arg: dict[str, Any], said: str) -> None:
    with pytest.raises(checks.CheckSpecError, match="^" + re.escape(said)):
        checks.build({check: arg})
