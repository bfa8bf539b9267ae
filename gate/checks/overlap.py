"""Word and character overlap with a reference: ROUGE, BLEU, chrF and SQuAD's token F1.

Each takes `{to: reference or [references], threshold: 0.x}` and passes when its score,
from 0 to 1, reaches the threshold. The libraries they use (sacrebleu, rapidfuzz) are
imported only by a suite that uses them: every run imports this module.

- `rouge_n` and `rouge_l`: the F-measure of ROUGE-N (n-grams counted with their repeats)
  and ROUGE-L (the longest common subsequence of words), computed here as Google's
  `rouge-score` computes them (tests/checks/test_overlap.py holds the two to the same
  figures) but with words in every script: its tokenizer keeps `[a-z0-9]` only, so an
  answer in French loses its accented words and one in Japanese scores 0 against itself.
  On ASCII text the two split alike. No stemming. Against several references, the best.
  (Not the library itself at run time: it imports nltk, most of a second, and ships no
  wheel, which the Action's offline image build needs.)
- `bleu` and `chrf`: `sacrebleu`'s sentence scores (BLEU with its `13a` tokenizer, `exp`
  smoothing and effective order, as `sacrebleu -sl` reports; chrF with character 6-grams,
  no word n-grams, β 2), divided by 100. Several references count as sacrebleu counts them.
- `token_f1`: SQuAD's F1 over words after SQuAD's normalisation (lower case, ASCII
  punctuation and the articles a, an, the removed, split on whitespace); the best over
  references.

`normalize:` steps apply to the output and the references first, as for `levenshtein`.
An output longer than MAX_TEXT_CHARS fails unmeasured, as `similar`'s does.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence, Sized
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
from gate.checks.similar import MAX_TEXT_CHARS, SHOWN_CHARS, figure, mapping_arg
from gate.checks.text import normalizer

#: ROUGE-N's n: 1 by default, as promptfoo's `rouge-n` (js-rouge's default)
ROUGE_N_DEFAULT = 1
ROUGE_N_MAX = 4

#: a word for ROUGE: a run of letters or digits, in any script
_WORD = re.compile(r"[^\W_]+")


def rouge_words(text: str) -> list[str]:
    """ROUGE's words: rouge-score's own split (lower case, runs of letters and digits)
    widened from ASCII to every script (composed first, so an accent typed as a combining
    mark stays in its word)."""
    return _WORD.findall(unicodedata.normalize("NFC", text).lower())


# --- SQuAD's token F1 -----------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def squad_words(text: str) -> list[str]:
    """SQuAD's normalisation: lower case, no ASCII punctuation, no articles, then words."""
    return _ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split()


def token_f1_score(output: str, reference: str) -> float:
    """SQuAD's F1: the harmonic mean of word precision and recall, words counted with
    their repeats; when either side has no word, 1 if both have none, else 0."""
    predicted, gold = squad_words(output), squad_words(reference)
    if not predicted or not gold:
        return float(predicted == gold)
    shared = sum((Counter(predicted) & Counter(gold)).values())
    if not shared:
        return 0.0
    precision, recall = shared / len(predicted), shared / len(gold)
    return 2 * precision * recall / (precision + recall)


# --- arguments ----------------------------------------------------------------------------


def _references(name: str, arg: Any, shape: str, words: Callable[[str], Sized]) -> list[str]:
    """`to` as a list of references, each a string with something to compare."""
    to = arg.get("to")
    given = [to] if isinstance(to, str) else to
    if not isinstance(given, list) or not given or not all(isinstance(r, str) for r in given):
        raise CheckSpecError(
            f"{name}: `to` must be a reference string or a non-empty list of them; "
            f"{name} takes {shape}"
        )
    for reference in given:
        if len(reference) > MAX_TEXT_CHARS:
            raise CheckSpecError(
                f"{name}: a reference is {len(reference):,} characters; "
                f"the limit is {MAX_TEXT_CHARS:,}"
            )
        if not words(reference):
            raise CheckSpecError(
                f"{name}: the reference {describe(reference, SHOWN_CHARS)} has too few "
                "words to compare"
            )
    return list(given)


def threshold_arg(name: str, arg: Any) -> float:
    """The entry's `threshold`: a number from 0 to 1 the score must reach."""
    limit = arg.get("threshold")
    if isinstance(limit, bool) or not isinstance(limit, int | float) or not 0 <= limit <= 1:
        raise CheckSpecError(
            f"{name}: `threshold` must be a number from 0 to 1, got {describe(limit)}"
        )
    return float(limit)


Metric = Callable[[str, Sequence[str]], float]


