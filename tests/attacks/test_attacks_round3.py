"""Round 3 attacks (commit ecab8c6) on the judge-noise fixes of the round before: the
sharded check, repeat asks CI could not get answered, consistency only the pull request
asks for, `samples: auto` under verify. (The same round's attacks on adopting CI's
recordings are answered by the run-bound manifest: tests/produce/test_verified.py.)

Every test asserts the SAFE outcome: a failing test means the attack worked.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.produce import seal
from tests.attacks.test_attacks_judge_noise import (
    _cases,
    _commit,
    _config,
    _judge_key,
    _response,
    _rewrite_judge_entries,
    _set_style,
    plain_passes,
    verified_check,
)
from tests.conftest import Project
from tests.fakes.actions import git, init_repository
from tests.fakes.llm_server import FakeLLMServer, Received, Reply
from tests.judging.test_judge import judge_pin
from tests.produce.test_seal import KEY


def _base_with_consistency(
    project: Project, monkeypatch: pytest.MonkeyPatch, llm_server: FakeLLMServer, **pin: Any
) -> dict[str, Any]:
    llm_server.reply = plain_passes
    judge = judge_pin(llm_server, consistency=3, **pin)
    project.write_config(judge=judge, gate={"unverified_critical": "block"})
    project.write_cases(_cases(critical=True))
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    return judge


# --- B1. the sharded check (`--parts`): repeat asks read where? -------------------------


@pytest.mark.parametrize("forge", [False, True], ids=["honest", "forged"])
def test_a_sharded_pull_request_with_consistency_is_judged_not_refused_or_laundered(
    project: Project,
    monkeypatch: pytest.MonkeyPatch,
    llm_server: FakeLLMServer,
    capsys: pytest.CaptureFixture[str],
    tmp_path_factory: pytest.TempPathFactory,
    forge: bool,
) -> None:
    # The PR's new style really fails the critical `apology` (FAIL every ask). Sharded:
    # each shard job replays its slice, the gate job merges the parts. Safe: exit 1.
    pin = _base_with_consistency(project, monkeypatch, llm_server)
    _set_style(project, "terse")
    assert main(["record", "--quiet"]) == 0
    if forge:
        forged = {_judge_key(pin, "sorry it broke", "terse: sorry it broke", r) for r in (1, 2)}
        assert _rewrite_judge_entries(project, "apology", forged, "PASS: fine") == 2
    _commit(project)
    parts = tmp_path_factory.mktemp("parts")
    for index in (1, 2):
        out = str(parts / f"part{index}.json")
        assert main(["check", "--base", "main", "--quiet", "--shard", f"{index}/2",
                     "--out", out]) == 0  # fmt: skip
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    capsys.readouterr()
    code = main(["check", "--base", "main", "--quiet", "--report", "r.md", "--parts",
                 str(parts / "part1.json"), str(parts / "part2.json")])  # fmt: skip
    err = capsys.readouterr().err
    if forge:
        assert code in (1, 2), (code, err[-2000:])  # safety: never ship, never "noise"
    else:
        # an honest sharded PR is judged (exit 1), not refused for lack of recordings
        assert code == 1, (code, err[-2000:])


# --- B2. repeat asks CI could not get answered, under verify ------------------------------

COUNTING_BOT = """
import itertools
_n = itertools.count()
def answer(case_input, system):
    style = system.get("style", "plain")
    return f"{style}: {case_input['question']} #{next(_n) % 5}"
