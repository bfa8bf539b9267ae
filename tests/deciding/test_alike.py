"""`casegate gate` and `compare` outside a pull request: a case the candidate lacks blocks,
runs measured differently are refused unless --allow-config-change, a slice judges only
what it ran, and a re-versioned case is set aside as such (gate.deciding.alike)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from tests.conftest import Project, case

BASELINE = "baselines/demo.json"
CASES = [
    case("refund-window", "refund", contains="refund", fields_={"tags": ["returns"]}),
    case("refund-slow", "slow", contains="slow", fields_={"tags": ["returns"]}),
    case("ship-date", "date", contains="date", fields_={"tags": ["shipping"], "critical": True}),
]


@pytest.fixture
def suite(project: Project) -> Project:
    """Three cases and their baseline, written by `casegate baseline`."""
    project.write_cases(CASES)
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    return project


def candidate(*args: str, out: str = "cand.json") -> str:
    assert main(["run", "--mode", "live", "--out", out, "--quiet", *args]) == 0
    return out


def edit(path: str, change: Any) -> None:
    data = json.loads(Path(path).read_text())
    change(data)
    Path(path).write_text(json.dumps(data))


def compared(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["compare", BASELINE, *args, "--format", "json"]) == 0
    found: dict[str, Any] = json.loads(capsys.readouterr().out)
    return found


# --- 1. a case the candidate has no result for ------------------------------------------


def test_a_case_removed_from_the_suite_blocks_until_accepted(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    suite.write_cases([c for c in CASES if c["id"] != "refund-slow"])
    cand = candidate()
    capsys.readouterr()
    assert main(["gate", BASELINE, cand]) == 1
    out = capsys.readouterr().out
    assert out.startswith("BLOCK: demo")
    assert (
        "✗ 1 case(s) of the baseline were removed from the suite since the baseline: accept a "
        "removal made on purpose with --allow-config-change, or refresh the baseline "
        "(`casegate baseline`): refund-slow" in out
    )
    assert "removed: refund-slow" in out
    report = compared(capsys, cand)
    assert (report["verdict"], report["removed"]) == ("block", ["refund-slow"])
    assert [r["rule"] for r in report["reasons"]] == ["removed_cases"]
    # The deletion was deliberate: the override accepts it, and the report says so.
    assert main(["gate", BASELINE, cand, "--allow-config-change"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("SHIP: demo")
    assert (
        "◦ compared under --allow-config-change, although the runs differ: 1 case(s) removed "
        "from the suite: refund-slow" in out
    )
    accepted = compared(capsys, cand, "--allow-config-change")
    assert accepted["allowed_config_changes"] == ["1 case(s) removed from the suite: refund-slow"]


def test_a_case_the_suite_still_defines_but_the_candidate_lacks_always_blocks(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    cand = candidate()
    edit(cand, lambda data: data["cases"].pop(0))  # refund-slow: sorted first
    capsys.readouterr()
    for override in ([], ["--allow-config-change"]):
        assert main(["gate", BASELINE, cand, *override]) == 1
        out = capsys.readouterr().out
        assert (
            "✗ 1 case(s) of the baseline that the suite still defines have no result in the "
            "candidate (an incomplete run): run the whole suite again: refund-slow" in out
        )


def test_without_a_config_at_hand_a_missing_case_blocks_and_the_override_is_its_word(
    suite: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cand = candidate()
    edit(cand, lambda data: data["cases"].pop(0))
    elsewhere = suite.root / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    base, cand = str(suite.root / BASELINE), str(suite.root / cand)
    capsys.readouterr()
    assert main(["gate", base, cand]) == 1
    assert "casegate cannot tell" in capsys.readouterr().out
    assert main(["gate", base, cand, "--allow-config-change"]) == 0
    assert "1 case(s) without a result, taken as removed: refund-slow" in capsys.readouterr().out


# --- 2. runs measured differently --------------------------------------------------------


def test_another_samples_setting_is_refused_unless_allowed_and_then_shown(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    cand = candidate("--set", "samples=3")
    capsys.readouterr()
    for command in ("gate", "compare"):
        assert main([command, BASELINE, cand]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == (
            "casegate: the runs were measured differently (samples changed: 1 → 3), so their "
            "verdicts are not like with like: compare runs of one config, or pass "
            "--allow-config-change to compare them anyway (the report then says what differed)\n"
        )
    assert main(["gate", BASELINE, cand, "--allow-config-change"]) == 0
    out = capsys.readouterr().out
    said = "compared under --allow-config-change, although the runs differ: samples changed: 1 → 3"
    assert f"◦ {said}" in out
    assert "ruler change: samples changed" not in out  # said once, in the head
    assert main(["compare", BASELINE, cand, "--allow-config-change", "--format", "markdown"]) == 0
    assert f"> ⚠️ {said}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("min_pass_rate=0.5", "min_pass_rate changed: 1.0 → 0.5"),
        ("clusters.by=tag", "clusters changed: None → {'by': 'tag'}; the tests group cases"),
    ],
)
def test_another_floor_or_clustering_is_refused_unless_allowed(
    suite: Project, capsys: pytest.CaptureFixture[str], setting: str, said: str
) -> None:
    cand = candidate("--set", setting)
    capsys.readouterr()
    assert main(["gate", BASELINE, cand]) == 2
    assert said in capsys.readouterr().err
    assert main(["gate", BASELINE, cand, "--allow-config-change"]) == 0
    assert said in capsys.readouterr().out


def test_other_looks_of_samples_auto_are_refused_unless_allowed(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    base = candidate("--set", "samples=auto", out="base-auto.json")
    cand = candidate("--set", "samples=auto", "--set", "adaptive.max=12", out="cand-auto.json")
    capsys.readouterr()
    assert main(["gate", base, cand]) == 2
    err = capsys.readouterr().err
    assert "adaptive sampling changed: looks at [4, 8, 12, 16, 20, 24] → [4, 8, 12] samples" in err
    same = candidate("--set", "samples=auto", out="same-auto.json")
    assert main(["gate", base, same]) == 0


def test_changed_checks_and_another_judge_pin_are_refused_naming_them(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    moved = [dict(c) for c in CASES]
    moved[0] = case("refund-window", "refund", contains="ref", fields_={"tags": ["returns"]})
    suite.write_cases(moved)
    cand = candidate()
    pin = {"provider": "openai", "model": "judge-2", "prompt_version": 1, "temperature": 0}
    edit(cand, lambda data: data["config"].update(judge=pin))
    capsys.readouterr()
    assert main(["gate", BASELINE, cand]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "the judge pin changed: none → openai judge-2" in err
    assert "checks changed without a version bump for 1 case(s): refund-window" in err
    assert "Traceback" not in err


# --- 3. a slice ------------------------------------------------------------------------


def test_a_slice_compares_only_the_cases_it_ran_and_says_so(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    cand = candidate("--tag", "returns")
    capsys.readouterr()
    assert main(["compare", BASELINE, cand]) == 2
    assert "the candidate ran --tag returns but the baseline the whole suite" in (
        capsys.readouterr().err
    )
    assert main(["compare", BASELINE, cand, "--allow-config-change"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("SHIP for a slice: demo (live) — 2/2 → 2/2 passed")
    assert "◦ compared 2 of 3 baseline cases: a slice (--tag returns)" in out
    assert "removed" not in out
    report = compared(capsys, cand, "--allow-config-change")
    assert (report["removed"], report["baseline"]["cases"]) == ([], 2)
    assert report["scope"].startswith("compared 2 of 3 baseline cases: a slice")
    assert main(["compare", BASELINE, cand, "--allow-config-change", "--format", "markdown"]) == 0
    assert "### ✅ casegate: **ship** for a slice — demo (live)" in (capsys.readouterr().out)
    # A baseline of the same slice needs no override, and still says what was compared.
    base_slice = candidate("--tag", "returns", out="base-slice.json")
    capsys.readouterr()
    assert main(["gate", base_slice, cand]) == 0
    assert "compared 2 of 2 baseline cases: a slice (--tag returns)" in capsys.readouterr().out


def test_a_slice_missing_one_of_its_own_cases_blocks(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    cand = candidate("--tag", "returns")
    edit(cand, lambda data: data["cases"].pop(0))
    capsys.readouterr()
    assert main(["gate", BASELINE, cand, "--allow-config-change"]) == 1
    out = capsys.readouterr().out
    assert "compared 2 of 3 baseline cases" in out
    assert "run the whole suite again: refund-slow" in out
    assert "ship-date" not in out.split("removed:")[-1]


# --- 4. a re-versioned case ----------------------------------------------------------------


def test_a_version_bump_is_re_versioned_not_a_silent_change_of_checks(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    bumped = [dict(c) for c in CASES]
    bumped[0] = case(
        "refund-window", "refund", contains="ref", fields_={"tags": ["returns"], "version": 2}
    )
    suite.write_cases(bumped)
    cand = candidate()
    capsys.readouterr()
    assert main(["gate", BASELINE, cand]) == 0
    out = capsys.readouterr().out
    assert "re-versioned: refund-window (v1 → v2)" in out
    assert "without a version bump" not in out
    assert main(["compare", BASELINE, cand, "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert "| re-versioned (v1 → v2) | `refund-window` | pass" in markdown
    assert compared(capsys, cand)["changed"] == ["refund-window"]
