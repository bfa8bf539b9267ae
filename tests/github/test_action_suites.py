"""Several suites, one comment: the Action as a process against the loopback GitHub.

The example's two configs judge the suite `support` (the candidate blocks); a copy of
its baseline config named `billing` judges the baseline system against itself and ships.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gate.github.api import marker_for
from gate.github.rollup import ROLLUP_MARKER
from tests.fakes.actions import (
    PULL_NUMBER,
    Runner,
    git,
    open_pull_request,
    pull_request_event,
)

GLOB = "casegate.*.yml"


def add_suite(root: Path, name: str, config: str = "casegate.yml") -> None:
    """`casegate.<name>.yml`: the example's config, baseline and all, as the suite `name`."""
    text = (root / config).read_text()
    text = text.replace("suite: support", f"suite: {name}")
    text = text.replace("baseline: baselines/support.json", f"baseline: baselines/{name}.json")
    (root / f"casegate.{name}.yml").write_text(text)
    baseline = json.loads((root / "baselines" / "support.json").read_text())
    baseline["suite"] = name
    (root / "baselines" / f"{name}.json").write_text(json.dumps(baseline, indent=2) + "\n")


@pytest.fixture
def suites(runner: Runner) -> Runner:
    """The base commit holds casegate.candidate.yml (support) and casegate.billing.yml."""
    add_suite(runner.workspace, "billing")
    git("add", "-A", cwd=runner.workspace)
    git("commit", "-qm", "a second suite", cwd=runner.workspace)
    runner.base_sha = git("rev-parse", "HEAD", cwd=runner.workspace)
    return runner


def comment_of(runner: Runner) -> str:
    comments = runner.api.comments[PULL_NUMBER]
    assert len(comments) == 1, [c["body"][:80] for c in comments]
    return str(comments[0]["body"])


def test_two_suites_post_one_comment_with_the_strictest_verdict(suites: Runner) -> None:
    # A comment the support suite had of its own, from before the roll-up.
    suites.api.add_comment(PULL_NUMBER, marker_for("support") + "\nold", "github-actions[bot]")
    first = suites.run(config=GLOB)
    assert first.returncode == 1, first.stdout[-3000:] + first.stderr[-3000:]
    outputs = suites.outputs()
    assert outputs["verdict"] == "block"
    assert json.loads(outputs["verdicts"]) == {"billing": "ship", "support": "block"}
    paths = json.loads(outputs["results-paths"])
    assert paths == {
        "billing": ".casegate/billing-results.json",
        "support": ".casegate/support-results.json",
    }
    assert all((suites.workspace / path).is_file() for path in paths.values())
    assert outputs["report-path"] == ".casegate/casegate-suites-report.md"
    assert outputs["critical-regressions"] == "3"

    body = comment_of(suites)  # the suite's old comment is gone, the roll-up is the one
    assert body.startswith(ROLLUP_MARKER + "\n")
    assert body.count("<!-- casegate:sticky-comment") == 1
    assert body.index("casegate: **block** — 2 suite(s)") < body.index("<details")
    assert "<details open><summary>❌ support: block</summary>" in body
    assert "<details><summary>✅ billing: ship</summary>" in body
    assert "casegate: **ship** — billing" in body and "casegate: **block** — support" in body
    assert body == (suites.workspace / outputs["report-path"]).read_text()
    # The step summary and annotations stay per suite.
    summary = suites.summary()
    assert "casegate: **block** — support" in summary and "casegate: **ship** — billing" in summary
    assert "::error file=cases/support/" in first.stdout

    second = suites.run(config="casegate.candidate.yml\ncasegate.billing.yml")  # a list
    assert second.returncode == 1
    assert "pull-request comment updated" in second.stdout
    assert comment_of(suites) == body
    assert [s.method for s in suites.api.writes()] == ["POST", "DELETE", "PATCH"]


def test_fail_on_never_is_advisory_for_a_roll_up(suites: Runner) -> None:
    finished = suites.run(config="casegate.candidate.yml, casegate.billing.yml", fail_on="never")
    assert finished.returncode == 0
    assert suites.outputs()["verdict"] == "block"


