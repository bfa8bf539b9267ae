"""A pull request cannot choose its own verdict: every attack as the runner would see it.

Each test builds a repository whose base commit holds the example suite, opens a
pull request that regresses two critical cases (the committed candidate config)
and tries one way of getting "ship" anyway, then runs the Action's entrypoint as
the runner does: an isolated interpreter, the workspace as working directory, the
event of a merge-commit checkout, the loopback GitHub stand-in.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.actions import (
    PULL_NUMBER,
    TOKEN,
    Runner,
    acted_on,
    git,
    open_pull_request,
    pull_request_event,
)

REPO = Path(__file__).resolve().parents[2]
CANDIDATE = "casegate.candidate.yml"
CRITICAL = ("complaint-no-invented-discount", "shipping-no-promised-date")
ACCEPT = "casegate:accept-ruler-change"
#: the workflow commands casegate means to give; anything else in the log is an injection
ALLOWED_COMMANDS = ("::error", "::warning", "::notice", "::add-mask::", "::stop-commands::")


@pytest.fixture(scope="module")
def candidate_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The candidate's own results: what an attacker would commit as "the baseline"."""
    out = tmp_path_factory.mktemp("candidate") / "candidate.json"
    subprocess.run(
        [sys.executable, "-m", "gate", "run", "-c", CANDIDATE, "--out", str(out), "--quiet"],
        cwd=REPO,
        check=True,
    )
    return out


# --- edits a pull request can make --------------------------------------------------


def replace(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, count))


def edit_cases(root: Path, edit: Callable[[str, str], str]) -> None:
    """Apply `edit(case_id, block)` to the YAML block of each regressing critical case."""
    for name in ("complaints.yaml", "shipping.yaml"):
        path = root / "cases" / "support" / name
        blocks = re.split(r"(?m)^(?=- id: )", path.read_text())
        changed = []
        for block in blocks:
            match = re.match(r"- id: (\S+)", block)
            changed.append(
                edit(match.group(1), block) if match and match.group(1) in CRITICAL else block
            )
        path.write_text("".join(changed))


