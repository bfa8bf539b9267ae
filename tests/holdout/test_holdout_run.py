"""Runs score the held-out slice and report it in counts; the gate may use it.

A python system whose `style` decides which held-out cases pass: `good` passes
alpha and gamma, `bad` passes beta and gamma, `none` only gamma. Recording with
the key stores the slice's responses sealed; `check --set system.style=…` then
compares a candidate with the baseline on both parts of the suite.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.holdout.test_holdout_helpers import KEY_TEXT, casegate

BOT = """
def answer(case_input, system):
    question = case_input["question"]
    if question == "boom":
        raise RuntimeError("exploded on " + question)
    return system.get("style", "good") + ": " + question
"""
HELD = """
- id: h-alpha
  input: {question: alpha}
  expect: {contains: good}
- id: h-beta
  input: {question: beta}
  expect: {contains: bad}
- id: h-gamma
  input: {question: gamma}
  expect: {contains: gamma}
"""


def _suite(root: Path, *, gate: str = "", holdout: str = "holdout: holdout/s") -> Path:
    (root / "bot.py").write_text(BOT)
    (root / "cases").mkdir(exist_ok=True)
    (root / "cases" / "main.yaml").write_text(
        "- id: r0\n  input: {question: q0}\n  expect: {contains: q0}\n"
        "- id: r1\n  input: {question: q1}\n  expect: {contains: q1}\n"
    )
    config = root / "casegate.yml"
    config.write_text(
        "suite: s\ncases: cases\nsystem: {name: n, provider: python, target: 'bot:answer'}\n"
        f"recordings: recordings\nbaseline: baselines/s.json\n{holdout}\n{gate}"
    )
    return config


@pytest.fixture(scope="module")
def recorded_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A suite with three held-out cases, recorded for the styles good, bad and none, and a
    baseline (style good) that scored the slice once: built once, copied for each test."""
    root = tmp_path_factory.mktemp("holdout-suite")
    _suite(root)
    (root / "held.yaml").write_text(HELD)
    added = casegate("holdout", "add", "held.yaml", cwd=root, key=KEY_TEXT)
    assert added.returncode == 0, added.stderr
    for style in (None, "bad", "none"):  # no style: the system's default, good
        overrides = ["--set", f"system.style={style}"] if style else []
        recorded = casegate("record", *overrides, cwd=root, key=KEY_TEXT)
        assert recorded.returncode == 0, recorded.stderr
    baseline = casegate("baseline", cwd=root, key=KEY_TEXT)
    assert baseline.returncode == 0, baseline.stderr
    return root


@pytest.fixture
def suite(recorded_suite: Path, tmp_path: Path) -> Path:
    """A copy of the recorded suite of its own (the tests change its files)."""
    shutil.copytree(recorded_suite, tmp_path, dirs_exist_ok=True, symlinks=True)
    return tmp_path


def _results(root: Path) -> dict:
    return json.loads((root / ".casegate" / "s-results.json").read_text())


def _set_gate(root: Path, text: str) -> None:
    config = root / "casegate.yml"
    config.write_text(config.read_text() + text)


def test_record_seals_the_slices_responses_and_run_scores_them(suite: Path) -> None:
    assert not list((suite / "recordings").glob("h-*.json"))  # never in the readable folder
    baseline = json.loads((suite / "baselines" / "s.json").read_text())
    held = baseline["holdout"]
    assert held["status"] == "scored"
    assert (held["cases"], held["passed"], held["failed"], held["errors"]) == (3, 2, 1, 0)
    assert held["reads"] == 1 and held["max_reads"] == 20 and held["verdicts"]
    assert [case["id"] for case in baseline["cases"]] == ["r0", "r1"]
    run = casegate("run", "--set", "system.style=none", cwd=suite, key=KEY_TEXT)
    assert run.returncode == 0, run.stderr
    assert "held-out slice: 1/3 pass (33.3%), 2 fail, 0 error(s)" in run.stdout
    assert "scored 2 time(s) since its last rotation" in run.stdout


def test_check_counts_regressions_and_fixes_on_the_slice(suite: Path) -> None:
    finished = casegate("check", "--set", "system.style=bad", "-v", cwd=suite, key=KEY_TEXT)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert (
        "held-out slice: 2/3 pass (66.7%), 1 fail, 0 error(s); on the 3 held-out case(s) both "
        "runs scored: 66.7% → 66.7%, 1 regression(s), 1 fix(es)"
    ) in finished.stdout
    results = _results(suite)
    assert results["holdout"]["passed"] == 2 and results["holdout"]["reads"] == 2
    report = (suite / ".casegate" / "s-report.md").read_text()
    assert "**Held-out slice** (aggregates only: its cases are sealed)" in report
    assert "1 regression(s), 1 fix(es)" in report


