"""A draft from a failing result: the case's input, and the checks that failed.

A results file holds each case's outputs and verdicts but not its input, so the input is
the suite's case of the same id (the config given with `-c`). The draft keeps only the
checks that failed, as the case wrote them (not the ones `defaults:` gave it, which the
draft gets anyway), with the output that failed them quoted above, for a person to make
into the focused regression case the failure calls for.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.checks import MODIFIERS
from gate.grow.exchange import Exchange, clip
from gate.grow.reading import shown
from gate.reporting.show import one_line


@dataclass(frozen=True, slots=True)
class Failure:
    case: Any  # gate.suite.cases.Case
    #: (check name, reason) of each check that failed
    failed: list[tuple[str, str]]
    #: the failing sample's output, as an exchange (so it is redacted like any source's)
    exchange: Exchange
    origin: str


def read_failure(path: Path, case_id: str, cases: list[Any]) -> Failure:
    """The failing result of `case_id` in `path`; SourceError when it passed or is unknown."""
    from gate.grow.exchange import SourceError
    from gate.results import read_results

    results = read_results(path)
    found = results.case_map().get(case_id)
    if found is None:
        raise SourceError(f"{shown(path)}: no result for case {one_line(case_id)[:80]!r}")
    if found.passed:
        raise SourceError(
            f"{shown(path)}: case {case_id!r} passed; `add --from-results` drafts from a "
            "failing result (pick one `casegate show` lists as FAIL)"
        )
    case = next((c for c in cases if c.id == case_id), None)
    if case is None:
        raise SourceError(
            f"{shown(path)}: case {case_id!r} is not in the suite the config names, so its "
            "input is unknown: pass the config it ran with (-c)"
        )
    sample = next((s for s in found.outputs if s.status != "pass"), None)
    failed = [(c.check, c.reason) for c in found.checks if not c.ok]
    if sample is not None and not failed:
        failed = [(c.check, c.reason) for c in sample.checks if not c.ok]
    exchange = Exchange(
        kind="results",
        file=str(path),
        line=None,
        ids=(case_id,),
        messages=(),
        model=sample.model if sample else None,
        output=clip(sample.text) if sample and sample.text else None,
        tool_calls=tuple(
            str(c.get("name", ""))[:200] for c in (sample.tool_calls if sample else [])
        ),
        error=(sample.reason or "error") if sample and sample.status == "error" else None,
    )
    origin = f"{results.created_at}, system {results.system}"
    return Failure(case, failed, exchange, origin)


def failed_expect(failure: Failure) -> dict[str, Any]:
    """The case's own specs of the checks that failed, with its own modifiers."""
    case = failure.case
    own = {k: v for k, v in case.expect.items() if k not in case.from_defaults}
    kept = {name: own[name] for name, _ in failure.failed if name in own}
    if kept:
        kept.update({k: v for k, v in own.items() if k in MODIFIERS})
    return kept


def failure_comments(failure: Failure) -> list[str]:
    said = [
        f"DRAFT expect: the checks case {failure.case.id!r} failed ({failure.origin});",
        "confirm them, or say what this regression must hold.",
    ]
    said.extend(f"failed {name}: {one_line(reason)[:200]}" for name, reason in failure.failed)
    if failure.exchange.output:
        said.append(f"the output was: {one_line(failure.exchange.output[:300])}")
    return said
