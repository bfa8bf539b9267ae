"""What the HTML viewer shows, as plain data: the head (verdict, ruler review, run summary)
and every case with both sides' samples, checks and diffs.

Every string that came from a run (outputs, reasons, ids, tool calls) is untrusted. It is
made safe to show here in two ways that do not depend on the page: control and
bidirectional characters become escapes, as `casegate show` prints them (gate.reporting
.show), and any remembered secret is masked. The page then only ever sets it as text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gate.checks.graded import JUDGED
from gate.deciding.compare import Comparison
from gate.deciding.rules import Verdict
from gate.reporting.diffs import diff_texts
from gate.reporting.report import headline_counts, system_change_text, text_report
from gate.reporting.sections import (
    case_origin,
    reversioned,
    ruler_text,
    sampling_text,
    scope_lines,
)
from gate.reporting.show import escaped, one_line
from gate.results import CaseResult, CheckResult, RunResults, SampleResult
from gate.secrets import redact

#: a sample's diff is left out past this many characters a side (the outputs stay whole):
#: difflib is quadratic on long repetitive text, and a page must open
DIFF_LIMIT = 60_000
#: the characters (both sides) one page's diffs compare in all, the changed cases' first:
#: a live run of 10,000 cases, every answer new, would otherwise add half a minute to
#: `check` (the page says which diffs it left to `casegate show`)
DIFF_BUDGET = 1_500_000


@dataclass(slots=True)
class Budget:
    left: int = field(default_factory=lambda: DIFF_BUDGET)

    def take(self, size: int) -> bool:
        if size > self.left:
            return False
        self.left -= size
        return True


def text(value: object) -> str:
    """Untrusted text, line breaks kept."""
    return redact(escaped(str(value)))


def line(value: object) -> str:
    """Untrusted text on one line (an id, a reason, a check name)."""
    return redact(one_line(str(value)))


def comparison_head(comparison: Comparison, verdict: Verdict) -> dict[str, Any]:
    """The top of the page with a baseline: the verdict and what it rests on, in the
    words the text report uses (gate.reporting.report), and that report whole."""
    replay = comparison.replay
    return {
        "kind": "comparison",
        "decision": verdict.decision,
        "suite": line(comparison.suite),
        "mode": line(replay.title()) if replay else "",
        "headline": line(headline_counts(comparison)),
        "system": line(
            f"{comparison.baseline.system} → {comparison.candidate.system} "
            f"({system_change_text(comparison)})"
        ),
        "reasons": [
            line(r.message + (f": {', '.join(r.cases)}" if r.cases else ""))
            for r in verdict.reasons
        ],
        "notes": [line(note) for note in verdict.notes],
        "facts": [
            line(fact)
            for fact in [
                *(replay.lines() if replay else []),
                *(
                    [f"pairwise judge: {comparison.pairwise.summary()}"]
                    if comparison.pairwise
                    else []
                ),
                *scope_lines(comparison),
                *(f"stale baseline: {w}" for w in comparison.warnings),
                *(f"old recordings: {w}" for w in comparison.recording_warnings),
                *([sampling_text(comparison)] if comparison.sampling else []),
                *verdict.instrument,
            ]
        ],
        # The ruler review: what a pull request changed about the gate that judges it.
        "ruler": [line(entry) for entry in ruler_text(comparison.ruler)]
        if comparison.ruler is not None
        else [],
        # Counts only: the held-out slice never names a case (gate.holdout).
        "holdout": [line(entry) for entry in comparison.holdout.lines()]
        if comparison.holdout is not None
        else [],
        "report": text(text_report(comparison, verdict)),
    }


def run_head(results: RunResults) -> dict[str, Any]:
    """The top of the page for one run: its summary, no verdict (there is no baseline)."""
    s = results.summary
    figures = [
        f"{s.passed}/{s.cases} passed ({s.pass_rate:.1%}), {s.failed} failed, "
        f"{s.errors} error(s), {s.flaky} flaky",
    ]
    if s.cost_usd is not None:
        figures.append(f"cost of the run ${s.cost_usd:,.4f}")
    if s.latency_ms_p95 is not None:
        p50 = s.latency_ms_p50 or 0
        figures.append(f"latency p50 {p50:,.0f} ms, p95 {s.latency_ms_p95:,.0f} ms")
    held = results.holdout
    holdout = []
    if held is not None:  # the slice's counts, never its sealed verdicts
        holdout.append(
            f"held-out slice {held.status}: {held.passed}/{held.cases} pass, "
            f"{held.failed} fail, {held.errors} error(s)" + (f"; {held.note}" if held.note else "")
        )
    return {
        "kind": "run",
        "decision": None,
        "suite": line(results.suite),
        "mode": line(results.mode or ""),
        "headline": line("; ".join(figures)),
        "system": line(results.system),
        "reasons": [],
        "notes": ["the run was interrupted: only the cases that finished are here"]
        if results.interrupted
        else [],
        "facts": [line(f"created {results.created_at}, casegate {results.casegate_version}")],
        "ruler": [],
        "holdout": [line(entry) for entry in holdout],
        "report": "",
    }


def comparison_cases(comparison: Comparison) -> list[dict[str, Any]]:
    before, after = comparison.baseline_cases, comparison.candidate_cases
    kinds: dict[str, str] = {}
    for kind, ids in (
        ("unchanged pass", comparison.unchanged_pass),
        ("unchanged fail", comparison.unchanged_fail),
        ("fix", comparison.fixes),
        ("regression", comparison.regressions),
        ("regressed on a noisy judge", comparison.judge_noisy),
        ("error", comparison.errors),
        ("added", comparison.added),
        ("removed", comparison.removed),
    ):
        kinds.update(dict.fromkeys(ids, kind))
    for case_id in comparison.changed:
        kinds[case_id] = f"re-versioned ({reversioned(comparison, case_id)})"
    ids = sorted(set(before) | set(after))
    budget = Budget()
    # The changed cases' diffs first, then the unchanged ones' while the budget lasts.
    first = sorted(ids, key=lambda i: (kinds.get(i, "").startswith("unchanged"), i))
    built = {i: case_entry(after.get(i), before.get(i), kinds.get(i, ""), budget) for i in first}
    entries = [built[i] for i in ids]
    found = comparison.pairwise
    if found is not None:  # the pairwise judge's verdict on each pair, with its reason
        pairs = {case.id: case.pairs for case in found.cases}
        for entry, case_id in zip(entries, ids, strict=True):
            entry["pairwise"] = [
                {"sample": p.sample, "outcome": p.outcome, "reason": text(p.reason)}
                for p in pairs.get(case_id, [])
            ]
            if case_id in found.not_compared:
                entry["pairwise_note"] = line(found.not_compared[case_id])
    return entries


def run_cases(results: RunResults) -> list[dict[str, Any]]:
    return [case_entry(case, None, "", Budget()) for case in results.cases]


def case_entry(
    new: CaseResult | None, old: CaseResult | None, kind: str, budget: Budget
) -> dict[str, Any]:
    """One row of the table and its two sides, candidate and baseline."""
    shown = new or old
    assert shown is not None  # a case is in at least one run
    candidate = side(new, old, budget)
    baseline = side(old, None, budget)
    answered = _answered(old)
    outputs_differ = bool(answered) and any(
        sample.text is not None and sample.text != _partner(sample, answered).text
        for sample in (new.outputs if new else [])
    )
    return {
        "id": line(shown.id),
        "critical": shown.critical,
        "tags": [line(tag) for tag in shown.tags],
        "version": shown.version,
        "status": new.status if new else None,
        "base": old.status if old else None,
        "kind": kind,
        "changed": (bool(kind) and not kind.startswith("unchanged")) or outputs_differ,
        "score_change": _score_change(new, old),
        "cost": new.cost_usd if new else None,
        "latency": new.latency_ms if new else None,
        "reason": line(shown.reason),
        "about": [
            line(entry)
            for entry in (
                f"defined at {shown.source}" if shown.source else "",
                f"note: {shown.note}" if shown.note else "",
                case_origin(shown),
            )
            if entry
        ],
        "candidate": candidate,
        "baseline": baseline,
        "pairwise": [],
        "pairwise_note": "",
    }


def _answered(case: CaseResult | None) -> dict[int, SampleResult]:
    return {s.sample: s for s in case.outputs if s.text is not None} if case else {}


def _partner(sample: SampleResult, answered: dict[int, SampleResult]) -> SampleResult:
    """The other run's sample of the same index, else its first answered one."""
    return answered.get(sample.sample) or answered[min(answered)]


