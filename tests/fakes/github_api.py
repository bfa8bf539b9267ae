"""A loopback stand-in for the GitHub REST API endpoints the Action uses.

- `GET /repos/{owner}/{repo}/issues/{number}/comments` with `per_page`/`page`
  and a `Link` header, as GitHub paginates
- `POST /repos/{owner}/{repo}/issues/{number}/comments`
- `PATCH` and `DELETE /repos/{owner}/{repo}/issues/comments/{id}`
- `GET /repos/{owner}/{repo}/pulls` with `state` and `head` (`owner:branch`), as
  the comment workflow finds a fork's pull request
- `GET /repos/{owner}/{repo}/issues` with `labels`, `creator`, `state`, `per_page`/`page`
  (pull requests listed too, as GitHub does), `POST /repos/{owner}/{repo}/issues`
  and `PATCH /repos/{owner}/{repo}/issues/{number}`, for the drift issue; an issue's
  comments are the `comments` of its number

It checks the bearer token (401 "Bad credentials" otherwise), can act as a
fork's read-only token (403 on writes), and answers scripted faults
(5xx, 404, 422, rate limits with their headers) in order, per method.

Every comment carries `user.login`, as GitHub's do: the token's own comments
are from `identity` (`github-actions[bot]`, the workflow token's), and a test
seeds anyone else's with `add_comment(..., login=...)`. Like a maintainer's
token, it lets any comment be edited: whether casegate edits only its own is
what the tests check.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.loopback import LoopbackServer, QuietHandler

LIST = re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$")
ONE = re.compile(r"^/repos/([^/]+/[^/]+)/issues/comments/(\d+)$")
PULLS = re.compile(r"^/repos/([^/]+/[^/]+)/pulls$")
ISSUES = re.compile(r"^/repos/([^/]+/[^/]+)/issues$")
ISSUE = re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)$")
#: GitHub refuses an issue or comment body longer than this (HTTP 422)
BODY_LIMIT = 65_536
#: what PATCH /issues/{number} changes here
EDITABLE = frozenset({"title", "body", "state", "state_reason"})


@dataclass
class Fault:
    method: str
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "fault"


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeGitHub(LoopbackServer):
    def __init__(
        self, token: str, *, read_only: bool = False, identity: str = "github-actions[bot]"
    ) -> None:
        self.token = token
        self.read_only = read_only
        #: the login the token posts as
        self.identity = identity
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.pulls: list[dict[str, Any]] = []
        self.issues: list[dict[str, Any]] = []
        self.faults: list[Fault] = []
        self.seen: list[Seen] = []
        self._next_id = 1000
        super().__init__()

    def add_comment(self, number: int, body: str, login: str = "someone") -> dict[str, Any]:
        with self._lock:
            self._next_id += 1
            comment = {
                "id": self._next_id,
                "body": body,
                "user": {"login": login, "type": "Bot" if login.endswith("[bot]") else "User"},
                "html_url": f"https://github.example/pull/{number}#issuecomment-{self._next_id}",
            }
            self.comments.setdefault(number, []).append(comment)
            return comment

    def add_pull(
        self, number: int, head_sha: str, head_repository: str, branch: str, state: str = "open"
    ) -> dict[str, Any]:
        """A pull request whose head is `branch` of `head_repository` (a fork's, or this one)."""
        pull = {
            "number": number,
            "state": state,
            "head": {
                "sha": head_sha,
                "ref": branch,
                "label": f"{head_repository.partition('/')[0]}:{branch}",
                "repo": {"full_name": head_repository},
            },
        }
        with self._lock:
            self.pulls.append(pull)
        return pull

    def add_issue(
        self,
        body: str,
        *,
        labels: tuple[str, ...] = (),
        login: str = "someone",
        title: str = "an issue",
        state: str = "open",
        pull_request: bool = False,
    ) -> dict[str, Any]:
        """An issue (or, with `pull_request`, a pull request as the issues endpoint lists it)."""
        with self._lock:
            number = len(self.issues) + 1
            issue: dict[str, Any] = {
                "number": number,
                "title": title,
                "body": body,
                "state": state,
                "state_reason": None,
                "labels": [{"name": name} for name in labels],
                "user": {"login": login, "type": "Bot" if login.endswith("[bot]") else "User"},
                "html_url": f"https://github.example/issues/{number}",
            }
            if pull_request:
                issue["pull_request"] = {"url": f"https://github.example/pulls/{number}"}
            self.issues.append(issue)
            return issue

    def writes(self) -> list[Seen]:
        return [seen for seen in self.seen if seen.method in ("POST", "PATCH", "DELETE")]

    def handler(self) -> type[QuietHandler]:
        api = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

            def do_PATCH(self) -> None:
                self._serve("PATCH")

            def do_DELETE(self) -> None:
                self._serve("DELETE")

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                parts = urlsplit(self.path)
                with api._lock:
                    api.seen.append(Seen(method, self.path, dict(self.headers), body))
                    fault = next((f for f in api.faults if f.method == method), None)
                    if fault is not None:
                        api.faults.remove(fault)
                if self.headers.get("authorization") != f"Bearer {api.token}":
                    self._send(401, {"message": "Bad credentials"})
                elif fault is not None:
                    self._send(fault.status, {"message": fault.message}, fault.headers)
                elif method != "GET" and api.read_only:
                    self._send(403, {"message": "Resource not accessible by integration"})
                elif len((body or {}).get("body") or "") > BODY_LIMIT:
                    self._send(422, {"message": "Validation Failed: body is too long"})
                elif (match := LIST.match(parts.path)) and method == "GET":
                    self._list(int(match.group(2)), parse_qs(parts.query))
                elif (match := LIST.match(parts.path)) and method == "POST":
                    self._send(
                        201, api.add_comment(int(match.group(2)), body["body"], api.identity)
                    )
                elif (match := ONE.match(parts.path)) and method == "PATCH":
                    self._update(int(match.group(2)), body["body"])
                elif (match := ONE.match(parts.path)) and method == "DELETE":
                    self._delete(int(match.group(2)))
                elif PULLS.match(parts.path) and method == "GET":
                    self._pulls(parse_qs(parts.query))
                elif ISSUES.match(parts.path) and method == "GET":
                    self._issues(parse_qs(parts.query))
                elif ISSUES.match(parts.path) and method == "POST":
                    labels = tuple(body.get("labels") or ())
                    created = api.add_issue(
                        body.get("body") or "",
                        labels=labels,
                        login=api.identity,
                        title=body["title"],
                    )
                    self._send(201, created)
                elif (match := ISSUE.match(parts.path)) and method == "PATCH":
                    self._edit_issue(int(match.group(2)), body)
                else:
                    self._send(404, {"message": "Not Found"})

            def _list(self, number: int, query: dict[str, list[str]]) -> None:
                per_page = int(query.get("per_page", ["30"])[0])
                page = int(query.get("page", ["1"])[0])
                comments = api.comments.get(number, [])
                chunk = comments[(page - 1) * per_page : page * per_page]
                headers = {}
                last = max(1, -(-len(comments) // per_page))
                if page < last:
                    base = f"{api.url}{urlsplit(self.path).path}?per_page={per_page}"
                    headers["link"] = (
                        f'<{base}&page={page + 1}>; rel="next", <{base}&page={last}>; rel="last"'
                    )
                self._send(200, chunk, headers)

            def _pulls(self, query: dict[str, list[str]]) -> None:
                # GitHub filters by `head` only in the `owner:branch` form, and state defaults to open.
                state = query.get("state", ["open"])[0]
                head = query.get("head", [None])[0]
                pulls = [
                    pull
                    for pull in api.pulls
                    if state in ("all", pull["state"])
                    and (head is None or pull["head"]["label"] == head)
                ]
                self._send(200, pulls)

            def _issues(self, query: dict[str, list[str]]) -> None:
                # GitHub: every label named must be on the issue; state defaults to open.
                state = query.get("state", ["open"])[0]
                wanted = {n for n in query.get("labels", [""])[0].split(",") if n}
                creator = query.get("creator", [None])[0]
                found = [
                    issue
                    for issue in api.issues
                    if state in ("all", issue["state"])
                    and wanted <= {label["name"] for label in issue["labels"]}
                    and creator in (None, issue["user"]["login"])
                ]
                per_page = int(query.get("per_page", ["30"])[0])
                page = int(query.get("page", ["1"])[0])
                headers = {}
                last = max(1, -(-len(found) // per_page))
                if page < last:
                    base = f"{api.url}{urlsplit(self.path).path}?{urlsplit(self.path).query}"
                    base = re.sub(r"&page=\d+", "", base)
                    headers["link"] = f'<{base}&page={page + 1}>; rel="next"'
                self._send(200, found[(page - 1) * per_page : page * per_page], headers)

            def _edit_issue(self, number: int, fields: dict[str, Any]) -> None:
                for issue in api.issues:
                    if issue["number"] == number:
                        issue.update({k: v for k, v in fields.items() if k in EDITABLE})
                        self._send(200, issue)
                        return
                self._send(404, {"message": "Not Found"})

            def _update(self, comment_id: int, text: str) -> None:
                for comments in api.comments.values():
                    for comment in comments:
                        if comment["id"] == comment_id:
                            comment["body"] = text
                            self._send(200, comment)
                            return
                self._send(404, {"message": "Not Found"})

            def _delete(self, comment_id: int) -> None:
                for comments in api.comments.values():
                    for comment in comments:
                        if comment["id"] == comment_id:
                            comments.remove(comment)
                            self.send_body(204, b"")
                            return
                self._send(404, {"message": "Not Found"})

            def _send(
                self, status: int, payload: Any, headers: dict[str, str] | None = None
            ) -> None:
                self.send_body(status, json.dumps(payload).encode(), headers)

        return Handler