def _judge(
    name: str,
    label: str,
    metric: Metric,
    references: list[str],
    limit: float,
    modifiers: Modifiers,
) -> Judge:
    """The judge shared by every overlap check: normalise, cap, measure, compare."""
    norm = normalizer(modifiers.normalize)
    normalized = [norm(reference) for reference in references]
    shown = describe(references[0], SHOWN_CHARS)
    if len(references) > 1:
        shown += f" (best of {len(references)} references)"

    def judge(subject: Subject) -> Verdict:
        text = subject.text
        if len(text) > MAX_TEXT_CHARS:
            return Verdict(
                name,
                False,
                f"the output is {len(text):,} characters, more than the {MAX_TEXT_CHARS:,} "
                f"{name} compares, so it is not measured against {shown}",
                UNMEASURED,
            )
        measured = metric(norm(text), normalized)
        score = min(1.0, max(0.0, measured))
        if meets(measured, limit):
            return Verdict(name, True, score=score)
        return Verdict(
            name,
            False,
            f"{label} {figure(score, limit)} to {shown}, the threshold is {limit:g}",
            score,
        )

    return judge


# --- the checks -------------------------------------------------------------------------------


def rouge_n(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    shape = '{to: "reference", n: 1 to 4 (default 1), threshold: 0.5}'
    mapping_arg(name, arg, {"to", "n", "threshold"}, {"to", "threshold"}, shape)
    n = arg.get("n", ROUGE_N_DEFAULT)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= ROUGE_N_MAX:
        raise CheckSpecError(f"{name}: `n` must be a whole number from 1 to 4, got {describe(n)}")
    references = _references(name, arg, shape, lambda text: _ngrams(rouge_words(text), n))
    limit = threshold_arg(name, arg)

    def measure(text: str, given: Sequence[str]) -> float:
        return max(rouge_n_score(text, reference, n) for reference in given)

    return _judge(name, f"ROUGE-{n} F", measure, references, limit, modifiers)


def rouge_l(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    shape = '{to: "reference", threshold: 0.5}'
    mapping_arg(name, arg, {"to", "threshold"}, {"to", "threshold"}, shape)
    references = _references(name, arg, shape, rouge_words)
    limit = threshold_arg(name, arg)

    def measure(text: str, given: Sequence[str]) -> float:
        return max(rouge_l_score(text, reference) for reference in given)

    return _judge(name, "ROUGE-L F", measure, references, limit, modifiers)


def _f_measure(shared: int, predicted: int, expected: int) -> float:
    precision, recall = shared / max(predicted, 1), shared / max(expected, 1)
    return 2 * precision * recall / (precision + recall) if shared else 0.0


def _ngrams(words: list[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def rouge_n_score(output: str, reference: str, n: int) -> float:
    """ROUGE-N's F: n-grams both share (each as often as the fewer has it), over the
    output's n-grams (precision) and the reference's (recall)."""
    predicted, expected = _ngrams(rouge_words(output), n), _ngrams(rouge_words(reference), n)
    shared = sum((predicted & expected).values())
    return _f_measure(shared, predicted.total(), expected.total())


def rouge_l_score(output: str, reference: str) -> float:
    """ROUGE-L's F: the longest common subsequence of words, over the output's words
    (precision) and the reference's (recall)."""
    from rapidfuzz.distance import LCSseq  # bit-parallel: 4,000 words a side in a millisecond

    predicted, expected = rouge_words(output), rouge_words(reference)
    return _f_measure(LCSseq.similarity(predicted, expected), len(predicted), len(expected))


def bleu(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    shape = '{to: "reference" or ["reference", …], threshold: 0.3}'
    mapping_arg(name, arg, {"to", "threshold"}, {"to", "threshold"}, shape)
    references = _references(name, arg, shape, str.split)
    limit = threshold_arg(name, arg)
    from sacrebleu.metrics.bleu import BLEU

    def measure(text: str, given: Sequence[str]) -> float:
        # A scorer caches the references it read: one per call, so threads share none.
        scorer = BLEU(effective_order=True, smooth_method="exp")
        return float(scorer.sentence_score(text, list(given)).score) / 100

    return _judge(name, "BLEU", measure, references, limit, modifiers)


def chrf(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    shape = '{to: "reference" or ["reference", …], threshold: 0.5}'
    mapping_arg(name, arg, {"to", "threshold"}, {"to", "threshold"}, shape)
    references = _references(name, arg, shape, str.split)
    limit = threshold_arg(name, arg)
    from sacrebleu.metrics.chrf import CHRF

    def measure(text: str, given: Sequence[str]) -> float:
        scorer = CHRF(char_order=6, word_order=0, beta=2)
        return float(scorer.sentence_score(text, list(given)).score) / 100

    return _judge(name, "chrF", measure, references, limit, modifiers)


def token_f1(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    shape = '{to: "reference" or ["reference", …], threshold: 0.5}'
    mapping_arg(name, arg, {"to", "threshold"}, {"to", "threshold"}, shape)
    references = _references(name, arg, shape, squad_words)
    limit = threshold_arg(name, arg)

    def measure(text: str, given: Sequence[str]) -> float:
        return max(token_f1_score(text, reference) for reference in given)

    return _judge(name, "token F1", measure, references, limit, modifiers)
