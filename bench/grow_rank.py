"""How long `casegate add --from-otel … --rank --top 20` takes on a large export.

    .venv/bin/python bench/grow_rank.py [SPANS]      (default 10,000)

Writes, in a temporary folder, a small suite and a synthetic OTLP JSON export of SPANS
GenAI spans (half with the current `gen_ai.input.messages` attributes, half with the older
`gen_ai.content.prompt` events): about one request in ten is a reworded or misspelled
copy of another, some spans failed or were flagged, each has token usage. Then it runs
the command end to end in a child process, as a person would, and prints the wall
seconds. The goal is under 60 s for 10,000 spans.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_VOCABULARY = (
    "order refund parcel delivery address invoice warranty return exchange store credit "
    "card payment subscription cancel damaged missing late tracking courier discount size "
    "colour account password email phone number receipt voucher gift wrap international "
    "customs fee shipping express pickup locker weekend holiday stock restock preorder"
)
WORDS = _VOCABULARY.split()
OPENERS = [
    "can i",
    "how do i",
    "why is my",
    "where is my",
    "what happens to my",
    "is it possible to",
]


def text(attribute: str, value: str) -> dict[str, object]:
    return {"key": attribute, "value": {"stringValue": value}}


def number(attribute: str, value: int) -> dict[str, object]:
    return {"key": attribute, "value": {"intValue": str(value)}}


def question(rng: random.Random) -> str:
    return f"{rng.choice(OPENERS)} {' '.join(rng.sample(WORDS, rng.randint(5, 12)))}?"


def reworded(rng: random.Random, original: str) -> str:
    words = original.rstrip("?").split()
    index = rng.randrange(len(words))
    words[index] = words[index][::-1] if rng.random() < 0.5 else words[index] + "s"
    return " ".join(words) + "?"


def span(rng: random.Random, index: int, asked: str) -> dict[str, object]:
    attributes = [
        text("gen_ai.operation.name", "chat"),
        text("gen_ai.request.model", "gpt-4.1-mini"),
        number("gen_ai.usage.input_tokens", rng.randint(20, 2000)),
        number("gen_ai.usage.output_tokens", rng.randint(5, 400)),
    ]
    answer = f"Answer {index}: " + " ".join(rng.sample(WORDS, 8))
    events: list[dict[str, object]] = []
    if index % 2:
        user = [{"role": "user", "parts": [{"type": "text", "content": asked}]}]
        out = [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
        attributes += [
            text("gen_ai.input.messages", json.dumps(user)),
            text("gen_ai.output.messages", json.dumps(out)),
        ]
    else:
        prompt = json.dumps([{"role": "user", "content": asked}])
        completion = json.dumps([{"role": "assistant", "content": answer}])
        events = [
            {"name": "gen_ai.content.prompt", "attributes": [text("gen_ai.prompt", prompt)]},
            {
                "name": "gen_ai.content.completion",
                "attributes": [text("gen_ai.completion", completion)],
            },
        ]
    if rng.random() < 0.01:
        attributes.append(text("user.feedback", "negative"))
    return {
        "traceId": f"{rng.getrandbits(128):032x}",
        "spanId": f"{index:016x}",
        "name": "chat gpt-4.1-mini",
        "attributes": attributes,
        "events": events,
        "status": {"code": 2, "message": "timeout"} if rng.random() < 0.005 else {},
    }


def export(count: int, seed: int = 7) -> dict[str, object]:
    rng = random.Random(seed)
    asked: list[str] = []
    for _ in range(count):
        if asked and rng.random() < 0.1:
            asked.append(reworded(rng, rng.choice(asked)))
        else:
            asked.append(question(rng))
    spans = [span(rng, index, text_) for index, text_ in enumerate(asked)]
    return {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}]}]}


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    with tempfile.TemporaryDirectory(prefix="casegate-grow-") as folder:
        root = Path(folder)
        (root / "cases").mkdir()
        (root / "casegate.yml").write_text(
            "suite: bench\ncases: cases\n"
            "system: {name: s, provider: python, target: 'bot:answer'}\n"
        )
        (root / "cases" / "seed.yaml").write_text(
            "".join(
                f"- id: seed-{i}\n  input: {{question: {json.dumps(question(random.Random(i)))}}}\n"
                "  expect: {max_words: 100}\n"
                for i in range(200)
            )
        )
        source = root / "traces.json"
        source.write_text(json.dumps(export(count)))
        size = source.stat().st_size / 1e6
        started = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "gate",
                "add",
                "--from-otel",
                str(source),
                "--rank",
                "--top",
                "20",
                "--out",
                str(root / "cases" / "drafts"),
            ],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"casegate add failed ({done.returncode}):\n{done.stderr}")
        drafts = len(list((root / "cases" / "drafts").glob("*.yaml")))
        print(done.stdout.splitlines()[0])
        print(
            f"{count:,} spans ({size:.1f} MB) → {drafts} drafts in {wall:.1f} s (goal: under 60 s)"
        )


if __name__ == "__main__":
    main()
