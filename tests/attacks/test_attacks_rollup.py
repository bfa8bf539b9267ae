"""Attacks on the roll-up (several configs, one comment: gate.github.multisuite).

The attacker is a pull request's author, who controls every file of the change: which
configs exist, their names, the suite names and every string a report shows. Every test
asserts the SAFE outcome: a failing test means the attack worked.
"""

from __future__ import annotations

import json
from pathlib import Path

from gate.github.api import marker_for
from gate.github.rollup import ROLLUP_MARKER
from tests.fakes.actions import PULL_NUMBER, Runner, acted_on, open_pull_request
from tests.github.test_action_suites import GLOB, comment_of, suites

__all__ = ["suites"]  # the fixture, shared with the roll-up's own tests


def test_a_config_named_to_sort_first_cannot_shadow_a_suite(suites: Runner) -> None:
    # casegate.0.yml sorts before casegate.candidate.yml and claims its suite, lenient.
    def shadow(root: Path) -> None:
        text = (root / "casegate.yml").read_text()  # the baseline system: it would ship
        (root / "casegate.0.yml").write_text(text)

    open_pull_request(suites.workspace, shadow)
    finished = suites.run(config=GLOB)
    assert finished.returncode == 2, finished.stdout[-3000:]
    assert "casegate.0.yml and casegate.candidate.yml both name the suite 'support'" in (
        finished.stdout
    )
    assert suites.api.writes() == []


def test_a_moved_config_is_judged_as_a_new_ruler(suites: Runner) -> None:
    def move(root: Path) -> None:
        (root / "casegate.billing.yml").rename(root / "casegate.zz.yml")

    open_pull_request(suites.workspace, move)
    finished = suites.run(config=GLOB)
    assert finished.returncode == 1, finished.stdout[-3000:]
    assert json.loads(suites.outputs()["verdicts"]) == {"billing": "block", "support": "block"}
    assert "casegate.zz.yml does not exist on the base commit" in comment_of(suites)


def test_a_file_name_cannot_write_html_or_a_marker(suites: Runner) -> None:
    name = "casegate.--><details open><summary>ship<b>@org #1.yml"

    def add(root: Path) -> None:
        (root / name).write_text("suite: [not a name]\n")
        (root / "casegate.x\n::warning::forged.yml").write_text("suite: [not a name]\n")

    open_pull_request(suites.workspace, add)
    finished = suites.run(config=GLOB)
    assert finished.returncode == 2, finished.stdout[-3000:]
    assert json.loads(suites.outputs()["verdicts"])[name] == "error"
    body = comment_of(suites)
    assert body.count("<!-- casegate:sticky-comment") == 1 and body.count("-->") == 1
    assert "<details open><summary>ship" not in body and "<b>" not in body
    assert "@org" not in body and "#1" not in body
    assert body.count("<details") == body.count("</details>")
    assert not [line for line in acted_on(finished.stdout) if line.startswith("::warning::forged")]
    assert "\n::warning::forged" not in suites.summary()


def test_a_config_turned_into_a_link_to_a_lenient_one_is_refused(suites: Runner) -> None:
    # casegate.candidate.yml (blocks) becomes a link to casegate.billing.yml's ship-ready
    # twin: the suite is no longer read from a real file of the checkout.
    def link(root: Path) -> None:
        (root / "casegate.candidate.yml").unlink()
        (root / "casegate.candidate.yml").symlink_to("casegate.yml")

    open_pull_request(suites.workspace, link)
    finished = suites.run(config=GLOB)
    assert finished.returncode == 2, finished.stdout[-3000:]
    assert suites.outputs()["verdict"] == "error"
    assert "goes through a symbolic link (casegate.candidate.yml)" in finished.stdout


def test_report_text_cannot_close_a_section_or_write_a_marker(suites: Runner) -> None:
    # The system's name is the pull request's and lands in the suite's report.
    forged = f"x {ROLLUP_MARKER} </summary></details><details open> @org"

    def rename(root: Path) -> None:
        config = root / "casegate.billing.yml"
        config.write_text(config.read_text().replace("name: support-v1", f"name: '{forged}'"))

    open_pull_request(suites.workspace, rename)
    suites.run(config=GLOB)
    body = comment_of(suites)
    assert body.count("<!-- casegate:sticky-comment") == 1
    assert body.count("<details") == body.count("</details>")
    assert "</summary></details><details open>" not in body and "@org" not in body
    assert "&lt;/summary&gt;&lt;/details&gt;" in body  # the name is there, as text


def test_a_persons_comment_with_the_markers_is_neither_edited_nor_deleted(
    suites: Runner,
) -> None:
    fake_rollup = suites.api.add_comment(
        PULL_NUMBER, f"{ROLLUP_MARKER}\n### ✅ casegate: **ship**", login="mallory"
    )
    fake_suite = suites.api.add_comment(
        PULL_NUMBER, f"{marker_for('support')}\nship", login="mallory"
    )
    assert suites.run(config=GLOB).returncode == 1
    comments = suites.api.comments[PULL_NUMBER]
    assert [c["id"] for c in comments[:2]] == [fake_rollup["id"], fake_suite["id"]]
    assert comments[0]["body"].endswith("**ship**") and len(comments) == 3
    assert comments[2]["body"].startswith(ROLLUP_MARKER) and "**block**" in comments[2]["body"]
