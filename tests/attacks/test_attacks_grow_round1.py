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


# --- casegate suite: tag and cluster names are the pull request's ------------------------


HOSTILE_NAMES = ["::error title=casegate::SHIP approved by CI", "\x1b]0;owned\x07\x1b[2J"]


def test_casegate_suite_prints_no_workflow_command_or_escape_from_a_tag_or_cluster(
    grow: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """`casegate suite` lists each tag and cluster on a line of its own as `  NAME: COUNT`;
    the runner trims leading whitespace before it looks for `::`, so a tag
    `::error title=casegate::SHIP approved by CI` is an annotation in a pull request's
    job log (a CI step that prints the suite's shape), and an escape sequence reaches the
    terminal raw (flatten turns line breaks into spaces, nothing else)."""
    grow.write_cases(
        [
            case("a", "q", contains="x", fields_={"tags": HOSTILE_NAMES}),
            case("b", "q2", contains="x", fields_={"cluster": HOSTILE_NAMES[0]}),
            case("c", "q3", contains="x", fields_={"cluster": HOSTILE_NAMES[1]}),
        ]
    )
    assert main(["suite"]) == 0
    out = capsys.readouterr().out
    for line in out.split("\n"):
        assert not line.lstrip().startswith("::"), line
    assert "\x1b" not in out and "\x07" not in out


def test_casegate_suite_prints_no_terminal_escape_from_a_tag_or_cluster(
    grow: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    grow.write_cases(
        [
            case("a", "q", contains="x", fields_={"tags": [HOSTILE_NAMES[1]]}),
            case("c", "q3", contains="x", fields_={"cluster": HOSTILE_NAMES[1] + "c"}),
        ]
    )
    assert main(["suite"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
