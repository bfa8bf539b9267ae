"""The shift between runs, estimated from trusted repeated runs and allowed for by every
case's test: gate.deciding.noise.runshift.RunSpread, gate.history.spread and the test that
averages Fisher's over a shift (gate.stats.shifted_fisher_lower)."""

from __future__ import annotations

import dataclasses
import math
import random

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from scipy import integrate
from scipy import stats as scipy_stats

from gate.deciding.noise.analysis import analyse
from gate.deciding.noise.runspread import RunSpread, log_likelihood, spread_between_runs
from gate.deciding.rules import decide
from gate.history.records import HistoryRecord
from gate.history.spread import runs_of
from gate.reporting.sections import suite_line
from gate.results import CaseResult, RunResults, summarise
from gate.stats import shifted_fisher_lower
from gate.suite.config import GateConfig
from tests.factories import run, sampled

tables = st.integers(1, 40).flatmap(
    lambda n: st.tuples(st.integers(0, n), st.just(n), st.integers(1, 40)).flatmap(
        lambda t: st.tuples(st.just(t[0]), st.just(t[1]), st.integers(0, t[2]), st.just(t[2]))
    )
)


# --- the test: Fisher's, averaged over a shift of the log odds ratio ------------------


@settings(max_examples=60, deadline=None)
@given(tables)
def test_without_a_spread_it_is_fishers_exact_test(table: tuple[int, int, int, int]) -> None:
    base_passes, base_samples, cand_passes, cand_samples = table
    contingency = [
        [cand_passes, cand_samples - cand_passes],
        [base_passes, base_samples - base_passes],
    ]
    reference = scipy_stats.fisher_exact(contingency, alternative="less").pvalue
    assert shifted_fisher_lower(*table, 0.0) == pytest.approx(reference, rel=1e-9, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(tables, st.floats(0.05, 6))
def test_it_is_the_noncentral_tail_integrated_over_a_normal_shift(
    table: tuple[int, int, int, int], spread: float
) -> None:
    """Cross-checked by scipy's adaptive quadrature over δ ~ N(0, spread)."""
    base_passes, base_samples, cand_passes, cand_samples = table
    total, passes = base_samples + cand_samples, base_passes + cand_passes
    if passes in (0, total):
        assert shifted_fisher_lower(*table, spread) == 1.0
        return
    sd = math.sqrt(spread)

    def tail(delta: float) -> float:
        cdf = scipy_stats.nchypergeom_fisher.cdf(
            cand_passes, total, passes, cand_samples, math.exp(delta)
        )
        return float(cdf) * float(scipy_stats.norm.pdf(delta, scale=sd))

    reference, _ = integrate.quad(tail, -10 * sd, 10 * sd, limit=200)
    assert shifted_fisher_lower(*table, spread) == pytest.approx(reference, abs=2e-6, rel=1e-3)


@settings(max_examples=20, deadline=None)
@given(tables, st.floats(0.1, 4), st.integers(3, 60))
@example(table=(30, 30, 0, 7), spread=1.0, freedom=17)  # its p-value lives in the far tail
def test_an_estimated_spread_averages_over_students_t(
    table: tuple[int, int, int, int], spread: float, freedom: int
) -> None:
    """A variance estimated on ν degrees of freedom makes the shift t_ν-distributed:
    cross-checked by quadrature over scipy's t density."""
    base_passes, base_samples, cand_passes, cand_samples = table
    total, passes = base_samples + cand_samples, base_passes + cand_passes
    if passes in (0, total):
        return
    scale = math.sqrt(spread)

    def tail(delta: float) -> float:
        cdf = scipy_stats.nchypergeom_fisher.cdf(
            cand_passes, total, passes, cand_samples, math.exp(delta)
        )
        return float(cdf) * float(scipy_stats.t.pdf(delta / scale, freedom)) / scale

    reach = 40  # scipy's noncentral hypergeometric fails past odds of about e^100
    reference, _ = integrate.quad(tail, -reach * scale, reach * scale, limit=500, points=[0])
    # Beyond the reach the tail probability is flat: add t's mass out there at its edge values.
    for edge in (-reach, reach):
        flat = scipy_stats.nchypergeom_fisher.cdf(
            cand_passes, total, passes, cand_samples, math.exp(edge * scale)
        )
        reference += float(flat) * float(scipy_stats.t.cdf(-reach, freedom))
    found = shifted_fisher_lower(*table, spread, freedom)
    assert found == pytest.approx(reference, abs=1e-6, rel=1e-3)


def test_fewer_degrees_of_freedom_allow_more_shift() -> None:
    """The less the history says about τ², the heavier the tails of the allowed shift."""
    p_values = [shifted_fisher_lower(19, 20, 12, 20, 2.0, freedom) for freedom in (3, 8, 30)]
    known = shifted_fisher_lower(19, 20, 12, 20, 2.0)
    assert p_values[0] > p_values[1] > p_values[2] > known


@settings(max_examples=40, deadline=None)
@given(st.integers(15, 20), st.integers(0, 14), st.floats(0.01, 4), st.floats(0.01, 4))
def test_a_wider_spread_never_makes_a_drop_more_significant(
    base_passes: int, cand_passes: int, narrow: float, wider: float
) -> None:
    narrow, wider = sorted((narrow, wider))
    p_narrow = shifted_fisher_lower(base_passes, 20, cand_passes, 20, narrow)
    p_wider = shifted_fisher_lower(base_passes, 20, cand_passes, 20, wider)
    assert p_wider >= p_narrow - 1e-12
    assert p_narrow >= shifted_fisher_lower(base_passes, 20, cand_passes, 20, 0.0) - 1e-12


# --- the estimate: τ² from repeated runs ----------------------------------------------


def _runs(rng: random.Random, rates: list[float], runs: int, samples: int, sd: float) -> list:  # type: ignore[type-arg]
    found = []
    for _ in range(runs):
        run = {}
        for index, rate in enumerate(rates):
            shifted = 1 / (1 + math.exp(-(math.log(rate / (1 - rate)) + rng.gauss(0, sd))))
            run[f"c{index}"] = (sum(rng.random() < shifted for _ in range(samples)), samples)
        found.append(run)
    return found


@settings(max_examples=12, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 20), st.just(20)), min_size=2, max_size=3),
    st.floats(0.1, 2.5),
)
@example(counts=[(1, 20), (12, 20)], tau=1.1640625)  # where the old quad reference missed
def test_the_likelihood_is_the_binomial_integrated_over_centre_and_shifts(
    counts: list[tuple[int, int]], tau: float
) -> None:
    """Against Simpson's rule on a dense grid: log ∫ Π_r ∫ Binomial(k_r | n, expit(μ + τz))
    φ(z) dz dμ over μ in (−8, 8), compared as differences between two τ (the binomial
    coefficients and the centre's step are the same for every τ). Cases that passed, or
    failed, every sample of every run never reach the likelihood (they say nothing)."""
    assume(not all(k == 20 for k, _ in counts) and not all(k == 0 for k, _ in counts))

    # Simpson's rule on a dense grid of centre and shift (not the Hermite nodes casegate
    # uses), each run's binomial divided by its largest value, (k/n)^k (1 - k/n)^(n - k),
    # and the log of it added back. (quad's absolute tolerance, on integrands of 1e-9 and
    # less, once let the reference itself miss by 2%: counts 1/20 and 12/20.)
    centres, shifts = np.linspace(-8, 8, 1601), np.linspace(-9, 9, 1801)
    density = scipy_stats.norm.pdf(shifts)

    def reference(spread: float) -> float:
        logits = centres[:, None] + spread * shifts[None, :]
        log_yes, log_no = -np.logaddexp(0, -logits), -np.logaddexp(0, logits)
        total, scale = np.ones(len(centres)), 0.0
        for passes, samples in counts:
            share = passes / samples
            peak = (passes * math.log(share) if passes else 0.0) + (
                (samples - passes) * math.log1p(-share) if passes < samples else 0.0
            )
            chance = np.exp(passes * log_yes + (samples - passes) * log_no - peak) * density
            total *= integrate.simpson(chance, x=shifts, axis=1)
            scale += peak
        return math.log(integrate.simpson(total, x=centres)) + scale

    found = log_likelihood([counts], tau) - log_likelihood([counts], 0.5)
    assert found == pytest.approx(reference(tau) - reference(0.5), rel=2e-3, abs=1e-3)


