"""Building a held-out slice in a test, as `casegate holdout add` and `record` would leave it.

Shared by the tests/holdout/test_holdout_*.py files: a slice sealed with a known key, whose
recordings answer each case for the systems of the configs given (so replay finds
them without running a system the workspace may not hold).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from gate.holdout import keys
from gate.holdout.casefiles import case_text
from gate.holdout.scoring import prepare
from gate.holdout.store import (
    SealedRecordings,
    Slice,
    location_of,
    new_rotation,
    read_recordings,
    read_slice,
    write_recordings,
    write_slice,
)
from gate.outputs import Output
from gate.produce.recordings import request_key, system_fingerprint
from gate.suite.config import load_config

#: a fixed key, so a test can say which key sealed what
KEY = keys.HoldoutKey(bytes(range(32)))
KEY_TEXT = KEY.text()
OTHER_KEY = keys.HoldoutKey(bytes(range(1, 33)))


def seal_slice(
    configs: Sequence[Path],
    cases: Sequence[Mapping[str, Any]],
    outputs: Mapping[str, str | None] | Sequence[Mapping[str, str | None]],
    *,
    key: keys.HoldoutKey = KEY,
    rotation: int = 0,
    cases_too: bool = True,
) -> None:
    """Seal `cases` into the slice the first config declares, with a recorded answer
    `outputs[id]` (None: no recording) for the system of every config given (a list:
    one mapping per config). `cases_too=False` re-seals the recordings only."""
    answers = [outputs] * len(configs) if isinstance(outputs, Mapping) else list(outputs)
    first = load_config(configs[0])
    location = location_of(first)
    assert location is not None, "the config declares no holdout"
    sliced = Slice(
        [case_text(case) for case in cases],
        new_rotation(rotation, "2026-11-30T00:00:00+00:00"),
        [{"at": "2026-11-30T00:00:00+00:00", "action": "add", "moved_in": len(cases)}],
    )
    if cases_too:
        write_slice(location, key, sliced)
    store = SealedRecordings({}, location.recordings_shown)
    for config, answer in zip(configs, answers, strict=True):
        loaded = load_config(config)
        resolved = loaded.resolved_system()
        fingerprint = system_fingerprint(resolved)
        # As the slice is scored (gate.holdout.scoring.samples_of): `samples: auto` takes
        # adaptive.start samples of each held-out case.
        configured = loaded.config.samples
        fixed = configured if isinstance(configured, int) else loaded.config.adaptive.start
        for case in cases:
            text = answer.get(str(case["id"]))
            if text is None:
                continue
            samples = int(case.get("samples", fixed))
            for index in range(samples):
                store.put(
                    str(case["id"]),
                    request_key(fingerprint, case["input"], index),
                    # Finished answers with usage: suite defaults (finish_reason, a token
                    # budget) apply to held-out cases as to every case.
                    Output(
                        text=text,
                        latency_ms=5.0,
                        model="m",
                        stop_reason="stop",
                        input_tokens=20,
                        output_tokens=10,
                    ),
                    system=resolved,
                    fingerprint=fingerprint,
                    sample=index,
                )
    write_recordings(location, key, store)


def casegate(
    *args: str, cwd: Path, key: str | None = None, **variables: str
) -> subprocess.CompletedProcess[str]:
    """`python -m gate ARGS` in `cwd`, with CASEGATE_HOLDOUT_KEY set to `key` (or unset)."""
    env = {k: v for k, v in os.environ.items() if k != "CASEGATE_HOLDOUT_KEY"}
    env.update(variables)
    if key is not None:
        env["CASEGATE_HOLDOUT_KEY"] = key
    return subprocess.run(
        [sys.executable, "-m", "gate", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        check=False,
        timeout=120,
    )


def held_case(case_id: str, question: str, **expect: Any) -> dict[str, Any]:
    return {"id": case_id, "input": {"question": question}, "expect": expect}


# --- the helper itself ---------------------------------------------------------------


def test_a_sealed_slice_opens_with_its_key_and_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "c.yaml").write_text(
        "- id: a\n  input: {question: q}\n  expect: {contains: q}\n"
    )
    config = tmp_path / "casegate.yml"
    config.write_text(
        "suite: s\ncases: cases\nsystem: {name: n, provider: python, target: 'm:f'}\n"
        "holdout: holdout/s\n"
    )
    seal_slice([config], [held_case("h1", "hq", contains="yes")], {"h1": "yes it is"})
    loaded = load_config(config)
    location = location_of(loaded)
    assert location is not None
    assert len(read_slice(location, KEY).cases) == 1
    assert read_recordings(location, KEY).responses == 1
    monkeypatch.setenv("CASEGATE_HOLDOUT_KEY", KEY_TEXT)
    prepared = prepare(loaded, mode="replay")
    assert prepared is not None and prepared.skip is None
    assert [case.id for case in prepared.cases] == ["h1"]
