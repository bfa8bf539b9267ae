"""How old the replayed recordings are: a warning in every report, never a block.

A recording is the provider's answer on the day it was captured. A provider can
change a model under the same name, so the older a recording, the less a replayed
verdict says about what the system answers today. `recordings.max_age_days`
(default 90) is where reports start saying so; `casegate drift` is what measures it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: the default of `recordings.max_age_days` (gate.suite.sections.RecordingsConfig)
DEFAULT_MAX_AGE_DAYS = 90
#: case ids named in a warning
LISTED = 5


def age_days(captured_at: str | None, now: dt.datetime) -> int | None:
    """Whole days since `captured_at` (ISO 8601, UTC when naive); None when unknown."""
    if not captured_at:
        return None
    try:
        captured = dt.datetime.fromisoformat(captured_at)
    except ValueError:
        return None
    if captured.tzinfo is None:
        captured = captured.replace(tzinfo=dt.UTC)  # casegate writes UTC
    return max(0, (now - captured).days)


def limit_of(config: Mapping[str, Any]) -> int | None:
    """`recordings.max_age_days` from a config as results store it (a path string, a
    mapping, or nothing: the default)."""
    recordings = config.get("recordings")
    if isinstance(recordings, Mapping) and "max_age_days" in recordings:
        limit = recordings["max_age_days"]
        return limit if isinstance(limit, int) and not isinstance(limit, bool) else None
    return DEFAULT_MAX_AGE_DAYS


@dataclass(frozen=True, slots=True)
class OldRecordings:
    """The cases that replayed a recording older than `limit` days."""

    limit: int
    #: case id → the age in days of its oldest replayed recording, oldest first
    cases: dict[str, int]
    oldest_captured_at: str

    def warning(self) -> str:
        oldest, days = next(iter(self.cases.items()))
        count = len(self.cases)
        shown = ", ".join(list(self.cases)[:LISTED])
        more = f" and {count - LISTED} more" if count > LISTED else ""
        return (
            f"{count} case(s) replay recordings older than {self.limit} days "
            f"(oldest: {oldest}, {days} days, captured {self.oldest_captured_at[:10]}; "
            f"{shown}{more}): the model may answer differently today; measure it with "
            "`casegate drift` and re-record what changed with `casegate drift --refresh` "
            "(the limit is recordings.max_age_days)"
        )


def old_recordings(
    samples: Iterable[tuple[str, str | None]], limit: int | None, now: dt.datetime | None = None
) -> OldRecordings | None:
    """From (case id, captured_at) pairs, the cases whose oldest recording is past `limit`."""
    if limit is None:
        return None
    now = now or dt.datetime.now(dt.UTC)
    oldest: dict[str, tuple[int, str]] = {}
    for case_id, captured_at in samples:
        days = age_days(captured_at, now)
        if days is None or days <= limit or captured_at is None:
            continue
        if case_id not in oldest or days > oldest[case_id][0]:
            oldest[case_id] = (days, captured_at)
    if not oldest:
        return None
    ordered = sorted(oldest.items(), key=lambda item: (-item[1][0], item[0]))
    return OldRecordings(
        limit=limit,
        cases={case_id: days for case_id, (days, _) in ordered},
        oldest_captured_at=ordered[0][1][1],
    )


def replay_warnings(results: Any, now: dt.datetime | None = None) -> list[str]:
    """The old-recordings warning for a results file (gate.results.RunResults), if any."""
    found = old_recordings(
        ((case.id, sample.captured_at) for case in results.cases for sample in case.outputs),
        limit_of(results.config),
        now,
    )
    return [found.warning()] if found is not None else []