def _estimates(sd: float, runs: int, trials: int) -> list[float]:
    rng = random.Random(int(sd * 10) + runs)
    rates = [0.95 + 0.04 * i / 11 for i in range(12)] + [0.5 + 0.4 * i / 19 for i in range(20)]
    return [
        spread_between_runs(_runs(rng, rates, runs=runs, samples=20, sd=sd)).variance
        for _ in range(trials)
    ]


def test_a_known_shift_between_runs_is_found_without_the_bias_of_log_odds() -> None:
    """τ² = 1 in 30 histories of 3 runs: the median estimate is near 1. (Cochran's Q on
    empirical log odds, used first, put it near 0.4.)"""
    found = sorted(_estimates(1.0, 3, 30))
    assert 0.7 <= found[15] <= 1.5, found


def test_runs_without_a_shift_rarely_show_one() -> None:
    found = sorted(_estimates(0.0, 3, 30))
    assert found[15] <= 0.02, found
    assert sum(found) / len(found) <= 0.1, found


def test_cases_that_passed_every_sample_of_every_run_say_nothing() -> None:
    runs = [{"always": (20, 20), "never": (0, 20), "moves": (k, 20)} for k in (18, 6, 19)]
    found = spread_between_runs(runs)
    assert found.cases == 1
    assert found.freedom == 2
    assert found.variance > 0


