"""Which export the report believes: the working copy without a ruling, the base commit's
copy under one (found in the extracted tree even when the ruling was accepted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.deciding.basetree import extract_tree
from gate.deciding.ruler import Ruling
from gate.deciding.rulerside import RulerReview
from gate.errors import ConfigError
from gate.history.locate import trusted_export
from gate.suite.config import GateConfig, load_config
from tests.fakes.actions import git, init_repository

CONFIG = "suite: s\ncases: cases\nsystem: {name: x, provider: python, target: 'bot:answer'}\n"


def _repository(tmp_path: Path, history: str | None) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    extra = f"history: {history}\n" if history else ""
    (repo / "app" / "casegate.yml").write_text(CONFIG + extra)
    (repo / "app" / "history").mkdir()
    (repo / "app" / "history" / "s.jsonl").write_text("")
    (repo / "shared.jsonl").write_text("")
    return repo, init_repository(repo)


def _ruling(tmp_path: Path, repo: Path, commit: str) -> Ruling:
    tree, _ = extract_tree(repo, commit, tmp_path / "scratch")
    return Ruling(
        review=RulerReview(base=commit[:12]),
        rule=GateConfig(),
        baseline_path=tree / "none.json",
        base=None,  # as when a loosening change was accepted
        base_config=load_config(tree / "app" / "casegate.yml"),
    )


def test_without_a_ruling_the_working_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, _ = _repository(tmp_path, None)
    monkeypatch.chdir(repo)
    path, source = trusted_export(load_config(Path("app/casegate.yml")), None)
    assert path == Path("app/history/s.jsonl")
    assert source == "app/history/s.jsonl in the working copy"


def test_under_a_ruling_the_base_commits_copy(tmp_path: Path) -> None:
    repo, commit = _repository(tmp_path, "../shared.jsonl")
    ruling = _ruling(tmp_path, repo, commit)
    # The pull request moves its history elsewhere: the base's setting is the one read.
    (repo / "app" / "casegate.yml").write_text(CONFIG + "history: /etc/passwd\n")
    path, source = trusted_export(load_config(repo / "app" / "casegate.yml"), ruling)
    assert path == (tmp_path / "scratch" / f"base-{commit[:12]}" / "shared.jsonl").resolve()
    assert source == f"shared.jsonl on the base commit {commit[:7]}"


def test_a_base_export_outside_its_tree_or_through_a_link_is_refused(tmp_path: Path) -> None:
    repo, commit = _repository(tmp_path, "../../outside.jsonl")
    with pytest.raises(ConfigError, match="points outside the repository"):
        trusted_export(load_config(repo / "app" / "casegate.yml"), _ruling(tmp_path, repo, commit))

    (repo / "app" / "casegate.yml").write_text(CONFIG + "history: linked.jsonl\n")
    (repo / "app" / "linked.jsonl").symlink_to("history/s.jsonl")
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "link", cwd=repo)
    commit = git("rev-parse", "HEAD", cwd=repo)
    with pytest.raises(ConfigError, match="goes through a symbolic link"):
        trusted_export(load_config(repo / "app" / "casegate.yml"), _ruling(tmp_path, repo, commit))


def test_a_base_without_a_config_has_no_history_to_trust(tmp_path: Path) -> None:
    repo, commit = _repository(tmp_path, None)
    ruling = _ruling(tmp_path, repo, commit)
    ruling.base_config = None
    assert trusted_export(load_config(repo / "app" / "casegate.yml"), ruling) == (None, "")


def test_an_unset_history_key_leaves_the_config_hash_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "casegate.yml").write_text(CONFIG)
    loaded = load_config(tmp_path / "casegate.yml")
    assert "history" not in loaded.as_dict()  # so every earlier baseline keeps its hash
    moved = load_config(tmp_path / "casegate.yml", ["history=records/s.jsonl"])
    assert moved.as_dict()["history"] == "records/s.jsonl"
    assert moved.config_hash() != loaded.config_hash()
