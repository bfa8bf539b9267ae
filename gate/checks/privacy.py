"""`no_pii`: the output holds no personal data (gate.pii), of every kind or of those named."""

from __future__ import annotations

import collections
from typing import Any

from gate import pii
from gate.checks.base import CheckSpecError, Judge, Modifiers, Subject, Verdict, describe


def no_pii(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    """The output holds no personal data: `true`, or the kinds to look for (`[email, card]`).

    `true` looks for every kind gate.pii finds (email, iban, card, ip, phone).

    Fails naming the kinds and how many of each were found, never the values: a reason is
    printed in reports and pull-request comments, where the data must not travel. Score: 1
    when none is found, else 0.
    """
    kinds = _kinds(name, arg)

    def judge(subject: Subject) -> Verdict:
        found = collections.Counter(
            finding.kind for finding in pii.find(subject.text) if finding.kind in kinds
        )
        if not found:
            return Verdict(name, True, score=1.0)
        listed = ", ".join(f"{count} {kind}" for kind, count in sorted(found.items()))
        return Verdict(name, False, f"the output holds personal data: {listed}", score=0.0)

    return judge


def _kinds(name: str, arg: Any) -> frozenset[str]:
    allowed = ", ".join(pii.KINDS)
    if arg is True:
        return frozenset(pii.KINDS)
    if isinstance(arg, list) and arg and all(isinstance(kind, str) for kind in arg):
        unknown = [kind for kind in arg if kind not in pii.KINDS]
        if unknown:
            raise CheckSpecError(f"{name}: unknown kind {describe(unknown[0])} (known: {allowed})")
        return frozenset(arg)
    raise CheckSpecError(
        f"{name} takes true or a non-empty list of kinds ({allowed}), got {describe(arg)}"
    )
