"""The drift tracking issue, and the Action's `command: drift` that keeps it.

One open issue per suite, labelled `casegate-drift`, holds the latest drift
report. It is found by its label and a hidden marker at the start of its body,
written by the token's own identity (a person's issue quoting the marker is
never edited), the way the sticky pull-request comment is found (gate.github.api).

- drift found (a flip, a changed output, model or fingerprint): the issue is
  updated, or opened when there is none;
- a run that could not measure every case: an open issue is updated (never
  closed: an outage is not "back in step"); none is opened for it;
- in step: an open issue gets a comment saying so and is closed.

In the Action, the suite runs in a child process (`python -m gate drift`) whose
environment holds no GitHub token; this process reads the child's JSON report
as data, renders it, and talks to the API.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from gate.drift.report import BODY_LIMIT, DriftReport, markdown_report, read_report
from gate.errors import ConfigError
from gate.files import private_scratch, work_folder, write_bytes, write_text
from gate.github.api import DEFAULT_AUTHOR, MAX_PAGES, CommentError, GitHub
from gate.logsafe import command, fence, fit_summary
from gate.secrets import redact

LABEL = "casegate-drift"
_UNSAFE_IN_MARKER = re.compile(r"[^A-Za-z0-9._-]")
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130

ON_PULL_REQUEST = (
    "casegate drift runs the default branch live with the provider's keys and writes the "
    "tracking issue; it does not run on pull requests (their code would get both): run it "
    "on `schedule` or `workflow_dispatch`"
)


def marker_for(suite: str) -> str:
    """The hidden first line of a suite's drift issue (`[A-Za-z0-9._-]` only)."""
    return f"<!-- casegate:drift-issue suite={_UNSAFE_IN_MARKER.sub('', suite)} -->"


def title_for(report: DriftReport) -> str:
    return f"casegate drift: {report.suite} no longer answers as its recordings say"


@dataclass(frozen=True, slots=True)
class Filed:
    #: "opened", "updated", "closed", or "none" (nothing to open, nothing open)
    action: str
    number: int | None = None
    url: str = ""


class DriftIssues(GitHub):
    """The issues endpoints the drift issue needs, over gate.github.api's session and retries."""

    def _expect(self, response: requests.Response, doing: str) -> Any:
        if response.status_code >= 300:
            hint = ""
            if response.status_code in (401, 403, 404, 410):
                hint = (
                    " (the token cannot write issues here: the workflow needs "
                    "`permissions: issues: write`, and the repository must have issues enabled)"
                )
            try:
                message = response.json().get("message", "")
            except (ValueError, AttributeError):
                message = response.text[:200]
            raise CommentError(f"{doing}: HTTP {response.status_code} {message}{hint}".strip())
        return response.json()

    def find_issue(
        self, repository: str, marker: str, *, label: str = LABEL, author: str = DEFAULT_AUTHOR
    ) -> dict[str, Any] | None:
        """The open issue whose body starts with `marker`, by `author`: looked for under
        `label`, then among `author`'s issues (a token that may not set labels has them
        dropped silently, and the issue must still be found, not opened again)."""
        found = self._find(repository, marker, author, {"labels": label})
        if found is not None:
            return found
        try:
            return self._find(repository, marker, author, {"creator": author})
        except CommentError:
            return None  # the listing by label worked: this second look is a courtesy

    def _find(
        self, repository: str, marker: str, author: str, query: dict[str, str]
    ) -> dict[str, Any] | None:
        url: str | None = f"{self.api_url}/repos/{repository}/issues"
        params: dict[str, Any] | None = {**query, "state": "open", "per_page": 100}
        for _ in range(MAX_PAGES):
            if url is None:
                break
            response = self._request("GET", url, params=params)
            issues = self._expect(response, "listing the drift issues")
            for issue in issues if isinstance(issues, list) else []:
                if not isinstance(issue, dict) or "pull_request" in issue:
                    continue  # the issues endpoint lists pull requests too
                login = (issue.get("user") or {}).get("login") or ""
                body = issue.get("body") or ""
                if body.startswith(marker) and login and login.casefold() == author.casefold():
                    return dict(issue)
            url = response.links.get("next", {}).get("url")
            params = None  # the next link carries its own query
        return None

    def open_issue(self, repository: str, title: str, body: str, label: str) -> dict[str, Any]:
        url = f"{self.api_url}/repos/{repository}/issues"
        payload = {"title": title, "body": body, "labels": [label]}
        return dict(self._expect(self._request("POST", url, json=payload), "opening the issue"))

    def edit_issue(self, repository: str, number: int, **fields: Any) -> dict[str, Any]:
        url = f"{self.api_url}/repos/{repository}/issues/{number}"
        return dict(self._expect(self._request("PATCH", url, json=fields), "updating the issue"))

    def comment_issue(self, repository: str, number: int, body: str) -> dict[str, Any]:
        url = f"{self.api_url}/repos/{repository}/issues/{number}/comments"
        response = self._request("POST", url, json={"body": body})
        return dict(self._expect(response, "commenting on the issue"))


