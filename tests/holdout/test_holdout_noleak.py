"""No held-out case ever leaves the slice: not its id, input, output, reason, note or tag.

Every held-out string below carries MARK. The suite goes through every command and
format — run, record, baseline, check, compare (text, markdown, JSON), gate, show,
list, validate, `-v`, JUnit, errors inside the slice, a missing recording, a wrong
key, a tampered file — and then the Action (step summary, annotations, outputs, the
pull-request comment, the report artifact, the baseline refresh, a fork's run). MARK
must appear in no output and no file written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.actions import PULL_NUMBER, Runner, git, open_pull_request
from tests.github.test_holdout_action import CONFIGS
from tests.holdout.test_holdout_helpers import KEY_TEXT, OTHER_KEY, casegate, seal_slice

#: long enough that no ciphertext or hash holds it by chance
MARK = "zqxleakmark"

BOT = """
def answer(case_input, system):
    question = case_input["question"]
    style = system.get("style", "good")
    if style == "crash" and "explode" in question:
        raise RuntimeError("the backend choked on " + question)
    return style + " answer to " + question
"""

HELD: list[dict[str, Any]] = [
    {
        "id": f"{MARK}-regresses",
        "input": {"question": f"{MARK}-input-one"},
        "expect": {"contains": "good"},
        "note": f"{MARK}-note",
        "tags": [f"{MARK}-tag"],
        "provenance": f"https://tickets.example/{MARK}",
    },
    {
        "id": f"{MARK}-missing",
        "input": {"question": "plain words"},
        "expect": {"contains": f"{MARK}-expected"},
    },
    {
        "id": f"{MARK}-forbidden",
        "input": {"question": f"{MARK}-input-two"},
        "expect": {"not_regex": f"{MARK}-input-\\w+", "max_words": 2},
    },
    {
        "id": f"{MARK}-explodes",
        "input": {"question": f"explode {MARK}-input-three"},
        "expect": {"starts_with": "good"},
    },
]
READABLE = (
    "- id: r-pass\n  input: {question: hello}\n  expect: {contains: hello}\n"
    "- id: r-fail\n  input: {question: hello}\n  expect: {contains: nowhere}\n"
    "- id: r-flip\n  input: {question: hello}\n  expect: {contains: good}\n"
)


def _everything_under(root: Path) -> str:
    texts = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and ".git" not in path.parts:
            texts.append(f"--- {path}\n" + path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(texts)


def _no_mark(where: str, text: str) -> None:
    found = text.find(MARK)
    assert found < 0, f"{where} shows a held-out case: …{text[max(0, found - 200) : found + 80]}…"


def test_no_command_shows_a_held_out_case(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text(BOT)
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "main.yaml").write_text(READABLE)
    config = tmp_path / "casegate.yml"
    config.write_text(
        "suite: s\ncases: cases\nsystem: {name: n, provider: python, target: 'bot:answer'}\n"
        "recordings: recordings\nbaseline: baselines/s.json\nholdout: holdout/s\n"
        "gate: {holdout_max_drop: 0.1}\n"
    )
    (tmp_path / "held.yaml").write_text(json.dumps(HELD))
    said: list[tuple[str, str]] = []

    def run(*args: str, key: str | None = KEY_TEXT, expect: int | None = None) -> str:
        finished = casegate(*args, cwd=tmp_path, key=key)
        said.append((" ".join(args), finished.stdout + finished.stderr))
        assert "Traceback" not in finished.stderr, finished.stderr
        if expect is not None:
            assert finished.returncode == expect, (args, finished.stdout, finished.stderr)
        return finished.stdout + finished.stderr

    run("holdout", "add", "held.yaml", expect=0)
    run("record", expect=0)
    run("record", "--set", "system.style=bad", expect=0)
    run("record", "--only-missing", expect=0)
    run("baseline", expect=0)
    assert "held-out slice: 2/4 pass" in run("run", "-v", "--junit", "run.xml", expect=0)
    run("run", "--set", "system.style=bad", "-v", "--out", "cand.json", "--junit", "c.xml")
    checked = run(
        "check", "--set", "system.style=bad", "-v", "--junit", "check.xml", "--report", "r.md"
    )
    assert "held-out pass rate fell" in checked  # the slice was really compared
    for fmt in ("text", "markdown", "json"):
        run("compare", "baselines/s.json", "cand.json", "--format", fmt, "--junit", f"{fmt}.xml")
        run("compare", "baselines/s.json", "cand.json", "--format", fmt, "--out", f"out.{fmt}")
    run("gate", "baselines/s.json", "cand.json", expect=1)
    run("gate", "baselines/s.json", "cand.json", key=None)
    run("show", "r-fail", "--results", "cand.json", expect=0)
    run("show", "*", "--results", "cand.json", expect=0)
    run("list", expect=0)
    run("list", "--json", expect=0)
    # The composition counts the readable cases only; the slice is named, never counted.
    assert "and a held-out slice in holdout/s (sealed" in run("suite", expect=0)
    stats = run("list", "--stats", "--json", expect=0)
    assert '"cases": 3,' in stats and '"counted": false' in stats
    assert "Suite: 3 case(s)" in (tmp_path / "r.md").read_text()
    run("validate", expect=0)
    run("holdout", "status", expect=0)
    live = run("run", "--mode", "live", "--set", "system.style=crash", "-v", "--out", "l.json")
    assert "1 error(s)" in live and "choked" not in live
    run("check", "--set", "system.style=crash", "--mode", "live", "-v")
    # Readable recordings for a new system, none for the slice: "not scored", in counts.
    run("record", "--set", "system.style=new", key=None, expect=0)
    missing = run("check", "--set", "system.style=new", "-v", expect=1)
    assert "have no recording" in missing
    run("run", "--case", "r-*", "-v", expect=0)
    run("check", "-v", key=None, expect=0)
    run("run", key=OTHER_KEY.text(), expect=2)
    recordings = tmp_path / "holdout" / "s" / "recordings.sealed"
    sealed = json.loads(recordings.read_text())
    sealed["ciphertext"] = sealed["ciphertext"][::-1]
    recordings.write_text(json.dumps(sealed))
    run("run", expect=2)
    run("check", expect=2)

    for command, output in said:
        _no_mark(f"`casegate {command}`", output)
    _no_mark("the files written", _everything_under(tmp_path))


# --- the Action --------------------------------------------------------------------------


ACTION_HELD = [
    {**case, "input": {"question": case["input"]["question"]}}
    for case in HELD
    if "explodes" not in case["id"]
]
BASE = {
    f"{MARK}-regresses": f"good: {MARK}-output-one",
    f"{MARK}-missing": "nothing here",
    f"{MARK}-forbidden": f"echo {MARK}-input-two and {MARK}-output-two",
}
WORSE = {**BASE, f"{MARK}-regresses": f"bad: {MARK}-output-one"}


def test_the_action_shows_no_held_out_case(runner: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = runner.workspace
    for name in CONFIGS:
        path = workspace / name
        path.write_text(
            path.read_text().replace(
                "  block_on_errors: true\n", "  block_on_errors: true\n  holdout_max_drop: 0.1\n"
            )
            + "holdout: holdout/support\n"
        )
    seal_slice([workspace / name for name in CONFIGS], ACTION_HELD, [BASE, WORSE])
    assert casegate("baseline", cwd=workspace, key=KEY_TEXT).returncode == 0
    git("add", "-A", cwd=workspace)
    git("commit", "-qm", "a held-out slice", cwd=workspace)
    runner.base_sha = git("rev-parse", "HEAD", cwd=workspace)
    monkeypatch.setenv("CASEGATE_HOLDOUT_KEY", KEY_TEXT)
    open_pull_request(workspace, lambda root: None)

    said: list[str] = []

    def run(**inputs: str) -> None:
        finished = runner.run(**inputs)
        said.extend([finished.stdout, finished.stderr, runner.summary()])
        output = runner.last_files / "output"
        said.append(output.read_text() if output.exists() else "")
        assert "Traceback" not in finished.stderr, finished.stderr

    run(report_dir="casegate-report")  # the candidate: blocks, with the slice compared
    assert "held-out pass rate fell" in runner.summary()
    run(config="casegate.yml")
    run(command="baseline", event_name="push")
    monkeypatch.delenv("CASEGATE_HOLDOUT_KEY")
    run()  # a fork's run: no key
    said.extend(comment["body"] for comment in runner.api.comments[PULL_NUMBER])
    for text in said:
        _no_mark("the Action", text)
    _no_mark("the Action's files", _everything_under(workspace))
