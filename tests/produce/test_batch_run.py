"""`mode: batch` end to end: record and live runs through the real SDKs against loopback
OpenAI Batch and Anthropic Message Batches servers, restarts, and tampered results."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.produce.batch import poll
from tests.conftest import ANTHROPIC_KEY, OPENAI_KEY, Project, case
from tests.fakes.batch_servers import BatchServer, FakeAnthropicBatches, FakeOpenAIBatches

PROVIDERS = ["openai", "anthropic"]
PRICES = {"input": 2.0, "output": 8.0, "batch_input": 1.0, "batch_output": 4.0}


class Interrupt:
    """A sleeper that stands for a person pressing Ctrl-C (or the process dying) at the
    first pause, i.e. after the batch was submitted and before it ended."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
        self.calls = 0

    def __call__(self, seconds: float) -> None:
        self.calls += 1
        raise self.exc


@pytest.fixture(autouse=True)
def no_sleeping(monkeypatch: pytest.MonkeyPatch) -> poll.Waiter:
    waiter = poll.Waiter(sleep=lambda seconds: None, clock=lambda: 0.0)
    monkeypatch.setattr(poll, "WAITER", waiter)
    return waiter


@pytest.fixture(params=PROVIDERS)
def server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    for variable in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GITHUB_ACTIONS"):
        monkeypatch.delenv(variable, raising=False)
    kind = FakeOpenAIBatches if request.param == "openai" else FakeAnthropicBatches
    with kind() as fake:
        fake.provider = request.param
        yield fake


def batch_project(
    project: Project, server: BatchServer, prices: dict[str, float] | None = None, **system: Any
) -> None:
    provider = server.provider  # type: ignore[attr-defined]
    base = server.url + "/v1" if provider == "openai" else server.url
    project.write_config(
        system={
            "name": f"{provider}-batch",
            "provider": provider,
            "model": "model-a",
            "base_url": base,
            "prompt": "You are terse.",
            "message": "{{ question }}",
            "max_retries": 0,
            "timeout_s": 5,
            **{key: value for key, value in ({"mode": "batch"} | system).items() if value},
        },
        pricing={"model-a": prices or PRICES},
    )


def cases_by_id(path: str) -> dict[str, Any]:
    return {c["id"]: c for c in json.loads(Path(path).read_text())["cases"]}


def state_files(project: Project) -> list[Path]:
    return sorted((project.root / ".casegate" / "batches").glob("*.json"))


def every_file_text(root: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file())


