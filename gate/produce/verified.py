"""What CI recorded for a merged pull request, adopted into the recordings folder.

`verify: changed` records again, in a pull request's check, the requests whose recordings
the pull request added or changed, and the starter workflow uploads the folder as the
artifact `casegate-verified-recordings`. After the merge, the baseline refresh downloads it
and adopts it (`casegate recordings adopt DIR`, or the Action's `adopt-recordings` input
with `command: baseline`): each entry sealed under the repository's recording key
replaces the author's entry for the same request, and is committed with the refreshed
baseline, so the next pull request is held to CI's answers.

The folder CI uploaded also holds the pull request's own recordings, so everything else in
it is left out: an entry that is unsealed, sealed under another key, or whose seal is
broken. The artifact is input like any file: read with the recordings' size limits,
walked without following a symlink, and only the suite's own cases adopted. Nothing is
adopted without the key, since without it no seal can be told from a forgery.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

from gate.errors import ResultsError
from gate.produce.recordings import WORK_FOLDER, RecordingStore
from gate.produce.seal import RecordingKey

#: the artifact the starter pull-request workflow uploads
ARTIFACT = "casegate-verified-recordings"


@dataclass(frozen=True, slots=True)
class Adopted:
    """What `adopt_sealed` wrote, and what it left out and why."""

    #: entries written: new to the folder, or in place of the author's
    written: int
    #: sealed entries the folder already held word for word
    unchanged: int
    #: entries left out, by reason
    refused: dict[str, int]
    #: the cases written to
    cases: tuple[str, ...]

    def lines(self, source: Path) -> list[str]:
        lines = [
            f"adopted {self.written} sealed recording(s) from {source} into "
            f"{len(self.cases)} case file(s)"
            + (f" ({', '.join(self.cases[:10])}{' …' if len(self.cases) > 10 else ''})")
            * bool(self.cases)
            + (f"; {self.unchanged} already there" if self.unchanged else "")
        ]
        if self.refused:
            shown = ", ".join(f"{count} {reason}" for reason, count in sorted(self.refused.items()))
            lines.append(f"left out (never CI's sealed answers): {shown}")
        return lines


def _files(source: Path) -> Iterator[Path]:
    """Every `.json` file under `source`, symlinks never followed nor read, the recorders'
    own work folders skipped."""
    for folder, subfolders, names in os.walk(source, followlinks=False):
        subfolders[:] = sorted(name for name in subfolders if name != WORK_FOLDER)
        for name in sorted(names):
            path = Path(folder) / name
            if name.endswith(".json") and not path.is_symlink() and path.is_file():
                yield path


def _newer_seal(
    key: RecordingKey, case_id: str, request: str, held: dict[str, object], entry: dict[str, object]
) -> bool:
    """Whether the folder's own entry is sealed too and was made later (a pull request
    merged after this one recorded the same request again)."""
    if key.state(case_id, request, held) != "sealed":
        return False
    return str(held.get("captured_at", "")) > str(entry.get("captured_at", ""))


def adopt_sealed(
    source: Path, store: RecordingStore, case_ids: Collection[str], key: RecordingKey
) -> Adopted:
    """Write into `store` every entry under `source` sealed by `key` for one of `case_ids`."""
    if not source.is_dir() or source.is_symlink():
        raise ResultsError(
            f"{source}: not a folder of recordings (the `{ARTIFACT}` artifact, downloaded)"
        )
    refused: Counter[str] = Counter()
    unchanged = 0
    wanted: dict[str, dict[str, dict[str, object]]] = {}
    for path in _files(source):
        try:
            document = store.read_file(path)
        except ResultsError:
            refused["unreadable file(s)"] += 1
            continue
        case_id, responses = document.get("case"), document["responses"]
        if not isinstance(case_id, str) or case_id not in case_ids:
            refused["of no case in this suite"] += len(responses)
            continue
        for request, entry in responses.items():
            state = key.state(case_id, request, entry) if isinstance(entry, dict) else "broken"
            held = store.get_entry(case_id, request)
            if state != "sealed":
                refused[state] += 1
            elif held == entry:
                unchanged += 1
            elif held is not None and _newer_seal(key, case_id, request, held, entry):
                refused["older than the folder's own sealed answer"] += 1
            else:
                wanted.setdefault(case_id, {})[request] = entry
    for case_id, entries in sorted(wanted.items()):
        for request, entry in sorted(entries.items()):
            store.put_entry(case_id, request, entry)
    return Adopted(
        written=sum(len(entries) for entries in wanted.values()),
        unchanged=unchanged,
        refused=dict(refused),
        cases=tuple(sorted(wanted)),
    )
