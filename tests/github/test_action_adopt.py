"""The baseline refresh takes in what CI sealed for the merged pull request (the Action's
`adopt-recordings` input with `command: baseline`; gate.produce.verified), run as the
runner runs the entrypoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gate.produce import seal
from gate.produce.verified import MANIFEST, write_manifest
from tests.fakes.actions import Runner
from tests.produce.test_seal import KEY

PUSH = {"ref": "refs/heads/main"}


HEAD = "0123456789abcdef0123456789abcdef01234567"


def _sealed_artifact(runner: Runner) -> tuple[Path, str, str]:
    """A downloaded `casegate-verified-recordings`: the manifest a pull request's check
    wrote, holding one case's answer made again by CI (sealed), verified on HEAD."""
    artifact = runner.root / "verified"
    artifact.mkdir()
    path = sorted((runner.workspace / "recordings" / "support").glob("*.json"))[0]
    document = json.loads(path.read_text())
    key = seal.key_from(KEY)
    request, entry = next(iter(sorted(document["responses"].items())))
    entry.update(captured_by="ci", captured_at="2026-12-01T00:00:00+00:00")
    entry["seal"] = key.seal(document["case"], request, entry)
    entries = {document["case"]: {request: entry}}
    write_manifest(artifact / MANIFEST, key, "support", HEAD, entries)
    return artifact, document["case"], request


def _entry(runner: Runner, case_id: str, request: str) -> Any:
    path = runner.workspace / "recordings" / "support" / f"{case_id}.json"
    return json.loads(path.read_text())["responses"][request]


def _baseline_job(runner: Runner, folder: Path, *, key: bool = True, head: str = HEAD) -> Any:
    keys = {seal.KEY_ENV: KEY} if key else {}
    adopt = {"adopt-recordings": str(folder), "adopt-head": head}
    return runner.run("push", PUSH, command="baseline", env_extra=keys, **adopt)


def test_the_baseline_job_adopts_only_what_ci_sealed(runner: Runner) -> None:
    artifact, case_id, request = _sealed_artifact(runner)
    finished = _baseline_job(runner, artifact)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "adopted 1 sealed recording(s)" in finished.stdout
    entry = _entry(runner, case_id, request)
    assert entry["captured_by"] == "ci"
    assert seal.key_from(KEY).state(case_id, request, entry) == "sealed"
    assert KEY not in finished.stdout + finished.stderr
    assert "baseline refreshed" in runner.summary()


def test_without_the_key_the_baseline_job_stops_and_adopts_nothing(runner: Runner) -> None:
    artifact, case_id, request = _sealed_artifact(runner)
    before = _entry(runner, case_id, request)
    finished = _baseline_job(runner, artifact, key=False)
    assert finished.returncode == 2
    assert f"input `adopt-recordings` needs {seal.KEY_ENV}" in finished.stdout
    assert _entry(runner, case_id, request) == before


def test_a_manifest_verified_on_another_commit_is_refused(runner: Runner) -> None:
    artifact, case_id, request = _sealed_artifact(runner)
    before = _entry(runner, case_id, request)
    for head, said in (("f" * 40, "not on ffffffffffff"), ("", "needs `adopt-head`")):
        finished = _baseline_job(runner, artifact, head=head)
        assert finished.returncode == 2
        assert said in finished.stdout, finished.stdout
        assert _entry(runner, case_id, request) == before


def test_nothing_to_adopt_is_said_and_the_baseline_still_refreshes(runner: Runner) -> None:
    finished = _baseline_job(runner, runner.root / "never-downloaded")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "verified nothing" in finished.stdout
    assert "baseline refreshed" in runner.summary()


def test_adopt_recordings_belongs_to_the_baseline_command(runner: Runner) -> None:
    finished = runner.run(**{"adopt-recordings": str(runner.root)})
    assert finished.returncode == 2
    assert "input `adopt-recordings` goes with `command: baseline` only" in finished.stdout
