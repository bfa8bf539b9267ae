"""The sticky comment against a loopback GitHub API: pagination, updates, failures."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from gate.github import CommentError, GitHub, marker_for
from tests.fakes.github_api import FakeGitHub, Fault

TOKEN = "ghs_fake_token_0123456789"
REPO = "acme/shop"
MARKER = marker_for("support")


@pytest.fixture
def api() -> Iterator[FakeGitHub]:
    with FakeGitHub(TOKEN) as server:
        yield server


def client(api: FakeGitHub, token: str = TOKEN) -> GitHub:
    return GitHub(api.url, token, sleep=lambda seconds: None)


def test_creates_once_then_updates_in_place(api: FakeGitHub) -> None:
    first = client(api).upsert_comment(REPO, 7, MARKER, f"{MARKER}\nfirst")
    second = client(api).upsert_comment(REPO, 7, MARKER, f"{MARKER}\nsecond")
    assert (first.action, second.action) == ("created", "updated")
    assert first.comment_id == second.comment_id
    assert [c["body"] for c in api.comments[7]] == [f"{MARKER}\nsecond"]
    request = api.seen[0]
    assert request.headers["Accept"] == "application/vnd.github+json"
    assert request.headers["X-GitHub-Api-Version"] == "2022-11-28"


def test_finds_its_comment_on_a_later_page(api: FakeGitHub) -> None:
    for index in range(150):
        api.add_comment(7, f"chatter {index}")
    ours = api.add_comment(7, f"{MARKER}\nold", login="github-actions[bot]")
    api.add_comment(7, "more chatter")
    # Another suite's comment is not ours.
    api.add_comment(7, f"{marker_for('billing')}\nother suite")
    posted = client(api).upsert_comment(REPO, 7, MARKER, f"{MARKER}\nnew")
    assert (posted.action, posted.comment_id) == ("updated", ours["id"])
    pages = [s.path for s in api.seen if s.method == "GET"]
    assert len(pages) == 2 and "page=2" in pages[1]
    assert len(api.comments[7]) == 153


def test_a_forks_read_only_token_is_a_comment_error_with_the_reason() -> None:
    with FakeGitHub(TOKEN, read_only=True) as api:
        with pytest.raises(CommentError, match=r"403 Resource not accessible.*read-only token"):
            client(api).upsert_comment(REPO, 7, MARKER, "body")
        assert api.comments == {}


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (Fault("POST", 422, message="Validation Failed"), "422 Validation Failed"),
        (Fault("GET", 404, message="Not Found"), "404 Not Found"),
    ],
)
def test_client_errors_are_final(api: FakeGitHub, fault: Fault, message: str) -> None:
    api.faults.append(fault)
    with pytest.raises(CommentError, match=message):
        client(api).upsert_comment(REPO, 7, MARKER, "body")


def test_bad_credentials(api: FakeGitHub) -> None:
    with pytest.raises(CommentError, match="401 Bad credentials"):
        client(api, token="wrong").upsert_comment(REPO, 7, MARKER, "body")


@pytest.mark.parametrize(
    "fault",
    [
        Fault("POST", 502),
        Fault("GET", 503, {"retry-after": "0"}),
        Fault("POST", 403, {"retry-after": "2"}, "You have exceeded a secondary rate limit"),
        Fault("GET", 403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "0"}),
        Fault("POST", 429, {"retry-after": "1"}),
    ],
    ids=["502", "503", "secondary-limit", "primary-limit", "429"],
)
def test_server_errors_and_rate_limits_are_retried(api: FakeGitHub, fault: Fault) -> None:
    api.faults.append(fault)
    slept: list[float] = []
    github = GitHub(api.url, TOKEN, sleep=slept.append)
    assert github.upsert_comment(REPO, 7, MARKER, "body").action == "created"
    assert len(slept) == 1
    if "retry-after" in fault.headers:
        assert slept == [float(fault.headers["retry-after"])]


def test_the_rate_limit_reset_time_is_honoured(api: FakeGitHub) -> None:
    reset = int(time.time()) + 5
    api.faults.append(
        Fault("GET", 403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)})
    )
    slept: list[float] = []
    GitHub(api.url, TOKEN, sleep=slept.append).upsert_comment(REPO, 7, MARKER, "body")
    assert 3 <= slept[0] <= 5


def test_persistent_outage_gives_up_with_a_comment_error(api: FakeGitHub) -> None:
    api.faults.extend([Fault("GET", 500)] * 4)
    with pytest.raises(CommentError, match=r"HTTP 500.*gave up after 4 attempts"):
        client(api).upsert_comment(REPO, 7, MARKER, "body")
