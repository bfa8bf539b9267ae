"""Why a cost reads n/a (issue #25 trap 4): a model swap exists to compare cost, so a model
missing from `pricing:` is named, in the text and the markdown report."""

from __future__ import annotations

import dataclasses

from gate.deciding.compare import compare
from gate.deciding.rules import decide
from gate.reporting.report import markdown_report, text_report
from gate.results import CaseResult, RunResults
from gate.suite.config import GateConfig
from tests.factories import result, run


def _used(case: CaseResult, model: str, cost: float | None) -> CaseResult:
    """The case as a provider answered it: tokens counted, priced or not."""
    sample = dataclasses.replace(
        case.outputs[0], input_tokens=120, output_tokens=30, model=model, cost_usd=cost
    )
    return dataclasses.replace(case, outputs=[sample], cost_usd=cost, input_tokens=120)


def _runs(pricing: dict[str, object]) -> tuple[RunResults, RunResults]:
    base = run([_used(result(c), "big-1", 0.002) for c in "ab"], model="big-1", pricing=pricing)
    cand = run([_used(result(c), "small-2", None) for c in "ab"], model="small-2", pricing=pricing)
    return base, cand


def test_a_swapped_model_without_a_price_is_named() -> None:
    base, cand = _runs({"big-1": {"input": 3.0, "output": 15.0}})
    comparison = compare(base, cand, GateConfig())
    note = "cost n/a for the candidate: the config's pricing: has no price for small-2; add one"
    assert comparison.usage_notes == [note]
    verdict = decide(comparison, GateConfig())
    assert f"  ◦ {note}" in text_report(comparison, verdict)
    markdown = markdown_report(comparison, verdict)
    assert "Cost n/a for the candidate" in markdown
    assert "small-2" in markdown.split("#### Cost, tokens, latency")[1]


def test_priced_runs_have_no_note() -> None:
    pricing = {"big-1": {"input": 3.0, "output": 15.0}, "small-2": {"input": 1.0, "output": 2.0}}
    base, _ = _runs(pricing)
    cand = run([_used(result(c), "small-2", 0.001) for c in "ab"], model="small-2", pricing=pricing)
    assert compare(base, cand, GateConfig()).usage_notes == []


def test_no_token_usage_is_said_and_nothing_when_no_usage_is_shown() -> None:
    bare = run([result("a"), result("b")])  # no tokens, no cost on either side
    assert compare(bare, bare, GateConfig()).usage_notes == []
    base, _ = _runs({"big-1": {"input": 3.0, "output": 15.0}})
    assert compare(base, bare, GateConfig()).usage_notes == [
        "cost n/a for the candidate: its system reported no token usage"
    ]


def test_a_model_name_cannot_write_into_the_markdown() -> None:
    base, cand = _runs({"big-1": {"input": 3.0, "output": 15.0}})
    hostile = [_used(result(c), "x <img src=x onerror=alert(1)> @admin", None) for c in "ab"]
    cand = run(hostile, model="m", pricing={"big-1": {"input": 3.0, "output": 15.0}})
    comparison = compare(base, cand, GateConfig())
    markdown = markdown_report(comparison, decide(comparison, GateConfig()))
    assert "<img" not in markdown and "@admin" not in markdown
