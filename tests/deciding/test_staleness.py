"""A stale baseline says so, at the top of every report, and never blocks."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from pathlib import Path

import pytest
import yaml

from gate.cli import main
from gate.deciding.compare import compare
from gate.deciding.rules import decide
from gate.deciding.staleness import BASE_CONFIG, baseline_warnings, config_differences
from gate.errors import ResultsError
from gate.reporting import report
from gate.results import SCHEMA, read_results
from gate.suite.config import load_config
from tests.conftest import Project, case
from tests.factories import result, run
from tests.fakes.actions import Runner, acted_on, git, init_repository

NOW = dt.datetime(2026, 6, 30, 12, tzinfo=dt.UTC)


@pytest.fixture
def suite(project: Project) -> Project:
    """A project with a baseline written by `casegate baseline`."""
    project.write_cases([case("greet", "hello", contains="hello")])
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    return project


def baseline_of(project: Project) -> Path:
    return project.root / "baselines" / "demo.json"


def rewrite(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def edit_config(project: Project, **changes: object) -> None:
    data = yaml.safe_load(project.config_path.read_text())
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    project.config_path.write_text(yaml.safe_dump(data, sort_keys=False))


# --- what counts as stale ----------------------------------------------------------------


def test_a_fresh_baseline_of_this_config_has_nothing_to_say(suite: Project) -> None:
    baseline = read_results(baseline_of(suite))
    assert baseline_warnings(baseline, load_config(suite.config_path)) == []


@pytest.mark.parametrize(
    ("written", "limit", "warned"),
    [
        ("2026-05-31T12:00:00+00:00", 30, False),  # exactly 30 days: not older
        ("2026-05-30T12:00:00+00:00", 30, True),
        ("2026-05-30T12:00:00", 30, True),  # no zone: casegate writes UTC
        ("2026-05-30T12:00:00+00:00", 60, False),
        ("2020-01-01T00:00:00+00:00", None, False),  # null: never
        ("2027-01-01T00:00:00+00:00", 30, False),  # a clock ahead is not old
    ],
)
def test_a_baseline_older_than_the_limit_warns(
    suite: Project, written: str, limit: int | None, warned: bool
) -> None:
    edit_config(suite, baseline_max_age_days=limit)
    baseline = read_results(baseline_of(suite))
    baseline.created_at = written
    found = baseline_warnings(baseline, load_config(suite.config_path), now=NOW)
    assert bool(found) == warned
    if warned:
        assert found[0] == (
            f"the baseline is 31 days old (written 2026-05-30), older than baseline_max_age_days "
            f"({limit}): a hosted model can drift under the same name; refresh it with "
            "`casegate baseline` (the Action's `command: baseline`)"
        )


def test_without_a_config_the_default_age_applies_and_a_bad_date_is_said() -> None:
    baseline = run([result("a")])
    baseline.created_at = "2026-05-01T00:00:00+00:00"
    assert "60 days old" in baseline_warnings(baseline, None, now=NOW)[0]
    baseline.created_at = "last tuesday"
    assert baseline_warnings(baseline, None, now=NOW) == [
        "the baseline's created_at last tuesday is not a date, so its age is unknown: refresh "
        "it with `casegate baseline` (the Action's `command: baseline`)"
    ]


def test_against_the_base_commit_the_staleness_is_the_base_branchs(suite: Project) -> None:
    # A pull request did not make its base's baseline stale: an earlier merge there did.
    edit_config(suite, system={"model": "bigger"})
    baseline = read_results(baseline_of(suite))
    found = baseline_warnings(
        baseline, load_config(suite.config_path), against=BASE_CONFIG, now=NOW
    )
    assert found == [
        "the baseline was written with another config than the base commit's config "
        '(system.model unset → "bigger"): the base branch\'s baseline missed its refresh after '
        "an earlier merge there; on that branch, refresh it with `casegate baseline` (the "
        "Action's `command: baseline`)"
    ]


def test_a_config_that_moved_on_without_its_baseline_warns_naming_the_keys(
    suite: Project,
) -> None:
    edit_config(
        suite,
        system={"model": "bigger"},
        gate={"tolerance": 0.05},
        concurrency=2,
        history="elsewhere/demo.jsonl",  # where history goes, not what a run measures
    )
    baseline = read_results(baseline_of(suite))
    found = baseline_warnings(baseline, load_config(suite.config_path), now=NOW)
    assert found == [
        "the baseline was written with another config than this config (gate.tolerance 0 → "
        '0.05, system.model unset → "bigger"): it was not refreshed after the config changed; '
        "once the change is merged, refresh it with `casegate baseline` (the Action's "
        "`command: baseline`)"
    ]
    # A run's own `--set` is its experiment, not a stale baseline.
    assert (
        baseline_warnings(
            read_results(baseline_of(suite)),
            load_config(suite.config_path),
            ignore=["system.model", "gate"],
            now=NOW,
        )
        == []
    )


def test_keys_a_newer_casegate_added_at_their_default_are_no_difference(
    suite: Project,
) -> None:
    baseline = read_results(baseline_of(suite))
    for key in ("defaults", "baseline_max_age_days"):  # as an older casegate wrote it
        del baseline.config[key]
    del baseline.config["gate"]["min_pass_rate"]
    baseline.config["from_the_future"] = 1
    baseline.config_hash = "older"
    assert baseline_warnings(baseline, load_config(suite.config_path), now=NOW) == []
    edit_config(suite, defaults={"tags": ["smoke"]})
    assert config_differences(baseline.config, load_config(suite.config_path).as_dict()) == [
        "defaults.tags changed"
    ]


def test_another_results_schema_is_read_and_said(suite: Project) -> None:
    rewrite(baseline_of(suite), schema="casegate.results/2", casegate_version="9.0", extra={})
    baseline = read_results(baseline_of(suite))
    assert baseline.schema == "casegate.results/2"
    assert baseline_warnings(baseline, load_config(suite.config_path), now=NOW) == [
        f"the baseline was written by casegate 9.0 with results schema casegate.results/2; "
        f"this casegate writes {SCHEMA}, and ignored what it does not know: refresh it with "
        "`casegate baseline` (the Action's `command: baseline`)"
    ]
    for other in ("casegate.results/x", "promptfoo/1", 2):
        rewrite(baseline_of(suite), schema=other)
        with pytest.raises(ResultsError, match="expected schema"):
            read_results(baseline_of(suite))


# --- where it is said ------------------------------------------------------------------


def test_the_warnings_come_first_in_every_report_and_never_block() -> None:
    baseline = run([result("a"), result("b", "fail")])
    candidate = run([result("a", "fail"), result("b")])
    comparison = compare(baseline, candidate)
    comparison = dataclasses.replace(
        comparison, warnings=["the baseline is 99 days old <b>@team</b>"]
    )
    verdict = decide(comparison, load_rule())
    assert verdict.decision == "ship"  # the warning adds no reason to block
    markdown = report.markdown_report(comparison, verdict)
    warning = markdown.index("**Stale baseline** (a warning; it does not block)")
    assert warning < markdown.index("#### Regressions")
    assert "<b>" not in markdown and "@\u200bteam" in markdown  # escaped like any untrusted text
    text = report.text_report(comparison, verdict).splitlines()
    assert text[2] == "  ⚠ stale baseline: the baseline is 99 days old <b>@team</b>"
    assert report.json_report(comparison, verdict)["baseline_warnings"] == comparison.warnings


def load_rule():  # type: ignore[no-untyped-def]
    from gate.suite.config import GateConfig

    return GateConfig()


def test_gate_says_it_and_keeps_its_exit_code(
    suite: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rewrite(baseline_of(suite), created_at="2020-01-01T00:00:00+00:00")
    candidate = tmp_path / "candidate.json"
    assert main(["run", "--mode", "live", "--out", str(candidate), "--quiet"]) == 0
    assert main(["gate", str(baseline_of(suite)), str(candidate)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"⚠ stale baseline: the baseline is \d+ days old \(written 2020-01-01\)", out)


def test_check_compares_the_baseline_with_the_base_commits_config(
    suite: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    init_repository(suite.root)
    # The pull request's own system change is what is under test: no warning.
    edit_config(suite, system={"style": "fancy"})
    assert main(["check", "--base", "main", "--mode", "live", "--quiet"]) == 0
    assert "stale baseline" not in capsys.readouterr().out
    # main merged a config change without refreshing the baseline: that is said.
    git("commit", "-qam", "a change merged without a new baseline", cwd=suite.root)
    edit_config(suite, system={"style": "plain"})
    assert main(["check", "--base", "main", "--mode", "live", "--quiet"]) == 0  # never blocks
    out = capsys.readouterr().out
    assert (
        "⚠ stale baseline: the baseline was written with another config than the base "
        'commit\'s config (system.style unset → "fancy")' in out
    )


def test_only_what_affects_results_makes_a_baseline_stale(
    suite: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Where the system is reached is no change to what it answers (recordings ignore it).
    edit_config(suite, system={"base_url": "http://elsewhere.example/v1", "timeout_s": 9})
    candidate = tmp_path / "candidate.json"
    assert main(["run", "--mode", "live", "--out", str(candidate), "--quiet"]) == 0
    assert main(["gate", str(baseline_of(suite)), str(candidate)]) == 0
    assert main(["check", "--mode", "live", "--quiet"]) == 0
    assert "stale baseline" not in capsys.readouterr().out
    # A local check without --base judges the config in use: its system change is the
    # change under test, named in the headline, not a sign of a stale baseline.
    edit_config(suite, system={"style": "fancy"})
    assert main(["check", "--mode", "live", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert 'style unset → "fancy"' not in out
    assert "stale baseline" not in out
    assert "(style unset → fancy)" in out
    # What is not the system still says so.
    edit_config(suite, gate={"tolerance": 0.05})
    assert main(["check", "--mode", "live", "--quiet"]) == 0
    assert (
        "⚠ stale baseline: the baseline was written with another config than this config "
        "(gate.tolerance 0 → 0.05)" in capsys.readouterr().out
    )


def test_the_action_warns_in_the_log_the_summary_and_the_comment(runner: Runner) -> None:
    baseline = runner.workspace / "baselines" / "support.json"
    text = baseline.read_text()
    baseline.write_text(
        re.sub(r'"created_at":"[^"]*"', '"created_at":"2020-01-01T00:00:00+00:00"', text)
    )
    git("commit", "-qam", "an old baseline", cwd=runner.workspace)
    runner.base_sha = git("rev-parse", "HEAD", cwd=runner.workspace)
    finished = runner.run(config="casegate.yml")
    assert finished.returncode == 0, finished.stdout + finished.stderr  # it warns, never blocks
    warnings = [line for line in acted_on(finished.stdout) if "stale baseline" in line]
    assert len(warnings) == 1
    assert warnings[0].startswith("::warning title=casegate::stale baseline: the baseline is ")
    assert "Stale baseline" in runner.summary()


def test_warning_only_settings_and_the_recordings_form_are_no_difference() -> None:
    before = {"recordings": "recordings/demo", "concurrency": 8}
    after = {
        "recordings": {"path": "recordings/demo", "max_age_days": 30},
        "drift": {"max_flips": 3},
        "concurrency": 2,
        "privacy": {"redact_keys": ["ssn"]},  # what `casegate add` drops: no check reads it
    }
    assert config_differences(before, after) == []
    moved = {**after, "recordings": {"path": "elsewhere", "max_age_days": 30}}
    assert config_differences(before, moved) == ['recordings.path "recordings/demo" → "elsewhere"']
