"""`casegate add` end to end, through the command line, on a temporary suite."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from gate.cli import main
from gate.suite.cases import NOTE_PLACEHOLDER, load_cases
from tests.conftest import Project, case
from tests.docs_text import page
from tests.grow.test_sources import DATA


@pytest.fixture
def suite(project: Project) -> Project:
    project.write_cases(
        [
            case("refund-window", "How long do I have to return an item?", contains="30 days"),
            case("refund-speed", "How long do refunds take to arrive?", contains="days"),
        ]
    )
    return project


def drafts(folder: Path) -> dict[str, dict[str, object]]:
    """The cases in every file `add` wrote (all but the suite's own), loaded as a run would."""
    files = sorted(p for p in folder.glob("*.yaml") if p.name != "cases.yaml")
    return {c.id: c.model_dump() for c in load_cases(files)}


def test_a_log_line_becomes_a_reviewable_case_in_the_first_case_folder(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["add", "--from-log", str(DATA / "requests.jsonl"), "--line", "1"])
    out = capsys.readouterr()
    assert code == 0, out.err
    [(case_id, draft)] = drafts(suite.root / "cases").items()
    assert case_id == "can-i-get-my-refund-as-537a01"  # as the README's walk shows it
    assert draft["input"] == {
        "question": "Can I get my refund as store credit instead of on my card?"
    }
    assert draft["expect"] == {"not_contains": "Refunds are issued as store credit only."}
    assert draft["tags"] == ["regression"] and draft["note"] == NOTE_PLACEHOLDER
    assert draft["added"] == dt.datetime.now(dt.UTC).date()
    assert "requests.jsonl:1 (request req-7f3a)" in str(draft["provenance"])
    assert "(not in a git repository)" in str(draft["provenance"])
    assert f"wrote cases/{case_id}.yaml" in out.out
    text = (suite.root / "cases" / f"{case_id}.yaml").read_text()
    assert "# DRAFT expect" in text and "flagged by a user: user.feedback=negative" in text


def test_provenance_names_the_repositorys_commit(suite: Project) -> None:
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=suite.root, check=True)
    subprocess.run([*git, "add", "."], cwd=suite.root, check=True)
    subprocess.run([*git, "commit", "-qm", "suite"], cwd=suite.root, check=True)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=suite.root, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert main(["add", "--from-otel", str(DATA / "otel.json"), "--span", "b7ad6b7169203331"]) == 0
    [draft] = drafts(suite.root / "cases").values()
    assert str(draft["provenance"]).endswith(f"span b7ad6b7169203331 at commit {head}")


