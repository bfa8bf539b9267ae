"""Attack 21, as the runner sees it: what the in-gate replay says when a recording is
malformed (it is now read and refused by the gate's own process, not a fenced child).

Every test asserts the SAFE outcome: a failing test means the attack worked.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.actions import Runner, acted_on, open_pull_request
from tests.github.test_action_attacks import ALLOWED_COMMANDS

HOSTILE = "x\n::warning::pwned-key\n::add-mask::casegate\n<img src=x onerror=alert(1)> @octocat #1"


def test_a_hostile_key_in_a_malformed_recording_is_no_command_mention_or_html(
    runner: Runner,
) -> None:
    def inject(root: Path) -> None:
        path = root / "recordings" / "support" / "greeting-only.json"
        document = json.loads(path.read_text())
        for entry in document["responses"].values():
            entry["output"][HOSTILE] = 1  # Output forbids extra keys: its name is in the error
        path.write_text(json.dumps(document, indent=2))

    open_pull_request(runner.workspace, inject)
    finished = runner.run()
    log = finished.stdout + finished.stderr
    assert finished.returncode == 2, log
    assert "greeting-only.json: recording" in log and "is malformed" in log, log
    commands = acted_on(finished.stdout) + acted_on(finished.stderr)
    assert all(line.startswith(ALLOWED_COMMANDS) for line in commands), commands
    assert not [line for line in commands if line.startswith(("::warning::pwned", "::add-mask::"))]
    summary = runner.summary()
    assert "<img" not in summary and "@octocat" not in summary.replace("\\@", ""), summary