def test_the_html_viewer_shows_the_slice_in_counts_and_never_a_held_out_case(
    suite: Path,
) -> None:
    finished = casegate("check", "--set", "system.style=bad", cwd=suite, key=KEY_TEXT)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    viewed = casegate(
        "view", ".casegate/s-results.json", "--baseline", "baselines/s.json",
        "--out", "viewed.html", cwd=suite, key=KEY_TEXT,
    )  # fmt: skip
    assert viewed.returncode == 0, viewed.stderr
    sealed = json.loads((suite / "baselines" / "s.json").read_text())["holdout"]["verdicts"]
    for page in (suite / ".casegate" / "s-report.html", suite / "viewed.html"):
        text = page.read_text()
        assert "held-out slice: 2/3 pass (66.7%), 1 fail, 0 error(s)" in text
        assert "r0" in text and "q0" in text  # the readable cases are all there
        # Neither a held-out id, nor an answer (which repeats its input), nor the sealed
        # verdicts.
        for secret in ("h-alpha", "h-beta", "h-gamma", ": alpha", ": beta", ": gamma", sealed[:40]):
            assert secret not in text, (page.name, secret)


def test_holdout_max_drop_blocks_on_counts_alone(suite: Path) -> None:
    _set_gate(suite, "gate: {holdout_max_drop: 0.1}\n")
    finished = casegate("check", "--set", "system.style=none", cwd=suite, key=KEY_TEXT)
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert (
        "the held-out pass rate fell from 66.7% to 33.3% on the 3 held-out case(s) both runs "
        "scored (1 regression(s), 0 fix(es)), more than holdout_max_drop 10 points"
    ) in finished.stdout
    compared = casegate(
        "compare",
        "baselines/s.json",
        ".casegate/s-results.json",
        "--format",
        "json",
        cwd=suite,
        key=KEY_TEXT,
    )
    report = json.loads(compared.stdout)
    assert report["verdict"] == "block"
    assert report["reasons"][0]["rule"] == "holdout_max_drop"
    assert report["reasons"][0]["cases"] == []
    assert report["holdout"]["regressions"] == 1 and report["holdout"]["shared"] == 3
    within = casegate("check", "--set", "system.style=bad", cwd=suite, key=KEY_TEXT)
    assert within.returncode == 0, within.stdout  # 66.7% → 66.7%: one regression, one fix


def test_without_the_key_the_slice_is_skipped_with_a_notice_never_a_failure(suite: Path) -> None:
    _set_gate(suite, "gate: {holdout_max_drop: 0.0}\n")
    finished = casegate("check", "--set", "system.style=none", cwd=suite)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert (
        "held-out slice skipped: CASEGATE_HOLDOUT_KEY is not set (a fork's pull request has no "
        "secrets"
    ) in finished.stdout
    assert "holdout_max_drop not applied" in finished.stdout
    assert _results(suite)["holdout"]["status"] == "skipped"
    run = casegate("run", cwd=suite)
    assert run.returncode == 0 and "held-out slice skipped" in run.stdout


def test_compare_without_the_key_shows_aggregates_only(suite: Path) -> None:
    casegate("run", "--set", "system.style=bad", cwd=suite, key=KEY_TEXT)
    finished = casegate("compare", "baselines/s.json", ".casegate/s-results.json", cwd=suite)
    assert finished.returncode == 0
    assert (
        "held-out slice: 2/3 pass (66.7%), 1 fail, 0 error(s); not compared case by case: "
        "CASEGATE_HOLDOUT_KEY is not set"
    ) in finished.stdout
    keyed = casegate(
        "compare", "baselines/s.json", ".casegate/s-results.json", cwd=suite, key=KEY_TEXT
    )
    assert "1 regression(s), 1 fix(es)" in keyed.stdout


