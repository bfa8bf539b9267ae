"""Attacks on the judge-noise and like-with-like features (commit 42e9d7c):
`judge.consistency: K` (gate.judging.consistency, gate.deciding.compare.judge_noise) and the
baseline judged again under the candidate's pin (gate.judging.rejudge).

The attacker is a pull request's author, who controls every file of the change (the
recordings above all), or an outage. Every test asserts the SAFE outcome: a failing test
means the attack worked.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.cli import main
from gate.judging.judge import judge_input, pin_fingerprint
from gate.produce import seal
from gate.produce.recordings import request_key
from gate.suite.judgepin import JudgePin
from tests.conftest import Project, case
from tests.fakes.actions import git, init_repository
from tests.fakes.llm_server import FakeLLMServer, Fault, Received, Reply
from tests.judging.test_judge import RUBRIC, judge_pin

KEY = "k" * 16 + "-recording-key-for-the-tests-0123456789"
OLD, NEW = "judge-model-2025-01-01", "judge-model-2026-01-01"


# --- helpers ---------------------------------------------------------------------------


def _response(received: Received) -> str:
    return received.last_user_text.split("<response>", 1)[1]


def plain_passes(received: Received) -> Reply:
    """The (honest) judge: a `plain:` answer passes, anything else fails, every time."""
    if "plain:" in _response(received):
        return Reply(text="PASS: acknowledges first")
    return Reply(text="FAIL: policy first")


def _commit(project: Project, message: str = "the pull request") -> None:
    git("add", "-A", cwd=project.root)
    git("commit", "-qm", message, cwd=project.root)


def _config(project: Project) -> dict[str, Any]:
    loaded = yaml.safe_load(project.config_path.read_text())
    assert isinstance(loaded, dict)
    return loaded


def _set_style(project: Project, style: str) -> None:
    config = _config(project)
    config["system"]["style"] = style
    project.write_config(**config)


def _rewrite_judge_entries(project: Project, case_id: str, keys: set[str], text: str) -> int:
    """The author's edit: the judge's recorded answers under `keys` say `text`."""
    path = project.root / "recordings" / f"{case_id}.json"
    document = json.loads(path.read_text())
    done = 0
    for key, entry in document["responses"].items():
        if key in keys:
            entry["output"]["text"] = text
            entry["output"].pop("raw", None)
            entry.pop("seal", None)
            done += 1
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    return done


def _judge_key(pin: dict[str, Any], question: str, output: str, repeat: int) -> str:
    fingerprint = pin_fingerprint(JudgePin.model_validate(pin))
    return request_key(fingerprint, judge_input(RUBRIC, {"question": question}, output), repeat)


def _cases(critical: bool) -> list[dict[str, Any]]:
    fields = {"critical": True} if critical else {}
    return [
        case("apology", "sorry it broke", judge={"rubric": RUBRIC}, fields_=fields),
        case("plain", "hi", contains="hi"),
    ]


def verified_check(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    """`check --base main --verify changed` with the key, as CI runs it on the pull request:
    its exit code, what it said on stderr, and its report (empty when none was written)."""
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    capsys.readouterr()
    code = main(["check", "--base", "main", "--quiet", "--verify", "changed", "--report", "r.md"])
    err = capsys.readouterr().err
    return code, err, Path("r.md").read_text() if Path("r.md").exists() else ""


# --- 1. forged repeat asks: a verified regression laundered into "judge noise" ------------


@pytest.mark.parametrize("forge", [False, True], ids=["control", "forged"])
@pytest.mark.parametrize("critical", [True, False], ids=["critical", "noncritical"])
def test_forged_repeat_asks_do_not_launder_a_verified_regression_into_judge_noise(
    project: Project,
    monkeypatch: pytest.MonkeyPatch,
    llm_server: FakeLLMServer,
    capsys: pytest.CaptureFixture[str],
    critical: bool,
    forge: bool,
) -> None:
    # The base asks the judge 3 times and verifies every changed recording (CI re-records
    # the answer and the judge's verdict, and seals them). The PR's new style really fails
    # `apology` (the judge says FAIL, every time). The author edits only the repeat asks
    # (keyed by repeat number 1, 2): verify neither counts nor re-records them, so the
    # replay reads FAIL (CI's, sealed), PASS, PASS (the author's) and calls it noise.
    llm_server.reply = plain_passes
    pin = judge_pin(llm_server, consistency=3)
    project.write_config(judge=pin, gate={"unverified_critical": "block"})
    project.write_cases(_cases(critical))
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)

    _set_style(project, "terse")
    monkeypatch.delenv(seal.KEY_ENV, raising=False)  # the author holds no key
    assert main(["record", "--quiet"]) == 0  # honest: FAIL, FAIL, FAIL
    forged = {_judge_key(pin, "sorry it broke", "terse: sorry it broke", r) for r in (1, 2)}
    if forge:
        assert _rewrite_judge_entries(project, "apology", forged, "PASS: fine") == 2
    _commit(project)

    code, err, report = verified_check(monkeypatch, capsys)
    assert "verify: recorded again by CI" in err, err  # CI did verify the changed case
    assert code == 1, (code, report[:3000], err)


def test_a_judge_that_really_flips_on_a_verified_case_is_still_noise_in_a_pull_request(
    project: Project,
    monkeypatch: pytest.MonkeyPatch,
    llm_server: FakeLLMServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The other side of the fix above: when CI asked every repeat itself (verify, sealed),
    # a judge that answers FAIL, PASS, PASS about the new answer is noise, so the critical
    # case is inconclusive, neither shipped nor blocked as a sure regression.
    asked: Counter[str] = Counter()

    def flips_on_terse(received: Received) -> Reply:
        response = _response(received)
        if "plain:" in response:
            return Reply(text="PASS: acknowledges first")
        asked[response] += 1
        return Reply(text="FAIL: policy first" if asked[response] % 3 == 1 else "PASS: fine")

    llm_server.reply = flips_on_terse
    project.write_config(judge=judge_pin(llm_server, consistency=3))
    project.write_cases(_cases(critical=True))
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    _set_style(project, "terse")
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    assert main(["record", "--quiet"]) == 0
    _commit(project)
    code, err, report = verified_check(monkeypatch, capsys)
    assert "verify: recorded again by CI" in err, err
    assert code == 3, (code, report[:3000])
    assert "Regressed only on a judge that disagrees with itself (1)" in report


# --- 2. one flip among many outputs hides a drop it cannot explain -------------------------

COUNTING_BOT = """
import itertools
_n = itertools.count()
def answer(case_input, system):
    style = system.get("style", "plain")
    return f"{style}: {case_input['question']} #{next(_n) % 5}"
