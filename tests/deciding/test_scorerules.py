"""The score rules through compare and decide (gate.deciding.scores, gate.deciding.scorerules)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.deciding.compare import compare
from gate.deciding.noise import level
from gate.deciding.rules import decide
from gate.errors import ResultsError
from gate.suite.config import GateConfig
from tests.deciding.scored import scored, scored_run

DROP = {"max_mean_score_drop": {"check": "similar", "drop": 0.05}}


def _verdict(base: list[Any], cand: list[Any], gate: dict[str, Any], **config: Any) -> Any:
    rule = GateConfig.model_validate(gate)
    comparison = compare(scored_run(base, **config), scored_run(cand, **config), rule)
    return comparison, decide(comparison, rule)


def _suite(means: list[float], shift: float = 0.0, samples: int = 5, seed: int = 1) -> list[Any]:
    rng = random.Random(seed)
    return [
        scored(
            f"c{i:02d}",
            [min(1.0, max(0.0, m + shift + rng.gauss(0, 0.05))) for _ in range(samples)],
        )
        for i, m in enumerate(means)
    ]


MEANS = [0.55 + 0.4 * i / 29 for i in range(30)]


def test_a_clear_fall_beyond_the_drop_blocks_and_names_the_fallen_cases() -> None:
    comparison, verdict = _verdict(_suite(MEANS), _suite(MEANS, -0.15, seed=2), DROP)
    assert verdict.decision == "block"
    (reason,) = [r for r in verdict.reasons if r.rule == "max_mean_score_drop"]
    assert "fell more than the allowed 0.05, significantly" in reason.message
    assert len(reason.cases) >= 25
    scores = comparison.scores.checks["similar"]
    assert scores.change.mean == pytest.approx(-0.15, abs=0.03)
    assert scores.p_lower < level.shares(GateConfig.model_validate(DROP), has_critical=False).scores


def test_a_significant_fall_within_the_drop_ships_with_a_note() -> None:
    _, verdict = _verdict(_suite(MEANS, samples=20), _suite(MEANS, -0.02, samples=20, seed=2), DROP)
    assert verdict.decision == "ship"
    assert any("within the allowed 0.05" in note for note in verdict.notes)


def test_a_fall_beyond_the_drop_that_is_not_significant_is_inconclusive_under_block() -> None:
    means = MEANS[:8]
    # Every sample passes (threshold 0): only the score rule can see the fall.
    base = [scored(f"c{i}", [m], threshold=0) for i, m in enumerate(means)]
    cand = [
        scored(f"c{i}", [m - (0.3 if i < 2 else -0.02)], threshold=0) for i, m in enumerate(means)
    ]
    gate = {**DROP, "on_inconclusive": "block"}
    _, verdict = _verdict(base, cand, gate)
    assert verdict.decision == "inconclusive"
    assert "cannot be ruled out" in verdict.notes[0]
    _, shipped = _verdict(base, cand, DROP)
    assert shipped.decision == "ship"
    assert any("on_inconclusive: ship lets this pass" in note for note in shipped.notes)


def test_too_few_clusters_for_the_level_is_inconclusive_whatever_on_inconclusive_says() -> None:
    """Three clusters of ten: the smallest p is 1/8, so a collapse can never block; it must
    not ship either."""
    base = [scored(f"f{i // 10}-{i}", [0.9, 0.9]) for i in range(30)]
    cand = [scored(f"f{i // 10}-{i}", [0.3, 0.3]) for i in range(30)]
    comparison, verdict = _verdict(base, cand, DROP, clusters={"by": "id_prefix"})
    scores = comparison.scores.checks["similar"]
    assert (scores.units, scores.clusters) == (3, 3)
    assert verdict.decision == "inconclusive"
    assert "the exact test cannot reach its level" in verdict.notes[0]


def test_clusters_are_the_units_of_the_test() -> None:
    rng = random.Random(4)
    base = [scored(f"f{i // 3}-{i}", [0.8]) for i in range(30)]
    cand = [scored(f"f{i // 3}-{i}", [0.8 - rng.choice((0.0, 0.1))]) for i in range(30)]
    flat, _ = _verdict(base, cand, DROP)
    grouped, _ = _verdict(base, cand, DROP, clusters={"by": "id_prefix"})
    assert flat.scores.checks["similar"].units == 30
    assert grouped.scores.checks["similar"].units == 10
    # Ten units cannot be as sure as thirty of the same falls.
    assert grouped.scores.checks["similar"].p_lower > flat.scores.checks["similar"].p_lower


def test_a_candidate_without_scores_where_the_baseline_had_them_never_ships() -> None:
    base = _suite(MEANS)
    cand = _suite(MEANS)
    cand[3] = scored("c03", [None, None, None, None, None])  # every sample in error
    _, verdict = _verdict(base, cand, {**DROP, "block_on_errors": False})
    (reason,) = [r for r in verdict.reasons if r.rule == "max_mean_score_drop"]
    assert reason.cases == ["c03"]
    assert "never a pass" in reason.message
    assert verdict.decision == "block"


def test_a_check_no_case_scores_cannot_be_gated_on() -> None:
    _, verdict = _verdict(
        _suite(MEANS), _suite(MEANS), {"max_mean_score_drop": {"check": "simliar", "drop": 0.05}}
    )
    assert verdict.decision == "block"
    assert "checks with scores: similar" in verdict.reasons[0].message


def test_several_checks_are_one_holm_family() -> None:
    rule = GateConfig.model_validate(
        {
            "max_mean_score_drop": [
                {"check": "similar", "drop": 0.05},
                {"check": "judge", "drop": 0.1},
            ]
        }
    )
    assert len(rule.max_mean_score_drop or []) == 2
    shares = level.shares(rule, has_critical=False)
    assert shares.total == pytest.approx(rule.alpha)
    assert shares.scores == pytest.approx(rule.alpha / 2)  # the suite 1 part, scores 1 part


def test_one_sample_cases_have_no_interval_but_are_still_compared() -> None:
    base = [scored(f"c{i}", [m]) for i, m in enumerate(MEANS)]
    cand = [scored(f"c{i}", [m - 0.2]) for i, m in enumerate(MEANS)]
    comparison, verdict = _verdict(base, cand, DROP)
    assert all(case.interval is None for case in comparison.scores.checks["similar"].cases)
    assert verdict.decision == "block"


def test_the_mean_score_floor_is_over_the_cases_the_baseline_has() -> None:
    base = _suite(MEANS[:20])
    cand = [*_suite(MEANS[:20], seed=3), scored("zz-easy", [1.0] * 5)]
    mean = sum(MEANS[:20]) / 20
    _, verdict = _verdict(base, cand, {"min_mean_score": {"similar": mean + 0.05}})
    (reason,) = verdict.reasons
    assert reason.rule == "min_mean_score"
    assert "below the floor" in reason.message and "over 20 case(s)" in reason.message


def test_the_floor_must_be_proven_with_samples() -> None:
    base = _suite(MEANS, samples=3)
    cand = _suite(MEANS, samples=3, seed=4)
    mean = sum(MEANS) / len(MEANS)
    _, above = _verdict(base, cand, {"min_mean_score": {"similar": mean - 0.2}})
    _, at = _verdict(base, cand, {"min_mean_score": {"similar": mean - 0.005}})
    assert above.decision == "ship"
    assert at.decision == "block"
    assert "does not prove" in at.reasons[0].message


def test_pass_hat_k_floor_and_short_cases() -> None:
    base = [scored(f"c{i}", [0.9] * 5) for i in range(10)]
    good = [scored(f"c{i}", [0.9] * 30) for i in range(10)]
    few = [scored(f"c{i}", [0.9] * 5) for i in range(10)]
    flaky = [scored(f"c{i}", [0.9, 0.9, 0.1, 0.9, 0.9]) for i in range(10)]
    short = [scored(f"c{i}", [0.9] * (2 if i == 0 else 5)) for i in range(10)]
    gate = {"min_pass_hat_k": {"k": 3, "min": 0.9}}
    comparison, verdict = _verdict(base, good, gate)
    assert verdict.decision == "ship"
    assert comparison.scores.pass_k.suite(1) == 1.0
    # 50 samples that all passed do not prove pass^3 >= 0.9 at 2%: a pass rate of 0.925
    # (Clopper-Pearson's 98% lower bound for 50 of 50) gives pass^3 0.79.
    _, verdict = _verdict(base, few, gate)
    (reason,) = [r for r in verdict.reasons if r.rule == "min_pass_hat_k"]
    assert "pass^3 1.000 over 10 case(s) does not prove ≥ 0.9" in reason.message
    _, verdict = _verdict(base, flaky, gate)
    assert verdict.decision == "block"
    (reason,) = [r for r in verdict.reasons if r.rule == "min_pass_hat_k"]
    assert "pass^3 0.400" in reason.message  # C(4,3)/C(5,3) = 0.4
    _, verdict = _verdict(base, short, gate)
    assert verdict.reasons[0].cases == ["c0"]
    assert "fewer than k = 3 samples" in verdict.reasons[0].message


def test_pass_k_is_reported_at_the_fewest_samples_up_to_three() -> None:
    base = [scored(f"c{i}", [0.9, 0.1]) for i in range(4)]
    comparison, _ = _verdict(base, base, {})
    pass_k = comparison.scores.pass_k
    assert pass_k.k == 2
    assert pass_k.cases["c0"] == (0.0, 0.0, 1.0, 1.0)


@pytest.mark.parametrize("forged", [float("nan"), 1.5, -0.2, "0.9", float("inf"), True], ids=repr)
def test_forged_scores_are_refused(forged: Any) -> None:
    base = _suite(MEANS)
    cand = _suite(MEANS)
    cand[0].outputs[1].checks[0].score = forged
    with pytest.raises(ResultsError, match="not believed"):
        compare(scored_run(base), scored_run(cand), GateConfig())


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.lists(st.floats(0, 1), min_size=1, max_size=4), min_size=1, max_size=12),
    st.sampled_from(["ship", "block"]),
)
def test_a_candidate_identical_to_its_baseline_never_blocks(
    samples: list[list[float]], on_inconclusive: str
) -> None:
    cases = [scored(f"c{i}", s) for i, s in enumerate(samples)]
    gate = {**DROP, "on_inconclusive": on_inconclusive, "min_mean_score": {"similar": 0.0}}
    _, verdict = _verdict(cases, cases, gate)
    assert verdict.decision == "ship", verdict.reasons


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_a_larger_fall_of_the_same_cases_never_turns_a_block_into_a_ship(seed: int) -> None:
    rng = random.Random(seed)
    base = [scored(f"c{i}", [0.95] * 2) for i in range(14)]
    falls = [rng.uniform(0, 0.1) for _ in range(14)]
    blocked = False
    for scale in (0.5, 1, 2, 4, 8):
        cand = [scored(f"c{i}", [max(0.0, 0.95 - f * scale)] * 2) for i, f in enumerate(falls)]
        decision = _verdict(base, cand, DROP)[1].decision
        if blocked:
            assert decision == "block"
        blocked = blocked or decision == "block"
