"""A fork's pull request gets its comment: the check writes the artifact, a workflow_run posts it.

End to end as the runner runs the Action (`python -I -m gate.github.action`): the check
with `report-dir` on the example suite writes the real artifact once; each test
then hands a copy of it, as actions/download-artifact leaves it, to
`command: comment` under a `workflow_run` event, against the loopback GitHub.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate.github.api import marker_for
from gate.github.forkcomment import REPORT_LIMIT, report_problem
from gate.reporting.markup import block, cell, code
from tests.fakes.actions import (
    PULL_NUMBER,
    TOKEN,
    Runner,
    acted_on,
    build_workspace,
    open_to_the_sandbox,
)
from tests.fakes.github_api import FakeGitHub

REPORT_DIR = "casegate-report"
REPOSITORY_ID = 4242
FORK = "contributor/shop"
BRANCH = "shorter-prompt"
HEAD_SHA = "5eed" * 10
MARKER = marker_for("support")


@pytest.fixture(scope="module")
def check(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, bytes], str]:
    """What the check writes to `report-dir` on a same-repository pull request, and the
    comment it posts directly."""
    # The check runs the suite as the sandbox's user, who must be able to read it, as on a
    # runner; pytest's own folders are closed to other users.
    root = Path(tempfile.mkdtemp(prefix="casegate-test-"))
    open_to_the_sandbox(root)
    base = build_workspace(root / "workspace")
    (root / "home").mkdir()
    with FakeGitHub(TOKEN) as api:
        finished = Runner(root, root / "workspace", api, base).run(report_dir=REPORT_DIR)
        assert finished.returncode == 1, finished.stdout + finished.stderr  # it blocks
        posted = str(api.comments[PULL_NUMBER][0]["body"])
    folder = root / "workspace" / REPORT_DIR
    written = {path.name: path.read_bytes() for path in folder.iterdir()}
    shutil.rmtree(root)
    return written, posted


@pytest.fixture
def runner(tmp_path: Path, check: tuple[dict[str, bytes], str]) -> Iterator[Runner]:
    """The comment workflow's job: the default branch's checkout and the downloaded artifact."""
    build_workspace(tmp_path / "workspace")
    folder = tmp_path / "workspace" / REPORT_DIR
    folder.mkdir(parents=True)
    for name, data in check[0].items():
        (folder / name).write_bytes(data)
    (tmp_path / "home").mkdir()
    with FakeGitHub(TOKEN) as api:
        api.add_pull(PULL_NUMBER, HEAD_SHA, FORK, BRANCH)
        yield Runner(tmp_path, tmp_path / "workspace", api, base_sha="")


def workflow_run_event(
    pull_requests: list[dict[str, Any]] | None = None, head_repository: str = FORK
) -> dict[str, object]:
    """`workflow_run` completed, for a pull request's casegate run; a fork's lists no pull
    request."""
    return {
        "action": "completed",
        "repository": {"id": REPOSITORY_ID, "full_name": "acme/shop"},
        "workflow_run": {
            "id": 987654,
            "name": "casegate",
            "event": "pull_request",
            "conclusion": "failure",
            "head_sha": HEAD_SHA,
            "head_branch": BRANCH,
            "head_repository": {"full_name": head_repository},
            "pull_requests": pull_requests or [],
        },
    }


def listed(number: int, repository_id: int) -> dict[str, Any]:
    """An entry of `workflow_run.pull_requests`, as GitHub gives it for a same-repository one."""
    return {
        "number": number,
        "head": {"ref": BRANCH, "sha": HEAD_SHA, "repo": {"id": REPOSITORY_ID}},
        "base": {"ref": "main", "sha": "ba5e" * 10, "repo": {"id": repository_id}},
    }


def post(
    runner: Runner, event: dict[str, object] | None = None
) -> subprocess.CompletedProcess[str]:
    return runner.run(
        "workflow_run", event or workflow_run_event(), command="comment", report_dir=REPORT_DIR
    )


def artifact(runner: Runner) -> Path:
    return runner.workspace / REPORT_DIR


# --- the check's half ------------------------------------------------------------------


def test_the_check_writes_the_posted_comment_and_its_verdict(
    check: tuple[dict[str, bytes], str],
) -> None:
    files, posted = check
    assert sorted(files) == ["report.md", "verdict.json"]
    assert files["report.md"].decode() == posted
    assert json.loads(files["verdict.json"]) == {
        "schema": "casegate.comment/1",
        "suite": "support",
        "verdict": "block",
    }
    assert list(json.loads(files["verdict.json"])) == ["schema", "suite", "verdict"]


# --- the comment workflow's half -------------------------------------------------------


def test_a_forks_report_creates_the_comment_and_a_second_run_updates_it(
    runner: Runner, check: tuple[dict[str, bytes], str]
) -> None:
    first = post(runner)
    assert first.returncode == 0, first.stdout + first.stderr
    assert f"pull-request comment created on #{PULL_NUMBER} (support: block)" in first.stdout
    [comment] = runner.api.comments[PULL_NUMBER]
    assert comment["body"] == check[1]
    # The fork's pull request is found by its branch and commit: the event lists none.
    lookup = runner.api.seen[0]
    assert lookup.method == "GET" and lookup.path.startswith("/repos/acme/shop/pulls?")
    assert "head=contributor%3Ashorter-prompt" in lookup.path

    second = post(runner)
    assert second.returncode == 0
    assert [seen.method for seen in runner.api.writes()] == ["POST", "PATCH"]
    assert len(runner.api.comments[PULL_NUMBER]) == 1
    assert TOKEN not in first.stdout + first.stderr + second.stdout + second.stderr


def test_a_same_repository_pull_request_comes_from_the_event(runner: Runner) -> None:
    event = workflow_run_event([listed(PULL_NUMBER, REPOSITORY_ID)], head_repository="acme/shop")
    finished = post(runner, event)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert [seen.method for seen in runner.api.seen] == ["GET", "POST"]
    assert "/pulls" not in runner.api.seen[0].path  # no lookup: the comments list
    assert len(runner.api.comments[PULL_NUMBER]) == 1


def test_a_listed_pull_request_into_another_repository_is_not_the_one(runner: Runner) -> None:
    event = workflow_run_event([listed(99, repository_id=1)])
    finished = post(runner, event)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert 99 not in runner.api.comments
    assert len(runner.api.comments[PULL_NUMBER]) == 1


def test_someone_elses_comment_quoting_the_marker_is_left_alone(runner: Runner) -> None:
    forged = runner.api.add_comment(PULL_NUMBER, MARKER + "\nall good, ship it", login="mallory")
    finished = post(runner)
    assert finished.returncode == 0
    assert [seen.method for seen in runner.api.writes()] == ["POST"]
    assert forged["body"] == MARKER + "\nall good, ship it"


def test_no_artifact_is_a_notice_and_nothing_is_posted(runner: Runner) -> None:
    for path in artifact(runner).iterdir():
        path.unlink()
    artifact(runner).rmdir()  # download-artifact found none: casegate could not run
    finished = post(runner)
    assert finished.returncode == 0
    assert acted_on(finished.stdout)[0].startswith("::notice::no report in casegate-report")
    assert runner.api.writes() == []  # no comment to withdraw (the pull request is looked up)


def test_a_pull_request_pushed_to_again_keeps_the_newer_comment(runner: Runner) -> None:
    runner.api.pulls[0]["head"]["sha"] = "0dd" + "0" * 37  # a newer run will comment
    finished = post(runner)
    assert finished.returncode == 0
    assert "::notice::no open pull request has the head 5eed5eed5eed" in finished.stdout
    assert runner.api.writes() == []


def test_a_comment_the_api_refuses_fails_the_comment_run(runner: Runner) -> None:
    runner.api.read_only = True
    finished = post(runner)
    assert finished.returncode == 1
    assert "::error::casegate could not write the PR comment: creating the comment" in (
        finished.stdout
    )


def test_comment_runs_only_under_workflow_run(runner: Runner) -> None:
    finished = runner.run(command="comment", report_dir=REPORT_DIR)  # on pull_request
    assert finished.returncode == 2
    assert "command: comment runs in a workflow triggered by `workflow_run`" in finished.stdout
    assert runner.api.seen == []


# --- the artifact is untrusted ---------------------------------------------------------


def _report(folder: Path) -> str:
    return (folder / "report.md").read_text(encoding="utf-8")


def _append(text: str) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        (folder / "report.md").write_text(_report(folder) + text, encoding="utf-8")

    return edit


def _extra_file(folder: Path) -> None:
    (folder / "notes.txt").write_text("hello\n")


def _report_is_a_link(folder: Path) -> None:
    outside = folder.parent / "elsewhere.md"
    (folder / "report.md").rename(outside)
    (folder / "report.md").symlink_to(outside)


def _folder_is_a_link(folder: Path) -> None:
    real = folder.parent / "real-report"
    folder.rename(real)
    folder.symlink_to(real, target_is_directory=True)


def _report_is_a_folder(folder: Path) -> None:
    (folder / "report.md").unlink()
    (folder / "report.md").mkdir()


def _oversized(folder: Path) -> None:
    report = _report(folder)
    (folder / "report.md").write_text(report + "x" * (REPORT_LIMIT + 1 - len(report)))


def _not_utf8(folder: Path) -> None:
    (folder / "report.md").write_bytes((folder / "report.md").read_bytes() + b"\n\xff\xfe\n")


def _verdict(**changes: object) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        document = json.loads((folder / "verdict.json").read_text())
        document.update(changes)
        (folder / "verdict.json").write_text(json.dumps(document))

    return edit


def _another_suite(folder: Path) -> None:
    """A consistent report and verdict for a suite this repository does not declare."""
    report = _report(folder).replace(MARKER, marker_for("billing"))
    (folder / "report.md").write_text(report, encoding="utf-8")
    _verdict(suite="billing")(folder)


def _verdict_is_huge(folder: Path) -> None:
    (folder / "verdict.json").write_text(" " * 5000 + (folder / "verdict.json").read_text())


@pytest.mark.parametrize(
    ("tamper", "why"),
    [
        pytest.param(
            _extra_file, "it holds 'notes.txt' besides report.md and verdict.json", id="extra-file"
        ),
        pytest.param(
            _report_is_a_link,
            "report.md: the report artifact is refused (it is a symbolic link)",
            id="symlink",
        ),
        pytest.param(_folder_is_a_link, "the folder is a symbolic link", id="folder-symlink"),
        pytest.param(_report_is_a_folder, "it is not a regular file", id="not-a-file"),
        pytest.param(_oversized, "65,537 characters, over GitHub's 65,536", id="oversized"),
        pytest.param(
            _not_utf8, "report.md: the report artifact is refused (not UTF-8", id="not-utf8"
        ),
        pytest.param(_append(f"\n{MARKER}\n"), "it holds 2 casegate markers", id="second-marker"),
        pytest.param(
            _append('\n<img src="https://tracker.example/p.png">\n'),
            "raw HTML casegate never writes",
            id="img",
        ),
        pytest.param(
            _append("\n<script>alert(1)</script>\n"), "'<script>alert(1)</script>", id="script"
        ),
        pytest.param(_append("\n<!-- a comment -->\n"), "raw HTML", id="html-comment"),
        pytest.param(_append("\n<PRE>shouted</PRE>\n"), "raw HTML", id="uppercase-tag"),
        pytest.param(_append("\ncc @maintainer\n"), "a live @mention or #reference", id="mention"),
        pytest.param(_append("\nsee #12\n"), "a live @mention or #reference", id="reference"),
        pytest.param(
            _append("\ncc &#64;maintainer\n"),
            "a character reference casegate never writes",
            id="entity",
        ),
        pytest.param(
            _verdict(pull_request=8),
            "it must hold schema, suite and verdict only",
            id="pr-number-in-artifact",
        ),
        pytest.param(
            _verdict(suite="other"),
            "it does not start with casegate's marker for the suite other",
            id="other-suite",
        ),
        pytest.param(
            _verdict(suite="support -->"), "is not a casegate suite name", id="unsafe-suite"
        ),
        pytest.param(
            _another_suite,
            "suite 'billing' is not the suite of this repository's config",
            id="undeclared-suite",
        ),
        pytest.param(
            _append("\nsee https://github.com/acme/shop/pull/12 too\n"),
            "a link to an issue or pull request",
            id="cross-reference-link",
        ),
        pytest.param(
            _verdict(schema="casegate.comment/2"), "is not casegate.comment/1", id="schema"
        ),
        pytest.param(_verdict(verdict="ship it"), "is not one of", id="verdict"),
        pytest.param(
            _verdict_is_huge,
            "verdict.json: the report artifact is refused (it is over 4,096 bytes",
            id="huge-verdict",
        ),
    ],
)
def test_a_tampered_artifact_is_refused_and_nothing_is_posted(
    runner: Runner, tamper: Callable[[Path], None], why: str
) -> None:
    tamper(artifact(runner))
    finished = post(runner)
    assert finished.returncode == 2, finished.stdout + finished.stderr
    [error] = acted_on(finished.stdout)
    assert error.startswith("::error::casegate-report") and "refused" in error
    assert why in error
    assert "Traceback" not in finished.stderr
    assert runner.api.seen == []  # refused before any call: nothing posted, nothing looked up
    assert "could not run" in runner.summary()


def test_untrusted_text_as_report_py_escapes_it_is_accepted(runner: Runner) -> None:
    # A case id, a reason or model output that quotes HTML, a mention or the marker
    # reaches the report escaped; such a report is casegate's own and is posted.
    hostile = "<img src=x onerror=alert(1)> @maintainer #12 <!-- casegate:sticky-comment -->"
    _append(f"\n{cell(hostile)}\n\n{block(hostile)}\n")(artifact(runner))
    finished = post(runner)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert len(runner.api.comments[PULL_NUMBER]) == 1


@given(st.text())
def test_any_text_as_report_py_escapes_it_passes_the_checks(text: str) -> None:
    # The rules refuse only what casegate never writes: never a genuine report.
    body = f"{MARKER}\n### casegate: **ship** — {cell(text)}\n\n{code(text)}\n\n{block(text)}\n"
    assert report_problem(body, "support") is None
