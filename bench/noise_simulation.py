"""How the noise-aware gate behaves on simulated suites with known pass probabilities.

(The earlier, smaller simulation; bench/stats_simulation.py, `make bench-stats`, is the
one that measures the gate's stated level and power.)

    .venv/bin/python bench/noise_simulation.py            # 1,000 comparisons per scenario
    .venv/bin/python bench/noise_simulation.py 200        # quicker
    .venv/bin/python bench/noise_simulation.py --end-to-end 100   # through `execute`

A stochastic system with seeded per-case pass probabilities: 30 cases, spread
evenly over 0.6-1.0, 5 of them critical, n = 20 samples per case on each side.
Every simulated run is turned into real casegate results and judged by the real
`compare` and `decide`, with the default gate rule. Scenarios:

- A/A: baseline and candidate are the same system. How often does the gate block
  (goal: at most 5%), beside a naive gate that blocks when any case drops more
  than 5 points?
- one critical case falls from 0.95 to 0.5 (goal: blocks at least 90%);
- a broad drop: every case 10 points lower (goal: blocks at least 80%).
- `samples: auto` (start 4, step 4, max 20) against fixed n = 20 on the same
  draws: how often the decisions agree, and the ratio of candidate calls.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gate.deciding.compare import compare
from gate.deciding.noise.adaptive import references, replayed_rounds
from gate.deciding.rules import decide
from gate.results import CaseResult, RunResults, SampleResult, summarise
from gate.suite.config import AdaptiveConfig, GateConfig

CASES = 30
CRITICAL = 5
SAMPLES = 20
RULE = GateConfig()
ADAPTIVE = AdaptiveConfig()
PROBABILITIES = [0.6 + 0.4 * i / (CASES - 1) for i in range(CASES)]
# The critical cases sit among the reliable ones; case 27 (p ≈ 0.97) is set to 0.95.
CRITICAL_IDS = {f"c{i:02d}" for i in range(CASES - CRITICAL, CASES)}
PROBABILITIES[27] = 0.95


def case_result(case_id: str, draws: list[bool]) -> CaseResult:
    passes = sum(draws)
    return CaseResult(
        id=case_id,
        critical=case_id in CRITICAL_IDS,
        status="pass" if passes == len(draws) else "fail",
        passed=passes == len(draws),
        samples=len(draws),
        passes=passes,
        pass_rate=passes / len(draws),
        flaky=0 < passes < len(draws),
        outputs=[
            SampleResult(sample=i, status="pass" if v else "fail") for i, v in enumerate(draws)
        ],
    )


def run_of(cases: list[CaseResult], samples: int | str = SAMPLES) -> RunResults:
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


def draws(rng: random.Random, probabilities: list[float]) -> dict[str, list[bool]]:
    return {
        f"c{i:02d}": [rng.random() < p for _ in range(SAMPLES)] for i, p in enumerate(probabilities)
    }


def blocks(baseline: RunResults, candidate: RunResults) -> bool:
    return decide(compare(baseline, candidate, RULE), RULE).decision != "ship"


def naive_blocks(baseline: RunResults, candidate: RunResults) -> bool:
    before = baseline.case_map()
    return any(case.pass_rate < before[case.id].pass_rate - 0.05 - 1e-9 for case in candidate.cases)


def adaptive_candidate(baseline: RunResults, sequence: dict[str, list[bool]]) -> RunResults:
    """Sample each case only as far as gate.adaptive asks, reading the same draws."""
    taken = replayed_rounds(sequence, references(baseline), ADAPTIVE, RULE)
    return run_of([case_result(i, sequence[i][:n]) for i, n in taken.items()], "auto")


def scenario(
    name: str, candidate_p: list[float], repeats: int, seed: int, naive: bool = False
) -> None:
    rng = random.Random(seed)
    blocked = naive_blocked = agree = 0
    fixed_calls = adaptive_calls = 0
    for _ in range(repeats):
        baseline = run_of([case_result(i, d) for i, d in draws(rng, PROBABILITIES).items()])
        sequence = draws(rng, candidate_p)
        candidate = run_of([case_result(i, d) for i, d in sequence.items()])
        decision = blocks(baseline, candidate)
        blocked += decision
        naive_blocked += naive_blocks(baseline, candidate)
        adaptive = adaptive_candidate(baseline, sequence)
        agree += blocks(baseline, adaptive) == decision
        fixed_calls += CASES * SAMPLES
        adaptive_calls += sum(case.samples for case in adaptive.cases)
    line = f"{name:<38} blocks {blocked / repeats:6.1%}"
    if naive:
        line += f"   (naive 5-point per-case gate: {naive_blocked / repeats:.1%})"
    print(line)
    print(
        f"{'':<38} samples: auto agrees {agree / repeats:6.1%}, "
        f"calls {adaptive_calls / fixed_calls:.2f} of fixed n={SAMPLES}"
    )


STOCHASTIC_SYSTEM = """
import random

