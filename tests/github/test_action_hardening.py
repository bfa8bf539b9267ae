"""What a pull request commits cannot crash the Action or redirect its writes, and keys
are masked before anything fenced is printed.

Each test runs the Action's entrypoint as the runner does, on a pull request that
commits one odd thing: a link where casegate writes, a loop of links where it reads,
`.casegate` as a file; or a runner whose RUNNER_TEMP does not exist.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.actions import Runner, acted_on, open_pull_request


def no_traceback(finished: object) -> None:
    out = finished.stdout + finished.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in out, out


@pytest.mark.parametrize(
    ("name", "existing"),
    [("support-report.md", True), ("support-results.json", False)],  # a dangling link too
)
def test_a_committed_link_is_never_written_through(
    runner: Runner, name: str, existing: bool
) -> None:
    outside = runner.root / f"outside-{name}"
    if existing:
        outside.write_text("untouched\n")

    def link(root: Path) -> None:
        (root / ".casegate").mkdir()
        (root / ".casegate" / name).symlink_to(outside)

    open_pull_request(runner.workspace, link)
    finished = runner.run()
    no_traceback(finished)
    assert finished.returncode == 2
    assert f"{name}: is a symbolic link" in finished.stdout
    assert (outside.read_text() == "untouched\n") if existing else not outside.exists()


def test_a_committed_folder_link_is_never_written_through(runner: Runner) -> None:
    outside = runner.root / "elsewhere"
    outside.mkdir()
    open_pull_request(runner.workspace, lambda root: (root / ".casegate").symlink_to(outside))
    finished = runner.run()
    no_traceback(finished)
    assert finished.returncode == 2
    assert ".casegate: is a symbolic link" in finished.stdout
    assert list(outside.iterdir()) == []


def test_casegate_committed_as_a_file_is_one_clear_line(runner: Runner) -> None:
    open_pull_request(runner.workspace, lambda root: (root / ".casegate").write_text("x"))
    finished = runner.run()
    no_traceback(finished)
    assert finished.returncode == 2
    assert ".casegate: is a file" in finished.stdout


def loop_at(relative: str) -> object:
    def edit(root: Path) -> None:
        target = root / relative
        if target.is_dir():
            for child in sorted(target.rglob("*"), reverse=True):
                child.unlink() if not child.is_dir() else child.rmdir()
            target.rmdir()
        else:
            target.unlink()
        target.symlink_to(target.name)  # a link to itself

    return edit


@pytest.mark.parametrize(
    "relative", ["prompts/support.md", "recordings/support", "baselines/support.json"]
)
def test_a_loop_of_links_is_one_clear_line(runner: Runner, relative: str) -> None:
    open_pull_request(runner.workspace, loop_at(relative))  # type: ignore[arg-type]
    finished = runner.run(config="casegate.yml")
    no_traceback(finished)
    assert finished.returncode == 2, finished.stdout
    assert "is a loop of symbolic links" in finished.stdout, finished.stdout


def test_a_missing_runner_temp_falls_back_to_a_private_folder(runner: Runner) -> None:
    open_pull_request(runner.workspace, lambda root: None)
    env_temp = runner.root / "no-such-folder"
    finished = runner.run(config="casegate.yml", env_extra={"RUNNER_TEMP": str(env_temp)})
    no_traceback(finished)
    assert finished.returncode == 0, finished.stdout
    assert not env_temp.exists()


def test_keys_are_masked_before_anything_fenced(runner: Runner) -> None:
    key = "sk-not-a-repository-secret-4f1c9a"
    open_pull_request(runner.workspace, lambda root: None)
    finished = runner.run(set="system.model=standin-small", env_extra={"OPENAI_API_KEY": key})
    lines = finished.stdout.split("\n")
    commands = acted_on(finished.stdout)
    assert f"::add-mask::{key}" in commands  # read by the runner as a command
    first_fence = next(i for i, line in enumerate(lines) if line.startswith("::stop-commands::"))
    assert lines.index(f"::add-mask::{key}") < first_fence
