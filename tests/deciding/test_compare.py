"""Pairing cases by id: regressions, fixes, unchanged, errors, added, removed, changed."""

from __future__ import annotations

import pytest

from gate.deciding.compare import compare, rate_dropped
from gate.errors import ResultsError
from tests.factories import result, run


def test_lists_are_sorted_and_disjoint() -> None:
    baseline = run(
        [
            result("r", "pass"),
            result("f", "fail"),
            result("up", "pass"),
            result("uf", "fail"),
            result("e", "pass"),
            result("gone", "pass"),
            result("v", "pass", version=1),
        ]
    )
    candidate = run(
        [
            result("r", "fail"),
            result("f", "pass"),
            result("up", "pass"),
            result("uf", "fail"),
            result("e", "error", reason="boom"),
            result("new", "fail"),
            result("v", "fail", version=2),
        ]
    )
    comparison = compare(baseline, candidate)
    assert comparison.regressions == ["r"]
    assert comparison.fixes == ["f"]
    assert comparison.unchanged_pass == ["up"]
    assert comparison.unchanged_fail == ["uf"]
    assert comparison.errors == ["e"]
    assert comparison.added == ["new"]
    assert comparison.removed == ["gone"]
    assert comparison.changed == ["v"]
    assert comparison.shared_cases == 5  # r f up uf e: v changed, so not comparable


def test_critical_comes_from_the_candidate() -> None:
    baseline = run([result("a", "pass", critical=False)])
    candidate = run([result("a", "fail", critical=True)])
    assert compare(baseline, candidate).critical(["a"]) == ["a"]


def test_added_cases_in_error_are_errors() -> None:
    comparison = compare(
        run([result("a")]), run([result("a"), result("new", "error", reason="down")])
    )
    assert comparison.errors == ["new"]


def test_different_suites_refused() -> None:
    with pytest.raises(ResultsError, match="different suites"):
        compare(run([result("a")], suite="a"), run([result("a")], suite="b"))


def test_system_changes_are_the_headline() -> None:
    baseline = run([result("a")], model="gpt-4.1")
    candidate = run([result("a")], model="gpt-4.1-mini")
    assert compare(baseline, candidate).system_changes == {"model": ("gpt-4.1", "gpt-4.1-mini")}


def test_ruler_changes_are_reported() -> None:
    base_case, cand_case = result("a"), result("a")
    base_case.expect_hash, cand_case.expect_hash = "one", "two"
    comparison = compare(run([base_case], samples=1), run([cand_case], samples=3))
    assert comparison.ruler_changes == [
        "samples changed: 1 → 3",
        "checks changed without a version bump for 1 case(s): a",
    ]


def test_usage_deltas() -> None:
    comparison = compare(
        run([result("a", cost=0.02, latency=100)]), run([result("a", cost=0.01, latency=300)])
    )
    cost = comparison.usage_of("cost_usd")
    assert cost.change == pytest.approx(-0.01)
    assert cost.relative == pytest.approx(-0.5)
    assert comparison.usage_of("latency_ms_p95").relative == pytest.approx(2.0)
    assert comparison.usage_of("input_tokens").change is None


@pytest.mark.parametrize(
    ("baseline", "candidate", "tolerance", "dropped"),
    [
        (0.8, 0.75, 0.05, False),  # 0.8 - 0.75 = 0.05000000000000004 must not exceed 0.05
        (0.8, 0.74, 0.05, True),
        (6 / 8, 6 / 8, 0.0, False),
        (0.5, 0.5 - 1e-12, 0.0, False),
        (0.5, 0.49, 0.0, True),
    ],
)
def test_rate_dropped_uses_an_epsilon(
    baseline: float, candidate: float, tolerance: float, dropped: bool
) -> None:
    assert rate_dropped(baseline, candidate, tolerance) is dropped


def test_a_changed_judge_pin_is_a_ruler_change() -> None:
    pin = {"provider": "anthropic", "model": "claude-a-20250101", "prompt_version": 1}
    baseline = run([result("a")], judge=pin)
    candidate = run([result("a")], judge={**pin, "model": "claude-b-20260101"})
    notes = compare(baseline, candidate).ruler_changes
    assert notes == [
        "the judge pin changed: anthropic claude-a-20250101, prompt v1, temperature 0 → "
        "anthropic claude-b-20260101, prompt v1, temperature 0; verdicts of judge-checked "
        "cases were measured with different rulers"
    ]
    assert compare(baseline, run([result("a")], judge=pin)).ruler_changes == []


def test_a_python_systems_own_key_is_a_system_change() -> None:
    baseline = run([result("a")])
    candidate = run([result("a")])
    baseline.config["system"] = {"name": "bot", "provider": "python", "style": "plain"}
    candidate.config["system"] = {"name": "bot-2", "provider": "python", "style": "formal"}
    assert compare(baseline, candidate).system_changes == {"style": ("plain", "formal")}
