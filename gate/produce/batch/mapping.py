"""Results back to requests, by custom id: each submitted request gets exactly one answer.

A request with no line, with more than one, or with a line casegate could not read is
an error with the reason, never a pass and never dropped. A line for a custom id the
batch never submitted answers nothing; the run says how many were ignored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from gate.outputs import Output
from gate.produce.batch.api import Line, Status
from gate.produce.batch.state import BatchState

SHOWN_IDS = 3


@dataclass(slots=True)
class Mapped:
    #: custom id → (output, error): exactly one of the two is set
    answers: dict[str, tuple[Output | None, str | None]] = field(default_factory=dict)
    #: what the run should say about lines that answered nothing
    notes: list[str] = field(default_factory=list)


def map_results(state: BatchState, lines: Sequence[Line], status: Status) -> Mapped:
    mapped = Mapped()
    by_id: dict[str, Line] = {}
    counts: Counter[str] = Counter()
    unreadable = [line for line in lines if line.custom_id is None]
    for line in lines:
        if line.custom_id is not None:
            counts[line.custom_id] += 1
            by_id[line.custom_id] = line
    for cid in state.requests:
        mapped.answers[cid] = _answer(cid, counts[cid], by_id.get(cid), status, len(unreadable))
    unknown = sorted(cid for cid in counts if cid not in state.requests)
    if unknown:
        shown = ", ".join(repr(cid[:70]) for cid in unknown[:SHOWN_IDS])
        more = f" and {len(unknown) - SHOWN_IDS} more" if len(unknown) > SHOWN_IDS else ""
        mapped.notes.append(
            f"batch {state.batch_id}: ignored {len(unknown)} result line(s) for custom ids it "
            f"never submitted ({shown}{more})"
        )
    if unreadable:
        first = unreadable[0].error or "unreadable"
        mapped.notes.append(
            f"batch {state.batch_id}: {len(unreadable)} result line(s) could not be read ({first})"
        )
    return mapped


def _answer(
    cid: str, count: int, line: Line | None, status: Status, unreadable: int
) -> tuple[Output | None, str | None]:
    if status.problem is not None:
        return None, status.problem
    if count > 1:
        return None, (
            f"the batch returned {count} results for this request (custom id {cid}); "
            "casegate trusts none of them: run again"
        )
    if line is None:
        reason = f"the batch ({status.state}) returned no result for this request"
        if unreadable:
            reason += f"; {unreadable} result line(s) could not be read"
        return None, reason
    if line.output is not None:
        return line.output, None
    return None, line.error or "the batch returned neither an answer nor an error"
