"""The floor for live mode: the `openai` SDK alone, the same requests, the same threads.

    .venv/bin/python bench/live_floor.py URL REQUESTS CONCURRENCY

Sends REQUESTS chat completions to URL (a loopback server) from a pool of CONCURRENCY
threads with the official SDK and nothing else, and prints the wall and CPU seconds
(user + system) of this process as JSON. bench/live_throughput.py runs it beside
`casegate run --mode live` so casegate's CPU per request is a ratio to it.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from concurrent.futures import ThreadPoolExecutor


def main() -> None:
    url, requests, concurrency = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    import openai

    started = time.perf_counter()
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-bench", max_retries=0)

    def ask(index: int) -> str | None:
        answer = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"q{index}"}]
        )
        return answer.choices[0].message.content

    with ThreadPoolExecutor(concurrency) as pool:
        texts = list(pool.map(ask, range(requests)))
    if not all(texts):
        raise SystemExit("an answer was empty")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.perf_counter() - started
    print(json.dumps({"wall": wall, "cpu": usage.ru_utime + usage.ru_stime}))


if __name__ == "__main__":
    main()
