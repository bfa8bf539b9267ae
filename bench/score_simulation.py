"""The score rules' level and power, measured through casegate's own compare and decide.

    .venv/bin/python bench/score_simulation.py              # 2,000 comparisons per row
    .venv/bin/python bench/score_simulation.py 500          # quicker
    .venv/bin/python bench/score_simulation.py 2000 --only "A/A"

Suites of cases whose true mean scores are spread (per-case heterogeneity: 0.45 to 0.95),
each sample's score a Beta draw around its case's mean (sample noise, sd about 0.1),
rounded to 0.01 as checks report them; the "discrete" rows score k/4 (a share of four
fields), full of ties. The baseline draws 12 samples a case, the candidate 4 (the repo's
baseline factor 3). Clustered rows group the 40 cases into 8 families of 5, and every run
draws a shift per family on the log-odds scale (sd 0.3): near-duplicates move together
between runs, the intra-cluster correlation the cluster-level test exists for. Each run
becomes real casegate results, judged by `compare` and `decide` under

    gate: {max_mean_score_drop: {check: similar, drop: 0.02}}   # alpha 0.02 by default

The score rule's share of alpha is 0.01 (the suite pass-rate rule holds the other 0.01).
A/A rows must block through the score rule at most 0.01, and through any rule at most 0.02:
each prints the share with its exact 95% Clopper-Pearson interval. Power rows lower every
case's mean by D. "clusters not declared" runs the clustered suite without telling the
gate: it shows what the declaration is for.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.stats_simulation import clopper_pearson
from gate.deciding.compare import compare
from gate.deciding.rules import decide
from gate.results import CaseResult, CheckResult, RunResults, SampleResult, summarise
from gate.suite.config import GateConfig

RULE = GateConfig.model_validate({"max_mean_score_drop": {"check": "similar", "drop": 0.02}})
SCORE_SHARE = 0.01
BASE_SAMPLES, CAND_SAMPLES = 12, 4
CONCENTRATION = 20.0  # Beta(mu k, (1 - mu) k): a sample's sd about 0.1 at mu 0.7
FAMILY_SHIFT = 0.3  # sd of a family's shift between runs, on the log-odds scale


@dataclass(frozen=True)
class Scenario:
    name: str
    cases: int
    drop: float = 0.0
    families: int = 0  # 0: no clusters, and no shared shifts
    declared: bool = True
    discrete: bool = False
    samples: tuple[int, int] = (BASE_SAMPLES, CAND_SAMPLES)


SCENARIOS = [
    Scenario("A/A, 40 cases", 40),
    Scenario("A/A, 8 cases", 8),
    Scenario("A/A, 40 cases, 1 sample a side", 40, samples=(1, 1)),
    Scenario("A/A, 40 cases, discrete scores (ties)", 40, discrete=True),
    Scenario("A/A, 10 cases, discrete scores (ties)", 10, discrete=True),
    Scenario("A/A, 40 cases in 8 clusters, family shifts", 40, families=8),
    Scenario("A/A, 40 cases in 8 clusters, not declared", 40, families=8, declared=False),
    Scenario("drop 0.03, 40 cases", 40, drop=0.03),
    Scenario("drop 0.05, 40 cases", 40, drop=0.05),
    Scenario("drop 0.10, 40 cases", 40, drop=0.10),
    Scenario("drop 0.05, 40 cases in 8 clusters", 40, drop=0.05, families=8),
    Scenario("drop 0.10, 40 cases in 8 clusters", 40, drop=0.10, families=8),
    Scenario("drop 0.10, 8 cases", 8, drop=0.10),
    Scenario("drop 0.05, 40 cases, 1 sample a side", 40, drop=0.05, samples=(1, 1)),
]


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def _expit(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def _means(count: int) -> list[float]:
    return [0.45 + 0.5 * i / max(1, count - 1) for i in range(count)]


def _sample(rng: random.Random, mean: float, discrete: bool) -> float:
    mean = min(0.999, max(0.001, mean))
    if discrete:
        return sum(rng.random() < mean for _ in range(4)) / 4
    draw = rng.betavariate(mean * CONCENTRATION, (1 - mean) * CONCENTRATION)
    return round(draw, 2)


def _case(case_id: str, scores: list[float], cluster: str | None) -> CaseResult:
    outputs = [
        SampleResult(
            sample=i,
            status="pass" if s >= 0.5 else "fail",
            text="-",
            checks=[CheckResult(check="similar", ok=s >= 0.5, score=s)],
        )
        for i, s in enumerate(scores)
    ]
    passes = sum(s >= 0.5 for s in scores)
    return CaseResult(
        id=case_id,
        cluster=cluster,
        status="pass" if passes == len(scores) else "fail",
        passed=passes == len(scores),
        samples=len(scores),
        passes=passes,
        pass_rate=passes / len(scores),
        flaky=0 < passes < len(scores),
        checks=[CheckResult(check="similar", ok=passes == len(scores), score=fmean(scores))],
        outputs=outputs,
    )


def _run(rng: random.Random, scenario: Scenario, samples: int, drop: float) -> RunResults:
    shifts = [rng.gauss(0, FAMILY_SHIFT) for _ in range(scenario.families)]
    cases = []
    for index, mean in enumerate(_means(scenario.cases)):
        family = index % scenario.families if scenario.families else None
        if family is not None:
            mean = _expit(_logit(mean) + shifts[family])
        cluster = f"f{family}" if family is not None and scenario.declared else None
        scores = [_sample(rng, mean - drop, scenario.discrete) for _ in range(samples)]
        cases.append(_case(f"c{index:02d}", scores, cluster))
    return RunResults(
        suite="sim",
        system="sim",
        config={"samples": samples},
        config_hash="-",
        created_at="-",
        casegate_version="bench",
        summary=summarise(cases),
        cases=cases,
    )


def trial(scenario: Scenario, rng: random.Random) -> tuple[bool, bool, bool]:
    """(blocked by the score rule, blocked by any rule, inconclusive)."""
    baseline = _run(rng, scenario, scenario.samples[0], 0.0)
    candidate = _run(rng, scenario, scenario.samples[1], scenario.drop)
    verdict = decide(compare(baseline, candidate, RULE), RULE)
    by_score = any(reason.rule == "max_mean_score_drop" for reason in verdict.reasons)
    return by_score, verdict.decision == "block", verdict.decision == "inconclusive"


def chunk(args: tuple[int, int, int]) -> tuple[int, int, int]:
    index, seed, count = args
    rng = random.Random(seed)
    totals = [0, 0, 0]
    for _ in range(count):
        for position, hit in enumerate(trial(SCENARIOS[index], rng)):
            totals[position] += hit
    return totals[0], totals[1], totals[2]


def _share(hits: int, trials: int) -> str:
    low, high = clopper_pearson(hits, trials)
    return f"{hits / trials:6.2%} ({low:.2%}–{high:.2%})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("trials", nargs="?", type=int, default=2000)
    parser.add_argument("--only", default="")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    print(
        f"{args.trials} comparisons per row; score rule at alpha {SCORE_SHARE} (its share), "
        f"the gate at {RULE.alpha}; baseline {BASE_SAMPLES} samples, candidate {CAND_SAMPLES}"
    )
    print(f"{'scenario':48} {'score rule blocks (95% CI)':28} {'any block':24} exit 3")
    pieces = 8
    with ProcessPoolExecutor(args.workers) as pool:
        for index, scenario in enumerate(SCENARIOS):
            if args.only and args.only not in scenario.name:
                continue
            started = time.perf_counter()
            sizes = [args.trials // pieces + (i < args.trials % pieces) for i in range(pieces)]
            jobs = [(index, 1000 * index + i, size) for i, size in enumerate(sizes)]
            found = [0, 0, 0]
            for part in pool.map(chunk, jobs):
                found = [a + b for a, b in zip(found, part, strict=True)]
            flag = ""
            if scenario.drop == 0 and scenario.declared:
                flag = "  ok" if clopper_pearson(found[0], args.trials)[0] <= SCORE_SHARE else "  !"
            print(
                f"{scenario.name:48} {_share(found[0], args.trials):28} "
                f"{_share(found[1], args.trials):24} {found[2] / args.trials:6.2%}{flag}"
                f"  ({time.perf_counter() - started:.0f} s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
