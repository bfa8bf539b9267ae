"""Who made each recording: provenance on every entry, CI's seal (an HMAC under the
repository's CASEGATE_RECORDING_KEY), and the gate telling sealed from unsealed changes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate import __version__
from gate.cli import main
from gate.produce import seal
from tests.conftest import Project, case
from tests.fakes.actions import git, init_repository

KEY = "k" * 16 + "-recording-key-for-the-tests-0123456789"
OTHER_KEY = "o" * 48
CASES = [
    case("greet", "hello", contains="hello", fields_={"critical": True}),
    case("echo", "world", contains="world"),
]


def _entries(project: Project, case_id: str) -> dict[str, dict[str, Any]]:
    document = json.loads((project.root / "recordings" / f"{case_id}.json").read_text())
    return document["responses"]  # type: ignore[no-any-return]


def _edit(project: Project, case_id: str, change: Any) -> None:
    path = project.root / "recordings" / f"{case_id}.json"
    document = json.loads(path.read_text())
    for entry in document["responses"].values():
        change(entry)
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


@pytest.fixture
def sealed_repo(project: Project, monkeypatch: pytest.MonkeyPatch) -> Project:
    """Recorded by CI (sealed), baselined in replay, committed on main."""
    project.write_cases(CASES)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet"]) == 0
    monkeypatch.delenv("GITHUB_ACTIONS")
    for case_id in ("greet", "echo"):  # an earlier day: what CI records later is newer
        _edit_sealed(project, case_id, KEY, captured_at="2026-01-01T00:00:00+00:00")
    assert main(["baseline", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    return project


def test_every_recording_says_who_made_it_and_only_a_key_holder_seals(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases(CASES)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    assert main(["record", "--quiet"]) == 0
    (entry,) = _entries(project, "greet").values()
    assert entry["captured_by"] == "local" and entry["casegate_version"] == __version__
    assert "seal" not in entry
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet"]) == 0
    assert f"sealed with {seal.KEY_ENV}" in capsys.readouterr().err
    (entry,) = _entries(project, "greet").values()
    assert entry["captured_by"] == "ci" and entry["seal"].startswith("hmac-sha256:")
    # The key left the environment before anything ran, and is written nowhere.
    assert seal.KEY_ENV not in __import__("os").environ
    for path in project.root.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path


def test_a_short_key_is_one_line_and_exit_2(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases(CASES)
    monkeypatch.setenv(seal.KEY_ENV, "hunter2")
    assert main(["record", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fewer than 32 characters" in err and "hunter2" not in err


@given(
    field=st.sampled_from(["captured_by", "captured_at", "model", "sample", "casegate_version"]),
    value=st.one_of(st.text(max_size=20), st.integers(), st.none()),
)
def test_any_edit_of_a_sealed_entry_breaks_its_seal(field: str, value: Any) -> None:
    key = seal.key_from(KEY)
    entry = {
        "captured_at": "2026-12-01T00:00:00+00:00",
        "captured_by": "ci",
        "casegate_version": "1",
        "model": "m",
        "sample": 0,
        "output": {"text": "hello"},
    }
    entry["seal"] = key.seal("greet", "abc", entry)
    assert key.state("greet", "abc", entry) == "sealed"
    assert key.state("other", "abc", entry) == "broken"  # moved to another case
    assert key.state("greet", "abd", entry) == "broken"  # or to another request
    assert seal.key_from(OTHER_KEY).state("greet", "abc", entry) == "other key"
    edited = {**entry, field: value}
    assert key.state("greet", "abc", edited) == ("sealed" if edited == entry else "broken")
    assert key.state("greet", "abc", {**entry, "output": {"text": "hello!"}}) == "broken"


def _check(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["check", "--base", "main", "--quiet", "--report", "report.md", *extra])
    return code, capsys.readouterr().out


def test_a_changed_recording_ci_sealed_is_named_as_ci_made(
    sealed_repo: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Recorded again in CI on the branch: new draws, sealed.
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    (sealed_repo.root / "recordings" / "greet.json").unlink()
    assert main(["record", "--quiet", "--only-missing"]) == 0
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    code, out = _check(capsys)
    assert code == 0, out
    assert "changed recordings sealed by CI (made by casegate in CI, unedited since): greet" in out
    assert "not sealed by CI" not in out
    markdown = Path("report.md").read_text()
    assert "Changed recordings sealed by CI (made by casegate in CI, unedited since): greet" in (
        markdown
    )


def test_an_edited_sealed_recording_is_the_authors_and_the_rule_decides(
    sealed_repo: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The author edits CI's answer into a pass it never gave, keeping the seal field.
    _edit(sealed_repo, "greet", lambda entry: entry["output"].update(text="hello, edited"))
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    code, out = _check(capsys)
    assert code == 0, out  # warn, the default
    assert "not sealed by CI: greet (made by its author, as far as the gate can tell" in out
    assert "1 critical case(s) are judged on recordings this change added or changed" in out
    # The rule comes from the base: the pull request cannot turn it back to warn.
    config = sealed_repo.config_path.read_text() + "gate:\n  unverified_critical: block\n"
    sealed_repo.config_path.write_text(config)
    git("commit", "-qam", "block unverified", cwd=sealed_repo.root)
    git("checkout", "-q", "main", cwd=sealed_repo.root)
    git("merge", "-q", "change", cwd=sealed_repo.root)
    git("checkout", "-qb", "change2", cwd=sealed_repo.root)
    _edit(sealed_repo, "greet", lambda entry: entry["output"].update(text="hello, again"))
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    code, out = _check(capsys)
    assert code == 1, out
    assert "unverified" in out and "greet" in out
    # A non-critical change never blocks under the rule.
    git("checkout", "-q", "--", ".", cwd=sealed_repo.root)
    _edit(sealed_repo, "echo", lambda entry: entry["output"].update(text="world, again"))
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    code, out = _check(capsys)
    assert code == 0, out
    assert "not sealed by CI: echo" in out


def test_without_the_key_no_change_is_taken_as_sealed(
    sealed_repo: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    (sealed_repo.root / "recordings" / "greet.json").unlink()
    assert main(["record", "--quiet", "--only-missing"]) == 0
    monkeypatch.delenv(seal.KEY_ENV, raising=False)  # a fork's run: no secrets
    code, out = _check(capsys)
    assert code == 0, out
    assert "not sealed by CI: greet (CASEGATE_RECORDING_KEY is not set" in out
    monkeypatch.setenv(seal.KEY_ENV, OTHER_KEY)  # another repository's key seals nothing here
    code, out = _check(capsys)
    assert "not sealed by CI: greet (made by its author" in out


def test_an_older_ci_draw_put_back_is_not_taken_as_sealed(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # CI recorded a lucky draw once, then again: the author restores the first.
    project.write_cases(CASES)
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet"]) == 0
    lucky = (project.root / "recordings" / "greet.json").read_text()
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    (project.root / "recordings" / "greet.json").unlink()
    assert main(["record", "--quiet", "--only-missing"]) == 0
    _edit_sealed(project, "greet", KEY, captured_at="2099-01-01T00:00:00+00:00")
    assert main(["baseline", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    (project.root / "recordings" / "greet.json").write_text(lucky)
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    code, out = _check(capsys)
    assert "not sealed by CI: greet" in out, out
    assert code == 0


def _edit_sealed(project: Project, case_id: str, secret: str, **fields: Any) -> None:
    """Change fields of a case's entries and seal them again, as CI holding the key would."""
    key = seal.key_from(secret)
    path = project.root / "recordings" / f"{case_id}.json"
    document = json.loads(path.read_text())
    for request, entry in document["responses"].items():
        entry.update(fields)
        entry["seal"] = key.seal(case_id, request, entry)
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")


