"""`casegate drift`: a loopback OpenAI server whose answers change between record and drift."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate.cli import main
from gate.drift.age import age_days, old_recordings
from gate.drift.report import markdown_report, read_report, text_report
from tests.conftest import OPENAI_KEY, Project, case, chat_system
from tests.fakes.llm_server import FakeLLMServer, Fault, Received, Reply

#: what the fake model says now, by question; each test changes it between record and drift
Script = dict[str, Reply]


def scripted(script: Script) -> Any:
    def reply(received: Received) -> Reply:
        return script.get(received.last_user_text, Reply(text="I do not know."))

    return reply


def drift_project(project: Project, server: FakeLLMServer, **config: Any) -> None:
    project.write_config(
        system=chat_system("openai", server, max_retries=0, timeout_s=2),
        concurrency=2,
        **config,
    )


#: a flip (pass → fail), a changed output without a flip, a changed model string, a
#: changed system fingerprint, and a case that stays exactly as recorded
CASES = [
    case("refund", "refund window?", contains="30 days", fields_={"critical": True}),
    case("greeting", "hello?", contains_any=["hello", "hi"]),
    case("model", "which model?", contains="model"),
    case("fingerprint", "fingerprint?", contains="fp"),
    case("steady", "steady?", equals="steady as she goes"),
]


def recorded_script() -> Script:
    return {
        "refund window?": Reply(text="You have 30 days to return it."),
        "hello?": Reply(text="hello there"),
        "which model?": Reply(text="same model text", model="model-a-2025-01-01"),
        "fingerprint?": Reply(text="fp text", system_fingerprint="fp_old"),
        "steady?": Reply(text="steady as she goes"),
    }


def drifted_script() -> Script:
    script = recorded_script()
    script["refund window?"] = Reply(text="Returns are accepted within two weeks.")
    script["hello?"] = Reply(text="hi, hello, how can I help?")
    script["which model?"] = Reply(text="same model text", model="model-a-2025-06-01")
    script["fingerprint?"] = Reply(text="fp text", system_fingerprint="fp_new")
    return script


@pytest.fixture
def recorded(project: Project, llm_server: FakeLLMServer) -> Script:
    """The suite recorded against the first script; returns the live script to change."""
    script = recorded_script()
    llm_server.reply = scripted(script)
    drift_project(project, llm_server)
    project.write_cases(CASES)
    assert main(["record", "--quiet", "--out", "rec.json"]) == 0
    script.update(drifted_script())
    return script


def drift_json(*args: str) -> tuple[int, dict[str, Any]]:
    code = main(["drift", "--quiet", "--format", "json", "--out", "drift.json", *args])
    return code, json.loads(Path("drift.json").read_text())


def test_drift_names_flips_changed_outputs_models_and_fingerprints(
    recorded: Script, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = drift_json()
    assert code == 1  # one flip, and drift.max_flips defaults to 0
    assert report["schema"] == "casegate.drift/1"
    assert report["flips"] == ["refund"]
    assert report["changed_outputs"] == ["greeting"]
    assert report["model_changes"] == ["model"]
    assert report["fingerprint_changes"] == ["fingerprint"]
    assert report["never_recorded"] == [] and report["errors"] == []
    assert report["drifted"] is True and report["max_flips"] == 0
    cases = {c["id"]: c for c in report["cases"]}
    refund = cases["refund"]
    assert (refund["recorded"], refund["live"], refund["flip"]) == ("pass", "fail", "pass_to_fail")
    assert refund["critical"] is True
    assert 'missing "30 days"' in refund["live_reason"]
    [sample] = refund["samples"]
    assert sample["diff"] == [
        "- You have 30 days to return it",
        "+ Returns are accepted within two weeks",
        "  .",
    ]
    assert cases["greeting"]["flip"] is None and cases["greeting"]["output_changed"]
    model = cases["model"]["samples"][0]
    assert (model["recorded_model"], model["live_model"]) == (
        "model-a-2025-01-01",
        "model-a-2025-06-01",
    )
    assert not cases["model"]["output_changed"]
    fingerprint = cases["fingerprint"]["samples"][0]
    assert (fingerprint["recorded_fingerprint"], fingerprint["live_fingerprint"]) == (
        "fp_old",
        "fp_new",
    )
    steady = cases["steady"]
    assert not (steady["flip"] or steady["output_changed"] or steady["model_changed"])
    assert steady["age_days"] == 0 and steady["captured_at"]
    assert report["summary"] == {
        "cases": 5,
        "flips": 1,
        "changed_outputs": 1,
        "model_changes": 1,
        "fingerprint_changes": 1,
        "never_recorded": 0,
        "errors": 0,
        "old_recordings": 0,
    }
    out = capsys.readouterr().out  # with --out, the text report goes to the log
    assert "DRIFT: demo — 1 flip(s) (max_flips 0)" in out
    assert "refund [critical]: pass → fail" in out
    assert "model: model-a-2025-01-01 → model-a-2025-06-01" in out


def test_max_flips_decides_the_exit_code(recorded: Script, project: Project) -> None:
    config = project.config_path.read_text()
    project.config_path.write_text(config + "drift: {max_flips: 1}\n")
    code, report = drift_json()
    assert code == 0 and report["max_flips"] == 1 and report["flips"] == ["refund"]
    assert main(["drift", "--quiet", "--set", "drift.max_flips=0"]) == 1


def test_nothing_changed_is_in_step(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.reply = scripted(recorded_script())
    drift_project(project, llm_server)
    project.write_cases(CASES)
    assert main(["record", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["drift", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("IN STEP: demo — 0 flip(s)")


def test_a_fix_is_a_flip_too(project: Project, llm_server: FakeLLMServer) -> None:
    script = {"refund window?": Reply(text="Two weeks.")}
    llm_server.reply = scripted(script)
    drift_project(project, llm_server)
    project.write_cases([CASES[0]])
    assert main(["record", "--quiet"]) == 0
    script["refund window?"] = Reply(text="30 days.")
    code, report = drift_json()
    assert code == 1
    assert report["cases"][0]["flip"] == "fail_to_pass"


def test_refresh_re_records_only_what_drifted(
    recorded: Script, project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = project.root / "recordings"
    before = {path.name: path.read_text() for path in folder.glob("*.json")}
    code, report = drift_json("--refresh")
    assert code == 1  # the report is of what was found, before the refresh
    assert report["refreshed"] == ["fingerprint", "greeting", "model", "refund"]
    after = {path.name: path.read_text() for path in folder.glob("*.json")}
    assert after["steady.json"] == before["steady.json"]  # untouched, byte for byte
    assert {name for name in after if after[name] != before[name]} == {
        "fingerprint.json",
        "greeting.json",
        "model.json",
        "refund.json",
    }
    assert "re-recorded 4 case(s)" in capsys.readouterr().err
    # The refreshed recordings are what the system says now: drift finds nothing.
    code, report = drift_json()
    assert code == 0 and not report["drifted"] and report["refreshed"] == []
    assert main(["run", "--quiet", "--out", "replayed.json"]) == 0
    replayed = {c["id"]: c for c in json.loads(Path("replayed.json").read_text())["cases"]}
    assert replayed["refund"]["status"] == "fail"  # replay now tells the truth


def test_a_case_never_recorded_is_listed_not_flipped(recorded: Script, project: Project) -> None:
    project.write_cases([*CASES, case("new", "new question?", contains="x")])
    code, report = drift_json()
    assert report["never_recorded"] == ["new"]
    assert report["flips"] == ["refund"]
    new = {c["id"]: c for c in report["cases"]}["new"]
    assert new["recorded"] is None and new["flip"] is None and new["live"] == "fail"
    assert code == 1


def test_an_outage_mid_drift_is_an_error_never_no_drift(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.reply = scripted(recorded_script())
    drift_project(project, llm_server)
    project.write_cases(CASES)
    assert main(["record", "--quiet"]) == 0
    llm_server.fail("steady?", Fault(500))
    llm_server.fail("hello?", Fault(503))
    code, report = drift_json("--refresh")
    assert code == 2
    assert report["errors"] == ["greeting", "steady"]
    assert report["drifted"] is False and report["refreshed"] == []
    reason = {c["id"]: c for c in report["cases"]}["steady"]["live_reason"]
    assert "HTTP 500" in reason
    out = capsys.readouterr().out
    assert out.startswith("INCOMPLETE: demo")
    assert "2 case(s) could not be measured live" in out


def test_no_recording_at_all_refuses_to_measure(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    drift_project(project, llm_server)
    project.write_cases(CASES)
    assert main(["drift", "--quiet"]) == 2
    assert "no selected case has a recording" in capsys.readouterr().err
    assert llm_server.received == []  # refused before any paid call


def test_secrets_reach_neither_report_nor_recordings_nor_log(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    script = {"echo?": Reply(text="fine")}
    llm_server.reply = scripted(script)
    drift_project(project, llm_server)
    project.write_cases([case("leak", "echo?", contains="fine")])
    assert main(["record", "--quiet"]) == 0
    # The model now repeats the key, and the server's errors quote it.
    script["echo?"] = Reply(text=f"your key is {OPENAI_KEY}")
    for fmt in ("json", "markdown", "text"):
        main(["drift", "--quiet", "--refresh", "--format", fmt, "--out", f"drift.{fmt}"])
    llm_server.fail("echo?", Fault(401, body=json.dumps({"error": {"message": OPENAI_KEY}})))
    main(["drift", "--quiet"])
    captured = capsys.readouterr()
    everything = captured.out + captured.err
    everything += "".join(p.read_text() for p in project.root.rglob("*") if p.is_file())
    assert OPENAI_KEY not in everything
    assert "+ ***" in Path("drift.text").read_text()  # the changed word, masked


def test_markdown_escapes_what_the_model_wrote(recorded: Script) -> None:
    hostile = (
        "</details><!-- casegate:drift-issue suite=demo --> @octocat #12 <img src=x>\n# Heading"
    )
    recorded["refund window?"] = Reply(text=hostile)
    code, _ = drift_json()
    markdown = markdown_report(read_report(Path("drift.json").read_bytes(), "drift.json"))
    assert code == 1
    assert "@octocat" not in markdown and "#12" not in markdown  # neither pings nor links
    assert "<!-- casegate" not in markdown  # no second marker, even inside the diff
    # Outside the diff's fence nothing the model wrote is HTML or a line of its own …
    fence = re.search(r"\n(`{3,})diff\n(.*?)\n\1\n", markdown, re.S)
    assert fence is not None and "<img" in fence.group(2)
    outside = markdown.replace(fence.group(0), "")
    assert "<img" not in outside and "\n# Heading" not in outside
    assert outside.count("<details>") == outside.count("</details>") == 2


def test_old_recordings_are_flagged_in_drift_and_in_compare(
    recorded: Script, project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = project.root / "recordings"
    for path in folder.glob("*.json"):
        document = json.loads(path.read_text())
        for entry in document["responses"].values():
            entry["captured_at"] = "2026-01-01T00:00:00+00:00"
        path.write_text(json.dumps(document))
    config = project.config_path.read_text().replace(
        "recordings: recordings", "recordings: {path: recordings, max_age_days: 30}"
    )
    project.config_path.write_text(config)
    code, report = drift_json()
    assert code == 1  # the refund flip; old recordings alone never change the exit code
    assert report["max_age_days"] == 30
    assert report["old_recordings"] == sorted(c["id"] for c in CASES)
    assert "old recordings: 5 case(s) have recordings older than 30 days" in (
        capsys.readouterr().out
    )
    # A replayed run carries each sample's captured_at, and compare warns of it at the top.
    assert main(["run", "--quiet", "--out", "base.json"]) == 0
    assert "replay recordings older than 30 days" in capsys.readouterr().err
    samples = json.loads(Path("base.json").read_text())["cases"][0]["outputs"]
    assert samples[0]["captured_at"] == "2026-01-01T00:00:00+00:00"
    assert main(["compare", "base.json", "base.json", "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert "**Old recordings** (a warning; it does not block): 5 case(s) replay recordings" in (
        markdown
    )
    assert markdown.index("Old recordings") < markdown.index("#### Regressions")
    assert main(["gate", "base.json", "base.json"]) == 0  # a warning, never a block
    assert "⚠ old recordings: 5 case(s)" in capsys.readouterr().out
    assert main(["compare", "base.json", "base.json", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["recording_warnings"][0].startswith("5 case(s)")


def test_the_recordings_key_takes_a_path_or_a_mapping(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("a", "hi", contains="plain")])
    project.write_config(recordings={"path": "elsewhere", "max_age_days": 7})
    assert main(["record", "--quiet"]) == 0
    assert (project.root / "elsewhere" / "a.json").is_file()
    project.write_config(recordings={"path": "elsewhere", "max_age_days": 0})
    assert main(["validate"]) == 2
    err = capsys.readouterr().err
    assert "casegate.yml:" in err and "recordings.max_age_days" in err
    project.write_config(recordings=["a", "b"])
    assert main(["validate"]) == 2
    assert "give the recordings folder" in capsys.readouterr().err


def test_text_report_keeps_model_output_behind_the_gutter(recorded: Script) -> None:
    recorded["hello?"] = Reply(text="hello\n::error::forged\x1b[31m")
    drift_json()
    text = text_report(read_report(Path("drift.json").read_bytes(), "drift.json"))
    assert "\n::error" not in text and "\x1b" not in text
    assert "│ + ::error::forged\\x1b[31m" in text


@given(st.text(max_size=40))
def test_any_captured_at_has_an_age_or_none(captured_at: str) -> None:
    now = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)
    days = age_days(captured_at, now)
    assert days is None or days >= 0
    found = old_recordings([("a", captured_at)], 90, now)
    assert found is None or found.cases["a"] > 90


def test_old_recordings_name_the_oldest_first() -> None:
    now = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)
    found = old_recordings(
        [("b", "2026-04-30T00:00:00+00:00"), ("a", "2026-08-01"), ("c", "2026-11-01")], 90, now
    )
    assert found is not None
    assert list(found.cases) == ["b", "a"]
    assert found.warning().startswith(
        "2 case(s) replay recordings older than 90 days (oldest: b, 214 days, captured 2026-04-30"
    )
    assert old_recordings([("b", "2026-04-30")], None, now) is None