def test_cases_in_one_cluster_are_one_piece_of_evidence_per_run() -> None:
    runs = [{f"c{i}": (k + i % 2, 20) for i in range(6)} for k in (10, 15, 5)]
    found = spread_between_runs(runs)
    assert found.shift_freedom == found.freedom == 6 * 2
    families = {"c0": "a", "c1": "a", "c2": "a", "c3": "b", "c4": "b"}  # c5 is on its own
    assert found.counted_in(families).shift_freedom == 3 * 2
    assert found.counted_in(None).shift_freedom == 12


# --- which runs count: the baseline's configuration, from the trusted export ---------------


def _run(config_hash: str = "h1", created_at: str = "2026-11-01T00:00:00+00:00") -> RunResults:
    built = run([sampled("a", 18, 20), sampled("b", 12, 20)], suite="s", system="n")
    return dataclasses.replace(built, config_hash=config_hash, created_at=created_at)


def _record(case: str, passed: int, /, **fields: object) -> HistoryRecord:
    values: dict[str, object] = {
        "suite": "s",
        "case": case,
        "version": 1,
        "system": "n",
        "config_hash": "h1",
        "commit": "c" * 40,
        "created_at": "2026-11-02T00:00:00+00:00",
        "verdict": "pass" if passed == 20 else "fail",
        "pass_rate": passed / 20,
        "passes": passed,
        "samples": 20,
    }
    values.update(fields)
    return HistoryRecord.model_validate(values)


def test_only_runs_of_the_baselines_configuration_and_case_versions_count() -> None:
    baseline = _run()
    candidate = _run(config_hash="h2", created_at="2026-11-09T00:00:00+00:00")
    records = [
        _record("a", 10),
        _record("b", 4),
        _record("a", 2, config_hash="other", created_at="2026-11-03T00:00:00+00:00"),
        _record("a", 3, version=2, created_at="2026-11-04T00:00:00+00:00"),
        _record("a", 0, verdict="error", created_at="2026-11-05T00:00:00+00:00"),
        # the candidate's own run, added before `compare`: never its own evidence
        _record("a", 1, config_hash="h2", created_at="2026-11-09T00:00:00+00:00"),
    ]
    runs = runs_of(records, baseline, candidate)
    assert runs == [{"a": (18, 20), "b": (12, 20)}, {"a": (10, 20), "b": (4, 20)}]


def test_a_replay_of_the_same_recordings_is_one_run_not_two() -> None:
    baseline = _run()
    same = [_record("a", 18), _record("b", 12)]
    again = [
        _record(c, p, created_at="2026-11-07T00:00:00+00:00") for c, p in (("a", 18), ("b", 12))
    ]
    assert len(runs_of(same + again, baseline, _run(config_hash="h2"))) == 1


def test_lines_written_before_the_history_kept_counts_are_left_out() -> None:
    old = HistoryRecord.model_validate(
        {
            "suite": "s",
            "case": "a",
            "version": 1,
            "system": "n",
            "config_hash": "h1",
            "commit": "c" * 40,
            "created_at": "2026-10-01T00:00:00+00:00",
            "verdict": "fail",
            "pass_rate": 0.1,
        }
    )
    assert runs_of([old], _run(), _run(config_hash="h2")) == [{"a": (18, 20), "b": (12, 20)}]


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"passes": 21}, "exceed samples"),
        ({"samples": None}, "give both or neither"),
        ({"pass_rate": 0.5}, "is not passes / samples"),
    ],
)
def test_counts_that_do_not_add_up_are_refused(fields: dict, problem: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValueError, match=problem):
        _record("a", 18, **fields)