_rng = random.Random(20261130)

def answer(case_input, system):
    p = case_input["p"][system["variant"]]
    return "pass" if _rng.random() < p else "fail"
"""


def end_to_end(repeats: int) -> None:
    """The same scenarios through the whole pipeline: a stochastic python system, run by
    `execute` (fixed n and `samples: auto`), judged by `compare` and `decide`."""
    import json
    import tempfile

    from gate.pipeline.run import execute
    from gate.results import write_results
    from gate.suite.cases import load_cases
    from gate.suite.config import load_config

    scenarios = {
        "A/A (no change)": PROBABILITIES,
        "critical case 0.95 -> 0.50": [0.5 if i == 27 else p for i, p in enumerate(PROBABILITIES)],
        "broad drop, every case -10 points": [p - 0.10 for p in PROBABILITIES],
    }
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "stochastic_system.py").write_text(STOCHASTIC_SYSTEM)
        for name, candidate_p in scenarios.items():
            cases = [
                {
                    "id": f"c{i:02d}",
                    "critical": f"c{i:02d}" in CRITICAL_IDS,
                    "input": {"p": {"base": base, "candidate": cand}},
                    "expect": {"equals": "pass"},
                }
                for i, (base, cand) in enumerate(zip(PROBABILITIES, candidate_p, strict=True))
            ]
            (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
            blocked = agree = calls = 0
            for _ in range(repeats):
                decisions = []
                for variant, samples in (("base", 20), ("candidate", 20), ("candidate", "auto")):
                    config = {
                        "suite": "sim",
                        "cases": "cases.jsonl",
                        "samples": samples,
                        "concurrency": 1,
                        "baseline": "baseline.json",
                        "system": {
                            "name": variant,
                            "provider": "python",
                            "target": "stochastic_system:answer",
                            "variant": variant,
                        },
                    }
                    (root / "casegate.yml").write_text(json.dumps(config))
                    loaded = load_config(root / "casegate.yml")
                    results = execute(
                        loaded, load_cases([root / "cases.jsonl"]), "live", show_progress=False
                    )
                    if variant == "base":
                        write_results(results, root / "baseline.json")
                        baseline = results
                        continue
                    decisions.append(blocks(baseline, results))
                    if samples == "auto":
                        calls += sum(case.samples for case in results.cases)
                blocked += decisions[0]
                agree += decisions[0] == decisions[1]
            print(
                f"{name:<38} blocks {blocked / repeats:6.1%}; samples: auto agrees "
                f"{agree / repeats:6.1%}, calls {calls / (repeats * CASES * SAMPLES):.2f}"
            )


def main() -> None:
    if sys.argv[1:2] == ["--end-to-end"]:
        end_to_end(int(sys.argv[2]) if len(sys.argv) > 2 else 100)
        return
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    print(
        f"{CASES} cases, p spread over 0.60-1.00, {CRITICAL} critical, n={SAMPLES} per side, "
        f"{repeats} comparisons per scenario, default gate rule"
    )
    started = time.perf_counter()
    critical_drop = list(PROBABILITIES)
    critical_drop[27] = 0.5
    broad_drop = [p - 0.10 for p in PROBABILITIES]
    runs: list[tuple[str, list[float], bool]] = [
        ("A/A (no change)", PROBABILITIES, True),
        ("critical case 0.95 -> 0.50", critical_drop, False),
        ("broad drop, every case -10 points", broad_drop, False),
    ]
    for seed, (name, probabilities, naive) in enumerate(runs):
        scenario(name, probabilities, repeats, seed, naive)
    elapsed: Callable[[], float] = lambda: time.perf_counter() - started  # noqa: E731
    print(f"({elapsed():.0f} s)")


if __name__ == "__main__":
    main()
