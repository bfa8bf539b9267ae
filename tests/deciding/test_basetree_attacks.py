"""The verdict is made from the base commit's tree: files the ruler once did not cover.

The base commit's suite gives a critical case a custom check that imports a local
helper module, which reads a word list beside it. Each pull request re-records that
case with an answer the check must fail (it names a competitor) and tries to make
the check pass anyway: a package folder or a compiled extension that Python would
import in the helper's place, or an emptied word list. The Action's entrypoint runs
as the runner runs it. The case must regress, the check must block, and the ruler
review must name what the pull request changed.
"""

from __future__ import annotations

import json
import subprocess
import sysconfig
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.actions import REPO, Runner, git, open_pull_request
from tests.github.test_action_attacks import replace

CASE = "injection-ignore-instructions"
CHECKS = """\
from suite_rules import banned


def no_competitors(text, case):
    named = [word for word in banned() if word in text.lower()]
    return not named, "names a competitor: " + ", ".join(named)
"""
RULES = """\
from pathlib import Path


def banned():
    words = (Path(__file__).parent / "competitors.txt").read_text().splitlines()
    return [word.strip() for word in words if word.strip()]
"""
LENIENT = "def banned():\n    return []\n"
EXTENSION = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
static PyObject *banned(PyObject *self, PyObject *args) { return PyList_New(0); }
static PyMethodDef methods[] = {{"banned", banned, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "suite_rules", NULL, -1, methods};
PyMODINIT_FUNC PyInit_suite_rules(void) { return PyModule_Create(&module); }
"""


def with_word_list_check(runner: Runner) -> None:
    root = runner.workspace
    (root / "suite_checks.py").write_text(CHECKS)
    (root / "suite_rules.py").write_text(RULES)
    (root / "competitors.txt").write_text("shopmart\nbuyrite\n")
    replace(
        root / "cases" / "support" / "adversarial.yaml",
        '    contains: "can\'t share"\n  critical: true\n',
        '    contains: "can\'t share"\n    check: suite_checks:no_competitors\n  critical: true\n',
    )
    git("add", "-A", cwd=root)
    git("commit", "-qm", "a word-list check on a critical case", cwd=root)
    runner.base_sha = git("rev-parse", "HEAD", cwd=root)


def names_a_competitor(root: Path) -> None:
    """Re-record the critical case with an answer the base's check fails."""
    path = root / "recordings" / "support" / f"{CASE}.json"
    recording = json.loads(path.read_text())
    for response in recording["responses"].values():
        response["output"]["text"] += " For that, try ShopMart instead."
    path.write_text(json.dumps(recording, indent=2))


def package_stand_in(root: Path) -> None:
    (root / "suite_rules").mkdir()
    (root / "suite_rules" / "__init__.py").write_text(LENIENT)


def compiled_stand_in(root: Path) -> None:
    source = root.parent / "suite_rules.c"
    source.write_text(EXTENSION)
    target = root / f"suite_rules{sysconfig.get_config_var('EXT_SUFFIX')}"
    include = sysconfig.get_paths()["include"]
    subprocess.run(
        ["gcc", "-shared", "-fPIC", f"-I{include}", "-o", str(target), str(source)], check=True
    )


def empty_word_list(root: Path) -> None:
    (root / "competitors.txt").write_text("")


ATTACKS: dict[str, tuple[Callable[[Path], None], str]] = {
    "a package folder beside the helper": (
        package_stand_in,
        "custom check module suite_rules: a folder suite_rules/ beside suite_rules.py",
    ),
    "a compiled extension beside the helper": (
        compiled_stand_in,
        f"suite_rules{sysconfig.get_config_var('EXT_SUFFIX')} beside suite_rules.py",
    ),
    "the word list emptied": (empty_word_list, "check data file competitors.txt: changed"),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_stand_in_for_the_checks_files_cannot_pass_a_critical_case(
    runner: Runner, attack: str
) -> None:
    edit, named = ATTACKS[attack]
    with_word_list_check(runner)

    def both(root: Path) -> None:
        names_a_competitor(root)
        edit(root)

    open_pull_request(runner.workspace, both)
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert "names a competitor: shopmart" in finished.stdout
    assert f"{CASE}" in runner.outputs().get("report-path", "") or CASE in finished.stdout
    assert named in finished.stdout, finished.stdout
    assert runner.outputs()["critical-regressions"] == "1"


def test_the_check_really_catches_the_answer(runner: Runner) -> None:
    """The control: the same re-recorded answer with the check's files untouched."""
    with_word_list_check(runner)
    open_pull_request(runner.workspace, names_a_competitor)
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 1
    assert "names a competitor: shopmart" in finished.stdout
    assert "check data file" not in finished.stdout
    assert "custom check module suite_rules" not in finished.stdout


def test_an_untouched_pull_request_ships(runner: Runner) -> None:
    with_word_list_check(runner)
    open_pull_request(runner.workspace, lambda root: None)
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 0, finished.stdout


def test_lower_prices_cannot_pass_a_cost_budget(runner: Runner) -> None:
    root = runner.workspace
    replace(
        root / "cases" / "support" / "adversarial.yaml",
        '    contains: "can\'t share"\n  critical: true\n',
        '    contains: "can\'t share"\n    max_cost_usd: 0.0005\n  critical: true\n',
    )
    git("add", "-A", cwd=root)
    git("commit", "-qm", "a cost budget on a critical case", cwd=root)
    runner.base_sha = git("rev-parse", "HEAD", cwd=root)
    open_pull_request(
        root,
        lambda tree: replace(
            tree / "casegate.yml",
            "standin-large: {input: 3.00, output: 15.00}",
            "standin-large: {input: 0.01, output: 0.01}",
        ),
    )
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 1, finished.stdout
    assert "pricing: standin-large 3/15 → 0.01/0.01 per million" in finished.stdout
    assert runner.outputs()["critical-regressions"] == "1"


def with_history(runner: Runner) -> Path:
    """The base commits the suite's history export, as the baseline refresh does."""
    export = runner.workspace / "history" / "support.jsonl"
    export.parent.mkdir()
    export.write_bytes((REPO / "history" / "support.jsonl").read_bytes())
    git("add", "-A", cwd=runner.workspace)
    git("commit", "-qm", "the history export", cwd=runner.workspace)
    runner.base_sha = git("rev-parse", "HEAD", cwd=runner.workspace)
    return export


def test_rewriting_a_past_history_line_is_a_ruler_change(runner: Runner) -> None:
    """A pull request that turns a past failure into a pass makes a later report say a
    case "never" failed: anything but appending is listed and blocks."""
    with_history(runner)

    def rewrite(root: Path) -> None:
        export = root / "history" / "support.jsonl"
        lines = export.read_text().splitlines(keepends=True)
        failed = next(i for i, line in enumerate(lines) if '"verdict":"fail"' in line)
        lines[failed] = lines[failed].replace('"verdict":"fail"', '"verdict":"pass"')
        export.write_text("".join(lines))

    open_pull_request(runner.workspace, rewrite)
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 1, finished.stdout
    assert "history export: history/support.jsonl" in finished.stdout
    assert "rewritten" in finished.stdout


def test_appending_to_the_history_is_listed_and_does_not_block(runner: Runner) -> None:
    """Appending is what the baseline job does; a pull request doing it is shown to the
    reviewer (once merged, every later check trusts those lines), not blocked."""
    with_history(runner)

    def append(root: Path) -> None:
        export = root / "history" / "support.jsonl"
        first = export.read_text().splitlines()[0]
        export.write_text(export.read_text() + first.replace("bbc6b75", "ccc1234") + "\n")

    open_pull_request(runner.workspace, append)
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 0, finished.stdout
    assert "history export: 1 line(s) appended by this pull request" in finished.stdout
    assert "rewritten" not in finished.stdout


def test_a_merged_history_line_out_of_range_never_crashes_a_check(runner: Runner) -> None:
    """Once a line with an integer past 2^63 is on the base, every later check reads it:
    the report says the history could not be read, and the verdict stands."""
    export = with_history(runner)
    line = export.read_text().splitlines()[0].replace('"version":1', f'"version":{2**63}')
    export.write_text(export.read_text() + line + "\n")
    git("commit", "-qam", "a bad line merged", cwd=runner.workspace)
    runner.base_sha = git("rev-parse", "HEAD", cwd=runner.workspace)
    open_pull_request(runner.workspace, lambda root: None)
    finished = runner.run(config="casegate.yml")
    assert "Traceback" not in finished.stdout + finished.stderr
    assert finished.returncode == 0, finished.stdout
    assert "could not be read" in runner.summary()
