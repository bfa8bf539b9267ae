"""A baseline is estimated from more samples than a run draws (gate.suite.config.Config.
estimate_samples), and a replayed one from what is recorded of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate.cli import main
from gate.suite.config import AdaptiveConfig, Config, load_config
from tests.conftest import Project, case

SYSTEM = {"name": "echo", "provider": "python", "target": "bot:answer"}


def config(**fields: Any) -> Config:
    return Config(suite="s", cases=["cases"], system=SYSTEM, **fields)  # type: ignore[arg-type]


def test_a_baseline_takes_three_times_a_runs_samples() -> None:
    assert config(samples=20).estimate_samples(20) == 60
    assert config(samples="auto").estimate_samples(None) == 3 * AdaptiveConfig().max
    assert config(samples="auto", adaptive={"max": 12}).estimate_samples(None) == 36
    # a case that pins its own count is estimated from three times that
    assert config(samples=20).estimate_samples(5) == 15


def test_a_one_sample_case_stays_at_one() -> None:
    # declared deterministic, or one draw by choice: three calls would buy nothing
    assert config(samples=1).estimate_samples(1) == 1
    assert config(samples=1, baseline_samples=30).estimate_samples(1) == 1


def test_baseline_samples_sets_the_count() -> None:
    assert config(samples=20, baseline_samples=20).estimate_samples(20) == 20
    assert config(samples="auto", baseline_samples=100).estimate_samples(None) == 100


@given(st.integers(min_value=2, max_value=1000))
def test_the_estimate_is_never_fewer_than_the_run_nor_over_the_cap(samples: int) -> None:
    count = config(samples=samples).estimate_samples(samples)
    assert samples <= count <= 1000
    assert count == min(3 * samples, 1000)


@pytest.mark.parametrize("value", [0, -1, 1001, True, 2.5, "60"])
def test_a_bad_baseline_samples_is_refused_by_name(project: Project, value: Any) -> None:
    project.write_config(baseline_samples=value)
    with pytest.raises(Exception, match="baseline_samples"):
        load_config(project.config_path)


def test_unset_it_leaves_the_config_hash_alone(project: Project) -> None:
    before = load_config(project.config_path).config_hash()
    project.write_config(baseline_samples=5)
    assert load_config(project.config_path).config_hash() != before
    project.write_config()
    assert load_config(project.config_path).config_hash() == before


def _samples(path: str = "baselines/demo.json") -> dict[str, int]:
    return {c["id"]: c["samples"] for c in json.loads(Path(path).read_text())["cases"]}


def test_a_replayed_baseline_uses_the_recorded_samples_and_says_it_is_short(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("a", "hi", contains="hi"), case("b", "yo", contains="yo")])
    project.write_config(samples=2)
    assert main(["record", "--quiet"]) == 0  # what a pull request's author records: 2 each
    capsys.readouterr()
    assert main(["baseline", "--quiet"]) == 0
    assert _samples() == {"a": 2, "b": 2}
    err = capsys.readouterr().err
    assert "2 case(s) estimated from the 2+ samples recorded instead of 6 (a, b)" in err
    assert "casegate baseline --mode record" in err

    # Recorded the way the README says: the baseline replays all six, and says nothing.
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    assert _samples() == {"a": 6, "b": 6}
    capsys.readouterr()
    assert main(["baseline", "--quiet"]) == 0
    assert _samples() == {"a": 6, "b": 6}
    assert "estimated from" not in capsys.readouterr().err


def test_a_replayed_baseline_short_of_the_runs_own_count_names_the_missing(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("a", "hi", contains="hi")])
    project.write_config(samples=2)
    assert main(["record", "--quiet"]) == 0
    project.write_config(samples=3)  # the third sample was never recorded
    assert main(["baseline", "--quiet"]) == 2
    assert "no recording for 1 case(s) (1 sample(s))" in capsys.readouterr().err


def test_under_auto_a_baseline_never_settles_for_adaptive_recordings(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    # Samples recorded adaptively stopped because they looked good: an estimate from
    # them would be biased upward, so the replayed baseline asks for all of its own.
    project.write_cases([case("a", "hi", contains="hi")])
    project.write_config(samples="auto", adaptive={"start": 2, "step": 2, "max": 4})
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 2
    assert "no recording for 1 case(s)" in capsys.readouterr().err
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    assert _samples() == {"a": 12}
    assert main(["baseline", "--quiet"]) == 0


def test_prune_keeps_what_the_baseline_replays(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("a", "hi", contains="hi")])
    project.write_config(samples="auto", adaptive={"start": 2, "step": 2, "max": 4})
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["recordings", "prune"]) == 0
    assert "nothing to prune" in capsys.readouterr().out
    assert main(["baseline", "--quiet"]) == 0  # all 12 still there
    assert _samples() == {"a": 12}
