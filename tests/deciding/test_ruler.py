"""The ruler: read from the base commit, compared with the change, applied to the verdict."""

from __future__ import annotations

import json
import os
import posixpath
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from gate.cli import main
from gate.deciding import basetree, rulerdiff, rulerside
from gate.errors import ConfigError
from gate.suite.config import GateConfig
from tests.conftest import Project, case
from tests.fakes.actions import git, init_repository

CASES = [
    case("greet", "hello", contains="hello", fields_={"critical": True}),
    case("echo", "world", contains="world"),
    case("other", "again", contains="again"),
]


@pytest.fixture
def repo(project: Project) -> Project:
    """The project as a git repository whose one commit holds a baseline."""
    project.write_cases(CASES)
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    init_repository(project.root)
    return project


def side(project: Project, overrides: tuple[str, ...] = ()) -> rulerside.Side:
    return rulerside.load_side(project.config_path, overrides, project.root)


def base_side(project: Project, tmp_path: Path) -> rulerside.Side:
    tree, refused = basetree.extract_tree(project.root, "HEAD", tmp_path / "scratch")
    return rulerside.load_side(tree / "casegate.yml", (), tree, refused=refused)


def edit_config(project: Project, **changes: Any) -> None:
    data = yaml.safe_load(project.config_path.read_text())
    data.update(changes)
    project.config_path.write_text(yaml.safe_dump(data))


def changes_after(repo: Project, tmp_path: Path, overrides: tuple[str, ...] = ()) -> list[str]:
    found = rulerdiff.compare_rulers(base_side(repo, tmp_path), side(repo, overrides))
    return [f"{'-' if c.loosens else '+'} {c.describe()}" for c in found]


def test_an_unchanged_ruler_has_no_changes(repo: Project, tmp_path: Path) -> None:
    assert changes_after(repo, tmp_path) == []


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("gate.block_on_errors=false", "- gate rule: block_on_errors true → false"),
        (
            "gate.block_on_critical_failure=true",
            "+ gate rule: block_on_critical_failure false → true",
        ),
        ("gate.tolerance=0.2", "- gate rule: tolerance 0 → 0.2"),
        ("gate.alpha=0.001", "- gate rule: alpha 0.02 → 0.001"),
        ("gate.alpha=0.1", "+ gate rule: alpha 0.02 → 0.1"),
        ("gate.on_inconclusive=block", "+ gate rule: on_inconclusive ship → block"),
        ("gate.max_cost_increase=0.1", "+ gate rule: max_cost_increase none → 0.1"),
        ("gate.min_pass_rate=0.9", "+ gate rule: min_pass_rate none → 0.9"),
        ("gate.max_cost_usd=2", "+ gate rule: max_cost_usd none → 2"),
        ("gate.max_errors=0", "+ gate rule: max_errors none → 0"),
        ("samples=3", "- samples: 1 → 3"),  # repeated samples switch the tests on
        ("samples=auto", "- samples: 1 → auto"),
        ("min_pass_rate=0.5", "- min_pass_rate: 1 → 0.5"),
        (
            "baseline=baselines/other.json",
            "- baseline path: baselines/demo.json → baselines/other.json",
        ),
        ("cases=cases/none.yaml", None),
    ],
)
def test_each_rule_change_is_named_with_its_direction(
    repo: Project, tmp_path: Path, override: str, expected: str | None
) -> None:
    if expected is None:  # a selection that loads nothing is a config error, not a change
        with pytest.raises(ConfigError, match="matches no"):
            changes_after(repo, tmp_path, (override,))
        return
    assert expected in changes_after(repo, tmp_path, (override,))