def test_a_missing_recording_leaves_the_slice_unscored_and_blocks_only_under_the_rule(
    suite: Path,
) -> None:
    finished = casegate("check", "--set", "system.style=new", cwd=suite, key=KEY_TEXT)
    # The readable cases miss their recordings too: record them (without the key), so only
    # the held-out ones are missing.
    assert finished.returncode == 2
    assert casegate("record", "--set", "system.style=new", cwd=suite).returncode == 0
    open_rule = casegate("check", "--set", "system.style=new", cwd=suite, key=KEY_TEXT)
    assert open_rule.returncode == 0, open_rule.stdout + open_rule.stderr
    assert (
        "held-out slice not scored: 3 held-out case(s) (3 sample(s)) have no recording in "
        "holdout/s/recordings.sealed"
    ) in open_rule.stdout
    _set_gate(suite, "gate: {holdout_max_drop: 0.2}\n")
    ruled = casegate("check", "--set", "system.style=new", cwd=suite, key=KEY_TEXT)
    assert ruled.returncode == 1
    assert "the held-out slice could not be scored" in ruled.stdout


def test_a_selection_does_not_score_the_slice(suite: Path) -> None:
    finished = casegate("run", "--case", "r0", cwd=suite, key=KEY_TEXT)
    assert finished.returncode == 0
    assert "held-out slice skipped: a run of a selection (--case/--tag)" in finished.stdout


def test_the_read_count_carries_forward_warns_and_restarts_after_a_rotation(
    suite: Path,
) -> None:
    config = suite / "casegate.yml"
    config.write_text(
        config.read_text().replace("holdout: holdout/s", "holdout: {path: holdout/s, max_reads: 2}")
    )
    # The fixture's baseline scored it once; this one makes two, the check three.
    assert casegate("baseline", cwd=suite, key=KEY_TEXT).returncode == 0
    finished = casegate("check", cwd=suite, key=KEY_TEXT)
    assert "scored 3 time(s) since its last rotation (holdout.max_reads 2)" in finished.stdout
    assert "changes tuned on its aggregate have fitted it by now" in finished.stdout
    assert "casegate holdout rotate --fraction 0.2" in finished.stdout
    rotated = casegate(
        "holdout", "rotate", "--fraction", "0.3", "--seed", "1", cwd=suite, key=KEY_TEXT
    )
    assert rotated.returncode == 0, rotated.stderr
    assert casegate("record", cwd=suite, key=KEY_TEXT).returncode == 0
    after = casegate("check", cwd=suite, key=KEY_TEXT)
    assert "scored 1 time(s) since its last rotation" in after.stdout, after.stdout


def test_an_error_inside_the_slice_is_a_count_and_its_text_stays_inside(tmp_path: Path) -> None:
    _suite(tmp_path)
    (tmp_path / "held.yaml").write_text(
        HELD + "- id: h-boom\n  input: {question: boom}\n  expect: {contains: x}\n"
    )
    assert casegate("holdout", "add", "held.yaml", cwd=tmp_path, key=KEY_TEXT).returncode == 0
    finished = casegate("run", "--mode", "live", cwd=tmp_path, key=KEY_TEXT)
    assert finished.returncode == 0, finished.stderr
    assert "held-out slice: 2/4 pass (50.0%), 1 fail, 1 error(s)" in finished.stdout
    assert "exploded" not in finished.stdout + finished.stderr
    assert "exploded" not in (tmp_path / ".casegate" / "s-results.json").read_text()


def test_the_supervised_run_never_gets_the_key(suite: Path) -> None:
    # A custom check in a readable case: the suite's code, run by the supervised child.
    leak = suite / "seen.txt"
    (suite / "snoop.py").write_text(
        "import os\n"
        f"open({str(leak)!r}, 'a').write(repr(dict(os.environ)))\n"
        "def ok(text, case):\n    return True\n"
    )
    main = suite / "cases" / "main.yaml"
    main.write_text(main.read_text().replace("{contains: q0}", "{contains: q0, check: 'snoop:ok'}"))
    assert casegate("baseline", cwd=suite, key=KEY_TEXT).returncode == 0
    leak.unlink()
    config = suite / "casegate.yml"
    config.write_text(
        config.read_text().replace(
            "holdout: holdout/s", "holdout: {path: holdout/s, key_env: MY_SLICE_KEY}"
        )
    )
    finished = casegate("check", cwd=suite, key=KEY_TEXT, MY_SLICE_KEY=KEY_TEXT)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "held-out slice: 2/3 pass" in finished.stdout  # scored, by the gate's own process
    seen = leak.read_text()
    assert KEY_TEXT not in seen
    assert "CASEGATE_HOLDOUT_KEY" not in seen and "MY_SLICE_KEY" not in seen


