"""The Action's entrypoint as a process, with a fake Actions environment and GitHub API."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from gate.github.action import read_input
from gate.github.api import marker_for
from gate.github.publish import write_outputs
from gate.logsafe import command
from tests.fakes.actions import TOKEN, Runner, git, open_pull_request

REPO = Path(__file__).resolve().parents[2]


def test_first_run_creates_the_comment_and_a_second_updates_it(runner: Runner) -> None:
    first = runner.run()
    assert first.returncode == 1, first.stdout + first.stderr  # the candidate blocks
    outputs = runner.outputs()
    assert outputs["verdict"] == "block"
    assert outputs["critical-regressions"] == "3"
    assert (outputs["pass-rate"], outputs["baseline-pass-rate"]) == ("0.8750", "0.8542")
    # returns-greets-by-name (33/36 → 0/4) is a drop within noise for a non-critical case
    assert outputs["regressions"] == "4" and outputs["fixes"] == "6"
    # Relative to the workspace, as the job's next step sees them.
    assert outputs["report-path"] == ".casegate/support-report.md"
    assert (runner.workspace / outputs["report-path"]).is_file()
    assert (runner.workspace / outputs["results-path"]).is_file()
    # The HTML viewer beside the report, and the comment's link to the run's artifacts.
    assert outputs["viewer-path"] == ".casegate/support-report.html"
    page = (runner.workspace / outputs["viewer-path"]).read_text()
    assert page.startswith("<!doctype html>") and '"decision":"block"' in page
    assert "casegate: **block**" in runner.summary()
    comments = runner.api.comments[7]
    assert len(comments) == 1 and marker_for("support") in comments[0]["body"]
    assert (
        "the `casegate-viewer` artifact of [this run](https://github.com/acme/shop/actions/runs/4242)"
        in comments[0]["body"]
    )
    # Annotations point at the case files' lines, relative to the repository.
    assert "::error file=cases/support/" in first.stdout
    assert (
        "title=casegate%3A critical case complaint-no-invented-discount regressed" in first.stdout
    )
    assert "::warning file=cases/support/" in first.stdout  # the non-critical regression

    second = runner.run()
    assert second.returncode == 1
    assert len(runner.api.comments[7]) == 1
    assert [s.method for s in runner.api.writes()] == ["POST", "PATCH"]
    assert "pull-request comment updated" in second.stdout

    everything = first.stdout + first.stderr + second.stdout + second.stderr
    everything += runner.summary() + json.dumps(runner.outputs())
    everything += "".join(p.read_text() for p in runner.workspace.rglob("*.json"))
    everything += "".join(p.read_text() for p in runner.workspace.rglob("*.md"))
    everything += "".join(p.read_text() for p in runner.workspace.rglob("*.html"))
    assert TOKEN not in everything


def test_a_forks_read_only_token_warns_and_keeps_the_verdict(runner: Runner) -> None:
    runner.api.read_only = True
    finished = runner.run()
    assert finished.returncode == 1
    assert "::warning::casegate could not write the PR comment" in finished.stdout
    assert "read-only token" in finished.stdout
    assert runner.outputs()["verdict"] == "block"
    assert "casegate: **block**" in runner.summary()


def test_a_comment_failure_does_not_fail_a_passing_check(runner: Runner) -> None:
    runner.api.read_only = True
    finished = runner.run(config="casegate.yml")  # the baseline system against itself
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert runner.outputs()["verdict"] == "ship"
    assert "could not write the PR comment" in finished.stdout


def test_fail_on_never_is_advisory(runner: Runner) -> None:
    assert runner.run(fail_on="never").returncode == 0
    assert runner.outputs()["verdict"] == "block"


def test_a_pull_request_cannot_edit_its_own_baseline(runner: Runner) -> None:
    # The PR replaces the baseline with the candidate's own results, so nothing regresses.
    candidate = runner.root / "candidate.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "gate",
            "run",
            "-c",
            "casegate.candidate.yml",
            "--out",
            str(candidate),
            "--quiet",
        ],
        cwd=runner.workspace,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
    )
    shutil.copy(candidate, runner.workspace / "baselines" / "support.json")
    git("commit", "-qam", "move the goalposts", cwd=runner.workspace)
    finished = runner.run()
    assert finished.returncode == 1
    assert runner.outputs()["critical-regressions"] == "3"
    assert "baselines/support.json edited by this pull request" in runner.summary()
    assert "baselines/support.json edited by this pull request" in runner.api.comments[7][0]["body"]


def test_a_missing_base_commit_asks_for_full_history(runner: Runner) -> None:
    event = {"number": 7, "pull_request": {"number": 7, "base": {"sha": "ab" * 20}}}
    finished = runner.run(event=event)
    assert finished.returncode == 2
    assert "fetch-depth: 0" in finished.stdout
    assert finished.stdout.count("::error") == 1 and "Traceback" not in finished.stderr


def test_workflow_dispatch_model_swap_posts_no_comment(runner: Runner) -> None:
    finished = runner.run(
        "workflow_dispatch",
        {"inputs": {"model": "standin-small"}},
        config="casegate.yml",
        set="# the model swap\nsystem.model=standin-small\nsystem.prompt_file=prompts/support-candidate.md\nsystem.name=support-v2-concise\nsystem.params.max_tokens=60",
    )
    assert finished.returncode == 1
    assert "standin-large → standin-small" in runner.summary()
    assert runner.api.seen == []


def test_push_refreshes_the_baseline(runner: Runner) -> None:
    baseline = runner.workspace / "baselines" / "support.json"
    before = json.loads(baseline.read_text())
    finished = runner.run(
        "push", {"ref": "refs/heads/main"}, command="baseline", config="casegate.candidate.yml"
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    after = json.loads(baseline.read_text())
    assert after["system"] == "support-v2-concise" != before["system"]
    assert runner.outputs()["pass-rate"] == "0.8750"
    assert "baseline refreshed" in runner.summary()


def test_config_errors_are_annotations_and_exit_2(runner: Runner) -> None:
    (runner.workspace / "cases" / "support" / "broken.yaml").write_text("- id: x\n  input: [\n")
    finished = runner.run()
    assert finished.returncode == 2
    assert "::error file=cases/support/broken.yaml,line=" in finished.stdout
    assert "could not run" in runner.summary()


def test_bad_inputs_are_refused(runner: Runner) -> None:
    finished = runner.run(fail_on="sometimes")
    assert finished.returncode == 2
    assert "input `fail-on` must be block or never" in finished.stdout


def test_inputs_keep_hyphens_and_commands_are_escaped() -> None:
    assert read_input({"INPUT_GITHUB-TOKEN": " t "}, "github-token") == "t"
    assert read_input({"INPUT_GITHUB_TOKEN": "u"}, "github-token") == "u"
    assert read_input({}, "fail-on", "block") == "block"
    line = command("error", "50% off\nnow", file="a,b.yaml", line=3, title="x: y")
    assert line == "::error file=a%2Cb.yaml,line=3,title=x%3A y::50%25 off%0Anow"


def test_outputs_use_the_delimiter_syntax(tmp_path: Path) -> None:
    path = tmp_path / "out"
    write_outputs(str(path), {"report": "line 1\nline 2"})
    lines = path.read_text().splitlines()
    name, delimiter = lines[0].split("<<")
    assert name == "report" and delimiter.startswith("ghadelimiter_")
    assert lines[1:] == ["line 1", "line 2", delimiter]


def test_a_missing_working_directory_is_an_error(runner: Runner) -> None:
    finished = runner.run(working_directory="services/bot")
    assert finished.returncode == 2
    assert "input `working-directory`: services/bot does not exist" in finished.stdout


def test_the_example_config_has_ci_record_again_what_a_pull_request_changed(
    runner: Runner,
) -> None:
    # The starter workflow passes `verify: changed` when a provider key is set, and otherwise
    # leaves it to the base's config. The example's stand-in needs no key and its
    # casegate.yml says `verify: changed`: a forged recording is recorded again by CI.
    shutil.copytree(
        REPO / "examples", runner.workspace / "examples", ignore=shutil.ignore_patterns("*.pyc")
    )
    git("add", "-A", cwd=runner.workspace)
    git("commit", "-qm", "the example's code", cwd=runner.workspace)
    runner.base_sha = git("rev-parse", "HEAD", cwd=runner.workspace)
    recording = runner.workspace / "recordings" / "support" / "cancel-window.json"

    def forge(root: Path) -> None:
        document = json.loads(recording.read_text())
        for entry in document["responses"].values():
            entry["output"]["text"] = "forged by the author"
        recording.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")

    open_pull_request(runner.workspace, forge)
    finished = runner.run(config="casegate.yml", verify="")  # as the workflow without a key
    log = finished.stdout + finished.stderr
    assert "verify: recorded again by CI, live: cancel-window" in log, log[-3000:]
    # No CASEGATE_RECORDING_KEY in this run: written by the gate, and said to be unsealed.
    assert "answer(s) written by the gate, not sealed (CASEGATE_RECORDING_KEY is not set)" in log
    assert finished.returncode == 0, log[-3000:]
    replayed = json.loads(recording.read_text())["responses"].values()
    assert sum(entry["output"]["text"] != "forged by the author" for entry in replayed) == 4


def test_a_failed_run_withdraws_the_verdict_an_earlier_commit_got(runner: Runner) -> None:
    # The first push blocks; the next one cannot be judged (a tab in a case file). The
    # comment must not go on showing the first push's verdict beside the failed check.
    open_pull_request(runner.workspace, lambda root: None)
    assert runner.run().returncode == 1
    (comment,) = runner.api.comments[7]
    assert "casegate: **block**" in comment["body"]
    broken = runner.workspace / "cases/support/zz-broken.yaml"
    broken.write_text("- id: tabbed\n\tinput: {question: hi}\n")
    failed = runner.run()
    assert failed.returncode == 2, failed.stdout + failed.stderr
    (withdrawn,) = runner.api.comments[7]
    assert withdrawn["id"] == comment["id"]
    body = withdrawn["body"]
    assert body.startswith(marker_for("support") + "\n### ⚠️ casegate: **could not run**")
    assert "casegate: **block**" not in body
    assert "zz-broken.yaml" in body and "a tab" in body
    assert "pull-request comment updated: no verdict stands (1 comment(s))" in failed.stdout
    # Fixed, the same comment carries the verdict again.
    broken.unlink()
    assert runner.run().returncode == 1
    (again,) = runner.api.comments[7]
    assert again["id"] == comment["id"] and "casegate: **block**" in again["body"]


def test_a_failed_first_run_posts_no_comment(runner: Runner) -> None:
    open_pull_request(runner.workspace, lambda root: None)
    (runner.workspace / "cases/support/zz-broken.yaml").write_text("- id: x\n\tinput: {}\n")
    failed = runner.run()
    assert failed.returncode == 2
    assert runner.api.comments.get(7, []) == [] and runner.api.writes() == []


def test_what_the_pull_request_wrote_into_the_problem_is_escaped_in_the_comment(
    runner: Runner,
) -> None:
    open_pull_request(runner.workspace, lambda root: None)
    assert runner.run().returncode == 1
    hostile = "<img src=x onerror=alert(1)> @maintainers [click](https://evil.example) #1"
    config = runner.workspace / "casegate.candidate.yml"
    config.write_text(config.read_text() + f'"{hostile}": 1\n')
    failed = runner.run()
    assert failed.returncode == 2, failed.stdout
    body = runner.api.comments[7][0]["body"]
    assert "could not run" in body and "unknown key" in body
    assert "<img" not in body and "@maintainers" not in body
    assert "[click](" not in body and "\\[click\\]" in body  # no link of its making
    assert body.count("<!-- casegate:sticky-comment") == 1