def test_case_level_changes(repo: Project, tmp_path: Path) -> None:
    greet, echo, _other = CASES
    repo.write_cases(
        [
            {**greet, "critical": False},
            {**echo, "expect": {"contains": "w"}, "min_pass_rate": 0.5, "weight": 2},
            case("brand-new", "x", contains="x", fields_={"critical": True}),
        ]
    )
    found = changes_after(repo, tmp_path)
    assert found[0].startswith("-")  # loosening first
    assert set(found) == {
        "- critical case greet: made non-critical",
        "- case echo: expect changed without a version bump: contains 'world' → 'w'",
        "- case echo: min_pass_rate 1 → 0.5",
        "- case echo: weight 1 → 2",
        "- case other: removed from the selection",
        "+ critical case brand-new: added",
    }


def test_a_new_input_is_a_new_question(repo: Project, tmp_path: Path) -> None:
    greet, echo, other = CASES
    repo.write_cases(
        [
            {**greet, "input": {"question": "hello there"}},
            {**echo, "input": {"question": "worlds"}, "version": 2},
            {**other, "input": {"question": "again!"}},
        ]
    )
    assert set(changes_after(repo, tmp_path)) == {
        "- critical case greet: input changed without a version bump",
        # A plain case re-versioned for its new input is set aside; the bump itself is
        # listed, since the expectation it names did not move.
        "- case echo: version 1 → 2 without a change to what it expects",
        "- case other: input changed without a version bump",
    }


def test_a_new_custom_check_module_is_new_code_in_the_judge(repo: Project, tmp_path: Path) -> None:
    greet, echo, other = CASES
    repo.write_text("newcheck.py", "def ok(text, case):\n    return True\n")
    repo.write_cases([greet, {**echo, "expect": {"check": "newcheck:ok"}, "version": 2}, other])
    assert (
        "- custom check module newcheck: new: code the pull request brings into the judging process"
        in changes_after(repo, tmp_path)
    )


def test_a_version_bump_with_a_new_expectation_sets_a_plain_case_aside(
    repo: Project, tmp_path: Path
) -> None:
    greet, echo, other = CASES
    repo.write_cases([greet, {**echo, "expect": {"contains": "w"}, "version": 2}, other])
    assert changes_after(repo, tmp_path) == [
        "+ case echo: version 1 → 2",
        "+ case echo: expect changed: contains 'world' → 'w'",
    ]
    repo.write_cases([{**greet, "expect": {"contains": "h"}, "version": 2}, echo, other])
    assert set(changes_after(repo, tmp_path)) == {
        "- critical case greet: version 1 → 2",
        "- critical case greet: expect changed: contains 'hello' → 'h'",
    }


@given(
    before=st.floats(0, 1, allow_nan=False),
    after=st.floats(0, 1, allow_nan=False),
    key=st.sampled_from(["tolerance", "non_inferiority_margin"]),
)
def test_a_higher_tolerance_always_loosens(before: float, after: float, key: str) -> None:
    assert rulerside._loosens(rulerside.RULE_DIRECTIONS[key], before, after) == (after > before)


@given(flags=st.lists(st.booleans(), min_size=2, max_size=2))
def test_switching_a_blocking_rule_off_is_the_only_loosening_switch(flags: list[bool]) -> None:
    before, after = flags
    assert rulerside._loosens("off", before, after) == (before and not after)


def test_every_gate_rule_field_has_a_direction() -> None:
    assert set(rulerside.RULE_DIRECTIONS) == set(GateConfig.model_fields)


# --- where the base is and what may be read from it ----------------------------------


def test_the_merge_commits_first_parent_is_the_base(repo: Project) -> None:
    base = git("rev-parse", "HEAD", cwd=repo.root)
    git("checkout", "-q", "-b", "topic", cwd=repo.root)
    repo.write_text("notes.txt", "x")
    git("add", "-A", cwd=repo.root)
    git("commit", "-qm", "topic", cwd=repo.root)
    git("checkout", "-q", "--detach", "main", cwd=repo.root)
    git("merge", "-q", "--no-ff", "-m", "merge", "topic", cwd=repo.root)
    head = git("rev-parse", "topic", cwd=repo.root)
    assert basetree.pull_request_base(repo.root, base, head) == (base, [])
    # Not GitHub's merge of this head: the event's base, and a note saying so.
    sha, notes = basetree.pull_request_base(repo.root, base, "f" * 40)
    assert sha == base and "not GitHub's merge commit" in notes[0]