# The suite's code finds its run's own recordings folder through the run's request file
# (the worker's argument) and rewrites what it recorded there after the fact.
TAMPER = """
import json, os, pathlib, sys, time
def answer(case_input, system):
    pathlib.Path({marker!r}).write_text(os.environ.get({key!r}, 'none'))
    if case_input['question'] == 'world':
        request = json.loads(pathlib.Path(sys.argv[1]).read_text())
        folder = pathlib.Path(request['overrides'][-1].split('=', 1)[1])
        path = folder / 'greet.json'
        for _ in range(500):
            if path.exists():
                break
            time.sleep(0.01)
        document = json.loads(path.read_text())
        for entry in document['responses'].values():
            {tamper}
        document['responses']['planted'] = {{'output': {{'text': 'PASS: planted'}}}}
        path.write_text(json.dumps(document))
    return case_input['question']
"""


@pytest.mark.parametrize(
    ("tamper", "code"),
    [
        ("entry['output']['text'] = 'hello, forged'", 2),  # another answer than reported
        ("entry['captured_at'] = '2999-01-01T00:00:00+00:00'", 0),  # a date of its own
    ],
)
def test_what_a_recording_run_wrote_is_never_kept_as_it_wrote_it(
    project: Project,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tamper: str,
    code: int,
) -> None:
    # The run records (and imports the suite's code) without the key, into a folder of
    # its own; the gate writes, dates and seals the answers it judged, and nothing else.
    project.write_cases(CASES)
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    before = {name: _entries(project, name) for name in ("greet", "echo")}
    marker = project.root / "seen-key"
    text = TAMPER.format(marker=str(marker), key=seal.KEY_ENV, tamper=tamper)
    project.write_system(text)
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["check", "--mode", "record"]) == code
    out = "".join(capsys.readouterr())
    assert marker.read_text() == "none"
    after = {name: _entries(project, name) for name in ("greet", "echo")}
    if code == 2:
        assert "the run's recordings do not hold the answers it reported (case 'greet'" in out
        assert after == before  # nothing it recorded was kept
        return
    assert "recordings: 2 answer(s) written by the gate and sealed with" in out, out
    key = seal.key_from(KEY)
    for name, entries in after.items():
        assert "planted" not in entries
        for request, entry in entries.items():
            assert entry["captured_at"] < "2999" and entry["captured_by"] == "local"
            assert key.state(name, request, entry) == "sealed"


