"""The report's sections about evidence: the ruler's changes, significance under noise, the
pairwise judge, the held-out slice, a stale baseline and old recordings.
"""

from __future__ import annotations

from gate.deciding.compare import Comparison
from gate.deciding.heldout import HoldoutComparison
from gate.deciding.noise.analysis import SHOWN_DESIGN_EFFECT, NoiseAnalysis
from gate.deciding.replayed import ReplayAccount
from gate.deciding.rulerside import RulerChange, RulerReview
from gate.deciding.sampling import SINGLE_SAMPLE
from gate.judging.pairs import CasePairs, PairwiseAnalysis
from gate.reporting.markup import ROWS_PER_TABLE, cell, code, table, truncate
from gate.results import CaseResult


def ruler_text(review: RulerReview) -> list[str]:
    head = f"ruler changes against the base {review.base}: {_ruler_summary(review)}"
    if review.accepted:
        head += " — accepted on purpose"
        head += f" by {review.accepted_by}" if review.accepted_by else ""
    elif review.blocks:
        head += " — the loosening changes block until they are accepted on purpose"
        head += f" ({review.how_to_accept})" if review.how_to_accept else ""
    lines = [head]
    for change in review.loosening + review.tightening:
        if change.loosens:
            kind = "✓ accepted, loosens" if review.accepted else "✗ loosens"
        else:
            kind = "+ tightens"
        where = f" ({change.where})" if change.where else ""
        lines.append(f"  {kind}: {change.subject}: {change.text}{where}")
    lines += [f"  i {note}" for note in review.notes]
    return lines


def critical_first(comparison: Comparison, ids: list[str]) -> list[str]:
    return sorted(ids, key=lambda i: (not comparison.candidate_cases[i].critical, i))


def scope_lines(comparison: Comparison) -> list[str]:
    """What the comparison covered, and what it compared although the runs differ."""
    lines = [comparison.scope] if comparison.scope else []
    if comparison.allowed_changes:
        lines.append(
            "compared under --allow-config-change, although the runs differ: "
            + "; ".join(comparison.allowed_changes)
        )
    return lines


def case_origin(case: CaseResult | None) -> str:
    """Where the case came from and when it was added, as its file says ("" if it does not)."""
    if case is None:
        return ""
    parts = [
        f"{label}: {value}"
        for label, value in (("provenance", case.provenance), ("added", case.added))
        if value
    ]
    return " · ".join(parts)


def reversioned(comparison: Comparison, case_id: str) -> str:
    """`v1 → v2`: a re-versioned case is set aside from the comparison, on purpose."""
    before, after = comparison.baseline_cases[case_id], comparison.candidate_cases[case_id]
    return f"v{before.version} → v{after.version}"


# --- markdown -----------------------------------------------------------------


def stale_baseline_section(warnings: list[str]) -> str:
    """The baseline's staleness, first thing under the headline: it warns, never blocks."""
    return "\n>\n".join(
        f"> ⚠️ **Stale baseline** (a warning; it does not block): {cell(warning, 500)}"
        for warning in warnings
    )


def replay_section(replay: ReplayAccount) -> str:
    """Live, or replayed from which recordings, under the headline: a replayed verdict is
    never worded as a live one. Each sentence is escaped like every other cell."""
    if not replay.replayed:
        return f"> 📡 **Live**: {cell(replay.lines()[0].removeprefix('live: '), 300)}."
    first, *rest = replay.lines()
    first = first.removeprefix("replayed ")
    shown = [f"> 🔁 **Replayed, not live**, {cell(first, 400)}."]
    shown += [f"> {cell(line[0].upper() + line[1:], 600)}." for line in rest]
    return "\n>\n".join(shown)


def sampling_text(comparison: Comparison) -> str:
    """The samples behind the verdict, and how many regressions rest on one draw each."""
    sampling = comparison.sampling
    if sampling is None:
        return ""
    after = comparison.candidate_cases
    single = [i for i in comparison.regressions if sampling.rests_on_one(after.get(i))]
    text = f"sampling: {sampling.text()}"
    if single:
        text += (
            f"; {len(single)} of {len(comparison.regressions)} regression(s) rest on one sample "
            "each and may be noise: run with samples ≥ 5 or auto"
        )
    return text


def single_sample_mark(comparison: Comparison, case_id: str) -> str:
    """The label of a regression that rests on one draw of a system that varies ("" if not)."""
    sampling = comparison.sampling
    case = comparison.candidate_cases.get(case_id)
    return SINGLE_SAMPLE if sampling is not None and sampling.rests_on_one(case) else ""


def holdout_section(found: HoldoutComparison) -> str:
    """The held-out slice in the head (never cut): its counts, and the rotate warning."""
    lines = found.lines()
    warning = found.fitted_warning()
    return "**Held-out slice** (aggregates only: its cases are sealed)\n\n" + "\n".join(
        f"- {'⚠️ ' if line == warning else ''}{cell(line, 500)}" for line in lines
    )