def test_without_a_merge_commit_the_event_base_is_used_and_said(repo: Project) -> None:
    base = git("rev-parse", "HEAD", cwd=repo.root)
    sha, notes = basetree.pull_request_base(repo.root, base)
    assert sha == base and "not GitHub's merge commit" in notes[0]
    with pytest.raises(ConfigError, match="fetch-depth: 0"):
        basetree.pull_request_base(repo.root, "ab" * 20)


@pytest.mark.parametrize(
    ("relative", "message"),
    [
        ("/etc/passwd", "must be a path relative"),
        ("../outside.json", "points outside the repository"),
        ("linked/demo.json", "goes through a symbolic link"),
        ("baselines/link.json", "goes through a symbolic link"),
    ],
)
def test_a_baseline_path_stays_inside_the_repository(
    repo: Project, relative: str, message: str
) -> None:
    (repo.root / "linked").symlink_to(repo.root / "baselines")
    (repo.root / "baselines" / "link.json").symlink_to("demo.json")
    with pytest.raises(ConfigError, match=message):
        basetree.inside(repo.root, relative, "baseline")


def test_a_base_whose_baseline_is_a_symlink_is_refused(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = repo.root / "baselines" / "demo.json"
    baseline.rename(repo.root / "baselines" / "real.json")
    baseline.symlink_to("real.json")
    git("add", "-A", cwd=repo.root)
    git("commit", "-qm", "a linked baseline", cwd=repo.root)
    assert main(["check", "--base", "HEAD", "--quiet"]) == 2
    assert "goes through a symbolic link" in capsys.readouterr().err


def test_a_link_out_of_the_base_tree_is_refused(repo: Project, tmp_path: Path) -> None:
    (repo.root / "escape").symlink_to("/etc/hostname")
    git("add", "-A", cwd=repo.root)
    git("commit", "-qm", "a link out", cwd=repo.root)
    tree, refused = basetree.extract_tree(repo.root, "HEAD", tmp_path / "scratch")
    # The rest of the tree is there; the link is not, and reading it is refused by name.
    assert (tree / "casegate.yml").is_file() and not (tree / "escape").exists()
    with pytest.raises(ConfigError, match="links out of the repository"):
        basetree.inside(tree, "escape", "baseline", refused)


# --- casegate check --base ------------------------------------------------------------


def test_check_base_blocks_a_loosening_change_until_accepted(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    greet, echo, other = CASES
    repo.write_system(
        "def answer(case_input, system):\n    return 'nothing useful'\n"
    )  # every case now fails
    repo.write_cases([{**greet, "critical": False}, echo, other])
    edit_config(repo, gate={"block_on_pass_rate_drop": False})
    assert main(["check", "--base", "main", "--mode", "live", "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "made non-critical" in out and "block_on_pass_rate_drop true → false" in out
    assert "loosens the ruler" in out
    # Judged by the base's criticality: greet is still a critical regression.
    assert "1 critical case(s) passed on the baseline" in out
    code = main(["check", "--base", "main", "--mode", "live", "--quiet", "--accept-ruler-change"])
    out = capsys.readouterr().out
    assert code == 0, out  # the change's own ruler, accepted on purpose: nothing blocks
    assert "accepted" in out and "--accept-ruler-change" in out


def test_check_base_judges_by_the_base_threshold(
    repo: Project, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    results = tmp_path / "r.json"
    greet, echo, other = CASES
    repo.write_system("def answer(case_input, system):\n    return 'nothing useful'\n")
    repo.write_cases([{**greet, "min_pass_rate": 0}, echo, other])
    assert main(["check", "--base", "main", "--mode", "live", "--out", str(results)]) == 1
    out = capsys.readouterr().out
    assert "greet [critical]: 0/1 samples passed, below the base's min_pass_rate 1" in out
    assert json.loads(results.read_text())["summary"]["cases"] == 3


def test_a_pull_request_that_brings_the_first_config_needs_acceptance(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.config_path.rename(repo.root / "casegate-new.yml")
    code = main(["check", "-c", "casegate-new.yml", "--base", "main", "--mode", "live", "--quiet"])
    assert code == 1
    assert "does not exist on the base commit" in capsys.readouterr().out


segment = st.sampled_from(["a", "b", "..", "."])


@given(
    name=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=4),
    link=st.lists(segment, min_size=1, max_size=6),
)
def test_an_accepted_link_never_leaves_the_tree(name: list[str], link: list[str]) -> None:
    path, target = "/".join(name), "/".join(link)
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    if basetree._stays_inside(path, target):
        assert resolved != ".." and not resolved.startswith("../")
    else:
        assert resolved == ".." or resolved.startswith("../")


@pytest.mark.parametrize("name", ["/etc/passwd", "../up", "a/../../up", "sub/.git/config"])
def test_a_path_outside_the_tree_is_refused(name: str) -> None:
    assert not basetree._stays_inside(name, None)


def _embedded_bare_repository(repo: Project, tmp_path: Path) -> Path:
    """What a pull request can commit: a bare repository's files, with a worktree beside."""
    evil, worktree, bare = repo.root / "evil", repo.root / "evil" / "wt", tmp_path / "bare"
    worktree.mkdir(parents=True)
    for name in ("casegate.yml", "cases", "baselines", f"{repo.module}.py"):
        source = repo.root / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, worktree / name)
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True, capture_output=True)
    env = {**os.environ, "GIT_DIR": str(bare), "GIT_WORK_TREE": str(worktree)}
    env.update(GIT_AUTHOR_NAME="a", GIT_AUTHOR_EMAIL="a@b", GIT_COMMITTER_NAME="a")
    env.update(GIT_COMMITTER_EMAIL="a@b", GIT_INDEX_FILE=str(tmp_path / "index"))
    for args in (["add", "-A"], ["commit", "-qm", "forged base"]):
        subprocess.run(["git", *args], cwd=worktree, env=env, check=True, capture_output=True)
    for name in ("HEAD", "objects", "refs"):
        source = bare / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, evil / name)
    (evil / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = wt\n"
    )
    return worktree


def test_git_never_finds_a_repository_the_pull_request_committed(
    repo: Project, tmp_path: Path
) -> None:
    worktree = _embedded_bare_repository(repo, tmp_path / "scratch")
    # Plain git would take evil/ for the repository here; casegate's git refuses it.
    found = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], cwd=worktree, capture_output=True, text=True
    )
    assert found.returncode == 0 and found.stdout.strip() == str(worktree)
    try:
        root = basetree.repo_root_of(worktree)
    except ConfigError:
        root = None
    assert root is None


