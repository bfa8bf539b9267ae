"""Reports of a comparison: text for terminals, markdown for pull requests (the JSON is in
gate.reporting.jsonreport).

Everything a pull request wrote is untrusted: model output, and also the suite
and system names, the model, case ids, notes, reasons and check names. In
markdown each is escaped where it lands (`cell`, `code`, `block`) so it can
neither break a table, render HTML, ping a person, link an issue, start a line
of its own (a heading, list, table or quote above casegate's), nor write a
second casegate marker. In the text report, which reaches the job log, each is
kept on one line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from gate.deciding.compare import Comparison, judge_noise
from gate.deciding.rules import Verdict
from gate.deciding.usage import Delta
from gate.logsafe import flatten
from gate.reporting.casedetails import case_details
from gate.reporting.composition import footer
from gate.reporting.jsonreport import json_report as json_report
from gate.reporting.markup import (
    COMMENT_LIMIT,
    RULER_LIMIT,
    cell,
    code,
    money,
    table,
    truncate,
)
from gate.reporting.scorereport import score_lines, score_section
from gate.reporting.sections import (
    case_verdict,
    critical_first,
    holdout_section,
    interval_of,
    old_recordings_section,
    pairwise_lines,
    pairwise_section,
    rate_text,
    replay_section,
    reversioned,
    ruler_section,
    ruler_text,
    sampling_text,
    scope_lines,
    significance_section,
    single_sample_mark,
    stale_baseline_section,
    suite_line,
)
from gate.results import CaseResult
from gate.suite.composition import Composition

#: the artifact the starter workflows upload the HTML viewer as (gate/scaffold/workflows)
VIEWER_ARTIFACT = "casegate-viewer"
#: a run's page on GitHub, as the Action builds it from the runner's variables: nothing
#: else becomes a link in the comment
_RUN_LINK = re.compile(
    r"https://[A-Za-z0-9.-]+(:[0-9]{1,5})?/[A-Za-z0-9._-]+/[A-Za-z0-9._-]+/actions/runs/[0-9]+"
)


def _figure(delta: Delta) -> tuple[str, str, str]:
    def fmt(value: float | None) -> str:
        if value is None:
            return "n/a"
        if delta.name.startswith("cost_usd"):
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
        if delta.name.startswith("cost_usd"):
            shown = sign + money(abs(change))
        if delta.relative is not None:
            shown += f" ({delta.relative:+.1%})".replace("-", "−")
    return fmt(delta.baseline), fmt(delta.candidate), shown


#: the usage rows a report shows, in order: what one answer costs (each case's mean over
#: its answers, averaged over the cases both runs answered: gate.deciding.usage), the
#: latency percentiles, and what the run cost in all (its samples may be fewer or more)
USAGE_LABELS = {
    "cost_usd_per_answer": "cost per answer",
    "input_tokens_per_answer": "input tokens per answer",
    "output_tokens_per_answer": "output tokens per answer",
    "latency_ms_p50": "latency p50",
    "latency_ms_p95": "latency p95",
    "cost_usd": "cost of the run",
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
    code = comparison.replay.code_changed if comparison.replay is not None else ()
    if not comparison.system_changes and code:
        shown = ", ".join(wrap(truncate(path, 60)) for path in code[:5])
        return f"the same config; the system's code changed: {shown}"
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
    return truncate(" ".join(text.split()), 60)


# --- text ---------------------------------------------------------------------


def text_report(comparison: Comparison, verdict: Verdict) -> str:
    replay = comparison.replay
    lines = [
        f"{verdict.decision.upper()}{' for a slice' if comparison.scope else ''}: "
        f"{comparison.suite}{f' ({replay.title()})' if replay else ''} — "
        f"{headline_counts(comparison)}",
        f"system: {comparison.baseline.system} → {comparison.candidate.system} "
        f"({system_change_text(comparison)})",
    ]
    lines += [f"  ◦ {line}" for line in (replay.lines() if replay else [])]
    lines += [f"  ◦ {line}" for line in scope_lines(comparison)]
    lines += [f"  ⚠ stale baseline: {warning}" for warning in comparison.warnings]
    lines += [f"  ⚠ old recordings: {warning}" for warning in comparison.recording_warnings]
    if comparison.ruler is not None:
        lines += ruler_text(comparison.ruler)
    if comparison.holdout is not None:  # counts only: gate.holdout never names a case
        lines += [f"  ◦ {line}" for line in comparison.holdout.lines()]
    if sampled := sampling_text(comparison):
        lines.append(sampled)
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
            if show_reason and (one := single_sample_mark(comparison, case_id)):
                mark += f" [{one}]"
            reason = (
                f": {truncate(case.reason, 100)}" if show_reason and case and case.reason else ""
            )
            lines.append(f"  {case_id}{mark}{reason}")

    ordered = critical_first(comparison, comparison.regressions)
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
    lines += score_lines(comparison)
    if comparison.history is not None:
        lines += comparison.history.lines()
    flaky = [i for i, case in sorted(comparison.candidate_cases.items()) if case.flaky]
    if flaky:
        lines.append(f"flaky ({len(flaky)}): {', '.join(flaky)}")
    if comparison.judge_noisy:
        noisy = comparison.judge_noisy
        lines.append(f"regressed only on a noisy judge ({len(noisy)}): {', '.join(noisy)}")
    listed("fixes", comparison.fixes, comparison.baseline_cases, False)
    lines.append(
        f"unchanged: {len(comparison.unchanged_pass)} pass, {len(comparison.unchanged_fail)} fail"
        + (f" ({_some(comparison.unchanged_fail)})" if comparison.unchanged_fail else "")
    )
    for title, ids in (
        ("errors", comparison.errors),
        ("added", comparison.added),
        ("removed", comparison.removed),
        ("re-versioned", [f"{i} ({reversioned(comparison, i)})" for i in comparison.changed]),
    ):
        if ids:
            lines.append(f"{title}: {_some(ids)}")
    usage = []
    for delta in comparison.usage:
        before, after, change = _figure(delta)
        if delta.name in USAGE_LABELS and (
            delta.baseline is not None or delta.candidate is not None
        ):
            usage.append(f"{USAGE_LABELS[delta.name]} {before} → {after} ({change})")
    if usage:
        lines.append("usage: " + "; ".join(usage))
    lines += [f"  ◦ {note}" for note in comparison.usage_notes]
    # One entry, one line: a line break in a name or a reason cannot forge a line of its own.
    return "\n".join(flatten(line) for line in lines)


#: ids a line of the text report names before it says how many more the results hold
IDS_LISTED = 20


def _some(ids: list[str]) -> str:
    """The first ids of a list that can hold a whole suite (10,000 cases once filled a
    terminal with "unchanged" failures); the results file names every one."""
    shown = ", ".join(ids[:IDS_LISTED])
    more = len(ids) - IDS_LISTED
    return shown + (f" and {more} more (the results file names them all)" if more > 0 else "")


def markdown_report(
    comparison: Comparison,
    verdict: Verdict,
    *,
    marker: str | None = None,
    extra_notes: list[str] | None = None,
    limit: int = COMMENT_LIMIT,
    composition: Composition | None = None,
    selected: bool = False,
    link: str | None = None,
) -> str:
    """A pull-request comment: verdict, tables, then details; never over `limit`. With the
    suite's `composition`, a last line of its figures (never dropped to fit: it is short);
    `selected` says they are of a `--case`/`--tag` selection. `link` is the page of the run
    whose artifacts hold the HTML viewer (the Action's run): the head points to it, and so
    does the note when the body is cut to fit."""
    link = link if link is not None and _RUN_LINK.fullmatch(link) else None
    icon = {"block": "❌", "inconclusive": "⚠️"}.get(verdict.decision, "✅")
    head = []
    if marker:
        head.append(marker)
    sliced = " for a slice" if comparison.scope else ""
    replay = comparison.replay
    mode = f" ({replay.title()})" if replay else ""
    head.append(
        f"### {icon} casegate: **{verdict.decision}**{sliced} — {cell(comparison.suite)}{mode}"
    )
    head.append(
        f"**{headline_counts(comparison)}** · {code(comparison.baseline.system)} → "
        f"{code(comparison.candidate.system)}: {cell(system_change_text(comparison), 400)}"
    )
    if replay is not None:
        head.append(replay_section(replay))
    head += [f"> ⚠️ {cell(line, 600)}" for line in scope_lines(comparison)]
    if comparison.warnings:
        head.append(stale_baseline_section(comparison.warnings))
    if comparison.recording_warnings:
        head.append(old_recordings_section(comparison.recording_warnings))
    if comparison.ruler is not None:
        # In the head, never dropped by _fit: what the pull request changed about its own gate.
        head.append(ruler_section(comparison.ruler, min(RULER_LIMIT, limit // 3)))
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
    if link is not None:
        head.append(
            f"🔎 Every case side by side, with its outputs, diffs and checks: the "
            f"`{VIEWER_ARTIFACT}` artifact of [this run]({link}) (one HTML page; open it "
            "in a browser)."
        )

    # (priority, text): lower numbers are kept longest when the body must shrink.
    sections: list[tuple[int, str]] = []
    before, after = comparison.baseline_cases, comparison.candidate_cases
    regressions = critical_first(comparison, comparison.regressions)
    sampled = sampling_text(comparison)
    rows = [
        ["🔴 critical" if after[i].critical else "", code(i), _regression_why(comparison, i)]
        for i in regressions
    ]
    sections.append(
        (
            1,
            f"#### Regressions ({len(regressions)})\n\n"
            + (f"🎲 {cell(sampled[0].upper() + sampled[1:], 700)}.\n\n" if sampled else "")
            + (table(["", "case", "why it fails now"], rows, len(rows)) if rows else "None."),
        )
    )
    if comparison.history is not None:
        # After the regressions it speaks of; dropped before the tables below it.
        sections.append((5, comparison.history.markdown()))
    if comparison.noise is not None:
        sections.append((1, significance_section(comparison, comparison.noise)))
    if comparison.pairwise is not None:
        sections.append((2, pairwise_section(comparison.pairwise)))
    if (scored := score_section(comparison)) is not None:
        sections.append((2, scored))
    # Least reliable first: those are where prompt work pays most.
    flaky = sorted((i for i in after if after[i].flaky), key=lambda i: (after[i].pass_rate, i))
    if flaky:
        rows = [
            [code(i), rate_text(after[i].passes, after[i].samples, interval_of(after[i]))]
            for i in flaky
        ]
        sections.append(
            (
                3,
                f"#### Flaky cases ({len(rows)})\n\nSome samples pass and some fail: "
                "where prompt work pays most.\n\n"
                + table(["case", "candidate passes (95% interval)"], rows, len(rows)),
            )
        )
    if comparison.judge_noisy:
        rows = [
            [
                "🔴 critical" if after[i].critical else "",
                code(i),
                cell(judge_noise(before[i], after[i]) or ""),
            ]
            for i in critical_first(comparison, comparison.judge_noisy)
        ]
        sections.append(
            (
                1,
                f"#### Regressed only on a judge that disagrees with itself ({len(rows)})\n\n"
                "The judge's verdict is the only check these cases fail, and asked the same "
                "question again it answered differently: noise, not a confident regression.\n\n"
                + table(["", "case", "the judge's answers"], rows, len(rows)),
            )
        )
    if comparison.errors:
        rows = [[code(i), cell(after[i].reason)] for i in comparison.errors]
        sections.append(
            (2, f"#### Errors ({len(rows)})\n\n" + table(["case", "error"], rows, len(rows)))
        )
    if comparison.fixes:
        rows = [[code(i), cell(before[i].reason)] for i in comparison.fixes]
        sections.append(
            (
                3,
                f"#### Fixes ({len(rows)})\n\n"
                + table(["case", "failed on the baseline because"], rows, len(rows)),
            )
        )
    moved = (
        [("added", i) for i in comparison.added]
        + [("removed", i) for i in comparison.removed]
        + [(f"re-versioned ({reversioned(comparison, i)})", i) for i in comparison.changed]
    )
    if moved:
        rows = []
        for kind, i in moved:
            case = after.get(i) or before[i]
            rows.append([kind, code(i), case.status if i in after else "—"])
        sections.append(
            (
                4,
                f"#### Added, removed, re-versioned ({len(rows)})\n\n"
                + table(["", "case", "candidate"], rows, len(rows)),
            )
        )
    usage_rows = [
        [USAGE_LABELS[d.name], *_figure(d)]
        for d in comparison.usage
        if d.name in USAGE_LABELS and (d.baseline is not None or d.candidate is not None)
    ]
    if usage_rows:
        cost_notes = "".join(
            f"\n\n{cell(note[0].upper() + note[1:], 400)}." for note in comparison.usage_notes
        )
        sections.append(
            (
                2,
                "#### Cost, tokens, latency\n\n"
                + table(["", "baseline", "candidate", "change"], usage_rows, len(usage_rows))
                + cost_notes,
            )
        )
    unchanged = (
        f"Unchanged: {len(comparison.unchanged_pass)} pass, {len(comparison.unchanged_fail)} fail"
    )
    if comparison.unchanged_fail:
        unchanged += " (" + ", ".join(code(i) for i in comparison.unchanged_fail[:30]) + ")"
    sections.append((3, unchanged + "."))
    for index, case_id in enumerate(regressions + comparison.fixes + comparison.errors):
        sections.append(
            (10 + index, case_details(case_id, before.get(case_id), after.get(case_id)))
        )
    tail = footer(composition, selected=selected) if composition is not None else None
    return _fit(head, sections, limit, tail, link)


def _regression_why(comparison: Comparison, case_id: str) -> str:
    """Why it fails now, after the single-sample label when the regression rests on one draw."""
    why = cell(comparison.candidate_cases[case_id].reason)
    one = single_sample_mark(comparison, case_id)
    return f"⚠️ _{one}_ · {why}" if one else why


def _fit(
    head: list[str],
    sections: list[tuple[int, str]],
    limit: int,
    tail: str | None = None,
    link: str | None = None,
) -> str:
    def render(kept: list[tuple[int, str]], note: str | None) -> str:
        parts = head + [text for _, text in kept]
        if note:
            parts.append(note)
        if tail:
            parts.append(tail)
        return "\n\n".join(parts) + "\n"

    kept = list(sections)
    dropped = 0
    body = render(kept, None)
    while len(body) > limit and kept:
        # Drop the least important section (highest priority number) first.
        worst = max(range(len(kept)), key=lambda k: (kept[k][0], k))
        kept.pop(worst)
        dropped += 1
        where = (
            f"The HTML viewer, the `{VIEWER_ARTIFACT}` artifact of [this run]({link}), shows "
            "every case side by side; the run's results file (the `casegate-results` "
            "artifact) holds them all too."
            if link is not None
            else "Every case is in the run's results file (the `casegate-results` artifact "
            "of the starter workflow): `casegate view RESULTS --baseline BASELINE` draws "
            "them as one HTML page, and `casegate compare BASELINE RESULTS` lists them."
        )
        body = render(
            kept,
            f"_Truncated: {dropped} section(s) left out to fit GitHub's comment limit. {where}_",
        )
    if len(body) > limit:  # the head alone is too long: cut it between lines, say so
        kept_text = body[: limit - 80]
        body = (
            kept_text[: kept_text.rfind("\n") + 1]
            + "\n_Truncated to fit GitHub's comment limit._\n"
        )
    return body
