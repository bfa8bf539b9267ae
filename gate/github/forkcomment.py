"""The comment on a pull request from a fork, posted by a `workflow_run` from an artifact.

A fork's pull request runs with a read-only token, so its check cannot comment.
With `report-dir` set the check writes `report.md` (the comment's markdown) and
`verdict.json` there; the pull-request workflow uploads them as an artifact, and
casegate-comment.yml, triggered by `workflow_run` with `pull-requests: write`,
runs `command: comment` on the downloaded folder. That workflow runs none of the
pull request's code, but the fork's run wrote the artifact and could have put
anything in it. So the artifact is untrusted input: only the two files, each
within its size, valid UTF-8, no links; the body posted must start with the
marker of the verdict's suite, hold no other marker, no HTML (tags or
character references) that gate/reporting/report.py does not write itself, and no live
@mention or #reference. The pull request is the one the event names, found
through the API when the event leaves it out (it does for forks) — never one
the artifact names.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gate.errors import CasegateError, ConfigError
from gate.files import parse_json, write_text
from gate.github.api import CommentError, GitHub, marker_for
from gate.logsafe import command, flatten
from gate.reporting.markup import neutralise
from gate.suite.config import SUITE_PATTERN

SCHEMA = "casegate.comment/1"
REPORT = "report.md"
VERDICT = "verdict.json"
#: GitHub refuses a comment body over 65,536 characters
REPORT_LIMIT = 65_536
VERDICT_LIMIT = 4 * 1024
VERDICTS = ("ship", "block", "inconclusive")
#: the only HTML gate/reporting/report.py writes; every other `<` in its output is escaped
REPORT_TAGS = (
    "<pre>",
    "</pre>",
    "<details>",
    "</details>",
    "<summary>",
    "</summary>",
    "<code>",
    "</code>",
    "<br>",
)
#: the only character references it writes (html.escape): `&#64;` would render as an @mention
REPORT_ENTITIES = ("&amp;", "&lt;", "&gt;")
#: how every marker starts; escaped text (`&lt;!-- …`) is not one
MARKER_START = "<!-- casegate:sticky-comment"
EXIT_COMMENT_FAILED = 1

REFUSED = (
    "the report artifact is refused ({why}); nothing was posted. The artifact is written by "
    "the pull request's own run, so a pull request can tamper with it: casegate's own check "
    "writes exactly report.md and verdict.json, through `report-dir`"
)


def refused(where: str, why: str) -> CasegateError:
    return CasegateError(f"{where}: " + REFUSED.format(why=why))


def _shown(text: str, limit: int = 40) -> str:
    """A bit of untrusted text, on one line and short, for a message about it."""
    flat = flatten(text)
    return repr(flat if len(flat) <= limit else flat[:limit] + "…")


# --- the artifact: what the check writes and what the comment workflow accepts -------


@dataclass(frozen=True, slots=True)
class CommentVerdict:
    """verdict.json: whose comment the report is, and its verdict. Field order is the format."""

    schema: str
    suite: str
    verdict: str

    @classmethod
    def parse(cls, data: bytes, where: str) -> CommentVerdict:
        try:
            document = parse_json(data.decode("utf-8"), unique_keys=True)
        except ValueError as exc:  # UnicodeDecodeError is a ValueError
            raise refused(where, f"not UTF-8 JSON: {exc}") from None
        if not isinstance(document, dict) or set(document) != {"schema", "suite", "verdict"}:
            keys = sorted(document) if isinstance(document, dict) else type(document).__name__
            raise refused(where, f"it must hold schema, suite and verdict only, not {keys}")
        record = cls(**document)
        if record.schema != SCHEMA:
            raise refused(where, f"schema {_shown(str(record.schema))} is not {SCHEMA}")
        if not isinstance(record.suite, str) or not re.fullmatch(SUITE_PATTERN, record.suite):
            raise refused(where, f"suite {_shown(str(record.suite))} is not a casegate suite name")
        if record.verdict not in VERDICTS:
            raise refused(where, f"verdict {_shown(str(record.verdict))} is not one of {VERDICTS}")
        return record


def write_report_dir(folder: Path, suite: str, verdict: str, markdown: str) -> None:
    """The check's half: the exact comment body and its verdict, for the artifact."""
    write_text(folder / REPORT, markdown)
    record = CommentVerdict(SCHEMA, suite, verdict)
    write_text(folder / VERDICT, json.dumps(asdict(record), indent=2) + "\n")


