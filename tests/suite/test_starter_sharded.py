"""`casegate init --shards N`: the two-stage workflow, lint-clean and least-privileged."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.cli import main
from gate.suite.starter import starter_files
from tests.docs_text import page

REPO = Path(__file__).resolve().parents[2]
SHARDED = ".github/workflows/casegate-sharded.yml"


def sharded(shards: int = 4) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(starter_files("./", shards=shards)[SHARDED])
    return loaded


def test_init_shards_replaces_the_pull_request_workflow(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", "--dir", str(tmp_path), "--shards", "3"]) == 0
    workflows = sorted(p.name for p in (tmp_path / ".github/workflows").iterdir())
    assert "casegate-sharded.yml" in workflows
    assert "casegate-pull-request.yml" not in workflows
    matrix = yaml.safe_load((tmp_path / SHARDED).read_text())["jobs"]["shard"]["strategy"]
    assert matrix["matrix"]["shard"] == ["1/3", "2/3", "3/3"]
    for refused in ("1", "0", "x", "257"):
        with pytest.raises(SystemExit):
            main(["init", "--dir", str(tmp_path / refused), "--shards", refused])
        assert "expected a number of shards" in capsys.readouterr().err


def test_the_sharded_workflow_passes_actionlint_and_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "casegate-sharded.yml"
    path.write_text(starter_files(shards=4)[SHARDED])
    tools = Path(sys.executable).parent
    for tool, args in (
        ("actionlint", ["-no-color"]),
        ("check-jsonschema", ["--builtin-schema", "vendor.github-workflows"]),
    ):
        found = shutil.which(tool, path=str(tools))
        assert found is not None, f"{tool} is a dev dependency: `make test` installs it"
        finished = subprocess.run(
            [found, *args, str(path)], capture_output=True, text=True, check=False
        )
        assert finished.returncode == 0, finished.stdout + finished.stderr


def test_shard_jobs_write_parts_and_only_the_gate_job_can_comment() -> None:
    workflow = sharded()
    assert workflow["permissions"] == {"contents": "read"}
    shard, gate = workflow["jobs"]["shard"], workflow["jobs"]["gate"]
    assert "permissions" not in shard  # the workflow's: read-only, no comment, no secret
    assert "secrets." not in yaml.safe_dump(shard)
    # Nothing more: download-artifact reads this run's own artifacts without a token scope.
    assert gate["permissions"] == {"contents": "read", "pull-requests": "write"}
    step = next(s for s in shard["steps"] if s.get("id") == "casegate")
    assert step["with"]["shard"] == "${{ matrix.shard }}"
    assert shard["strategy"]["fail-fast"] is False


def test_the_gate_job_runs_after_a_failed_shard_so_a_missing_part_fails_it() -> None:
    """A skipped required job counts as passed on GitHub: the gate job must never be skipped."""
    gate = sharded()["jobs"]["gate"]
    assert gate["needs"] == "shard"
    assert gate["if"] == "${{ !cancelled() }}"
    download = next(s for s in gate["steps"] if s.get("uses", "").startswith("actions/download"))
    check = next(s for s in gate["steps"] if "parts" in s.get("with", {}))
    assert check["with"]["parts"] == download["with"]["path"]
    assert download["with"]["pattern"] == "casegate-part-*"
    checkouts = [s for s in gate["steps"] if s.get("uses", "").startswith("actions/checkout@")]
    assert all(s["with"]["persist-credentials"] is False for s in checkouts)


def test_the_docs_show_the_sharded_workflow_verbatim() -> None:
    text = page("action")
    section = text[text.index("## Sharding: one suite over many runners") :]
    assert starter_files("casegate/casegate@v1", shards=4)[SHARDED] in section