def old_recordings_section(warnings: list[str]) -> str:
    """Recordings past recordings.max_age_days, beside the stale baseline: a warning only."""
    return "\n>\n".join(
        f"> ⚠️ **Old recordings** (a warning; it does not block): {cell(warning, 600)}"
        for warning in warnings
    )


def _ruler_summary(review: RulerReview) -> str:
    """E.g. "1 change loosens it, 2 changes tighten it", or "nothing changed"."""
    parts = []
    for changes, one, many in (
        (review.loosening, "change loosens it", "changes loosen it"),
        (review.tightening, "change tightens it", "changes tighten it"),
    ):
        if changes:
            parts.append(f"{len(changes)} {one if len(changes) == 1 else many}")
    return ", ".join(parts) if parts else "nothing changed"


def _ruler_line(change: RulerChange) -> str:
    kind = "🔓 **loosens**" if change.loosens else "🔒 tightens"
    where = f" ({code(change.where, 160)})" if change.where else ""
    return f"- {kind} · {cell(change.subject, 200)}: {cell(change.text, 300)}{where}"


def ruler_section(review: RulerReview, budget: int) -> str:
    """The ruler's changes, loosening first, in about `budget` characters at most."""
    intro = (
        "#### Ruler changes\n\nThe gate this pull request is judged by, read from the base "
        f"{code(review.base, 80)}: {_ruler_summary(review)}."
    )
    tail = []
    if review.accepted:
        by = f" by {cell(review.accepted_by, 300)}" if review.accepted_by else ""
        tail.append(f"✅ These changes were **accepted on purpose**{by}: they do not block.")
    elif review.blocks:
        how = f" ({cell(review.how_to_accept, 300)})" if review.how_to_accept else ""
        tail.append(
            "❌ **The loosening changes block this pull request until they are accepted "
            f"on purpose**{how}."
        )
    notes = [f"> ℹ️ {cell(note, 300)}" for note in review.notes[:10]]
    if len(review.notes) > 10:
        notes.append(f"> … and {len(review.notes) - 10} more notes")
    if notes:
        tail.append("\n>\n".join(notes))
    used = len(intro) + sum(len(part) + 2 for part in tail)
    lines: list[str] = []
    ordered = review.loosening + review.tightening
    for change in ordered:
        line = _ruler_line(change)
        if used + len(line) + 1 > budget - 160:  # room for the "… and N more" line
            break
        lines.append(line)
        used += len(line) + 1
    rest = ordered[len(lines) :]
    if rest:
        loose = sum(change.loosens for change in rest)
        lines.append(
            f"- … and {len(rest)} more, {loose} of them loosening: the text report (the job "
            "log, or the output of `casegate check`) lists every one."
        )
    return "\n\n".join([intro, "\n".join(lines), *tail] if lines else [intro, *tail])


def interval_of(case: CaseResult) -> tuple[float, float] | None:
    if case.ci_low is None or case.ci_high is None:
        return None
    return case.ci_low, case.ci_high


def rate_text(passes: int, samples: int, interval: tuple[float, float] | None) -> str:
    if interval is None:
        return f"{passes}/{samples}"
    return f"{passes}/{samples} ({interval[0]:.0%}–{interval[1]:.0%})"


def suite_line(analysis: NoiseAnalysis) -> str:
    text = analysis.change_text()
    line = (
        f"{text[0].upper()}{text[1:]} over {analysis.change.cases} shared cases; "
        f"paired sign-flip test p = {analysis.suite_p:.2g} (alpha {analysis.suite_alpha:.2g})."
    )
    if analysis.clusters and analysis.design_effect > SHOWN_DESIGN_EFFECT:
        line += (
            f" The {analysis.clusters} clusters move together: design effect "
            f"{analysis.design_effect:.1f} (the test flips whole clusters)."
        )
    spread = analysis.run_spread
    if spread is not None and spread.variance > 0:
        line += (
            f" Cases move between repeated runs of the baseline's configuration beyond "
            f"sampling noise (τ² = {spread.variance:.2g} per run on the log-odds scale, "
            f"{spread.source}, on {spread.shift_freedom} degrees of freedom): every case's "
            "test allows each of the two runs such a shift."
        )
    elif spread is not None:
        line += f" No shift between runs beyond sampling noise in {spread.source}."
    if analysis.run_shift > 0 and (spread is None or spread.variance == 0):
        line += (
            f" Clusters moved between the two runs beyond sampling noise (τ² = "
            f"{analysis.run_shift:.2g} on the log-odds scale): a critical drop may be such a "
            "shift rather than this change; only another run tells them apart (a live `check` "
            "confirms flagged cases that way, and repeated baseline runs in the history let "
            "the gate allow for it). This run is the one being judged, so the spread it "
            "shows can make a critical drop inconclusive, never let it ship."
        )
    return line


