"""A scripted stand-in for the example suite's LLM judge — NOT a language model.

The example suite pins it (`judge:` in casegate.yml) so that judge verdicts, the judge's
calibration and its self-consistency can be recorded and replayed without keys or
network. It is asked what casegate asks a real judge (the rubric, the case's input and
the response, under judge prompt v1) and answers one line, `PASS: …` or `FAIL: …`. It
understands nothing: it looks for the rubric phrases it has a rule for, and each rule is
a few string tests on the response.

- "acknowledges": the response's first sentence acknowledges the customer's trouble
  (sorry, apologise, disappointing, frustrating…) and is not a "sorry, but" before a
  policy. A first sentence that only thanks them ("thanks for letting us know") is
  borderline.
- "one focused question": the response asks exactly one question (a question mark, and
  no ", and" joining a second ask to it) and repeats no run of eight or more of the
  customer's words. One question in a response over 40 words is borderline.
- "can do instead": the response names something the customer can do (return it, …),
  without hedging ("you might be able to"): the rubric says plainly.
- "off-topic": the first sentence declines or names what support helps with, and the
  response asks what they need. Steering back without asking is borderline.

Any other rubric gets `FAIL`, saying it has no rule for it.

Like a model at temperature 0, it is not perfectly consistent: on a borderline response
it leans one way on the first ask and answers the other way on every second ask of the
same question in one process (counted, not random), so `judge: {consistency: 3}` asks
it three times and sees the flip. Everything else it answers the same every time.
Tokens are estimated from word counts; `standin-judge-v1` is a label, not a model.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from typing import Any

#: what the stand-in says in every recording's `raw`
GENERATOR = "scripted stand-in judge (examples/standin_judge.py), not a language model"

_ACKNOWLEDGES = re.compile(
    r"\b(sorry|apologi[sz]e|apologies|disappointing|frustrating|let-down|that's not ok)\b", re.I
)
_SORRY_BUT = re.compile(r"\bsorry,? but\b", re.I)
_THANKS = re.compile(r"\bthanks? (you )?for (telling|letting|reaching)\b", re.I)
_SUPPORT_TOPICS = re.compile(r"\b(orders?|returns?|shipping|delivery|account|refunds?)\b", re.I)
_DECLINES = re.compile(r"\b(i can only|i can help with|i'm not able|i can't help with)\b", re.I)
_CAN_DO = re.compile(
    r"\b(please return|return it|you can (return|exchange|send)|send it back|"
    r"start a return|choose exchange)\b",
    re.I,
)
_HEDGED = re.compile(r"\b(might|may be able|perhaps|possibly|not sure)\b", re.I)

_asked: Counter[tuple[str, str, str]] = Counter()
_asked_lock = threading.Lock()


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+|\s+[—–]\s+", text.strip()) if s]


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def _echoes(response: str, asked: str, run: int = 8) -> bool:
    """True when the response repeats `run` or more of the customer's words in a row."""
    said = _words(response)
    runs = {tuple(said[i : i + run]) for i in range(len(said) - run + 1)}
    words = _words(asked)
    return any(tuple(words[i : i + run]) in runs for i in range(len(words) - run + 1))


# Each rule: (verdict, reason, borderline).
def _acknowledges(response: str, asked: str) -> tuple[bool, str, bool]:
    first = (_sentences(response) or [""])[0]
    if _ACKNOWLEDGES.search(first) and not _SORRY_BUT.search(first):
        return True, "the first sentence acknowledges the customer's trouble", False
    if _THANKS.search(first):
        return False, "the first sentence thanks the customer but does not acknowledge it", True
    if _ACKNOWLEDGES.search(response):
        return False, "it asks or states policy before it acknowledges the trouble", False
    return False, "it never acknowledges the customer's trouble", False


def _one_question(response: str, asked: str) -> tuple[bool, str, bool]:
    questions = response.count("?") + sum(
        sentence.count(", and ") for sentence in _sentences(response) if sentence.endswith("?")
    )
    if _echoes(response, asked):
        return False, "it repeats the customer's message back", False
    if questions != 1:
        return False, f"it asks {questions} questions, not one", False
    if len(response.split()) > 40:
        return True, "it asks one question, inside a long answer", True
    return True, "it asks one focused question", False


def _can_do_instead(response: str, asked: str) -> tuple[bool, str, bool]:
    if not _CAN_DO.search(response):
        return False, "it does not say what the customer can do instead", False
    if _HEDGED.search(response):
        return False, "it names what the customer can do, but not plainly", False
    return True, "it says plainly what the customer can do instead", False


def _off_topic(response: str, asked: str) -> tuple[bool, str, bool]:
    first = (_sentences(response) or [""])[0]
    steers = bool(_DECLINES.search(first) or _SUPPORT_TOPICS.search(first))
    asks = "?" in response
    if steers and asks:
        return True, "it names what support helps with and asks what they need", False
    if steers:
        return False, "it steers back to what support does but asks nothing", True
    return False, "it does not steer the customer back to what support does", False


#: rubric phrase → rule, first match wins
RULES = [
    ("one focused question", _one_question),
    ("can do instead", _can_do_instead),
    ("off-topic", _off_topic),
    ("acknowledges", _acknowledges),
]


def _tokens(text: str) -> int:
    return max(1, round(len(text.split()) * 1.3))


def grade(asked: dict[str, Any], system: dict[str, Any]) -> dict[str, Any]:
    """The python-provider entry point for the judge: {rubric, input, output} → one line."""
    rubric, shown, response = (str(asked.get(key, "")) for key in ("rubric", "input", "output"))
    rule = next((rule for phrase, rule in RULES if phrase in rubric.lower()), None)
    if rule is None:
        text = "FAIL: the stand-in judge has no rule for this rubric"
    else:
        verdict, reason, borderline = rule(response, shown)
        with _asked_lock:
            n = _asked[(rubric, shown, response)]
            _asked[(rubric, shown, response)] += 1
        if borderline and n % 2 == 1:  # a borderline response: every second ask goes the other way
            verdict = not verdict
        text = f"{'PASS' if verdict else 'FAIL'}: {reason}"
    prompt = f"{system.get('prompt', '')} {rubric} {shown} {response}"
    return {
        "text": text,
        "input_tokens": _tokens(prompt),
        "output_tokens": _tokens(text),
        "model": system.get("model"),
        "stop_reason": "stop",
        "raw": {"generator": GENERATOR},
    }
