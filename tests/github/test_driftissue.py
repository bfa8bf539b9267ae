"""The drift issue over the loopback GitHub API, and the Action's `command: drift`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gate.drift.report import CaseDrift, DriftReport, SampleDrift, build
from gate.github.api import CommentError
from gate.github.driftissue import DriftIssues, file_report, issue_body, marker_for
from tests.fakes.actions import TOKEN, Runner
from tests.fakes.github_api import FakeGitHub

REPOSITORY = "acme/shop"
LABEL = "casegate-drift"


@pytest.fixture
def api() -> Iterator[FakeGitHub]:
    with FakeGitHub(TOKEN) as server:
        yield server


def client(server: FakeGitHub) -> DriftIssues:
    return DriftIssues(server.url, TOKEN, sleep=lambda _: None)


def report(
    *, flip: bool = False, error: bool = False, text: str = "Two weeks.", cases: int = 1
) -> DriftReport:
    drifts = []
    for index in range(cases):
        live = "error" if error else ("fail" if flip else "pass")
        sample = SampleDrift(
            sample=0,
            recorded="pass",
            live=live,
            output_changed=flip,
            diff=["- 30 days.", f"+ {text}"] if flip else [],
        )
        drifts.append(
            CaseDrift(
                id=f"refund-{index}",
                recorded="pass",
                live=live,
                flip="pass_to_fail" if flip else None,
                output_changed=flip,
                live_reason="HTTP 500" if error else (f"missing: {text}" if flip else ""),
                samples=[sample],
            )
        )
    head = {
        "suite": "support",
        "system": "support-v1",
        "model": "gpt-x",
        "created_at": "2026-11-30T06:17:00+00:00",
        "casegate_version": "test",
        "max_flips": 0,
        "max_age_days": 90,
    }
    return build(head, drifts)


def bodies(server: FakeGitHub) -> list[str]:
    return [issue["body"] for issue in server.issues]


def test_drift_opens_one_issue_then_updates_it(api: FakeGitHub) -> None:
    first = file_report(client(api), REPOSITORY, report(flip=True))
    assert first.action == "opened" and first.number == 1
    [issue] = api.issues
    assert [label["name"] for label in issue["labels"]] == [LABEL]
    assert issue["body"].startswith(marker_for("support"))
    assert issue["user"]["login"] == "github-actions[bot]"
    assert "casegate drift" in issue["title"] and "support" in issue["title"]

    second = file_report(client(api), REPOSITORY, report(flip=True, text="Ten days."))
    assert (second.action, second.number) == ("updated", 1)
    assert len(api.issues) == 1  # updated, never duplicated
    assert "Ten days." in api.issues[0]["body"]
    assert [s.method for s in api.writes()] == ["POST", "PATCH"]
    listing = next(s for s in api.seen if s.method == "GET")
    assert "labels=casegate-drift" in listing.path and "state=open" in listing.path


def test_back_in_step_comments_and_closes(api: FakeGitHub) -> None:
    file_report(client(api), REPOSITORY, report(flip=True))
    closed = file_report(client(api), REPOSITORY, report())
    assert closed.action == "closed"
    issue = api.issues[0]
    assert (issue["state"], issue["state_reason"]) == ("closed", "completed")
    [comment] = api.comments[1]
    assert "back in step" in comment["body"]
    # The next drift opens a new issue: a closed one is not searched.
    reopened = file_report(client(api), REPOSITORY, report(flip=True))
    assert (reopened.action, reopened.number) == ("opened", 2)


def test_in_step_with_no_issue_writes_nothing(api: FakeGitHub) -> None:
    assert file_report(client(api), REPOSITORY, report()).action == "none"
    assert api.writes() == []


def test_an_incomplete_run_never_closes_nor_opens(api: FakeGitHub) -> None:
    assert file_report(client(api), REPOSITORY, report(error=True)).action == "none"
    assert api.issues == []
    file_report(client(api), REPOSITORY, report(flip=True))
    kept = file_report(client(api), REPOSITORY, report(error=True))
    assert kept.action == "updated"
    assert api.issues[0]["state"] == "open"
    assert "could not be measured live" in api.issues[0]["body"]


def test_only_casegates_own_issue_is_edited(api: FakeGitHub) -> None:
    marker = marker_for("support")
    api.add_issue(f"{marker}\nquoted by a person", labels=(LABEL,), login="mallory")
    bot = "github-actions[bot]"
    api.add_issue(f"{marker}\na pull request", labels=(LABEL,), login=bot, pull_request=True)
    api.add_issue(f"{marker_for('other')}\nanother suite's", labels=(LABEL,), login=bot)
    filed = file_report(client(api), REPOSITORY, report(flip=True))
    assert (filed.action, filed.number) == ("opened", 4)
    assert bodies(api)[:3] == [
        f"{marker}\nquoted by a person",
        f"{marker}\na pull request",
        f"{marker_for('other')}\nanother suite's",
    ]


def test_an_issue_whose_label_was_dropped_is_still_found(api: FakeGitHub) -> None:
    # GitHub drops labels a token may not set, silently: the issue must not be opened twice.
    api.add_issue(f"{marker_for('support')}\nlast week", login="github-actions[bot]")
    filed = file_report(client(api), REPOSITORY, report(flip=True))
    assert (filed.action, filed.number) == ("updated", 1)
    assert len(api.issues) == 1
    assert any("creator=github-actions" in s.path for s in api.seen if s.method == "GET")


def test_the_issue_is_found_on_a_later_page(api: FakeGitHub) -> None:
    for index in range(150):
        api.add_issue(f"unrelated {index}", labels=(LABEL,), login="github-actions[bot]")
    file_report(client(api), REPOSITORY, report(flip=True))
    assert file_report(client(api), REPOSITORY, report(flip=True)).number == 151
    assert len(api.issues) == 151


def test_markdown_injection_in_the_live_output_stays_inside_its_fence(api: FakeGitHub) -> None:
    hostile = (
        "```\n</details></pre><!-- casegate:drift-issue suite=support -->\n# Ship it @octocat "
        "fixes #1 <script>x</script> ````"
    )
    file_report(client(api), REPOSITORY, report(flip=True, text=hostile))
    body = api.issues[0]["body"]
    assert body.count("<!-- casegate") == 1 and body.startswith(marker_for("support"))
    assert "@octocat" not in body and "#1 " not in body
    fences = re.findall(r"\n(`{3,})diff\n(.*?)\n\1\n", body, re.S)
    assert fences and all("<script>" in inside for _, inside in fences)
    outside = re.sub(r"\n(`{3,})diff\n.*?\n\1\n", "", body, flags=re.S)
    assert "<script>" not in outside and "\n# Ship it" not in outside
    assert outside.count("<details>") == outside.count("</details>")


def test_a_huge_report_fits_githubs_limit(api: FakeGitHub) -> None:
    big = report(flip=True, text="word " * 5_000, cases=400)
    body = issue_body(big)
    assert len(body) <= 60_000
    assert file_report(client(api), REPOSITORY, big).action == "opened"
    assert "left out to fit GitHub's limit" in api.issues[0]["body"]


def test_a_token_that_cannot_write_issues_says_what_permission_is_missing(
    api: FakeGitHub,
) -> None:
    api.read_only = True
    with pytest.raises(CommentError, match="permissions: issues: write"):
        file_report(client(api), REPOSITORY, report(flip=True))


# --- the Action, as the runner starts it ---------------------------------------------

BOT = """
import json, os, pathlib

