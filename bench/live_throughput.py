"""Live-mode throughput of `casegate run` against a loopback OpenAI server.

    .venv/bin/python bench/live_throughput.py               # 200 and 800 requests, 16 at once
    .venv/bin/python bench/live_throughput.py 400 1600 32 0.1   # counts, concurrency, delay

The fake server (tests/fakes/llm_server.py, the real wire format) answers each request
after a fixed delay, 200 ms by default, in a process of its own. `casegate run --mode
live` runs as a child process, end to end, with the real `openai` SDK, at two request
counts; each count is run a few times and the fastest kept. From the two:

- fixed start-up: what the run costs whatever its size (the intercept of wall time
  over requests: interpreter, imports, the SDK's client, writing results);
- marginal throughput: the ideal time per extra request (delay / concurrency) over
  the measured one (the slope between the two counts) — 1.0 is ideal, goal >= 0.9;
- harness CPU per request: the casegate process's own CPU time (user + system; the
  server's is in its own process) between the two counts — goal <= 2 ms — and, as a
  ratio, over the floor's: bench/live_floor.py sends the same requests with the `openai`
  SDK alone from as many threads, measured the same way in the same run.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.fakes.llm_server import FakeLLMServer  # noqa: E402

RUNS = 3


def serve(delay_s: float, ready: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    with FakeLLMServer(delay_s=delay_s) as server:
        ready.put(server.url)
        time.sleep(3600)


def write_suite(root: Path, url: str, requests: int, concurrency: int) -> None:
    config = {
        "suite": "bench",
        "cases": "cases.jsonl",
        "concurrency": concurrency,
        "system": {
            "name": "bench",
            "provider": "openai",
            "model": "m",
            "base_url": f"{url}/v1",
            "message": "{{ question }}",
        },
    }
    (root / "casegate.yml").write_text(json.dumps(config))
    with (root / "cases.jsonl").open("w") as stream:
        for index in range(requests):
            case = {
                "id": f"c{index:05d}",
                "input": {"question": f"q{index}"},
                "expect": {"contains": "echo", "max_words": 10},
            }
            stream.write(json.dumps(case) + "\n")


def run_once(root: Path) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one `casegate run --mode live`."""
    argv = [sys.executable, "-m", "gate", "run", "--mode", "live", "--out", "r.json", "--quiet"]
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench"}
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"casegate run exited with {process.returncode}")
    summary = json.loads((root / "r.json").read_text())["summary"]
    if summary["passed"] != summary["cases"]:
        raise SystemExit(f"not every case passed: {summary}")
    return wall, usage.ru_utime + usage.ru_stime


def measure(url: str, requests: int, concurrency: int) -> tuple[float, float]:
    """The fastest of RUNS runs: wall seconds, and the CPU seconds of that run."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write_suite(root, url, requests, concurrency)
        return min(run_once(root) for _ in range(RUNS))


def floor_once(url: str, requests: int, concurrency: int) -> tuple[float, float]:
    """Wall and CPU seconds of the SDK alone (bench/live_floor.py) for `requests`."""
    argv = [sys.executable, str(REPO / "bench" / "live_floor.py"), url, str(requests)]
    finished = subprocess.run(
        [*argv, str(concurrency)], capture_output=True, text=True, check=True, timeout=600
    )
    found = json.loads(finished.stdout)
    return float(found["wall"]), float(found["cpu"])


def main() -> None:
    small = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    large = int(sys.argv[2]) if len(sys.argv) > 2 else 800
    concurrency = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    delay_s = float(sys.argv[4]) if len(sys.argv) > 4 else 0.2
    ready: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    server = multiprocessing.Process(target=serve, args=(delay_s, ready), daemon=True)
    server.start()
    try:
        url = ready.get(timeout=30)
        wall_small, cpu_small = measure(url, small, concurrency)
        wall_large, cpu_large = measure(url, large, concurrency)
        floor_small = min(floor_once(url, small, concurrency) for _ in range(RUNS))
        floor_large = min(floor_once(url, large, concurrency) for _ in range(RUNS))
    finally:
        server.terminate()
    slope = (wall_large - wall_small) / (large - small)
    ideal = delay_s / concurrency
    start_up = wall_small - small * slope
    cpu = (cpu_large - cpu_small) / (large - small)
    print(f"{small} and {large} requests, concurrency {concurrency}, server delay {delay_s:g} s")
    for count, wall in ((small, wall_small), (large, wall_large)):
        print(f"  {count:>5} requests: {wall:6.2f} s (ideal {count * ideal:.2f} s + start-up)")
    print(f"fixed start-up: {start_up:.2f} s")
    print(
        f"marginal throughput: {1 / slope:.1f} requests/s, ideal {1 / ideal:.1f}: "
        f"ratio {ideal / slope:.2f} (goal >= 0.9)"
    )
    floor = (floor_large[1] - floor_small[1]) / (large - small)
    print(
        f"harness CPU per request: {cpu * 1000:.2f} ms (goal <= 2); the SDK alone "
        f"{floor * 1000:.2f} ms: {cpu / floor:.2f}x the floor"
    )


if __name__ == "__main__":
    main()