def test_validate_and_list_speak_of_the_slice_in_counts(suite: Path) -> None:
    validated = casegate("validate", cwd=suite, key=KEY_TEXT)
    assert validated.returncode == 0, validated.stderr
    assert "held-out slice holdout/s/slice.sealed: 3 case(s) load" in validated.stdout
    without = casegate("validate", cwd=suite)
    assert "not opened: CASEGATE_HOLDOUT_KEY is not set" in without.stdout
    listed = casegate("list", cwd=suite, key=KEY_TEXT)
    assert "held-out slice in holdout/s (sealed: never listed)" in listed.stdout
    assert "h-" not in listed.stdout


def test_a_slice_that_no_longer_loads_is_counted_by_kind(suite: Path) -> None:
    # A suite default that a held-out case cannot take: the message counts, names nothing.
    (suite / "mine.py").write_text("def ok(text, case):\n    return True\n")
    config = suite / "casegate.yml"
    config.write_text(config.read_text() + "defaults: {expect: {check: 'mine:ok'}}\n")
    finished = casegate("run", cwd=suite, key=KEY_TEXT)
    assert finished.returncode == 2
    assert (
        "holdout/s/slice.sealed: 3 of 3 held-out case(s) use a custom check (`check`)"
    ) in finished.stderr
    assert "which ones is not shown" in finished.stderr
    assert "h-" not in finished.stderr and "alpha" not in finished.stderr


def test_the_ruler_lists_slice_changes(tmp_path: Path) -> None:
    _suite(tmp_path)
    (tmp_path / "held.yaml").write_text(HELD)
    assert casegate("holdout", "add", "held.yaml", cwd=tmp_path, key=KEY_TEXT).returncode == 0
    assert casegate("record", cwd=tmp_path, key=KEY_TEXT).returncode == 0
    assert casegate("baseline", cwd=tmp_path, key=KEY_TEXT).returncode == 0
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "base"],
    ):
        subprocess.run(["git", *args], cwd=tmp_path, check=True)
    config = tmp_path / "casegate.yml"
    config.write_text(config.read_text().replace("holdout: holdout/s\n", ""))
    removed = casegate("check", "--base", "main", cwd=tmp_path, key=KEY_TEXT)
    assert removed.returncode == 1, removed.stdout + removed.stderr
    assert "held-out slice: removed (was holdout/s)" in removed.stdout
    # The base's slice is still scored: the pull request cannot drop it.
    assert "held-out slice: 2/3 pass" in removed.stdout
    accepted = casegate(
        "check", "--base", "main", "--accept-ruler-change", cwd=tmp_path, key=KEY_TEXT
    )
    assert accepted.returncode == 0, accepted.stdout


def test_the_gate_process_scores_live_only_against_hosted_providers(tmp_path: Path) -> None:
    from gate.holdout.loading import build_case
    from gate.holdout.scoring import user_code
    from gate.suite.config import load_config

    config = _suite(tmp_path)
    loaded = load_config(config)
    case = build_case("id: x\ninput: {question: q}\nexpect: {contains: q}\n", loaded)
    assert not isinstance(case, str)
    assert "the system is a python one" in (user_code(loaded, [case]) or "")
    config.write_text(
        config.read_text().replace(
            "{name: n, provider: python, target: 'bot:answer'}",
            "{name: n, provider: openai, model: m, message: '{{ question }}'}",
        )
        + "judge: {provider: python, target: 'bot:answer', model: j, prompt_version: 1}\n"
    )
    hosted = load_config(config)
    assert user_code(hosted, [case]) is None  # no held-out case asks the judge
    judged = build_case("id: y\ninput: {question: q}\nexpect: {judge: {rubric: polite}}\n", hosted)
    assert not isinstance(judged, str)
    assert "the judge pin is a python one" in (user_code(hosted, [judged]) or "")


def test_a_held_out_case_keys_its_recordings_on_its_input_files(tmp_path: Path) -> None:
    import hashlib

    from gate.holdout.loading import build_case
    from gate.suite.config import load_config

    loaded = load_config(_suite(tmp_path))
    (tmp_path / "a.txt").write_text("refund")
    text = "id: x\ninput: {question: q}\nexpect: {contains: q}\ninput_files: [%s]\n"
    case = build_case(text % "a.txt", loaded)
    assert not isinstance(case, str)
    assert case.input_file_hashes == {"a.txt": hashlib.sha256(b"refund").hexdigest()}
    assert case.key_input == [{"question": "q"}, case.input_file_hashes]
    # Said in kind, naming nothing of the case (its file's name included).
    assert build_case(text % "../a.txt", loaded) == (
        "name an input file that is missing, unreadable or refused"
    )
