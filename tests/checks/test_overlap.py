"""ROUGE, BLEU, chrF and token F1: hand-computed figures, the reference libraries' own
(rouge-score's scorer, sacrebleu's command line), and properties over any text."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer

from gate import checks
from gate.checks.overlap import rouge_l_score, rouge_n_score, token_f1_score
from gate.checks.similar import MAX_TEXT_CHARS
from gate.errors import CaseFileError
from gate.suite.cases import load_cases
from tests.checks.test_checks import only

METRICS = ("rouge_n", "rouge_l", "bleu", "chrf", "token_f1")
#: ASCII words, with the punctuation and capitals rouge-score's tokenizer drops
OUTPUT_WORDS = ["a", "b", "c", "d", "e", "The,", "cat.", "42", "x-y"]
REFERENCE_WORDS = ["a", "b", "c", "d", "e", "the", "cat", "42", "x", "y", "z"]


def score(check: str, reference: str | list[str], text: str, **extra: Any) -> float:
    verdict = only({check: {"to": reference, "threshold": 0.0, **extra}}, text)
    assert verdict.ok and verdict.score is not None
    return verdict.score


class TestHandComputed:
    def test_rouge_counts_ngrams_with_their_repeats(self) -> None:
        output, reference = "the cat sat on the mat", "the cat is on the mat"
        # unigrams: the (twice), cat, on, mat shared = 5 of 6 each side: P = R = F = 5/6
        assert score("rouge_n", reference, output) == pytest.approx(5 / 6)
        # bigrams: "the cat", "on the", "the mat" shared = 3 of 5 each side: F = 3/5
        assert score("rouge_n", reference, output, n=2) == pytest.approx(3 / 5)
        # trigrams: "on the mat" alone = 1 of 4 each side: F = 1/4
        assert score("rouge_n", reference, output, n=3) == pytest.approx(1 / 4)
        # LCS: the cat on the mat = 5 of 6 each side: F = 5/6
        assert score("rouge_l", reference, output) == pytest.approx(5 / 6)

    def test_rouge_f_is_the_harmonic_mean_of_unequal_sides(self) -> None:
        # output 2 words, reference 4: 2 shared, P = 2/2, R = 2/4, F = 2·1·½/(1+½) = 2/3
        assert score("rouge_n", "refund issued within days", "Refund issued.") == pytest.approx(
            2 / 3
        )

    def test_rouge_keeps_words_in_every_script(self) -> None:
        # rouge-score's own tokenizer keeps [a-z0-9]: "été" would vanish and "日本語" score 0.
        assert score("rouge_l", "日本語 です", "日本語 です") == 1.0
        # "déjà vu" vs "déjà vécu": déjà shared, 1 of 2 each side: F = 1/2
        assert score("rouge_n", "déjà vécu", "Déjà vu") == pytest.approx(1 / 2)
        # an accent typed as a combining mark (e + U+0301) is the same word as "é"
        assert score("rouge_n", "caf\u00e9 ouvert", "cafe\u0301 ouvert") == 1.0

    def test_bleu_exact_precisions_with_a_brevity_penalty(self) -> None:
        # Every n-gram of the 6-word output is in the 7-word reference: precisions 1,
        # BP = exp(1 - 7/6) = exp(-1/6).
        got = score("bleu", "the cat sat on the mat today", "the cat sat on the mat")
        assert got == pytest.approx(math.exp(-1 / 6))

    def test_bleu_geometric_mean_without_smoothing(self) -> None:
        # 1-grams 5/6 (one "the" of two, no "a"), 2-grams 3/5, 3-grams 2/4, 4-grams 1/3;
        # equal lengths, BP 1: (5/6 · 3/5 · 2/4 · 1/3)^(1/4) = (1/12)^(1/4)
        got = score("bleu", "the cat sat on the mat", "the cat sat on a mat")
        assert got == pytest.approx((1 / 12) ** 0.25)

    def test_bleu_exp_smoothing_of_empty_orders(self) -> None:
        # "a b c d e" vs "a b x d e": 1-grams 4/5, 2-grams 2/4, 3-grams 0/3 and 4-grams 0/2.
        # exp smoothing gives the k-th empty order 1/(2^k · its count): 1/(2·3), 1/(4·2).
        # (4/5 · 2/4 · 1/6 · 1/8)^(1/4) = (1/120)^(1/4)
        assert score("bleu", "a b x d e", "a b c d e") == pytest.approx((1 / 120) ** 0.25)

    def test_chrf_averages_precision_and_recall_over_the_orders_present(self) -> None:
        # "ab" vs "abc": 1-grams P 2/2 R 2/3; 2-grams P 1/1 R 1/2; the output has no longer
        # ones. Mean P = 1, mean R = 7/12; chrF (β = 2) = 5·P·R / (4·P + R) = 7/11
        assert score("chrf", "abc", "ab") == pytest.approx(7 / 11)

    def test_token_f1_after_squad_normalisation(self) -> None:
        # "the eiffel tower is in paris" → eiffel tower is in paris (5 words);
        # "Eiffel tower, in Paris!" → eiffel tower in paris (4): 4 shared,
        # P = 4/5, R = 1, F = 2·⅘·1/(⅘+1) = 8/9
        got = score("token_f1", "Eiffel tower, in Paris!", "The Eiffel Tower is in Paris.")
        assert got == pytest.approx(8 / 9)
        assert token_f1_score("an apple", "the") == 0.0
        assert token_f1_score("the", "a") == 1.0  # both empty after normalising: SQuAD's 1


SACREBLEU = (sys.executable, "-m", "sacrebleu")


class TestReferenceImplementations:
    def test_rouge_matches_rouge_scores_published_example(self) -> None:
        # rouge-score's README: score("The quick brown fox jumps over the lazy dog",
        # "The quick brown dog jumps on the log.") gives rouge1 F 0.70588, rougeL F 0.58824.
        target = "The quick brown fox jumps over the lazy dog"
        prediction = "The quick brown dog jumps on the log."
        assert score("rouge_n", target, prediction) == pytest.approx(0.7058823529411765)
        assert score("rouge_l", target, prediction) == pytest.approx(0.5882352941176471)

    @settings(max_examples=200, deadline=None)
    @given(
        st.lists(st.sampled_from(OUTPUT_WORDS), min_size=1, max_size=25),
        st.lists(st.sampled_from(REFERENCE_WORDS), min_size=1, max_size=25),
        st.integers(1, 4),
    )
    def test_rouge_agrees_with_rouge_score_on_ascii(
        self, output: list[str], reference: list[str], n: int
    ) -> None:
        text, target = " ".join(output), " ".join(reference)
        scorer = rouge_scorer.RougeScorer([f"rouge{n}", "rougeL"], use_stemmer=False)
        figures = scorer.score(target, text)
        assert rouge_n_score(text, target, n) == pytest.approx(figures[f"rouge{n}"].fmeasure)
        assert rouge_l_score(text, target) == pytest.approx(figures["rougeL"].fmeasure)

    def test_several_references_take_the_best_as_score_multi_does(self) -> None:
        targets = ["the refund was issued", "your money is on its way back"]
        prediction = "your refund is on its way"
        scorer = rouge_scorer.RougeScorer(["rouge1", "rougeL"])
        best = scorer.score_multi(targets, prediction)
        assert score("rouge_n", targets, prediction) == pytest.approx(best["rouge1"].fmeasure)
        assert score("rouge_l", targets, prediction) == pytest.approx(best["rougeL"].fmeasure)

    def test_bleu_and_chrf_match_the_sacrebleu_command_line(self, tmp_path: Path) -> None:
        outputs = ["the cat sat on a mat", "Refunds take 5-7 days.", "completely different"]
        references = ["the cat sat on the mat", "Refunds take 5–7 business days.", "a b c"]
        (tmp_path / "out.txt").write_text("\n".join(outputs) + "\n")
        (tmp_path / "ref.txt").write_text("\n".join(references) + "\n")
        for metric in ("bleu", "chrf"):
            printed = subprocess.run(
                [*SACREBLEU, "ref.txt", "-i", "out.txt", "-sl", "-m", metric, "-b", "-w", "6"],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                check=True,
                timeout=60,
            ).stdout.split()
            assert len(printed) == len(outputs)
            for text, reference, figure in zip(outputs, references, printed, strict=True):
                assert score(metric, reference, text) == pytest.approx(
                    float(figure) / 100, abs=1e-8
                )


class TestJudging:
    def test_a_score_under_the_threshold_fails_naming_both(self) -> None:
        verdict = only({"rouge_n": {"to": "a b c d", "n": 2, "threshold": 0.5}}, "a b x d")
        # bigrams: "a b" shared, 1 of 3 each side: F = 1/3
        assert (verdict.ok, verdict.score) == (False, pytest.approx(1 / 3))
        assert verdict.reason == 'ROUGE-2 F 0.33 to "a b c d", the threshold is 0.5'

    def test_n_defaults_to_1_as_promptfoos_rouge_n(self) -> None:
        one = only({"rouge_n": {"to": "a b c d", "threshold": 0.7}}, "a b x d")
        assert (one.ok, one.score) == (True, 0.75)

    def test_normalize_applies_to_both_sides_first(self) -> None:
        # chrF reads case: "ABC" and "abc" share nothing until `lower` runs.
        assert score("chrf", "abc", "ABC") == 0.0
        verdict = only({"chrf": {"to": "abc", "threshold": 1}, "normalize": ["lower"]}, "ABC")
        assert (verdict.ok, verdict.score) == (True, 1.0)

    @pytest.mark.parametrize("check", METRICS)
    def test_an_output_too_long_fails_unmeasured(self, check: str) -> None:
        verdict = only({check: {"to": "a b", "threshold": 0.1}}, "a b " * (MAX_TEXT_CHARS // 4 + 1))
        assert (verdict.ok, verdict.score) == (False, 0.0)
        assert f"more than the {MAX_TEXT_CHARS:,} {check} compares" in verdict.reason

    @pytest.mark.parametrize("check", METRICS)
    def test_an_empty_output_scores_0(self, check: str) -> None:
        verdict = only({check: {"to": "refund issued", "threshold": 0.1}}, "")
        assert (verdict.ok, verdict.score) == (False, 0.0)


# --- properties ----------------------------------------------------------------------------

texts = st.text(max_size=80)


@settings(max_examples=150, deadline=None)
@given(check=st.sampled_from(METRICS), reference=texts, extra=texts, text=texts)
def test_scores_are_always_from_0_to_1(check: str, reference: str, extra: str, text: str) -> None:
    try:
        built = checks.build({check: {"to": [reference, extra], "threshold": 0.5}})
    except checks.CheckSpecError:
        assume(False)  # a reference without a word to compare is refused: see below
        return
    verdict = checks.evaluate(built, checks.Subject(text, {}))[0]
    assert verdict.score is not None and 0 <= verdict.score <= 1
    assert verdict.ok == (verdict.score >= 0.5 - 1e-9)


@settings(max_examples=150, deadline=None)
@given(check=st.sampled_from(METRICS), text=texts, n=st.integers(1, 4))
def test_identical_text_scores_1(check: str, text: str, n: int) -> None:
    arg: dict[str, Any] = {"to": text, "threshold": 1}
    if check == "rouge_n":
        arg["n"] = n
    try:
        built = checks.build({check: arg})
    except checks.CheckSpecError:
        assume(False)
        return
    verdict = checks.evaluate(built, checks.Subject(text, {}))[0]
    assert (verdict.ok, verdict.score) == (True, 1.0)


malformed = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=5),
    st.lists(st.text(max_size=3), max_size=2),
    st.fixed_dictionaries(
        {},
        optional={
            "to": st.one_of(st.none(), st.integers(), st.just([]), st.just([1]), st.just(" ")),
            "threshold": st.one_of(
                st.none(), st.booleans(), st.floats(), st.text(max_size=3), st.integers()
            ),
            "n": st.one_of(st.integers(-2, 9), st.floats(), st.booleans()),
            "min": st.floats(0, 1),
        },
    ),
)


@settings(max_examples=300, deadline=None)
@given(check=st.sampled_from(METRICS), arg=malformed)
def test_a_malformed_argument_is_one_line_naming_the_check(check: str, arg: Any) -> None:
    # Nothing drawn here is well formed: `to` is never a usable reference.
    with pytest.raises(checks.CheckSpecError) as caught:
        checks.build({check: arg})
    message = str(caught.value)
    assert "\n" not in message and message.startswith(check)


@pytest.mark.parametrize(
    ("arg", "said"),
    [
        ({"to": "a b", "threshold": 1.5}, "rouge_n: `threshold` must be a number from 0 to 1"),
        (
            {"to": "a b", "n": 5, "threshold": 0.5},
            "rouge_n: `n` must be a whole number from 1 to 4",
        ),
        ({"to": "a", "n": 2, "threshold": 0.5}, 'rouge_n: the reference "a" has too few words'),
        ({"to": "?!", "threshold": 0.5}, 'rouge_n: the reference "?!" has too few words'),
        ({"to": "a", "threshold": 0.5, "k": 3}, "rouge_n takes {to:"),
        ({"threshold": 0.5}, "rouge_n takes {to:"),
        ({"to": "x" * (MAX_TEXT_CHARS + 1), "threshold": 0.5}, "rouge_n: a reference is 8,001"),
    ],
)
def test_argument_errors_say_what_to_write(arg: dict[str, Any], said: str) -> None:
    with pytest.raises(checks.CheckSpecError, match="^" + re.escape(said)):
        checks.build({"rouge_n": arg})


def test_a_bad_rouge_l_in_a_case_file_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "summaries.yaml"
    path.write_text(
        "- id: ok\n  input: {}\n  expect: {rouge_l: {to: a b, threshold: 0.5}}\n"
        "- id: bad\n  input: {}\n  expect:\n    rouge_l: {to: a b, threshold: high}\n"
    )
    with pytest.raises(CaseFileError) as caught:
        load_cases([path], display_root=tmp_path)
    assert caught.value.problems == [
        "summaries.yaml:7: case 'bad': rouge_l: `threshold` must be a number from 0 to 1, "
        'got "high"'
    ]
