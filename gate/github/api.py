"""The sticky pull-request comment, through the GitHub REST API.

One comment per suite: found by a hidden marker, updated in place, created only
when absent. The API host comes from GITHUB_API_URL, so GitHub Enterprise works.

Anyone can write the marker into a comment of their own, so a comment is
casegate's only if it starts with the marker *and* its author (`user.login`)
is the identity casegate posts as: `github-actions[bot]` for the workflow's
GITHUB_TOKEN. A person's comment that quotes the marker is never edited.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any

import requests

from gate.errors import SystemCallError
from gate.systems.retry import RetryPolicy, Transient, retry_after_seconds

API_VERSION = "2022-11-28"
TIMEOUT_S = 20
#: the most comments read while looking for ours (100 per page)
MAX_PAGES = 30
#: who a comment written with the workflow's GITHUB_TOKEN is from
DEFAULT_AUTHOR = "github-actions[bot]"

_UNSAFE_IN_MARKER = re.compile(r"[^A-Za-z0-9._-]")


#: how every sticky comment's first line starts: a suite's marker, or the roll-up's
MARKER_PREFIX = "<!-- casegate:sticky-comment"
MARKER_LINE = re.compile(r"<!-- casegate:sticky-comment (suite=[A-Za-z0-9._-]*|suites) -->")


def marker_for(suite: str) -> str:
    """The hidden first line of a suite's comment, from `[A-Za-z0-9._-]` only.

    The config already refuses other suite names; stripping here too keeps a
    name from ever closing the HTML comment (`-->`) or faking another marker.
    """
    return f"<!-- casegate:sticky-comment suite={_UNSAFE_IN_MARKER.sub('', suite)} -->"


def _is_ours(comment: dict[str, Any], marker: str, author: str = DEFAULT_AUTHOR) -> bool:
    """Whether `comment` is the one casegate keeps: it starts with `marker`, by `author`."""
    login = (comment.get("user") or {}).get("login") or ""
    body = comment.get("body") or ""
    # Logins compare without case, as GitHub's do; an unknown author (a deleted user) is nobody.
    return body.startswith(marker) and bool(login) and login.casefold() == author.casefold()


class CommentError(Exception):
    """The comment could not be written; the gate's verdict stands regardless."""


@dataclass(frozen=True, slots=True)
class Posted:
    action: str  # "created" | "updated"
    comment_id: int
    url: str


def _rate_limit_wait(response: requests.Response) -> float | None:
    waited = retry_after_seconds(dict(response.headers))
    if waited is not None:
        return waited
    if response.headers.get("x-ratelimit-remaining") == "0":
        reset = response.headers.get("x-ratelimit-reset", "")
        if reset.isdigit():
            return max(0.0, int(reset) - time.time())
    return None


def _describe(response: requests.Response) -> str:
    try:
        message = response.json().get("message", "")
    except ValueError:
        message = response.text[:200]
    return f"HTTP {response.status_code} {message}".strip()


