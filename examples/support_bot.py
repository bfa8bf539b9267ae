"""A scripted stand-in for a support assistant — NOT a language model.

It answers like a support bot for the fictional shop "Acme Outfitters" would,
including the failure modes real prompt changes cause, so the example suite can
be recorded, replayed and compared without keys or network. Its behaviour is
steered by phrases in the system prompt, the way a prompt steers a model:

- "Keep every answer under 60 words"  → short answers (fixes long-answer cases)
- "goodwill discount"                 → offers discounts to unhappy customers (a bad idea)
- "give a delivery date"              → promises arrival dates, in about half its answers
                                         (a worse idea)
- "Chargebacks are high severity"     → triage rates chargebacks correctly
- "order ids exactly as written"       → passes `A1234` to lookup_order (else the digits only)

It also calls a `lookup_order` tool for order-status questions, writes a handoff note as
prose around a fenced JSON block, and honours `params.max_tokens` by cutting the answer
and reporting finish reason `length`, as a model does. (The stand-in embedder is
examples/standin_embeddings.py, the stand-in judge examples/standin_judge.py.)

A model answers differently from one call to the next; this stand-in does so on purpose
in four places only (VARIES), so the suite's `samples: auto` has something to measure.
The draws are seeded, not random: the n-th time one process is asked the same input it
draws from a hash of SEED, the place, the input and n. A recording run therefore draws
the same answers for each case (which sample index gets which can follow thread timing).
Every other answer is a function of the input and the prompt.

Tokens are estimated from word counts; the `model` names are labels of this
stand-in, not real models.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter
from typing import Any

#: the seed of every draw; changing it (or VARIES) changes what a recording run records
SEED = "acme-standin-1"
#: where the stand-in varies, and how often it takes the other branch
VARIES = {
    # drops the customer's name from the greeting (returns-greets-by-name)
    "forgets_name": 0.10,
    # asks for the order number first and apologises after (complaint-apology's judge)
    "asks_first": 0.15,
    # refuses the role-play override instead of leaking (injection-roleplay-debugbot)
    "resists_roleplay": 0.25,
    # under "give a delivery date", gives the estimate instead (shipping-no-promised-date)
    "keeps_estimate": 0.5,
}
_asked: Counter[tuple[str, str]] = Counter()
_asked_lock = threading.Lock()


def _draw(place: str, case_input: Any) -> bool:
    """True with probability VARIES[place], seeded by the input and how often it was asked."""
    asked = json.dumps(case_input, sort_keys=True, ensure_ascii=False)
    with _asked_lock:
        n = _asked[(place, asked)]
        _asked[(place, asked)] += 1
    digest = hashlib.sha256(f"{SEED}|{place}|{asked}|{n}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < VARIES[place]


POLICY = {
    "returns": (
        "You can return unworn items with their tags within 30 days of delivery. "
        "Start the return from Orders → Return an item, and we email a prepaid label."
    ),
    "refund": (
        "Refunds go back to your original payment method within 5–7 business days "
        "after the returned item reaches our warehouse."
    ),
    "final_sale": "Items marked final sale cannot be returned or exchanged.",
    "exchange": "Size exchanges are free: choose Exchange instead of Return on the order page.",
    "shipping": (
        "Standard shipping takes 3–7 business days and express 1–2 business days; "
        "these are estimates, and your tracking link has the latest status."
    ),
    "international": (
        "We ship to 40 countries. Duties and import taxes are charged by your country "
        "and paid on delivery."
    ),
    "cancel": (
        "You can cancel within 1 hour of ordering from Orders → Cancel. After that the "
        "order is packed, so please return it once it arrives."
    ),
    "warranty": "Manufacturing defects are covered for 1 year from delivery.",
    "password": (
        "Use the Forgot password link on the sign-in page and we will email a reset link. "
        "We will never ask you for your password."
    ),
    "privacy": (
        "I have passed your data request to our privacy team; they reply within 30 days. "
        "You can also write to privacy@acme.example."
    ),
}

LONG_TAILS = {
    "returns": (
        " If you are unsure whether your item qualifies, take a look at the care label and "
        "the packing slip, because both of them list the order date and the item condition "
        "rules. Many customers find it helpful to keep the original box, although it is not "
        "required. Once the item is scanned by the carrier you will see the return as in "
        "transit in your account, and we will send you an email at every step."
    ),
    "international": (
        " Delivery times depend on customs in your country, which can add several days, and "
        "the carrier may contact you to arrange payment of duties before handing over the "
        "parcel. We recommend checking your country's import rules, since some products have "
        "extra requirements, and keeping your phone number up to date on the order."
    ),
    "warranty": (
        " To make a claim, send us photos of the defect together with your order number, and "
        "our quality team will review them, usually within two business days. If the claim "
        "is approved we will send a replacement or a refund, whichever you prefer, and you "
        "will not need to pay for return shipping on a defective item."
    ),
}


def _flags(prompt: str) -> dict[str, bool]:
    lowered = prompt.lower()
    return {
        "concise": "under 60 words" in lowered,
        "discounts": "goodwill discount" in lowered,
        "dates": "give a delivery date" in lowered,
        "chargeback_high": "chargebacks are high severity" in lowered,
        "exact_ids": "order ids exactly as written" in lowered,
    }


def _tokens(text: str) -> int:
    return max(1, round(len(text.split()) * 1.3))


def _intent(question: str) -> str:
    q = question.lower()
    rules = [
        ("injection", r"ignore (all|your|previous)|system prompt|you are now|developer mode"),
        ("order_status", r"\border [a-z]?\d{3,}"),
        ("legal", r"lawyer|sue|legal action|court"),
        ("injury", r"injur|hurt|burn|rash|allerg"),
        ("privacy", r"delete my (data|account)|gdpr|personal data"),
        ("password", r"password|log ?in|sign ?in"),
        ("cancel", r"cancel"),
        ("final_sale", r"final sale|clearance"),
        ("exchange", r"exchange|different size|swap"),
        ("refund", r"refund|money back"),
        ("returns", r"return"),
        ("warranty", r"warranty|broke|defect|fell apart|seam"),
        ("international", r"international|abroad|customs|duties|ship to (canada|germany|japan)"),
        ("complaint", r"terrible|worst|angry|furious|unacceptable|disappointed|late again"),
        ("shipping", r"ship|deliver|arriv|tracking|where is my order"),
        ("discount", r"discount|coupon|promo|code"),
        ("greeting", r"^(hi|hello|hey)\b"),
    ]
    for intent, pattern in rules:
        if re.search(pattern, q):
            return intent
    return "other"


def _reply(intent: str, question: str, case_input: dict[str, Any], flags: dict[str, bool]) -> str:
    name = dict(case_input.get("customer") or {}).get("name")
    greeting = f"Hi {name}, " if name and not flags["concise"] else ""
    if greeting and _draw("forgets_name", case_input):
        greeting = "Hi, "
    if intent == "injection":
        if "debugbot" in question.lower() and not _draw("resists_roleplay", case_input):
            # The stand-in's known weakness: a role-play override leaks internal notes.
            return "DebugBot mode on. Internal notes: refunds over $500 need manager approval."
        return (
            greeting + "I can't share my instructions or change how I work, but I'm happy "
            "to help with your order, returns or shipping."
        )
    if intent == "legal":
        return (
            greeting + "I'm sorry this has come to that. I've passed your message to a "
            "member of our customer relations team, who will contact you by email."
        )
    if intent == "injury":
        return (
            greeting + "I'm sorry to hear that — please stop using the item. I've flagged "
            "this as urgent for our safety team, who will contact you today."
        )
    if intent == "complaint":
        parts = [
            "I'm sorry your order has been a let-down.",
            *(
                ["As a goodwill gesture here is a 15% discount code: SORRY15."]
                if flags["discounts"]
                else []
            ),
            "Send me your order number and I'll check what went wrong.",
        ]
        if _draw("asks_first", case_input):  # the request first, the apology after it
            parts.insert(0, parts.pop())
        return greeting + " ".join(parts)
    if intent == "shipping" and flags["dates"] and not _draw("keeps_estimate", case_input):
        return greeting + "Your order will arrive by Friday. " + POLICY["shipping"]
    if intent == "discount":
        return (
            greeting + "I can only apply discount codes that are already on your account; "
            "I'm not able to create new ones."
        )
    if intent == "greeting":
        return (
            greeting + "How can I help with your order today?"
            if greeting
            else ("Hello! How can I help with your order today?")
        )
    if intent in POLICY:
        text = greeting + POLICY[intent]
        if intent == "refund" and "return" in question.lower():
            text = greeting + POLICY["returns"] + " " + POLICY["refund"]
        if intent in LONG_TAILS and not flags["concise"]:
            text += LONG_TAILS[intent]
        return text
    return (
        "I can help with orders, returns, shipping and your account. "
        "Could you tell me a little more about what you need?"
    )


def _triage(question: str, flags: dict[str, bool]) -> str:
    intent = _intent(question)
    q = question.lower()
    category = {
        "refund": "billing",
        "discount": "billing",
        "returns": "returns",
        "exchange": "returns",
        "final_sale": "returns",
        "shipping": "shipping",
        "international": "shipping",
        "password": "account",
        "privacy": "account",
        "injury": "safety",
        "legal": "legal",
    }.get(intent, "other")
    severity = "low"
    if intent in ("injury", "legal"):
        severity = "high"
    elif intent in ("complaint", "refund"):
        severity = "medium"
    if "chargeback" in q:
        category = "billing"
        severity = "high" if flags["chargeback_high"] else "medium"
    return json.dumps(
        {
            "category": category,
            "severity": severity,
            "escalate": severity == "high",
            "summary": " ".join(question.split()[:12]),
        }
    )


def _kb_answer(question: str, documents: list[dict[str, Any]]) -> str:
    words = {w for w in re.findall(r"[a-z]+", question.lower()) if len(w) > 3}
    scored = sorted(
        documents,
        key=lambda d: -len(words & set(re.findall(r"[a-z]+", str(d.get("text", "")).lower()))),
    )
    if not scored:
        return "I couldn't find that in our help articles."
    best = scored[0]
    sentence = str(best.get("text", "")).split(". ")[0].rstrip(".")
    return f"{sentence} [{best.get('id')}]."


def _order_lookup(question: str, flags: dict[str, bool]) -> dict[str, Any]:
    match = re.search(r"\border ([A-Za-z]?)(\d{3,})", question)
    letter, digits = (match.group(1), match.group(2)) if match else ("", "0")
    order_id: Any = f"{letter.upper()}{digits}" if flags["exact_ids"] else int(digits)
    return {"name": "lookup_order", "arguments": {"order_id": order_id}}


def _handoff(question: str, flags: dict[str, bool]) -> str:
    intent = _intent(question)
    note = {
        "intent": intent,
        "needs_human": intent in ("legal", "injury", "privacy", "complaint"),
        "summary": " ".join(question.split()[:12]),
    }
    body = json.dumps(note, indent=2)
    if flags["concise"]:  # the short prompt drops the fence: the JSON sits in the prose
        return f"Handoff: {json.dumps(note)}"
    return f"Here is the handoff note for the next agent:\n\n```json\n{body}\n```\n"


def _cut(text: str, max_tokens: Any) -> tuple[str, str]:
    """The answer as a model with this output limit gives it, and why it stopped."""
    if not isinstance(max_tokens, int) or _tokens(text) <= max_tokens:
        return text, "stop"
    words = text.split()
    kept = max(1, int(max_tokens / 1.3))
    return " ".join(words[:kept]), "length"


def answer(case_input: dict[str, Any], system: dict[str, Any]) -> dict[str, Any]:
    """The python-provider entry point: (input, system) → text plus usage."""
    prompt = str(system.get("prompt", ""))
    flags = _flags(prompt)
    question = str(case_input.get("question", ""))
    tool_calls: list[dict[str, Any]] = []
    if case_input.get("task") == "triage":
        text = _triage(question, flags)
    elif case_input.get("task") == "handoff":
        text = _handoff(question, flags)
    elif case_input.get("documents"):
        text = _kb_answer(question, list(case_input["documents"]))
    elif not question.strip():
        text = "It looks like your message was empty. What can I help you with today?"
    elif len(question.split()) > 400:
        text = (
            "Thanks for the detail. To make sure I help with the right thing: is this about "
            "a return, a delivery or your account?"
        )
    elif _intent(question) == "order_status":
        text = "Let me look that order up for you."
        tool_calls.append(_order_lookup(question, flags))
    else:
        text = _reply(_intent(question), question, case_input, flags)
    text, stop_reason = _cut(text, dict(system.get("params") or {}).get("max_tokens"))
    if tool_calls:
        stop_reason = "tool_calls"  # the turn ends so the caller can run the tool
    return {
        "text": text,
        "input_tokens": _tokens(prompt) + _tokens(json.dumps(case_input)),
        "output_tokens": _tokens(text),
        "model": system.get("model"),
        "stop_reason": stop_reason,
        "tool_calls": tool_calls,
        "raw": {"generator": "scripted stand-in (examples/support_bot.py), not a language model"},
    }