def case_verdict(case_id: str, comparison: Comparison, analysis: NoiseAnalysis) -> str:
    if case_id in comparison.regressions:
        verdict = "regression"
    elif case_id in comparison.fixes:
        verdict = "fix"
    else:
        verdict = "within noise"
    confirmation = analysis.confirmations.get(case_id)
    if confirmation is not None:
        rerun = confirmation.test.counts()
        baseline = "" if confirmation.baseline_rerun else ", baseline not re-run"
        outcome = "confirmed" if confirmation.confirmed else "NOT confirmed"
        verdict += f", {outcome} on rerun ({rerun}{baseline})"
    return verdict


def significance_section(comparison: Comparison, analysis: NoiseAnalysis) -> str:
    shown = critical_first(comparison, comparison.regressions) + comparison.fixes
    shown += analysis.within_noise
    rows = []
    for case_id in shown:
        test = analysis.tests[case_id]
        p_value = test.p_higher if case_id in comparison.fixes else test.p_lower
        rows.append(
            [
                "🔴" if test.critical else "",
                code(case_id),
                rate_text(test.base_passes, test.base_samples, test.base_interval),
                rate_text(test.cand_passes, test.cand_samples, test.cand_interval),
                f"{p_value:.2g}",
                case_verdict(case_id, comparison, analysis),
            ]
        )
    listed = (
        table(["", "case", "baseline", "candidate", "p", "verdict"], rows, len(rows))
        if rows
        else "No case moved down."
    )
    return f"#### Significance (repeated samples)\n\n{suite_line(analysis)}\n\n{listed}"


# --- pairwise (judge) ------------------------------------------------------------


def _pairwise_order(analysis: PairwiseAnalysis) -> list[CasePairs]:
    """Losses first, then errors, then the rest; each group by id."""
    return sorted(
        analysis.cases, key=lambda c: (-c.count("loss"), -c.count("error"), not c.critical, c.id)
    )


def _pairwise_reason(case: CasePairs) -> str:
    pair = case.telling()
    sample = f"sample {pair.sample}, " if len(case.pairs) > 1 else ""
    return f"{sample}{pair.outcome}: {pair.reason}"


def pairwise_lines(analysis: PairwiseAnalysis) -> list[str]:
    """The pairwise section of the text report."""
    lines = [f"pairwise (judge: {analysis.judge}): {analysis.summary()}"]
    for case in _pairwise_order(analysis):
        counts = "/".join(str(case.count(o)) for o in ("win", "loss", "tie"))
        errors = f", {case.count('error')} error(s)" if case.count("error") else ""
        lines.append(
            f"  {case.id}: {counts} (wins/losses/ties){errors}: "
            f"{truncate(_pairwise_reason(case), 160)}"
        )
    for case_id, why in sorted(analysis.not_compared.items()):
        lines.append(f"  {case_id}: not compared: {why}")
    return lines


def pairwise_section(analysis: PairwiseAnalysis) -> str:
    """The pairwise section of the markdown report: every judged case, and the cases
    left out with why. The judge's reasons are untrusted text, escaped like outputs."""
    intro = (
        "#### Pairwise (judge)\n\n"
        f"The pinned judge ({cell(analysis.judge, 200)}) compared the candidate's output with "
        "the baseline's for the same input, each pair shown in both orders; a pair the two "
        "orders disagree on is a tie."
    )
    p_value = analysis.p_value
    figures = [
        f"**candidate wins {analysis.wins}, losses {analysis.losses}, ties {analysis.ties}** "
        f"over {analysis.judged} judged pair(s) in {len(analysis.cases)} case(s)"
    ]
    if analysis.errors:
        figures.append(f"**{analysis.errors} pair(s) in error** (never counted as a win)")
    if analysis.loss_rate is not None:
        figures.append(f"loss rate {analysis.loss_rate:.1%}")
    figures.append(
        "sign test: no pair was won or lost"
        if p_value is None
        else f"sign test over {analysis.wins + analysis.losses} non-ties, two-sided "
        f"p = {p_value:.3g}"
    )
    parts = [intro, " · ".join(figures)]
    rows = [
        [
            "🔴" if case.critical else "",
            code(case.id),
            str(case.count("win")),
            str(case.count("loss")),
            str(case.count("tie")),
            str(case.count("error")),
            cell(_pairwise_reason(case)),
        ]
        for case in _pairwise_order(analysis)
    ]
    if rows:
        headers = ["", "case", "wins", "losses", "ties", "errors", "the judge's reason"]
        parts.append(table(headers, rows, len(rows)))
    if analysis.not_compared:
        left = sorted(analysis.not_compared.items())
        shown = "\n".join(f"- {code(i)}: {cell(why, 200)}" for i, why in left[:ROWS_PER_TABLE])
        more = len(left) - ROWS_PER_TABLE
        if more > 0:
            shown += f"\n- … and {more} more in the JSON report."
        parts.append(f"Not compared ({len(left)}):\n\n{shown}")
    return "\n\n".join(parts)
