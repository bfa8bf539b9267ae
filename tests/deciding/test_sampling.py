"""The report states the sampling behind each verdict, and labels a regression that rests on
one sample of a system that is not deterministic (gate.deciding.sampling)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.cli import main
from gate.deciding.sampling import SINGLE_SAMPLE
from gate.results import RunResults, write_results
from tests.conftest import Project, case
from tests.factories import result, run, sampled

LABEL = "1 sample: may be noise, run with samples ≥ 5 or auto"


def _files(tmp_path: Path, baseline: RunResults, candidate: RunResults) -> list[str]:
    paths = [tmp_path / "baseline.json", tmp_path / "candidate.json"]
    write_results(baseline, paths[0])
    write_results(candidate, paths[1])
    return [str(path) for path in paths]


def _compare(capsys: pytest.CaptureFixture[str], files: list[str], fmt: str) -> str:
    capsys.readouterr()
    assert main(["compare", *files, "--format", fmt]) == 0
    return capsys.readouterr().out


def _provider(results: RunResults, provider: str) -> RunResults:
    results.config["system"]["provider"] = provider
    return results


def test_the_label_is_the_issues_words() -> None:
    assert SINGLE_SAMPLE == LABEL


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_regression_on_one_sample_of_a_model_is_labelled_everywhere(
    provider: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # no casegate.yml here: the files alone
    before = _provider(run([result("a", critical=True), result("b")]), provider)
    after = _provider(run([result("a", "fail", critical=True), result("b", "fail")]), provider)
    files = _files(tmp_path, before, after)
    text = _compare(capsys, files, "text")
    assert f"sampling: 1 sample per case; the system is not deterministic (provider {provider}" in (
        text
    )
    assert "2 of 2 regression(s) rest on one sample each and may be noise" in text
    assert f"  a [critical] [{LABEL}]: contains" in text
    markdown = _compare(capsys, files, "markdown")
    assert f"| ⚠️ _{LABEL}_ · contains" in markdown
    found = json.loads(_compare(capsys, files, "json"))["sampling"]
    assert found["deterministic"] is False
    assert found["single_sample_regressions"] == ["a", "b"]
    # The verdict is the gate rule's still: a label, never a pass.
    assert main(["gate", *files]) == 1


def test_a_plain_python_system_is_taken_as_deterministic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    files = _files(tmp_path, run([result("a")]), run([result("a", "fail")]))
    text = _compare(capsys, files, "text")
    assert "sampling: 1 sample per case; the system is deterministic (a python system" in text
    assert LABEL not in text
    assert json.loads(_compare(capsys, files, "json"))["sampling"]["deterministic"] is True


def test_a_python_system_naming_a_model_or_disagreeing_with_itself_is_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    after = run([result("a", "fail")])
    after.cases[0].outputs[0].model = "<b>gpt-x</b> @team"
    text = _compare(capsys, _files(tmp_path, run([result("a")]), after), "text")
    assert "not deterministic (its outputs name a model, <b>gpt-x</b> @team)" in text
    markdown = _compare(capsys, _files(tmp_path, run([result("a")]), after), "markdown")
    assert "<b>" not in markdown and "@team" not in markdown  # the model name is escaped
    # Samples of one case that disagree show the system varies: a 1-sample regression of it
    # is labelled, a repeated one is not.
    before = run([sampled("a", 5, 5), sampled("b", 1, 1)])
    after = run([sampled("a", 3, 5), sampled("b", 0, 1)])
    text = _compare(capsys, _files(tmp_path, before, after), "text")
    assert "the system is not deterministic (samples of case a disagreed)" in text
    assert "1–5 samples per case (3.0 on average)" in text


def test_a_check_states_its_sampling_under_samples_auto(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_system(
        "def answer(case_input, system):\n"
        "    return {'text': case_input['question'], 'model': 'stand-in'}\n"
    )
    project.write_config(samples="auto", adaptive={"start": 2, "step": 2, "max": 4})
    project.write_cases([case("greet", "hello", contains="hello")])
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["check", "--mode", "live", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "sampling: baseline samples: auto, 12 samples per case, candidate samples: auto, " in (
        out
    )
    assert "not deterministic (its outputs name a model, stand-in)" in out
