"""What CI recorded for a pull request, and adopting exactly that after the merge.

`verify: changed` records again, in a pull request's check, the requests whose recordings
the pull request added or changed. The check then writes a **manifest** of what it wrote
(`verified-recordings.json`): every entry, each sealed as any CI recording is, and the
whole sealed again under the recording key together with the suite and the pull
request's head commit. The starter workflow uploads it as the artifact
`casegate-verified-recordings`. After the merge, the baseline refresh downloads it and
adopts it (`casegate recordings adopt FOLDER --head SHA`, or the Action's
`adopt-recordings` and `adopt-head` inputs with `command: baseline`), and commits the
adopted entries with the refreshed baseline, so the next pull request is held to CI's
answers.

Only the manifest is read, never the recordings folder around it: a sealed entry is CI's
answer to *some* check, and an author could copy one from another run (another pull
request's, whose code answered it) into the files of their own. The manifest's seal binds
its entries to the suite and the head commit the baseline job names, so neither another
run's manifest nor another run's entry gets in. Nothing is adopted without the key.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.errors import ResultsError
from gate.files import parse_json, write_text
from gate.limits import MAX_RECORDING_BYTES, read_limited
from gate.produce.recordings import RecordingStore
from gate.produce.seal import RecordingKey

#: the artifact the starter pull-request workflow uploads, and the file it holds
ARTIFACT = "casegate-verified-recordings"
MANIFEST = "verified-recordings.json"
SCHEMA = "casegate.verified/1"
_PURPOSE = "verified manifest"

#: case id → request key → entry
Entries = dict[str, dict[str, dict[str, Any]]]


def seals_of(store: RecordingStore, case_ids: Collection[str]) -> dict[tuple[str, str], Any]:
    """Each entry's seal (or None) in `case_ids`' files now: taken before a verification, so
    that what it wrote is told by identity, never by a date an entry carries."""
    return {
        (case_id, request): entry.get("seal") if isinstance(entry, dict) else None
        for case_id in case_ids
        for request, entry in store.entries(case_id).items()
    }


def written_since(
    store: RecordingStore,
    case_ids: Collection[str],
    key: RecordingKey,
    before: Mapping[tuple[str, str], Any],
) -> Entries:
    """The entries of `case_ids` sealed under `key` that were not in the files as
    `before` (`seals_of`) saw them: what one verification wrote, answers, verdicts and
    measures alike. An entry a pull request committed, sealed by another run, was there
    before and is never one of them, whatever date it says."""
    found: Entries = {}
    for case_id in sorted(case_ids):
        for request, entry in store.entries(case_id).items():
            if (
                isinstance(entry, dict)
                and before.get((case_id, request)) != entry.get("seal")
                and key.state(case_id, request, entry) == "sealed"
            ):
                found.setdefault(case_id, {})[request] = entry
    return found


def write_manifest(path: Path, key: RecordingKey, suite: str, head: str, entries: Entries) -> None:
    body = {"schema": SCHEMA, "suite": suite, "head": head, "entries": entries}
    document = {**body, "seal": key.sign(_PURPOSE, body)}
    write_text(path, json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


@dataclass(frozen=True, slots=True)
class Adopted:
    """What `adopt` wrote, and what it left out and why."""

    #: entries written: new to the folder, or in place of the author's
    written: int
    #: entries the folder already held word for word
    unchanged: int
    #: entries left out, by reason
    refused: dict[str, int]
    #: the cases written to
    cases: tuple[str, ...]

    def lines(self, source: Path) -> list[str]:
        shown = f" ({', '.join(self.cases[:10])}{' …' if len(self.cases) > 10 else ''})"
        lines = [
            f"adopted {self.written} sealed recording(s) from {source} into "
            f"{len(self.cases)} case file(s)"
            + (shown if self.cases else "")
            + (f"; {self.unchanged} already there" if self.unchanged else "")
        ]
        if self.refused:
            left = ", ".join(f"{count} {why}" for why, count in sorted(self.refused.items()))
            lines.append(f"left out: {left}")
        return lines


def read_manifest(source: Path, key: RecordingKey, suite: str, head: str) -> Entries:
    """The entries of the manifest at `source` (the file, or the folder holding it), once
    its seal, suite and head commit are this key's, this suite's and `head`."""
    path = source / MANIFEST if source.is_dir() else source
    where = f"{path}: "
    try:
        document = parse_json(
            read_limited(path, MAX_RECORDING_BYTES, "a manifest", "", ResultsError),
            unique_keys=True,
        )
    except FileNotFoundError:
        raise ResultsError(
            f"{where}no manifest of verified recordings (the `{ARTIFACT}` artifact, "
            "downloaded, holds it)"
        ) from None
    except OSError as exc:
        raise ResultsError(f"{where}cannot read it ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise ResultsError(f"{where}not a manifest of verified recordings ({exc})") from None
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        raise ResultsError(f"{where}not a {SCHEMA} file")
    body = {name: document.get(name) for name in ("schema", "suite", "head", "entries")}
    if not key.signed(_PURPOSE, body, document.get("seal")):
        raise ResultsError(
            f"{where}its seal is not this repository's recording key's: it was not written by "
            "casegate's check with the key, or was edited since; nothing is adopted"
        )
    if body["suite"] != suite:
        raise ResultsError(f"{where}it is suite {body['suite']!r}'s, not {suite!r}'s")
    if body["head"] != head:
        raise ResultsError(
            f"{where}it was verified on commit {str(body['head'])[:12]}, not on {head[:12]}, "
            "the pull request's head: another run's answers are never adopted"
        )
    entries = body["entries"]
    if not isinstance(entries, dict) or not all(
        isinstance(by_key, dict) and all(isinstance(e, dict) for e in by_key.values())
        for by_key in entries.values()
    ):
        raise ResultsError(f"{where}its entries are not case → request → entry")
    return entries


def adopt(
    entries: Mapping[str, Mapping[str, dict[str, Any]]],
    store: RecordingStore,
    case_ids: Collection[str],
    key: RecordingKey,
) -> Adopted:
    """Write `entries` (a checked manifest's) into `store`: each one sealed under `key`, of
    one of `case_ids`, and not older than a sealed answer the folder holds for it."""
    refused: Counter[str] = Counter()
    unchanged = 0
    wanted: Entries = {}
    for case_id, by_key in entries.items():
        if case_id not in case_ids:
            refused["of no case in this suite"] += len(by_key)
            continue
        for request, entry in by_key.items():
            held = store.get_entry(case_id, request)
            if key.state(case_id, request, entry) != "sealed":
                refused["without a seal of this key"] += 1
            elif held == entry:
                unchanged += 1
            elif held is not None and _newer_seal(key, case_id, request, held, entry):
                refused["older than the folder's own sealed answer"] += 1
            else:
                wanted.setdefault(case_id, {})[request] = entry
    for case_id, by_key in sorted(wanted.items()):
        for request, entry in sorted(by_key.items()):
            store.put_entry(case_id, request, entry)
    return Adopted(
        written=sum(len(by_key) for by_key in wanted.values()),
        unchanged=unchanged,
        refused=dict(refused),
        cases=tuple(sorted(wanted)),
    )


def _newer_seal(
    key: RecordingKey, case_id: str, request: str, held: dict[str, Any], entry: dict[str, Any]
) -> bool:
    """Whether the folder's own entry is sealed too and was made later (a pull request
    merged after this one recorded the same request again)."""
    if key.state(case_id, request, held) != "sealed":
        return False
    made = str(held.get("captured_at", ""))
    # A date past now was never a recording's own: it must not bar CI's answers for good.
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return now >= made > str(entry.get("captured_at", ""))
