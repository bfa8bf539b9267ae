"""A scripted stand-in for a support agent — NOT a language model.

It plans the tool calls an agent for the fictional shop "Acme Outfitters" would make
for one request and returns them as its trajectory (`tool_calls`), with the help
articles it searched (`contexts`, ranked, each with an id) and a short reply. Nothing
is executed: casegate judges the path, never runs the tools. Like a model, it is
steered by phrases in its system prompt:

- "Check the refund policy before any refund"  → calls check_refund_policy first
- "Never close an account yourself"            → hands account closures to a person
  (without it, it calls delete_account: the regression the candidate prompt shows)

Every answer is a function of the request and the prompt: no draws, no network; and
it names no model, so casegate takes it as deterministic (one sample is its answer).
"""

from __future__ import annotations

import re
from typing import Any

#: the help centre it searches: id → article
ARTICLES = {
    "kb-refunds": "Refunds go back to the original payment method within 5 to 7 days.",
    "kb-damaged": "Items that arrive damaged are refunded in full, no return needed.",
    "kb-shipping": "Express shipping takes 1 to 2 business days, standard 3 to 7.",
    "kb-address": "A delivery address can be changed until the order ships.",
    "kb-accounts": "Closing an account is done by our team after a security check.",
}
#: a word for the search: its first 5 letters, so "refund" finds "refunds"; short words
#: ("a", "to", "the") find nothing
_WORD = re.compile(r"[a-z]{4,}")
_ORDER = re.compile(r"\bA\d{4}\b")


def _stems(text: str) -> set[str]:
    return {word[:5] for word in _WORD.findall(text.lower())}


def _search(query: str, top: int = 3) -> list[dict[str, str]]:
    """The articles sharing most words with the query, best first (ties by id)."""
    asked = _stems(query)
    scored = sorted(
        ((len(asked & _stems(text)), ident) for ident, text in ARTICLES.items()),
        key=lambda pair: (-pair[0], pair[1]),
    )
    return [{"id": ident, "text": ARTICLES[ident]} for hits, ident in scored[:top] if hits]


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def respond(case_input: dict[str, Any], system: dict[str, Any]) -> dict[str, Any]:
    """The python-provider entry point: (input, system) → reply, trajectory, contexts."""
    prompt = str(system.get("prompt", ""))
    careful = "Check the refund policy before any refund" in prompt
    handoff = "Never close an account yourself" in prompt
    request = str(case_input.get("request", ""))
    lowered = request.lower()
    found = _ORDER.search(request)
    order = found.group(0) if found else ""
    calls: list[dict[str, Any]] = []
    contexts: list[dict[str, str]] = []
    if "refund" in lowered or "money back" in lowered or "broken" in lowered:
        query = "refund for a damaged item"
        contexts = _search(query)
        calls.append(_call("search_help", query=query))
        calls.append(_call("lookup_order", order_id=order))
        if careful:
            calls.append(_call("check_refund_policy", order_id=order))
        calls.append(_call("issue_refund", order_id=order, reason="damaged"))
        reply = f"I have refunded order {order} in full to your original payment method."
    elif "close my account" in lowered:
        customer = (re.findall(r"\bC\d+\b", request) or [""])[0]
        if handoff:
            calls.append(_call("handoff_to_human", reason=f"account closure for {customer}"))
            reply = "A member of our team will close your account after a security check."
        else:
            calls.append(_call("delete_account", customer_id=customer))
            reply = "Your account is closed."
    elif "address" in lowered:
        street = request.rsplit(" to ", 1)[-1].rstrip(".")
        calls.append(_call("lookup_order", order_id=order))
        calls.append(_call("update_address", order_id=order, address=street))
        reply = f"Done: order {order} will now be delivered to {street}."
    elif order:
        calls.append(_call("lookup_order", order_id=order))
        reply = f"Order {order} is out for delivery and should arrive today."
    else:
        contexts = _search(request)
        calls.append(_call("search_help", query=request))
        best = contexts[0]["text"] if contexts else "I could not find an answer to that."
        reply = best
    words = len(prompt.split()) + len(request.split())
    return {
        "text": reply,
        "tool_calls": calls,
        "contexts": contexts,
        "stop_reason": "stop",
        "input_tokens": words,
        "output_tokens": len(reply.split()),
    }
