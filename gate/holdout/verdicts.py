"""Held-out verdicts, sealed in the results: what the next comparison counts from.

A results file (a baseline, committed) keeps only the slice's aggregates in the
clear. Each held-out case's verdict travels beside them sealed with the slice's
key, so a later run holding the key counts regressions and fixes case by case,
and one without it still shows the aggregates.
"""

from __future__ import annotations

from collections.abc import Sequence

from gate.deciding.heldout import HoldoutComparison
from gate.holdout.keys import DEFAULT_KEY_ENV, HoldoutError, HoldoutKey
from gate.holdout.sealed import seal_text, unseal_text
from gate.results import CaseResult, RunResults


def seal_verdicts(
    results: Sequence[CaseResult], key: HoldoutKey, suite: str, rotation: str | None
) -> str:
    """Each held-out case's version, status and weight, sealed: readable with the key only."""
    document = {
        "rotation": rotation,
        "cases": {case.id: [case.version, case.status, case.weight] for case in results},
    }
    return seal_text(document, key, purpose="holdout-verdicts", suite=suite)


def _verdicts(
    sealed: str, key: HoldoutKey, suite: str, shown: str
) -> dict[str, tuple[int, str, float]]:
    document = unseal_text(sealed, key, purpose="holdout-verdicts", suite=suite, shown=shown)
    found: dict[str, tuple[int, str, float]] = {}
    cases = document.get("cases") if isinstance(document, dict) else None
    for case_id, entry in (cases or {}).items():
        if isinstance(entry, list) and len(entry) == 3:
            found[str(case_id)] = (int(entry[0]), str(entry[1]), float(entry[2]))
    return found


def previous_reads(baseline: RunResults | None, rotation: str | None) -> int:
    """The baseline's read count when it scored the same rotation, else 0."""
    before = baseline.holdout if baseline is not None else None
    if before is None or before.status != "scored" or before.rotation != rotation:
        return 0
    return before.reads


def compare_runs(
    baseline: RunResults, candidate: RunResults, key: HoldoutKey | None
) -> HoldoutComparison | None:
    """The candidate's slice against the baseline's; None when neither run has one."""
    before, after = baseline.holdout, candidate.holdout
    if after is None:
        if before is not None and before.status == "scored":
            return HoldoutComparison(
                "absent",
                note="the baseline scored a held-out slice and this run has none (its config "
                "declares no `holdout:`)",
            )
        return None
    if after.status != "scored":
        return HoldoutComparison(
            after.status, note=after.note, rotation=after.rotation, max_reads=after.max_reads
        )
    found = HoldoutComparison(
        "uncompared",
        cases=after.cases,
        passed=after.passed,
        failed=after.failed,
        errors=after.errors,
        pass_rate=after.pass_rate,
        rotation=after.rotation,
        reads=after.reads,
        max_reads=after.max_reads,
    )
    if before is None or before.status != "scored" or before.verdicts is None:
        found.note = "the baseline has no scored held-out slice to compare with"
        return found
    found.baseline_pass_rate = before.pass_rate
    if key is None or after.verdicts is None:
        variable = key.variable if key is not None else DEFAULT_KEY_ENV
        found.note = f"not compared case by case: {variable} is not set"
        return found
    try:
        old = _verdicts(before.verdicts, key, baseline.suite, "the baseline's held-out verdicts")
        new = _verdicts(after.verdicts, key, candidate.suite, "the candidate's held-out verdicts")
    except HoldoutError as exc:
        found.note = f"not compared case by case: {exc.problems[0]}"
        return found
    shared = sorted(i for i in set(old) & set(new) if old[i][0] == new[i][0])
    found.status = "compared"
    found.shared = len(shared)
    found.shared_baseline_rate = _rate([old[i] for i in shared])
    found.shared_candidate_rate = _rate([new[i] for i in shared])
    # An error is neither: it lowers the candidate's rate, and is counted apart.
    found.regressions = sum(1 for i in shared if old[i][1] == "pass" and new[i][1] == "fail")
    found.fixes = sum(1 for i in shared if old[i][1] != "pass" and new[i][1] == "pass")
    return found


def _rate(verdicts: Sequence[tuple[int, str, float]]) -> float | None:
    total = sum(weight for _, _, weight in verdicts)
    if not total:
        return None
    return sum(weight for _, status, weight in verdicts if status == "pass") / total
