"""The roll-up's view of the base commit: its configs, from a working directory in a subfolder."""

from __future__ import annotations

from pathlib import Path

from gate.github.multisuite import Base
from gate.github.suites import Entry, resolve
from tests.fakes.actions import git, init_repository


def test_the_base_is_listed_from_the_working_directory(tmp_path: Path) -> None:
    service = tmp_path / "services" / "bot"
    service.mkdir(parents=True)
    for name in ("casegate.a.yml", "casegate.b.yml"):
        (service / name).write_text("suite: x\n")
    (tmp_path / "casegate.top.yml").write_text("suite: top\n")  # outside the working directory
    (service / "casegate.link.yml").symlink_to("casegate.a.yml")  # not a real file: left out
    base = init_repository(tmp_path)
    (service / "casegate.b.yml").unlink()
    (service / "casegate.c.yml").write_text("suite: c\n")
    git("add", "-A", cwd=tmp_path)
    git("commit", "-qm", "the pull request", cwd=tmp_path)

    seen = Base(service, {"pull_request": {"base": {"sha": base}}})
    assert seen.commit == base and seen.prefix == "services/bot"
    assert sorted(seen.files()) == ["casegate.a.yml", "casegate.b.yml"]
    assert resolve("casegate.*.yml", service, seen.files()) == [
        Entry("casegate.a.yml"),
        Entry("casegate.b.yml", removed=True),
        Entry("casegate.c.yml"),
        Entry("casegate.link.yml"),  # in the checkout: its ruling refuses the link
    ]