def _read(folder: Path, name: str, limit: int, where: str) -> bytes:
    """One member's bytes: a regular file, not a link, at most `limit` bytes."""
    # O_NOFOLLOW: a link swapped in after the listing is refused here too.
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(folder / name, flags)
    except OSError as exc:
        raise refused(where, f"it cannot be opened as a plain file ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise refused(where, "it is not a regular file")
    with os.fdopen(descriptor, "rb") as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise refused(where, f"it is over {limit:,} bytes")
    return data


def read_artifact(workspace: Path, report_dir: str) -> tuple[CommentVerdict, str] | None:
    """The verdict and the report in `report_dir`, checked; None when there is no artifact."""
    folder, shown = workspace / report_dir, Path(report_dir)
    if folder.is_symlink():
        raise refused(str(shown), "the folder is a symbolic link")
    if not folder.is_dir():
        return None
    entries = {entry.name: entry for entry in os.scandir(folder)}
    if not entries:
        return None
    extra = sorted(name for name in entries if name not in (REPORT, VERDICT))
    if extra:
        names = ", ".join(_shown(name) for name in extra[:5])
        more = f" and {len(extra) - 5} more" if len(extra) > 5 else ""
        raise refused(str(shown), f"it holds {names}{more} besides {REPORT} and {VERDICT}")
    for name in (REPORT, VERDICT):
        if name not in entries:
            raise refused(str(shown), f"{name} is missing")
        if entries[name].is_symlink():
            raise refused(str(shown / name), "it is a symbolic link")
    where = str(shown / VERDICT)
    record = CommentVerdict.parse(_read(folder, VERDICT, VERDICT_LIMIT, where), where)
    # A character is at most 4 bytes of UTF-8: the byte cap first, then the character count.
    where = str(shown / REPORT)
    data = _read(folder, REPORT, 4 * REPORT_LIMIT, where)
    try:
        report = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise refused(where, f"not UTF-8 (byte {exc.start})") from None
    if len(report) > REPORT_LIMIT:
        raise refused(where, f"{len(report):,} characters, over GitHub's {REPORT_LIMIT:,}")
    problem = report_problem(report, record.suite)
    if problem:
        raise refused(where, problem)
    return record, report


def _stray(text: str, char: str, allowed: tuple[str, ...], start: int = 0) -> int | None:
    """Where `char` first starts something other than one of `allowed` (None: nowhere)."""
    at = text.find(char, start)
    while at != -1 and text.startswith(allowed, at):
        at = text.find(char, at + 1)
    return None if at == -1 else at


def _unneutralised(text: str) -> int | None:
    """Where the first @mention or #reference that gate.reporting.markup.neutralise stops is."""
    escaped = neutralise(text)
    if escaped == text:
        return None
    # neutralise inserts a zero-width space after the `@` or `#`: the mark is just before.
    return next(i for i, (a, b) in enumerate(zip(text, escaped, strict=False)) if a != b) - 1


#: a link GitHub turns into a cross-reference on the issue or pull request it names
ISSUE_LINK = re.compile(r"(?i)https?://[^\s)>\]]*/(?:issues|pull|discussions)/\d+")


def _first(pattern: re.Pattern[str], text: str) -> int | None:
    found = pattern.search(text)
    return found.start() if found else None


def report_problem(report: str, suite: str) -> str | None:
    """Why `report` is not a body casegate would post for `suite`; None when it is."""
    marker = marker_for(suite)
    if not report.startswith(marker):
        return f"it does not start with casegate's marker for the suite {suite}"
    if report.count(MARKER_START) != 1:
        return f"it holds {report.count(MARKER_START)} casegate markers; a report has one"
    for at, what in (
        (_stray(report, "<", REPORT_TAGS, len(marker)), "raw HTML casegate never writes"),
        (_stray(report, "&", REPORT_ENTITIES), "a character reference casegate never writes"),
        (_unneutralised(report), "a live @mention or #reference"),
        (_first(ISSUE_LINK, report), "a link to an issue or pull request"),
    ):
        if at is not None:
            line = report.count("\n", 0, at) + 1
            return f"{what}, line {line}: {_shown(report[at:])}"
    return None


# --- which pull request: the event's, never the artifact's ---------------------------


class NothingToPost(Exception):
    """The run needs no comment (no artifact, or the pull request moved on): a notice, exit 0."""


class PullRequests(GitHub):
    def open_with_head(self, repository: str, head: str) -> list[dict[str, Any]]:
        """The open pull requests into `repository` whose head is `owner:branch`.

        GitHub's own lookup by commit (`/commits/{sha}/pulls`) finds nothing for a
        commit that lives only in a fork; this filter covers forks.
        """
        url = f"{self.api_url}/repos/{repository}/pulls"
        params = {"state": "open", "head": head, "per_page": 100}
        pulls = self._check(self._request("GET", url, params=params), "finding the pull request")
        return [pull for pull in pulls if isinstance(pull, dict)]


def _get(document: Any, *keys: str) -> Any:
    for key in keys:
        document = document.get(key) if isinstance(document, dict) else None
    return document


def _number(pull: Any) -> int | None:
    number = _get(pull, "number")
    return number if type(number) is int else None


def pull_request_number(event: Mapping[str, Any], repository: str, api: PullRequests) -> int:
    """The pull request the triggering run checked, from the `workflow_run` event."""
    run = event.get("workflow_run")
    if not isinstance(run, dict):
        raise ConfigError("command: comment needs the `workflow_run` event; this one has none")
    if run.get("event") != "pull_request":
        raise ConfigError(
            f"the triggering run was for {_shown(str(run.get('event')))}, not a pull request: "
            "give the job `if: github.event.workflow_run.event == 'pull_request'`"
        )
    head_sha, branch = run.get("head_sha"), run.get("head_branch")
    head_repository = _get(run, "head_repository", "full_name")
    if not all(isinstance(value, str) and value for value in (head_sha, head_repository, branch)):
        raise ConfigError("the workflow_run event names no head repository, branch and commit")
    repository_id = _get(event, "repository", "id")
    for pull in run.get("pull_requests") or []:
        number = _number(pull)
        into_this = repository_id is not None and _get(pull, "base", "repo", "id") == repository_id
        if number is not None and into_this and _get(pull, "head", "sha") == head_sha:
            return number
    # A fork's run lists no pull request: look it up by the fork's branch, then its commit.
    owner = str(head_repository).partition("/")[0]
    numbers = sorted(
        {
            number
            for pull in api.open_with_head(repository, f"{owner}:{branch}")
            if (number := _number(pull)) is not None
            and _get(pull, "head", "sha") == head_sha
            and str(_get(pull, "head", "repo", "full_name")).casefold()
            == str(head_repository).casefold()
        }
    )
    if len(numbers) == 1:
        return numbers[0]
    if not numbers:
        raise NothingToPost(
            f"no open pull request has the head {str(head_sha)[:12]} any more (pushed to again, "
            "or closed): nothing was posted; the newer run comments"
        )
    raise NothingToPost(
        f"pull requests {', '.join(f'#{n}' for n in numbers)} share the head "
        f"{str(head_sha)[:12]}, and the event does not say which one this run checked: "
        "nothing was posted"
    )


# --- the command ------------------------------------------------------------------------


def _withdraw(
    api: PullRequests, repository: str, event: Mapping[str, Any], author: str, why: str
) -> None:
    """A run that wrote no report judged nothing: casegate's comments on its pull request
    (found only while the run's commit is still its head) stop showing an earlier verdict."""
    from gate.github.checkrun import could_not_run

    try:
        number = pull_request_number(event, repository, api)
    except (NothingToPost, CasegateError, CommentError):
        return  # pushed to again (the newer run comments), or no pull request to find
    head = _get(event, "workflow_run", "head_sha")
    try:
        rewritten = api.rewrite_ours(
            repository,
            number,
            could_not_run(
                ["the pull request's casegate run wrote no report: its log says why"], head
            ),
            author=author,
        )
    except CommentError as exc:
        print(command("warning", f"casegate could not mark its PR comment stale: {exc}"))
        return
    if rewritten:
        print(f"pull-request comment updated: no verdict stands ({rewritten} comment(s))")


def post_report(
    workspace: Path,
    report_dir: str,
    event: Mapping[str, Any],
    environ: Mapping[str, str],
    *,
    token: str,
    author: str,
    suites: Collection[str] | None = None,
) -> int:
    """`command: comment`: post the artifact in `report_dir` on the run's pull request.

    `suites`: the suite names the default branch's config declares; a report for any
    other suite is refused (a fork could otherwise overwrite another suite's comment).

    Exit 0 when posted or when there is nothing to post, 1 when the API refused the
    comment; a refused artifact or a misconfigured workflow raises (exit 2).
    """
    event_name = environ.get("GITHUB_EVENT_NAME", "")
    if event_name != "workflow_run":
        raise ConfigError(
            f"command: comment runs in a workflow triggered by `workflow_run` "
            f"(casegate-comment.yml), not on {_shown(event_name)}"
        )
    if not report_dir:
        raise ConfigError("command: comment needs `report-dir`: the downloaded artifact's folder")
    repository = environ.get("GITHUB_REPOSITORY", "")
    if not token or not repository:
        raise ConfigError("command: comment needs `github-token` and GITHUB_REPOSITORY")
    api = PullRequests(environ.get("GITHUB_API_URL") or "https://api.github.com", token)
    try:
        artifact = read_artifact(workspace, report_dir)
        if artifact is None:
            missing = (
                f"no report in {report_dir}: the pull request's casegate run wrote none (it "
                "could not run or was cancelled; its own log says why) or it was not downloaded"
            )
            _withdraw(api, repository, event, author, missing)
            raise NothingToPost(missing)
        record, body = artifact
        if suites is not None and record.suite not in suites:
            raise refused(
                f"{report_dir}/{VERDICT}",
                f"suite {_shown(record.suite)} is not the suite of this repository's config",
            )
        number = pull_request_number(event, repository, api)
    except NothingToPost as exc:
        print(command("notice", str(exc)), flush=True)
        return 0
    except CommentError as exc:
        print(command("error", f"casegate could not find the pull request: {exc}"), flush=True)
        return EXIT_COMMENT_FAILED
    try:
        posted = api.upsert_comment(
            repository, number, marker_for(record.suite), body, author=author
        )
    except CommentError as exc:
        print(command("error", f"casegate could not write the PR comment: {exc}"), flush=True)
        return EXIT_COMMENT_FAILED
    print(
        f"pull-request comment {posted.action} on #{number} ({record.suite}: {record.verdict}): "
        f"{posted.url or posted.comment_id}",
        flush=True,
    )
    return 0