def _forged_change(project: Project) -> None:
    """A pull request that changes the system (a new version) and commits recordings of a
    passing system, while the code it commits fails the critical case."""
    config = project.config_path.read_text().replace("target:", "version: 2\n  target:")
    project.config_path.write_text(config)
    assert main(["record", "--quiet"]) == 0  # made with the passing code
    project.write_system(
        "def answer(case_input, system):\n"
        "    return 'nothing useful' if case_input['question'] == 'hello' else 'world'\n"
    )
    git("add", "-A", cwd=project.root)
    git("commit", "-qm", "new version", cwd=project.root)


def test_verify_changed_records_the_changed_cases_again_and_judges_cis_answers(
    sealed_repo: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    _forged_change(sealed_repo)
    code, out = _check(capsys)
    assert code == 0, out  # the author's recordings say it passes
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    code = main(["check", "--base", "main", "--quiet", "--verify", "changed"])
    out, err = capsys.readouterr()
    assert code == 1, out + err  # CI's own answer fails the critical case
    assert "verify: recorded again by CI, live: echo, greet" in err
    assert (
        "recordings: 2 answer(s) written by the gate and sealed with CASEGATE_RECORDING_KEY" in err
    )
    # The calls were counted and priced before any was made.
    estimate = "verify: would call the system 2 time(s) for 2 case(s) (samples: 1)"
    assert err.index(estimate) < err.index("verify: recorded again")
    assert (
        "changed recordings sealed by CI (made by casegate in CI, unedited since): echo, greet"
        in (out)
    )
    assert "not sealed by CI" not in out
    # What CI recorded is now in the files, sealed: the pull request's next push replays it.
    by_text = {entry["output"]["text"]: entry for entry in _entries(sealed_repo, "greet").values()}
    assert by_text["nothing useful"]["seal"].startswith("hmac-sha256:")


def test_verify_is_the_base_configs_and_a_pull_request_cannot_switch_it_off(
    sealed_repo: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    git("checkout", "-q", "main", cwd=sealed_repo.root)
    sealed_repo.config_path.write_text(sealed_repo.config_path.read_text() + "verify: changed\n")
    git("commit", "-qam", "verify changed recordings", cwd=sealed_repo.root)
    git("checkout", "-q", "change", cwd=sealed_repo.root)
    git("merge", "-q", "main", cwd=sealed_repo.root)
    _forged_change(sealed_repo)
    config = sealed_repo.config_path.read_text().replace("verify: changed", "verify: 'off'")
    sealed_repo.config_path.write_text(config)
    git("commit", "-qam", "switch verification off", cwd=sealed_repo.root)
    code = main(["check", "--base", "main", "--quiet"])
    out, err = capsys.readouterr()
    assert "verify: recorded again by CI, live: echo, greet" in err
    assert "critical case(s) passed on the baseline and fail on the candidate" in out
    assert code == 1, out


def test_without_the_providers_key_verify_says_so_and_records_nothing(
    sealed_repo: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The base's system reads its key from BOT_KEY; the change forges both answers.
    git("checkout", "-q", "main", cwd=sealed_repo.root)
    config = sealed_repo.config_path.read_text().replace(
        "target:", "api_key_env: BOT_KEY\n  target:"
    )
    sealed_repo.config_path.write_text(config)
    git("commit", "-qam", "the system's key", cwd=sealed_repo.root)
    git("checkout", "-q", "change", cwd=sealed_repo.root)
    git("merge", "-q", "main", cwd=sealed_repo.root)
    for name in ("greet", "echo"):
        _edit(sealed_repo, name, lambda entry: entry["output"].update(text="forged"))
    before = (sealed_repo.root / "recordings" / "greet.json").read_text()
    monkeypatch.delenv("BOT_KEY", raising=False)
    code = main(["check", "--base", "main", "--quiet", "--verify", "changed"])
    out, err = capsys.readouterr()
    assert code == 1, out + err  # the forged answers fail their checks
    assert (
        "verify: 2 case(s) on changed recordings were not recorded again: BOT_KEY is not set" in err
    )
    assert (sealed_repo.root / "recordings" / "greet.json").read_text() == before
    assert "not sealed by CI: echo, greet" in out


def test_the_actions_verify_input_is_off_changed_or_empty() -> None:
    from gate.errors import ConfigError
    from gate.github.action import read_inputs

    assert read_inputs({"INPUT_VERIFY": "changed"}).verify == "changed"
    assert read_inputs({"INPUT_VERIFY": ""}).verify is None  # the base config's `verify:`
    with pytest.raises(ConfigError, match="input `verify` must be off or changed, not 'yes'"):
        read_inputs({"INPUT_VERIFY": "yes"})


def test_turning_verification_on_leaves_the_baseline_fresh(sealed_repo: Project) -> None:
    from gate.deciding.staleness import baseline_warnings
    from gate.results import read_results
    from gate.suite.config import load_config

    sealed_repo.config_path.write_text(sealed_repo.config_path.read_text() + "verify: changed\n")
    loaded = load_config(sealed_repo.config_path)
    assert loaded.config.verify == "changed"
    baseline = read_results(sealed_repo.root / "baselines" / "demo.json")
    assert baseline_warnings(baseline, loaded) == []
    # What does change a verdict still warns: the control.
    sealed_repo.config_path.write_text(sealed_repo.config_path.read_text() + "samples: 3\n")
    assert baseline_warnings(baseline, load_config(sealed_repo.config_path)) != []
