"""The score sections of the reports (gate.deciding.scores): per check, each case's change
in mean score beside its verdict flip, largest fall first; then pass^k and pass@k.

Check names and case ids come from the pull request: escaped where they land (markdown)
and kept on one line (text), as the rest of the report does.
"""

from __future__ import annotations

from gate.deciding.compare import Comparison
from gate.deciding.scores import CaseScore, CheckScores, PassK
from gate.reporting.markup import cell, code, table

#: cases a text report lists per check (the JSON report and the results file hold them all)
TEXT_ROWS = 10


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _change(case: CaseScore) -> str:
    change = case.change
    if change is None:
        return "no score on the candidate" if case.base else "new: no baseline score"
    if case.interval is None:
        return f"{change:+.3f} (one sample a side: no interval)"
    return f"{change:+.3f} ({case.interval.low:+.3f} to {case.interval.high:+.3f})"


def _flip(comparison: Comparison, case_id: str) -> str:
    """The case's pass/fail verdict change beside its score change, and what the gate made of
    it (a regression or a fix; with samples, a flip short of one is within noise)."""
    old, new = comparison.baseline_cases.get(case_id), comparison.candidate_cases.get(case_id)
    if old is None or new is None:
        return ""
    if new.status == "error":
        return "error"
    if old.passed == new.passed:
        return ""
    flip = "pass → fail" if old.passed else "fail → pass"
    if case_id in comparison.regressions:
        return f"{flip} (regression)"
    if case_id in comparison.fixes:
        return f"{flip} (fix)"
    return f"{flip} (within noise)" if comparison.noise is not None else flip


def by_change(scores: CheckScores) -> list[CaseScore]:
    """Missing scores first, then the largest fall, on to the largest rise."""
    return sorted(
        scores.cases,
        key=lambda case: (
            case.change is not None,
            case.change if case.change is not None else 0.0,
            case.id,
        ),
    )


def _check_summary(scores: CheckScores) -> str:
    change = scores.change
    unit = f"{scores.clusters} clusters" if scores.clusters else f"{scores.units} cases"
    return (
        f"mean change {change.mean:+.3f} per case over {len(scores.paired)} shared cases "
        f"(95% CI {change.low:+.3f} to {change.high:+.3f}); paired sign-flip p = "
        f"{scores.p_lower:.2g} over {unit}"
    )


def _pass_k_summary(pass_k: PassK) -> str:
    k = pass_k.k
    return (
        f"pass^{k} (all {k} samples pass) {_number(pass_k.suite(0))} → {_number(pass_k.suite(1))}; "
        f"pass@{k} (at least one of {k} passes) {_number(pass_k.suite(2))} → "
        f"{_number(pass_k.suite(3))}, the mean over {len(pass_k.cases)} sampled case(s) "
        f"(cases with fewer than {k} samples: —)"
    )


def score_section(comparison: Comparison) -> str | None:
    """The markdown section, or None when neither run holds a score or a sampled case."""
    found = comparison.scores
    if found is None:
        return None
    parts = ["#### Scores"]
    for name, scores in found.checks.items():
        rows = [
            [
                code(case.id),
                _number(case.base_mean),
                _number(case.cand_mean),
                _change(case),
                _flip(comparison, case.id),
            ]
            for case in by_change(scores)
            if case.change is None or abs(case.change) > 0
        ]
        parts.append(f"{code(name)}: {cell(_check_summary(scores), 400)}.")
        if rows:
            parts.append(
                table(
                    ["case", "baseline mean", "candidate mean", "change (95% CI)", "verdict"],
                    rows,
                    len(rows),
                )
            )
    pass_k = found.pass_k
    if pass_k is not None and pass_k.cases:
        k = pass_k.k
        parts.append(cell(_pass_k_summary(pass_k), 500) + ".")
        worst = sorted(pass_k.cases.items(), key=lambda item: (item[1][1] is None, item[1][1] or 0))
        rows = [
            [code(case_id), *(_number(v) for v in values)]
            for case_id, values in worst
            if values[1] is None or values[1] < 1
        ]
        if rows:
            parts.append(
                table(
                    # Escaped as a cell: a bare "@3" reads as a mention to the checks a
                    # fork's report artifact must pass (gate.github) and to GitHub.
                    [
                        "case",
                        f"baseline pass^{k}",
                        f"candidate pass^{k}",
                        cell(f"baseline pass@{k}"),
                        cell(f"candidate pass@{k}"),
                    ],
                    rows,
                    len(rows),
                )
            )
    return "\n\n".join(parts) if len(parts) > 1 else None


def score_lines(comparison: Comparison) -> list[str]:
    """The text report's lines: per check its summary and its largest changes."""
    found = comparison.scores
    if found is None:
        return []
    lines = []
    for name, scores in found.checks.items():
        lines.append(f"scores {name}: {_check_summary(scores)}")
        moved = [c for c in by_change(scores) if c.change is None or abs(c.change) > 0]
        for case in moved[:TEXT_ROWS]:
            flip = _flip(comparison, case.id)
            lines.append(
                f"  {case.id}: {_number(case.base_mean)} → {_number(case.cand_mean)}, "
                f"{_change(case)}{f', {flip}' if flip else ''}"
            )
        if len(moved) > TEXT_ROWS:
            lines.append(f"  … and {len(moved) - TEXT_ROWS} more (--format json lists them all)")
    if found.pass_k is not None and found.pass_k.cases:
        lines.append(_pass_k_summary(found.pass_k))
    return lines
