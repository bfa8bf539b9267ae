"""A subset of bench/stats_simulation.py through the CLI: `baseline`, `run`, `gate`.

    .venv/bin/python bench/stats_cli.py 100      # comparisons per row, ~1 s each

A stochastic python system with seeded, known per-case pass probabilities (the same
40-case suite, 5 critical, two of them flaky) in a temporary project. Each comparison
refreshes the baseline with `casegate baseline --mode live` (under `samples: auto`:
estimated, 40 samples per case), runs the candidate with `casegate run --mode live`, and
gates it with `casegate gate`; exit 1 is a block. Rows: A/A under `samples: auto`, and
one critical case 0.95 → 0.5.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.stats_scenarios import CRITICAL, IDS, SUITE
from bench.stats_simulation import clopper_pearson
from gate.cli import main as casegate

SYSTEM = """
import random

_rng = random.Random()

def answer(case_input, system):
    return "pass" if _rng.random() < case_input["p"][system["variant"]] else "fail"
"""


def config(variant: str) -> str:
    return json.dumps(
        {
            "suite": "sim",
            "cases": "cases.jsonl",
            "samples": "auto",
            "concurrency": 1,
            "baseline": "baseline.json",
            "system": {
                "name": variant,
                "provider": "python",
                "target": "stochastic_system:answer",
                "variant": variant,
            },
        }
    )


def row(root: Path, name: str, candidate: list[float], repeats: int) -> None:
    """One row in the shared project (the system module is imported once per process)."""
    blocked = calls = 0
    cases = [
        {
            "id": case_id,
            "critical": case_id in CRITICAL[5],
            "input": {"p": {"base": base, "candidate": cand}},
            "expect": {"equals": "pass"},
            "min_pass_rate": 0.5,
        }
        for case_id, base, cand in zip(IDS, SUITE, candidate, strict=True)
    ]
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (root / "base.yml").write_text(config("base"))
    (root / "candidate.yml").write_text(config("candidate"))
    here = Path.cwd()
    os.chdir(root)
    try:
        for _ in range(repeats):
            quiet = contextlib.redirect_stderr(io.StringIO())
            with contextlib.redirect_stdout(io.StringIO()), quiet:
                casegate(["baseline", "-c", "base.yml", "--mode", "live", "--quiet"])
                casegate(
                    [
                        "run",
                        "-c",
                        "candidate.yml",
                        "--mode",
                        "live",
                        "--quiet",
                        "--out",
                        "c.json",
                    ]
                )
                code = casegate(["gate", "baseline.json", "c.json", "-c", "candidate.yml"])
            blocked += code == 1
            run = json.loads(Path("c.json").read_text())
            calls += sum(case["samples"] for case in run["cases"])
    finally:
        os.chdir(here)
    low, high = clopper_pearson(blocked, repeats)
    print(
        f"| {name} (CLI) | blocks {blocked / repeats:.1%} | {low:.1%}–{high:.1%} | "
        f"{calls / (repeats * len(IDS) * 20):.2f} |",
        flush=True,
    )


def main() -> None:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    print(f"{repeats} comparisons per row, through the CLI\n")
    print("| row | blocks | 95% CI | calls / n = 20 |\n|---|---|---|---|")
    dropped = list(SUITE)
    dropped[IDS.index("c08")] = 0.5
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "stochastic_system.py").write_text(SYSTEM)
        row(root, "A/A auto vs baseline refreshed with auto, 5 critical", SUITE, repeats)
        row(root, "critical 0.95→0.5, auto vs baseline refreshed with auto", dropped, repeats)


if __name__ == "__main__":
    main()
