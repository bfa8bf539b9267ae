"""The floor a replay is measured against: the same work in a plain Python loop.

    python bench/replay_floor.py FOLDER     # a folder bench/replay_speed.py built

It reads the suite's case file, each case's recording, applies the three checks the
benchmark's cases carry (contains, max_words, not_regex) and writes one JSON results
file. No validation, no keying, no statistics: what any harness has to do at least.
It imports nothing from casegate, so its start-up is the interpreter's.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def judge(text: str, expect: dict[str, object]) -> list[dict[str, object]]:
    words = len(text.split())
    found = re.search(str(expect["not_regex"]), text)
    return [
        {"check": "contains", "ok": str(expect["contains"]) in text},
        {"check": "max_words", "ok": words <= int(str(expect["max_words"]))},
        {"check": "not_regex", "ok": found is None},
    ]


def main(folder: Path) -> None:
    results = []
    with (folder / "cases.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            case = json.loads(line)
            with (folder / "recordings" / f"{case['id']}.json").open("rb") as stream:
                recording = json.load(stream)
            (response,) = recording["responses"].values()
            text = response["output"]["text"]
            checks = judge(text, case["expect"])
            passed = all(check["ok"] for check in checks)
            results.append(
                {"id": case["id"], "status": "pass" if passed else "fail", "checks": checks}
            )
    passed_count = sum(1 for result in results if result["status"] == "pass")
    with (folder / "floor.json").open("w", encoding="utf-8") as out:
        json.dump({"cases": len(results), "passed": passed_count, "results": results}, out)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
