"""A scripted stand-in for the RAG example's judge — NOT a language model.

The example pins it (`judge:` in casegate.yml) so the graded judge and the four RAG
metrics can be recorded, calibrated and replayed without keys or network. It is asked
exactly what casegate asks a real judge (the prompts of judge prompt v1, told apart here
by their system prompt) and answers in the format each prompt demands. It understands
nothing; every answer is word overlap, with stop words left out (rag_retriever.words):

- faithfulness: each sentence of the answer is a claim, SUPPORTED when at least 80% of
  its words appear in the contexts;
- context_recall: the same, for each sentence of the reference answer;
- context_precision: a passage is RELEVANT when it holds at least half of the reference's
  words;
- answer_relevance: the share of the question's words the answer repeats: 5 from 60%,
  4 from 40%, 3 from 25%, 2 above none, else 1;
- the graded judge (any rubric): 5 when the answer names a figure (a digit) in at most
  25 words, 4 with a figure in more, 2 without one, 1 when it is empty, placed on the
  scale asked (on 0-10: 10, 8, 2, 0);
- the pass/fail judge: PASS when the answer names a figure, else FAIL.

Deterministic: the same question always gets the same answer, so `judge.consistency`
measures no flip (a real judge's would).
"""

from __future__ import annotations

import re
from typing import Any

from rag_retriever import words

GENERATOR = "scripted stand-in RAG judge (examples/rag/rag_standin_judge.py), not a model"


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]


def _share(part: str, whole: str) -> float:
    said, held = words(part), set(words(whole))
    return sum(word in held for word in said) / len(said) if said else 0.0


def _passages(rendered: str) -> list[str]:
    """The numbered passages casegate shows a judge: `[1] (id: …)` then the text."""
    return [p for p in re.split(r"(?:^|\n\n)\[\d+\](?: \(id: [^)]*\))?\n", rendered) if p]


def _claims(text: str, contexts: str) -> str:
    lines = [
        f"{'SUPPORTED' if _share(claim, contexts) >= 0.8 else 'UNSUPPORTED'}: {claim}"
        for claim in _sentences(text)
    ]
    return "\n".join([*lines, "END"])


def _graded(output: str, scale: str) -> str:
    if not output.strip():
        rating, why = 1, "the answer is empty"
    elif not re.search(r"\d", output):
        rating, why = 2, "it names no figure"
    elif len(output.split()) > 25:
        rating, why = 4, "it names the figure, at some length"
    else:
        rating, why = 5, "it names the figure, briefly"
    # The rating 1 to 5, placed on the scale asked ("a whole number from 0 … to 10 …").
    low, high = (int(n) for n in re.findall(r"\d+", scale)[:2])
    return f"SCORE {low + round((rating - 1) * (high - low) / 4)}: {why}"


def _relevance(question: str, answer: str) -> str:
    share = _share(question, answer)
    score = 5 if share >= 0.6 else 4 if share >= 0.4 else 3 if share >= 0.25 else 2 if share else 1
    return f"SCORE {score}: the answer repeats {share:.0%} of the question's words"


def _answer(asked: dict[str, Any], prompt: str) -> str:
    if "numbered passage" in prompt:  # context_precision
        reference = str(asked["reference"])
        flags = [_share(reference, passage) >= 0.5 for passage in _passages(asked["contexts"])]
        lines = [f"{n}: {'RELEVANT' if f else 'IRRELEVANT'}" for n, f in enumerate(flags, 1)]
        return "\n".join([*lines, "END"])
    if "reference answer into its statements" in prompt:  # context_recall
        return _claims(str(asked["reference"]), str(asked["contexts"]))
    if "factual claims" in prompt:  # faithfulness
        return _claims(str(asked["answer"]), str(asked["contexts"]))
    if "how well an answer addresses" in prompt:  # answer_relevance
        return _relevance(str(asked["question"]), str(asked["answer"]))
    if "SCORE <n>" in prompt:  # the graded judge
        return _graded(str(asked["output"]), str(asked["scale"]))
    named = re.search(r"\d", str(asked["output"]))
    return "PASS: it names a figure" if named else "FAIL: it names no figure"


def grade(asked: dict[str, Any], system: dict[str, Any]) -> dict[str, Any]:
    """The python-provider entry point for the judge: what casegate asks → its answer."""
    text = _answer(asked, str(system.get("prompt", "")))
    shown = " ".join(str(value) for value in asked.values())
    return {
        "text": text,
        "input_tokens": max(1, round(len(shown.split()) * 1.3)),
        "output_tokens": max(1, round(len(text.split()) * 1.3)),
        "model": system.get("model"),
        "stop_reason": "stop",
        "raw": {"generator": GENERATOR},
    }