"""


def _flips_on_one_output(received: Received) -> Reply:
    """Honest: the judge passes `plain:`, fails `terse:`; on ONE terse output (#0) its
    answer flips between asks (FAIL, PASS, PASS): a real judge at temperature 0 does."""
    response = _response(received)
    if "plain:" in response:
        return Reply(text="PASS: acknowledges first")
    if "#0" in response:
        _flips_on_one_output.asked["#0"] += 1  # type: ignore[attr-defined]
        first = _flips_on_one_output.asked["#0"] == 1  # type: ignore[attr-defined]
        return Reply(text="FAIL: policy first" if first else "PASS: fine")
    return Reply(text="FAIL: policy first")


@pytest.mark.parametrize("critical", [False, True])
def test_one_flipping_output_of_five_does_not_hide_a_five_of_five_drop(
    project: Project, llm_server: FakeLLMServer, critical: bool
) -> None:
    # No forgery: samples 5, the baseline passes 5/5, the candidate fails 5/5. The judge
    # flips on one of the five candidate outputs (1/5 = 20% > max_flip_rate 0.1), and is
    # sure about the other four: FAIL every time. Even with the flipped output counted as a
    # pass the case fails (1/5), yet the whole case is "judge noise", out of every test.
    _flips_on_one_output.asked = Counter()  # type: ignore[attr-defined]
    llm_server.reply = _flips_on_one_output
    project.write_system(COUNTING_BOT)
    project.write_config(judge=judge_pin(llm_server, consistency=3), samples=5)
    project.write_cases(_cases(critical)[:1])
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    assert main(["record", "--quiet", "--set", "system.style=terse"]) == 0
    code = main(["check", "--quiet", "--set", "system.style=terse", "--out", "c.json",
                 "--report", "r.md"])  # fmt: skip
    candidate = {c["id"]: c for c in json.loads(Path("c.json").read_text())["cases"]}
    assert candidate["apology"]["passes"] == 0
    assert candidate["apology"]["judge_consistency"]["flipped"] == 1
    report = Path("r.md").read_text()
    assert "disagrees with itself" not in report  # 4 of 5 outputs surely fail: a regression
    if critical:
        assert code == 1, (code, report[:3000])
    else:
        # A non-critical regression never blocks alone, and one case is too few units for
        # the suite test to reach its level: inconclusive (exit 3), never a ship.
        assert code == 3 and "regression(s) did not block: apology" in report, report[:3000]


# --- 3. like with like in a pull request: the baseline's new verdicts are the author's -----


@pytest.mark.parametrize("forge", [False, True], ids=["control", "forged"])
def test_a_pull_request_cannot_forge_the_baselines_rejudged_verdicts(
    project: Project,
    monkeypatch: pytest.MonkeyPatch,
    llm_server: FakeLLMServer,
    capsys: pytest.CaptureFixture[str],
    forge: bool,
) -> None:
    # The base baselined under judge OLD, then moved its pin to NEW and ran `casegate record`
    # (which records the baseline's outputs judged again under NEW, as the README says), and
    # did not baseline again. The PR's new style really fails the critical `apology`; CI
    # verifies and seals the candidate's answer and verdict. The author edits only the
    # baseline's re-judged verdict (keyed on the BASELINE's output, which verify never
    # counts) to FAIL: both sides now fail, no regression, and the PR ships.
    llm_server.reply = plain_passes
    old = judge_pin(llm_server, model=OLD)
    project.write_config(judge=old, gate={"unverified_critical": "block"})
    project.write_cases(_cases(critical=True))
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    new = judge_pin(llm_server, model=NEW)
    project.write_config(judge=new, gate={"unverified_critical": "block"})
    assert main(["record", "--quiet"]) == 0  # the candidate's and the baseline's, under NEW
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    # Control: on the base itself, a check ships (nothing changed).
    assert main(["check", "--no-base", "--quiet", "--out", "base.json"]) == 0

    _set_style(project, "terse")
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    assert main(["record", "--quiet"]) == 0  # honest: the new style fails `apology`
    forged = {_judge_key(new, "sorry it broke", "plain: sorry it broke", 0)}
    if forge:
        assert _rewrite_judge_entries(project, "apology", forged, "FAIL: no apology") == 1
    _commit(project)

    code, err, _ = verified_check(monkeypatch, capsys)
    # Fixed by refusing: in a pull request's replay the baseline is never judged again from
    # the pull request's recordings, forged or not; the base must refresh its baseline.
    assert code == 2, (code, err)
    assert "never judged again from the pull request's own recordings" in err, err
    assert not Path("r.md").exists()


# --- 4. an outage while the baseline is judged again -----------------------------------


@pytest.mark.parametrize("mode", ["live", "record"])
def test_a_judge_outage_on_the_rejudged_baseline_never_ships_a_regression(
    project: Project,
    llm_server: FakeLLMServer,
    capsys: pytest.CaptureFixture[str],
    mode: str,
) -> None:
    # The baseline was judged by OLD; the suite now pins NEW. The candidate's style really
    # fails the (non-critical) `apology` under NEW. While NEW is asked about the baseline's
    # outputs it is down: the baseline's sample becomes an error, an errored baseline case
    # counts as "not passed", and the drop disappears from the pass rate.
    llm_server.reply = plain_passes
    project.write_config(judge=judge_pin(llm_server, model=OLD))
    project.write_cases(_cases(critical=False))
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    project.write_config(judge=judge_pin(llm_server, model=NEW))
    llm_server.fail("plain: sorry it broke", *[Fault(500)] * 20)  # only the baseline's
    capsys.readouterr()
    code = main(["check", "--quiet", "--mode", mode, "--set", "system.style=terse",
                 "--out", "c.json", "--report", "r.md"])  # fmt: skip
    err = capsys.readouterr().err
    report = Path("r.md").read_text() if Path("r.md").exists() else ""
    assert code in (1, 2), (code, report, err)  # an outage is never a pass
    assert "Traceback" not in err


def test_a_replayed_rejudge_with_an_unreadable_verdict_never_ships_a_regression(
    project: Project,
    monkeypatch: pytest.MonkeyPatch,
    llm_server: FakeLLMServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The same in replay, by hand: the re-judged verdict on the baseline's output is edited
    # into something that is not one PASS/FAIL line. `record` said a replayed check "stops
    # on them"; it does not: the baseline's case becomes an error and the drop vanishes.
    llm_server.reply = plain_passes
    project.write_config(judge=judge_pin(llm_server, model=OLD))
    project.write_cases(_cases(critical=False))
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    new = judge_pin(llm_server, model=NEW)
    project.write_config(judge=new)
    assert main(["record", "--quiet", "--set", "system.style=terse"]) == 0
    forged = {_judge_key(new, "sorry it broke", "plain: sorry it broke", 0)}
    assert _rewrite_judge_entries(project, "apology", forged, "I am not sure.") == 1
    capsys.readouterr()
    code = main(["check", "--quiet", "--set", "system.style=terse", "--out", "c.json",
                 "--report", "r.md"])  # fmt: skip
    err = capsys.readouterr().err
    assert code in (1, 2), (code, err)
    assert "Traceback" not in err


# --- 5. the pull request's own consistency settings ------------------------------------


@pytest.mark.parametrize(
    "pin_change",
    [{"consistency": 3, "max_flip_rate": 0.0}, {"max_flip_rate": 0.0}, {"consistency": None}],
)
def test_the_pull_requests_own_consistency_settings_are_a_ruler_change(
    project: Project,
    monkeypatch: pytest.MonkeyPatch,
    llm_server: FakeLLMServer,
    capsys: pytest.CaptureFixture[str],
    pin_change: dict[str, Any],
) -> None:
    # The PR changes K or the limit in its own casegate.yml (and records the asks with a
    # judge it scripted to flip), hoping its own limit decides what is noise.
    llm_server.reply = plain_passes
    base_pin = judge_pin(llm_server, consistency=2, max_flip_rate=0.5)
    project.write_config(judge=base_pin)
    project.write_cases(_cases(critical=True))
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    pin = {**base_pin, **pin_change}
    pin = {k: v for k, v in pin.items() if v is not None}
    config = _config(project)
    config["judge"] = pin
    config["system"]["style"] = "terse"
    project.write_config(**config)
    flips = Counter()

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
    assert code in (1, 2), (code, err)  # never ship, never a "noise" inconclusive


# --- 6. results files: impossible judge_consistency figures ------------------------------


def _results_pair(project: Project, llm_server: FakeLLMServer) -> tuple[Path, Path]:
    llm_server.reply = plain_passes
    project.write_config(judge=judge_pin(llm_server, consistency=2))
    project.write_cases(_cases(critical=True))
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    assert main(["record", "--quiet", "--set", "system.style=terse"]) == 0
    main(["run", "--quiet", "--set", "system.style=terse", "--out", "c.json"])
    assert (project.root / "c.json").is_file()
    return project.root / "baselines" / "demo.json", project.root / "c.json"


@pytest.mark.parametrize(
    "forged",
    [
        {"asks": 2, "outputs": -1, "flipped": -1, "max_flip_rate": 0.1},  # rate 100%
        {"asks": 2, "outputs": 1, "flipped": 5, "max_flip_rate": 0.1},  # 5 of 1 flipped
        {"asks": 2, "outputs": 1, "flipped": 1, "max_flip_rate": -1.0},  # a negative limit
        {"asks": 0, "outputs": 1, "flipped": 1, "max_flip_rate": 0.1},  # asked 0 times
        {"asks": 1, "outputs": 1, "flipped": 1, "max_flip_rate": 0.1},  # one ask cannot flip
    ],
)
def test_gate_refuses_impossible_judge_consistency_in_a_results_file(
    project: Project,
    llm_server: FakeLLMServer,
    capsys: pytest.CaptureFixture[str],
    forged: dict[str, Any],
) -> None:
    baseline, candidate = _results_pair(project, llm_server)
    assert main(["gate", str(baseline), str(candidate)]) == 1  # control: a critical regression
    document = json.loads(candidate.read_text())
    for result in document["cases"]:
        if result["id"] == "apology":
            result["judge_consistency"] = forged
    candidate.write_text(json.dumps(document))
    capsys.readouterr()
    code = main(["gate", str(baseline), str(candidate)])
    err = capsys.readouterr().err
    assert code in (1, 2), (code, err)  # an impossible count is no evidence of noise
    assert "Traceback" not in err


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999", '"x"', "[]", "{}"])
def test_unreadable_judge_consistency_numbers_are_one_line_errors(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    baseline, candidate = _results_pair(project, llm_server)
    text = candidate.read_text()
    document = json.loads(text)
    for result in document["cases"]:
        if result["id"] == "apology":
            result["judge_consistency"] = {"asks": 2, "outputs": 1, "flipped": 1,
                                           "max_flip_rate": "@@"}  # fmt: skip
    candidate.write_text(json.dumps(document).replace('"@@"', value))
    capsys.readouterr()
    code = main(["gate", str(baseline), str(candidate)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert code in (1, 2), (code, err)


# --- 7. a baseline whose judge pin is missing or unreadable ------------------------------


@pytest.mark.parametrize("stored", ["absent", "text", "number", "bad-provider", "bad-version"])
def test_a_baseline_with_an_unreadable_judge_pin_is_judged_again_or_refused(
    project: Project,
    llm_server: FakeLLMServer,
    capsys: pytest.CaptureFixture[str],
    stored: str,
) -> None:
    # The baseline's config.judge is gone or garbage. The check must judge it again under
    # the suite's pin (or refuse in one line), and never ship the candidate's regression.
    llm_server.reply = plain_passes
    project.write_config(judge=judge_pin(llm_server))
    project.write_cases(_cases(critical=False))
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    path = project.root / "baselines" / "demo.json"
    document = json.loads(path.read_text())
    value = {"text": "openai", "number": 42, "bad-provider": {"provider": 5},
             "bad-version": {"provider": "openai", "prompt_version": 0}}  # fmt: skip
    if stored == "absent":
        document["config"].pop("judge")
    else:
        document["config"]["judge"] = value[stored]
    path.write_text(json.dumps(document))
    recorded = main(["record", "--quiet", "--set", "system.style=terse"])
    err = capsys.readouterr().err
    assert recorded in (0, 2) and "Traceback" not in err, err  # 2: "expected a mapping"
    code = main(["check", "--quiet", "--set", "system.style=terse", "--out", "c.json"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert code in (1, 2), (code, err)
    if recorded == 2:
        return
    for command in ("compare", "gate"):
        code = main([command, str(path), "c.json", "--allow-config-change"])
        err = capsys.readouterr().err
        assert "Traceback" not in err and code in (0, 1, 2), (command, code, err)


# --- 8. the baseline's stored limit outlives the rule's --------------------------------


def test_the_baselines_stale_flip_limit_does_not_override_the_rules(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # The baseline was made under max_flip_rate 0 (every flip is noise); the suite has
    # since set max_flip_rate 1 (nothing is noise: "In a pull request K and the limit are
    # the base's"). The limit is not part of the pin's fingerprint, so nothing is judged
    # again, and the baseline's own stored limit still calls its one flip noise: the
    # candidate's sure, critical failure reads as inconclusive instead of a block.
    asked: Counter[str] = Counter()

    def judge(received: Received) -> Reply:
        response = _response(received)
        asked[response] += 1
        if "plain:" in response:  # the baseline's answer: PASS, FAIL, PASS
            return Reply(text="FAIL: hm" if asked[response] % 3 == 2 else "PASS: ok")
        return Reply(text="FAIL: policy first")  # the candidate's: FAIL every time

    llm_server.reply = judge
    project.write_config(judge=judge_pin(llm_server, consistency=3, max_flip_rate=0.0))
    project.write_cases(_cases(critical=True))
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    project.write_config(judge=judge_pin(llm_server, consistency=3, max_flip_rate=1.0))
    assert main(["record", "--quiet", "--set", "system.style=terse"]) == 0
    capsys.readouterr()
    code = main(["check", "--quiet", "--set", "system.style=terse", "--out", "c.json"])
    err = capsys.readouterr().err
    assert code == 1, (code, err)
