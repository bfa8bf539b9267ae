"""gate/judging/trust.py through the CLI: a calibration is held to the suite's bar
(`calibration:`), and one made on another system under test is reported stale."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.cli import main
from gate.judging.trust import below_bar
from gate.suite.sections import CalibrationBar
from tests.conftest import Project
from tests.fakes.llm_server import FakeLLMServer, Received, Reply
from tests.judging.test_judge import JUDGED, grading_judge, judge_pin, write_labels

#: four labels the grading judge agrees with: it passes what says sorry, fails the rest
AGREED = [
    ("apology", "sorry, that is on us", "pass"),
    ("apology", "no.", "fail"),
    ("blunt", "so sorry", "pass"),
    ("blunt", "policy is policy", "fail"),
]


def _judged(project: Project, server: FakeLLMServer, **config: Any) -> None:
    project.write_config(judge=judge_pin(server), **config)
    project.write_cases(JUDGED)


def test_a_calibration_on_too_few_labels_is_below_the_default_bar(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.reply = grading_judge
    _judged(project, llm_server)
    labels = write_labels(project.root / "labels.jsonl", AGREED)
    assert main(["judge", "calibrate", str(labels), "--mode", "record"]) == 1
    out = capsys.readouterr().out
    assert "agreement: 100%" in out
    assert "4 labels judged, fewer than min_labels 30" in out
    assert "kappa" not in out.split("below the suite's bar")[1]  # a kappa of 1 meets it


def test_the_suites_bar_decides_and_a_met_bar_says_so(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.reply = grading_judge
    _judged(project, llm_server, calibration={"min_labels": 4, "min_agreement": 0.9})
    labels = write_labels(project.root / "labels.jsonl", AGREED)
    assert main(["judge", "calibrate", str(labels), "--mode", "record"]) == 0
    assert "meets the suite's bar (`calibration:`)" in capsys.readouterr().out
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    assert main(["check", "--quiet", "--report", "same.md"]) == 0
    same = Path("same.md").read_text()
    assert "last calibrated" in same
    assert "below the suite's bar" not in same
    assert "system under test changed" not in same


def test_a_calibration_made_on_another_system_is_reported_stale(
    project: Project, llm_server: FakeLLMServer
) -> None:
    llm_server.reply = grading_judge
    _judged(project, llm_server, calibration={"min_labels": 4})
    labels = write_labels(project.root / "labels.jsonl", AGREED)
    assert main(["judge", "calibrate", str(labels), "--mode", "record"]) == 0
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    assert main(["record", "--quiet", "--set", "system.style=loud"]) == 0
    assert main(["check", "--quiet", "--set", "system.style=loud", "--report", "r.md"]) != 2
    report = Path("r.md").read_text()
    assert "the system under test changed since the judge's last calibration" in report


def test_a_bar_that_cannot_be_met_is_a_config_error(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    _judged(project, llm_server, calibration={"min_labels": 0})
    assert main(["validate"]) == 2
    err = capsys.readouterr().err
    assert "casegate.yml" in err and "calibration.min_labels" in err
    assert "Traceback" not in err


def test_figures_a_calibration_file_does_not_hold_are_never_taken_as_met() -> None:
    """The calibration file is read from the base tree, but it is a file: a missing or
    garbled figure is 'not measured', which does not meet a bar that asks for it."""
    bar = CalibrationBar()
    assert below_bar({"labels": 40, "judged": "40", "kappa": None}, bar) == [
        "no labels judged, fewer than min_labels 30",
        "labels: kappa no, below min_kappa 0.6",
        "labels: the false-pass rate is unmeasured (no label where the person chose against "
        "the output): label some failures",
    ]
    met = {"labels": 40, "judged": 40, "kappa": 0.8, "false_pass_rate": 0.05}
    assert below_bar(met, bar) == []
    assert below_bar({**met, "kappa": True}, bar) == ["labels: kappa no, below min_kappa 0.6"]


# --- self-consistency: the same output asked K times (gate/judging/consistency.py) -------


def _flipping_judge() -> Any:
    """Passes what says sorry, fails the rest, except "so sorry", which it passes and
    fails in turn: one output in four flips."""
    asked: dict[str, int] = {}

    def reply(received: Received) -> Reply:
        response = received.last_user_text.split("<response>", 1)[1]
        if "so sorry" in response:
            asked["so sorry"] = asked.get("so sorry", 0) + 1
            return Reply(text="PASS: fine" if asked["so sorry"] % 2 else "FAIL: not sure")
        return grading_judge(received)

    return reply


def test_a_judge_that_disagrees_with_itself_is_measured_and_called_noisy(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.reply = _flipping_judge()
    _judged(project, llm_server, calibration={"min_labels": 4})
    config = yaml.safe_load(project.config_path.read_text())
    config["judge"]["consistency"] = 3
    project.config_path.write_text(yaml.safe_dump(config))
    labels = write_labels(project.root / "labels.jsonl", AGREED)
    assert main(["judge", "calibrate", str(labels), "--mode", "record"]) == 1
    out = capsys.readouterr().out
    assert "self-consistency: asked 3 times, flipped on 1 of 4 outputs (25%)" in out
    assert "the judge disagrees with itself on 25% of outputs asked 3 times, above " in out
    assert len(llm_server.received) == 12  # four labels, three asks each
    stored = json.loads((project.root / "demo.judge-calibration.json").read_text())
    [flipped] = stored["consistency"]["flipped_outputs"]
    assert (flipped["case"], flipped["line"]) == ("blunt", 3)
    # The asks run in parallel: which of them the stand-in failed is not fixed.
    assert sorted(flipped["verdicts"].split(",")) == ["fail", "pass", "pass"]
    # Each ask is its own recording: the replay asks nobody and measures the same.
    assert main(["judge", "calibrate", str(labels)]) == 1
    assert len(llm_server.received) == 12
    assert "flipped on 1 of 4 outputs (25%)" in capsys.readouterr().out
    # Reports quote it, and say the judge is noisy.
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    assert main(["check", "--quiet", "--report", "r.md"]) == 0
    report = Path("r.md").read_text()
    assert "self-consistency: asked 3 times, flipped on 1 of 4 outputs (25%)" in report
    assert "the judge disagrees with itself on 25% of outputs" in report


def test_a_steady_judge_meets_the_bar_with_its_consistency_shown(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.reply = grading_judge
    _judged(project, llm_server, calibration={"min_labels": 4})
    config = yaml.safe_load(project.config_path.read_text())
    config["judge"] |= {"consistency": 2, "max_flip_rate": 0}
    project.config_path.write_text(yaml.safe_dump(config))
    labels = write_labels(project.root / "labels.jsonl", AGREED)
    assert main(["judge", "calibrate", str(labels), "--mode", "record"]) == 0
    out = capsys.readouterr().out
    assert "self-consistency: asked 2 times, flipped on 0 of 4 outputs (0%)" in out
    assert "meets the suite's bar" in out


def test_outputs_the_judge_could_not_judge_every_time_are_left_out() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from gate.judging.consistency import measure

    class Label:
        def __init__(self, case_id: str, line: int) -> None:
            self.case, self.output, self.line = type("C", (), {"id": case_id})(), "x", line

    labels = [Label("a", 1), Label("b", 2), Label("c", 3)]
    answers = {("a", 1): True, ("b", 1): None, ("c", 1): False}
    with ThreadPoolExecutor(2) as pool:
        found = measure(
            labels, [True, True, True], 2, lambda lb, r: answers[lb.case.id, r], pool, 0.1
        )
    assert (found["outputs"], found["errors"], found["flipped"]) == (2, 1, 1)
    assert found["flip_rate"] == 0.5


# --- a calibration file is a file: what an edit of it can and cannot do ------------------


def test_a_file_that_says_it_holds_no_pointwise_label_does_not_hide_its_figures() -> None:
    """An independent attack set "labels": 0 to skip the pointwise figures: a run that
    judged outputs one by one holds them to the bar all the same."""
    forged = {"labels": 0, "judged": 40, "kappa": 0.21, "false_pass_rate": 0.45}
    short = below_bar(forged, CalibrationBar(), pointwise=True)
    assert "labels: kappa 0.21, below min_kappa 0.6" in short
    assert below_bar({"labels": 0}, CalibrationBar()) != []  # no figures of any kind


def test_a_calibration_that_names_no_system_is_reported() -> None:
    from gate.judging.trust import system_warning

    warning = system_warning({"kappa": 0.9}, {"provider": "python", "target": "m:f"})
    assert warning is not None and "does not name the system under test" in warning


def test_figures_of_the_wrong_type_read_as_not_measured_and_never_crash() -> None:
    from gate.judging.calibration import judge_lines

    pin = {"provider": "openai", "model": "judge-model"}
    stored = {"schema": "casegate.calibration/1", "kappa": "high", "agreement": [1], "labels": 3}
    info, warnings = judge_lines(pin, True, stored)
    assert "kappa n/a, agreement n/a" in info[0]
    assert any("below the suite's bar" in warning for warning in warnings)
