"""What the gate says: ship, block or inconclusive, and every reason it gives."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Decision = Literal["ship", "block", "inconclusive"]
EXIT_CODES = {"ship": 0, "block": 1, "inconclusive": 3}


@dataclass(frozen=True, slots=True)
class Reason:
    rule: str
    message: str
    cases: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "message": self.message, "cases": self.cases}


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: Decision
    reasons: list[Reason]
    #: things a person should read that did not block (non-critical regressions, …)
    notes: list[str]
    #: facts about the measuring instrument itself (the judge pin and its calibration)
    instrument: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.decision]
