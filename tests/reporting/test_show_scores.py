"""`casegate show` on a case whose checks measure: its mean score beside the baseline's."""

from __future__ import annotations

from gate.reporting import show
from tests.deciding.scored import scored


def test_a_scored_case_shows_its_mean_score_and_the_baselines() -> None:
    now = scored("wording", [0.4, 0.3, 0.9])
    before = scored("wording", [0.8, 0.9, 0.85])
    lines = show.render_case(now, before, baseline_source="baselines/s.json").splitlines()
    assert "  ✗ similar (score 0.533, baseline 0.850)" in lines
    assert "  ✗ similar (score 0.400)" in lines  # the first sample's own score


def test_a_check_without_a_score_shows_none() -> None:
    text = show.render_case(scored("x", [None, None]))
    assert "score" not in text
