"""Why a verdict is inconclusive, in words: nothing blocks, but the gate cannot say ship.

gate.deciding.rules decides whether such a note makes the verdict "inconclusive" (exit 3):
always for a drop only a shift between runs could explain or one the suite test had too
few units to test, and by `on_inconclusive` for a drop beyond the margin not ruled out.
"""

from __future__ import annotations

from gate.deciding.noise.analysis import NoiseAnalysis
from gate.results import EPSILON
from gate.stats import samples_to_decide
from gate.suite.config import GateConfig


def inconclusive_note(analysis: NoiseAnalysis, rule: GateConfig) -> str | None:
    """Nothing blocks, but a drop beyond the margin cannot be ruled out either, or a
    critical case dropped as far as a shift between runs could take it, or the suite
    dropped where its test has too few units to reach its level."""
    if analysis.suite_unreachable is not None and rule.block_on_pass_rate_drop:
        p_value, units = analysis.suite_unreachable
        kind = "clusters" if analysis.clusters else "cases"
        return (
            f"inconclusive: the pass rate dropped ({analysis.change_text()}), and with "
            f"{units} {kind} the exact suite test cannot reach its level (its "
            f"smallest p is 2^-{units} = {2.0**-units:.2g} > alpha {analysis.suite_alpha:.2g}), "
            f"so no result can block and a drop beyond the margin is not shipped either "
            f"(Student's t on the {kind}, approximate: p = {p_value:.2g}). It does not ship "
            f"(exit 3): declare more, smaller clusters, or add cases"
        )
    explained = analysis.shift_explained
    if explained and analysis.run_spread is not None:
        spread = analysis.run_spread
        counts = "; ".join(f"{i} {analysis.tests[i].counts()}" for i in explained[:20])
        return (
            f"inconclusive: critical case(s) dropped, but no further than a shift between "
            f"runs could take them ({counts}): {spread.runs} runs of this configuration in "
            f"the history move a case by τ² = {spread.variance:.2g} on the log-odds scale. "
            "It does not ship (exit 3): only another run tells, since each run draws its "
            "own shift (run the candidate live again)"
        )
    if explained:
        counts = "; ".join(
            f"{i} {analysis.tests[i].counts()}, τ² = {analysis.spread_beside[i].variance:.2g} "
            f"in the {analysis.spread_beside[i].shift_freedom} cluster(s) beside it"
            for i in explained[:20]
            if i in analysis.spread_beside
        )
        return (
            "inconclusive: critical case(s) dropped, but no further than the suite's other "
            f"clusters moved between the baseline's run and this one ({counts}, on the "
            "log-odds scale). With one run a side, a shift between runs and a regression look "
            "alike. It does not ship (exit 3): rerun the candidate live, or keep repeated runs "
            "of the baseline's configuration in the history (`casegate history add`) so the "
            "gate can tell them apart"
        )
    margin = rule.non_inferiority_margin
    if analysis.change.low >= -margin - EPSILON:
        return None
    needed = samples_to_decide(analysis.change, margin, analysis.samples)
    advice = (
        f"about {needed} samples per case (now {analysis.samples}) would decide it"
        if needed
        else "the estimate itself is a drop beyond the margin; more samples would not clear it"
    )
    return (
        f"inconclusive: a drop of more than {margin * 100:.0f} points cannot be ruled out — "
        f"{analysis.change_text()}; {advice}"
    )
