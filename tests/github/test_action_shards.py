"""The Action in two stages: a matrix of `shard` jobs, then one job that gates the `parts`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.fakes.actions import Runner, git


def run_shards(runner: Runner, count: int, into: Path) -> list[Path]:
    """Each matrix job, then what download-artifact leaves in the merging job's folder."""
    into.mkdir(parents=True, exist_ok=True)
    parts = []
    for index in range(1, count + 1):
        finished = runner.run(shard=f"{index}/{count}")
        assert finished.returncode == 0, finished.stdout + finished.stderr
        outputs = runner.outputs()
        assert outputs["verdict"] == "part"
        assert outputs["results-path"] == f".casegate/support-part-{index}-of-{count}.json"
        assert f"shard {index}/{count}" in finished.stdout
        assert "a part, not a verdict" in finished.stdout
        part = into / f"part-{index}" / Path(outputs["results-path"]).name
        part.parent.mkdir()
        shutil.copy(runner.workspace / outputs["results-path"], part)
        parts.append(part)
    return parts


def test_shard_jobs_write_parts_and_the_merging_job_gates_them(runner: Runner) -> None:
    run_shards(runner, 3, runner.workspace / "casegate-parts")
    assert runner.api.writes() == []  # a part posts no comment and sets no verdict
    finished = runner.run(parts="casegate-parts")
    assert finished.returncode == 1, finished.stdout + finished.stderr
    outputs = runner.outputs()
    assert outputs["verdict"] == "block"
    assert outputs["critical-regressions"] == "3"
    assert (outputs["regressions"], outputs["fixes"]) == ("4", "6")  # as unsharded
    assert (outputs["pass-rate"], outputs["baseline-pass-rate"]) == ("0.8750", "0.8542")
    assert len(runner.api.comments[7]) == 1
    merged = json.loads((runner.workspace / outputs["results-path"]).read_text())
    assert merged["shard"] is None and merged["summary"]["cases"] == 48


def test_a_missing_part_is_an_error_not_a_verdict(runner: Runner) -> None:
    parts = run_shards(runner, 3, runner.workspace / "casegate-parts")
    parts[1].unlink()
    finished = runner.run(parts="casegate-parts")
    assert finished.returncode == 2
    assert "a gap: no part for shard 2/3" in finished.stdout
    assert not (runner.last_files / "output").exists()  # no verdict output at all
    assert runner.api.writes() == []


def test_parts_the_pull_request_committed_are_refused(runner: Runner) -> None:
    """A pull request cannot ship its own forged parts in the folder the workflow downloads to."""
    run_shards(runner, 2, runner.workspace / "casegate-parts")
    git("add", "casegate-parts", cwd=runner.workspace)
    git("commit", "-qm", "parts of my own", cwd=runner.workspace)
    finished = runner.run(parts="casegate-parts")
    assert finished.returncode == 2
    assert "holds files the pull request committed" in finished.stdout
    assert runner.api.writes() == []


def test_a_linked_part_or_a_folder_outside_the_workspace_is_refused(runner: Runner) -> None:
    parts = run_shards(runner, 2, runner.workspace / "casegate-parts")
    parts[0].unlink()
    parts[0].symlink_to(runner.workspace / "baselines" / "support.json")
    finished = runner.run(parts="casegate-parts")
    assert finished.returncode == 2
    assert "is not a regular file" in finished.stdout
    for folder in ("../elsewhere", "/tmp"):
        finished = runner.run(parts=folder)
        assert finished.returncode == 2
        assert "input `parts`" in finished.stdout


def test_shard_and_parts_are_inputs_of_check_only(runner: Runner) -> None:
    finished = runner.run(shard="1/2", parts="casegate-parts")
    assert finished.returncode == 2
    assert "two stages" in finished.stdout
    finished = runner.run(command="baseline", shard="1/2")
    assert finished.returncode == 2
    assert "go with `command: check` only" in finished.stdout
    finished = runner.run(shard="3/2")
    assert finished.returncode == 2
    assert "expected I/N" in finished.stdout
