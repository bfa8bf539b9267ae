"""The roll-up comment: the strictest verdict first, a section per suite, within the limit."""

from __future__ import annotations

import json

import pytest

from gate.github.forkcomment import report_problem
from gate.github.rollup import (
    ROLLUP_MARKER,
    SuiteResult,
    rollup_markdown,
    rollup_outputs,
    strictest,
    without_marker,
)


def suite(name: str, decision: str, text: str = "", config: str = "") -> SuiteResult:
    body = text or f"### casegate: **{decision}** — {name}"
    return SuiteResult(name, config or f"casegate.{name}.yml", decision, lambda share: body)


@pytest.mark.parametrize(
    ("decisions", "overall"),
    [
        (["ship", "ship"], "ship"),
        (["ship", "inconclusive"], "inconclusive"),
        (["inconclusive", "block", "ship"], "block"),
        (["block", "error"], "error"),
        (["ship", "error"], "error"),
    ],
)
def test_the_overall_verdict_is_the_strictest(decisions: list[str], overall: str) -> None:
    assert strictest(decisions) == overall
    results = [suite(f"s{i}", d) for i, d in enumerate(decisions)]
    assert rollup_outputs(results, "r.md")["verdict"] == overall
    assert f"casegate: **{overall}** — {len(decisions)} suite(s)" in rollup_markdown(results)


def test_one_marker_first_then_the_verdict_then_a_section_each() -> None:
    body = rollup_markdown([suite("billing", "ship"), suite("support", "block")])
    assert body.startswith(ROLLUP_MARKER + "\n")
    assert body.count("<!-- casegate:sticky-comment") == 1
    assert "<details><summary>✅ billing: ship</summary>" in body
    assert "<details open><summary>❌ support: block</summary>" in body
    assert body.index("**block** — 2 suite(s)") < body.index("| billing |") < body.index("<details")


def test_a_suites_own_marker_is_taken_off_its_section() -> None:
    report = "<!-- casegate:sticky-comment suite=a -->\n### casegate: **ship**\n"
    assert without_marker(report) == "### casegate: **ship**\n"
    assert without_marker("### no marker\n") == "### no marker\n"


def test_names_and_paths_cannot_shape_the_comment() -> None:
    # A config that could not be read is named by its path, which the pull request chose.
    path = "casegate.--></summary></details><details open>@team #1 `x`|y.yml"
    body = rollup_markdown([suite(path, "error", "could not be judged", config=path)])
    assert body.count("<details") == body.count("</details>") == 1
    assert "</summary></details><details open>@team" not in body
    assert body.count("-->") == 1  # the marker's
    assert "@team" not in body and "#1 " not in body  # no mention, no reference
    rows = [line for line in body.splitlines() if line.startswith("| casegate")]
    assert len(rows) == 1 and rows[0].count(" | ") == 2  # the `|` did not add a column


def test_a_section_left_open_is_closed() -> None:
    cut = "### report\n<details><summary>case</summary>\n\n<pre>half an output"
    body = rollup_markdown([suite("a", "block", cut), suite("b", "ship")])
    assert body.count("<details") == body.count("</details>")
    assert body.count("<pre>") == body.count("</pre>")
    assert body.index("</pre>") < body.index("b: ship</summary>")


def test_many_suites_share_the_limit_and_say_so() -> None:
    def big(name: str) -> SuiteResult:
        def render(share: int) -> str:
            lines = [f"- case {i} of {name}" for i in range(3_000)]
            text = "\n".join(lines)
            return text if share >= len(text) else text[: share - 200] + "\n_Truncated._"

        return SuiteResult(name, f"{name}.yml", "block", render)

    body = rollup_markdown([big(f"suite{i}") for i in range(8)])
    assert len(body) <= 60_000
    assert "shortened to share GitHub's comment limit" in body
    assert "`report-paths`" in body
    assert body.count("<details open>") == 8


def test_sections_that_cannot_fit_leave_their_row_in_the_table() -> None:
    results = [suite(f"s{i:03}", "ship", "x" * 1_400) for i in range(59)]
    results.append(suite("z-blocks", "block", "y" * 1_400))
    body = rollup_markdown(results)
    assert len(body) <= 60_000
    assert "suite section(s) left out" in body
    assert all(f"| s{i:03} |" in body for i in range(59))
    assert "<details open><summary>❌ z-blocks: block</summary>" in body  # kept: it blocks


def test_outputs_are_json_per_suite_and_sums() -> None:
    one = SuiteResult(
        "a", "a.yml", "block", lambda s: "", {"results-path": "r/a.json", "regressions": "2"}
    )
    two = SuiteResult(
        "b", "b.yml", "ship", lambda s: "", {"results-path": "r/b.json", "regressions": "1"}
    )
    outputs = rollup_outputs([one, two], ".casegate/r.md")
    assert json.loads(outputs["verdicts"]) == {"a": "block", "b": "ship"}
    assert json.loads(outputs["results-paths"]) == {"a": "r/a.json", "b": "r/b.json"}
    assert outputs["regressions"] == "3" and outputs["report-path"] == ".casegate/r.md"


def test_the_roll_up_is_not_a_body_the_fork_comment_would_post() -> None:
    # report-dir is refused with several configs; a roll-up in an artifact is refused too.
    body = rollup_markdown([suite("a", "ship")])
    assert report_problem(body, "a") is not None


def test_a_long_table_lists_the_strictest_suites_first() -> None:
    results = [suite(f"s{i:03}", "ship", "ok") for i in range(150)]
    results.append(suite("z-last", "block", "no"))
    body = rollup_markdown(results)
    assert len(body) <= 60_000
    assert "| z-last |" in body and "and 51 more (the `verdicts` output)" in body
