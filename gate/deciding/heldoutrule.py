"""`gate.holdout_max_drop`: the held-out pass rate may not fall more than this.

Decided on the held-out cases both runs scored with the same version, as the
pass-rate rule is on the readable ones. A slice that could not be scored while
the rule is set cannot vouch for the candidate, so it blocks; a slice skipped for
want of the key (a fork's pull request) never does: that is a notice.
"""

from __future__ import annotations

from gate.deciding.compare import rate_dropped
from gate.deciding.heldout import HoldoutComparison


def holdout_rule(
    found: HoldoutComparison | None, limit: float | None
) -> tuple[str | None, list[str]]:
    """(why it blocks, or None; notes) for one comparison's slice under `limit`."""
    notes: list[str] = []
    if limit is None:
        return None, notes
    if found is None:
        notes.append("holdout_max_drop not applied: this comparison has no held-out slice")
        return None, notes
    if found.status == "unscored":
        return (
            f"the held-out slice could not be scored ({found.note}), so holdout_max_drop "
            "cannot vouch for the candidate",
            notes,
        )
    if found.status != "compared":
        notes.append(f"holdout_max_drop not applied: {found.note}")
        return None, notes
    before, after = found.shared_baseline_rate, found.shared_candidate_rate
    if before is None or after is None:
        notes.append("holdout_max_drop not applied: the runs score no held-out case in common")
        return None, notes
    if rate_dropped(before, after, limit):
        return (
            f"the held-out pass rate fell from {before:.1%} to {after:.1%} on the "
            f"{found.shared} held-out case(s) both runs scored ({found.regressions} "
            f"regression(s), {found.fixes} fix(es)), more than holdout_max_drop "
            f"{limit * 100:g} points",
            notes,
        )
    return None, notes
