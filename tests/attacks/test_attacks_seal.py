"""Attacks on CI's recording seal (gate.produce.seal, gate.drift.replayed): a pull request
author who controls every file of the change tries to pass author-made recordings off as
sealed by CI, to dodge `gate.unverified_critical: block`, to read the key, or to crash the
gate. Tests marked `FAILS NOW` demonstrate a hole; the others guard defended attacks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any

import pytest

from gate.cli import main
from gate.produce import seal
from tests.conftest import Project, case
from tests.fakes.actions import git, init_repository
from tests.produce.test_seal import CASES, KEY, _check, _edit, _edit_sealed, _entries


@pytest.fixture
def sealed_repo(project: Project, monkeypatch: pytest.MonkeyPatch) -> Project:
    """Recorded by CI (sealed), baselined in replay, committed on main."""
    project.write_cases(CASES)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet"]) == 0
    monkeypatch.delenv("GITHUB_ACTIONS")
    assert main(["baseline", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    return project


def _block_on_main(project: Project) -> None:
    """The base commit says `gate.unverified_critical: block`; the branch starts from it."""
    git("checkout", "-q", "main", cwd=project.root)
    project.config_path.write_text(
        project.config_path.read_text() + "gate:\n  unverified_critical: block\n"
    )
    git("commit", "-qam", "block unverified", cwd=project.root)
    git("checkout", "-q", "-B", "change", cwd=project.root)


def _forge(project: Project, case_id: str = "greet", text: str = "hello, forged") -> None:
    """The author's own answer in place of CI's, the seal field kept."""
    _edit(project, case_id, lambda entry: entry["output"].update(text=text))


# --- the freshness rule: an older CI draw put back --------------------------------------


def _lucky_then_newer(project: Project, monkeypatch: pytest.MonkeyPatch) -> str:
    """CI recorded greet twice; main holds the newer draw. Returns the older one's file."""
    project.write_cases(CASES)
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet"]) == 0
    lucky = (project.root / "recordings" / "greet.json").read_text()
    (project.root / "recordings" / "greet.json").unlink()
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet", "--only-missing"]) == 0
    _edit_sealed(project, "greet", KEY, captured_at="2099-01-01T00:00:00+00:00")
    assert main(["baseline", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    return lucky


# Failed before the fix. Attack: move the recordings folder in the PR's config, so the base has "no
# recording of that request" and an older lucky CI draw skips the freshness rule.
def test_moving_the_recordings_folder_does_not_skip_the_freshness_rule(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lucky = _lucky_then_newer(project, monkeypatch)
    project.write_config(recordings="moved")
    shutil.move(project.root / "recordings", project.root / "moved")
    (project.root / "moved" / "greet.json").write_text(lucky)
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    _code, out = _check(capsys)
    assert "not sealed by CI: greet" in out, out


# Defended: the same older draw put back in the same folder reads as unsealed.
def test_an_older_draw_in_the_same_folder_is_unsealed(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lucky = _lucky_then_newer(project, monkeypatch)
    (project.root / "recordings" / "greet.json").write_text(lucky)
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    _code, out = _check(capsys)
    assert "not sealed by CI: greet" in out, out


# --- gate.unverified_critical: block --------------------------------------------------


# Defended: the block rule is the base's; an edited critical recording blocks.
def test_an_edited_critical_recording_blocks_under_the_bases_rule(
    sealed_repo: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _block_on_main(sealed_repo)
    _forge(sealed_repo)
    # The PR also loosens the rule and drops the case's critical flag: both are the base's.
    sealed_repo.config_path.write_text(sealed_repo.config_path.read_text().replace("block", "warn"))
    sealed_repo.write_cases([{**CASES[0], "critical": False}, CASES[1]])
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    code, out = _check(capsys)
    assert code == 1 and "unverified" in out, out


# Failed before the fix. Attack: make the count of changed recordings fail (a CasegateError in
# gate.drift.replayed._changed), which leaves the account with no changed case: nothing is
# unverified and `block` never fires. The PR points `recordings:` at a base folder holding
# a JSON file that is no recording (here the drift record the drift workflow commits,
# history/demo-drift.json) and adds a case named like it.
def test_a_failed_count_of_changed_recordings_does_not_open_the_unverified_block(
    sealed_repo: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = sealed_repo.root
    git("checkout", "-q", "main", cwd=root)
    sealed_repo.write_text("history/demo-drift.json", '{"suite": "demo"}\n')
    git("add", "history", cwd=root)
    git("commit", "-qm", "drift record", cwd=root)
    _block_on_main(sealed_repo)
    _forge(sealed_repo)
    sealed_repo.write_cases([*CASES, case("demo-drift", "x", contains="x")])
    config = sealed_repo.config_path.read_text()
    sealed_repo.config_path.write_text(
        config.replace("recordings: recordings", "recordings: history")
    )
    for path in (root / "recordings").glob("*.json"):
        shutil.move(path, root / "history" / path.name)
    (root / "history" / "demo-drift.json").unlink()
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    assert main(["record", "--quiet", "--only-missing", "--case", "demo-drift"]) == 0
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    code, out = _check(capsys)
    assert code == 1 and "unverified" in out, out


# --- crafted seal fields -----------------------------------------------------------


def _key_id() -> str:
    return seal.key_from(KEY).key_id


ODD_SEALS = {
    "int": 5,
    "float": 1.5,
    "null": None,
    "list": ["hmac-sha256", "x", "y"],
    "object": {"seal": "x"},
    "bool": True,
    "empty": "",
    "huge": "hmac-sha256:" + "0" * 200_000,
    "colons": "hmac-sha256:::",
    "no mac": "hmac-sha256:{kid}:",
    "short mac": "hmac-sha256:{kid}:00",
    "upper mac": "HMAC-SHA256:{kid}:" + "0" * 64,
    "nul": "hmac-sha256:{kid}:\u0000",
    "non-ascii key id": "hmac-sha256:é:" + "0" * 64,
    "non-ascii mac": "hmac-sha256:{kid}:é" + "0" * 63,  # FAILS NOW (TypeError)
    "fullwidth digits": "hmac-sha256:{kid}:" + "０" * 64,  # FAILS NOW (TypeError)
}


# Attack: a seal field of an odd type or shape, with the repository's (public) key id:
# never "sealed", never an exception. The non-ASCII MAC ones FAIL NOW.
@pytest.mark.parametrize("name", list(ODD_SEALS))
def test_an_odd_seal_field_is_unsealed_or_broken_never_a_crash(name: str) -> None:
    value = ODD_SEALS[name]
    if isinstance(value, str):
        value = value.replace("{kid}", _key_id())
    entry = {"captured_at": "2026-12-01T00:00:00+00:00", "output": {"text": "x"}, "seal": value}
    assert seal.key_from(KEY).state("greet", "abc", entry) in ("unsealed", "broken", "other key")


# Defended: values JSON cannot carry canonically (NaN, a lone surrogate) break the seal.
@pytest.mark.parametrize("value", [float("nan"), float("inf"), "\ud800"])
def test_a_value_json_cannot_carry_breaks_the_seal(value: Any) -> None:
    key = seal.key_from(KEY)
    entry: dict[str, Any] = {"output": {"text": "x"}, "extra": value}
    entry["seal"] = f"hmac-sha256:{key.key_id}:" + "0" * 64
    assert key.state("greet", "abc", entry) == "broken"


# Failed before the fix. Attack: a recording whose seal names the repository's key id (public: every
# sealed recording shows it) and a MAC with a non-ASCII character crashes the replayed
# check with a traceback (hmac.compare_digest raises TypeError on non-ASCII str).
def test_a_non_ascii_mac_is_unsealed_not_a_traceback(
    sealed_repo: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    kid = _key_id()
    _forge(sealed_repo)
    _edit(sealed_repo, "greet", lambda entry: entry.update(seal=f"hmac-sha256:{kid}:é"))
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    code, out = _check(capsys)
    assert code == 0 and "not sealed by CI: greet" in out, out


# --- the key out of reach -------------------------------------------------------------

PEEK = """
import os, pathlib
def answer(case_input, system):
    try:
        found = pathlib.Path(f"/proc/{os.getppid()}/environ").read_bytes().decode(errors="replace")
    except OSError as exc:
        found = repr(exc)
    pathlib.Path("peeked.txt").write_text(found + "\\n" + os.environ.get("CASEGATE_RECORDING_KEY", ""))
    return case_input["question"]
"""


# Failed before the fix. Attack: the supervised run (the PR's python system) reads the gate's starting
# environment from /proc/PPID/environ, where `os.environ.pop` leaves the key. (The CLI in a
# CI step, as a non-root runner user: no sandbox user to drop to; `--sandbox off` here.)
def test_the_supervised_run_cannot_read_the_key_from_the_gates_proc_environ(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write_cases(CASES)
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    project.write_system(PEEK)
    shutil.rmtree(project.root / "recordings")
    env = {**os.environ, seal.KEY_ENV: KEY}
    done = subprocess.run(
        [sys.executable, "-m", "gate", "check", "--mode", "record", "--quiet", "--sandbox", "off"],
        cwd=project.root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "answer(s) written by the gate and sealed" in done.stderr + done.stdout, (
        done.stderr + done.stdout
    )
    peeked = (project.root / "peeked.txt").read_text()
    assert "CASEGATE_RECORDING_KEY=" in peeked or "Errno" in peeked  # it did look
    assert KEY not in peeked


# --- what the gate seals after a supervised run ---------------------------------------

#: the PR's system: answers truthfully, then at exit (after the run's results and status
#: are written, before the gate seals) rewrites what the recordings say beyond the answer
TAMPER = """
import atexit, json, pathlib
def _tamper():
    for path in pathlib.Path("recordings").glob("*.json"):
        document = json.loads(path.read_text())
        for entry in document["responses"].values():
            entry.update(FIELDS)
            entry["output"].update(OUTPUT)
        path.write_text(json.dumps(document))
atexit.register(_tamper)
def answer(case_input, system):
    return case_input["question"]
"""


def _record_in_ci_with(
    project: Project, monkeypatch: pytest.MonkeyPatch, fields: dict[str, Any],
    output: dict[str, Any] | None = None,
) -> int:  # fmt: skip
    """`check --mode record` holding the key, the PR's system tampering as it exits."""
    project.write_cases(CASES)
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    code = f"from math import inf, nan\nFIELDS = {fields!r}\nOUTPUT = {output or {}!r}\n" + TAMPER
    project.write_system(code)
    shutil.rmtree(project.root / "recordings")
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    # `--sandbox off`: a check records only outside the sandbox (README, "check in mode:
    # record under the sandbox"), as a runner's user or the Action's `sandbox: off`.
    return main(["check", "--mode", "record", "--quiet", "--sandbox", "off"])


# Failed before the fix. Attack: the run's code dates its recordings in the far future; the gate seals
# the entry as the file holds it (only text and tool calls are compared), so CI vouches for
# a date it never saw, and that draw later beats every base recording in the freshness rule.
def test_the_gate_never_seals_a_capture_date_the_run_wrote(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    forged = {"captured_at": "2999-01-01T00:00:00+00:00", "captured_by": "ci"}
    _record_in_ci_with(project, monkeypatch, forged)
    out = "".join(capsys.readouterr())
    for case_id in ("greet", "echo"):
        for entry in _entries(project, case_id).values():
            assert "seal" not in entry or entry["captured_at"] < "2100", (entry, out)


# Failed before the fix. Attack: beyond the answer's text, the run's code rewrites the recorded figures
# (latency, cost, tokens, model): the gate seals them, though it judged the run's others.
def test_the_gate_never_seals_figures_the_run_did_not_report(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    figures = {"latency_ms": 0.001, "cost_usd": 0.0, "model": "gpt-5", "input_tokens": 1}
    _record_in_ci_with(project, monkeypatch, {}, figures)
    results = json.loads((project.root / ".casegate" / "demo-results.json").read_text())
    reported = {c["id"]: c["outputs"][0] for c in results["cases"]}
    for case_id in ("greet", "echo"):
        for entry in _entries(project, case_id).values():
            if "seal" in entry:
                assert entry["output"].get("latency_ms") == reported[case_id].get("latency_ms")
                assert entry["output"].get("model") == reported[case_id].get("model")


# Failed before the fix. The impact end to end: that future-dated sealed draw, kept by the author and
# put back after CI recorded a newer one on main, reads as "sealed by CI".
def test_a_future_dated_draw_the_gate_sealed_does_not_beat_a_newer_ci_recording(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _record_in_ci_with(project, monkeypatch, {"captured_at": "2999-01-01T00:00:00+00:00"})
    lucky = (project.root / "recordings" / "greet.json").read_text()
    project.write_system()  # the honest system again: CI records greet anew on main
    (project.root / "recordings" / "greet.json").unlink()
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet", "--only-missing"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    (project.root / "recordings" / "greet.json").write_text(lucky)
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    capsys.readouterr()
    _code, out = _check(capsys)
    assert "not sealed by CI: greet" in out, out


#: the PR's system: at exit, reports (and records) a second sample of greet the suite never
#: asked for, with an answer nobody judged; the gate refuses the run, after sealing
EXTRA_SAMPLE = """
import atexit, json, pathlib, sys
from gate.produce.recordings import request_key, system_fingerprint
SEEN = {}
def _extra():
    request = json.loads(pathlib.Path(sys.argv[1]).read_text())
    out = pathlib.Path(request["out"])
    results = json.loads(out.read_text())
    for case in results["cases"]:
        if case["id"] == "greet":
            case["outputs"].append({**case["outputs"][0], "sample": 1, "text": "hello, never judged"})
    out.write_text(json.dumps(results))
    path = pathlib.Path("recordings/greet.json")
    document = json.loads(path.read_text())
    (entry,) = document["responses"].values()
    key = request_key(system_fingerprint(SEEN["system"]), SEEN["input"], 1)
    document["responses"][key] = {**entry, "sample": 1, "output": {"text": "hello, never judged"}}
    path.write_text(json.dumps(document))
atexit.register(_extra)
def answer(case_input, system):
    if case_input["question"] == "hello":
        SEEN.update(system=system, input=case_input)
    return case_input["question"]
"""


# Failed before the fix. Attack: the gate seals what the run reported before it rechecks the run
# (gate/pipeline/check.py: seal_recorded before recheck): results the gate then refuses
# as untrusted (exit 2) leave sealed entries behind, here an unjudged sample 1.
def test_a_run_the_gate_refuses_leaves_nothing_sealed(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases(CASES)
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    project.write_system(EXTRA_SAMPLE)
    shutil.rmtree(project.root / "recordings")
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    code = main(["check", "--mode", "record", "--quiet", "--sandbox", "off"])
    out = "".join(capsys.readouterr())
    assert code == 2, out  # refused: "the run reported 2 sample(s) of 'greet'"
    # The run recorded into a folder of its own; the gate refused it and kept nothing.
    assert not (project.root / "recordings" / "greet.json").exists(), out


# Failed before the fix. Attack: the run's code adds a value the seal's canonical JSON refuses (NaN, a
# lone surrogate) to its recording: the gate's sealing raises (ValueError,
# UnicodeEncodeError) and the check dies with a traceback instead of leaving it unsealed.
@pytest.mark.parametrize("value", [float("nan"), "\ud800"], ids=["nan", "surrogate"])
def test_an_entry_the_seal_cannot_encode_is_left_unsealed_not_a_traceback(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    value: Any,
) -> None:  # fmt: skip
    code = _record_in_ci_with(project, monkeypatch, {"note": value})
    out = "".join(capsys.readouterr())
    assert code == 0, out
    # The gate writes each entry afresh: nothing the run added is kept, or sealed.
    for case_id in ("greet", "echo"):
        for entry in _entries(project, case_id).values():
            assert "note" not in entry and entry["seal"].startswith("hmac-sha256:"), out


# Failed before the fix. Attack (DoS): in `casegate record` holding the key, a system whose answer
# carries a NaN cost makes sealing raise ValueError (a traceback); without the key the
# same answer records fine.
def test_record_with_the_key_survives_an_answer_json_cannot_canonicalise(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write_cases(CASES)
    project.write_system(
        "def answer(case_input, system):\n"
        "    return {'text': case_input['question'], 'cost_usd': float('nan')}\n"
    )
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["record", "--quiet"]) in (0, 1, 2)


# --- moving, renaming, duplicating ------------------------------------------------------


# Defended: CI's sealed entry moved under another request key (the case's input changed,
# so the replay asks for a new key) is broken, not sealed.
def test_a_sealed_entry_moved_to_another_request_is_unsealed(
    sealed_repo: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = next(iter(_entries(sealed_repo, "greet").values()))
    sealed_repo.write_cases([case("greet", "hello there", contains="hello",
                                  fields_={"critical": True}), CASES[1]])  # fmt: skip
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    assert main(["record", "--quiet", "--only-missing"]) == 0
    path = sealed_repo.root / "recordings" / "greet.json"
    document = json.loads(path.read_text())
    for request, entry in document["responses"].items():
        if "seal" not in entry:
            document["responses"][request] = old
    path.write_text(json.dumps(document))
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    _code, out = _check(capsys)
    assert "not sealed by CI: greet" in out, out


# Defended: a sealed entry carried over to a renamed case (its file renamed, `case` set)
# is broken: the seal covers the case id. Case ids that share a file (".x", "_.x") too.
def test_a_sealed_entry_under_another_case_id_is_unsealed(
    sealed_repo: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = sealed_repo.root
    sealed_repo.write_cases([{**CASES[0], "id": "greet2"}, CASES[1]])
    document = json.loads((root / "recordings" / "greet.json").read_text())
    document["case"] = "greet2"
    (root / "recordings" / "greet2.json").write_text(json.dumps(document))
    (root / "recordings" / "greet.json").unlink()
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    _code, out = _check(capsys)
    assert "not sealed by CI: greet2" in out, out
    key = seal.key_from(KEY)
    entry: dict[str, Any] = {"output": {"text": "x"}}
    entry["seal"] = key.seal("_.x", "abc", entry)
    assert key.state(".x", "abc", entry) == "broken"


# Defended: a recording naming a field twice (two outputs, or two seals) is refused
# outright (exit 2), never read as the sealed one.
@pytest.mark.parametrize("field", ["output", "seal"])
def test_a_recording_with_a_duplicate_key_is_refused(
    sealed_repo: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    field: str,
) -> None:  # fmt: skip
    path = sealed_repo.root / "recordings" / "greet.json"
    text = path.read_text()
    duplicate = {"output": '"output": {"text": "hello, forged"},', "seal": '"seal": "x",'}[field]
    path.write_text(text.replace('"captured_at"', duplicate + '\n      "captured_at"', 1))
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    code, out = _check(capsys)
    assert code == 2, out
    assert "sealed by CI (made by casegate in CI" not in out


# Defended: how capture dates compare in the freshness rule ('Z', offsets, naive as UTC,
# nonsense as no date).
def test_capture_dates_compare_as_instants() -> None:
    from gate.drift.replayed import _moment

    assert _moment("2026-12-02T10:00:00Z") == _moment("2026-12-02T12:00:00+02:00")
    assert _moment("2026-12-02T10:00:00") == _moment("2026-12-02T10:00:00+00:00")
    for nonsense in ("", "yesterday", "2026-13-01", "9" * 100, None):
        assert _moment(nonsense) is None
    assert _moment("2026-12-02T11:00:00+02:00") < _moment("2026-12-02T10:00:00Z")  # type: ignore[operator]


# --- the key in nothing written; shards; samples: auto --------------------------------


# Defended: after a supervised recording sealed by the gate and a replayed check against
# the base (results, report, JUnit), the key is in no file of the repository or .casegate.
def test_the_key_lands_in_no_file_casegate_writes(
    sealed_repo: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (sealed_repo.root / "recordings" / "greet.json").unlink()
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["check", "--mode", "record", "--quiet", "--junit", "junit.xml"]) == 0
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    code, out = _check(capsys, "--junit", "junit2.xml")
    assert code == 0 and "sealed by CI" in out, out
    assert KEY not in out
    for path in sealed_repo.root.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


# Defended: the shards' parts merged by the gate job (`check --parts`) tell the forged
# critical recording from a sealed one, as one run does.
def test_parts_merged_name_the_unsealed_recording(
    sealed_repo: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:  # fmt: skip
    _forge(sealed_repo)
    parts = tmp_path_factory.mktemp("parts")
    for index in (1, 2):
        out = str(parts / f"part{index}.json")
        assert (
            main(["check", "--base", "main", "--quiet", "--shard", f"{index}/2", "--out", out]) == 0
        )
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    _code, out = _check(capsys, "--parts", str(parts / "part1.json"), str(parts / "part2.json"))
    assert "not sealed by CI: greet" in out, out


# Defended: under `samples: auto` every replayed draw of a changed case must be sealed: one
# forged draw among CI's makes the case unsealed.
def test_one_forged_draw_of_an_auto_sampled_case_is_enough_to_be_unsealed(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_config(samples="auto", adaptive={"start": 2, "max": 4})
    project.write_cases(CASES)
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    assert main(["baseline", "--quiet", "--mode", "record"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    path = project.root / "recordings" / "greet.json"
    document = json.loads(path.read_text())
    assert len(document["responses"]) > 1
    (entry,) = [e for e in document["responses"].values() if e["sample"] == 1]
    entry["output"]["text"] = "hello, forged"  # the second draw of the first round
    path.write_text(json.dumps(document))
    monkeypatch.setenv(seal.KEY_ENV, KEY)
    _code, out = _check(capsys)
    assert "not sealed by CI: greet" in out, out
