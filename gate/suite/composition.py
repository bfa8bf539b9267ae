"""What a suite is made of: counts by tag and cluster, the critical share, the cases' age,
how many say why they exist, what was added lately, and which tags no critical case guards.

A pure function from the readable cases to a frozen record; `casegate suite` prints it
(gate.reporting.composition) and the markdown report ends with its one-line footer. The
held-out slice is sealed: none of its cases is ever here, not even counted.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gate.suite.cases import NOTE_PLACEHOLDER as PLACEHOLDER_NOTE
from gate.suite.cases import Case

#: a case added within this many days (today included) is a recent addition
RECENT_DAYS = 30
#: the JSON's schema: its keys are documented in docs/cases.md and kept stable
SCHEMA = "casegate.suite/1"


@dataclass(frozen=True, slots=True)
class Composition:
    """The figures `casegate suite` prints; every field is a count, a share or an id list."""

    cases: int
    critical: int
    #: tag -> cases carrying it, by tag name; the tag `critical` is counted in `critical`
    by_tag: tuple[tuple[str, int], ...]
    untagged: int
    #: cluster -> cases in it, by name
    by_cluster: tuple[tuple[str, int], ...]
    unclustered: int
    #: cases whose `added:` is a date; the rest have none (or one that is not a date)
    dated: int
    oldest: dt.date | None
    median: dt.date | None
    newest: dt.date | None
    #: cases that say why they exist: `provenance`, or a `note` other than the placeholder
    explained: int
    #: notes still saying PLACEHOLDER_NOTE: a case whose author has not said why yet
    placeholder_notes: int
    #: ids of the cases added in the RECENT_DAYS days up to `as_of`, newest first
    recent: tuple[str, ...]
    recent_days: int
    as_of: dt.date
    #: tags no critical case carries, by name
    tags_without_critical: tuple[str, ...]

    @property
    def undated(self) -> int:
        return self.cases - self.dated

    @property
    def critical_share(self) -> float:
        return self.critical / self.cases if self.cases else 0.0

    @property
    def explained_share(self) -> float:
        return self.explained / self.cases if self.cases else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (`casegate suite --format json`): keys as docs/cases.md lists them."""

        def day(value: dt.date | None) -> str | None:
            return None if value is None else value.isoformat()

        return {
            "schema": SCHEMA,
            "as_of": self.as_of.isoformat(),
            "cases": self.cases,
            "critical": self.critical,
            "critical_share": round(self.critical_share, 4),
            "tags": dict(self.by_tag),
            "untagged": self.untagged,
            "clusters": dict(self.by_cluster),
            "unclustered": self.unclustered,
            "tags_without_critical": list(self.tags_without_critical),
            "age": {
                "dated": self.dated,
                "undated": self.undated,
                "oldest": day(self.oldest),
                "median": day(self.median),
                "newest": day(self.newest),
            },
            "provenance": {
                "explained": self.explained,
                "unexplained": self.cases - self.explained,
                "share": round(self.explained_share, 4),
                "placeholder_notes": self.placeholder_notes,
            },
            "recent": {
                "days": self.recent_days,
                "count": len(self.recent),
                "ids": list(self.recent),
            },
        }


def composition(
    cases: Sequence[Case],
    *,
    today: dt.date,
    recent_days: int = RECENT_DAYS,
    cluster: Callable[[Case], str | None] | None = None,
) -> Composition:
    """The suite's figures as of `today`; `cluster` gives a case's cluster (default: its
    own `cluster:`; the caller may apply the suite's `clusters:` rule)."""
    cluster_of = cluster or (lambda case: case.cluster)
    tags: Counter[str] = Counter()
    guarded: set[str] = set()
    clusters: Counter[str] = Counter()
    dates: list[tuple[dt.date, str]] = []
    untagged = unclustered = explained = placeholders = 0
    for case in cases:
        own = sorted({tag for tag in case.tags if tag != "critical"})
        tags.update(own)
        if case.is_critical:
            guarded.update(own)
        untagged += not own
        name = cluster_of(case)
        if name:
            clusters[name] += 1
        else:
            unclustered += 1
        said, placeholder = _says_why(case)
        explained += said
        placeholders += placeholder
        added = _date_of(case.added)
        if added is not None:
            dates.append((added, case.id))
    since = today - dt.timedelta(days=recent_days - 1)
    recent = sorted(
        ((d, i) for d, i in dates if since <= d <= today), key=lambda p: (-p[0].toordinal(), p[1])
    )
    ordered = sorted(d for d, _ in dates)
    return Composition(
        cases=len(cases),
        critical=sum(1 for case in cases if case.is_critical),
        by_tag=tuple(sorted(tags.items())),
        untagged=untagged,
        by_cluster=tuple(sorted(clusters.items())),
        unclustered=unclustered,
        dated=len(ordered),
        oldest=ordered[0] if ordered else None,
        median=statistics.median_low(ordered) if ordered else None,
        newest=ordered[-1] if ordered else None,
        explained=explained,
        placeholder_notes=placeholders,
        recent=tuple(i for _, i in recent),
        recent_days=recent_days,
        as_of=today,
        tags_without_critical=tuple(sorted(set(tags) - guarded)),
    )


def _says_why(case: Case) -> tuple[bool, bool]:
    """(explained, only the placeholder): a provenance, or a note a person wrote."""
    provenance = (case.provenance or "").strip()
    note = (case.note or "").strip()
    placeholder = note == PLACEHOLDER_NOTE
    return bool(provenance) or (bool(note) and not placeholder), placeholder


def _date_of(value: dt.date | str | None) -> dt.date | None:
    """`added:` as a date: YAML gives one; JSON a string, read when it is an ISO date."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            return None
    return None
