"""The ruler of a pull request's check: read from the base commit, and a change that loosens it
accepted only by a label a maintainer adds (gate.deciding.ruler does the reading)."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gate.files import private_scratch

if TYPE_CHECKING:  # the entrypoint reads the inputs, then asks this module for the ruling
    from gate.github.action import Inputs


def mark_safe_directory(environ: MutableMapping[str, str]) -> None:
    """The workspace is owned by the runner's user, not the container's: tell git it is fine.

    `*`: actions/checkout may put the repository in any subfolder (`path:`). Said through
    this process's environment, which git reads as command-line configuration (protected,
    like the global file; git 2.31 or later), so every git this process starts sees it and
    nothing outlives the step. `git config --global --add` wrote to the job's shared home
    instead, and each run added another line.
    """
    count = environ.get("GIT_CONFIG_COUNT", "0")
    entries = int(count) if count.isdigit() else 0
    for index in range(entries):
        key = environ.get(f"GIT_CONFIG_KEY_{index}")
        if key == "safe.directory" and environ.get(f"GIT_CONFIG_VALUE_{index}") == "*":
            return
    environ[f"GIT_CONFIG_KEY_{entries}"] = "safe.directory"
    environ[f"GIT_CONFIG_VALUE_{entries}"] = "*"
    environ["GIT_CONFIG_COUNT"] = str(entries + 1)


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