def add_field(field: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        edit_cases(
            root,
            lambda _id, block: block.replace(
                "  critical: true\n", f"  critical: true\n  {field}\n"
            ),
        )

    return edit


def turn_rule_off(root: Path) -> None:
    replace(
        root / CANDIDATE,
        "block_on_critical_regression: true",
        "block_on_critical_regression: false",
    )


def raise_tolerance(root: Path) -> None:
    replace(root / CANDIDATE, "tolerance: 0.0", "tolerance: 1.0")


def drop_critical(root: Path) -> None:
    edit_cases(root, lambda _id, block: block.replace("  critical: true\n", ""))


def delete_cases(root: Path) -> None:
    edit_cases(root, lambda _id, _block: "")


def narrow_selection(root: Path) -> None:
    replace(root / CANDIDATE, "cases: cases/support", "cases: cases/support/knowledge.yaml")


def config_min_pass_rate_zero(root: Path) -> None:
    replace(root / CANDIDATE, "concurrency: 8\n", "concurrency: 8\nmin_pass_rate: 0\n")


def loosen_expectation(root: Path) -> None:
    edit_cases(root, lambda _id, block: re.sub(r"    not_regex: .*\n", "", block))


def lower_weight(root: Path) -> None:
    replace(
        root / "cases" / "support" / "returns.yaml",
        "- id: returns-greets-by-name\n",
        "- id: returns-greets-by-name\n  weight: 0.01\n",
    )


ATTACKS: dict[str, tuple[Callable[[Path], None], str]] = {
    "gate rule switched off": (turn_rule_off, "block_on_critical_regression true → false"),
    "tolerance raised": (raise_tolerance, "tolerance 0 → 1"),
    "critical flag dropped": (drop_critical, "made non-critical"),
    "version bumped": (add_field("version: 2"), "version 1 → 2"),
    "cases deleted": (delete_cases, "removed from the selection"),
    "selection narrowed": (narrow_selection, "removed from the selection"),
    "case min_pass_rate 0": (add_field("min_pass_rate: 0"), "min_pass_rate 1 → 0"),
    "config min_pass_rate 0": (config_min_pass_rate_zero, "min_pass_rate: 1 → 0"),
    "expect loosened": (loosen_expectation, "expect changed without a version bump"),
    "weight lowered": (lower_weight, "weight 1 → 0.01"),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_loosening_edit_blocks_and_is_named(runner: Runner, attack: str) -> None:
    edit, described = ATTACKS[attack]
    open_pull_request(runner.workspace, edit)
    finished = runner.run()
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert runner.outputs()["verdict"] == "block"
    assert described in finished.stdout
    assert "loosens the ruler" in finished.stdout
    assert "Ruler changes" in runner.summary()
    assert "Ruler changes" in runner.api.comments[PULL_NUMBER][0]["body"]
    assert all(line.startswith(ALLOWED_COMMANDS) for line in acted_on(finished.stdout))


@pytest.mark.parametrize("attack", ["critical flag dropped", "case min_pass_rate 0"])
def test_the_base_criticality_and_thresholds_still_judge(runner: Runner, attack: str) -> None:
    # The verdict names the two critical regressions, not only the ruler change.
    open_pull_request(runner.workspace, ATTACKS[attack][0])
    finished = runner.run()
    assert finished.returncode == 1
    assert runner.outputs()["critical-regressions"] == "3"
    assert all(case_id in runner.summary() for case_id in CRITICAL)


def test_a_new_baseline_file_is_not_trusted(runner: Runner, candidate_results: Path) -> None:
    def point_elsewhere(root: Path) -> None:
        shutil.copy(candidate_results, root / "baselines" / "pr.json")
        replace(root / CANDIDATE, "baseline: baselines/support.json", "baseline: baselines/pr.json")

    open_pull_request(runner.workspace, point_elsewhere)
    finished = runner.run()
    assert finished.returncode == 1
    assert "baseline path: baselines/support.json → baselines/pr.json" in finished.stdout
    assert runner.outputs()["critical-regressions"] == "3"  # judged against the base's baseline


def test_a_baseline_edited_in_place_or_through_a_link_is_not_trusted(
    runner: Runner, candidate_results: Path
) -> None:
    def link(root: Path) -> None:
        shutil.copy(candidate_results, root / "baselines" / "pr.json")
        (root / "baselines" / "support.json").unlink()
        (root / "baselines" / "support.json").symlink_to("pr.json")

    open_pull_request(runner.workspace, link)
    finished = runner.run()
    assert finished.returncode == 1
    assert "baselines/support.json edited by this pull request" in finished.stdout
    assert runner.outputs()["critical-regressions"] == "3"


def test_a_baseline_input_is_a_ruler_change(runner: Runner, candidate_results: Path) -> None:
    open_pull_request(
        runner.workspace, lambda root: shutil.copy(candidate_results, root / "pr.json")
    )
    finished = runner.run(baseline="pr.json")
    assert finished.returncode == 1
    assert "baseline path: baselines/support.json → pr.json" in finished.stdout


def test_a_set_input_that_loosens_is_a_ruler_change(runner: Runner) -> None:
    open_pull_request(runner.workspace, lambda root: None)
    finished = runner.run(set="gate.block_on_critical_regression=false")
    assert finished.returncode == 1
    assert "block_on_critical_regression true → false" in finished.stdout


def test_the_label_accepts_a_loosening_change_and_it_stays_visible(runner: Runner) -> None:
    open_pull_request(runner.workspace, turn_rule_off)
    event = pull_request_event(
        runner.base_sha, labels=["needs-review", ACCEPT], labeled_by="maintainer-m"
    )
    finished = runner.run(event=event)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert runner.outputs()["verdict"] == "ship"
    assert "accepted" in finished.stdout and "maintainer-m" in finished.stdout
    body = runner.api.comments[PULL_NUMBER][0]["body"]
    assert "Ruler changes" in body and "accepted" in body


def test_the_label_name_comes_from_the_base(runner: Runner) -> None:
    def rename_label(root: Path) -> None:
        turn_rule_off(root)
        replace(
            root / CANDIDATE,
            "  block_on_errors: true\n",
            "  block_on_errors: true\n  accept_label: pr-says-ok\n",
        )

    open_pull_request(runner.workspace, rename_label)
    event = pull_request_event(runner.base_sha, ["pr-says-ok"], head_sha=runner.head_sha())
    finished = runner.run(event=event)
    assert finished.returncode == 1
    assert "accept_label casegate:accept-ruler-change → pr-says-ok" in finished.stdout


def test_tightening_is_listed_and_does_not_block(runner: Runner) -> None:
    def stricter(root: Path) -> None:
        replace(root / "casegate.yml", "tolerance: 0.0", "tolerance: 0.0\n  max_cost_increase: 0.5")

    open_pull_request(runner.workspace, stricter)
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "max_cost_increase none → 0.5" in finished.stdout
    assert "loosens the ruler" not in finished.stdout


@pytest.mark.parametrize(
    "name", ["gate/__init__.py", "tabulate.py", "yaml/__init__.py", "pydantic.py"]
)
def test_a_repository_file_cannot_stand_in_for_casegate_or_a_dependency(
    runner: Runner, name: str
) -> None:
    def shadow(root: Path) -> None:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("import sys\nprint('::set-output name=verdict::ship')\nsys.exit(0)\n")
        if name.startswith("gate/"):  # the entrypoint's own module and package, too
            (root / "gate" / "github").mkdir()
            for module in ("github/__init__.py", "github/action.py", "__main__.py"):
                (root / "gate" / module).write_text("import sys\nsys.exit(0)\n")

    open_pull_request(runner.workspace, shadow)
    finished = runner.run()
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert runner.outputs()["verdict"] == "block"
    assert "set-output" not in finished.stdout


def test_no_ruler_change_when_the_base_branch_moved_on(
    runner: Runner, candidate_results: Path
) -> None:
    # The pull request touches a README; meanwhile main refreshed its baseline. The
    # merge commit's first parent is that newer main, so nothing is a ruler change,
    # although the event's base.sha still names the older commit.
    old_base = runner.base_sha
    git("checkout", "-q", "-b", "pr-7", cwd=runner.workspace)
    (runner.workspace / "README.md").write_text("docs\n")
    git("add", "-A", cwd=runner.workspace)
    git("commit", "-qm", "docs", cwd=runner.workspace)
    git("checkout", "-q", "main", cwd=runner.workspace)
    replace(runner.workspace / "baselines" / "support.json", '"created_at":"', '"created_at":"2')
    git("commit", "-qam", "refresh the baseline", cwd=runner.workspace)
    git("checkout", "-q", "--detach", "main", cwd=runner.workspace)
    git("merge", "-q", "--no-ff", "-m", "merge", "pr-7", cwd=runner.workspace)
    event = pull_request_event(old_base, head_sha=runner.head_sha())
    finished = runner.run(config="casegate.yml", event=event)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "baseline file" not in finished.stdout
    assert "not GitHub's merge commit" not in finished.stdout


def test_a_checkout_that_is_not_a_merge_commit_says_so(runner: Runner) -> None:
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "not GitHub's merge commit" in finished.stdout


# --- user code cannot end the run with a verdict --------------------------------------


CHECKS_MODULE = "def polite(text, case):\n    return True\n"


def with_custom_check(runner: Runner) -> None:
    """Give the base a custom check on one case, as a suite that uses them would have."""
    (runner.workspace / "suite_checks.py").write_text(CHECKS_MODULE)
    replace(
        runner.workspace / "cases" / "support" / "shipping.yaml",
        '    contains: "3–7 business days"\n',
        '    contains: "3–7 business days"\n    check: suite_checks:polite\n',
    )
    git("add", "-A", cwd=runner.workspace)
    git("commit", "-qm", "a custom check", cwd=runner.workspace)
    runner.base_sha = git("rev-parse", "HEAD", cwd=runner.workspace)


def with_live_check(runner: Runner) -> None:
    """The base with a custom check and the example's stand-in system, so that it can be
    checked live: a replayed check imports none of the pull request's code, a live one
    imports its checks in the supervised run."""
    shutil.copytree(REPO / "examples", runner.workspace / "examples")
    with_custom_check(runner)


@pytest.mark.parametrize(
    "body",
    [
        "import sys\n    sys.exit(0)",
        "import os\n    os._exit(0)",
        "import sys\n    sys.exit(3)",
        "raise KeyboardInterrupt",
    ],
)
def test_a_custom_check_cannot_exit_with_a_verdict(runner: Runner, body: str) -> None:
    with_custom_check(runner)
    open_pull_request(
        runner.workspace,
        lambda root: (root / "suite_checks.py").write_text(
            f"def polite(text, case):\n    {body}\n"
        ),
    )
    finished = runner.run(config="casegate.yml")
    assert finished.returncode not in (0, 3), finished.stdout + finished.stderr
    assert "Traceback" not in finished.stderr


def test_a_changed_custom_check_is_a_ruler_change(runner: Runner) -> None:
    with_custom_check(runner)
    open_pull_request(
        runner.workspace,
        lambda root: (root / "suite_checks.py").write_text(
            "def polite(text, case):\n    return True  # now lenient\n"
        ),
    )
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 1
    assert "custom check module suite_checks: source changed" in finished.stdout


def test_user_code_never_sees_the_token(runner: Runner) -> None:
    with_live_check(runner)
    leak = runner.drop_box() / "leak.txt"

    def snoop(root: Path) -> None:
        # What the process sees, and what the kernel kept of its parent's start.
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
    runner.run(config="casegate.yml", mode="live")
    seen = leak.read_text()
    assert "GITHUB_OUTPUT" not in seen  # the child cannot write the step's outputs
    assert TOKEN not in seen and "INPUT_GITHUB-TOKEN" not in seen


# --- what the pull request writes cannot speak for casegate ---------------------------


def test_pull_request_text_reaches_the_log_only_fenced(runner: Runner) -> None:
    hostile = "x\n::set-output name=verdict::ship\n::add-mask::casegate\n::error::pwned"

    def inject(root: Path) -> None:
        replace(root / CANDIDATE, "name: support-v2-concise", "name: '::warning::pwned-system'")
        note = "  note: " + json.dumps(hostile) + "\n"
        edit_cases(root, lambda _id, block: re.sub(r"(?m)^  note: .*\n", lambda _m: note, block))
        for recording in (root / "recordings" / "support").glob(
            "complaint-no-invented-discount*.json"
        ):
            replace(recording, '"text": "', '"text": "\\n::warning::pwned-output\\n', count=10)

    open_pull_request(runner.workspace, inject)
    finished = runner.run()
    commands = acted_on(finished.stdout) + acted_on(finished.stderr)
    assert commands, "casegate's own annotations are missing"
    assert all(line.startswith(ALLOWED_COMMANDS) for line in commands), commands
    # Hostile text may appear inside casegate's own annotations, escaped; never as a command.
    assert not [
        line for line in commands if line.startswith(("::warning::pwned", "::error::pwned"))
    ]
    assert not [line for line in commands if line.startswith("::add-mask::casegate")]
    assert finished.returncode == 1


def test_a_persons_comment_quoting_the_marker_is_never_edited(runner: Runner) -> None:
    marker = "<!-- casegate:sticky-comment suite=support -->"
    forged_body = f"{marker}\n### ✅ casegate: **ship**"
    runner.api.add_comment(PULL_NUMBER, forged_body, "pr-author")
    open_pull_request(runner.workspace, lambda root: None)
    finished = runner.run()
    assert finished.returncode == 1
    comments = runner.api.comments[PULL_NUMBER]
    assert comments[0]["body"] == forged_body  # untouched
    assert len(comments) == 2 and "casegate: **block**" in comments[1]["body"]
    assert comments[1]["user"]["login"] == "github-actions[bot]"
    assert [seen.method for seen in runner.api.writes()] == ["POST"]


def test_a_head_that_is_itself_a_merge_cannot_choose_its_base(
    runner: Runner, candidate_results: Path
) -> None:
    # The workflow checks out the pull request's head, and that head is a merge whose
    # first parent is "main plus the candidate's own results as the baseline".
    workspace = runner.workspace
    git("checkout", "-q", "-b", "forged", cwd=workspace)
    shutil.copy(candidate_results, workspace / "baselines" / "support.json")
    git("commit", "-qam", "a baseline that vouches for the candidate", cwd=workspace)
    forged = git("rev-parse", "HEAD", cwd=workspace)
    tree = git("rev-parse", "HEAD^{tree}", cwd=workspace)
    head = git(
        "commit-tree", tree, "-p", forged, "-p", runner.base_sha, "-m", "merge", cwd=workspace
    )
    git("checkout", "-q", "--detach", head, cwd=workspace)
    event = pull_request_event(runner.base_sha, head_sha=head)
    finished = runner.run(event=event)
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert runner.outputs()["critical-regressions"] == "3"
    assert "not GitHub's merge commit" in finished.stdout


def test_a_daemon_started_by_user_code_does_not_outlive_the_check(runner: Runner) -> None:
    with_live_check(runner)
    pid_file = runner.drop_box() / "daemon.pid"

    def daemonise(root: Path) -> None:
        (root / "suite_checks.py").write_text(
            "import os, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            f"        open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
            "        time.sleep(600)\n"
            "    os._exit(0)\n"
            "def polite(text, case):\n    return True\n"
        )

    open_pull_request(runner.workspace, daemonise)
    finished = runner.run(config="casegate.yml", mode="live")
    assert finished.returncode == 1  # the changed check module is a ruler change
    pid = int(pid_file.read_text())
    # Ended and reaped by the entrypoint before it exited: no such process any more.
    assert not Path(f"/proc/{pid}").exists()


def test_accepting_a_looser_rule_does_not_accept_a_rewritten_baseline(
    runner: Runner, candidate_results: Path
) -> None:
    def loosen_and_rebaseline(root: Path) -> None:
        drop_critical(root)
        shutil.copy(candidate_results, root / "baselines" / "support.json")

    open_pull_request(runner.workspace, loosen_and_rebaseline)
    event = pull_request_event(runner.base_sha, [ACCEPT], labeled_by="maintainer-m")
    finished = runner.run(event=event)
    # The label accepts the pull request's rule and criticality; the comparison is still
    # with the base's baseline, so the regressions are there for the reviewer to see.
    assert "regressions (4)" in finished.stdout  # the drop of returns-greets-by-name: noise
    assert "complaint-no-invented-discount" in finished.stdout
    assert "✓ accepted, loosens" in finished.stdout
