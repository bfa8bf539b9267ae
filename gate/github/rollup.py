"""One pull-request comment for several suites: the strictest verdict first, a section each.

Each suite's section is its own markdown report (gate.reporting.report), without
its marker, inside a `<details>` that is open when the suite does not ship. The
comment has one marker of its own, the same whichever suites it holds, so adding
or removing a suite updates the comment rather than leaving one behind.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gate.reporting.markup import COMMENT_LIMIT, cell, code, html_text

#: the roll-up's hidden first line; no suite's marker (`suite=NAME -->`) starts with it
ROLLUP_MARKER = "<!-- casegate:sticky-comment suites -->"
#: strictest first: an error is never a pass, a block outranks an open question
ORDER = ("error", "block", "inconclusive", "ship")
EXIT_CODES = {"ship": 0, "block": 1, "error": 2, "inconclusive": 3}
ICONS = {"ship": "✅", "block": "❌", "inconclusive": "⚠️", "error": "💥"}
#: the least a suite's section is given, however many suites share the comment
MIN_SHARE = 1_500
#: the most suites the table lists (each row is at most ~330 characters)
MAX_ROWS = 100
#: what the table, the headline and each section's frame take besides the reports
FRAME_PER_SUITE = 400


@dataclass(frozen=True, slots=True)
class SuiteResult:
    """One suite's part of the roll-up."""

    #: the suite's name, or its config's path when the config could not be read
    suite: str
    config: str
    #: ship, block, inconclusive, or error (it could not be judged)
    decision: str
    #: the section's markdown for a share of the comment (the report, or why there is none)
    render: Callable[[int], str] = field(repr=False, compare=False)
    outputs: dict[str, str] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.decision]


def strictest(decisions: Sequence[str]) -> str:
    """The overall verdict: the first of ORDER any suite has (ship when there are none)."""
    return next((decision for decision in ORDER if decision in decisions), "ship")


def _strictest_first(results: Sequence[SuiteResult]) -> list[SuiteResult]:
    return sorted(results, key=lambda result: ORDER.index(result.decision))


def _balanced(section: str) -> str:
    """`section` with any `<details>`, `<pre>` or code fence it leaves open closed.

    A suite's report cut to its share could end inside one, which would swallow the
    sections after it.
    """
    closing = []
    if sum(line.startswith("```") for line in section.splitlines()) % 2:
        closing.append("```")
    for opening, close in (("<pre>", "</pre>"), ("<details", "</details>")):
        closing += [close] * max(0, section.count(opening) - section.count(close))
    return section.rstrip("\n") + ("\n" + "\n".join(closing) if closing else "")


def rollup_markdown(results: Sequence[SuiteResult], limit: int = COMMENT_LIMIT) -> str:
    """The roll-up comment: the overall verdict, a table of suites, then a section each."""
    overall = strictest([result.decision for result in results])
    # Strictest first past the cap, so a long table never hides a suite that holds the change.
    listed = results if len(results) <= MAX_ROWS else _strictest_first(results)[:MAX_ROWS]
    rows = "\n".join(
        f"| {cell(result.suite, 120)} | {ICONS[result.decision]} {result.decision} | "
        f"{code(result.config, 160)} |"
        for result in listed
    )
    if len(results) > len(listed):
        rows += f"\n| … and {len(results) - len(listed)} more (the `verdicts` output) | | |"
    head = "\n\n".join(
        [
            ROLLUP_MARKER,
            f"### {ICONS[overall]} casegate: **{overall}** — {len(results)} suite(s)",
            "The strictest of the suites' verdicts: a suite that errors or blocks holds the "
            "pull request.",
            f"| suite | verdict | config |\n|---|---|---|\n{rows}",
        ]
    )
    room = limit - len(head) - FRAME_PER_SUITE * len(results) - 600
    share = max(MIN_SHARE, room // max(1, len(results)))
    sections, shortened = [], 0
    for result in results:
        body = result.render(limit)
        if len(body) > share:  # the report again, made for its share (it says what it left out)
            body, shortened = result.render(share), shortened + 1
            if len(body) > share:
                body = body[: body.rfind("\n", 0, share) + 1]
        opened = " open" if result.decision != "ship" else ""
        summary = html_text(f"{result.suite}: {result.decision}", 200)
        sections.append(
            f"<details{opened}><summary>{ICONS[result.decision]} {summary}</summary>\n\n"
            f"{_balanced(body)}\n\n</details>"
        )
    note = (
        "_Some suites' reports were shortened to share GitHub's comment limit. Each suite's "
        "whole report is in the job's step summary and its report file (the step's "
        "`report-paths` output; the `casegate-results` artifact of the starter workflow)._"
    )
    kept = list(range(len(sections)))
    while kept and len(_joined(head, [sections[k] for k in kept], note)) > limit:
        # A shipping suite's section goes first, the last in path order; its row stays.
        kept.remove(max(kept, key=lambda k: (ORDER.index(results[k].decision), k)))
    left_out = len(sections) - len(kept)
    if left_out:
        note = f"_{left_out} suite section(s) left out to fit GitHub's comment limit._ " + note
    return _joined(head, [sections[k] for k in kept], note if shortened or left_out else None)


def _joined(head: str, sections: list[str], note: str | None) -> str:
    return "\n\n".join([head, *sections, *([note] if note else [])]) + "\n"


def without_marker(markdown: str) -> str:
    """A suite's report without its first line when that is its marker: one marker a comment."""
    first, _, rest = markdown.partition("\n")
    return rest.lstrip("\n") if first.startswith("<!-- casegate:sticky-comment") else markdown


def rollup_outputs(results: Sequence[SuiteResult], report_path: str) -> dict[str, str]:
    """The step's outputs: the overall verdict, then per suite as JSON objects."""

    def each(key: str) -> str:
        return json.dumps(
            {r.suite: r.outputs[key] for r in results if key in r.outputs}, sort_keys=True
        )

    def total(key: str) -> str:
        return str(sum(int(r.outputs.get(key) or 0) for r in results))

    return {
        "verdict": strictest([result.decision for result in results]),
        "verdicts": json.dumps({r.suite: r.decision for r in results}, sort_keys=True),
        "results-paths": each("results-path"),
        "report-paths": each("report-path"),
        "report-path": report_path,
        "regressions": total("regressions"),
        "fixes": total("fixes"),
        "critical-regressions": total("critical-regressions"),
        "verified": total("verified"),
    }
