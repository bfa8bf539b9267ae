"""The held-out slice in the Action: part of the ruler, scored by the gate's own process.

The base commit of the example workspace declares a slice of four held-out cases
(`holdout_max_drop: 0.1`) and a baseline that scored it. Each pull request tries
one way around it; the Action runs as the runner runs it (tests/fakes/actions.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.fakes.actions import PULL_NUMBER, REPO, TOKEN, Runner, git, open_pull_request
from tests.holdout.test_holdout_helpers import KEY_TEXT, OTHER_KEY, casegate, held_case, seal_slice

CONFIGS = ("casegate.yml", "casegate.candidate.yml")
CASES = [
    held_case("ho-refund", "Can I get my money back?", contains="refund"),
    held_case("ho-track", "Where is my parcel?", contains="tracking"),
    held_case("ho-tone", "You are useless.", not_contains="useless"),
    held_case("ho-hours", "When are you open?", regex="(?i)monday"),
]
GOOD = {
    "ho-refund": "A refund goes back to your card.",
    "ho-track": "Use the tracking link.",
    "ho-tone": "Sorry about that.",
    "ho-hours": "Monday to Friday.",
}
WORSE = {**GOOD, "ho-refund": "No.", "ho-track": "No."}


def with_slice(runner: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    """Declare the slice on the base commit, seal it, and refresh the baseline with it."""
    workspace = runner.workspace
    for name in CONFIGS:
        path = workspace / name
        path.write_text(
            path.read_text().replace(
                "  block_on_errors: true\n", "  block_on_errors: true\n  holdout_max_drop: 0.1\n"
            )
            + "holdout: holdout/support\n"
        )
    seal_slice([workspace / name for name in CONFIGS], CASES, GOOD)
    refreshed = casegate("baseline", cwd=workspace, key=KEY_TEXT)
    assert refreshed.returncode == 0, refreshed.stderr
    git("add", "-A", cwd=workspace)
    git("commit", "-qm", "a held-out slice", cwd=workspace)
    runner.base_sha = git("rev-parse", "HEAD", cwd=workspace)
    monkeypatch.setenv("CASEGATE_HOLDOUT_KEY", KEY_TEXT)


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def test_the_gate_process_scores_the_slice_and_reports_counts(
    runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_slice(runner, monkeypatch)
    open_pull_request(runner.workspace, lambda root: None)
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    body = runner.api.comments[PULL_NUMBER][0]["body"]
    for text in (body, runner.summary(), finished.stdout):
        assert "held-out slice: 4/4 pass (100.0%)" in text
        assert "0 regression(s), 0 fix(es)" in text
    results = json.loads((runner.workspace / ".casegate" / "support-results.json").read_text())
    assert results["holdout"]["reads"] == 2  # the baseline's scoring, and this one


def test_a_worse_slice_blocks_under_holdout_max_drop(
    runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_slice(runner, monkeypatch)
    # A key holder re-recorded the slice for a system that answers it worse: recordings are
    # the pull request's claim, so this is no ruler change; the rule judges it.
    open_pull_request(
        runner.workspace,
        lambda root: seal_slice(
            [root / name for name in CONFIGS], CASES, [WORSE, WORSE], cases_too=False
        ),
    )
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert "the held-out pass rate fell from 100.0% to 50.0% on the 4 held-out" in finished.stdout
    assert "loosens the ruler" not in finished.stdout
    assert "2 regression(s), 0 fix(es)" in runner.api.comments[PULL_NUMBER][0]["body"]
    assert runner.outputs()["verdict"] == "block"


@pytest.mark.parametrize(
    ("attack", "described"),
    [
        ("remove the slice", "held-out slice: removed (was holdout/support)"),
        ("rename its variable", "key_env CASEGATE_HOLDOUT_KEY → UNSET_SLICE_KEY"),
        ("raise the allowed drop", "holdout_max_drop 0.1 → 1"),
        ("stop the read warning", "max_reads 20 → none"),
        ("delete the sealed cases", "holdout/support/slice.sealed edited, replaced or deleted"),
        ("replace the sealed cases", "holdout/support/slice.sealed edited, replaced or deleted"),
    ],
)
def test_a_pull_request_that_loosens_the_slice_blocks(
    runner: Runner, monkeypatch: pytest.MonkeyPatch, attack: str, described: str
) -> None:
    with_slice(runner, monkeypatch)
    config = "casegate.yml"

    def edit(root: Path) -> None:
        path = root / config
        if attack == "remove the slice":
            _replace(path, "holdout: holdout/support\n", "")
        elif attack == "rename its variable":
            _replace(
                path,
                "holdout: holdout/support\n",
                "holdout: {path: holdout/support, key_env: UNSET_SLICE_KEY}\n",
            )
        elif attack == "raise the allowed drop":
            _replace(path, "holdout_max_drop: 0.1", "holdout_max_drop: 1.0")
        elif attack == "stop the read warning":
            _replace(
                path,
                "holdout: holdout/support\n",
                "holdout: {path: holdout/support, max_reads: null}\n",
            )
        elif attack == "delete the sealed cases":
            (root / "holdout" / "support" / "slice.sealed").unlink()
        else:  # only the easy cases, sealed by someone who holds the key
            easy = [held_case("ho-easy", "hi", contains="hi")]
            seal_slice([root / name for name in CONFIGS], easy, {"ho-easy": "hi"})

    open_pull_request(runner.workspace, edit)
    finished = runner.run(config=config)
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert described in finished.stdout
    assert "loosens the ruler" in finished.stdout
    body = runner.api.comments[PULL_NUMBER][0]["body"]
    assert "Ruler changes" in body
    if attack not in ("replace the sealed cases",):
        # Whatever the pull request says, the base's slice (its four cases) is what is scored.
        assert "held-out slice: 4/4 pass" in body, body


def test_the_label_accepts_removing_the_slice(
    runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.fakes.actions import pull_request_event

    with_slice(runner, monkeypatch)
    open_pull_request(
        runner.workspace,
        lambda root: _replace(root / "casegate.yml", "holdout: holdout/support\n", ""),
    )
    event = pull_request_event(
        runner.base_sha, ["casegate:accept-ruler-change"], labeled_by="maintainer-m"
    )
    finished = runner.run(config="casegate.yml", event=event)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "held-out slice: removed" in finished.stdout and "accepted" in finished.stdout


def test_a_fork_without_the_key_skips_the_slice_with_a_notice(
    runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_slice(runner, monkeypatch)
    monkeypatch.delenv("CASEGATE_HOLDOUT_KEY")
    open_pull_request(runner.workspace, lambda root: None)
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    body = runner.api.comments[PULL_NUMBER][0]["body"]
    assert "held-out slice skipped: CASEGATE\\_HOLDOUT\\_KEY is not set" in body
    assert "holdout\\_max\\_drop not applied" in body
    candidate = runner.run()  # the candidate config: it still blocks on its own merits
    assert candidate.returncode == 1


def test_a_wrong_key_or_a_corrupted_recording_cannot_judge(
    runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_slice(runner, monkeypatch)
    monkeypatch.setenv("CASEGATE_HOLDOUT_KEY", OTHER_KEY.text())
    open_pull_request(runner.workspace, lambda root: None)
    wrong = runner.run(config="casegate.yml")
    assert wrong.returncode == 2
    assert "sealed with another key" in wrong.stdout
    assert OTHER_KEY.text() not in wrong.stdout + wrong.stderr + runner.summary()


def test_the_suites_code_never_sees_the_key(
    runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_slice(runner, monkeypatch)
    # Live: a replayed check imports none of the pull request's code; a live one imports
    # its checks in the supervised run.
    shutil.copytree(REPO / "examples", runner.workspace / "examples")
    leak = runner.drop_box() / "leak.txt"
    (runner.workspace / "suite_checks.py").write_text("def polite(text, case):\n    return True\n")
    _replace(
        runner.workspace / "cases" / "support" / "shipping.yaml",
        '    contains: "3–7 business days"\n',
        '    contains: "3–7 business days"\n    check: suite_checks:polite\n',
    )
    assert casegate("baseline", cwd=runner.workspace, key=KEY_TEXT).returncode == 0
    git("add", "-A", cwd=runner.workspace)
    git("commit", "-qm", "a custom check", cwd=runner.workspace)
    runner.base_sha = git("rev-parse", "HEAD", cwd=runner.workspace)

    def snoop(root: Path) -> None:
        (root / "suite_checks.py").write_text(
            "import os\n"
            f"open({str(leak)!r}, 'a').write(repr(dict(os.environ)))\n"
            "try:\n"
            "    parent = open(f'/proc/{os.getppid()}/environ', 'rb').read()\n"
            "except OSError as exc:\n"
            "    parent = repr(exc).encode()\n"
            f"open({str(leak)!r}, 'ab').write(parent)\n"
            "def polite(text, case):\n    return True\n"
        )

    open_pull_request(runner.workspace, snoop)
    finished = runner.run(config="casegate.yml", mode="live")
    # The gate held the key (a python system's slice is scored only in replay, where no
    # code of the suite runs); the suite's code ran beside it.
    assert "held-out slice not scored: outside replay" in finished.stdout, finished.stdout
    seen = leak.read_text()
    assert KEY_TEXT not in seen and "CASEGATE_HOLDOUT_KEY" not in seen
    assert TOKEN not in seen
