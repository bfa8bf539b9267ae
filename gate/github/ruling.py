"""The ruler of a pull request's check: read from the base commit, and a change that loosens it
accepted only by a label a maintainer adds (gate.deciding.ruler does the reading)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gate.errors import ConfigError
from gate.files import private_scratch
from gate.github.publish import _emit
from gate.logsafe import command

if TYPE_CHECKING:  # the entrypoint reads the inputs, then asks this module for the ruling
    from gate.github.action import Inputs


def mark_safe_directory(workspace: Path) -> None:
    """The workspace is owned by the runner's user, not the container's: tell git it is fine.

    `*`: actions/checkout may put the repository in any subfolder (`path:`).
    """
    from gate.deciding.basetree import git

    try:
        git("config", "--global", "--add", "safe.directory", "*", cwd=workspace)
    except ConfigError:
        _emit(command("warning", "git is not available; the ruler cannot be read from the base"))


def label_acceptance(event: Mapping[str, Any]) -> Any:
    """`acceptance(label)` for gate.deciding.ruler: who accepted a loosening change, from the
    event."""

    def accepted_by(label: str) -> str | None:
        pull = event.get("pull_request") or {}
        names = [item.get("name") for item in pull.get("labels") or [] if isinstance(item, dict)]
        if label not in names:
            return None
        sender = (event.get("sender") or {}).get("login")
        added_now = (
            event.get("action") == "labeled" and (event.get("label") or {}).get("name") == label
        )
        if added_now and isinstance(sender, str):
            return f"the label {label}, added by {sender}"
        return f"the label {label} on the pull request"

    return accepted_by


def pull_request_ruling(
    inputs: Inputs, event: Mapping[str, Any], environ: Mapping[str, str]
) -> Any:
    from gate.deciding.ruler import ruling_for

    pull = event.get("pull_request") or {}
    scratch = private_scratch("casegate-base-", environ.get("RUNNER_TEMP"))
    return ruling_for(
        Path(inputs.config),
        inputs.overrides,
        base_ref=None,
        scratch=scratch,
        baseline=inputs.baseline,
        acceptance=label_acceptance(event),
        how_to_accept=lambda label: (
            f"a maintainer accepts it by adding the label {label} to the pull request, "
            "which runs this check again"
        ),
        event_base_sha=(pull.get("base") or {}).get("sha"),
        event_head_sha=(pull.get("head") or {}).get("sha"),
    )
