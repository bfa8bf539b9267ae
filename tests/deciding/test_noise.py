"""The noise-aware comparison and gate: tests decide, never raw rates."""

from __future__ import annotations

import pytest

from gate.deciding.compare import compare
from gate.deciding.rules import decide
from gate.reporting.report import json_report, markdown_report, text_report
from gate.suite.config import GateConfig
from tests.factories import result, run, sampled

RULE = GateConfig()


def verdict_of(baseline: list, candidate: list, rule: GateConfig = RULE):  # type: ignore[no-untyped-def]
    comparison = compare(run(baseline), run(candidate), rule)
    return comparison, decide(comparison, rule)


def test_samples_1_is_still_a_plain_pass_fail_diff() -> None:
    comparison, verdict = verdict_of([result("a", "pass")], [result("a", "fail")])
    assert comparison.noise is None
    assert comparison.regressions == ["a"] and verdict.decision == "block"


def test_a_drop_within_noise_is_shown_but_does_not_count() -> None:
    baseline = [sampled("c07", 17, 20)] + [sampled(f"s{i}", 18, 20) for i in range(10)]
    candidate = [sampled("c07", 15, 20)] + [sampled(f"s{i}", 18, 20) for i in range(10)]
    comparison, verdict = verdict_of(baseline, candidate)
    assert comparison.noise is not None
    assert comparison.regressions == []
    assert comparison.noise.within_noise == ["c07"]
    assert verdict.decision == "ship"
    text = text_report(comparison, verdict)
    assert "c07: 17/20 → 15/20, p = 0.35, within noise" in text


def test_a_critical_case_falling_from_95_to_50_percent_blocks() -> None:
    baseline = [sampled("crit", 19, 20, critical=True)] + [
        sampled(f"s{i}", 18, 20) for i in range(20)
    ]
    candidate = [sampled("crit", 10, 20, critical=True)] + [
        sampled(f"s{i}", 18, 20) for i in range(20)
    ]
    comparison, verdict = verdict_of(baseline, candidate)
    assert comparison.regressions == ["crit"]
    assert verdict.decision == "block"
    assert verdict.reasons[0].rule == "critical_regression"
    assert "dropped significantly" in verdict.reasons[0].message
    assert "Boschloo" in verdict.reasons[0].message
    body = markdown_report(comparison, verdict)
    assert "#### Significance (repeated samples)" in body
    # Boschloo's p-value (Fisher's would be 0.0017)
    assert (
        "| 🔴 | `crit` | 19/20 (76%–99%) | 10/20 (30%–70%) | 0.00075 | regression |"
        in body.replace("  ", " ")
    )


def test_non_critical_cases_are_one_holm_family() -> None:
    # p = 0.0016 for one case: significant alone at 0.02, but not after Holm over 30 cases
    # (0.02 / 30 = 0.00067); a critical case with the same counts blocks.
    others = [sampled(f"s{i:02d}", 18, 20) for i in range(29)]
    comparison, _ = verdict_of([sampled("x", 19, 20), *others], [sampled("x", 10, 20), *others])
    assert comparison.regressions == []
    comparison, _ = verdict_of([sampled("x", 20, 20), *others], [sampled("x", 5, 20), *others])
    assert comparison.regressions == ["x"]


def test_the_tolerance_applies_before_significance() -> None:
    # 20/20 → 12/20: a 40-point drop, p = 0.0016.
    base, cand = [sampled("c", 20, 20, critical=True)], [sampled("c", 12, 20, critical=True)]
    comparison, _ = verdict_of(base, cand, GateConfig(tolerance=0.45))
    assert comparison.regressions == []
    comparison, _ = verdict_of(base, cand, GateConfig(tolerance=0.0))
    assert comparison.regressions == ["c"]


def test_a_broad_drop_blocks_on_the_paired_test() -> None:
    baseline = [sampled(f"s{i:02d}", 18, 20) for i in range(30)]
    candidate = [sampled(f"s{i:02d}", 16, 20) for i in range(30)]
    comparison, verdict = verdict_of(baseline, candidate)
    assert comparison.regressions == []  # no single case is significant...
    reason = next(r for r in verdict.reasons if r.rule == "pass_rate_drop")  # ...the suite is
    assert "mean change -10.0 points per case" in reason.message
    assert "sign-flip p = 9.3e-10" in reason.message


