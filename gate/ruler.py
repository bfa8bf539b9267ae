"""The ruler: what a run is judged by, as the base commit says it is.

A pull request is untrusted input. Its config and cases may say anything; the
gate's rule, the baseline, the case selection, every case's criticality and
expectation, the sample counts and thresholds, the judge pin and the source of
custom checks are read from the base commit and compared with the pull
request's. Every difference is a `RulerChange`; one that loosens blocks unless
it was accepted on purpose (a label, or `--accept-ruler-change`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class RulerChange:
    """One difference between the base's ruler and the pull request's, in plain words."""

    #: what changed, e.g. "gate rule", "case `refund-window`", "case selection"
    subject: str
    #: what happened to it, e.g. "block_on_critical_regression true → false"
    text: str
    #: `file:line` in the pull request (or the base, for something removed); "" if unknown
    where: str
    loosens: bool

    def describe(self) -> str:
        return f"{self.subject}: {self.text}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "change": self.text,
            "where": self.where,
            "loosens": self.loosens,
        }


@dataclass(frozen=True, slots=True)
class RulerReview:
    """The ruler of one pull request: its changes and whether they were accepted."""

    #: the commit the ruler was read from (short sha or ref)
    base: str
    changes: list[RulerChange] = field(default_factory=list)
    accepted: bool = False
    #: how the acceptance was given, e.g. "label `casegate:accept-ruler-change` (added by x)"
    accepted_by: str | None = None
    #: facts about how the base was found (e.g. "not a merge commit: used base.sha")
    notes: list[str] = field(default_factory=list)

    @property
    def loosening(self) -> list[RulerChange]:
        return [change for change in self.changes if change.loosens]

    @property
    def tightening(self) -> list[RulerChange]:
        return [change for change in self.changes if not change.loosens]

    @property
    def blocks(self) -> bool:
        return bool(self.loosening) and not self.accepted

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "accepted": self.accepted,
            "accepted_by": self.accepted_by,
            "blocks": self.blocks,
            "notes": list(self.notes),
            "changes": [change.to_dict() for change in self.changes],
        }
