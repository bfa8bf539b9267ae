"""The RAG metrics, through the pinned judge: faithfulness, answer relevance, context
recall and context precision, each a score from 0 to 1 held to a threshold.

The judge lists, code counts: each prompt (gate.suite.judgepin) has the judge answer one
line per claim, statement or passage, and the arithmetic is done here, so a score is
always the stated formula over the judge's recorded lines:

- faithfulness = supported claims / claims of the answer, against the contexts;
- answer_relevance = (s − 1) / 4 for the judge's rating s from 1 to 5 of how well the
  answer addresses the question (the input's `question`, else the whole input);
- context_recall = supported statements / statements of the reference, against the contexts;
- context_precision = Σₖ precision@k · relₖ / Σₖ relₖ over the contexts in rank order
  (relₖ 1 when the judge calls the k-th relevant to the reference; 0 when none is).

A malformed answer (a line of another shape, no closing END, a passage numbered out of
order) fails the check with UNMEASURED and says so; an outage is SystemCallError (the
sample is an error). Contexts are Subject.passages(): the system's, else the input's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gate.checks.base import (
    UNMEASURED,
    CheckSpecError,
    Judge,
    Modifiers,
    Subject,
    Verdict,
    describe,
    short,
)
from gate.checks.graded import (
    held,
    no_judge,
    normalised,
    parse_score,
    rendered_input,
    threshold_of,
)
from gate.outputs import Context

#: the most lines a listing answer may hold, and its longest length
MAX_ITEMS = 100
MAX_LISTING_CHARS = 20_000
#: unsupported claims a reason names before it counts the rest
NAMED = 3
#: answer_relevance's rating scale
RELEVANCE_SCALE = (1, 5)

_CLAIM = re.compile(r"(SUPPORTED|UNSUPPORTED):\s*(\S.*)")
_PASSAGE = re.compile(r"(\d{1,3}):\s*(RELEVANT|IRRELEVANT)(?::\s*(.*))?")

#: (kind of prompt, what the judge is asked) or why it cannot be asked
Question = tuple[str, dict[str, str]]


def render_contexts(passages: Sequence[Context]) -> str:
    """The contexts as the judge is shown them: numbered in rank order, with their ids."""
    return "\n\n".join(
        f"[{number}]{f' (id: {passage.id})' if passage.id else ''}\n{passage.text}"
        for number, passage in enumerate(passages, start=1)
    )


def question_of(case_input: Mapping[str, Any]) -> str:
    """The question answer_relevance holds the answer to: the input's `question` when it
    is text, else the whole input as the judge is shown it."""
    asked = case_input.get("question") if isinstance(case_input, Mapping) else None
    return asked if isinstance(asked, str) and asked.strip() else rendered_input(case_input)


# --- reading the judge's answers -------------------------------------------------


def _listing_lines(text: str, what: str) -> list[str] | str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    shown = short(" ".join(text.split()), 80) or "an empty answer"
    if len(text) > MAX_LISTING_CHARS or len(lines) > MAX_ITEMS + 1:
        return f"the judge's answer lists more than {MAX_ITEMS} {what}: {shown!r}"
    if not lines or lines[-1] != "END":
        return f"the judge's answer does not end with a line END (cut off?): {shown!r}"
    return lines[:-1]


def parse_claims(text: str, what: str = "claims") -> list[tuple[bool, str]] | str:
    """`SUPPORTED: …` / `UNSUPPORTED: …` lines, then END: [(supported, claim)]; anything
    else: the problem, in words."""
    lines = _listing_lines(text, what)
    if isinstance(lines, str):
        return lines
    claims = []
    for line in lines:
        match = _CLAIM.fullmatch(line)
        if match is None:
            return (
                f"the judge's answer has a line that is not `SUPPORTED: …` or "
                f"`UNSUPPORTED: …`: {short(line, 80)!r}"
            )
        claims.append((match.group(1) == "SUPPORTED", match.group(2).strip()))
    return claims


def parse_relevance(text: str, count: int) -> list[bool] | str:
    """`<k>: RELEVANT|IRRELEVANT[: why]` for k = 1…count in order, then END: the flags;
    anything else: the problem, in words."""
    lines = _listing_lines(text, "passages")
    if isinstance(lines, str):
        return lines
    if len(lines) != count:
        return f"the judge's answer rates {len(lines)} passage(s), not the {count} retrieved"
    flags = []
    for number, line in enumerate(lines, start=1):
        match = _PASSAGE.fullmatch(line)
        if match is None or int(match.group(1)) != number:
            return (
                f"the judge's answer line {number} is not `{number}: RELEVANT` or "
                f"`{number}: IRRELEVANT`: {short(line, 80)!r}"
            )
        flags.append(match.group(2) == "RELEVANT")
    return flags


# --- the arithmetic ------------------------------------------------------------------


def supported_share(claims: Sequence[tuple[bool, str]]) -> float:
    """supported / all; callers handle an empty list (nothing to measure)."""
    return sum(ok for ok, _ in claims) / len(claims)


def average_precision(relevant: Sequence[bool]) -> float:
    """Σₖ precision@k · relₖ / Σₖ relₖ, k over the contexts in rank order; 0 when none is
    relevant (as Ragas's context precision)."""
    hits = 0
    total = 0.0
    for rank, flag in enumerate(relevant, start=1):
        if flag:
            hits += 1
            total += hits / rank
    return total / hits if hits else 0.0


def _unsupported(claims: Sequence[tuple[bool, str]], what: str) -> str:
    missing = [claim for ok, claim in claims if not ok]
    if not missing:
        return ""
    named = "; ".join(repr(short(claim, 80)) for claim in missing[:NAMED])
    more = f" and {len(missing) - NAMED} more" if len(missing) > NAMED else ""
    return f"; unsupported {what}: {named}{more}"


# --- the checks ----------------------------------------------------------------------


def _spec(name: str, arg: Any, *, reference: bool) -> tuple[float, str]:
    keys = {"threshold", "reference"} if reference else {"threshold"}
    shape = (
        "{reference: 'the answer it should give', threshold: 0 to 1}"
        if reference
        else ("{threshold: 0 to 1}")
    )
    if not isinstance(arg, Mapping) or set(arg) - keys or "threshold" not in arg:
        raise CheckSpecError(f"{name} takes {shape}, got {describe(arg)}")
    text = ""
    if reference:
        given = arg.get("reference")
        if not isinstance(given, str) or not given.strip():
            raise CheckSpecError(f"{name}: reference takes the reference answer as text")
        text = given.strip()
    return threshold_of(name, arg), text


def no_contexts(name: str, why: str) -> Verdict:
    return Verdict(
        name,
        False,
        f"{why}: {name} needs the passages the answer was grounded on (return `contexts` "
        "from the system, or give `contexts:` in the case input)",
        UNMEASURED,
    )


def ask_for(name: str, spec: Mapping[str, Any], subject: Subject) -> Question | str:
    """What check `name` (its `expect` entry `spec`) asks the judge about this subject;
    a string: why it cannot ask (no contexts). The checks ask this, and the recording
    keys are found by it (gate.judging.judge.judge_keys_of)."""
    if name == "answer_relevance":
        return name, {"question": question_of(subject.case_input), "answer": subject.text}
    passages = subject.passages()
    if isinstance(passages, str):
        return passages
    contexts = render_contexts(passages)
    if name == "faithfulness":
        return name, {"contexts": contexts, "answer": subject.text}
    reference = str(spec.get("reference", "")).strip()
    return name, {"contexts": contexts, "reference": reference}


def _metric(
    name: str, arg: Any, score: Callable[[str, Subject], Verdict], *, reference: bool
) -> tuple[float, Judge]:
    threshold, _ = _spec(name, arg, reference=reference)
    spec = dict(arg)

    def check(subject: Subject) -> Verdict:
        if subject.grader is None:
            return no_judge(name)
        question = ask_for(name, spec, subject)
        if isinstance(question, str):
            return no_contexts(name, question)
        kind, asked = question
        # An outage raises SystemCallError (the sample is an error); a malformed answer fails.
        answer = subject.grader.ask(subject.case.id, asked, kind=kind).text
        return score(answer, subject)

    return threshold, check


def _counted(name: str, threshold: float, answer: str, what: str, of: str) -> Verdict:
    claims = parse_claims(answer, what)
    if isinstance(claims, str):
        return Verdict(name, False, claims, UNMEASURED)
    if not claims:
        return Verdict(
            name,
            False,
            f"the judge found no {what} in {of}: there is nothing to measure (an answer "
            "that abstains is judged by answer_relevance or a rubric, not faithfulness)",
            UNMEASURED,
        )
    value = supported_share(claims)
    supported = sum(ok for ok, _ in claims)
    said = (
        f"{supported}/{len(claims)} {what} supported by the contexts ({value:.2f}, threshold "
        f"{threshold:g}){_unsupported(claims, what)}"
    )
    return Verdict(name, held(value, threshold), said, value)


def faithfulness(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    threshold = _spec(name, arg, reference=False)[0]
    return _metric(
        name,
        arg,
        lambda answer, _: _counted(name, threshold, answer, "claims", "the answer"),
        reference=False,
    )[1]


def context_recall(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    threshold = _spec(name, arg, reference=True)[0]
    return _metric(
        name,
        arg,
        lambda answer, _: _counted(name, threshold, answer, "statements", "the reference"),
        reference=True,
    )[1]


def answer_relevance(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    threshold = _spec(name, arg, reference=False)[0]
    low, high = RELEVANCE_SCALE

    def score(answer: str, subject: Subject) -> Verdict:
        parsed = parse_score(answer, low, high)
        if isinstance(parsed, str):
            return Verdict(name, False, parsed, UNMEASURED)
        raw, why = parsed
        value = normalised(raw, low, high)
        said = f"rated {raw} on {low}-{high} ({value:.2f}, threshold {threshold:g}): {why}"
        return Verdict(name, held(value, threshold), said, value)

    return _metric(name, arg, score, reference=False)[1]


def context_precision(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    threshold = _spec(name, arg, reference=True)[0]

    def score(answer: str, subject: Subject) -> Verdict:
        passages = subject.passages()
        count = len(passages) if not isinstance(passages, str) else 0
        flags = parse_relevance(answer, count)
        if isinstance(flags, str):
            return Verdict(name, False, flags, UNMEASURED)
        value = average_precision(flags)
        ranks = ", ".join(str(rank) for rank, flag in enumerate(flags, start=1) if flag)
        said = (
            f"relevant at rank(s) {ranks or 'none'} of {count} (average precision "
            f"{value:.2f}, threshold {threshold:g})"
        )
        return Verdict(name, held(value, threshold), said, value)

    return _metric(name, arg, score, reference=True)[1]
