"""Like with like (issue 22 §4.2): when the judge pin differs between the baseline and the
candidate, the baseline's outputs are judged again under the candidate's pin, recorded by
`record` and replayed by `check`, and the report says both sides had one judge
(gate.judging.rejudge)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.cli import main
from tests.conftest import Project, case
from tests.fakes.llm_server import FakeLLMServer, Received, Reply
from tests.judging.test_judge import RUBRIC, judge_pin

OLD, NEW = "judge-model-2025-01-01", "judge-model-2026-01-01"
WITH_NEW = ["--set", f"judge.model={NEW}"]


def two_judges(received: Received) -> Reply:
    """The old judge passes everything; the new one passes only an answer that says sorry."""
    if received.body["model"] == OLD:
        return Reply(text="PASS: the old judge is lenient")
    response = received.last_user_text.split("<response>", 1)[1]
    if "sorry" in response:
        return Reply(text="PASS: says sorry")
    return Reply(text="FAIL: no apology")


def two_judged_cases(project: Project, server: FakeLLMServer) -> None:
    server.reply = two_judges
    project.write_config(judge=judge_pin(server, model=OLD))
    project.write_cases(
        [
            case("apology", "sorry it broke", judge={"rubric": RUBRIC}),
            case("blunt", "policy says no", judge={"rubric": RUBRIC}),
        ]
    )


def test_a_new_judge_pin_scores_the_baseline_too_and_the_report_says_so(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    two_judged_cases(project, llm_server)
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0  # both pass under the lenient judge
    asked = len(llm_server.received)
    # The system is unchanged; only the judge is new. `record` asks it about the
    # candidate's outputs and, for `check`, the baseline's.
    assert main(["record", "--quiet", *WITH_NEW]) == 0
    assert len(llm_server.received) == asked + 4
    assert "recorded for `check`: the baseline's outputs on 2 case(s)" in capsys.readouterr().err
    asked = len(llm_server.received)
    assert main(["check", "--quiet", *WITH_NEW, "--report", "r.md", "--out", "c.json"]) == 0
    assert len(llm_server.received) == asked  # replayed
    markdown = Path("r.md").read_text()
    assert "judged again under this judge pin" in markdown
    assert f"the baseline was judged by openai {OLD}" in markdown
    assert "Regressions (0)" in markdown  # blunt fails on both sides now: unchanged
    assert "Unchanged: 1 pass, 1 fail (`blunt`)" in markdown


def test_without_the_baseline_judged_again_a_new_pin_would_read_as_a_regression(
    project: Project, llm_server: FakeLLMServer
) -> None:
    # The control: the same change compared by results alone keeps the old judge's
    # verdicts on the baseline, and `blunt` then falls (which is why the check re-judges).
    two_judged_cases(project, llm_server)
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    assert main(["record", "--quiet", *WITH_NEW]) == 0
    assert main(["run", "--quiet", *WITH_NEW, "--out", "c.json"]) == 0
    compare = ["compare", "baselines/demo.json", "c.json", "--format", "json", "--out", "v.json"]
    assert main([*compare, "--allow-config-change"]) == 0
    assert json.loads(Path("v.json").read_text())["regressions"] == ["blunt"]


def test_a_replay_missing_the_baselines_new_verdicts_stops_naming_the_case(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    two_judged_cases(project, llm_server)
    assert main(["record", "--quiet"]) == 0
    assert main(["record", "--quiet", *WITH_NEW]) == 0  # no baseline yet: candidate only
    # A baseline of other outputs, judged by the old pin: the new pin never saw them.
    assert main(["record", "--quiet", "--set", "system.style=sorry"]) == 0
    assert main(["baseline", "--quiet", "--set", "system.style=sorry"]) == 0
    capsys.readouterr()
    assert main(["check", "--quiet", *WITH_NEW, "--report", "r.md"]) == 2
    err = capsys.readouterr().err
    assert "no judge recording for 2 case(s)" in err and "apology, blunt" in err, err
    assert "Traceback" not in err
    assert not Path("r.md").exists()  # no verdict on half a comparison


def test_the_same_pin_changes_nothing(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    two_judged_cases(project, llm_server)
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    capsys.readouterr()
    asked = len(llm_server.received)
    assert main(["record", "--quiet"]) == 0
    assert len(llm_server.received) == asked + 2  # the candidate only
    assert "recorded for `check`" not in capsys.readouterr().err
    assert main(["check", "--quiet", "--report", "r.md"]) == 0
    assert "judged again" not in Path("r.md").read_text()


def test_a_pin_read_back_from_the_baseline_file_is_the_same_pin(
    project: Project, llm_server: FakeLLMServer
) -> None:
    # The default temperature is the integer 0; the baseline's copy of the pin, read back
    # from JSON, says 0.0. One judge all the same: nothing is judged again.
    llm_server.reply = two_judges
    pin = judge_pin(llm_server, model=OLD)
    del pin["temperature"]
    project.write_config(judge=pin)
    project.write_cases([case("apology", "sorry it broke", judge={"rubric": RUBRIC})])
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    stored = json.loads((project.root / "baselines" / "demo.json").read_text())
    assert stored["config"]["judge"]["temperature"] == 0  # whatever JSON made of it
    asked = len(llm_server.received)
    assert main(["record", "--quiet"]) == 0
    assert len(llm_server.received) == asked + 1  # the candidate only
    assert main(["check", "--quiet", "--report", "r.md"]) == 0
    assert "judged again" not in Path("r.md").read_text()