def test_an_undecided_comparison_is_inconclusive() -> None:
    baseline = [sampled(f"s{i}", 18, 20) for i in range(6)]
    candidate = [sampled(f"s{i}", k, 20) for i, k in enumerate([17, 19, 16, 18, 19, 17])]
    _, verdict = verdict_of(baseline, candidate)
    assert verdict.decision == "ship" and verdict.exit_code == 0
    assert verdict.notes[0].startswith(
        "inconclusive: a drop of more than 3 points cannot be ruled out"
    )
    assert "samples per case (now 20) would decide it" in verdict.notes[0]
    _, strict = verdict_of(baseline, candidate, GateConfig(on_inconclusive="block"))
    assert strict.decision == "inconclusive" and strict.exit_code == 3


def test_identical_runs_are_decided() -> None:
    baseline = [sampled(f"s{i}", 19, 20) for i in range(30)]
    _, verdict = verdict_of(baseline, baseline)
    assert verdict.decision == "ship" and not verdict.notes


def test_flaky_cases_are_listed_everywhere() -> None:
    comparison, verdict = verdict_of([sampled("f", 3, 5)], [sampled("f", 2, 5), sampled("g", 5, 5)])
    assert "#### Flaky cases (1)" in markdown_report(comparison, verdict)
    assert "flaky (1): f" in text_report(comparison, verdict)
    data = json_report(comparison, verdict)
    assert data["flaky"] == ["f"]
    assert data["noise"]["cases"]["f"]["verdict"] == "within noise"


@pytest.mark.parametrize(("passes", "flaky"), [(0, False), (3, True), (5, False)])
def test_flaky_means_some_pass_and_some_fail(passes: int, flaky: bool) -> None:
    assert sampled("c", passes, 5).flaky is flaky


def test_near_duplicates_are_one_cluster_in_the_suite_test() -> None:
    # 8 cases, each 2 points lower: apart, 1 of 256 sign patterns is as low (p = 0.0039);
    # as two clusters of four near-duplicates, 1 of 4 (p = 0.25): no evidence of a drop.
    ids = [f"refund-{i}" for i in range(4)] + [f"late-{i}" for i in range(4)]
    baseline = [sampled(i, 50, 50) for i in ids]
    candidate = [sampled(i, 49, 50) for i in ids]
    apart = decide(compare(run(baseline), run(candidate), RULE), RULE)
    assert [r.rule for r in apart.reasons] == ["pass_rate_drop"]
    by_prefix = run(candidate, clusters={"by": "id_prefix"})
    comparison = compare(run(baseline), by_prefix, RULE)
    assert comparison.noise is not None
    assert comparison.noise.suite_p == 0.25 and comparison.noise.clusters == 2
    assert comparison.noise.design_effect == pytest.approx(4.0)
    assert decide(comparison, RULE).decision == "ship"
    assert "The 2 clusters move together: design effect 4.0" in text_report(
        comparison, decide(comparison, RULE)
    )
    for case in candidate[:4]:
        case.cluster = "refunds"  # declared on the cases instead: the same test
    declared = compare(run(baseline), run(candidate), RULE)
    assert declared.noise is not None and declared.noise.clusters == 5


def test_auto_suite_test_reads_equal_prefixes() -> None:
    from gate.results import SampleResult

    def with_outputs(case_id: str, verdicts: list[bool]) -> object:
        case = sampled(case_id, sum(verdicts), len(verdicts))
        case.outputs = [
            SampleResult(sample=i, status="pass" if v else "fail") for i, v in enumerate(verdicts)
        ]
        return case

    # The baseline's first 4 samples failed once; the candidate's 4 are the same: no change,
    # though against all 20 baseline samples (19/20) the candidate would look 20 points lower.
    base = [with_outputs(f"c{i}", [False] + [True] * 19) for i in range(10)]
    cand = [with_outputs(f"c{i}", [True, False, True, True]) for i in range(10)]
    comparison = compare(run(base), run(cand, samples="auto"), RULE)
    assert comparison.noise is not None and comparison.noise.suite_p == 1.0
    fixed = compare(run(base), run(cand), RULE)
    assert fixed.noise is not None and fixed.noise.suite_p == 1.0  # equal prefixes there too
