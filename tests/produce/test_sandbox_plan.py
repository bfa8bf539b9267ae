"""What the log says the sandbox closed: only what this machine has.

A laptop has no step file commands, no event file and often no Docker socket; a line
saying they were closed would describe a CI job that is not the one running."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.produce import sandbox


@pytest.fixture(autouse=True)
def _as_root_without_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "can_drop", lambda: True)
    monkeypatch.setattr(sandbox, "DOCKER_SOCKETS", ())


def closed(environ: dict[str, str]) -> list[str]:
    described = sandbox.plan("auto", replay=True, reads=[], environ=environ).describe()
    return [line for line in described if "closed to it" in line]


def test_a_laptop_has_nothing_to_close_and_the_log_claims_nothing() -> None:
    assert closed({}) == []


def test_a_ci_step_names_each_kind_it_closed(tmp_path: Path) -> None:
    socket_file = tmp_path / "docker.sock"
    socket_file.touch()
    environ = {
        "GITHUB_OUTPUT": str(tmp_path / "out"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
        "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
        "DOCKER_HOST": f"unix://{socket_file}",
    }
    assert closed(environ) == [
        "sandbox: closed to it: the step's file commands, the event file, the Docker socket"
    ]


@pytest.mark.parametrize(
    ("environ", "said"),
    [
        ({"GITHUB_ENV": "/x/env"}, "closed to it: the step's file commands"),
        ({"GITHUB_EVENT_PATH": "/x/event.json"}, "closed to it: the event file"),
    ],
)
def test_one_kind_alone(environ: dict[str, str], said: str) -> None:
    assert closed(environ) == [f"sandbox: {said}"]


def test_a_docker_socket_on_a_laptop_is_named(tmp_path: Path) -> None:
    socket_file = tmp_path / "docker.sock"
    socket_file.touch()
    assert closed({"DOCKER_HOST": f"unix://{socket_file}"}) == [
        "sandbox: closed to it: the Docker socket"
    ]