def issue_body(report: DriftReport) -> str:
    """The issue's body: the marker, then the report, within GitHub's limit."""
    marker = marker_for(report.suite)
    body = markdown_report(report, marker=marker, limit=BODY_LIMIT)
    # Everything the report quotes is escaped; a second marker would mean it is not.
    if body.count("<!-- casegate") != 1 or not body.startswith(marker):
        raise CommentError("the drift report is not one casegate wrote: it was not posted")
    return body


def file_report(
    api: DriftIssues,
    repository: str,
    report: DriftReport,
    *,
    label: str = LABEL,
    author: str = DEFAULT_AUTHOR,
    today: dt.date | None = None,
) -> Filed:
    """Open, update or close the suite's drift issue (see the module's docstring)."""
    marker = marker_for(report.suite)
    body = issue_body(report)
    existing = api.find_issue(repository, marker, label=label, author=author)
    number = int(existing["number"]) if existing is not None else None
    if report.drifted:
        if number is None:
            issue = api.open_issue(repository, title_for(report), body, label)
            return Filed("opened", int(issue["number"]), str(issue.get("html_url", "")))
        issue = api.edit_issue(repository, number, body=body, title=title_for(report))
        return Filed("updated", number, str(issue.get("html_url", "")))
    if report.errors or report.interrupted:
        if number is None:
            return Filed("none")
        issue = api.edit_issue(repository, number, body=body)
        return Filed("updated", number, str(issue.get("html_url", "")))
    if number is None:
        return Filed("none")
    day = (today or dt.datetime.now(dt.UTC).date()).isoformat()
    api.comment_issue(
        repository,
        number,
        f"casegate drift on {day}: back in step. Every one of the {report.summary.cases} "
        "case(s) run live answers as its recording says, so this issue is closed; the next "
        "drift opens a new one.",
    )
    issue = api.edit_issue(repository, number, body=body, state="closed", state_reason="completed")
    return Filed("closed", number, str(issue.get("html_url", "")))


# --- the Action: `command: drift` ---------------------------------------------------


def _child_flags() -> list[str]:
    # -P: the checkout is not put on sys.path; an isolated parent gets an isolated child.
    return ["-I"] if sys.flags.isolated else ["-P"]


def _run_child(arguments: list[str]) -> tuple[int, str]:
    """`python -m gate drift …` in its own process group, without the token; its exit code
    and what it printed."""
    from gate.produce.supervise import child_environment, wait_for_child

    child = subprocess.Popen(
        [sys.executable, *_child_flags(), "-m", "gate", "drift", *arguments],
        env=child_environment(os.environ),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    printed = wait_for_child(child, reap=True)
    return child.returncode, printed


def run_drift(
    inputs: Any, environ: Mapping[str, str], workspace: Path, cwd: Path, suite: str
) -> int:
    """The Action's `command: drift`: measure in a child, report, keep the issue; exit as
    `casegate drift` does (`fail-on: never` turns a 1 into 0, never a 2)."""
    if environ.get("GITHUB_EVENT_NAME", "") in ("pull_request", "pull_request_target"):
        raise ConfigError(ON_PULL_REQUEST)
    scratch = private_scratch("casegate-drift-", environ.get("RUNNER_TEMP"))
    out = scratch / "drift.json"
    arguments = ["-c", inputs.config, "--format", "json", "--out", str(out), "--quiet"]
    for override in inputs.overrides:
        arguments += ["--set", override]
    if inputs.refresh:
        arguments.append("--refresh")
    code, printed = _run_child(arguments)
    if printed.strip():
        print(fence(redact(printed).rstrip("\n")), flush=True)  # the suite's words: fenced
    if code == EXIT_INTERRUPTED:
        return EXIT_INTERRUPTED
    if not out.is_file():
        print(command("error", f"casegate drift could not run (exit {code}): see the log above"))
        return EXIT_ERROR
    report = read_report(out.read_bytes(), "the drift run's report")
    markdown = markdown_report(report)
    kept = work_folder(cwd / ".casegate")
    write_bytes(kept / f"{suite}-drift.json", out.read_bytes())
    write_text(kept / f"{suite}-drift.md", markdown)
    summary = environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as stream:
            stream.write(redact(fit_summary(markdown)) + "\n")
    if report.refreshed:
        print(
            f"re-recorded {len(report.refreshed)} case(s): commit the recordings folder in a "
            "pull request for a person to review"
        )
    if inputs.comment:
        _keep_issue(inputs, environ, report)
    result = report.exit_code
    if inputs.fail_on == "never" and result == 1:
        return 0
    return result


def _keep_issue(inputs: Any, environ: Mapping[str, str], report: DriftReport) -> None:
    repository = environ.get("GITHUB_REPOSITORY", "")
    if not inputs.token:
        print(command("warning", "no github-token: the drift issue was not kept"))
        return
    if not repository:
        print(command("warning", "GITHUB_REPOSITORY is not set: the drift issue was not kept"))
        return
    api = DriftIssues(environ.get("GITHUB_API_URL") or "https://api.github.com", inputs.token)
    try:
        filed = file_report(api, repository, report, author=inputs.comment_author)
    except (CommentError, KeyError, TypeError, ValueError) as exc:
        message = f"casegate could not keep the drift issue: {redact(str(exc))}"
        print(command("warning", message))
        return
    if filed.action == "none":
        print("drift issue: none open, none needed")
    else:
        print(f"drift issue {filed.action}: {filed.url or filed.number}")
