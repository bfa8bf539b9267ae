"""The baseline refresh takes in what CI sealed for the merged pull request (the Action's
`adopt-recordings` input with `command: baseline`; gate.produce.verified), run as the
runner runs the entrypoint."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from gate.produce import seal
from tests.fakes.actions import Runner
from tests.produce.test_seal import KEY

PUSH = {"ref": "refs/heads/main"}


def _sealed_artifact(runner: Runner) -> tuple[Path, str, str]:
    """A downloaded `casegate-verified-recordings`: the workspace's recordings folder with one
    case's entries made again by CI (sealed), beside the author's others (unsealed)."""
    artifact = runner.root / "verified"
    shutil.copytree(runner.workspace / "recordings", artifact)
    path = sorted((artifact / "support").glob("*.json"))[0]
    document = json.loads(path.read_text())
    key = seal.key_from(KEY)
    request, entry = next(iter(sorted(document["responses"].items())))
    entry.update(captured_by="ci", captured_at="2026-12-01T00:00:00+00:00")
    entry["seal"] = key.seal(document["case"], request, entry)
    path.write_text(json.dumps(document))
    return artifact, document["case"], request


def _entry(runner: Runner, case_id: str, request: str) -> Any:
    path = runner.workspace / "recordings" / "support" / f"{case_id}.json"
    return json.loads(path.read_text())["responses"][request]


def _baseline_job(runner: Runner, folder: Path, *, key: bool = True) -> Any:
    keys = {seal.KEY_ENV: KEY} if key else {}
    adopt = {"adopt-recordings": str(folder)}
    return runner.run("push", PUSH, command="baseline", env_extra=keys, **adopt)


def test_the_baseline_job_adopts_only_what_ci_sealed(runner: Runner) -> None:
    artifact, case_id, request = _sealed_artifact(runner)
    finished = _baseline_job(runner, artifact)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "adopted 1 sealed recording(s)" in finished.stdout
    assert "unsealed" in finished.stdout  # the author's others ride along, left out
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


def test_nothing_to_adopt_is_said_and_the_baseline_still_refreshes(runner: Runner) -> None:
    finished = _baseline_job(runner, runner.root / "never-downloaded")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "verified nothing" in finished.stdout
    assert "baseline refreshed" in runner.summary()


def test_adopt_recordings_belongs_to_the_baseline_command(runner: Runner) -> None:
    finished = runner.run(**{"adopt-recordings": str(runner.root)})
    assert finished.returncode == 2
    assert "input `adopt-recordings` goes with `command: baseline` only" in finished.stdout
