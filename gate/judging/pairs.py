"""The record of a pairwise comparison: each sample's pair from the candidate's side (a win,
a loss, a tie or an error), per case and overall, with an exact two-sided sign test over
the pairs that are not ties. gate.judging.pairwise judges the pairs that fill it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

Outcome = Literal["win", "loss", "tie", "error"]
#: the sign test sums exact integers up to this many non-ties, logarithms past it
EXACT_SIGN_TEST_LIMIT = 5_000


@dataclass(frozen=True, slots=True)
class Pair:
    """One sample's comparison, from the candidate's side."""

    sample: int
    outcome: Outcome
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"sample": self.sample, "outcome": self.outcome, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class CasePairs:
    id: str
    critical: bool
    pairs: list[Pair]

    def count(self, outcome: Outcome) -> int:
        return sum(1 for pair in self.pairs if pair.outcome == outcome)

    def telling(self) -> Pair:
        """The pair that says most about the case: a loss, else an error, a win, a tie."""
        for outcome in ("loss", "error", "win"):
            found = next((p for p in self.pairs if p.outcome == outcome), None)
            if found is not None:
                return found
        return self.pairs[0]


@dataclass(slots=True)
class PairwiseAnalysis:
    """Every pairwise case of a comparison: judged pairs, and the cases left out with why."""

    judge: str
    cases: list[CasePairs] = field(default_factory=list)
    #: case id → why it was not compared (a new case, a new version, no output)
    not_compared: dict[str, str] = field(default_factory=dict)
    #: cases on both sides with no output to compare on the candidate: an error is
    #: never a win, so these weigh against the loss-rate rule
    candidate_errors: list[str] = field(default_factory=list)

    def total(self, outcome: Outcome) -> int:
        return sum(case.count(outcome) for case in self.cases)

    @property
    def wins(self) -> int:
        return self.total("win")

    @property
    def losses(self) -> int:
        return self.total("loss")

    @property
    def ties(self) -> int:
        return self.total("tie")

    @property
    def errors(self) -> int:
        return self.total("error")

    @property
    def judged(self) -> int:
        """Pairs with a verdict (wins, losses and ties; not errors)."""
        return self.wins + self.losses + self.ties

    @property
    def loss_rate(self) -> float | None:
        return self.losses / self.judged if self.judged else None

    @property
    def p_value(self) -> float | None:
        """Exact two-sided sign test over the non-ties; None when every pair tied."""
        if not self.wins + self.losses:
            return None
        return sign_test(self.wins, self.losses)

    def summary(self) -> str:
        """One line: the counts, the loss rate and the sign test."""
        text = (
            f"candidate wins {self.wins}, losses {self.losses}, ties {self.ties} over "
            f"{self.judged} judged pair(s) in {len(self.cases)} case(s)"
        )
        if self.errors:
            text += f", {self.errors} pair(s) in error"
        if self.loss_rate is not None:
            text += f"; loss rate {self.loss_rate:.1%}"
        p_value = self.p_value
        if p_value is None:
            text += "; sign test: no pair was won or lost"
        else:
            text += (
                f"; sign test over {self.wins + self.losses} non-ties, two-sided p = {p_value:.3g}"
            )
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "errors": self.errors,
            "judged": self.judged,
            "loss_rate": self.loss_rate,
            "sign_test_p_value": self.p_value,
            "cases": {
                case.id: {
                    "critical": case.critical,
                    "wins": case.count("win"),
                    "losses": case.count("loss"),
                    "ties": case.count("tie"),
                    "errors": case.count("error"),
                    "pairs": [pair.to_dict() for pair in case.pairs],
                }
                for case in self.cases
            },
            "not_compared": self.not_compared,
        }


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test: under "no preference" each non-tie is a fair coin.

    p = P(|X - n/2| >= |wins - n/2|) for X ~ Binomial(n, 1/2), summed in integers.
    """
    n = wins + losses
    if n == 0:
        return 1.0
    low = min(wins, losses)
    if n <= EXACT_SIGN_TEST_LIMIT:
        tail = sum(math.comb(n, k) for k in range(low + 1))
        return float(min(Fraction(1), Fraction(2 * tail, 2**n)))
    # Past the limit the integers get long: the same sum in logarithms (lgamma).
    logs = [
        math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2)
        for k in range(low + 1)
    ]
    top = max(logs)
    return min(1.0, 2 * math.exp(top) * math.fsum(math.exp(v - top) for v in logs))