def side(case: CaseResult | None, other: CaseResult | None, budget: Budget) -> dict[str, Any]:
    """One run's account of a case; with `other`, each sample's diff from its output."""
    if case is None:
        return {"present": False, "checks": [], "samples": []}
    answered = _answered(other)
    return {
        "present": True,
        "status": case.status,
        "passes": case.passes,
        "samples_count": case.samples,
        "reason": line(case.reason),
        "checks": [_check(c) for c in case.checks],
        "samples": [_sample(s, answered, budget) for s in case.outputs],
    }


def _check(check: CheckResult) -> dict[str, Any]:
    return {
        "check": line(check.check),
        "ok": check.ok,
        "score": check.score,
        # The judge's reason is its rationale: the page labels it so.
        "judge": check.check in JUDGED,
        "reason": text(check.reason),
    }


def _sample(
    sample: SampleResult, answered: dict[int, SampleResult], budget: Budget
) -> dict[str, Any]:
    """A sample whole; with the other run's answered samples, its change from the one of
    the same index (else the first): the output's, and the tool calls' when they differ."""
    entry: dict[str, Any] = {
        "sample": sample.sample,
        "status": sample.status,
        "text": None if sample.text is None else text(sample.text),
        "reason": text(sample.reason),
        "checks": [_check(c) for c in sample.checks],
        "latency": sample.latency_ms,
        "cost": sample.cost_usd,
        "model": line(sample.model) if sample.model else None,
        "tool_calls": text(_pretty(sample.tool_calls)) if sample.tool_calls else None,
        "contexts": [
            {"id": line(c.get("id") or ""), "text": text(c.get("text") or "")}
            for c in sample.contexts
        ],
        "diff": None,
        "tools_diff": None,
    }
    if sample.text is None or not answered:
        return entry
    other = _partner(sample, answered)
    old = other.text or ""
    if old == sample.text:
        entry["diff"] = []
    elif max(len(old), len(sample.text)) <= DIFF_LIMIT and budget.take(len(old) + len(sample.text)):
        diff = diff_texts(old, sample.text)
        entry["diff_kind"] = diff.kind
        entry["diff"] = [[run.op, text(run.text)] for run in diff.runs]
    else:
        entry["diff_skipped"] = True
    if other.tool_calls != sample.tool_calls:
        calls = diff_texts(_pretty(other.tool_calls), _pretty(sample.tool_calls))
        entry["tools_diff"] = [[run.op, text(run.text)] for run in calls.runs]
    return entry


def _pretty(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _mean_score(case: CaseResult | None) -> float | None:
    """A case's measure: the mean of its checks' scores, else its pass rate."""
    if case is None:
        return None
    scores = [c.score for c in case.checks if c.score is not None]
    return sum(scores) / len(scores) if scores else case.pass_rate


def _score_change(new: CaseResult | None, old: CaseResult | None) -> float | None:
    after, before = _mean_score(new), _mean_score(old)
    return None if after is None or before is None else round(after - before, 6)
