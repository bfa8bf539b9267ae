"""`casegate holdout init|add|rotate|reveal|status`, end to end on a temporary project."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from gate.holdout import casefiles, keys, rotation
from gate.holdout.store import location_of, read_recordings, read_slice
from gate.suite.config import load_config
from tests.holdout.test_holdout_helpers import KEY, KEY_TEXT, casegate

BOT = "def answer(case_input, system):\n    return 'answer: ' + case_input['question']\n"


def _project(root: Path, readable: int = 6) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "bot.py").write_text(BOT)
    (root / "cases").mkdir()
    lines = ["# the readable cases\n"]
    for index in range(readable):
        lines.append(
            f"- id: r{index}\n  input: {{question: 'q{index}'}}\n  expect: {{contains: 'q{index}'}}\n"
        )
    (root / "cases" / "main.yaml").write_text("".join(lines))
    config = root / "casegate.yml"
    config.write_text(
        "suite: s\ncases: cases\nsystem: {name: n, provider: python, target: 'bot:answer'}\n"
        "recordings: recordings\nbaseline: baselines/s.json\nholdout: holdout/s\n"
    )
    return config


def _fresh(root: Path, count: int = 4, name: str = "fresh.yaml") -> Path:
    path = root / name
    path.write_text(
        "".join(
            f"- id: h{index}\n  input: {{question: 'h{index}'}}\n  expect: {{contains: 'h{index}'}}\n"
            f"  added: 2026-04-12\n"
            for index in range(count)
        )
    )
    return path


def _held_ids(root: Path) -> list[str]:
    location = location_of(load_config(root / "casegate.yml"))
    assert location is not None
    return sorted(yaml.safe_load(text)["id"] for text in read_slice(location, KEY).cases)


# --- init ------------------------------------------------------------------------------


def test_init_prints_a_new_key_once_on_stdout(tmp_path: Path) -> None:
    _project(tmp_path)
    finished = casegate("holdout", "init", cwd=tmp_path)
    assert finished.returncode == 0, finished.stderr
    printed = finished.stdout.strip()
    made = keys.parse(printed)
    assert finished.stdout.count(printed) == 1 and printed not in finished.stderr
    assert f"key id {made.key_id}" in finished.stderr
    assert "CASEGATE_HOLDOUT_KEY" in finished.stderr and "holdout add" in finished.stderr
    again = casegate("holdout", "init", cwd=tmp_path)
    assert again.stdout.strip() != printed  # never the same key twice


def test_init_warns_that_a_new_key_cannot_open_an_existing_slice(tmp_path: Path) -> None:
    _project(tmp_path)
    casegate("holdout", "add", str(_fresh(tmp_path)), cwd=tmp_path, key=KEY_TEXT)
    finished = casegate("holdout", "init", cwd=tmp_path)
    assert finished.returncode == 0
    assert f"sealed with key id {KEY.key_id}: a new key cannot open it" in finished.stderr


# --- add -------------------------------------------------------------------------------


def test_add_seals_cases_and_their_recordings_and_removes_the_readable_copies(
    tmp_path: Path,
) -> None:
    _project(tmp_path)
    casegate("record", cwd=tmp_path)  # readable recordings of r0…r5
    finished = casegate(
        "holdout",
        "add",
        "cases/main.yaml",
        "--case",
        "r1",
        "--case",
        "r4",
        cwd=tmp_path,
        key=KEY_TEXT,
    )
    assert finished.returncode == 0, finished.stderr
    assert "sealed 2 case(s)" in finished.stderr and "2 recording file(s)" in finished.stderr
    assert _held_ids(tmp_path) == ["r1", "r4"]
    text = (tmp_path / "cases" / "main.yaml").read_text()
    assert text.startswith("# the readable cases\n")  # the file's comments are kept
    assert "r1" not in text and "r4" not in text and "id: r2" in text
    assert not (tmp_path / "recordings" / "r1.json").exists()
    location = location_of(load_config(tmp_path / "casegate.yml"))
    assert location is not None
    assert sorted(read_recordings(location, KEY).documents) == ["r1", "r4"]
    for sealed in (location.slice_path, location.recordings_path):
        document = json.loads(sealed.read_text())
        assert "question" not in sealed.read_text() and "r1" not in document


def test_add_deletes_an_emptied_file_and_keeps_dates(tmp_path: Path) -> None:
    _project(tmp_path)
    fresh = _fresh(tmp_path)
    finished = casegate("holdout", "add", str(fresh), cwd=tmp_path, key=KEY_TEXT)
    assert finished.returncode == 0, finished.stderr
    assert not fresh.exists()
    assert "4 of them have no recording yet" in finished.stderr
    location = location_of(load_config(tmp_path / "casegate.yml"))
    assert location is not None
    first = yaml.safe_load(read_slice(location, KEY).cases[0])
    assert str(first["added"]) == "2026-04-12" and not isinstance(first["added"], str)


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("  critical: true\n", "is critical"),
        ("  expect: {check: 'mod:fn'}\n", "custom check"),
        ("  expect: {judge: {rubric: polite, mode: pairwise}}\n", "pairwise judge"),
    ],
)
def test_add_refuses_what_a_held_out_case_cannot_be(
    tmp_path: Path, case: str, expected: str
) -> None:
    _project(tmp_path)
    (tmp_path / "mod.py").write_text("def fn(text, case):\n    return True\n")
    body = "- id: x1\n  input: {question: q}\n"
    body += case if "expect" in case else "  expect: {contains: q}\n" + case
    config = tmp_path / "casegate.yml"
    if "judge" in case:
        config.write_text(
            config.read_text() + "judge: {provider: openai, model: m-2025-01-01, "
            "prompt_version: 1, temperature: 0}\n"
        )
    (tmp_path / "x.yaml").write_text(body)
    finished = casegate("holdout", "add", "x.yaml", cwd=tmp_path, key=KEY_TEXT)
    assert finished.returncode == 2, finished.stderr
    assert "x.yaml:1: case 'x1'" in finished.stderr and expected in finished.stderr
    assert (tmp_path / "x.yaml").exists() and not (tmp_path / "holdout").exists()


def test_add_refuses_an_id_the_slice_or_the_suite_holds(tmp_path: Path) -> None:
    _project(tmp_path)
    casegate("holdout", "add", str(_fresh(tmp_path, 2)), cwd=tmp_path, key=KEY_TEXT)
    again = casegate(
        "holdout", "add", str(_fresh(tmp_path, 1, "again.yaml")), cwd=tmp_path, key=KEY_TEXT
    )
    assert again.returncode == 2
    assert "the slice already holds a case with this id" in again.stderr
    (tmp_path / "dup.yaml").write_text(
        "- id: r0\n  input: {question: q}\n  expect: {contains: q}\n"
    )
    dup = casegate("holdout", "add", "dup.yaml", cwd=tmp_path, key=KEY_TEXT)
    assert dup.returncode == 2 and "is also a readable case of the suite" in dup.stderr
    assert _held_ids(tmp_path) == ["h0", "h1"]


def test_add_without_the_key_or_a_holdout_says_how(tmp_path: Path) -> None:
    config = _project(tmp_path)
    no_key = casegate("holdout", "add", str(_fresh(tmp_path)), cwd=tmp_path)
    assert no_key.returncode == 2 and "CASEGATE_HOLDOUT_KEY is not set" in no_key.stderr
    config.write_text(config.read_text().replace("holdout: holdout/s\n", ""))
    undeclared = casegate("holdout", "add", "fresh.yaml", cwd=tmp_path, key=KEY_TEXT)
    assert undeclared.returncode == 2
    assert "declares no held-out slice: add `holdout: holdout/s`" in undeclared.stderr


def test_add_warns_about_cases_already_in_git_history(tmp_path: Path) -> None:
    _project(tmp_path)
    _fresh(tmp_path)
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x"],
    ):
        subprocess.run(["git", *args], cwd=tmp_path, check=True)
    finished = casegate("holdout", "add", "fresh.yaml", cwd=tmp_path, key=KEY_TEXT)
    assert finished.returncode == 0, finished.stderr
    assert "fresh.yaml is in this repository's git history" in finished.stderr


# --- rotate ----------------------------------------------------------------------------


def test_the_same_seed_chooses_the_same_swap() -> None:
    held, readable = [f"h{i}" for i in range(10)], [f"r{i}" for i in range(30)]
    first = rotation.choose(held, readable, 0.3, 42)
    assert first == rotation.choose(list(reversed(held)), readable, 0.3, 42)
    assert len(first[0]) == len(first[1]) == 3
    assert any(rotation.choose(held, readable, 0.3, seed) != first for seed in range(5))
    assert rotation.swap_size(0.01, 10, 30) == 1 and rotation.swap_size(1.0, 10, 4) == 4
    with pytest.raises(ValueError, match="above 0"):
        rotation.swap_size(0, 10, 30)


def test_rotate_is_reproducible_and_logged_in_counts(tmp_path: Path) -> None:
    one = tmp_path / "one"
    _project(one, readable=8)
    casegate("record", cwd=one)
    added = casegate("holdout", "add", str(_fresh(one, 6)), cwd=one, key=KEY_TEXT)
    assert added.returncode == 0, added.stderr
    casegate("record", cwd=one, key=KEY_TEXT)
    two = tmp_path / "two"
    shutil.copytree(one, two)

    first = casegate(
        "holdout", "rotate", "--fraction", "0.5", "--seed", "11", cwd=one, key=KEY_TEXT
    )
    second = casegate(
        "holdout", "rotate", "--fraction", "0.5", "--seed", "11", cwd=two, key=KEY_TEXT
    )
    assert second.stdout.splitlines()[1] == first.stdout.splitlines()[1]
    assert first.returncode == 0, first.stderr
    assert "rotation 1 (seed 11, fraction 0.5): 3 held-out case(s) out" in first.stdout
    assert "3 readable case(s) into the slice (6 held out)" in first.stdout
    assert "--fraction 0.5 --seed 11" in first.stdout
    assert not any(f"h{i}" in first.stdout for i in range(6))  # counts, never ids
    assert _held_ids(one) == _held_ids(two)
    for name in ("main.yaml", "from-holdout.yaml"):
        assert (one / "cases" / name).read_text() == (two / "cases" / name).read_text()
    assert sorted(p.name for p in (one / "recordings").glob("*.json")) == sorted(
        p.name for p in (two / "recordings").glob("*.json")
    )
    moved_out = yaml.safe_load((one / "cases" / "from-holdout.yaml").read_text())
    assert len(moved_out) == 3 and all(case["id"].startswith("h") for case in moved_out)
    for case in moved_out:  # their recordings came out with them
        assert (one / "recordings" / f"{case['id']}.json").is_file()
    location = location_of(load_config(one / "casegate.yml"))
    assert location is not None
    sliced = read_slice(location, KEY)
    assert sliced.rotation["number"] == 1 and sliced.rotation["seed"] == 11
    assert sliced.log[-1] == {
        "at": sliced.rotation["at"],
        "action": "rotate",
        "rotation": 1,
        "seed": 11,
        "fraction": 0.5,
        "moved_out": 3,
        "moved_in": 3,
        "size": 6,
    }
    assert sorted(read_recordings(location, KEY).documents) == _held_ids(one)
    run = casegate("run", cwd=one, key=KEY_TEXT)  # the suite still replays, both parts of it
    assert run.returncode == 0, run.stderr
    assert "held-out slice: 6/6 pass" in run.stdout


def test_rotate_refuses_a_target_the_suite_does_not_read(tmp_path: Path) -> None:
    _project(tmp_path)
    casegate("holdout", "add", str(_fresh(tmp_path)), cwd=tmp_path, key=KEY_TEXT)
    before = (tmp_path / "holdout" / "s" / "slice.sealed").read_bytes()
    finished = casegate(
        "holdout",
        "rotate",
        "--fraction",
        "0.5",
        "--to",
        "elsewhere.yaml",
        cwd=tmp_path,
        key=KEY_TEXT,
    )
    assert finished.returncode == 2
    assert "does not read this file" in finished.stderr
    assert (tmp_path / "holdout" / "s" / "slice.sealed").read_bytes() == before
    bad = casegate("holdout", "rotate", "--fraction", "1.5", cwd=tmp_path, key=KEY_TEXT)
    assert bad.returncode == 2 and "--fraction" in bad.stderr


# --- reveal and status -----------------------------------------------------------------


def test_reveal_needs_yes_then_writes_everything_out_loudly(tmp_path: Path) -> None:
    _project(tmp_path)
    casegate("holdout", "add", str(_fresh(tmp_path, 3)), cwd=tmp_path, key=KEY_TEXT)
    casegate("record", cwd=tmp_path, key=KEY_TEXT)
    refused = casegate("holdout", "reveal", cwd=tmp_path, key=KEY_TEXT)
    assert refused.returncode == 2 and "Rerun with --yes" in refused.stderr
    assert (tmp_path / "holdout" / "s" / "slice.sealed").exists()
    finished = casegate("holdout", "reveal", "--yes", cwd=tmp_path, key=KEY_TEXT)
    assert finished.returncode == 0, finished.stderr
    assert "REVEALED: 3 held-out case(s)" in finished.stderr
    revealed = yaml.safe_load((tmp_path / "cases" / "revealed-holdout.yaml").read_text())
    assert [case["id"] for case in revealed] == ["h0", "h1", "h2"]
    assert not (tmp_path / "holdout" / "s" / "slice.sealed").exists()
    assert (tmp_path / "recordings" / "h0.json").is_file()
    config = tmp_path / "casegate.yml"
    config.write_text(config.read_text().replace("holdout: holdout/s\n", ""))
    run = casegate("run", cwd=tmp_path)  # the revealed cases replay as readable ones
    assert run.returncode == 0, run.stderr
    assert "9/9 passed" in run.stdout


def test_status_counts_with_the_key_and_only_the_header_without(tmp_path: Path) -> None:
    _project(tmp_path)
    casegate("holdout", "add", str(_fresh(tmp_path, 3)), cwd=tmp_path, key=KEY_TEXT)
    without = casegate("holdout", "status", cwd=tmp_path)
    assert without.returncode == 0
    assert f"sealed with key id {KEY.key_id}" in without.stdout
    assert "not known without it" in without.stdout
    found = casegate("holdout", "status", cwd=tmp_path, key=KEY_TEXT)
    assert "3 held-out case(s), 0 recorded response(s); rotation 0" in found.stdout
    assert "add: moved_in 3, size 3" in found.stdout
    assert not any(f"h{i}" in found.stdout for i in range(3))


# --- cutting cases out of readable files ---------------------------------------------


def test_cutting_cases_out_keeps_the_rest_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "# head\n- id: a\n  input: {q: 1}\n  expect: {contains: x}\n"
        "# about b\n-\n  id: b\n  input: {q: 2}\n  expect: {contains: y}\n"
        "- id: c  # last\n  input: {q: 3}\n  expect: {contains: z}\n"
    )
    assert casefiles.remove(path, {"b"}) == "rewritten"
    assert path.read_text() == (
        "# head\n- id: a\n  input: {q: 1}\n  expect: {contains: x}\n"
        "# about b\n- id: c  # last\n  input: {q: 3}\n  expect: {contains: z}\n"
    )
    assert casefiles.remove(path, {"c"}) == "rewritten"
    assert yaml.safe_load(path.read_text()) == [
        {"id": "a", "input": {"q": 1}, "expect": {"contains": "x"}}
    ]
    assert casefiles.remove(path, {"a"}) == "deleted" and not path.exists()


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("flow.yaml", "[{id: a, input: {}, expect: {x: 1}}, {id: b, input: {}, expect: {x: 2}}]\n"),
        (
            "lines.jsonl",
            '{"id": "a", "input": {}, "expect": {"x": 1}}\n\n{"id": "b", "input": {}, "expect": {"x": 2}}\n',
        ),
    ],
)
def test_cutting_from_flow_lists_and_jsonl(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    casefiles.remove(path, {"a"})
    kept = [record.case_id for record in casefiles.records(path)]
    assert kept == ["b"]
    assert casefiles.remove(path, {"b"}) == "deleted"


def test_appended_cases_read_back_as_written(tmp_path: Path) -> None:
    path = tmp_path / "out.yaml"
    texts = [casefiles.case_text({"id": "a", "input": {"q": "line one\nline two"}, "expect": {}})]
    casefiles.append(path, texts, "heading")
    casefiles.append(path, [casefiles.case_text({"id": "b", "input": {}, "expect": {}})], "x")
    assert path.read_text().startswith("# heading\n")
    assert [case["id"] for case in yaml.safe_load(path.read_text())] == ["a", "b"]
    assert yaml.safe_load(path.read_text())[0]["input"]["q"] == "line one\nline two"


@given(
    st.lists(st.sampled_from(["block", "dash", "comment"]), min_size=1, max_size=8),
    st.data(),
)
def test_cutting_any_subset_keeps_exactly_the_others(
    layouts: list[str], data: st.DataObject
) -> None:
    ids = [f"c{index}" for index in range(len(layouts))]
    parts = []
    for case_id, layout in zip(ids, layouts, strict=True):
        if layout == "comment":
            parts.append(f"# about {case_id}\n")
        head = f"-\n  id: {case_id}\n" if layout == "dash" else f"- id: {case_id}\n"
        parts.append(
            head + "  input: {q: 'a: b'}\n  expect:\n    contains: |\n      two\n      lines\n"
        )
    dropped = set(data.draw(st.lists(st.sampled_from(ids), unique=True)))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cases.yaml"
        path.write_text("".join(parts))
        outcome = casefiles.remove(path, dropped)
        if outcome == "deleted":
            assert dropped == set(ids)
            return
        kept = yaml.safe_load(path.read_text())
    assert [case["id"] for case in kept] == [i for i in ids if i not in dropped]
    assert all(case["expect"]["contains"] == "two\nlines\n" for case in kept)