def test_a_config_that_is_a_link_is_refused(
    repo: Project, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    worktree = _embedded_bare_repository(repo, tmp_path / "scratch")
    repo.config_path.unlink()
    repo.config_path.symlink_to(worktree / "casegate.yml")
    assert main(["check", "--base", "main", "--quiet"]) == 2
    assert "the config: 'casegate.yml' goes through a symbolic link" in capsys.readouterr().err


def test_what_a_custom_check_imports_is_part_of_the_ruler(tmp_path: Path) -> None:
    project = Project(tmp_path / "p")
    project.root.mkdir()
    project.write_system()
    project.write_text("rules_helper.py", "WORDS = ['sorry']\n")
    project.write_text(
        "tone_check.py", "from rules_helper import WORDS\ndef ok(t, c):\n    return True\n"
    )
    project.write_text("pkgchecks/__init__.py", "SETTING = 1\n")
    project.write_text("pkgchecks/tone.py", "from . import util\ndef ok(t, c):\n    return True\n")
    project.write_text("pkgchecks/util.py", "X = 1\n")
    project.write_config()
    project.write_cases(
        [
            case("a", "hi", check="tone_check:ok"),
            case("b", "hi", check="pkgchecks.tone:ok"),
        ]
    )
    init_repository(project.root)
    for file, subject in [
        ("rules_helper.py", "custom check module rules_helper"),
        ("pkgchecks/__init__.py", "custom check module pkgchecks"),
        ("pkgchecks/util.py", "custom check module pkgchecks.util"),
    ]:
        original = (project.root / file).read_text()
        (project.root / file).write_text(original + "# lenient now\n")
        found = changes_after(project, tmp_path / f"scratch-{file.replace('/', '-')}")
        assert f"- {subject}: source changed" in found, found
        (project.root / file).write_text(original)


def test_a_price_change_loosens_unless_it_only_raises_a_price(
    repo: Project, tmp_path: Path
) -> None:
    # Issue #19: a lower price (or a new one, which makes an unknown cost known) can pass
    # a cost budget that failed, with or without a suite-wide cost rule.
    cheaper = ("pricing.m.input=0.1", "pricing.m.output=0.1")
    assert changes_after(repo, tmp_path / "a", cheaper) == ["- pricing: m added"]
    edit_config(repo, pricing={"m": {"input": 1.0, "output": 2.0}})
    init_repository_commit(repo)
    assert changes_after(repo, tmp_path / "b", cheaper) == [
        "- pricing: m 1/2 → 0.1/0.1 per million"
    ]
    dearer = ("pricing.m.input=3", "pricing.m.output=4")
    assert changes_after(repo, tmp_path / "c", dearer) == ["+ pricing: m 1/2 → 3/4 per million"]


def init_repository_commit(repo: Project) -> None:
    git("add", "-A", cwd=repo.root)
    git("commit", "-qm", "a cost rule", cwd=repo.root)


@given(
    before=st.one_of(st.none(), st.floats(0, 1, allow_nan=False)),
    after=st.one_of(st.none(), st.floats(0, 1, allow_nan=False)),
)
def test_a_lower_or_removed_pass_rate_floor_loosens(
    before: float | None, after: float | None
) -> None:
    if before is None or after is None:
        expected = after is None and before is not None
    else:
        expected = after < before
    assert rulerside._loosens(rulerside.RULE_DIRECTIONS["min_pass_rate"], before, after) == expected


@pytest.mark.parametrize("key", ["max_cost_usd", "max_latency_p95_ms", "max_errors"])
@pytest.mark.parametrize(
    ("before", "after", "loosens"),
    [(None, 1, False), (1, None, True), (1, 2, True), (2, 1, False), (0, 1, True)],
)
def test_a_higher_or_removed_budget_loosens(
    key: str, before: int | None, after: int | None, loosens: bool
) -> None:
    assert rulerside._loosens(rulerside.RULE_DIRECTIONS[key], before, after) == loosens


def test_declared_tool_schemas_are_ruler_while_cases_rely_on_them(
    project: Project, tmp_path: Path
) -> None:
    strict = {"type": "object", "properties": {"id": {"type": "string"}}}
    system = yaml.safe_load(project.config_path.read_text())["system"]
    edit_config(project, system={**system, "tools": [{"name": "lookup", "parameters": strict}]})
    project.write_cases([case("look", "x", tool_args_valid=True), *CASES[1:]])
    init_repository(project.root)
    loose = {"type": "object", "properties": {"id": {"type": ["string", "integer"]}}}
    edit_config(project, system={**system, "tools": [{"name": "lookup", "parameters": loose}]})
    assert changes_after(project, tmp_path / "a") == [
        "- tool schemas: system.tools changed (lookup) while cases judge calls with tool_args_valid"
    ]
    # No case judges with the declared schemas: they are the system's own business.
    project.write_cases(CASES)
    init_repository_commit(project)
    edit_config(project, system={**system, "tools": [{"name": "lookup", "parameters": strict}]})
    assert changes_after(project, tmp_path / "b") == []


def test_a_python_instruments_code_is_part_of_the_ruler(tmp_path: Path) -> None:
    # A rigged embedder scores everything as similar: its source is judged like a check's.
    project = Project(tmp_path / "p")
    project.root.mkdir()
    project.write_system()
    project.write_text("vectors.py", "SIZE = 4\n")
    project.write_text(
        "embedder.py", "from vectors import SIZE\ndef embed(texts):\n    return [[1.0] * SIZE]\n"
    )
    project.write_config(
        embeddings={"provider": "python", "target": "embedder:embed", "model": "words-v1"}
    )
    project.write_cases([case("a", "hi", similar={"to": "hello", "min": 0.5})])
    init_repository(project.root)
    assert changes_after(project, tmp_path / "same") == []
    for file in ("embedder.py", "vectors.py"):
        original = (project.root / file).read_text()
        (project.root / file).write_text(original + "# everything is close now\n")
        found = changes_after(project, tmp_path / f"scratch-{file}")
        assert f"- instrument module {file.removesuffix('.py')}: source changed" in found, found
        (project.root / file).write_text(original)


def test_a_version_bump_takes_a_pairwise_case_out_of_its_rule_only_with_acceptance(
    project: Project, tmp_path: Path
) -> None:
    pairwise = {"rubric": "Which answer is warmer?", "mode": "pairwise"}
    project.write_config(
        judge={"provider": "openai", "model": "judge-2025-01-01"},
        gate={"max_pairwise_loss_rate": 0.2},
    )
    project.write_cases([case("tone", "hi", judge=pairwise), *CASES[1:]])
    init_repository(project.root)
    bumped = {**case("tone", "hi", judge=pairwise, max_words=50), "version": 2}
    project.write_cases([bumped, *CASES[1:]])
    assert changes_after(project, tmp_path / "a") == [
        "- case tone: version 1 → 2 (its pairwise comparison is skipped while "
        "max_pairwise_loss_rate is set)",
        "+ case tone: expect changed: max_words added",
    ]


def test_a_key_the_review_does_not_know_loosens(
    repo: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #19: a key added to the config or the gate rule before the review learns how
    it moves a verdict counts as loosening (when in doubt, casegate does not say ship)."""
    directions = {k: v for k, v in rulerside.RULE_DIRECTIONS.items() if k != "tolerance"}
    monkeypatch.setattr(rulerdiff, "RULE_DIRECTIONS", directions)
    monkeypatch.setattr(rulerdiff, "COMPARED_KEYS", rulerdiff.COMPARED_KEYS - {"samples"})
    found = changes_after(repo, tmp_path, ("gate.tolerance=0.2", "samples=3"))
    assert (
        "- gate rule: tolerance 0 → 0.2 (a key the review does not know: counted as loosening)"
        in found
    )
    assert (
        "- config key samples: changed; casegate cannot tell whether it can turn a fail into a pass"
        in found
    )


def test_keys_that_decide_no_verdict_are_not_ruler_changes(repo: Project, tmp_path: Path) -> None:
    overrides = ("concurrency=3", "baseline_max_age_days=5", "input_schema.type=object")
    assert changes_after(repo, tmp_path, overrides) == []


def test_privacy_settings_are_no_ruler_change(repo: Project, tmp_path: Path) -> None:
    # `privacy.redact_keys` says what `casegate add` drops from production data; no check
    # reads it, so no verdict can move with it (issue #24).
    assert changes_after(repo, tmp_path, ("privacy.redact_keys=[ssn]",)) == []


def test_leaving_a_cluster_loosens(repo: Project, tmp_path: Path) -> None:
    """Clusters widen the suite test's interval (issue #20); under a ruling the base's
    clusters are used, and a pull request that moves a case out of one is listed."""
    greet, echo, other = CASES
    repo.write_cases([greet, {**echo, "cluster": "words"}, {**other, "cluster": "words"}])
    git("commit", "-qam", "clusters", cwd=repo.root)
    repo.write_cases([greet, echo, {**other, "cluster": "words"}])
    assert changes_after(repo, tmp_path) == ["- case echo: cluster words → none"]


def test_history_lines_a_pull_request_appends_are_listed_not_blocked(
    repo: Project, tmp_path: Path
) -> None:
    """Once merged, every later check trusts the history (the shift between runs among
    it): a reviewer sees the lines come in. They only append, so nothing blocks."""
    export = repo.root / "history" / "demo.jsonl"
    export.parent.mkdir(exist_ok=True)
    export.write_text('{"a": 1}\n')
    git("add", "-A", cwd=repo.root)
    git("commit", "-qm", "history", cwd=repo.root)
    export.write_text('{"a": 1}\n\n{"b": 2}\n{"c": 3}\n')
    assert changes_after(repo, tmp_path) == [
        "+ history export: 2 line(s) appended by this pull request; the history is written by "
        "the baseline job, and once merged every later check trusts these lines (this check "
        "reads the base's copy)"
    ]


def test_a_changed_judge_calibration_is_listed_with_its_figures(
    repo: Project, tmp_path: Path
) -> None:
    stored = repo.root / "demo.judge-calibration.json"
    stored.write_text(json.dumps({"kappa": 0.33, "judged": 6}))
    git("add", "-A", cwd=repo.root)
    git("commit", "-qm", "a calibration", cwd=repo.root)
    stored.write_text(json.dumps({"kappa": 0.95, "judged": 40, "note": "](x) <b>"}))
    assert changes_after(repo, tmp_path) == [
        "+ judge calibration: kappa 0.33, 6 judged of ? labels → kappa 0.95, 40 judged of ? "
        "labels (this check reads the base's copy)"
    ]
    stored.write_text("not json")
    assert changes_after(repo, tmp_path) == [
        "+ judge calibration: kappa 0.33, 6 judged of ? labels → unreadable (this check reads "
        "the base's copy)"
    ]


def test_a_lower_calibration_bar_is_listed(repo: Project, tmp_path: Path) -> None:
    """It decides no verdict (a check holds the judge to the base's bar), but once merged it
    silences every later report's warnings: a reviewer sees it."""
    assert changes_after(repo, tmp_path, ("calibration.min_labels=1",)) == [
        "+ judge calibration bar: min_labels 30 → 1 (this check holds the judge to the base's)"
    ]


def test_a_calibration_edit_that_keeps_its_headline_figures_still_says_so(
    repo: Project, tmp_path: Path
) -> None:
    stored = repo.root / "demo.judge-calibration.json"
    stored.write_text(
        json.dumps({"kappa": 0.21, "judged": 40, "labels": 40, "system_fingerprint": "a"})
    )
    git("add", "-A", cwd=repo.root)
    git("commit", "-qm", "a calibration", cwd=repo.root)
    stored.write_text(json.dumps({"kappa": 0.21, "judged": 40, "labels": 40}))
    assert changes_after(repo, tmp_path) == [
        "+ judge calibration: kappa 0.21, 40 judged of 40 labels, other fields changed (this "
        "check reads the base's copy)"
    ]


def test_a_smaller_baseline_estimate_loosens(repo: Project, tmp_path: Path) -> None:
    """Once merged, fewer baseline samples cost every later pull request power against a
    critical drop: counted as loosening, like any key the review has no direction for."""
    assert changes_after(repo, tmp_path, ("baseline_samples=1",)) == [
        "- config key baseline_samples: changed; casegate cannot tell whether it can turn a "
        "fail into a pass"
    ]
