"""The sticky comment against a loopback GitHub API: pagination, updates, failures,
and only ever casegate's own comment edited."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate.github.api import DEFAULT_AUTHOR, CommentError, GitHub, marker_for
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
    # Another suite's comment is not ours, though the same bot wrote it.
    api.add_comment(7, f"{marker_for('billing')}\nother suite", login="github-actions[bot]")
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


def test_a_persons_comment_quoting_the_marker_is_never_edited(api: FakeGitHub) -> None:
    quoted = api.add_comment(7, f"{MARKER}\n### ✅ casegate: **ship**", login="mallory")
    first = client(api).upsert_comment(REPO, 7, MARKER, f"{MARKER}\nfirst")
    second = client(api).upsert_comment(REPO, 7, MARKER, f"{MARKER}\nsecond")
    assert (first.action, second.action) == ("created", "updated")
    assert second.comment_id == first.comment_id != quoted["id"]
    assert quoted["body"] == f"{MARKER}\n### ✅ casegate: **ship**"
    assert not [seen for seen in api.writes() if seen.path.endswith(f"/{quoted['id']}")]
    assert api.comments[7][1]["user"]["login"] == DEFAULT_AUTHOR


def test_a_bot_comment_that_only_quotes_the_marker_is_not_ours(api: FakeGitHub) -> None:
    # Another workflow's bot comment may echo pull-request text, the marker included.
    echoed = api.add_comment(7, f"New comment from a contributor:\n{MARKER}", login=DEFAULT_AUTHOR)
    posted = client(api).upsert_comment(REPO, 7, MARKER, f"{MARKER}\nreport")
    assert posted.action == "created" and posted.comment_id != echoed["id"]
    assert echoed["body"] == f"New comment from a contributor:\n{MARKER}"


def test_the_author_is_the_identity_the_token_posts_as() -> None:
    with FakeGitHub(TOKEN, identity="casegate-app[bot]") as api:
        github = client(api)
        first = github.upsert_comment(REPO, 7, MARKER, "one", author="casegate-app[bot]")
        second = github.upsert_comment(REPO, 7, MARKER, "two", author="Casegate-App[bot]")
        assert (first.action, second.action) == ("created", "updated")
        # Left at github-actions[bot], the app's own comment is someone else's.
        assert github.upsert_comment(REPO, 7, MARKER, "three").action == "created"
        assert len(api.comments[7]) == 2


def test_the_marker_is_put_first_when_the_body_lacks_it(api: FakeGitHub) -> None:
    client(api).upsert_comment(REPO, 7, MARKER, "### report")
    assert api.comments[7][0]["body"] == f"{MARKER}\n### report"
    assert client(api).upsert_comment(REPO, 7, MARKER, "### again").action == "updated"


def test_a_comment_by_a_deleted_user_is_nobodys(api: FakeGitHub) -> None:
    ghost = api.add_comment(7, f"{MARKER}\nold")
    ghost["user"] = None
    assert client(api).find_comment(REPO, 7, MARKER) is None


@given(st.text())
def test_a_marker_holds_only_safe_characters(suite: str) -> None:
    marker = marker_for(suite)
    assert re.fullmatch(r"<!-- casegate:sticky-comment suite=[A-Za-z0-9._-]* -->", marker)
    assert marker.count("-->") == 1


def test_a_safe_suite_name_is_kept_as_it_is() -> None:
    assert marker_for("support.v2_eu-west") == (
        "<!-- casegate:sticky-comment suite=support.v2_eu-west -->"
    )
    assert marker_for("a -->\n<b>@c") == "<!-- casegate:sticky-comment suite=a--bc -->"


def test_deleting_a_suites_old_comments_spares_everyone_elses(api: FakeGitHub) -> None:
    other = marker_for("billing")
    for index in range(120):  # ours on the second page
        api.add_comment(7, f"chatter {index}")
    ours = api.add_comment(7, f"{MARKER}\nold", login=DEFAULT_AUTHOR)
    quoted = api.add_comment(7, f"{MARKER}\nquoted by a person", login="mallory")
    kept = api.add_comment(7, f"{other}\nanother suite's", login=DEFAULT_AUTHOR)
    assert client(api).delete_comments(REPO, 7, [MARKER]) == 1
    remaining = {comment["id"] for comment in api.comments[7]}
    assert ours["id"] not in remaining and {quoted["id"], kept["id"]} <= remaining
    assert [seen.method for seen in api.writes()] == ["DELETE"]


def test_a_refused_deletion_is_a_comment_error(api: FakeGitHub) -> None:
    api.add_comment(7, f"{MARKER}\nold", login=DEFAULT_AUTHOR)
    api.faults.append(Fault("DELETE", 404, message="Not Found"))
    with pytest.raises(CommentError, match=r"deleting comment .*HTTP 404"):
        client(api).delete_comments(REPO, 7, [MARKER])


@given(st.text())
def test_no_suites_marker_is_the_roll_ups(suite: str) -> None:
    from gate.github.rollup import ROLLUP_MARKER

    marker = marker_for(suite)
    assert not marker.startswith(ROLLUP_MARKER) and not ROLLUP_MARKER.startswith(marker)
