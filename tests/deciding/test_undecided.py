"""gate/deciding/undecided.py and the suite test's floor: a drop the exact suite test had
too few units to test at its level is inconclusive (exit 3), never shipped."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest
from scipy import stats as scipy_stats

from gate.deciding.compare import compare
from gate.deciding.noise.analysis import analyse
from gate.deciding.rules import Verdict, decide
from gate.results import write_results
from gate.suite.config import GateConfig
from tests.cli.test_cli import casegate
from tests.conftest import Project
from tests.factories import run, sampled


def _suite(path: Path, families: int, passes: int, created_at: str) -> Path:
    """`families` clusters of five cases, no critical case, each passing `passes` of 20."""
    cases = [sampled(f"f{k}-{m}", passes, 20) for k in range(families) for m in range(5)]
    built = run(cases, suite="demo", system="echo", clusters={"by": "id_prefix"})
    write_results(dataclasses.replace(built, created_at=created_at), path)
    return path


@pytest.mark.parametrize(("families", "exit_code"), [(5, 3), (8, 1)])
def test_a_collapse_of_every_case_never_ships_however_few_the_clusters(
    project: Project, families: int, exit_code: int
) -> None:
    """An independent attack shipped 25/25 → 0/25 through five clusters: the exact test's
    smallest p, 2^-5, is above the suite's share of alpha. Eight can block."""
    project.write_config(gate={"on_inconclusive": "ship"})
    base = _suite(project.root / "base.json", families, 19, "2026-11-04T08:00:00+00:00")
    cand = _suite(project.root / "cand.json", families, 4, "2026-11-05T08:00:00+00:00")
    gated = casegate("gate", str(base), str(cand), cwd=project.root)
    assert gated.returncode == exit_code, gated.stdout + gated.stderr
    if exit_code == 3:
        assert "with 5 clusters the exact suite test cannot reach its level" in (gated.stdout)
        assert "smallest p is 2^-5 = 0.031 > alpha 0.02" in gated.stdout
        assert "It does not ship (exit 3)" in gated.stdout


def test_the_approximate_test_is_students_t_on_the_cluster_totals() -> None:
    rows = [(f"f{k}-{m}", 19, [4, 6, 3, 5, 8][k]) for k in range(5) for m in range(5)]
    pairs = [(sampled(c, b, 20), sampled(c, n, 20)) for c, b, n in rows]
    clusters = {c: c.split("-")[0] for c, *_ in rows}
    analysed = analyse(pairs, GateConfig(), clusters=clusters)
    totals = [5 * (to - 19) / 20 for to in [4, 6, 3, 5, 8]]
    reference = scipy_stats.ttest_1samp(totals, 0.0, alternative="less").pvalue
    assert analysed.suite_unreachable == (pytest.approx(reference), 5)


def test_an_unchanged_suite_of_few_clusters_is_not_held_up() -> None:
    rows = [(f"f{k}-{m}", 15, [15, 16, 14, 15, 16][k]) for k in range(5) for m in range(5)]
    pairs = [(sampled(c, b, 20), sampled(c, n, 20)) for c, b, n in rows]
    analysed = analyse(pairs, GateConfig(), clusters={c: c.split("-")[0] for c, *_ in rows})
    assert analysed.suite_unreachable is None


@pytest.mark.parametrize(
    ("fallen", "rest"),
    [
        (14, 18),  # a 15-point drop: Student's t on four clusters gives p = 0.029 > 0.02
        (0, 18),  # one cluster collapses, the others drop 10 points
    ],
)
def test_a_drop_beyond_the_margin_never_ships_through_four_clusters(fallen: int, rest: int) -> None:
    """An independent simulation shipped every case's 10-point drop 20% of the time with four
    clusters: the approximate test had to find the drop first. The estimate decides now."""
    verdict = _four_clusters(lambda i: fallen if i % 4 == 3 else rest)
    assert verdict.decision == "inconclusive"
    assert verdict.exit_code == 3
    assert "with 4 clusters the exact suite test cannot reach its level" in verdict.notes[0]


def test_a_drop_within_the_margin_through_four_clusters_ships() -> None:
    verdict = _four_clusters(lambda i: 19 if i % 2 else 20)  # 2.5 points: within the margin
    assert verdict.exit_code == 0


def _four_clusters(passes: Callable[[int], int]) -> Verdict:
    """48 cases in clusters k0-k3, each 60/60 in the baseline and `passes(i)`/20 now."""
    ids = [f"k{i % 4}-c{i:02d}" for i in range(48)]
    declared = {"by": "id_prefix"}
    base = run([sampled(c, 60, 60) for c in ids], clusters=declared)
    cand = run([sampled(c, passes(i), 20) for i, c in enumerate(ids)], clusters=declared)
    return decide(compare(base, cand, GateConfig()), GateConfig())


def test_an_interim_look_under_auto_is_not_too_few_units() -> None:
    """Under `samples: auto` a suite read at an interim look is held to that look's tiny
    spend, which 2^-8 never reaches; but the design would have sampled on to its last look
    had the suite looked worse, and there eight clusters can block. Judging reach by the
    interim spend ended 24% of unchanged 8-cluster suites in exit 3 (the bench's A/A row)."""
    rows = [(f"k{i % 8}-c{i:02d}", 3 if i % 3 == 0 else 4) for i in range(40)]
    pairs = [(sampled(c, 72, 72), sampled(c, passes, 4)) for c, passes in rows]
    clusters = {c: c.split("-")[0] for c, _ in rows}
    looks = [4, 8, 12, 16, 20, 24]
    assert analyse(pairs, GateConfig(), looks=looks, clusters=clusters).suite_unreachable is None
    # Four clusters cannot block even at the last look: that drop stays undecided.
    four = {c: f"k{int(c[1]) % 4}" for c, _ in rows}
    assert analyse(pairs, GateConfig(), looks=looks, clusters=four).suite_unreachable is not None
