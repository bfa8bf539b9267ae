"""Attacks on the replayed check (issue 21): the recordings a replayed `casegate check` reads itself
(gate.deciding.recheck.snapshot, gate.pipeline.replay) — holes, duplicates, links,
huge files, another system's keys, judge verdicts for another text.

Every test asserts the SAFE outcome (exit 2, or a block): a failing test means the
attack worked.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.cli import main
from gate.results import read_results
from tests.conftest import Project, case

PASSING = "hello there"


def _document(project: Project, case_id: str) -> dict[str, Any]:
    return json.loads((project.root / "recordings" / f"{case_id}.json").read_text())


def _write(project: Project, case_id: str, document: dict[str, Any] | str) -> Path:
    path = project.root / "recordings" / f"{case_id}.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document, indent=2))
    return path


def _outputs(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The system's entries (not the judge's or a service's), by key."""
    return {
        key: entry
        for key, entry in document["responses"].items()
        if isinstance(entry, dict) and entry.get("system") == "echo"
    }


def _check(capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["check", "--quiet", "--out", "c.json"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.fixture
def fixed(project: Project) -> Project:
    project.write_config(samples=3)
    project.write_cases(
        [
            case("crit", "hi", contains="hi", fields_={"critical": True}),
            case("other", "yo", contains="yo"),
        ]
    )
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    return project


def _fail_all(project: Project, case_id: str) -> None:
    document = _document(project, case_id)
    for entry in _outputs(document).values():
        entry["output"]["text"] = "bye"
    _write(project, case_id, document)


def test_control_a_regressed_critical_case_blocks(
    fixed: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    _fail_all(fixed, "crit")
    code, out = _check(capsys)
    assert code == 1, out


def test_a_missing_middle_sample_is_exit_2_not_judged_on_the_rest(
    fixed: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """The failing sample 1 of a critical case dropped from its file: the rest pass."""
    document = _document(fixed, "crit")
    entries = _outputs(document)
    one = next(key for key, entry in entries.items() if entry["sample"] == 1)
    entries[one]["output"]["text"] = "bye"
    del document["responses"][one]
    _write(fixed, "crit", document)
    code, out = _check(capsys)
    assert code == 2, out
    assert "no recording for 1 case(s) (2 sample(s))" in out


def test_a_recording_naming_a_key_twice_is_exit_2(
    fixed: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """json.loads keeps the last of two equal keys, a reader of the diff sees the first."""
    _fail_all(fixed, "crit")
    text = (fixed.root / "recordings" / "crit.json").read_text()
    document = _document(fixed, "crit")
    key, entry = next(iter(_outputs(document).items()))
    passing = json.dumps({**entry, "output": {**entry["output"], "text": "hi"}})
    # The same key again, first, with a passing answer.
    text = text.replace('"responses": {', f'"responses": {{\n    "{key}": {passing},', 1)
    _write(fixed, "crit", text)
    code, out = _check(capsys)
    assert code == 2, out
    assert "appears twice" in out


def test_a_recording_linked_to_another_cases_file_gives_nothing_of_it(
    fixed: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    _fail_all(fixed, "crit")
    path = fixed.root / "recordings" / "crit.json"
    path.unlink()
    os.symlink("other.json", path)
    code, out = _check(capsys)
    assert code == 2, out  # other's keys are another input's: none of crit's is there


def test_a_recording_linked_to_a_device_or_a_file_outside_is_exit_2_and_quotes_nothing(
    fixed: Project, capsys: pytest.CaptureFixture[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    secret = tmp_path_factory.mktemp("outside") / "secret.json"
    secret.write_text('{"token": "ghs_attack21secretvalue"}')
    for target in ("/dev/zero", str(secret)):
        path = fixed.root / "recordings" / "crit.json"
        path.unlink()
        os.symlink(target, path)
        code, out = _check(capsys)
        assert code == 2, out
        assert "ghs_attack21secretvalue" not in out


def test_recordings_of_the_old_system_do_not_answer_the_new_one(
    fixed: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pull request changes the system (a `style` param) and keeps the recordings."""
    data = yaml.safe_load(fixed.config_path.read_text())
    data["system"]["style"] = "terse"
    fixed.config_path.write_text(yaml.safe_dump(data, sort_keys=False))
    code, out = _check(capsys)
    assert code == 2, out
    assert "no recording for 2 case(s)" in out


def test_entries_keyed_for_other_sample_numbers_do_not_fill_a_hole(
    fixed: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """Sample 2's key deleted; its entry kept under a made-up key with sample: 2."""
    document = _document(fixed, "crit")
    entries = _outputs(document)
    two = next(key for key, entry in entries.items() if entry["sample"] == 2)
    document["responses"]["0" * 24] = document["responses"].pop(two)
    _write(fixed, "crit", document)
    code, out = _check(capsys)
    assert code == 2, out


# --- samples: auto --------------------------------------------------------------------


@pytest.fixture
def auto(project: Project) -> Project:
    project.write_config(samples="auto")
    project.write_cases(
        [
            case("crit", "hi", contains="hi", fields_={"critical": True}),
            *[case(f"o{n}", f"yo {n}", contains="yo") for n in range(6)],
        ]
    )
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    return project


def test_an_auto_case_with_a_hole_in_its_first_round_is_exit_2(
    auto: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """Samples 1-3 fail; sample 1 removed: the unbroken prefix is sample 0 alone, and
    the rounds' first look wants 4."""
    document = _document(auto, "crit")
    entries = _outputs(document)
    for key, entry in entries.items():
        if entry["sample"] in (1, 2, 3):
            entry["output"]["text"] = "bye"
        if entry["sample"] == 1:
            del document["responses"][key]
    _write(auto, "crit", document)
    code, out = _check(capsys)
    assert code == 2, out


def test_an_auto_case_cut_to_its_prefix_keeps_its_failing_samples(
    auto: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every sample past the 4th deleted: the first look's 4 samples (3 failing) decide."""
    document = _document(auto, "crit")
    for key, entry in _outputs(document).items():
        if entry["sample"] >= 4:
            del document["responses"][key]
        elif entry["sample"] >= 1:
            entry["output"]["text"] = "bye"
    _write(auto, "crit", document)
    code, out = _check(capsys)
    assert code in (1, 2), out
    if code == 1:
        assert read_results(auto.root / "c.json").case_map()["crit"].status == "fail"


# --- the pinned judge's recorded verdicts ---------------------------------------------

JUDGE = "def grade(asked, system):\n    return 'PASS: fine' if 'hi' in asked['output'] else 'FAIL: no'\n"


@pytest.fixture
def judged(project: Project) -> Project:
    module = f"jdg_{project.module}"
    project.write_text(f"{module}.py", JUDGE)
    project.write_config(judge={"provider": "python", "target": f"{module}:grade"})
    project.write_cases(
        [
            case("crit", "hi", judge={"rubric": "greets"}, fields_={"critical": True}),
            case("other", "yo", contains="yo"),
        ]
    )
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    return project


def test_a_judge_verdict_recorded_for_another_text_does_not_judge_the_new_one(
    judged: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """The answer changes; the judge's PASS for the old text stays, none for the new."""
    document = _document(judged, "crit")
    for entry in _outputs(document).values():
        entry["output"]["text"] = "bye"
    _write(judged, "crit", document)
    code, out = _check(capsys)
    assert code == 2, out
    assert "no judge recording for 1 case(s)" in out


def test_a_judge_verdict_that_is_not_one_line_is_never_a_pass(
    judged: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    document = _document(judged, "crit")
    for entry in document["responses"].values():
        if entry.get("system") == "judge":
            entry["output"]["text"] = "PASS: fine\nPASS: really"
    _write(judged, "crit", document)
    code, out = _check(capsys)
    assert code != 0, out
    assert read_results(judged.root / "c.json").case_map()["crit"].status == "error"
