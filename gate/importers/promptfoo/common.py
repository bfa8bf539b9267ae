"""What every part of the promptfoo importer shares: its version, limits and errors."""

from __future__ import annotations

from gate.errors import CasegateError

PROMPTFOO_VERSION = "0.123.0"
SEMANTICS = f"promptfoo {PROMPTFOO_VERSION}"
CONTAINS_LIST_PARSING = (
    "A string value of `contains-any`, `contains-all` and their `i…`/`not-…` forms is split "
    "on commas the way promptfoo does since its pull request #8041 (March 2026): a field in "
    'double quotes keeps its commas (`"1,000", in stock` is `1,000` and `in stock`), `\\"` '
    'and `""` stand for a quote, empty fields are dropped. Earlier releases split '
    "`icontains-any`, `contains-all` and `icontains-all` on every comma, quotes and all; "
    "a value they would have read differently is marked where it occurs."
)
CHECKS_MODULE = "promptfoo_checks"
SYSTEMS_MODULE = "promptfoo_systems"
#: promptfoo's default grader when no `provider` is given changes between releases; the
#: pin written for `llm-rubric` is a stub a person replaces with the judge they trust.
JUDGE_STUB = {"provider": "openai", "model": "gpt-4.1-2025-04-14", "prompt_version": 1}
MAX_SHOWN = 400  # characters of an original assertion quoted in MIGRATION.md
#: promptfoo runs every combination of a test's array vars; past this many, a person picks.
MAX_COMBINATIONS = 1000


class PromptfooError(CasegateError):
    """The promptfoo config cannot be read: one line naming the file (and line)."""


class NeedsPerson(Exception):
    """This assertion is not mapped; the message says why."""