class GitHub:
    def __init__(
        self,
        api_url: str,
        token: str,
        *,
        max_retries: int = 3,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.session = requests.Session()
        # No ~/.netrc, proxy variables or CA overrides from the environment: files the
        # checked-out code could have written must not change where the token goes.
        self.session.trust_env = False
        self.session.headers.update(
            {
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": API_VERSION,
                "User-Agent": "casegate-action",
            }
        )
        # Rate-limit waits can be long; past this the comment is given up, not the check.
        self.retry = RetryPolicy(max_retries, initial_s=1.0, max_backoff_s=30.0, sleep=sleep)

    def _request(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        def attempt() -> requests.Response:
            try:
                response = self.session.request(method, url, timeout=TIMEOUT_S, **kwargs)
            except requests.RequestException as exc:
                raise Transient(f"cannot reach the GitHub API: {type(exc).__name__}") from None
            if response.status_code >= 500:
                raise Transient(_describe(response), _rate_limit_wait(response))
            if response.status_code in (403, 429):
                # A secondary rate limit says so with retry-after or a spent quota;
                # a plain 403 (a fork's read-only token) is final.
                waited = _rate_limit_wait(response)
                if waited is not None:
                    raise Transient(_describe(response), waited)
            return response

        try:
            return self.retry.call(attempt)
        except SystemCallError as exc:
            raise CommentError(str(exc)) from None

    def _check(self, response: requests.Response, doing: str) -> Any:
        if response.status_code >= 300:
            hint = ""
            if response.status_code in (401, 403, 404):
                hint = (
                    " (the token cannot write here: pull requests from forks get a read-only "
                    "token, and the workflow needs `permissions: pull-requests: write`)"
                )
            raise CommentError(f"{doing}: {_describe(response)}{hint}")
        return response.json()

    def _comments(self, repository: str, number: int) -> Iterator[dict[str, Any]]:
        """The pull request's comments, page by page (at most MAX_PAGES)."""
        url: str | None = f"{self.api_url}/repos/{repository}/issues/{number}/comments"
        params: dict[str, Any] | None = {"per_page": 100}
        for _ in range(MAX_PAGES):
            if url is None:
                break
            response = self._request("GET", url, params=params)
            yield from self._check(response, "listing the pull request's comments")
            url = response.links.get("next", {}).get("url")
            params = None  # the next link carries its own query

    def find_comment(
        self, repository: str, number: int, marker: str, *, author: str = DEFAULT_AUTHOR
    ) -> dict[str, Any] | None:
        """The first comment that starts with `marker` and was written by `author`."""
        for comment in self._comments(repository, number):
            if _is_ours(comment, marker, author):
                return dict(comment)
        return None

    def delete_comments(
        self,
        repository: str,
        number: int,
        markers: Collection[str],
        *,
        author: str = DEFAULT_AUTHOR,
    ) -> int:
        """Delete the comments that start with one of `markers`, written by `author`; how many.

        A roll-up replaces the comments its suites had of their own (gate.github.rollup).
        """
        found = [
            comment["id"]
            for comment in self._comments(repository, number)
            if any(_is_ours(comment, marker, author) for marker in markers)
        ]
        for comment_id in found:
            url = f"{self.api_url}/repos/{repository}/issues/comments/{int(comment_id)}"
            response = self._request("DELETE", url)
            if response.status_code >= 300:
                raise CommentError(f"deleting comment {comment_id}: {_describe(response)}")
        return len(found)

    def rewrite_ours(
        self,
        repository: str,
        number: int,
        text: str,
        *,
        author: str = DEFAULT_AUTHOR,
        markers: Collection[str] | None = None,
    ) -> int:
        """Every casegate comment of `author` on the pull request, rewritten to `text` below its
        own marker line (kept, so the next verdict replaces it again); how many.

        A comment whose first line is not exactly a casegate marker is left alone, and so is
        one whose marker is not among `markers` when they are given (another suite's step).
        """
        found = [
            comment
            for comment in self._comments(repository, number)
            if _is_ours(comment, MARKER_PREFIX, author)
            and MARKER_LINE.fullmatch(first := (comment.get("body") or "").split("\n", 1)[0])
            and (markers is None or first in markers)
        ]
        for comment in found:
            marker = str(comment["body"]).split("\n", 1)[0]
            url = f"{self.api_url}/repos/{repository}/issues/comments/{int(comment['id'])}"
            self._check(
                self._request("PATCH", url, json={"body": f"{marker}\n{text}"}),
                "rewriting the comment",
            )
        return len(found)

    def upsert_comment(
        self,
        repository: str,
        number: int,
        marker: str,
        body: str,
        *,
        author: str = DEFAULT_AUTHOR,
    ) -> Posted:
        """Update casegate's comment (see `find_comment`), or create it when there is none.

        `author` is the login the token posts as; give it when the token is not
        the workflow's GITHUB_TOKEN (a personal access token, a GitHub App's).
        The body is stored with `marker` as its first line, so the next run finds it.
        """
        if not body.startswith(marker):
            body = f"{marker}\n{body}"
        existing = self.find_comment(repository, number, marker, author=author)
        if existing is not None:
            url = f"{self.api_url}/repos/{repository}/issues/comments/{existing['id']}"
            data = self._check(
                self._request("PATCH", url, json={"body": body}), "updating the comment"
            )
            return Posted("updated", int(data["id"]), str(data.get("html_url", "")))
        url = f"{self.api_url}/repos/{repository}/issues/{number}/comments"
        data = self._check(self._request("POST", url, json={"body": body}), "creating the comment")
        return Posted("created", int(data["id"]), str(data.get("html_url", "")))
