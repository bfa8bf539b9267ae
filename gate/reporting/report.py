"""Reports of a comparison: text for terminals, markdown for pull requests, JSON.

Everything a pull request wrote is untrusted: model output, and also the suite
and system names, the model, case ids, notes, reasons and check names. In
markdown each is escaped where it lands (`cell`, `code`, `block`) so it can
neither break a table, render HTML, ping a person, link an issue, start a line
of its own (a heading, list, table or quote above casegate's), nor write a
second casegate marker. In the text report, which reaches the job log, each is
kept on one line.
"""

from __future__ import annotations

import html
import json
import re
import textwrap
from collections.abc import Callable
from typing import Any

from tabulate import tabulate

from gate.deciding.compare import Comparison, Delta
from gate.deciding.noise.analysis import SHOWN_DESIGN_EFFECT, NoiseAnalysis
from gate.deciding.rulerside import RulerChange, RulerReview
from gate.deciding.rules import Verdict
from gate.holdout.outcome import HoldoutComparison
from gate.judging.pairwise import CasePairs, PairwiseAnalysis
from gate.logsafe import flatten
from gate.reporting.diffs import diff_texts
from gate.results import CaseResult

#: GitHub refuses comment bodies over 65,536 characters; keep a margin.
COMMENT_LIMIT = 60_000
ROWS_PER_TABLE = 50
CELL_LIMIT = 240
OUTPUT_LIMIT = 1_200
#: the ruler section's share of a comment; it is never dropped, only shortened
RULER_LIMIT = 12_000
ZWSP = "\u200b"

