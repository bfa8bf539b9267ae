"""Replay speed as ratios to a plain-Python floor measured in the same run.

    .venv/bin/python bench/replay_speed.py                 # 1,000, 10,000 and 100,000 cases
    .venv/bin/python bench/replay_speed.py 2000 20000      # any sizes, smallest first

Each size gets a fresh folder: a config, one JSONL case file with three checks a case
(contains, max_words, not_regex), and a recording per case written with casegate's
own keying, so `casegate run` exercises the real replay path. The floor
(bench/replay_floor.py) reads the same files, applies the same checks in a plain loop
and writes JSON. Both run as child processes, best of a few runs each; wall time and
peak RSS are the child's, end to end. Printed, with the goals from issue #14:

- start-up: `casegate run` on a 1-case suite (goal <= 0.25 s);
- per-case cost: the slope between the two smallest sizes, casegate's over the
  floor's (goal <= 2x);
- end to end at each size, casegate's time over the floor's (goal at 10,000 <= 3x);
- peak RSS at each size (goal at 100,000 < 1 GiB).

Up to 10,000 cases it also times `casegate check` against that run's own results, best
of as many runs, as a ratio to the run (goal from issue #21 at 10,000: <= 1.5x).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CONFIG = """\
suite: bench
cases: cases.jsonl
system: {name: synthetic, provider: python, target: "nowhere:answer", model: m}
recordings: recordings
"""
CASEGATE = [sys.executable, "-m", "gate"]
FLOOR = [sys.executable, str(REPO / "bench" / "replay_floor.py")]
#: runs per measurement (the best is kept: other load on the machine only adds time)
RUNS = {1: 7, 1_000: 5, 10_000: 3}
MIB = 1024 * 1024


def build(folder: Path, count: int) -> None:
    """Write the suite (run in a child: see `measure`)."""
    sys.path.insert(0, str(REPO))
    from gate.produce.recordings import SCHEMA, request_key, system_fingerprint
    from gate.suite.config import load_config

    (folder / "casegate.yml").write_text(CONFIG)
    fingerprint = system_fingerprint(load_config(folder / "casegate.yml").resolved_system())
    recordings = folder / "recordings"
    recordings.mkdir()
    with (folder / "cases.jsonl").open("w") as cases:
        for index in range(count):
            case_id = f"case-{index:06d}"
            case_input = {"question": f"question number {index}"}
            expect = {"contains": "refund", "max_words": 40, "not_regex": r"\d{5,}"}
            cases.write(json.dumps({"id": case_id, "input": case_input, "expect": expect}) + "\n")
            text = f"Your refund for order {index} is on its way." + (" extra" * (index % 50))
            output = {"text": text, "input_tokens": 50, "output_tokens": 12, "latency_ms": 300.0}
            key = request_key(fingerprint, case_input, 0)
            document = {"schema": SCHEMA, "case": case_id, "responses": {key: {"output": output}}}
            (recordings / f"{case_id}.json").write_text(json.dumps(document))


def child(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one child process, which must succeed."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited with {process.returncode}")
    return elapsed, usage.ru_maxrss * 1024 / MIB  # Linux reports KiB


def best(argv: list[str], cwd: Path, count: int) -> tuple[float, float]:
    runs = [child(argv, cwd) for _ in range(RUNS.get(count, 1))]
    return min(seconds for seconds, _ in runs), max(peak for _, peak in runs)


def measure(count: int) -> dict[str, float]:
    """Floor and casegate, best of a few runs each, on a fresh suite of `count` cases."""
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        # Built by a child: a parent that imported casegate would lend its children its
        # resident memory (Linux counts it in a child's peak until the child execs).
        subprocess.run([sys.executable, __file__, "--build", temporary, str(count)], check=True)
        floor_s, floor_rss = best([*FLOOR, str(folder)], folder, count)
        run_s, run_rss = best([*CASEGATE, "run", "--out", "r.json", "--quiet"], folder, count)
        results = json.loads((folder / "r.json").read_text())["summary"]
        floor = json.loads((folder / "floor.json").read_text())
        # The same verdicts, or the two did not do the same work.
        assert (results["cases"], results["passed"]) == (count, floor["passed"]), results
        figures = {"floor": floor_s, "run": run_s, "floor_rss": floor_rss, "rss": run_rss}
        if 1 < count <= 10_000:
            # A replayed `check` reads the baseline and the recordings, judges each output
            # once and compares (gate/pipeline/): its cost, as a ratio to `run`.
            argv = [*CASEGATE, "check", "--baseline", "r.json", "--out", "c.json", "--quiet"]
            figures["check"] = best(argv, folder, count)[0]  # best of as many as the run
        return figures


def main() -> None:
    sizes = sorted(int(arg) for arg in sys.argv[1:]) or [1_000, 10_000, 100_000]
    start = measure(1)
    print(
        f"start-up (`casegate run`, 1 case): {start['run']:.3f} s (goal <= 0.25), "
        f"floor {start['floor']:.3f} s"
    )
    figures = {count: measure(count) for count in sizes}
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[1]
        span = large - small
        floor_slope = (figures[large]["floor"] - figures[small]["floor"]) / span
        run_slope = (figures[large]["run"] - figures[small]["run"]) / span
        print(
            f"per case ({small:,} -> {large:,}): floor {floor_slope * 1e6:.1f} us, "
            f"casegate {run_slope * 1e6:.1f} us = {run_slope / floor_slope:.2f}x (goal <= 2)"
        )
    for count in sizes:
        row = figures[count]
        goal = " (goal <= 3)" if count == 10_000 else ""
        print(
            f"{count:>7,} cases x 3 checks: floor {row['floor']:6.2f} s, "
            f"casegate {row['run']:6.2f} s = {row['run'] / row['floor']:.2f}x{goal}; "
            f"peak RSS {row['rss']:,.0f} MiB (floor {row['floor_rss']:,.0f} MiB)"
        )
        if "check" in row:
            print(
                f"{count:>7,} cases, check (baseline, recordings, judging, compare, report): "
                f"{row['check']:6.2f} s = {row['check'] / row['run']:.2f}x the run"
                + (" (goal <= 1.5)" if count == 10_000 else "")
            )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--build"]:
        build(Path(sys.argv[2]), int(sys.argv[3]))
    else:
        main()
