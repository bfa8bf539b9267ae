"""What a comparison says about the held-out slice: counts and rates, never a case.

Pure data and plain text (the reports escape it where it lands), so that
gate.deciding.compare can hold one without importing how a slice is run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Status = Literal["compared", "uncompared", "skipped", "unscored", "absent"]
#: the sealed slice's file in its folder; here, below gate.holdout, because the ruler
#: reads it too (gate.deciding.heldoutdiff)
SLICE_FILE = "slice.sealed"
ROTATE_HINT = "rotate it: `casegate holdout rotate --fraction 0.2`"


@dataclass(slots=True)
class HoldoutComparison:
    """The slice of the candidate run, and its change from the baseline's slice.

    `compared`: both runs scored it and their verdicts were compared case by case;
    `uncompared`: the candidate scored it but there is nothing to compare with (`note`);
    `skipped` / `unscored`: the candidate did not score it (`note` says why);
    `absent`: the baseline scored a slice and the candidate run has none.
    """

    status: Status
    note: str = ""
    cases: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    pass_rate: float | None = None
    baseline_pass_rate: float | None = None
    #: held-out cases both runs scored with the same version
    shared: int = 0
    shared_baseline_rate: float | None = None
    shared_candidate_rate: float | None = None
    regressions: int | None = None
    fixes: int | None = None
    rotation: str | None = None
    reads: int = 0
    max_reads: int | None = None

    @property
    def fitted(self) -> bool:
        """Scored more often since its last rotation than `holdout.max_reads` allows."""
        return self.max_reads is not None and self.reads > self.max_reads

    def fitted_warning(self) -> str | None:
        if not self.fitted:
            return None
        return (
            f"the held-out slice was scored {self.reads} times since its last rotation "
            f"(holdout.max_reads {self.max_reads}): changes tuned on its aggregate have fitted "
            f"it by now; {ROTATE_HINT}"
        )

    def headline(self) -> str:
        if self.status in ("skipped", "unscored", "absent"):
            word = {"skipped": "skipped", "unscored": "not scored", "absent": "not run"}
            return f"held-out slice {word[self.status]}: {self.note}"
        text = (
            f"held-out slice: {self.passed}/{self.cases} pass"
            + (f" ({self.pass_rate:.1%})" if self.pass_rate is not None else "")
            + f", {self.failed} fail, {self.errors} error(s)"
        )
        if self.status == "compared":
            before = _pct(self.shared_baseline_rate)
            after = _pct(self.shared_candidate_rate)
            text += (
                f"; on the {self.shared} held-out case(s) both runs scored: {before} → {after}, "
                f"{self.regressions} regression(s), {self.fixes} fix(es)"
            )
        elif self.note:
            text += f"; {self.note}"
        return text

    def lines(self) -> list[str]:
        """Plain text, one fact per line: the headline, the read count, the warning."""
        lines = [self.headline()]
        if self.status in ("compared", "uncompared"):
            limit = f" (holdout.max_reads {self.max_reads})" if self.max_reads else ""
            lines.append(
                f"scored {self.reads} time(s) since its last rotation{limit}; only aggregates "
                "are shown, never a held-out case"
            )
        warning = self.fitted_warning()
        if warning:
            lines.append(warning)
        return lines

    def to_dict(self) -> dict[str, Any]:
        found = asdict(self)
        found["fitted"] = self.fitted
        return found


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"