# `$` opens GitHub's inline math, which can typeset text of any size and colour.
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_\[\]|~$])")
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_REFERENCE = re.compile(r"#(?=\d)|(?<![A-Za-z0-9])GH(?=-\d)", re.IGNORECASE)
# Bidirectional controls reorder what a reader sees ("Trojan Source"): dropped.
_BIDI = dict.fromkeys(
    map(ord, "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
)
# Shown as it is inside `…`: no backtick (it would close the span), no pipe (it splits
# a table row even there), nothing GitHub could read as a mention or a reference, and
# single spaces only between words (a code span trims and collapses them).
_CODE_CHAR = r"[\w.:/+=,;()\[\]{}!?%^~*'\"$…-]"
_PLAIN_CODE = re.compile(rf"{_CODE_CHAR}+(?: {_CODE_CHAR}+)*")


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def neutralise(text: str) -> str:
    """Stop @mentions and #123 (or GH-123) references from notifying or linking."""
    return _REFERENCE.sub(lambda m: m.group(0) + ZWSP, _MENTION.sub("@" + ZWSP, text))


def _html_text(text: str | None, limit: int) -> str:
    """Untrusted text on one line inside HTML (no markdown is read there)."""
    flat = " ".join((text or "").translate(_BIDI).split())
    return neutralise(html.escape(_truncate(flat, limit), quote=False))


def cell(text: str | None, limit: int = CELL_LIMIT) -> str:
    """Untrusted text made safe on one line of markdown, a table cell included."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", _html_text(text, limit))


def block(text: str | None, limit: int = OUTPUT_LIMIT) -> str:
    """Untrusted multi-line text as an HTML <pre> block (no markdown inside)."""
    if text is None:
        return "<pre>(no output)</pre>"
    shown = _truncate(text.translate(_BIDI), limit)
    return "<pre>" + neutralise(html.escape(shown, quote=False)) + "</pre>"


def code(text: str, limit: int = CELL_LIMIT) -> str:
    """Any string (a case id, a system name, a path) as inline code, safe on one line.

    Plain identifiers become `…`, exactly as written; anything else (a backtick,
    a pipe, `<`, `@`, a line break …) is escaped into <code>…</code> instead.
    """
    if len(text) <= limit and _PLAIN_CODE.fullmatch(text):
        return f"`{text}`"
    return f"<code>{cell(text, limit)}</code>"


def money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.4f}"


def _figure(delta: Delta) -> tuple[str, str, str]:
    def fmt(value: float | None) -> str:
        if value is None:
            return "n/a"
        if delta.name == "cost_usd":
            return money(value)
        if delta.name.startswith("latency"):
            return f"{value:,.0f} ms"
        return f"{value:,.0f}"

    change = delta.change
    if change is None:
        shown = "n/a"
    else:
        sign = "+" if change > 0 else "−" if change < 0 else "±"
        shown = sign + fmt(abs(change)).lstrip("$")
        if delta.name == "cost_usd":
            shown = sign + money(abs(change))
        if delta.relative is not None:
            shown += f" ({delta.relative:+.1%})".replace("-", "−")
    return fmt(delta.baseline), fmt(delta.candidate), shown


USAGE_LABELS = {
    "cost_usd": "cost",
    "input_tokens": "input tokens",
    "output_tokens": "output tokens",
    "latency_ms_p50": "latency p50",
    "latency_ms_p95": "latency p95",
}


def headline_counts(comparison: Comparison) -> str:
    b, c = comparison.baseline, comparison.candidate
    counts = f"{b.passed}/{b.cases} → {c.passed}/{c.cases} passed"
    text = f"{counts} ({b.pass_rate:.1%} → {c.pass_rate:.1%})"
    analysis = comparison.noise
    if analysis is not None and analysis.tests:
        # With repeated samples the mean sample pass rate says more than pass/fail counts.
        tests = analysis.tests.values()
        before = sum(t.base_passes / t.base_samples for t in tests) / len(tests)
        after = sum(t.cand_passes / t.cand_samples for t in tests) / len(tests)
        text += f"; samples passing, mean per case {before:.1%} → {after:.1%}"
    return text


def system_change_text(comparison: Comparison, wrap: Callable[[str], str] = str) -> str:
    if not comparison.system_changes:
        return "no change to the system under test"
    parts = []
    for key, (before, after) in comparison.system_changes.items():
        parts.append(f"{key} {wrap(_short_value(before))} → {wrap(_short_value(after))}")
    return ", ".join(parts)


def _short_value(value: Any) -> str:
    if value is None:
        return "unset"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return _truncate(" ".join(text.split()), 60)


# --- text ---------------------------------------------------------------------


def text_report(comparison: Comparison, verdict: Verdict) -> str:
    lines = [
        f"{verdict.decision.upper()}: {comparison.suite} — {headline_counts(comparison)}",
        f"system: {comparison.baseline.system} → {comparison.candidate.system} "
        f"({system_change_text(comparison)})",
    ]
    lines += [f"  ⚠ stale baseline: {warning}" for warning in comparison.warnings]
    lines += [f"  ⚠ old recordings: {warning}" for warning in comparison.recording_warnings]
    if comparison.ruler is not None:
        lines += _ruler_text(comparison.ruler)
    if comparison.holdout is not None:  # counts only: gate.holdout never names a case
        lines += [f"  ◦ {line}" for line in comparison.holdout.lines()]
    for reason in verdict.reasons:
        lines.append(
            f"  ✗ {reason.message}" + (f": {', '.join(reason.cases)}" if reason.cases else "")
        )
    for note in verdict.notes:
        lines.append(f"  ! {note}")
    for fact in verdict.instrument:
        lines.append(f"  i {fact}")

    def listed(
        title: str, ids: list[str], source: dict[str, CaseResult], show_reason: bool
    ) -> None:
        lines.append(f"{title} ({len(ids)})")
        for case_id in ids:
            case = source.get(case_id)
            mark = " [critical]" if case is not None and case.critical else ""
            reason = (
                f": {_truncate(case.reason, 100)}" if show_reason and case and case.reason else ""
            )
            lines.append(f"  {case_id}{mark}{reason}")

    ordered = _critical_first(comparison, comparison.regressions)
    listed("regressions", ordered, comparison.candidate_cases, True)
    analysis = comparison.noise
    if analysis is not None:
        lines.append(suite_line(analysis))
        for case_id in ordered + comparison.fixes + analysis.within_noise:
            test = analysis.tests[case_id]
            p_value = test.p_higher if case_id in comparison.fixes else test.p_lower
            lines.append(
                f"  {case_id}: {test.counts()}, p = {p_value:.2g}, "
                f"{case_verdict(case_id, comparison, analysis)}"
            )
    if comparison.pairwise is not None:
        lines += pairwise_lines(comparison.pairwise)
    if comparison.history is not None:
        lines += comparison.history.lines()
    flaky = [i for i, case in sorted(comparison.candidate_cases.items()) if case.flaky]
    if flaky:
        lines.append(f"flaky ({len(flaky)}): {', '.join(flaky)}")
    listed("fixes", comparison.fixes, comparison.baseline_cases, False)
    lines.append(
        f"unchanged: {len(comparison.unchanged_pass)} pass, {len(comparison.unchanged_fail)} fail"
        + (f" ({', '.join(comparison.unchanged_fail)})" if comparison.unchanged_fail else "")
    )
    for title, ids in (
        ("errors", comparison.errors),
        ("added", comparison.added),
        ("removed", comparison.removed),
        ("changed", comparison.changed),
    ):
        if ids:
            lines.append(f"{title}: {', '.join(ids)}")
    usage = []
    for delta in comparison.usage:
        before, after, change = _figure(delta)
        if delta.baseline is not None or delta.candidate is not None:
            usage.append(f"{USAGE_LABELS[delta.name]} {before} → {after} ({change})")
    if usage:
        lines.append("usage: " + "; ".join(usage))
    # One entry, one line: a line break in a name or a reason cannot forge a line of its own.
    return "\n".join(flatten(line) for line in lines)


def _ruler_text(review: RulerReview) -> list[str]:
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


def _critical_first(comparison: Comparison, ids: list[str]) -> list[str]:
    return sorted(ids, key=lambda i: (not comparison.candidate_cases[i].critical, i))


# --- markdown -----------------------------------------------------------------


def _table(headers: list[str], rows: list[list[str]], total: int) -> str:
    body = tabulate(
        rows[:ROWS_PER_TABLE], headers=headers, tablefmt="github", disable_numparse=True
    )
    if total > ROWS_PER_TABLE:
        body += f"\n\n_… and {total - ROWS_PER_TABLE} more in the results file._"
    return body


def _failing_checks(case: CaseResult | None) -> str:
    if case is None:
        return "—"
    if case.status == "error":
        return "error: " + case.reason
    failed = [f"{c.check}: {c.reason}" for c in case.checks if not c.ok]
    return "; ".join(failed) or "all checks pass"


def markdown_report(
    comparison: Comparison,
    verdict: Verdict,
    *,
    marker: str | None = None,
    extra_notes: list[str] | None = None,
    limit: int = COMMENT_LIMIT,
) -> str:
    """A pull-request comment: verdict, tables, then details; never over `limit`."""
    icon = {"block": "❌", "inconclusive": "⚠️"}.get(verdict.decision, "✅")
    head = []
    if marker:
        head.append(marker)
    head.append(f"### {icon} casegate: **{verdict.decision}** — {cell(comparison.suite)}")
    head.append(
        f"**{headline_counts(comparison)}** · {code(comparison.baseline.system)} → "
        f"{code(comparison.candidate.system)}: {cell(system_change_text(comparison), 400)}"
    )
    if comparison.warnings:
        head.append(_stale_baseline_section(comparison.warnings))
    if comparison.recording_warnings:
        head.append(old_recordings_section(comparison.recording_warnings))
    if comparison.ruler is not None:
        # In the head, never dropped by _fit: what the pull request changed about its own gate.
        head.append(_ruler_section(comparison.ruler, min(RULER_LIMIT, limit // 3)))
    if comparison.holdout is not None:
        head.append(holdout_section(comparison.holdout))
    if verdict.reasons:
        head.append(
            "**Why it blocks**\n\n"
            + "\n".join(
                f"- {cell(r.message, 300)}"
                + (": " + ", ".join(code(i) for i in r.cases[:20]) if r.cases else "")
                + (f" and {len(r.cases) - 20} more" if len(r.cases) > 20 else "")
                for r in verdict.reasons
            )
        )
    notes = list(verdict.notes) + list(extra_notes or [])
    if notes:
        # One quoted paragraph per note: consecutive `>` lines would run together.
        head.append("\n>\n".join(f"> ⚠️ {cell(note, 400)}" for note in notes))
    if verdict.instrument:
        head.append("\n>\n".join(f"> ℹ️ {cell(fact, 400)}" for fact in verdict.instrument))

    # (priority, text): lower numbers are kept longest when the body must shrink.
    sections: list[tuple[int, str]] = []
    before, after = comparison.baseline_cases, comparison.candidate_cases
    regressions = _critical_first(comparison, comparison.regressions)
    rows = [
        ["🔴 critical" if after[i].critical else "", code(i), cell(after[i].reason)]
        for i in regressions
    ]
    sections.append(
        (
            1,
            f"#### Regressions ({len(regressions)})\n\n"
            + (_table(["", "case", "why it fails now"], rows, len(rows)) if rows else "None."),
        )
    )
    if comparison.history is not None:
        # After the regressions it speaks of; dropped before the tables below it.
        sections.append((5, comparison.history.markdown()))
    if comparison.noise is not None:
        sections.append((1, _significance_section(comparison, comparison.noise)))
    if comparison.pairwise is not None:
        sections.append((2, pairwise_section(comparison.pairwise)))
    # Least reliable first: those are where prompt work pays most.
    flaky = sorted((i for i in after if after[i].flaky), key=lambda i: (after[i].pass_rate, i))
    if flaky:
        rows = [
            [code(i), _rate(after[i].passes, after[i].samples, _interval_of(after[i]))]
            for i in flaky
        ]
        sections.append(
            (
                3,
                f"#### Flaky cases ({len(rows)})\n\nSome samples pass and some fail: "
                "where prompt work pays most.\n\n"
                + _table(["case", "candidate passes (95% interval)"], rows, len(rows)),
            )
        )
    if comparison.errors:
        rows = [[code(i), cell(after[i].reason)] for i in comparison.errors]
        sections.append(
            (2, f"#### Errors ({len(rows)})\n\n" + _table(["case", "error"], rows, len(rows)))
        )
    if comparison.fixes:
        rows = [[code(i), cell(before[i].reason)] for i in comparison.fixes]
        sections.append(
            (
                3,
                f"#### Fixes ({len(rows)})\n\n"
                + _table(["case", "failed on the baseline because"], rows, len(rows)),
            )
        )
    moved = (
        [("added", i) for i in comparison.added]
        + [("removed", i) for i in comparison.removed]
        + [("changed (new version)", i) for i in comparison.changed]
    )
    if moved:
        rows = []
        for kind, i in moved:
            case = after.get(i) or before[i]
            rows.append([kind, code(i), case.status if i in after else "—"])
        sections.append(
            (
                4,
                f"#### Added, removed, changed ({len(rows)})\n\n"
                + _table(["", "case", "candidate"], rows, len(rows)),
            )
        )
    usage_rows = [
        [USAGE_LABELS[d.name], *_figure(d)]
        for d in comparison.usage
        if d.baseline is not None or d.candidate is not None
    ]
    if usage_rows:
        sections.append(
            (
                2,
                "#### Cost, tokens, latency\n\n"
                + _table(["", "baseline", "candidate", "change"], usage_rows, len(usage_rows)),
            )
        )
    unchanged = (
        f"Unchanged: {len(comparison.unchanged_pass)} pass, {len(comparison.unchanged_fail)} fail"
    )
    if comparison.unchanged_fail:
        unchanged += " (" + ", ".join(code(i) for i in comparison.unchanged_fail[:30]) + ")"
    sections.append((3, unchanged + "."))
    for index, case_id in enumerate(regressions + comparison.fixes + comparison.errors):
        sections.append((10 + index, _details(case_id, before.get(case_id), after.get(case_id))))
    return _fit(head, sections, limit)


def _stale_baseline_section(warnings: list[str]) -> str:
    """The baseline's staleness, first thing under the headline: it warns, never blocks."""
    return "\n>\n".join(
        f"> ⚠️ **Stale baseline** (a warning; it does not block): {cell(warning, 500)}"
        for warning in warnings
    )


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


def _ruler_section(review: RulerReview, budget: int) -> str:
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


def _interval_of(case: CaseResult) -> tuple[float, float] | None:
    if case.ci_low is None or case.ci_high is None:
        return None
    return case.ci_low, case.ci_high


def _rate(passes: int, samples: int, interval: tuple[float, float] | None) -> str:
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
    if analysis.run_shift > 0:
        line += (
            f" Clusters moved between the two runs beyond sampling noise (τ² = "
            f"{analysis.run_shift:.2g} on the log-odds scale); critical cases are tested "
            "against that spread too."
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


def _significance_section(comparison: Comparison, analysis: NoiseAnalysis) -> str:
    shown = _critical_first(comparison, comparison.regressions) + comparison.fixes
    shown += analysis.within_noise
    rows = []
    for case_id in shown:
        test = analysis.tests[case_id]
        p_value = test.p_higher if case_id in comparison.fixes else test.p_lower
        rows.append(
            [
                "🔴" if test.critical else "",
                code(case_id),
                _rate(test.base_passes, test.base_samples, test.base_interval),
                _rate(test.cand_passes, test.cand_samples, test.cand_interval),
                f"{p_value:.2g}",
                case_verdict(case_id, comparison, analysis),
            ]
        )
    table = (
        _table(["", "case", "baseline", "candidate", "p", "verdict"], rows, len(rows))
        if rows
        else "No case moved down."
    )
    return f"#### Significance (repeated samples)\n\n{suite_line(analysis)}\n\n{table}"


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
            f"{_truncate(_pairwise_reason(case), 160)}"
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
        parts.append(_table(headers, rows, len(rows)))
    if analysis.not_compared:
        left = sorted(analysis.not_compared.items())
        shown = "\n".join(f"- {code(i)}: {cell(why, 200)}" for i, why in left[:ROWS_PER_TABLE])
        more = len(left) - ROWS_PER_TABLE
        if more > 0:
            shown += f"\n- … and {more} more in the JSON report."
        parts.append(f"Not compared ({len(left)}):\n\n{shown}")
    return "\n\n".join(parts)


def _details(case_id: str, old: CaseResult | None, new: CaseResult | None) -> str:
    before, after = _first_output(old), _first_output(new)
    critical = " (critical)" if new is not None and new.critical else ""
    parts = [
        f"<details><summary>{_html_text(case_id, CELL_LIMIT)}{critical}: "
        f"{old.status if old else '—'} → {new.status if new else '—'}</summary>\n",
        f"Failing checks now: {cell(_failing_checks(new), 600)}\n",
    ]
    if before is None or after is None:
        parts += [
            f"Baseline output:\n{block(before)}\n",
            f"Candidate output:\n{block(after)}\n",
        ]
    elif not (diff := diff_texts(before, after)):
        parts.append(f"Output, the same as the baseline's:\n{block(after)}\n")
    else:
        how = "by line, JSON pretty-printed" if diff.kind == "lines" else "by word"
        fenced, cut = diff_block(diff.lines())
        parts.append(f"Output, baseline → candidate ({how}):\n\n{fenced}\n")
        if cut:
            parts.append(
                f"_The diff is cut short here ({cut} line(s) not shown in full): "
                f"{code('casegate show ' + case_id)} prints it whole, with both outputs._\n"
            )
    parts.append("</details>")
    return "\n".join(parts)


def _first_output(case: CaseResult | None) -> str | None:
    return next((s.text for s in case.outputs if s.text is not None), None) if case else None


#: the most of a diff a case's details show, and the width prose is wrapped to
DIFF_LIMIT = 2_400
DIFF_WIDTH = 100
_BACKTICKS = re.compile(r"`+")


def diff_block(lines: list[str], limit: int = DIFF_LIMIT) -> tuple[str, int]:
    """Untrusted diff lines as a fenced ```diff block of at most `limit` characters
    inside, and how many lines it does not show in full.

    A fence closes only on a line of at least as many backticks as opened it, so it
    is one longer than any run inside. Inside, nothing is read as markdown or HTML;
    bidirectional controls are dropped, mentions, references and HTML comments
    (a marker) neutralised, and long lines wrapped (a code block would scroll them
    sideways), each piece keeping its line's "+", "-" or " ".
    """
    shown: list[str] = []
    used = 0
    for index, line in enumerate(lines):
        # Shown as text in the fence, but no second casegate marker, even there.
        safe = neutralise(line.translate(_BIDI)).replace("<!--", f"<!{ZWSP}--")
        pieces = _wrapped(safe)
        for piece in pieces:
            if used + len(piece) + 1 > limit:
                body = "\n".join(shown)
                return _fenced(body), len(lines) - index
            shown.append(piece)
            used += len(piece) + 1
    return _fenced("\n".join(shown)), 0


def _wrapped(line: str) -> list[str]:
    """A diff line in pieces of at most DIFF_WIDTH characters, each with the line's
    marker and indent."""
    if len(line) <= DIFF_WIDTH or line.startswith("@@"):
        return [line]
    marker, text = line[:2], line[2:]
    indent = text[: len(text) - len(text.lstrip())][:40]
    width = DIFF_WIDTH - len(marker) - len(indent)
    return [marker + indent + piece for piece in textwrap.wrap(text.strip(), width)]


def _fenced(body: str) -> str:
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}diff\n{body}\n{fence}"


def _fit(head: list[str], sections: list[tuple[int, str]], limit: int) -> str:
    def render(kept: list[tuple[int, str]], note: str | None) -> str:
        parts = head + [text for _, text in kept]
        if note:
            parts.append(note)
        return "\n\n".join(parts) + "\n"

    kept = list(sections)
    dropped = 0
    body = render(kept, None)
    while len(body) > limit and kept:
        # Drop the least important section (highest priority number) first.
        worst = max(range(len(kept)), key=lambda k: (kept[k][0], k))
        kept.pop(worst)
        dropped += 1
        body = render(
            kept,
            f"_Truncated: {dropped} section(s) left out to fit GitHub's comment "
            "limit; the full comparison is in the results artefact._",
        )
    if len(body) > limit:  # the head alone is too long: cut it between lines, say so
        kept_text = body[: limit - 80]
        body = (
            kept_text[: kept_text.rfind("\n") + 1]
            + "\n_Truncated to fit GitHub's comment limit._\n"
        )
    return body


# --- json -----------------------------------------------------------------------


def json_report(comparison: Comparison, verdict: Verdict) -> dict[str, Any]:
    def side(s: Any) -> dict[str, Any]:
        return {"system": s.system, "pass_rate": s.pass_rate, "passed": s.passed, "cases": s.cases}

    return {
        "verdict": verdict.decision,
        "reasons": [reason.to_dict() for reason in verdict.reasons],
        "notes": verdict.notes,
        "instrument": verdict.instrument,
        "suite": comparison.suite,
        "baseline": side(comparison.baseline),
        "candidate": side(comparison.candidate),
        "shared": {
            "cases": comparison.shared_cases,
            "baseline_pass_rate": comparison.shared_baseline_rate,
            "candidate_pass_rate": comparison.shared_candidate_rate,
        },
        "regressions": comparison.regressions,
        "critical_regressions": comparison.critical(comparison.regressions),
        "fixes": comparison.fixes,
        "unchanged_pass": comparison.unchanged_pass,
        "unchanged_fail": comparison.unchanged_fail,
        "errors": comparison.errors,
        "added": comparison.added,
        "removed": comparison.removed,
        "changed": comparison.changed,
        "system_changes": {k: list(v) for k, v in comparison.system_changes.items()},
        "ruler_changes": comparison.ruler_changes,
        "ruler": None if comparison.ruler is None else comparison.ruler.to_dict(),
        "baseline_warnings": comparison.warnings,
        "recording_warnings": comparison.recording_warnings,
        "usage": {delta.name: delta.to_dict() for delta in comparison.usage},
        "flaky": [i for i, case in sorted(comparison.candidate_cases.items()) if case.flaky],
        "noise": None if comparison.noise is None else _noise_json(comparison, comparison.noise),
        "pairwise": None if comparison.pairwise is None else comparison.pairwise.to_dict(),
        "holdout": None if comparison.holdout is None else comparison.holdout.to_dict(),
        "history": None if comparison.history is None else comparison.history.to_dict(),
    }


def _noise_json(comparison: Comparison, analysis: NoiseAnalysis) -> dict[str, Any]:
    change = analysis.change
    return {
        "suite_p_value": analysis.suite_p,
        "suite_alpha": analysis.suite_alpha,
        "alpha_shares": {
            "critical": analysis.shares.critical,
            "suite": analysis.shares.suite,
            "pairwise": analysis.shares.pairwise,
        },
        "clusters": analysis.clusters,
        "design_effect": analysis.design_effect,
        "run_shift_variance": analysis.run_shift,
        "suite_confirmed": analysis.suite_confirmed,
        "mean_change": change.mean,
        "mean_change_ci": [change.low, change.high],
        "shared_cases": change.cases,
        "within_noise": analysis.within_noise,
        "cases": {
            case_id: {
                "critical": test.critical,
                "baseline": [test.base_passes, test.base_samples],
                "candidate": [test.cand_passes, test.cand_samples],
                "baseline_ci": list(test.base_interval),
                "candidate_ci": list(test.cand_interval),
                "p_lower": test.p_lower,
                "p_higher": test.p_higher,
                "verdict": case_verdict(case_id, comparison, analysis),
            }
            for case_id, test in analysis.tests.items()
            if case_id in comparison.regressions
            or case_id in comparison.fixes
            or case_id in analysis.within_noise
        },
        "confirmed": sorted(i for i, c in analysis.confirmations.items() if c.confirmed),
        "not_confirmed": sorted(i for i, c in analysis.confirmations.items() if not c.confirmed),
    }
