"""The Python files the import writes: stub checks and a stub system, failing until ported."""

from __future__ import annotations

from collections.abc import Sequence

from gate.importers.promptfoo.assertions import DRAFT_CHECK, Stub
from gate.yamlfile import printable


def _comment(text: str) -> list[str]:
    return [f"    # {printable(line)}".rstrip() for line in text.splitlines() or [""]]


def checks_module(stubs: Sequence[Stub]) -> str:
    lines = [
        '"""Custom checks for the code assertions (`javascript`, `python`, `ruby`) imported from',
        "promptfoo, and the one check of the draft cases.",
        "",
        "casegate never runs promptfoo's code: each check below fails, saying so, until a",
        "person ports it. A check receives the output text and the case, and returns a bool",
        "or (bool, reason); see casegate's docs/checks.md.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any",
    ]
    for stub in stubs:
        if stub.function == DRAFT_CHECK:
            lines += [
                "",
                "",
                f"def {DRAFT_CHECK}(output: str, case: Any) -> tuple[bool, str]:",
                "    # The check of every draft case (tagged `draft`): promptfoo ran its test with",
                "    # no assertion, showing the output for a person to read. Give each such case",
                "    # its own checks in the cases file, then delete this function.",
                "    return (False, 'draft: no check yet; write this case\\'s `expect`')",
            ]
            continue
        verdict = (
            "passes when it returns a score ≥ threshold"
            if stub.threshold is not None
            else ("passes when it returns true, a score > 0 or {pass: true}")
        )
        if stub.inverse:
            verdict += "; as `not-…`, the verdict is inverted"
        if stub.transform is not None:
            verdict += f"; `output` is the output after `transform: {stub.transform}`"
        reason = (
            f"not migrated: {stub.kind} assertion of promptfoo {stub.test}; port {stub.function}"
        )
        lines += [
            "",
            "",
            f"def {stub.function}(output: str, case: Any) -> tuple[bool, str]:",
            *_comment(f"promptfoo {stub.test}, `{stub.kind}` ({verdict}):"),
            *_comment(stub.code),
            f"    return (False, {reason!r})",
        ]
    return "\n".join(lines) + "\n"


SYSTEMS_MODULE_TEXT = '''"""A stub system under test, for a promptfoo provider casegate lacks.

Write `not_migrated`, or point `system.target` at your own callable: it receives the case
input and the resolved system mapping (the promptfoo provider id and its config, secrets
and endpoints left out, are under `promptfoo_provider` and `promptfoo_config`; the
endpoints are commented out beside them) and returns the output.
"""

from __future__ import annotations

from typing import Any


def not_migrated(case_input: dict[str, Any], system: dict[str, Any]) -> str:
    raise NotImplementedError(
        f"not migrated: promptfoo provider {system.get('promptfoo_provider')!r} has no casegate "
        "adapter; write promptfoo_systems.not_migrated, or use provider openai or anthropic"
    )
'''
