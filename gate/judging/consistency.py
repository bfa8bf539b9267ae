"""How often the judge disagrees with itself: the same labelled output, asked K times.

A judge at temperature 0 still answers differently now and then, and a verdict that flips
between two asks says nothing about the output. `judge.consistency: K` makes
`casegate judge calibrate` ask about every pointwise label K times (each ask its own
recording, replayed for free later) and store the share of outputs on which the answers
were not all the same. Above `judge.max_flip_rate`, reports call the judge noisy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from typing import Any

#: flipped outputs a calibration file names before it counts the rest
LISTED = 20

#: asks the judge about a label again: (label, repeat) → its verdict, None on an error
Ask = Callable[[Any, int], "bool | None"]


def measure(
    labels: Sequence[Any],
    first: Sequence[bool | None],
    asks: int,
    ask: Ask,
    pool: Executor,
    max_flip_rate: float,
) -> dict[str, Any]:
    """The judge's flip rate over `labels` (gate.judging.calibration.Label, each with its
    `case`, `output` and `line`): `first` holds each label's first verdict (None:
    an error), and `ask(label, repeat)` asks again (None: an error). An output flips when
    its verdicts are not all the same; an output with an error on any ask is left out."""
    again = list(
        pool.map(lambda job: ask(*job), [(lb, r) for lb in labels for r in range(1, asks)])
    )
    per_label = [
        [verdict, *again[index * (asks - 1) : (index + 1) * (asks - 1)]]
        for index, verdict in enumerate(first)
    ]
    judged = [(label, got) for label, got in zip(labels, per_label, strict=True) if None not in got]
    flipped = [(label, got) for label, got in judged if len(set(got)) > 1]
    return {
        "asks": asks,
        "outputs": len(judged),
        "errors": len(labels) - len(judged),
        "flipped": len(flipped),
        "flip_rate": len(flipped) / len(judged) if judged else None,
        "max_flip_rate": max_flip_rate,
        "flipped_outputs": [
            {
                "case": label.case.id,
                "line": label.line,
                "verdicts": ",".join("pass" if verdict else "fail" for verdict in got),
            }
            for label, got in flipped[:LISTED]
        ],
    }


def noisy(consistency: Mapping[str, Any]) -> str | None:
    """Why the judge is noisy by its stored consistency, or None (fine, or not measured)."""
    rate, limit = consistency.get("flip_rate"), consistency.get("max_flip_rate")
    if not isinstance(rate, int | float) or not isinstance(limit, int | float):
        return None
    if rate <= limit:
        return None
    return (
        f"the judge disagrees with itself on {rate:.0%} of outputs asked "
        f"{consistency.get('asks')} times, above judge.max_flip_rate {limit:g}"
    )


def summary(consistency: Mapping[str, Any]) -> str:
    rate = consistency.get("flip_rate")
    shown = "n/a" if not isinstance(rate, int | float) else f"{rate:.0%}"
    return (
        f"self-consistency: asked {consistency.get('asks')} times, flipped on "
        f"{consistency.get('flipped')} of {consistency.get('outputs')} outputs ({shown})"
    )