def test_record_through_a_batch_then_replay_with_or_without_batch_mode(
    project: Project, server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    batch_project(project, server)
    project.write_cases([case("a", "hello", contains="hello"), case("b", "bye", equals="x")])
    assert main(["record", "--out", "rec.json"]) == 0
    assert len(server.creates) == 1
    recorded = cases_by_id("rec.json")
    assert (recorded["a"]["status"], recorded["b"]["status"]) == ("pass", "fail")
    # The batch price, not the normal one: 12 tokens in at 1.0, 7 out at 4.0 per million.
    assert recorded["a"]["cost_usd"] == pytest.approx((12 * 1.0 + 7 * 4.0) / 1e6)
    assert recorded["a"]["outputs"][0]["text"] == "echo: hello"
    err = capsys.readouterr().err
    assert "submitted batch" in err and "casegate batch resume" in err
    assert "costed at the normal price" not in err

    requests_before = len(server.requests)
    assert main(["run", "--out", "replayed.json"]) == 0
    assert len(server.requests) == requests_before  # replay submits nothing
    assert [c["status"] for c in cases_by_id("replayed.json").values()] == ["pass", "fail"]

    # `mode` is not part of the request key: the same recordings replay call by call.
    batch_project(project, server, mode=None)
    assert "mode:" not in project.config_path.read_text()
    assert main(["run", "--out", "plain.json"]) == 0
    assert cases_by_id("plain.json")["a"]["status"] == "pass"

    everything = every_file_text(project.root) + capsys.readouterr().out
    assert OPENAI_KEY not in everything and ANTHROPIC_KEY not in everything


def test_a_live_run_stores_nothing_and_each_request_fate_is_its_case_s_own(
    project: Project, server: Any
) -> None:
    batch_project(project, server)
    for fate in ("errored", "expired", "canceled", "missing", "garbled"):
        server.fate(fate, fate)
    names = ["fine", "errored", "expired", "canceled", "missing", "garbled"]
    project.write_cases([case(name, name, contains="echo") for name in names])
    assert main(["run", "--mode", "live", "--out", "out.json", "--quiet"]) == 0
    results = cases_by_id("out.json")
    assert results["fine"]["status"] == "pass"
    for name, reason in (
        ("errored", "fake overload"),
        ("expired", "expired (24 h) before this request ran"),
        ("canceled", "before this request ran"),
        ("missing", "returned no result for this request"),
        ("garbled", "malformed response body"),
    ):
        assert results[name]["status"] == "error", name
        assert results[name]["passed"] is False
        assert reason in results[name]["reason"], (name, results[name]["reason"])
    assert not (project.root / "recordings").exists()  # live mode records nothing


def test_a_restart_resumes_the_submitted_batch_and_pays_once(
    project: Project,
    server: Any,
    no_sleeping: poll.Waiter,
    capsys: pytest.CaptureFixture[str],
) -> None:
    batch_project(project, server)
    project.write_cases([case("a", "hello", contains="hello"), case("b", "bye", contains="bye")])
    no_sleeping.sleep = Interrupt(RuntimeError("the machine went away"))
    with pytest.raises(RuntimeError, match="went away"):
        main(["record", "--out", "rec.json"])
    assert len(server.creates) == 1
    [path] = state_files(project)
    saved = json.loads(path.read_text())
    assert saved["status"] == "submitted"
    assert {e["case"] for e in saved["requests"].values()} == {"a", "b"}
    assert OPENAI_KEY not in path.read_text() and ANTHROPIC_KEY not in path.read_text()
    capsys.readouterr()

    no_sleeping.sleep = lambda seconds: None
    batch_id = path.stem
    assert main(["batch", "resume", batch_id, "--out", "resumed.json"]) == 0
    assert len(server.creates) == 1  # resumed, never submitted again
    resumed = cases_by_id("resumed.json")
    assert [c["status"] for c in resumed.values()] == ["pass", "pass"]
    assert json.loads(Path("resumed.json").read_text())["mode"] == "record"
    assert f"resuming batch {batch_id}" in capsys.readouterr().err
    assert json.loads(path.read_text())["status"] == "collected"
    # What it recorded replays.
    assert main(["run", "--out", "replayed.json"]) == 0
    assert [c["status"] for c in cases_by_id("replayed.json").values()] == ["pass", "pass"]


def test_ctrl_c_leaves_the_batch_and_the_next_run_resumes_it(
    project: Project,
    server: Any,
    no_sleeping: poll.Waiter,
    capsys: pytest.CaptureFixture[str],
) -> None:
    batch_project(project, server)
    project.write_cases([case("a", "hello", contains="hello")])
    no_sleeping.sleep = Interrupt(KeyboardInterrupt())
    assert main(["record", "--out", "rec.json"]) == 130
    [path] = state_files(project)
    err = capsys.readouterr().err
    assert f"casegate batch resume {path.stem}" in err and "stays submitted" in err

    no_sleeping.sleep = lambda seconds: None
    assert main(["record", "--out", "rec.json"]) == 0
    assert len(server.creates) == 1
    assert f"resuming batch {path.stem}" in capsys.readouterr().err
    assert cases_by_id("rec.json")["a"]["status"] == "pass"
    # Collected: another run is another batch, as asked.
    assert main(["record", "--out", "again.json"]) == 0
    assert len(server.creates) == 2


def test_resume_refuses_a_batch_submitted_for_another_config(
    project: Project,
    server: Any,
    no_sleeping: poll.Waiter,
    capsys: pytest.CaptureFixture[str],
) -> None:
    batch_project(project, server)
    project.write_cases([case("a", "hello", contains="hello")])
    no_sleeping.sleep = Interrupt(KeyboardInterrupt())
    assert main(["record"]) == 130
    [path] = state_files(project)
    no_sleeping.sleep = lambda seconds: None
    polls = server.polls
    capsys.readouterr()

    batch_project(project, server, prompt="You are verbose.")
    assert main(["batch", "resume", path.stem]) == 2
    err = capsys.readouterr().err
    assert "was submitted for another config" in err and "casegate record" in err
    assert server.polls == polls and len(server.creates) == 1

    # An id is a file name: a path is refused before anything is read.
    batch_project(project, server)
    assert main(["batch", "resume", "../../etc/passwd"]) == 2
    assert "is not a batch id" in capsys.readouterr().err


def test_a_state_file_edited_to_point_at_other_cases_is_refused(
    project: Project,
    server: Any,
    no_sleeping: poll.Waiter,
    capsys: pytest.CaptureFixture[str],
) -> None:
    batch_project(project, server)
    project.write_cases([case("a", "hello", contains="hello"), case("b", "bye", contains="bye")])
    no_sleeping.sleep = Interrupt(KeyboardInterrupt())
    assert main(["record"]) == 130
    [path] = state_files(project)
    original = path.read_text()
    no_sleeping.sleep = lambda seconds: None
    capsys.readouterr()

    # Swap the cases two custom ids answer: b would receive a's answer.
    saved = json.loads(original)
    first, second = list(saved["requests"])
    a, b = saved["requests"][first], saved["requests"][second]
    saved["requests"][first], saved["requests"][second] = b, a
    path.write_text(json.dumps(saved))
    assert main(["batch", "resume", path.stem]) == 2
    assert "was not submitted for case" in capsys.readouterr().err

    # An entry for a case the batch never held.
    saved = json.loads(original)
    saved["requests"]["r9-" + "0" * 24] = {"case": "c", "key": "0" * 24, "sample": 0}
    path.write_text(json.dumps(saved))
    assert main(["batch", "resume", path.stem]) == 2
    assert "not the 2 this config and its cases plan now" in capsys.readouterr().err

    # Another config's hash.
    saved = json.loads(original)
    saved["config_hash"] = "0123456789abcdef"
    path.write_text(json.dumps(saved))
    assert main(["batch", "resume", path.stem]) == 2
    assert "another config" in capsys.readouterr().err
    assert len(server.creates) == 1
    assert not (project.root / "recordings").exists()


def succeeded_line(provider: str, cid: str) -> str:
    """A well-formed succeeded result line saying "echo" for `cid`."""
    if provider == "openai":
        choice = {"index": 0, "message": {"role": "assistant", "content": "echo"},
                  "finish_reason": "stop"}  # fmt: skip
        body = {"choices": [choice], "model": "m", "usage": None}
        return json.dumps({"custom_id": cid, "response": {"status_code": 200, "body": body}})
    message = {"content": [{"type": "text", "text": "echo"}], "model": "m",
               "stop_reason": "end_turn", "usage": None}  # fmt: skip
    return json.dumps({"custom_id": cid, "result": {"type": "succeeded", "message": message}})


def test_tampered_result_lines_never_pass(
    project: Project, server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    batch_project(project, server)
    project.write_cases([case("a", "hello", contains="echo"), case("b", "bye", contains="echo")])
    assert main(["record", "--quiet", "--out", "first.json"]) == 0  # learns the custom ids
    saved = json.loads(state_files(project)[0].read_text())
    ids = {entry["case"]: cid for cid, entry in saved["requests"].items()}
    a_key = saved["requests"][ids["a"]]["key"]
    server.extra_lines = [
        succeeded_line(server.provider, ids["a"]),  # a second answer for a
        succeeded_line(server.provider, "r7-" + "f" * 24),  # an id never submitted
        succeeded_line(server.provider, "b"),  # a case id, not a custom id
        succeeded_line(server.provider, f"r1-{a_key}"),  # a's key under b's index
        "{not json",
    ]
    server.fate("bye", "missing")
    capsys.readouterr()
    assert main(["run", "--mode", "live", "--out", "out.json"]) == 0
    results = cases_by_id("out.json")
    assert results["a"]["status"] == "error"
    assert "2 results for this request" in results["a"]["reason"]
    assert results["b"]["status"] == "error"
    assert "no result for this request" in results["b"]["reason"]
    assert "1 result line(s) could not be read" in results["b"]["reason"]
    err = capsys.readouterr().err
    assert "ignored 3 result line(s) for custom ids it never submitted" in err
    assert "1 result line(s) could not be read" in err


def test_without_batch_prices_the_normal_price_is_used_and_named_once(
    project: Project, server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    batch_project(project, server, prices={"input": 2.0, "output": 8.0})
    project.write_cases([case(name, name, contains="echo") for name in ("a", "b", "c")])
    assert main(["run", "--mode", "live", "--out", "out.json", "--quiet"]) == 0
    results = cases_by_id("out.json")
    assert results["a"]["cost_usd"] == pytest.approx((12 * 2.0 + 7 * 8.0) / 1e6)
    err = capsys.readouterr().err
    assert err.count("costed at the normal price") == 1
    assert "pricing.model-a.batch_input, pricing.model-a.batch_output" in err


def test_only_missing_submits_only_what_replay_would_miss(project: Project, server: Any) -> None:
    batch_project(project, server)
    project.write_cases([case("a", "hello", contains="hello")])
    assert main(["record", "--quiet"]) == 0
    project.write_cases([case("a", "hello", contains="hello"), case("b", "new", contains="new")])
    assert main(["record", "--only-missing", "--quiet", "--out", "rec.json"]) == 0
    assert len(server.creates) == 2
    if server.provider == "anthropic":
        assert len(server.creates[1]["requests"]) == 1
    assert [c["status"] for c in cases_by_id("rec.json").values()] == ["pass", "pass"]
    assert main(["record", "--only-missing", "--quiet"]) == 0
    assert len(server.creates) == 2  # nothing missing: nothing submitted


def test_batch_list_names_each_batch(
    project: Project, server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["batch", "list"]) == 0
    assert "no batches" in capsys.readouterr().out
    batch_project(project, server)
    project.write_cases([case("a", "hello", contains="hello")])
    assert main(["record", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["batch", "list"]) == 0
    out = capsys.readouterr().out
    assert f"{server.provider}  collected  record  1 requests" in out


@pytest.mark.parametrize("ends_as", ["expired", "failed"])
def test_openai_responses_api_and_a_batch_that_expires_or_fails(
    project: Project, monkeypatch: pytest.MonkeyPatch, ends_as: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeOpenAIBatches() as fake:
        fake.provider = "openai"  # type: ignore[attr-defined]
        fake.ends_as = ends_as
        batch_project(project, fake, api="responses")
        project.write_cases([case(name, name, contains="echo") for name in ("a", "b", "c")])
        assert main(["run", "--mode", "live", "--out", "out.json", "--quiet"]) == 0
        [upload] = [path for method, path, _ in fake.requests if path == "/v1/files"]
        assert upload and fake.creates[0]["endpoint"] == "/v1/responses"
        assert fake.creates[0]["completion_window"] == "24h"
    results = cases_by_id("out.json")
    if ends_as == "failed":
        for result in results.values():
            assert result["status"] == "error"
            assert "refused the batch: no such model" in result["reason"]
    else:  # the fake expires every other request
        assert (results["a"]["status"], results["c"]["status"]) == ("pass", "pass")
        assert results["b"]["status"] == "error"
        assert "expired (24 h)" in results["b"]["reason"]


def test_samples_auto_submits_one_batch_per_round(project: Project, server: Any) -> None:
    batch_project(project, server)
    config = project.config_path.read_text()
    project.config_path.write_text(
        config + "samples: auto\nadaptive: {start: 2, step: 2, max: 4}\n"
    )
    project.write_cases([case("a", "hello", contains="hello")])
    assert main(["record", "--quiet", "--out", "rec.json"]) == 0
    result = cases_by_id("rec.json")["a"]
    assert (result["status"], result["samples"]) == ("pass", 4)
    assert len(server.creates) == 2  # two rounds of two samples, never one batch twice
    assert main(["run", "--quiet", "--out", "replayed.json"]) == 0
    assert cases_by_id("replayed.json")["a"]["samples"] == 4