def test_a_pull_request_that_deletes_a_suites_config_blocks(suites: Runner) -> None:
    # The candidate changes nothing, so billing alone would ship; the PR drops support.
    def drop(root: Path) -> None:
        (root / "casegate.candidate.yml").unlink()

    open_pull_request(suites.workspace, drop)
    finished = suites.run(config=GLOB)
    assert finished.returncode == 1, finished.stdout[-3000:]
    verdicts = json.loads(suites.outputs()["verdicts"])
    assert verdicts == {"billing": "ship", "support": "block"}
    body = comment_of(suites)
    assert "`casegate.candidate.yml`, the config of the suite support on the base commit" in body

    # The label the base names accepts it, as it does any loosening change.
    label = re.search(r"adding the label `([^`]+)`", body)
    assert label is not None
    event = pull_request_event(suites.base_sha, labels=[label.group(1)], head_sha=suites.head_sha())
    accepted = suites.run(event=event, config=GLOB)
    assert accepted.returncode == 0, accepted.stdout[-3000:]
    assert "accepted by the label" in comment_of(suites)


def test_a_config_only_in_the_pull_request_brings_its_own_ruler(suites: Runner) -> None:
    def add(root: Path) -> None:
        add_suite(root, "extraction")

    open_pull_request(suites.workspace, add)
    finished = suites.run(config=GLOB)
    assert finished.returncode == 1, finished.stdout[-3000:]
    verdicts = json.loads(suites.outputs()["verdicts"])
    assert verdicts["extraction"] == "block"  # a new ruler blocks until accepted, as today
    assert "does not exist on the base commit" in comment_of(suites)


def test_a_suite_that_errors_makes_the_whole_exit_2(suites: Runner) -> None:
    def break_billing(root: Path) -> None:
        config = root / "casegate.billing.yml"
        config.write_text(config.read_text() + "unknown_key: 1\n")

    open_pull_request(suites.workspace, break_billing)
    finished = suites.run(config=GLOB, fail_on="never")
    assert finished.returncode == 2, finished.stdout[-3000:]
    outputs = suites.outputs()
    assert outputs["verdict"] == "error"
    assert json.loads(outputs["verdicts"]) == {
        "casegate.billing.yml": "error",
        "support": "block",
    }
    body = comment_of(suites)
    assert "casegate: **error**" in body and "could not be judged" in body
    assert "could not run" in suites.summary()


def test_a_glob_that_matches_nothing_is_an_error(suites: Runner) -> None:
    finished = suites.run(config="suites/*.yml")
    assert finished.returncode == 2
    assert "'suites/*.yml' matches no config" in finished.stdout
    assert suites.api.writes() == []  # nothing written (a withdrawal finds no comment)


@pytest.mark.parametrize(
    ("inputs", "refusal"),
    [
        ({"shard": "1/2"}, "sharding"),
        ({"report_dir": "casegate-report"}, "`report-dir`"),
        ({"baseline": "baselines/support.json"}, "the `baseline` input"),
    ],
)
def test_what_a_roll_up_does_not_do_is_refused(
    suites: Runner, inputs: dict[str, str], refusal: str
) -> None:
    finished = suites.run(config=GLOB, **inputs)
    assert finished.returncode == 2
    assert "names several configs" in finished.stdout and refusal in finished.stdout


def test_a_roll_up_of_many_cases_fits_the_comment_limit(suites: Runner) -> None:
    for name in ("orders", "returns", "shipping", "refunds"):
        add_suite(suites.workspace, name, "casegate.candidate.yml")
    git("add", "-A", cwd=suites.workspace)
    git("commit", "-qm", "more suites", cwd=suites.workspace)
    suites.base_sha = git("rev-parse", "HEAD", cwd=suites.workspace)
    # The same cases again as new baselines would be a ruler change; the suites' verdicts
    # come from the base, as each suite's own check's do.
    finished = suites.run(config=GLOB)
    assert finished.returncode == 1, finished.stdout[-3000:]
    body = comment_of(suites)
    assert len(body) <= 60_000
    assert "shortened to share GitHub's comment limit" in body
    assert body.count("<details") == body.count("</details>")
    assert len(json.loads(suites.outputs()["verdicts"])) == 6


def test_the_comment_workflow_accepts_the_suites_the_default_branchs_configs_declare(
    tmp_path: Path,
) -> None:
    from gate.github.action import _declared_suites

    for name in ("support", "billing"):
        (tmp_path / f"casegate.{name}.yml").write_text(
            f"suite: {name}\ncases: cases\nsystem: {{name: s, provider: python, target: m:f}}\n"
        )
    (tmp_path / "cases").mkdir()
    assert _declared_suites(tmp_path, "casegate.*.yml") == {"support", "billing"}
    assert _declared_suites(tmp_path, "casegate.support.yml") == {"support"}
    assert _declared_suites(tmp_path, "casegate.yml") is None  # no config: as before
