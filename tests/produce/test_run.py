"""Runs end to end on a temporary project: live, record, replay, errors, samples."""

from __future__ import annotations

import json

import pytest

from gate.errors import MissingRecordingError
from gate.pipeline.run import execute
from gate.results import RunResults, read_results, write_results
from gate.suite.cases import load_cases, resolve_case_paths
from gate.suite.config import load_config
from tests.conftest import Project, case


def run(project: Project, mode: str, *overrides: str, only_missing: bool = False) -> RunResults:
    loaded = load_config(project.config_path, overrides)
    files, _ = resolve_case_paths(loaded.config.cases, loaded.root)
    return execute(loaded, load_cases(files), mode, only_missing=only_missing, show_progress=False)  # type: ignore[arg-type]


@pytest.fixture
def suite(project: Project) -> Project:
    project.write_cases(
        [
            case("b-pass", "hello", contains="hello"),
            case("a-fail", "hello", max_words=1, fields_={"critical": True}),
            case("c-error", "boom", contains="x"),
            case("d-json", "json", fields={"severity": "high"}, fields_={"weight": 3}),
        ]
    )
    return project


def test_live_run_results(suite: Project) -> None:
    results = run(suite, "live")
    assert [c.id for c in results.cases] == ["a-fail", "b-pass", "c-error", "d-json"]
    by_id = results.case_map()
    assert by_id["a-fail"].status == "fail"
    assert by_id["a-fail"].reason == "max_words: 2 words, the limit is 1"
    assert by_id["a-fail"].critical
    assert by_id["c-error"].status == "error"
    assert by_id["c-error"].reason == "RuntimeError: the backend is down"
    assert not by_id["c-error"].passed
    assert by_id["d-json"].passed
    summary = results.summary
    assert (summary.cases, summary.passed, summary.failed, summary.errors) == (4, 2, 1, 1)
    assert summary.pass_rate == pytest.approx((1 + 3) / (1 + 1 + 1 + 3))
    assert summary.latency_ms_p50 is not None


def test_record_then_replay_is_identical_and_offline(suite: Project) -> None:
    recorded = run(suite, "record")
    # The system is gone: replay must not need it.
    (suite.root / f"{suite.module}.py").unlink()
    suite.write_text("recordings/.keep", "")
    with pytest.raises(MissingRecordingError) as caught:
        run(suite, "replay")
    # The errored case was not recorded: an outage is never frozen as an answer.
    assert "c-error" in caught.value.problems[0]
    assert "casegate record --for-baseline --only-missing" in caught.value.problems[1]
    suite.write_cases(
        [
            case("b-pass", "hello", contains="hello"),
            case("a-fail", "hello", max_words=1, fields_={"critical": True}),
            case("d-json", "json", fields={"severity": "high"}, fields_={"weight": 3}),
        ]
    )
    replayed = run(suite, "replay")
    for case_id in ("a-fail", "b-pass", "d-json"):
        first, second = recorded.case_map()[case_id], replayed.case_map()[case_id]
        assert (first.status, first.reason, first.outputs[0].text) == (
            second.status,
            second.reason,
            second.outputs[0].text,
        )
        assert first.outputs[0].latency_ms == second.outputs[0].latency_ms


def test_recording_files_are_readable_and_stamped(suite: Project) -> None:
    run(suite, "record")
    document = json.loads((suite.root / "recordings" / "b-pass.json").read_text())
    assert document["schema"] == "casegate.recording/1"
    (entry,) = document["responses"].values()
    assert entry["system"] == "echo"
    assert entry["sample"] == 0
    assert entry["output"]["text"] == "plain: hello"
    assert {"captured_at", "fingerprint", "model"} <= set(entry)
    text = (suite.root / "recordings" / "b-pass.json").read_text()
    assert text.startswith('{\n  "case"')  # indented, sorted: readable in a diff


def test_a_changed_system_misses_its_recordings(suite: Project) -> None:
    run(suite, "record")
    with pytest.raises(MissingRecordingError, match="no recording for 4 case"):
        run(suite, "replay", "system.style=loud")


def test_label_and_transport_changes_keep_recordings(project: Project) -> None:
    project.write_cases([case("only", "hello", contains="hello")])
    run(project, "record")
    results = run(project, "replay", "system.name=renamed", "system.timeout_s=5")
    assert results.system == "renamed"
    assert results.cases[0].passed


def test_only_missing_records_just_the_new(project: Project) -> None:
    project.write_cases([case("old", "hello", contains="hello")])
    run(project, "record")
    old_file = project.root / "recordings" / "old.json"
    before = old_file.read_text()
    project.write_cases(
        [case("old", "hello", contains="hello"), case("new", "there", contains="there")]
    )
    run(project, "record", only_missing=True)
    assert old_file.read_text() == before
    assert (project.root / "recordings" / "new.json").exists()
    assert run(project, "replay").summary.passed == 2


def test_samples_are_all_stored_and_replayed(project: Project) -> None:
    project.write_cases([case("s", "hello", contains="hello")])
    run(project, "record", "samples=3")
    results = run(project, "replay", "samples=3")
    only = results.cases[0]
    assert (only.samples, only.passes, only.pass_rate) == (3, 3, 1.0)
    assert [o.sample for o in only.outputs] == [0, 1, 2]
    with pytest.raises(MissingRecordingError, match=r"\(2 sample"):
        run(project, "replay", "samples=5")


def test_results_round_trip_and_overrides_are_recorded(
    suite: Project, tmp_path_factory: pytest.TempPathFactory
) -> None:
    results = run(suite, "live", "system.style=loud")
    path = tmp_path_factory.mktemp("out") / "r.json"
    write_results(results, path)
    data = json.loads(path.read_text())
    assert data["schema"] == "casegate.results/1"
    assert list(data)[:7] == [
        "schema",
        "suite",
        "system",
        "config",
        "config_hash",
        "created_at",
        "casegate_version",
    ]
    assert data["overrides"] == ["system.style=loud"]
    assert data["config"]["system"]["style"] == "loud"
    assert set(data["summary"]) >= {
        "cases",
        "passed",
        "failed",
        "errors",
        "pass_rate",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "latency_ms_p50",
        "latency_ms_p95",
    }
    assert set(data["cases"][0]) >= {
        "id",
        "version",
        "critical",
        "tags",
        "weight",
        "status",
        "passed",
        "samples",
        "passes",
        "pass_rate",
        "reason",
        "checks",
        "outputs",
        "latency_ms",
        "input_tokens",
        "output_tokens",
        "cost_usd",
    }
    assert read_results(path).to_dict() == results.to_dict()
