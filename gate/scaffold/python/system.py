"""The system under test: casegate calls `answer` once per case (`target: system:answer`)."""

from __future__ import annotations

from typing import Any


def answer(case_input: dict[str, Any], system: dict[str, Any]) -> str | dict[str, Any]:
    """Answer one case, the way your product would.

    `case_input` is the case's `input:` mapping (here {"question": "..."}); `system` is
    the config's `system:` block, with the prompt file's text as system["prompt"].

    Return the output as a string, or as a dict with "text" and, optionally, what you
    know of the call: "input_tokens", "output_tokens", "cost_usd", "model", "raw", and
    "tool_calls" ([{"name": ..., "arguments": {...}}], for the tool checks). Raise to
    make the case an error: it is reported, and the run goes on.
    """
    # A stub, so that `casegate record` works at once: replace it with a call to your
    # model, pipeline or service, then bump `version:` in casegate.yml and record again.
    return f"(stub) you asked: {case_input['question']}"
