"""gate/deciding/noise/beside.py: the shift between runs that the two runs show in the
clusters beside a case."""

from __future__ import annotations

import math

import pytest
from scipy import integrate
from scipy import stats as scipy_stats

from gate.deciding.noise.analysis import analyse
from gate.deciding.noise.beside import spread_beside, two_run_log_likelihood
from gate.results import CaseResult
from gate.suite.config import GateConfig
from tests.factories import sampled


@pytest.mark.parametrize(
    ("case", "tau", "offset"),
    [((10, 12), 0.3, 0.5), ((19, 8), 1.2, -2.0), ((1, 8), 2.0, -2.79), ((15, 20), 0.8, 1.5)],
)
def test_the_likelihood_is_both_runs_integrated_over_centre_and_shifts(
    case: tuple[int, int], tau: float, offset: float
) -> None:
    """Against scipy's adaptive quadrature, as differences between two settings (the
    binomial coefficients and the centre's step are the same for every setting). The
    centre's grid (a step of 0.2 on the log odds) holds it to about 3e-3 where a run
    passed 1 of 20; the estimate of τ moves by less than its own tolerance for that."""
    base, cand = case

    def reference(spread: float, moved: float) -> float:
        def run(centre: float, passes: int, shift: float) -> float:
            def at(z: float) -> float:
                rate = 1 / (1 + math.exp(-(centre + shift + spread * z)))
                return rate**passes * (1 - rate) ** (20 - passes) * scipy_stats.norm.pdf(z)

            return integrate.quad(at, -9, 9)[0]

        def over_centre(centre: float) -> float:
            return run(centre, base, 0.0) * run(centre, cand, moved)

        return math.log(integrate.quad(over_centre, -8, 8, limit=200)[0])

    pair = [((base, 20), (cand, 20))]
    found = two_run_log_likelihood(pair, tau, offset) - two_run_log_likelihood(pair, 0.5, 0.0)
    assert found == pytest.approx(reference(tau, offset) - reference(0.5, 0.0), abs=5e-3)


Row = tuple[str, int, int, str]  # id, baseline passes, candidate passes, cluster


def _pairs(rows: list[Row], critical: str = "f1-0") -> list[tuple[CaseResult, CaseResult]]:
    return [
        (sampled(c, b, 20, critical=c == critical), sampled(c, n, 20, critical=c == critical))
        for c, b, n, _ in rows
    ]


def _clusters(rows: list[Row]) -> dict[str, str]:
    return {c: k for c, *_, k in rows}


def _families(moved: list[int], base: int = 18, critical_to: int | None = None) -> list[Row]:
    """Eight families of five; family k's cases pass moved[k] of 20 in the candidate."""
    return [
        (
            f"f{k}-{m}",
            base,
            critical_to if (k, m) == (1, 0) and critical_to is not None else to,
            f"f{k}",
        )
        for k, to in enumerate(moved)
        for m in range(5)
    ]


def test_its_tau_is_where_the_likelihood_peaks() -> None:
    rows = _families([12, 8, 18, 10, 19, 14, 9, 17])
    beside = spread_beside(_pairs(rows), _clusters(rows), "f1-0")
    assert beside is not None and beside.variance > 0
    others = [((b, 20), (n, 20)) for c, b, n, k in rows if k != "f1"]
    best = max((two_run_log_likelihood(others, tau / 40, 0.0), tau / 40) for tau in range(121))
    assert math.sqrt(beside.variance) == pytest.approx(best[1], abs=0.03)


def test_a_drop_every_cluster_shares_may_be_undecided_never_shipped() -> None:
    """The attack on the allowance: a regression of every family widens its own
    allowance. Without an offset for the run as a whole (which broke the level under
    auto), it wins exit 3 instead of a block, never a ship."""
    rows = _families([6] * 8)
    analysed = analyse(_pairs(rows), GateConfig(), clusters=_clusters(rows))
    assert "f1-0" in analysed.regressions or "f1-0" in analysed.shift_explained


def test_two_broken_critical_families_cannot_explain_each_other_away() -> None:
    rows = _families([5, 5, 18, 18, 18, 18, 18, 18])
    pairs = [
        (
            sampled(c, b, 20, critical=c in {"f0-0", "f1-0"}),
            sampled(c, n, 20, critical=c in {"f0-0", "f1-0"}),
        )
        for c, b, n, _ in rows
    ]
    analysed = analyse(pairs, GateConfig(), clusters=_clusters(rows))
    assert {"f0-0", "f1-0"} <= set(analysed.regressions)
    assert analysed.shift_explained == []


def test_too_few_clusters_beside_a_case_give_no_allowance() -> None:
    rows = [
        row for row in _families([12, 8, 18, 10, 19, 14, 9, 17]) if row[3] in {"f0", "f1", "f2"}
    ]
    # Two clusters beside it: two degrees of freedom.
    assert spread_beside(_pairs(rows), _clusters(rows), "f1-0") is None


def test_one_fit_serves_every_critical_case_of_a_cluster() -> None:
    rows = _families([12, 6, 18, 10, 19, 14, 9, 17])
    pairs = [
        (sampled(c, b, 20, critical=k == "f1"), sampled(c, n, 20, critical=k == "f1"))
        for c, b, n, k in rows
    ]
    analysed = analyse(pairs, GateConfig(), clusters=_clusters(rows))
    spreads = {id(spread) for spread in analysed.spread_beside.values()}
    assert len(analysed.spread_beside) >= 2 and len(spreads) == 1