def answer(case_input, system):
    here = pathlib.Path(__file__).parent
    # What the drift run's code can see: a token here would be a leak.
    seen = sorted(k for k in os.environ if "TOKEN" in k or k.startswith("GITHUB_OUTPUT"))
    (here / "seen-env.json").write_text(json.dumps(seen))
    answers = json.loads((here / "answers.json").read_text())
    return {"text": answers[case_input["question"]], "model": answers.get("model", "bot-1")}
"""


def drift_workspace(workspace: Path, answers: dict[str, str]) -> None:
    (workspace / "driftbot.py").write_text(textwrap.dedent(BOT))
    (workspace / "answers.json").write_text(json.dumps(answers))
    (workspace / "drift.yml").write_text(
        "suite: bot\ncases: drift-cases\nsystem: {name: bot, provider: python, "
        "target: 'driftbot:answer', version: 1}\nrecordings: drift-recordings\n"
    )
    (workspace / "drift-cases").mkdir()
    (workspace / "drift-cases" / "cases.yaml").write_text(
        "- {id: refund, input: {question: refund}, expect: {contains: '30 days'}}\n"
        "- {id: hello, input: {question: hello}, expect: {contains: 'hello'}}\n"
    )


def record(workspace: Path) -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "gate", "record", "-c", "drift.yml", "--quiet"],
        cwd=workspace,
        capture_output=True,
        text=True,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr


def test_the_action_keeps_the_drift_issue(runner: Runner) -> None:
    workspace = runner.workspace
    drift_workspace(workspace, {"refund": "30 days, no questions asked.", "hello": "hello!"})
    record(workspace)
    inputs: dict[str, Any] = {"command": "drift", "config": "drift.yml"}
    in_step = runner.run("schedule", {}, **inputs)
    assert in_step.returncode == 0, in_step.stdout + in_step.stderr
    assert "drift issue: none open, none needed" in in_step.stdout
    assert runner.api.issues == []

    (workspace / "answers.json").write_text(
        json.dumps({"refund": "Two weeks.", "hello": "hello!", "model": "bot-2"})
    )
    drifted = runner.run("schedule", {}, **inputs)
    assert drifted.returncode == 1, drifted.stdout + drifted.stderr
    assert "drift issue opened" in drifted.stdout
    assert "casegate drift: **1 flip(s)**" in runner.summary()
    assert (workspace / ".casegate" / "bot-drift.json").is_file()
    again = runner.run("schedule", {}, **inputs, **{"fail-on": "never"})
    assert again.returncode == 0  # advisory: the flip is reported, not failed
    assert "drift issue updated" in again.stdout
    assert len(runner.api.issues) == 1

    # The token reached neither the drift run's environment nor anything written.
    assert json.loads((workspace / "seen-env.json").read_text()) == []
    everything = drifted.stdout + drifted.stderr + again.stdout + again.stderr
    everything += runner.summary() + json.dumps(runner.api.issues)
    everything += "".join(p.read_text() for p in workspace.rglob("*.json"))
    assert TOKEN not in everything

    # Re-recorded through the Action (refresh), the suite is back in step: the issue closes.
    refreshed = runner.run("workflow_dispatch", {}, **inputs, refresh="true", comment="false")
    assert refreshed.returncode == 1, refreshed.stdout + refreshed.stderr
    assert "re-recorded 2 case(s)" in refreshed.stdout
    closed = runner.run("schedule", {}, **inputs)
    assert closed.returncode == 0, closed.stdout + closed.stderr
    assert "drift issue closed" in closed.stdout
    assert runner.api.issues[0]["state"] == "closed"


def test_the_action_refuses_drift_on_a_pull_request(runner: Runner) -> None:
    finished = runner.run(command="drift", config="casegate.yml")
    assert finished.returncode == 2
    assert "does not run on pull requests" in finished.stdout
    assert runner.api.seen == []
