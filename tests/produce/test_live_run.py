"""Live and record runs through the real SDKs against a loopback server, end to end."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from tests.conftest import OPENAI_KEY, Project, case, chat_system
from tests.fakes.llm_server import FakeLLMServer, Fault, Received, Reply

REPO = Path(__file__).resolve().parents[2]


def live_project(project: Project, server: FakeLLMServer, **system: Any) -> None:
    project.write_config(
        system=chat_system("openai", server, **system),
        pricing={"model-a": {"input": 2.0, "output": 8.0}},
        concurrency=4,
    )


def every_file_text(root: Path) -> str:
    return "\n".join(path.read_text(errors="replace") for path in root.rglob("*") if path.is_file())


def test_record_then_replay_offline_with_usage_cost_and_latency(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    live_project(project, llm_server)
    project.write_cases([case("a", "hello", contains="hello"), case("b", "bye", equals="x")])
    assert main(["record", "--out", "rec.json"]) == 0
    recorded = json.loads(Path("rec.json").read_text())
    first = recorded["cases"][0]
    assert (first["id"], first["status"]) == ("a", "pass")
    assert (first["input_tokens"], first["output_tokens"]) == (12, 7)
    assert first["cost_usd"] == pytest.approx((12 * 2.0 + 7 * 8.0) / 1e6)
    assert first["latency_ms"] > 0
    assert first["outputs"][0]["model"] == "model-a"
    assert len(llm_server.received) == 2

    assert main(["run", "--out", "replayed.json"]) == 0
    assert len(llm_server.received) == 2  # replay never calls
    replayed = json.loads(Path("replayed.json").read_text())
    assert [c["status"] for c in replayed["cases"]] == ["pass", "fail"]
    assert replayed["cases"][0]["cost_usd"] == first["cost_usd"]

    # A different model is a different system: its requests were never recorded.
    assert main(["run", "--set", "system.model=model-b"]) == 2
    assert "no recording for 2 case(s)" in capsys.readouterr().err

    everything = every_file_text(project.root) + capsys.readouterr().out
    assert OPENAI_KEY not in everything


def test_faults_finish_the_run_and_no_faulted_case_passes(
    project: Project, llm_server: FakeLLMServer
) -> None:
    live_project(project, llm_server, max_retries=1, timeout_s=1)
    llm_server.fail("recovers", Fault(429, headers={"retry-after": "0"}))
    llm_server.fail("down", *[Fault(500)] * 2)
    llm_server.fail("garbled", *[Fault(200, body="<html>oops")] * 2)
    llm_server.fail("stuck", *[Fault(200, body="{}", hang_s=2)] * 2)
    names = ["recovers", "down", "garbled", "stuck", "fine"]
    project.write_cases([case(name, name, contains="echo") for name in names])
    assert main(["run", "--mode", "live", "--out", "out.json", "--quiet"]) == 0
    results = {c["id"]: c for c in json.loads(Path("out.json").read_text())["cases"]}
    assert results["recovers"]["status"] == "pass"
    assert results["fine"]["status"] == "pass"
    for name, expected in (
        ("down", "HTTP 500"),
        ("garbled", "malformed response body"),
        ("stuck", "timed out"),
    ):
        assert results[name]["status"] == "error"
        assert results[name]["passed"] is False
        assert expected in results[name]["reason"]
        assert "gave up after 2 attempts" in results[name]["reason"]


def test_results_are_in_case_id_order_whatever_order_answers_arrive(
    project: Project, llm_server: FakeLLMServer
) -> None:
    def slow_for_early_ids(received: Received) -> Reply:
        # Case "c0" answers last, "c7" first.
        time.sleep(0.05 * (8 - int(received.last_user_text[1:])))
        return Reply(text="ok")

    llm_server.reply = slow_for_early_ids
    live_project(project, llm_server)
    project.write_cases([case(f"c{i}", f"q{i}", equals="ok") for i in reversed(range(8))])
    assert main(["run", "--mode", "live", "--out", "out.json", "--quiet"]) == 0
    ids = [c["id"] for c in json.loads(Path("out.json").read_text())["cases"]]
    assert ids == [f"c{i}" for i in range(8)]


def test_template_problems_stop_the_run_before_any_call(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    live_project(project, llm_server, message="{{ question }} from {{ customer }}")
    project.write_cases([case("a", "hello", contains="x")])
    assert main(["run", "--mode", "live"]) == 2
    err = capsys.readouterr().err
    assert "case 'a'" in err and "'customer' is undefined" in err
    assert llm_server.received == []


def test_missing_key_stops_the_run_before_any_call(
    project: Project,
    llm_server: FakeLLMServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    live_project(project, llm_server)
    project.write_cases([case("a", "hello", contains="x")])
    assert main(["record"]) == 2
    assert "OPENAI_API_KEY is not set" in capsys.readouterr().err
    assert llm_server.received == []


#: `python -m gate`, heeding Ctrl-C: a test run started in the background (`make test &`,
#: nohup) ignores SIGINT, and Python keeps an inherited SIG_IGN, so the child would never
#: see the Ctrl-C these tests send as a terminal would.
CASEGATE = [
    sys.executable,
    "-c",
    "import runpy, signal, sys\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "sys.argv[0] = 'casegate'\n"
    "runpy.run_module('gate', run_name='__main__')",
]


def test_ctrl_c_stops_cleanly_and_keeps_what_finished(project: Project) -> None:
    with FakeLLMServer(delay_s=0.2) as server:
        live_project(project, server)
        # Enough cases that a busy machine cannot finish them all before the signal lands.
        project.write_cases([case(f"c{i:03d}", f"q{i}", contains="echo") for i in range(200)])
        env = {**os.environ, "OPENAI_API_KEY": OPENAI_KEY, "PYTHONPATH": str(REPO)}
        process = subprocess.Popen(
            [*CASEGATE, "record", "--out", "partial.json", "--quiet"],
            cwd=project.root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while len(server.received) < 10 and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
        asked = len(server.received)
    assert process.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    partial = json.loads((project.root / "partial.json").read_text())
    assert partial["interrupted"] is True
    finished = [c["id"] for c in partial["cases"]]
    assert 0 < len(finished) < 200 and asked < 200
    assert all(c["status"] == "pass" for c in partial["cases"])
    recorded = {p.stem for p in (project.root / "recordings").glob("*.json")}
    # Every finished case was recorded, plus any call already in flight at Ctrl-C.
    assert set(finished) <= recorded
    assert len(recorded) <= asked


def test_anthropic_record_and_replay_through_the_cli(
    project: Project, llm_server: FakeLLMServer
) -> None:
    project.write_config(system=chat_system("anthropic", llm_server))
    project.write_cases([case("a", "hello", contains="echo: hello")])
    assert main(["record", "--quiet", "--out", "r.json"]) == 0
    assert main(["run", "--quiet", "--out", "p.json"]) == 0
    assert json.loads(Path("p.json").read_text())["cases"][0]["status"] == "pass"
    assert llm_server.received[0].path == "/v1/messages"
    assert len(llm_server.received) == 1


@pytest.mark.parametrize("command", ["record", "check"])
def test_a_second_ctrl_c_prints_no_traceback(
    project: Project, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    with FakeLLMServer() as server:
        live_project(project, server)
        project.write_cases([case(f"c{i:03d}", f"q{i}", contains="echo") for i in range(120)])
        env = {**os.environ, "OPENAI_API_KEY": OPENAI_KEY, "PYTHONPATH": str(REPO)}
        if command == "check":  # the baseline's recordings, answered at once
            assert main(["record", "--quiet"]) == 0
            assert main(["baseline", "--quiet"]) == 0
            args = ["check", "--mode", "live", "--quiet"]
        else:
            args = ["record", "--quiet"]
        server.delay_s = 0.3  # slow answers: the interrupts land while calls are in flight
        process = subprocess.Popen(
            [*CASEGATE, *args],
            cwd=project.root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        asked = len(server.received)
        deadline = time.monotonic() + 30
        while len(server.received) < asked + 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err


def test_record_exits_2_on_a_failed_call_and_keeps_every_recording_that_arrived(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    live_project(project, llm_server, max_retries=0)
    llm_server.fail("denied", Fault(401))
    project.write_cases(
        [case("fine", "fine", contains="echo"), case("denied", "denied", contains="x")]
    )
    assert main(["record", "--out", "rec.json", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("casegate: 1 of 2 sample(s) failed a call, in 1 case(s): denied (first: ")
    assert "401" in err
    assert err.endswith(
        "every response that arrived is recorded: fix the cause and run "
        "`casegate record --only-missing`\n"
    )
    assert err.count("\n") == 1 and OPENAI_KEY not in err
    assert {p.stem for p in (project.root / "recordings").glob("*.json")} == {"fine"}
    assert json.loads(Path("rec.json").read_text())["summary"]["errors"] == 1
    # The fix costs only what failed: the recorded case is not called again.
    asked = len(llm_server.received)
    assert main(["record", "--only-missing", "--quiet"]) == 0
    assert [r.last_user_text for r in llm_server.received[asked:]] == ["denied"]


def test_record_with_nothing_listening_names_how_many_failed_and_caps_the_list(
    project: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    with socket.socket() as probe:  # a port nothing listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    system = {
        "name": "nowhere",
        "provider": "openai",
        "model": "model-a",
        "base_url": f"http://127.0.0.1:{port}/v1",
        "message": "{{ question }}",
        "max_retries": 0,
        "timeout_s": 5,
    }
    project.write_config(system=system)
    project.write_cases([case(f"c{index:02}", "hi", contains="x") for index in range(12)])
    assert main(["record", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "casegate: 12 of 12 sample(s) failed a call, in 12 case(s): c00, c01, c02, c03, c04, "
        "c05, c06, c07, c08, c09 and 2 more (first: "
    )
    assert not list((project.root / "recordings").glob("*.json"))
