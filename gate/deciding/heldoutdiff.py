"""What a pull request changed about the held-out slice, as ruler changes.

The slice is part of the ruler: its file, its `holdout:` settings and the rule
`gate.holdout_max_drop` (gate.deciding.ruler's RULE_DIRECTIONS) are read from the base. A
pull request that removes the slice, points it elsewhere, renames the variable its
key is read from (an unset one would skip it), stops the read-count warning, or
edits the sealed cases loosens the ruler. Its recordings are not part of it: like
any recording they are the pull request's claim, and only a holder of the key can
make them.
"""

from __future__ import annotations

from dataclasses import dataclass

from gate.deciding.heldout import SLICE_FILE
from gate.suite.config import LoadedConfig


@dataclass(frozen=True, slots=True)
class Difference:
    subject: str
    text: str
    #: the config keys to point at (gate.deciding.ruler finds their line)
    keys: tuple[str, ...]
    loosens: bool
    #: a file to point at instead of the config
    where: str = ""


def differences(base: LoadedConfig, head: LoadedConfig) -> list[Difference]:
    before, after = base.config.holdout, head.config.holdout
    subject = "held-out slice"
    if before is None:
        if after is None:
            return []
        return [Difference(subject, f"declared: {after.path}", ("holdout",), False)]
    if after is None:
        return [
            Difference(
                subject,
                f"removed (was {before.path}): the base commit's slice is scored",
                ("holdout",),
                True,
            )
        ]
    found = []
    if before.path != after.path:
        found.append(
            Difference(subject, f"path {before.path} → {after.path}", ("holdout", "path"), True)
        )
    if before.key_env != after.key_env:
        found.append(
            Difference(
                subject,
                f"key_env {before.key_env} → {after.key_env} (a variable the secret is not in "
                "would skip the slice)",
                ("holdout", "key_env"),
                True,
            )
        )
    if before.max_reads != after.max_reads:
        raised = after.max_reads is None or (
            before.max_reads is not None and after.max_reads > before.max_reads
        )
        found.append(
            Difference(
                subject,
                f"max_reads {before.max_reads or 'none'} → {after.max_reads or 'none'}",
                ("holdout", "max_reads"),
                raised,
            )
        )
    shown = f"{before.path.rstrip('/')}/{SLICE_FILE}"
    old = _read(base, before.path)
    if old != _read(head, before.path):
        found.append(
            Difference(
                subject,
                f"{shown} edited, replaced or deleted by this pull request (the base commit's "
                "copy is scored)",
                (),
                True,
                where=shown,
            )
        )
    return found


def _read(loaded: LoadedConfig, folder: str) -> bytes | None:
    path = loaded.root / folder / SLICE_FILE
    try:
        return path.read_bytes() if path.is_file() and not path.is_symlink() else None
    except OSError:
        return None