"""


@pytest.mark.parametrize("repeat_reply", ["I am not sure.", "PASS: fine"])
def test_repeat_asks_that_fail_to_parse_never_turn_a_verified_drop_into_noise(
    project: Project,
    monkeypatch: pytest.MonkeyPatch,
    llm_server: FakeLLMServer,
    capsys: pytest.CaptureFixture[str],
    repeat_reply: str,
) -> None:
    # samples 5; the new style fails every output at the first ask. On output #0 the
    # repeats say PASS (a real flip); on #1..#4 the repeats are unreadable (left out of
    # the count) or, in the control, FAIL. 1 flipped of 1 measured is 100% > limit, but the
    # flip explains one fifth of a five-fifths drop: a regression (exit 1), not noise.
    asked: Counter[str] = Counter()

    def judge(received: Received) -> Reply:
        response = _response(received)
        if "plain:" in response:
            return Reply(text="PASS: acknowledges first")
        asked[response] += 1
        if asked[response] == 1:
            return Reply(text="FAIL: policy first")
        if "#0" in response:
            return Reply(text="PASS: fine")
        return Reply(text=repeat_reply if repeat_reply != "PASS: fine" else "FAIL: still")

    project.write_system(COUNTING_BOT)
    llm_server.reply = plain_passes
    pin = judge_pin(llm_server, consistency=3)
    project.write_config(judge=pin, samples=5, gate={"unverified_critical": "block"})
    project.write_cases(_cases(critical=True)[:1])
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    _set_style(project, "terse")
    assert main(["record", "--quiet"]) == 0
    _commit(project)
    llm_server.reply = judge
    code, err, report = verified_check(monkeypatch, capsys)
    assert "verify: recorded again by CI" in err, err
    assert code in (1, 2), (code, report[:3000], err[-2000:])
    assert "disagrees with itself" not in report


# --- B3. a pull request that adds consistency (and a 0 limit) the base does not have ---------


def test_consistency_only_the_pull_request_asks_for_never_makes_noise(
    project: Project,
    monkeypatch: pytest.MonkeyPatch,
    llm_server: FakeLLMServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    llm_server.reply = plain_passes
    base_pin = judge_pin(llm_server)
    project.write_config(judge=base_pin)
    project.write_cases(_cases(critical=False))
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    config = _config(project)
    config["judge"] = {**base_pin, "consistency": 2, "max_flip_rate": 0.0}
    config["system"]["style"] = "terse"
    project.write_config(**config)
    flips: Counter[str] = Counter()

    def flipping(received: Received) -> Reply:
        flips[_response(received)] += 1
        if "plain:" in _response(received) or flips[_response(received)] > 1:
            return Reply(text="PASS: ok")
        return Reply(text="FAIL: no")

    llm_server.reply = flipping
    assert main(["record", "--quiet"]) == 0
    _commit(project)
    capsys.readouterr()
    code = main(["check", "--base", "main", "--quiet", "--report", "r.md"])
    err = capsys.readouterr().err
    report = Path("r.md").read_text() if Path("r.md").exists() else ""
    assert "disagrees with itself" not in report, report[:2000]
    assert code in (1, 2, 3), (code, err)


# --- B4. samples: auto under verify, one flipping output ----------------------------------


@pytest.mark.parametrize("forge", [False, True], ids=["honest", "forged"])
def test_auto_sampled_verified_drop_with_one_flip_is_a_regression(
    project: Project,
    monkeypatch: pytest.MonkeyPatch,
    llm_server: FakeLLMServer,
    capsys: pytest.CaptureFixture[str],
    forge: bool,
) -> None:
    # samples: auto (start 2, max 4). The new style fails every output; the judge flips on
    # output #0 only. The author adds draws of their own (#2, #3 with PASS verdicts and
    # flipping repeats) beyond what CI re-records at the start. Safe: exit 1 or 2.
    asked: Counter[str] = Counter()

    def judge(received: Received) -> Reply:
        response = _response(received)
        if "plain:" in response:
            return Reply(text="PASS: acknowledges first")
        asked[response] += 1
        if "#0" in response and asked[response] > 1:
            return Reply(text="PASS: fine")
        return Reply(text="FAIL: policy first")

    project.write_system(COUNTING_BOT)
    llm_server.reply = plain_passes
    pin = judge_pin(llm_server, consistency=3)
    project.write_config(judge=pin, samples="auto", adaptive={"start": 2, "max": 4},
                         gate={"unverified_critical": "block"})  # fmt: skip
    project.write_cases(_cases(critical=True)[:1])
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet", "--mode", "record"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    _set_style(project, "terse")
    llm_server.reply = (lambda r: Reply(text="PASS: ok")) if forge else judge
    assert main(["record", "--quiet"]) == 0
    _commit(project)
    llm_server.reply = judge
    code, err, report = verified_check(monkeypatch, capsys)
    assert code in (1, 2), (code, report[:3000], err[-2000:])
