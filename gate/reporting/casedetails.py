"""One case's `<details>` in the pull request's comment: its status change, the checks
failing now, where it came from, and the output's change from the baseline's (with the
tool calls when the text stayed the same). Everything in it is escaped where it lands."""

from __future__ import annotations

import json
from typing import Any

from gate.reporting.diffs import diff_texts
from gate.reporting.markup import CELL_LIMIT, block, cell, code, diff_block, html_text
from gate.reporting.sections import case_origin
from gate.results import CaseResult

#: answers up to this many characters (both sides together) are shown whole, each side on
#: its own lines with the changed words marked; longer ones as their changed pieces, cut
SHORT_ANSWER = 1_200


def _failing_checks(case: CaseResult | None) -> str:
    if case is None:
        return "—"
    if case.status == "error":
        return "error: " + case.reason
    failed = [f"{c.check}: {c.reason}" for c in case.checks if not c.ok]
    return "; ".join(failed) or "all checks pass"


def case_details(case_id: str, old: CaseResult | None, new: CaseResult | None) -> str:
    before, after = _first_output(old), _first_output(new)
    critical = " (critical)" if new is not None and new.critical else ""
    parts = [
        f"<details><summary>{html_text(case_id, CELL_LIMIT)}{critical}: "
        f"{old.status if old else '—'} → {new.status if new else '—'}</summary>\n",
        f"Failing checks now: {cell(_failing_checks(new), 600)}\n",
    ]
    if origin := case_origin(new or old):
        parts.append(f"{cell(origin, 600)}\n")
    if before is None or after is None:
        parts += [
            f"Baseline output:\n{block(before)}\n",
            f"Candidate output:\n{block(after)}\n",
        ]
    elif not (diff := diff_texts(before, after)):
        parts.append(f"Output, the same as the baseline's:\n{block(after)}\n")
        parts += _tool_call_change(old, new)
    else:
        if diff.kind == "lines":
            how, shown = "by line, JSON pretty-printed", diff.lines()
        elif len(diff.old()) + len(diff.new()) <= SHORT_ANSWER:
            how, shown = "by word: [-removed-] {+added+}", diff.sides()
        else:
            how, shown = "by word", diff.lines()
        fenced, cut = diff_block(shown)
        parts.append(f"Output, baseline → candidate ({how}):\n\n{fenced}\n")
        if cut:
            parts.append(
                f"_The diff is cut short here ({cut} line(s) not shown in full): "
                f"{code('casegate show ' + case_id)} prints it whole, with both outputs._\n"
            )
    parts.append("</details>")
    return "\n".join(parts)


def _tool_call_change(old: CaseResult | None, new: CaseResult | None) -> list[str]:
    """The tool calls, baseline → candidate, when they changed under the same text: a
    regression in a call's arguments is otherwise invisible in the details."""
    calls = [_first_calls(case) for case in (old, new)]
    if calls[0] == calls[1]:
        return []
    shown = [json.dumps(found, indent=2, sort_keys=True, ensure_ascii=False) for found in calls]
    diff = diff_texts(*shown)
    if not diff:
        return []
    fenced, _ = diff_block(diff.lines())
    return [f"Tool calls, baseline → candidate (by line):\n\n{fenced}\n"]


def _first_calls(case: CaseResult | None) -> list[dict[str, Any]]:
    sample = next((s for s in case.outputs if s.text is not None), None) if case else None
    return list(sample.tool_calls) if sample is not None else []


def _first_output(case: CaseResult | None) -> str | None:
    return next((s.text for s in case.outputs if s.text is not None), None) if case else None
