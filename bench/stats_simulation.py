"""The noise-aware gate's level and power, measured through casegate's own decisions.

    make bench-stats                                   # 3,000 comparisons per row, 2 cores
    .venv/bin/python bench/stats_simulation.py 500     # quicker
    .venv/bin/python bench/stats_simulation.py 3000 --only "A/A"
    .venv/bin/python bench/stats_simulation.py 3000 --only "clusters" --skip "history"

A 40-case suite with known pass probabilities: 8 cases at 1.0, 12 spread over
0.95-0.99, 20 flaky ones spread over 0.50-0.90. Every simulated run becomes
real casegate results (every sample's verdict, in order) and is judged by the
real `compare` and `decide` under the default rule (alpha 0.02); `samples: auto`
runs draw their rounds with `gate.deciding.noise.adaptive.replayed_rounds`, the function
the gate's own process uses to verify a run; a baseline "refreshed with auto"
takes `gate.deciding.noise.adaptive.baseline_samples`. Each row prints the share of
comparisons that blocked with its exact 95% Clopper-Pearson interval, and the
candidate's calls as a share of fixed n = 20.

A/A rows (the system did not change) must block at most 2% (upper bound 2.5%);
the floor row is a system exactly at its floor, which must ship at most 2%. The
"inconclusive" column counts exit 3: a critical drop that only a shift between runs
could explain (measured in the trusted history, or, without it, in the clusters beside
the case in the two runs compared), never a ship.
"""

from __future__ import annotations

import math
import random
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.stats_scenarios import SCENARIOS, Scenario, trial
from gate.stats import binomial_upper


def clopper_pearson(hits: int, trials: int) -> tuple[float, float]:
    """Exact two-sided 95% interval, by bisection on the binomial tails."""

    def bound(upper: bool) -> float:
        low, high = 0.0, 1.0
        for _ in range(50):
            middle = (low + high) / 2
            if upper:  # the largest rate under which seeing <= hits has chance > 2.5%
                inside = binomial_upper(trials - hits, trials, 1 - middle) > 0.025
            else:
                inside = binomial_upper(hits, trials, middle) <= 0.025
            low, high = (middle, high) if inside else (low, middle)
        return low if upper else high

    low = 0.0 if hits == 0 else bound(False)
    high = 1.0 if hits == trials else bound(True)
    return low, high


@dataclass
class Tally:
    blocked: int = 0
    #: "inconclusive" (exit 3): a critical drop only a shift between runs could explain
    undecided: int = 0
    calls: int = 0
    trials: int = 0
    extra: dict[str, int] = field(default_factory=dict)


def run_chunk(args: tuple[str, int, int]) -> Tally:
    name, seed, count = args
    scenario = next(s for s in SCENARIOS if s.name == name)
    rng = random.Random(seed)
    tally = Tally()
    for _ in range(count):
        decision, calls = trial(scenario, rng)
        tally.blocked += decision == "block"
        tally.undecided += decision == "inconclusive"
        tally.calls += calls
        tally.trials += 1
    return tally


def measure(scenario: Scenario, trials: int, workers: int, seed: int) -> Tally:
    chunks = [(scenario.name, seed * 1000 + i, trials // workers) for i in range(workers)]
    chunks[0] = (scenario.name, seed * 1000, trials - (trials // workers) * (workers - 1))
    total = Tally()
    with ProcessPoolExecutor(workers) as pool:
        for part in pool.map(run_chunk, chunks):
            total.blocked += part.blocked
            total.undecided += part.undecided
            total.calls += part.calls
            total.trials += part.trials
    return total


def main() -> None:
    args = sys.argv[1:]
    if {"-h", "--help"} & set(args):
        print(__doc__)
        return
    # `--only TEXT` keeps the rows whose name holds TEXT, `--skip TEXT` drops them
    # (each may be given more than once).
    only, skip = [], []
    for flag, found in (("--only", only), ("--skip", skip)):
        while flag in args:
            at = args.index(flag)
            found.append(args[at + 1])
            del args[at : at + 2]
    trials = int(args[0]) if args else 3000
    workers = 2
    started = time.perf_counter()
    print(f"{trials:,} comparisons per row; the default gate rule (alpha 0.02)\n")
    print("| row | goal | blocks | 95% CI | inconclusive | calls / n = 20 |")
    print("|---|---|---|---|---|---|")
    for seed, scenario in enumerate(SCENARIOS):
        if only and not any(text in scenario.name for text in only):
            continue
        if any(text in scenario.name for text in skip):
            continue
        tally = measure(scenario, trials, workers, seed)
        rate = tally.blocked / tally.trials
        low, high = clopper_pearson(tally.blocked, tally.trials)
        if scenario.ships:  # a floor row counts ships: everything that is not a block
            rate = (tally.blocked + tally.undecided) / tally.trials
            low, high = clopper_pearson(tally.blocked + tally.undecided, tally.trials)
        undecided = tally.undecided / tally.trials
        shown = 1 - rate if scenario.ships else rate
        shown_low, shown_high = (1 - high, 1 - low) if scenario.ships else (low, high)
        calls = tally.calls / (tally.trials * scenario.cases * 20)
        verb = "ships" if scenario.ships else "blocks"
        print(
            f"| {scenario.name} | {scenario.goal} | {verb} {shown:.2%} | "
            f"{shown_low:.2%}–{shown_high:.2%} | {undecided:.2%} | {calls:.2f} |",
            flush=True,
        )
    elapsed: Callable[[], float] = lambda: time.perf_counter() - started  # noqa: E731
    print(f"\n({elapsed():.0f} s, {math.ceil(elapsed() / 60)} min)")


if __name__ == "__main__":
    main()
