"""Live-mode throughput against a loopback OpenAI server that answers after 200 ms.

    .venv/bin/python bench/live_throughput.py                 # 400 requests, concurrency 16
    .venv/bin/python bench/live_throughput.py 800 32 0.1      # requests, concurrency, delay

The server runs in its own process, so the CPU time reported is the harness's
alone: the real `openai` SDK, the retry policy, the checks and the results. The
ideal wall time is requests / concurrency × delay; the goal is within 1.25× of it.
The one-off `import openai` (about 0.7 s here) is reported on its own line.
"""

from __future__ import annotations

import importlib
import json
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gate.cases import load_cases  # noqa: E402
from gate.config import load_config  # noqa: E402
from gate.run import execute  # noqa: E402
from tests.fakes.llm_server import FakeLLMServer  # noqa: E402


def serve(delay_s: float, ready: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    with FakeLLMServer(delay_s=delay_s) as server:
        ready.put(server.url)
        time.sleep(3600)


def main() -> None:
    requests = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    concurrency = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    delay_s = float(sys.argv[3]) if len(sys.argv) > 3 else 0.2
    ready: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    server = multiprocessing.Process(target=serve, args=(delay_s, ready), daemon=True)
    server.start()
    url = ready.get(timeout=30)
    os.environ["OPENAI_API_KEY"] = "sk-bench"
    try:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            (root / "casegate.yml").write_text(
                json.dumps(
                    {
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
                )
            )
            with (root / "cases.jsonl").open("w") as stream:
                for index in range(requests):
                    case = {
                        "id": f"c{index:05d}",
                        "input": {"question": f"q{index}"},
                        "expect": {"contains": "echo", "max_words": 10},
                    }
                    stream.write(json.dumps(case) + "\n")
            loaded = load_config(root / "casegate.yml")
            cases = load_cases([root / "cases.jsonl"])
            # The SDK import is a one-off cost of any process that makes a call; it is
            # timed apart so the figure below is the harness at work, not Python importing.
            import_before = time.perf_counter()
            importlib.import_module("openai")
            import_s = time.perf_counter() - import_before
            cpu_before, wall_before = time.process_time(), time.perf_counter()
            results = execute(loaded, cases, "live", show_progress=False)
            wall = time.perf_counter() - wall_before
            cpu = time.process_time() - cpu_before
    finally:
        server.terminate()
    ideal = requests / concurrency * delay_s
    passed = results.summary.passed
    print(f"{requests} requests, concurrency {concurrency}, server delay {delay_s * 1000:.0f} ms")
    print(f"one-off `import openai`: {import_s:.2f} s (not in the figures below)")
    print(f"wall {wall:.2f} s (ideal {ideal:.2f} s, ratio {wall / ideal:.2f}, goal <= 1.25)")
    print(f"cold, with the import: {wall + import_s:.2f} s, ratio {(wall + import_s) / ideal:.2f}")
    print(f"throughput {requests / wall:.1f} requests/s")
    print(f"harness CPU {cpu:.2f} s total, {cpu / requests * 1000:.2f} ms per request")
    print(f"cases passed {passed}/{requests}")


if __name__ == "__main__":
    main()
