"""Time `casegate run` in replay mode over N synthetic cases with three checks each.

    .venv/bin/python bench/replay_speed.py            # 10,000 and 100,000 cases
    .venv/bin/python bench/replay_speed.py 2000       # any sizes

Up to 10,000 cases it also times `casegate check` against that run's own results,
as a ratio to the run measured in the same folder.

Each size gets a fresh folder: a config, one JSONL case file, and a recording per
case written with casegate's own keying, so the run exercises the real replay
path. Wall time and peak memory are of the `casegate run` process, end to end.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gate.config import load_config
from gate.recordings import SCHEMA, request_key, system_fingerprint

CONFIG = """\
suite: bench
cases: cases.jsonl
system: {name: synthetic, provider: python, target: "nowhere:answer", model: m}
recordings: recordings
"""


def build(folder: Path, count: int) -> None:
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


def timed(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return elapsed, max(peak, before) / 1024


def main() -> None:
    sizes = [int(arg) for arg in sys.argv[1:]] or [10_000, 100_000]
    casegate = [sys.executable, "-m", "gate"]
    version_runs = [timed([*casegate, "--version"], Path.cwd())[0] for _ in range(5)]
    print(f"casegate --version: best of 5 {min(version_runs):.3f} s")
    for count in sizes:
        with tempfile.TemporaryDirectory() as temporary:
            folder = Path(temporary)
            build(folder, count)
            # Each size runs in a fresh child, so ru_maxrss is that run's own peak
            # only when it is the largest so far; sizes are run smallest first.
            seconds, peak = timed([*casegate, "run", "--out", "r.json", "--quiet"], folder)
            summary = json.loads((folder / "r.json").read_text())["summary"]
            assert summary["cases"] == count, summary
            print(
                f"{count:>7,} cases x 3 checks, replay: {seconds:6.2f} s end to end, "
                f"peak RSS {peak:,.0f} MiB, pass rate {summary['pass_rate']:.3f}"
            )
            if count <= 10_000:
                # `check` runs the suite in a supervised child, then judges every output
                # again itself (gate.recheck): its cost, as a ratio to `run` measured here.
                checked, _ = timed(
                    [*casegate, "check", "--baseline", "r.json", "--out", "c.json", "--quiet"],
                    folder,
                )
                print(
                    f"{count:>7,} cases, check (run + re-judging + compare + report): "
                    f"{checked:6.2f} s = {checked / seconds:.2f}x the run"
                )


if __name__ == "__main__":
    main()
