"""The drift report: what the live system answers that its recordings do not.

A `DriftReport` is written as JSON (`casegate.drift/1`, field order is the file's
order) and rendered as text for a terminal or a log, and as markdown for the
tracking issue. Everything in it that a model or the suite wrote — outputs, diffs,
reasons, model strings, case ids — is untrusted: markdown escapes it as the pull
request report does (gate.reporting.report), and text keeps it behind a gutter, escaped.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from gate.errors import ResultsError
from gate.files import parse_json
from gate.results import Status
from gate.yamlfile import dotted

SCHEMA = "casegate.drift/1"
Flip = Literal["pass_to_fail", "fail_to_pass"]
FLIP_ARROWS = {"pass_to_fail": "pass → fail", "fail_to_pass": "fail → pass"}
#: GitHub refuses issue bodies over 65,536 characters; keep a margin
BODY_LIMIT = 60_000
#: rows a markdown table shows; the JSON report has every case
ROWS = 50
#: a diff kept in the JSON report, per sample
DIFF_LINES = 60
DIFF_CHARS = 4_000


@dataclass(slots=True, kw_only=True)
class SampleDrift:
    sample: int
    #: the recorded output judged by today's checks; None: this sample was never recorded
    recorded: Status | None = None
    #: the live output judged by the same checks
    live: Status
    recorded_reason: str = ""
    live_reason: str = ""
    output_changed: bool = False
    #: recorded → live, by word (by line for JSON): lines starting "- ", "+ ", "  " or "@@"
    diff: list[str] = field(default_factory=list)
    recorded_model: str | None = None
    live_model: str | None = None
    recorded_fingerprint: str | None = None
    live_fingerprint: str | None = None
    captured_at: str | None = None
    age_days: int | None = None


@dataclass(slots=True, kw_only=True)
class CaseDrift:
    id: str
    critical: bool = False
    source: str | None = None
    #: the case's replayed verdict; None when a sample has no recording
    recorded: Status | None = None
    live: Status
    flip: Flip | None = None
    output_changed: bool = False
    model_changed: bool = False
    fingerprint_changed: bool = False
    #: of the case's oldest recording
    captured_at: str | None = None
    age_days: int | None = None
    recorded_reason: str = ""
    live_reason: str = ""
    refreshed: bool = False
    samples: list[SampleDrift] = field(default_factory=list)

    @property
    def drifted(self) -> bool:
        return bool(
            self.flip or self.output_changed or self.model_changed or self.fingerprint_changed
        )


@dataclass(slots=True, kw_only=True)
class DriftSummary:
    cases: int
    flips: int
    changed_outputs: int
    model_changes: int
    fingerprint_changes: int
    never_recorded: int
    errors: int
    old_recordings: int


@dataclass(slots=True, kw_only=True)
class DriftReport:
    schema: str = SCHEMA
    suite: str
    system: str
    #: the configured model (what was asked for; each sample says what answered)
    model: str | None = None
    created_at: str
    casegate_version: str
    max_flips: int
    max_age_days: int | None = None
    interrupted: bool = False
    #: some case flipped, changed its output, or is answered by another model or fingerprint
    drifted: bool
    summary: DriftSummary
    flips: list[str] = field(default_factory=list)
    changed_outputs: list[str] = field(default_factory=list)
    model_changes: list[str] = field(default_factory=list)
    fingerprint_changes: list[str] = field(default_factory=list)
    never_recorded: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    old_recordings: list[str] = field(default_factory=list)
    refreshed: list[str] = field(default_factory=list)
    cases: list[CaseDrift] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """2 when a case could not be measured (never "no drift"), 1 past max_flips, else 0."""
        if self.errors or self.interrupted:
            return 2
        return 1 if len(self.flips) > self.max_flips else 0

    def case_map(self) -> dict[str, CaseDrift]:
        return {case.id: case for case in self.cases}

    def to_dict(self) -> dict[str, Any]:
        return _REPORT.dump_python(self, mode="json")  # type: ignore[no-any-return]


_REPORT = TypeAdapter(DriftReport)


def build(head: dict[str, Any], cases: list[CaseDrift]) -> DriftReport:
    """The report over `cases` (sorted by id), its lists and summary derived from them."""
    cases = sorted(cases, key=lambda case: case.id)
    limit = head.get("max_age_days")

    def ids(keep: Callable[[CaseDrift], bool]) -> list[str]:
        return [case.id for case in cases if keep(case)]

    flips = ids(lambda c: c.flip is not None)
    changed = ids(lambda c: c.output_changed and c.flip is None)
    models = ids(lambda c: c.model_changed)
    fingerprints = ids(lambda c: c.fingerprint_changed)
    never = ids(lambda c: c.recorded is None and c.live != "error")
    errors = ids(lambda c: c.live == "error")
    old = sorted(
        (c for c in cases if limit is not None and c.age_days is not None and c.age_days > limit),
        key=lambda c: (-(c.age_days or 0), c.id),
    )
    return DriftReport(
        **head,
        drifted=bool(flips or changed or models or fingerprints),
        summary=DriftSummary(
            cases=len(cases),
            flips=len(flips),
            changed_outputs=len(changed),
            model_changes=len(models),
            fingerprint_changes=len(fingerprints),
            never_recorded=len(never),
            errors=len(errors),
            old_recordings=len(old),
        ),
        flips=flips,
        changed_outputs=changed,
        model_changes=models,
        fingerprint_changes=fingerprints,
        never_recorded=never,
        errors=errors,
        old_recordings=[c.id for c in old],
        refreshed=ids(lambda c: c.refreshed),
        cases=cases,
    )


def read_report(text: str | bytes, where: str) -> DriftReport:
    """A drift report from its JSON; ResultsError naming `where` when it is not one."""
    try:
        data = parse_json(text)
    except ValueError as exc:
        raise ResultsError(f"{where}: not a readable drift report: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ResultsError(f"{where}: expected schema {SCHEMA!r}, found {found!r}")
    try:
        return _REPORT.validate_python(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise ResultsError(
            f"{where}: invalid drift report at {dotted(error['loc'])}: {error['msg']}"
        ) from None


def changed_values(case: CaseDrift, what: Literal["model", "fingerprint"]) -> str:
    """`a → b` for the first sample whose model (or fingerprint) changed."""
    for sample in case.samples:
        before = getattr(sample, f"recorded_{what}")
        after = getattr(sample, f"live_{what}")
        if before is not None and after is not None and before != after:
            return f"{before} → {after}"
    return ""


def headline(report: DriftReport) -> str:
    """One line: in step, or what drifted, and whether that is past max_flips."""
    s = report.summary
    if report.interrupted:
        state = "INTERRUPTED"
    elif report.errors:
        state = "INCOMPLETE"
    elif len(report.flips) > report.max_flips:
        state = "DRIFT"
    elif report.drifted:
        state = "DRIFT (within max_flips)"
    else:
        state = "IN STEP"
    parts = [f"{s.flips} flip(s) (max_flips {report.max_flips})"]
    parts.append(f"{s.changed_outputs} changed output(s) without a flip")
    if s.model_changes:
        parts.append(f"model changed in {s.model_changes}")
    if s.fingerprint_changes:
        parts.append(f"system fingerprint changed in {s.fingerprint_changes}")
    if s.errors:
        parts.append(f"{s.errors} error(s)")
    if s.never_recorded:
        parts.append(f"{s.never_recorded} never recorded")
    return f"{state}: {report.suite} — " + ", ".join(parts) + f"; {s.cases} case(s) run live"


def age_line(report: DriftReport) -> str | None:
    """Recordings older than max_age_days, oldest first: a warning, never a block."""
    if not report.old_recordings:
        return None
    by_id = report.case_map()
    oldest = by_id[report.old_recordings[0]]
    shown = ", ".join(report.old_recordings[:5])
    more = len(report.old_recordings) - 5
    return (
        f"{len(report.old_recordings)} case(s) have recordings older than "
        f"{report.max_age_days} days (oldest: {oldest.id}, {oldest.age_days} days, captured "
        f"{(oldest.captured_at or '')[:10]}; {shown}{f' and {more} more' if more > 0 else ''}); "
        "recordings.max_age_days sets the limit"
    )


# --- text: a terminal, or a job log (where the Action fences it) -----------------------


def text_report(report: DriftReport) -> str:
    from gate.reporting.show import GUTTER, escaped, one_line

    by_id = report.case_map()
    lines = [one_line(headline(report))]
    lines.append(f"system: {one_line(report.system)} ({one_line(report.model or 'no model')})")
    age = age_line(report)
    if age:
        lines.append(f"  ⚠ old recordings: {one_line(age)}")
    if report.errors:
        lines.append(
            f"  ✗ {len(report.errors)} case(s) could not be measured live, so this run cannot "
            "say they are in step: fix the cause (see errors) and run again"
        )

    def listed(title: str, ids: list[str], detail: Callable[[CaseDrift], list[str]]) -> None:
        if not ids:
            return
        lines.append(f"{title} ({len(ids)})")
        for case_id in ids[:ROWS]:
            lines.extend(detail(by_id[case_id]))
        if len(ids) > ROWS:
            lines.append(f"  … and {len(ids) - ROWS} more (see --format json)")

    def diff_lines(case: CaseDrift) -> list[str]:
        sample = next((s for s in case.samples if s.output_changed), None)
        if sample is None:
            return []
        shown = [f"    {GUTTER} {escaped(line)}" for line in sample.diff[:12]]
        if len(sample.diff) > 12:
            shown.append(f"    {GUTTER} … {len(sample.diff) - 12} more line(s)")
        return shown

    def flip(case: CaseDrift) -> list[str]:
        mark = " [critical]" if case.critical else ""
        why = case.live_reason if case.flip == "pass_to_fail" else case.recorded_reason
        because = f": {one_line(_short(why))}" if why else ""
        arrow = FLIP_ARROWS[case.flip or "pass_to_fail"]
        return [f"  {one_line(case.id)}{mark}: {arrow}{because}", *diff_lines(case)]

    def changed(case: CaseDrift) -> list[str]:
        count = sum(1 for s in case.samples if s.output_changed)
        return [f"  {one_line(case.id)}: {count}/{len(case.samples)} sample(s)", *diff_lines(case)]

    def moved(what: Literal["model", "fingerprint"]) -> Callable[[CaseDrift], list[str]]:
        return lambda case: [f"  {one_line(case.id)}: {one_line(changed_values(case, what))}"]

    listed("flips", report.flips, flip)
    listed("changed outputs without a flip", report.changed_outputs, changed)
    listed("model changed", report.model_changes, moved("model"))
    listed("system fingerprint changed", report.fingerprint_changes, moved("fingerprint"))
    listed(
        "errors",
        report.errors,
        lambda case: [f"  {one_line(case.id)}: {one_line(_short(case.live_reason, 200))}"],
    )
    if report.never_recorded:
        lines.append(
            f"never recorded ({len(report.never_recorded)}): "
            + one_line(", ".join(report.never_recorded[:ROWS]))
            + " (run `casegate record --only-missing` to record them)"
        )
    if report.refreshed:
        lines.append(
            f"refreshed ({len(report.refreshed)}): "
            + one_line(", ".join(report.refreshed[:ROWS]))
            + " (their new recordings are in the recordings folder: review the diff, commit it "
            "in a pull request)"
        )
    return "\n".join(lines)


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- markdown: the tracking issue, the step summary ----------------------------------


def markdown_report(
    report: DriftReport, *, marker: str | None = None, limit: int = BODY_LIMIT
) -> str:
    """The report in markdown, within `limit` characters; every untrusted string escaped."""
    from gate.reporting.markup import cell, code, diff_block, neutralise

    by_id = report.case_map()
    s = report.summary
    if report.errors or report.interrupted:
        icon, state = "⚠️", "incomplete"
    elif len(report.flips) > report.max_flips:
        icon, state = "❌", f"{s.flips} flip(s)"
    elif report.drifted:
        icon, state = "⚠️", "drifted within max\\_flips"
    else:
        icon, state = "✅", "in step"
    head = [marker] if marker else []
    head.append(f"### {icon} casegate drift: **{state}** — {cell(report.suite)}")
    head.append(
        f"**{s.flips} flip(s)** (max\\_flips {report.max_flips}) · {s.changed_outputs} changed "
        f"output(s) without a flip · model changed in {s.model_changes} · system fingerprint "
        f"changed in {s.fingerprint_changes} · {s.errors} error(s) · {s.never_recorded} never "
        f"recorded · {s.cases} case(s) run live against their recordings · system "
        f"{code(report.system)}" + (f" ({code(report.model)})" if report.model else "")
    )
    age = age_line(report)
    if age:
        head.append(f"> ⚠️ **Old recordings** (a warning; it does not block): {cell(age, 600)}")
    if report.errors:
        head.append(
            f"> ⚠️ **{len(report.errors)} case(s) could not be measured live** (a provider "
            'error is never taken for "no drift"): see Errors.'
        )
    if report.interrupted:
        head.append("> ⚠️ **Interrupted**: only the cases that finished are listed.")

    sections: list[str] = []

    def table(title: str, headers: list[str], rows: list[list[str]], total: int) -> None:
        if not rows:
            return
        lines = [
            "| " + " | ".join(headers) + " |",
            "|" + "---|" * len(headers),
            *("| " + " | ".join(row) + " |" for row in rows[:ROWS]),
        ]
        if total > ROWS:
            lines.append(f"\n… and {total - ROWS} more in the JSON report (`--format json`).")
        sections.append(f"#### {title} ({total})\n\n" + "\n".join(lines))

    def why(case: CaseDrift) -> str:
        text = case.live_reason if case.flip == "pass_to_fail" else case.recorded_reason
        return cell(text or "—")

    table(
        "Flips",
        ["", "case", "recorded → live", "why the failing side fails"],
        [
            [
                "🔴 critical" if by_id[i].critical else "",
                code(i),
                FLIP_ARROWS[by_id[i].flip or "pass_to_fail"],
                why(by_id[i]),
            ]
            for i in report.flips
        ],
        len(report.flips),
    )
    table(
        "Changed outputs without a flip",
        ["case", "verdict", "samples changed"],
        [
            [
                code(i),
                by_id[i].live,
                f"{sum(1 for x in by_id[i].samples if x.output_changed)}/{len(by_id[i].samples)}",
            ]
            for i in report.changed_outputs
        ],
        len(report.changed_outputs),
    )
    moved = sorted(set(report.model_changes) | set(report.fingerprint_changes))
    table(
        "Model or system fingerprint changed",
        ["case", "model (recorded → live)", "system fingerprint (recorded → live)"],
        [
            [
                code(i),
                cell(changed_values(by_id[i], "model") or "—"),
                cell(changed_values(by_id[i], "fingerprint") or "—"),
            ]
            for i in moved
        ],
        len(moved),
    )
    table(
        "Errors",
        ["case", "error"],
        [[code(i), cell(by_id[i].live_reason)] for i in report.errors],
        len(report.errors),
    )
    if report.never_recorded:
        sections.append(
            f"#### Never recorded ({len(report.never_recorded)})\n\n"
            + ", ".join(code(i) for i in report.never_recorded[:ROWS])
            + "\n\nNot compared: record them with `casegate record --only-missing`."
        )
    if report.refreshed:
        sections.append(
            f"#### Refreshed ({len(report.refreshed)})\n\n"
            + ", ".join(code(i) for i in report.refreshed[:ROWS])
            + "\n\nTheir live responses were written to the recordings folder: review them "
            "in a pull request."
        )

    details = []
    for case_id in report.flips + report.changed_outputs:
        case = by_id[case_id]
        sample = next((x for x in case.samples if x.output_changed), None)
        if sample is None:
            continue
        arrow = FLIP_ARROWS[case.flip] if case.flip else f"{case.live}, output changed"
        fenced, cut = diff_block(sample.diff)
        note = f"\n_{cut} more line(s) in the JSON report._\n" if cut else ""
        details.append(
            f"<details><summary>{neutralise(html.escape(case_id))}: {arrow} "
            f"(sample {sample.sample})</summary>\n\n"
            f"Output, recorded → live:\n\n{fenced}\n{note}\n</details>"
        )
    return _fit(head, sections, details, limit)


def _fit(head: list[str], sections: list[str], details: list[str], limit: int) -> str:
    """Head, tables, then each case's diff while they fit; a line says what was left out."""
    body = "\n\n".join(head + sections) + "\n"
    if len(body) > limit:  # tables only grow to ROWS rows; cut between lines, say so
        body = body[: limit - 200]
        body = body[: body.rfind("\n") + 1] + "\n_Cut short to fit GitHub's limit._\n"
        return body
    for index, text in enumerate(details):
        note = f"\n_{len(details) - index} diff(s) left out to fit GitHub's limit._\n"
        if len(body) + len(text) + 2 + len(note) > limit:
            return body + note
        body += "\n" + text + "\n"
    return body
