"""Two results files judged outside a pull request (`casegate compare`, `casegate gate`):
measured alike, over the same cases, or the comparison refuses and says why.

A pull request is judged by its base commit's ruler (gate.deciding.rulerdiff): a change of
samples, of the judge or of a case's checks, or a case removed from the selection, is a
ruler change that blocks until it is accepted on purpose. Two files already on disk have no
base commit, so the same differences are read from the files: the comparison's
`ruler_changes` and the selections they record. Each refuses the comparison (exit 2) unless
`--allow-config-change` accepts it, and the report then names it. A case of the baseline
the candidate has no result for blocks, named; when the suite no longer defines it, the
removal was deliberate, and the same flag accepts it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

from gate.deciding.compare import Comparison
from gate.deciding.rules import Reason, Verdict
from gate.errors import ConfigError, ResultsError
from gate.results import RunResults, summarise
from gate.suite.select import Selection, describe_stored

OVERRIDE = "--allow-config-change"
#: case ids a message names before it counts the rest
LISTED = 10


def in_scope(baseline: RunResults, candidate: RunResults) -> tuple[RunResults, str | None]:
    """The baseline cut to the cases the candidate's slice selects, and a sentence saying so
    (None for a whole run): a slice judges the cases it ran and no others."""
    if not candidate.selection:
        return baseline, None
    chosen = Selection.stored(candidate.selection)
    kept = [c for c in baseline.cases if chosen.chooses(c.id, c.tags, critical=c.critical)]
    if not kept:
        raise ResultsError(
            f"the candidate ran {chosen.describe()}, which selects none of the baseline's "
            f"{len(baseline.cases)} case(s): there is nothing to compare"
        )
    scope = (
        f"compared {len(kept)} of {len(baseline.cases)} baseline cases: a slice "
        f"({chosen.describe()}); the cases it did not run are not judged"
    )
    return dataclasses.replace(baseline, cases=kept, summary=summarise(kept)), scope


def differences(baseline: RunResults, candidate: RunResults, comparison: Comparison) -> list[str]:
    """What makes the two runs measure differently: the comparison's ruler changes (samples,
    the judge pin, checks changed without a version bump) and another selection."""
    found = list(comparison.ruler_changes)
    if baseline.selection != candidate.selection:
        found.append(
            f"the candidate ran {describe_stored(candidate.selection)} but the baseline "
            f"{describe_stored(baseline.selection)}"
        )
    return found


def require_alike(found: list[str], *, allowed: bool) -> None:
    """Refuse runs measured differently, unless the override says to compare them anyway."""
    if found and not allowed:
        raise ConfigError(
            f"the runs were measured differently ({'; '.join(found)}), so their verdicts "
            f"are not like with like: compare runs of one config, or pass {OVERRIDE} to "
            "compare them anyway (the report then says what differed)"
        )


def removals(
    comparison: Comparison, defined: Collection[str] | None, *, allowed: bool
) -> tuple[list[Reason], list[str]]:
    """Why the baseline's cases the candidate has no result for block, and what the override
    accepted, one sentence each.

    `defined` holds the ids the suite defines now (None: no config of this suite at hand).
    A case it still defines was left out of the run: that always blocks. One it no longer
    defines was removed on purpose, and `allowed` accepts that; with no config at hand the
    override is taken at its word.
    """
    removed = comparison.removed
    if not removed:
        return [], []
    gone = removed if defined is None else [i for i in removed if i not in defined]
    left_out = [i for i in removed if i not in gone]
    reasons = []
    if left_out:
        reasons.append(
            Reason(
                "missing_cases",
                f"{len(left_out)} case(s) of the baseline that the suite still defines have no "
                "result in the candidate (an incomplete run): run the whole suite again",
                left_out,
            )
        )
    if gone and not allowed:
        why = (
            "were removed from the suite since the baseline"
            if defined is not None
            else "have no result in the candidate (removed from the suite, or left out of "
            "the run: with no config of this suite at hand casegate cannot tell)"
        )
        reasons.append(
            Reason(
                "removed_cases",
                f"{len(gone)} case(s) of the baseline {why}: accept a removal made on purpose "
                f"with {OVERRIDE}, or refresh the baseline (`casegate baseline`)",
                gone,
            )
        )
    if not (gone and allowed):
        return reasons, []
    what = "removed from the suite" if defined is not None else "without a result, taken as removed"
    return reasons, [f"{len(gone)} case(s) {what}: {_some(gone)}"]


def blocked(verdict: Verdict, reasons: list[Reason]) -> Verdict:
    """The verdict with these reasons added: any reason blocks."""
    if not reasons:
        return verdict
    return dataclasses.replace(verdict, decision="block", reasons=[*verdict.reasons, *reasons])


def _some(ids: list[str]) -> str:
    more = len(ids) - LISTED
    return ", ".join(ids[:LISTED]) + (f" and {more} more" if more > 0 else "")
