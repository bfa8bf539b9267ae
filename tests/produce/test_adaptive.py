"""`samples: auto`: the stopping rule, and adaptive runs through record and replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.cli import main
from gate.deciding.noise.adaptive import Reference, more_samples, plan_round
from gate.suite.config import AdaptiveConfig, GateConfig
from tests.conftest import Project

ADAPTIVE = AdaptiveConfig(start=4, step=4, max=20)
SOLID = Reference(passes=20, samples=20, critical=True)


@pytest.mark.parametrize(
    ("reference", "passes", "samples", "more", "why"),
    [
        (SOLID, 0, 0, 4, "every case starts with `start` samples"),
        (SOLID, 4, 4, 0, "4/4 against 20/20 cannot become a significant drop"),
        (SOLID, 3, 4, 4, "3/4 might: sample on"),
        (SOLID, 1, 4, 0, "1/4 against 20/20 is already significant: confirmation settles it"),
        (SOLID, 16, 19, 1, "the last step stops at max"),
        (SOLID, 10, 20, 0, "never past max"),
        (None, 4, 4, 4, "no baseline to stop against: on to max"),
    ],
)
def test_the_stopping_rule(
    reference: Reference | None, passes: int, samples: int, more: int, why: str
) -> None:
    assert more_samples(reference, passes, samples, ADAPTIVE, alpha=0.05) == more, why


def test_non_critical_cases_answer_to_the_holm_threshold() -> None:
    refs = {f"c{i}": Reference(19, 20, critical=False) for i in range(30)}
    refs["crit"] = Reference(19, 20, critical=True)
    counts = {"c0": [True, True, False, True], "crit": [True, True, False, True]}
    # 3/4 against 19/20 may still be significant at 0.05 but not at 0.02/30.
    assert plan_round(counts, refs, ADAPTIVE, GateConfig()) == {"crit": 4}


def test_a_clustered_critical_case_is_sampled_like_any_other() -> None:
    """Clusters shape the suite test only: a critical case's test reads its own counts, so
    its rounds are the same in or out of a cluster (and a drop can settle it early)."""
    refs = {f"r{i}": Reference(19, 20, critical=False, cluster="refund") for i in range(4)}
    refs["crit"] = Reference(20, 20, critical=True, cluster="refund")
    unclustered = {i: Reference(r.passes, r.samples, r.critical) for i, r in refs.items()}
    for crit in ([False] * 4, [True, True, False, True], [True] * 4):
        seen = {case_id: [True] * 4 for case_id in refs} | {"crit": crit}
        clustered_plan = plan_round(seen, refs, ADAPTIVE, GateConfig())
        assert clustered_plan == plan_round(seen, unclustered, ADAPTIVE, GateConfig())
    seen = {case_id: [True] * 4 for case_id in refs} | {"crit": [False] * 4}
    assert "crit" not in plan_round(seen, refs, ADAPTIVE, GateConfig())  # settled: it dropped


STOCHASTIC_BOT = """
import random

_rng = random.Random(7)

def answer(case_input, system):
    return "good" if _rng.random() < case_input["p"] else "bad"
"""


def test_adaptive_record_then_replay_reproduces_every_decision(project: Project) -> None:
    project.write_system(STOCHASTIC_BOT)
    project.write_config(samples=20, concurrency=1)
    cases = [
        {"id": f"c{i:02d}", "input": {"p": p}, "expect": {"equals": "good"}, "min_pass_rate": 0.5}
        for i, p in enumerate([1.0, 1.0, 0.97, 0.95, 0.9, 0.9, 0.85, 0.8, 0.7, 0.6])
    ]
    project.write_cases(cases)
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    baseline = json.loads(Path("baselines/demo.json").read_text())
    assert all(case["samples"] == 60 for case in baseline["cases"])  # estimated: three times 20

    # A new case the baseline lacks is sampled to the cap.
    project.write_cases([*cases, {"id": "new", "input": {"p": 1.0}, "expect": {"equals": "good"}}])
    assert main(["record", "--set", "samples=auto", "--out", "auto.json", "--quiet"]) == 0
    auto = {c["id"]: c for c in json.loads(Path("auto.json").read_text())["cases"]}
    fixed_calls = 20 * len(cases)
    adaptive_calls = sum(c["samples"] for i, c in auto.items() if i != "new")
    assert auto["new"]["samples"] == 24  # adaptive.max
    # 4/4 against 20/20 is settled on its own: it moves only with the suite's looks.
    assert auto["c00"]["samples"] == min(c["samples"] for i, c in auto.items() if i != "new")
    # Every count is a look, and this draw's open suite test moved all cases together
    # (the saving in expectation, 0.27 of n = 20, is measured by `make bench-stats`).
    assert {c["samples"] for c in auto.values()} <= {4, 8, 12, 16, 20, 24}
    assert adaptive_calls < fixed_calls

    assert main(["run", "--set", "samples=auto", "--out", "replayed.json", "--quiet"]) == 0
    replayed = {c["id"]: c for c in json.loads(Path("replayed.json").read_text())["cases"]}
    assert {i: (c["samples"], c["passes"]) for i, c in replayed.items()} == {
        i: (c["samples"], c["passes"]) for i, c in auto.items()
    }


ALTERNATING_BOT = """
from collections import Counter

calls = Counter()

def answer(case_input, system):
    calls[case_input["q"]] += 1
    return "good" if calls[case_input["q"]] % 2 else "bad"
"""


def test_repeated_samples_give_rates_intervals_and_flaky_cases(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_system(ALTERNATING_BOT)
    project.write_config(samples=5, min_pass_rate=0.6, concurrency=1)
    project.write_cases(
        [
            {"id": "lenient", "input": {"q": "a"}, "expect": {"equals": "good"}},
            {
                "id": "strict",
                "input": {"q": "b"},
                "expect": {"equals": "good"},
                "min_pass_rate": 1.0,
            },
            {"id": "steady", "input": {"q": "c"}, "expect": {"regex": "good|bad"}},
        ]
    )
    assert main(["run", "--mode", "live", "--out", "out.json"]) == 0
    cases = {c["id"]: c for c in json.loads(Path("out.json").read_text())["cases"]}
    lenient = cases["lenient"]
    assert (lenient["passes"], lenient["samples"], lenient["passed"]) == (3, 5, True)
    assert (lenient["ci_low"], lenient["ci_high"]) == pytest.approx((0.2307, 0.8824), abs=1e-4)
    assert lenient["flaky"] is True
    assert cases["strict"]["passed"] is False  # the case's own min_pass_rate wins
    assert cases["steady"]["flaky"] is False
    assert "15 samples; 2 flaky case(s): lenient, strict" in capsys.readouterr().out
    summary = json.loads(Path("out.json").read_text())["summary"]
    assert summary["flaky"] == 2


def test_replay_of_a_truncated_case_says_the_rule_wanted_more() -> None:
    from gate.deciding.noise.adaptive import replayed_rounds

    refs = {"crit": SOLID}
    # One verdict where the rule draws at least `start`: the replay must end, and say so.
    drawn = replayed_rounds({"crit": [True]}, refs, ADAPTIVE, GateConfig())
    assert drawn["crit"] > 1
    full = replayed_rounds({"crit": [True] * 20}, refs, ADAPTIVE, GateConfig())
    assert full["crit"] == 4  # 4/4 against 20/20: settled at the first look
