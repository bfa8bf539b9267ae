"""Round-1 attacks on the features landed 2026-12-03: `casegate add` drafts, input files,
`history: {record: all}`, the suite footer, and the PII redaction.

Every test asserts the SAFE outcome: a failing test means the attack worked.
"""

from __future__ import annotations

import json

import pytest

from gate.cli import main
from gate.yamlfile import load_yaml
from tests.conftest import Project, case


def _line(text: str, output: str = "wrong answer") -> str:
    request = {"model": "m", "messages": [{"role": "user", "content": text}]}
    response = {"choices": [{"message": {"role": "assistant", "content": output}}]}
    return json.dumps({"request": request, "response": response}) + "\n"


@pytest.fixture
def grow(project: Project) -> Project:
    project.write_cases([case("known", "what are your opening hours", contains="9")])
    return project


# --- casegate add: the draft must read back as what was drafted -----------------------------


@pytest.mark.parametrize("text", ["where is my order?\n\n", "\n", "a\n\n\n", "x\n \n\n"])
def test_a_message_ending_in_blank_lines_drafts_a_loadable_case(
    grow: Project, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    """A production message that ends in a blank line (common in pasted text) is dumped as a
    `|+` block, after which PyYAML writes a document-end marker `...`; the draft is built
    one key at a time, so that `...` lands in the middle of the case: the file written does
    not load, and the suite it joins stops validating (exit 2 on every later run)."""
    log = grow.root / "trailing.jsonl"
    log.write_text(_line(text))
    assert main(["add", "--from-log", str(log), "--dry-run", "--force"]) == 0
    printed = capsys.readouterr().out
    [draft] = load_yaml(printed)
    assert draft["input"] == {"question": text}