# --- the verdict: a drop a shift could explain is inconclusive, never a quiet ship ----------


def _pairs(critical_fell_to: int) -> list[tuple[CaseResult, CaseResult]]:
    pairs = [
        (
            sampled("crit", 19, 20, critical=True),
            sampled("crit", critical_fell_to, 20, critical=True),
        )
    ]
    pairs += [(sampled(f"o{i}", 15, 20), sampled(f"o{i}", 15, 20)) for i in range(10)]
    return pairs


#: 30 cases seen in 3 runs each: 60 degrees of freedom
SPREAD = RunSpread(
    variance=1.0,
    runs=3,
    cases=30,
    likelihood_ratio=40.0,
    freedom=60,
    source="3 runs in h",
    informative=tuple((f"h{i}", 3) for i in range(30)),
)


def test_a_drop_within_the_shift_between_runs_is_inconclusive_not_a_block() -> None:
    without = analyse(_pairs(12), GateConfig())
    assert without.regressions == ["crit"]  # 19/20 → 12/20 blocks when runs never shift
    allowed = analyse(_pairs(12), GateConfig(), run_spread=SPREAD)
    assert allowed.regressions == []
    assert allowed.shift_explained == ["crit"]
    assert "on 60 degrees of freedom): every case's test allows each of the two runs" in (
        suite_line(allowed)
    )
    assert allowed.tests["crit"].p_lower == pytest.approx(
        shifted_fisher_lower(19, 20, 12, 20, 2.0, 60)  # one shift for each of the two runs
    )


def test_a_collapse_beyond_any_plausible_shift_still_blocks() -> None:
    allowed = analyse(_pairs(0), GateConfig(), run_spread=SPREAD)
    assert allowed.regressions == ["crit"]
    assert allowed.shift_explained == []


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 20), min_size=10, max_size=10))
def test_the_other_cases_of_the_run_never_move_a_critical_p_value(others: list[int]) -> None:
    """The attack on the earlier allowance, again: the spread comes from the history, so
    nothing else in the candidate's run changes how its critical case is tested."""
    pairs = _pairs(12)[:1] + [
        (sampled(f"o{i}", 15, 20), sampled(f"o{i}", moved, 20)) for i, moved in enumerate(others)
    ]
    analysed = analyse(pairs, GateConfig(), run_spread=SPREAD)
    assert analysed.tests["crit"].p_lower == pytest.approx(
        shifted_fisher_lower(19, 20, 12, 20, 2.0, 60)
    )


def test_the_verdict_says_inconclusive_and_why() -> None:
    from gate.deciding.compare import compare

    base_cases = [old for old, _ in _pairs(12)]
    cand_cases = [new for _, new in _pairs(12)]
    baseline = dataclasses.replace(_run(), cases=base_cases, summary=summarise(base_cases))
    candidate = dataclasses.replace(
        _run(created_at="2026-11-09T00:00:00+00:00"),
        cases=cand_cases,
        summary=summarise(cand_cases),
    )
    comparison = compare(baseline, candidate, GateConfig(), run_spread=SPREAD)
    # The history may turn a block into "undecided", never into a ship, whatever the rule.
    for rule in (GateConfig(), GateConfig(on_inconclusive="ship")):
        held = decide(comparison, rule)
        assert held.decision == "inconclusive"
        assert (
            "no further than a shift between runs could take them (crit 19/20 → 12/20)"
            in (held.notes[0])
        )
        assert "It does not ship (exit 3)" in held.notes[0]
    blocked = decide(compare(baseline, candidate, GateConfig()), GateConfig())
    assert blocked.decision == "block"


def test_a_case_whose_counts_disagree_with_its_rate_is_recorded_without_counts() -> None:
    from gate.history.records import records_of

    edited = dataclasses.replace(sampled("a", 18, 20), pass_rate=0.5)
    results = run([edited, sampled("b", 12, 20)], suite="s", system="n")
    first, second = records_of(results, "c" * 40)
    assert (first.passes, first.samples, first.pass_rate) == (None, None, 0.5)
    assert (second.passes, second.samples) == (12, 20)
