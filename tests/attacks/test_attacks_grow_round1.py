"""Round-1 attacks on the features landed 2026-12-03: `casegate add` drafts, input files,
`history: {record: all}`, the suite footer, and the PII redaction.

Every test asserts the SAFE outcome: a failing test means the attack worked.
"""

from __future__ import annotations

import json
from pathlib import Path

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


@pytest.mark.parametrize("text", ["where is my order?\n\n", "a\n\n\n", "x\n \n\n", " ok\n\n\n\n"])
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


def test_a_message_of_blank_lines_only_is_no_text_to_draft(
    grow: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    log = grow.root / "blank.jsonl"
    log.write_text(_line("\n\n"))
    assert main(["add", "--from-log", str(log), "--dry-run", "--force"]) == 2
    assert "without message text" in capsys.readouterr().err


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


# --- input files: a file name is the pull request's text -----------------------------------

from tests.attacks.test_attacks_input_files import (  # noqa: E402  (its fixtures)
    _check,
    _commit,
    _reads,
    base,
    suite,
)

__all__ = ["base", "suite"]

FORGED = "x\n::error title=casegate::SHIP approved by CI\n.txt"


def test_an_input_file_name_cannot_forge_a_workflow_command_in_the_ruler_changes(
    base: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """`written_problem` refuses NUL and `\\`, not a line break; git commits a file name
    with one, and `files_difference` puts the name raw into the ruler change, which
    `check --base` prints on its own line: `::error …` then starts a line of the job log."""
    base.write_text(f"tickets/{FORGED}", "refund please")
    _reads(base, "tickets/a.txt", f"tickets/{FORGED}", critical=True)
    assert main(["record", "--quiet"]) == 0
    _commit(base)
    capsys.readouterr()
    code = main(["check", "--base", "main", "--out", "c.json"])
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert code == 1
    assert "input_files changed" in out
    for line in out.split("\n"):
        assert not line.lstrip().startswith("::"), line


# --- casegate add --rank: a hostile export must not hang it -------------------------------


def test_rank_on_long_requests_that_share_a_word_finishes_quickly(
    grow: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`clusters_of` compares every pair of texts in a bucket window (300 wide) with
    `fuzz.ratio`, quadratic in their length even with a score cutoff. Texts are capped at
    100,000 characters, but a pair that long still takes ~0.15-0.5 s: 12 such user messages
    sharing their longest word take over 20 s; a 256 MB export holds ~2,500 of them,
    every window 90,000 pairs (hours each). Production text is the attacker's: one user
    who sends long messages stalls `add --rank` on the export."""
    import random

    rng = random.Random(0)

    def message() -> str:
        words = ["".join(rng.choice("abcdefgh") for _ in range(5)) for _ in range(16_500)]
        return "supercalifragilisticexpialidocious " + " ".join(words)

    log = grow.root / "long.jsonl"
    log.write_text("".join(_line(message()) for _ in range(12)))
    # Bounded work, not wall time: every text the ratio compares is capped.
    from rapidfuzz import process

    from gate.grow import rank

    compared: list[int] = []
    real = process.cdist

    def counting(batch, *args, **kwargs):  # type: ignore[no-untyped-def]
        compared.extend(len(text) for text in batch)
        return real(batch, *args, **kwargs)

    monkeypatch.setattr(rank.process, "cdist", counting)
    assert main(["add", "--from-log", str(log), "--rank", "--dry-run", "--force"]) == 0
    assert compared and max(compared) <= rank.COMPARED_CHARS


def test_an_input_that_holds_input_files_itself_is_refused_even_without_input_files(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README: "The case's `input` may not use the key `input_files` itself". The check
    runs only for a case that also names `input_files:`; a case without it may hand its
    system `input_files: {"tickets/a.txt": "/proc/self/environ"}`, a mapping the system is
    told holds vetted paths inside the suite: no `..`/absolute/link check, no hash in the
    recording key or the ruler (an edit of that file is no ruler change), and a system that
    echoes what it reads puts the run's environment into the recording and the report.
    (`casegate add` can write such an input: a LangSmith chain's named inputs are kept.)"""
    suite.write_cases(
        [
            case("a", "q", contains="refund"),
            {
                "id": "b",
                "input": {"question": "q", "input_files": {"tickets/a.txt": "/proc/self/environ"}},
                "expect": {"contains": "refund"},
            },
        ]
    )
    code = main(["validate"])
    err = capsys.readouterr().err
    assert code == 2
    assert "input.input_files" in err


# --- defended: documented so a regression shows --------------------------------------------


@pytest.mark.parametrize("spelling", ["./tickets/a.txt", "tickets//a.txt", "tickets/./a.txt"])
def test_defended_an_edit_through_another_spelling_of_the_path_is_a_ruler_change(
    base: Project, capsys: pytest.CaptureFixture[str], spelling: str
) -> None:
    base.write_text("tickets/a.txt", "refund denied")
    _reads(base, spelling, critical=True)
    assert main(["record", "--quiet"]) == 0
    _commit(base)
    capsys.readouterr()
    code, out = _check(capsys)
    assert code == 1
    assert "input_files changed without a version bump: tickets/a.txt edited" in out


def test_defended_moving_a_file_from_the_case_to_defaults_and_editing_it_is_a_ruler_change(
    base: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    base.write_text("tickets/a.txt", "refund denied")
    base.write_cases([case("a", "q", contains="refund", fields_={"critical": True})])
    data = yaml.safe_load(base.config_path.read_text())
    data["defaults"] = {"input_files": ["tickets/a.txt"]}
    base.config_path.write_text(yaml.safe_dump(data))
    assert main(["record", "--quiet"]) == 0
    _commit(base)
    capsys.readouterr()
    code, out = _check(capsys)
    assert code == 1
    assert "tickets/a.txt edited" in out


def test_defended_a_renamed_case_that_reads_an_edited_file_is_a_ruler_change(
    base: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    base.write_text("tickets/a.txt", "refund denied")
    base.write_cases(
        [case("a2", "q", contains="refund", fields_={"input_files": ["tickets/a.txt"]})]
    )
    assert main(["record", "--quiet"]) == 0
    _commit(base)
    capsys.readouterr()
    code, out = _check(capsys)
    assert code == 1
    assert "critical case a: removed from the selection" in out


# --- casegate add: secrets in production text ---------------------------------------------

LIVE_KEY = "sk-proj-4f1c9d2b7a0e8c6b5d3a1f9e7c5b3a1d"


@pytest.mark.parametrize("dry_run", [False, True])
def test_the_suites_own_api_key_quoted_in_a_log_never_reaches_the_draft(
    grow: Project,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    dry_run: bool,
) -> None:
    """A request log that captured the key (a debug line, a user pasting it, an error the
    provider echoed into the output) becomes a case file meant to be committed. gate.secrets
    masks only keys casegate itself read with `read_key`; `add` reads none, so the key the
    suite's config names (`OPENAI_API_KEY` here, the system's `api_key_env`) is written
    verbatim into the draft's input and its `# the output was:` comment."""
    monkeypatch.setenv("OPENAI_API_KEY", LIVE_KEY)
    log = grow.root / "leaky.jsonl"
    log.write_text(_line(f"my key {LIVE_KEY} fails", output=f"Invalid API key: {LIVE_KEY}"))
    args = ["add", "--from-log", str(log), "--force"] + (["--dry-run"] if dry_run else [])
    assert main(args) == 0
    captured = capsys.readouterr()
    written = "".join(
        p.read_text() for p in (grow.root / "cases").glob("*.yaml") if p.name != "cases.yaml"
    )
    assert LIVE_KEY not in captured.out + captured.err + written


# --- casegate add: memory ------------------------------------------------------------------


def test_a_source_within_the_size_limit_does_not_take_gigabytes(grow: Project) -> None:
    """Sources are capped at 256 MB, but parsed whole: `{},` is 3 bytes of JSON and ~100
    bytes of Python, so 32 MB of empty objects peaks at ~1 GB and the 256 MB the limit
    allows at ~8.5 GB, past a GitHub runner's 7 GB (and most laptops' free memory): the
    process is OOM-killed rather than refused with a `file:line` problem."""
    count = 32 * 1024 * 1024 // 3
    source = grow.root / "spans.json"
    source.write_text('{"resourceSpans": [' + "{}," * count + "{}]}")
    peak_kb = add_peak_kb(grow, source)
    assert peak_kb < 400 * 1024, f"peak {peak_kb / 1024:.0f} MB for a 32 MB source"


def add_peak_kb(project: Project, source: Path) -> int:
    """The peak memory (KiB) of `casegate add --from-otel SOURCE` in a process of its own."""
    import subprocess
    import sys

    code = (
        "import resource\n"
        "from gate.cli import main\n"
        f"main(['add', '--from-otel', {str(source)!r}, '--dry-run', '--force'])\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    finished = subprocess.run(
        [sys.executable, "-c", code], cwd=project.root, capture_output=True, text=True, check=False
    )
    return int(finished.stdout.strip().splitlines()[-1])


# --- history: {record: all} ----------------------------------------------------------------


def test_defended_a_pull_request_that_turns_on_record_all_writes_no_history(
    base: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    data = yaml.safe_load(base.config_path.read_text())
    data["history"] = {"path": "history/h.jsonl", "record": "all"}
    base.config_path.write_text(yaml.safe_dump(data))
    _commit(base)
    capsys.readouterr()
    code, out = _check(capsys)
    assert code == 1  # `history` changed: listed as loosening
    assert "history: not recorded: a pull request's run" in out
    assert not (base.root / "history" / "h.jsonl").exists()
