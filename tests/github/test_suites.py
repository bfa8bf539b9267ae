"""Which configs the `config` input names: one, a glob or a list; in the checkout and the base."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.errors import ConfigError
from gate.github.suites import Entry, config_entries, matches, resolve, several


def test_entries_are_lines_or_commas() -> None:
    assert config_entries("a.yml") == ["a.yml"]
    assert config_entries("a.yml, b.yml\n# not this\n\n c.yml ") == ["a.yml", "b.yml", "c.yml"]
    assert not several("casegate.yml") and not several(" casegate.yml \n")
    assert several("a.yml,b.yml") and several("casegate.*.yml") and several("suites/[ab].yml")


@pytest.mark.parametrize(
    ("entry", "path", "found"),
    [
        ("casegate.*.yml", "casegate.support.yml", True),
        ("casegate.*.yml", "casegate.yml", False),
        ("casegate.*.yml", "sub/casegate.a.yml", False),  # a `*` stays in its folder
        ("suites/*.yml", "suites/a.yml", True),
        ("suites/*.yml", "suites/deep/a.yml", False),
        ("casegate.yml", "casegate.yml", True),
        ("./casegate.yml", "casegate.yml", True),
        ("Casegate.*.yml", "casegate.a.yml", False),  # as the checkout's file system is
    ],
)
def test_a_glob_matches_within_one_folder(entry: str, path: str, found: bool) -> None:
    assert matches(entry, path) is found


@pytest.mark.parametrize("entry", ["/etc/casegate.yml", "../other/casegate.yml", "**/*.yml"])
def test_entries_stay_in_the_working_directory(tmp_path: Path, entry: str) -> None:
    with pytest.raises(ConfigError, match="input `config`"):
        resolve(entry, tmp_path, None)


def test_the_base_and_the_checkout_are_joined(tmp_path: Path) -> None:
    for name in ("casegate.a.yml", "casegate.new.yml", "casegate.yml"):
        (tmp_path / name).write_text("suite: x\n")
    base = ["casegate.a.yml", "casegate.gone.yml", "casegate.yml", "cases/a.yaml"]
    assert resolve("casegate.*.yml", tmp_path, base) == [
        Entry("casegate.a.yml"),
        Entry("casegate.gone.yml", removed=True),
        Entry("casegate.new.yml"),
    ]
    # Outside a pull request there is no base: the checkout alone.
    assert [e.path for e in resolve("casegate.*.yml", tmp_path, None)] == [
        "casegate.a.yml",
        "casegate.new.yml",
    ]


def test_an_entry_that_matches_nothing_is_refused(tmp_path: Path) -> None:
    (tmp_path / "casegate.a.yml").write_text("suite: a\n")
    with pytest.raises(ConfigError, match=r"'casegate\.b\.yml' matches no config"):
        resolve("casegate.a.yml\ncasegate.b.yml", tmp_path, [])
    with pytest.raises(ConfigError, match="names no config"):
        resolve(" \n# nothing\n", tmp_path, None)