@pytest.mark.parametrize(
    ("flags", "question"),
    [
        (["--from-otel", "otel.json", "--span", "eee19b7ec3c1b174"], "My parcel arrived damaged"),
        (["--from-otel", "otel.json", "--span", "c1d2e3f4a5b6c7d8"], "Can I change the delivery"),
        (
            [
                "--from-langsmith",
                "langsmith_runs.json",
                "--run",
                "aa11bb22-cc33-4d44-8e55-ff6677889900",
            ],
            "Cancel my subscription",
        ),
        (
            ["--from-langfuse", "langfuse_traces.json", "--trace", "obs-gen-1"],
            "Can I return sale items",
        ),
        (
            ["--from-log", "requests.jsonl", "--select", "custom_id=batch-req-1"],
            "Do you ship to Norway",
        ),
    ],
)
def test_every_source_writes_a_case_that_validates(
    suite: Project, flags: list[str], question: str, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = [str(DATA / f) if f.endswith((".json", ".jsonl")) else f for f in flags]
    assert main(["add", *flags]) == 0
    [draft] = drafts(suite.root / "cases").values()
    assert str(draft["input"]["question"]).startswith(question)  # type: ignore[index]
    capsys.readouterr()
    assert main(["validate"]) == 0
    err = capsys.readouterr().err
    assert f"still has the note {NOTE_PLACEHOLDER!r}" in err
    assert err.count("casegate: warning:") == 1


def test_a_case_id_or_a_file_is_never_replaced(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    log = str(DATA / "requests.jsonl")
    assert main(["add", "--from-log", log, "--line", "2"]) == 0
    written = sorted((suite.root / "cases").glob("where-*.yaml"))
    before = written[0].read_text()
    # the same request again is a near-duplicate of the new case; forced, it proposes the
    # same id, whose file exists
    assert main(["add", "--from-log", log, "--line", "2"]) == 2
    assert "near-duplicate of case 'where-is-order-a12345-" in capsys.readouterr().err
    assert main(["add", "--from-log", log, "--line", "2", "--force"]) == 2
    assert (
        "case id 'where-is-order-a12345-98a6ec' is taken (cases/where-is-order-a12345-98a6ec.yaml:4)"
        in capsys.readouterr().err
    )
    assert written[0].read_text() == before
    # a file that exists, even one of the suite's
    own = (suite.root / "cases" / "cases.yaml").read_text()
    assert main(["add", "--from-log", log, "--line", "1", "--out", "cases/cases.yaml"]) == 2
    assert "cases/cases.yaml: exists; casegate add never replaces a file" in capsys.readouterr().err
    assert (suite.root / "cases" / "cases.yaml").read_text() == own
    # an id the suite has
    assert main(["add", "--from-log", log, "--line", "1", "--id", "refund-window"]) == 2
    assert "case id 'refund-window' is taken (cases/cases.yaml:" in capsys.readouterr().err


def test_a_near_duplicate_is_refused_unless_forced(
    suite: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "dup.jsonl"
    request = {
        "model": "m",
        "messages": [{"role": "user", "content": "how long do refunds take to arrive"}],
    }
    log.write_text(json.dumps({"request": request, "response": None}) + "\n")
    assert main(["add", "--from-log", str(log)]) == 2
    err = capsys.readouterr().err
    assert "near-duplicate of case 'refund-speed' (cases/cases.yaml:" in err
    assert "token sort ratio 100 ≥ 90" in err and "nothing written" in err
    assert drafts(suite.root / "cases") == {}
    assert main(["add", "--from-log", str(log), "--force"]) == 0
    assert "casegate: warning: near-duplicate of case 'refund-speed'" in capsys.readouterr().err
    assert len(drafts(suite.root / "cases")) == 1


def test_dry_run_prints_the_yaml_and_writes_nothing(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["add", "--from-langfuse", str(DATA / "langfuse_traces.json"), "--trace", "trace-77aa"]
    assert main([*args, "--dry-run", "--id", "phone-number"]) == 0
    out = capsys.readouterr().out
    printed = yaml.safe_load(out)
    assert printed[0]["id"] == "phone-number" and printed[0]["expect"] == {"min_words": 1}
    assert "the source recorded a failure: level ERROR: upstream timeout" in out
    assert sorted(p.name for p in (suite.root / "cases").iterdir()) == ["cases.yaml"]


def test_out_names_a_file_or_a_folder(suite: Project) -> None:
    log = str(DATA / "requests.jsonl")
    assert main(["add", "--from-log", log, "--line", "2", "--out", "cases/new/one.yaml"]) == 0
    assert list(drafts(suite.root / "cases" / "new")) == [
        next(iter(drafts(suite.root / "cases" / "new")))
    ]
    assert (suite.root / "cases" / "new" / "one.yaml").is_file()
    assert main(["add", "--from-log", log, "--line", "4", "--out", "elsewhere"]) == 0
    [written] = (suite.root / "elsewhere").glob("*.yaml")
    assert written.name.startswith("do-you-ship-to-norway-")


def test_a_file_outside_the_suite_is_named(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["add", "--from-log", str(DATA / "requests.jsonl"), "--line", "4", "--out", "x"]) == 0
    )
    assert "is outside the suite's `cases:`: move it in" in capsys.readouterr().err


def test_select_filters_on_metadata_and_names_what_matched(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    log = str(DATA / "requests.jsonl")
    assert main(["add", "--from-log", log, "--dry-run"]) == 2
    assert "3 model calls and none picked (line 1, line 2, line 4)" in capsys.readouterr().err
    assert (
        main(["add", "--from-log", log, "--select", "env=prod", "--select", "request_id=nope"]) == 2
    )
    assert "no record matching env=prod and request_id=nope" in capsys.readouterr().err
    assert main(["add", "--from-log", log, "--select", "env=staging", "--dry-run"]) == 0
    assert "Where is order A12345?" in capsys.readouterr().out
    assert main(["add", "--from-log", log, "--select", "oops"]) == 2
    assert "write KEY=VALUE" in capsys.readouterr().err


def test_a_failing_result_becomes_a_case_with_the_checks_that_failed(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    suite.write_cases(
        [
            case(
                "refund-window",
                "How long do I have to return an item?",
                contains="30 days",
                max_words=50,
            ),
            case("refund-speed", "How long do refunds take to arrive?", contains="arrive"),
        ]
    )
    assert main(["run", "--mode", "live", "--out", "r.json", "--quiet"]) == 0
    assert main(["add", "--from-results", "r.json", "--case", "refund-speed"]) == 2
    assert "case 'refund-speed' passed" in capsys.readouterr().err
    assert main(["add", "--from-results", "r.json", "--case", "refund-window"]) == 0
    [(case_id, draft)] = drafts(suite.root / "cases").items()
    assert case_id.startswith("refund-window-regression-")
    assert draft["input"] == {"question": "How long do I have to return an item?"}
    assert draft["expect"] == {"contains": "30 days"}  # max_words passed: not copied
    assert "casegate add from results r.json case refund-window" in str(draft["provenance"])
    text = next((suite.root / "cases").glob("refund-window-regression-*.yaml")).read_text()
    assert "failed contains:" in text
    assert "the output was: plain: How long do I have to return an item?" in text


def test_usage_mistakes_are_one_line_each(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    log = str(DATA / "requests.jsonl")
    assert main(["add", "--from-results", "r.json"]) == 2
    assert "--from-results needs --case ID" in capsys.readouterr().err
    assert main(["add", "--from-otel", str(DATA / "otel.json"), "--line", "3"]) == 2
    assert "--line is for --from-log" in capsys.readouterr().err
    assert main(["add", "--from-log", log, "--rank", "--top", "0"]) == 2
    assert "--top takes 1 to 1000, not 0" in capsys.readouterr().err
    assert main(["add", "--from-log", log, "--top", "3"]) == 2
    assert "--top is for --rank" in capsys.readouterr().err
    assert main(["add", "--from-results", "r.json", "--case", "a", "--select", "k=v"]) == 2
    assert "--from-results picks the case with --case" in capsys.readouterr().err
    assert main(["add", "--from-otel", str(DATA / "otel.json"), "--span", "00f067aa0ba902b7"]) == 2
    err = capsys.readouterr().err
    assert "no model call at id '00f067aa0ba902b7'" in err and "span eee19b7ec3c1b174" in err


def test_recorded_embeddings_find_a_paraphrase_and_a_missing_one_is_said(
    suite: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gate.produce.recordings import RecordingStore
    from gate.produce.services.embeddings import Embedder
    from gate.produce.services.recorded import entry_key, fingerprint_of
    from gate.suite.config import load_config

    suite.write_config(embeddings={"provider": "python", "target": "nowhere:embed", "model": "e1"})
    paraphrase = "When will my money be back on my card?"
    log = tmp_path / "para.jsonl"
    request = {"model": "m", "messages": [{"role": "user", "content": paraphrase}]}
    log.write_text(json.dumps({"request": request, "response": None}) + "\n")
    assert main(["add", "--from-log", str(log), "--dry-run"]) == 0
    out = capsys.readouterr().err
    assert "embedding similarity skipped: the new input has no recorded embedding" in out
    assert "`add` makes no live call (token ratio only)" in out
    # Recorded (as `similar` records them, under the case's file): the two texts' vectors
    # point the same way, so the paraphrase is refused although its words differ.
    loaded = load_config(suite.config_path)
    pin = loaded.config.embeddings
    assert pin is not None
    store = RecordingStore(loaded.recordings_dir)
    embedder = Embedder(pin, mode="replay", entries=store)
    fingerprint = fingerprint_of(pin)
    for text, vector in (
        ("How long do refunds take to arrive?", (1.0, 0.0)),
        (paraphrase, (0.99, 0.05)),
    ):
        key = entry_key("embeddings", fingerprint, text)
        store.put_entry("refund-speed", key, {"text": text, **embedder.encode(vector)})
    assert main(["add", "--from-log", str(log)]) == 2
    err = capsys.readouterr().err
    assert "near-duplicate of case 'refund-speed' (cases/cases.yaml:" in err
    assert "recorded embeddings' cosine 0.999)" in err


def test_a_span_without_captured_content_is_named_not_drafted(
    suite: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    span = {
        "spanId": "aaaaaaaaaaaaaaaa",
        "attributes": [{"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}}],
    }
    export = tmp_path / "bare.json"
    export.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    assert main(["add", "--from-otel", str(export)]) == 2
    err = capsys.readouterr().err
    assert "bare.json span aaaaaaaaaaaaaaaa: without message text, left out" in err
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true" in err
    assert main(["add", "--from-otel", str(export), "--rank"]) == 0
    out = capsys.readouterr()
    assert "1 model call(s) without message text, left out" in out.err
    assert "0 requests in 0 clusters" in out.out


def test_every_exchange_passes_the_one_redaction_step_before_it_is_written(
    suite: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import dataclasses

    from gate.grow import command
    from gate.grow.exchange import Exchange, Message

    def redacted(exchange: Exchange, loaded: object, tally: object) -> Exchange:
        return dataclasses.replace(
            exchange,
            messages=tuple(Message(m.role, f"[redacted] {m.text}") for m in exchange.messages),
            output="[redacted output]",
        )

    monkeypatch.setattr(command, "_redacted", redacted)
    for args in (
        ["--from-otel", str(DATA / "otel.json"), "--span", "c1d2e3f4a5b6c7d8"],
        ["--from-langfuse", str(DATA / "langfuse_traces.json"), "--rank"],
    ):
        assert main(["add", *args, "--dry-run"]) == 0
        out = capsys.readouterr().out
        assert "question: '[redacted] " in out and "not_contains: '[redacted output]'" in out
    assert main(["run", "--mode", "live", "--out", "r.json", "--quiet"]) == 0
    assert main(["add", "--from-results", "r.json", "--case", "refund-window", "--dry-run"]) == 0
    assert "# the output was: [redacted output]" in capsys.readouterr().out


def test_the_docs_document_every_option_of_add() -> None:
    import argparse

    from gate.cli import build_parser

    section = page("growing")
    assert section.startswith("# Growing the suite: `casegate add`")
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flags = {
        flag
        for action in commands.choices["add"]._actions
        for flag in action.option_strings
        if flag.startswith("--") and flag != "--help"
    }
    assert len(flags) == 19
    assert sorted(flag for flag in flags if flag not in section) == []


def test_add_redacts_personal_data_and_says_how_much_by_kind(
    suite: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite.write_config(privacy={"redact_keys": ["customer_ref"]})
    line = {
        "request": {
            "model": "gpt-4.1-mini",
            "messages": [
                {
                    "role": "user",
                    "content": "I am jane.doe@example.com, call +44 20 7946 0958; card "
                    "4111 1111 1111 1111 was charged twice, mail jane.doe@example.com",
                }
            ],
        },
        "response": {
            "choices": [
                {"message": {"role": "assistant", "content": "Noted, jane.doe@example.com"}}
            ]
        },
        "metadata": {"customer_ref": "CUST-99812", "env": "prod"},
    }
    log = tmp_path / "pii.jsonl"
    log.write_text(json.dumps(line) + "\n")
    assert main(["add", "--from-log", str(log), "--line", "1", "--dry-run"]) == 0
    captured = capsys.readouterr()
    for secret in ("jane.doe@example.com", "7946", "4111", "CUST-99812"):
        assert secret not in captured.out and secret not in captured.err
    assert "<EMAIL_1>" in captured.out and "<CARD_1>" in captured.out
    assert "<EMAIL_2>" not in captured.out  # one address, one placeholder throughout
    assert "redacted from 1 record(s) before drafting: 1 card, 3 email, 1 key, 1 phone" in (
        captured.err
    )
    # --no-redact keeps the text, and says so.
    assert main(["add", "--from-log", str(log), "--line", "1", "--dry-run", "--no-redact"]) == 0
    kept = capsys.readouterr()
    assert "jane.doe@example.com" in kept.out and "--no-redact" in kept.err
