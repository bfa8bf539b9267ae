"""The slice's key and sealed files: every way they can be wrong is one clear line."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gate.holdout import keys
from gate.holdout.keys import HoldoutError
from gate.holdout.sealed import seal_text, unseal_text
from gate.holdout.store import location_of, read_recordings, read_slice
from gate.secrets import forget_all, redact
from gate.suite.config import load_config
from tests.holdout.test_holdout_helpers import (
    KEY,
    KEY_TEXT,
    OTHER_KEY,
    casegate,
    held_case,
    seal_slice,
)


def _seal(document: object = None, *, key: keys.HoldoutKey = KEY, suite: str = "s") -> str:
    return seal_text(
        document if document is not None else {"x": 1}, key, purpose="holdout-cases", suite=suite
    )


def _open(text: str | bytes, *, key: keys.HoldoutKey = KEY, suite: str = "s") -> object:
    return unseal_text(text, key, purpose="holdout-cases", suite=suite, shown="h/slice.sealed")


# --- the key -----------------------------------------------------------------------------


def test_a_key_round_trips_through_its_text() -> None:
    made = keys.generate()
    again = keys.parse(made.text())
    assert again.secret == made.secret and again.key_id == made.key_id
    assert made.text().startswith(keys.PREFIX) and len(made.text()) == len(keys.PREFIX) + 43
    assert keys.generate().key_id != made.key_id
    assert made.secret.hex() not in repr(made)  # the bytes never show in a repr


@pytest.mark.parametrize(
    "value",
    ["sk-live-1234567890", KEY_TEXT[:-1], KEY_TEXT + "A", KEY_TEXT.replace(":", ";"), "   x  "],
)
def test_a_malformed_key_is_refused_without_echoing_it(value: str) -> None:
    with pytest.raises(HoldoutError) as raised:
        keys.parse(value, "MY_KEY")
    message = str(raised.value)
    assert "MY_KEY does not hold a casegate hold-out key" in message
    assert "casegate holdout init" in message
    assert value.strip() not in message


def test_a_missing_key_names_the_variable() -> None:
    assert keys.from_environment("NOPE_KEY", {}) is None
    assert keys.from_environment("NOPE_KEY", {"NOPE_KEY": "  "}) is None
    with pytest.raises(HoldoutError, match="NOPE_KEY is not set"):
        keys.require("NOPE_KEY", {})


def test_a_key_read_from_the_environment_is_masked_everywhere() -> None:
    forget_all()
    try:
        found = keys.from_environment("K", {"K": f"  {KEY_TEXT}\n"})
        assert found is not None and found.secret == KEY.secret and found.variable == "K"
        assert KEY_TEXT not in redact(f"oops {KEY_TEXT} leaked")
    finally:
        forget_all()


# --- sealed files ----------------------------------------------------------------------


def test_a_sealed_document_opens_with_its_key_and_hides_its_text() -> None:
    text = _seal({"secret": "zqxplaintextmarker"})
    assert "zqxplaintextmarker" not in text
    assert _open(text) == {"secret": "zqxplaintextmarker"}
    assert _seal({"a": 1}) != _seal({"a": 1})  # a fresh nonce every time


def test_the_wrong_key_says_which_key_sealed_it() -> None:
    with pytest.raises(HoldoutError) as raised:
        _open(_seal(), key=OTHER_KEY)
    message = str(raised.value)
    assert f"sealed with another key (key id {KEY.key_id})" in message
    assert f"CASEGATE_HOLDOUT_KEY holds key id {OTHER_KEY.key_id}" in message
    assert KEY_TEXT not in message and OTHER_KEY.text() not in message


@pytest.mark.parametrize("field", ["ciphertext", "nonce"])
def test_a_tampered_file_is_refused(field: str) -> None:
    sealed = json.loads(_seal())
    raw = bytearray(base64.b64decode(sealed[field]))
    raw[0] ^= 1
    sealed[field] = base64.b64encode(bytes(raw)).decode()
    with pytest.raises(HoldoutError, match="altered after it was sealed"):
        _open(json.dumps(sealed))


def test_a_header_edited_to_pass_for_this_suite_is_refused() -> None:
    sealed = json.loads(_seal(suite="other"))
    sealed["suite"] = "s"
    with pytest.raises(HoldoutError, match="altered after it was sealed"):
        _open(json.dumps(sealed))


def test_another_suites_slice_is_refused_by_name() -> None:
    with pytest.raises(HoldoutError, match="sealed for the suite 'other', not 's'"):
        _open(_seal(suite="other"))


def test_a_recordings_file_cannot_stand_in_for_the_slice() -> None:
    recordings = seal_text({}, KEY, purpose="holdout-recordings", suite="s")
    with pytest.raises(HoldoutError, match="holds held-out recordings, not held-out cases"):
        _open(recordings)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("not json", "not a casegate sealed file"),
        ('{"schema": "casegate.results/1"}', "schema 'casegate.results/1'"),
        ('{"schema": "casegate.sealed/1"}', "a sealed file without"),
    ],
)
def test_what_is_not_a_sealed_file_says_so(text: str, expected: str) -> None:
    with pytest.raises(HoldoutError, match=r"h/slice\.sealed: ") as raised:
        _open(text)
    assert expected in str(raised.value)


@given(st.binary(max_size=300))
def test_any_bytes_are_refused_with_a_holdout_error(data: bytes) -> None:
    with pytest.raises(HoldoutError):
        _open(data)


@given(st.integers(min_value=0, max_value=2000), st.integers(min_value=0, max_value=7))
def test_any_flipped_bit_of_a_sealed_file_is_caught(position: int, bit: int) -> None:
    text = bytearray(_seal({"case": "zq"}).encode())
    text[position % len(text)] ^= 1 << bit
    try:
        opened = _open(bytes(text))
    except HoldoutError:
        return
    # A flip in the JSON layout (whitespace, a key's case the reader ignores) is harmless only
    # if what opens is exactly what was sealed.
    assert opened == {"case": "zq"}


# --- the two files of a slice, through the command line ------------------------------


def _project(root: Path) -> Path:
    (root / "cases").mkdir()
    (root / "cases" / "c.yaml").write_text(
        "- id: a\n  input: {question: q}\n  expect: {contains: q}\n"
    )
    (root / "bot.py").write_text("def answer(case_input, system):\n    return 'q'\n")
    config = root / "casegate.yml"
    config.write_text(
        "suite: s\ncases: cases\nsystem: {name: n, provider: python, target: 'bot:answer'}\n"
        "recordings: recordings\nholdout: holdout/s\n"
    )
    return config


def test_the_run_names_the_wrong_key_missing_file_and_tampering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = _project(tmp_path)
    casegate("record", cwd=tmp_path)
    no_slice = casegate("run", cwd=tmp_path, key=KEY_TEXT)
    assert no_slice.returncode == 2
    assert "holdout/s/slice.sealed: no such file" in no_slice.stderr
    assert "casegate holdout add" in no_slice.stderr
    seal_slice([config], [held_case("h1", "hq", contains="yes")], {"h1": "yes"})

    wrong = casegate("run", cwd=tmp_path, key=OTHER_KEY.text())
    assert wrong.returncode == 2
    assert "sealed with another key" in wrong.stderr and "Traceback" not in wrong.stderr
    assert OTHER_KEY.text() not in wrong.stderr + wrong.stdout

    bad = casegate("run", cwd=tmp_path, key="hunter2-not-a-key")
    assert bad.returncode == 2
    assert "does not hold a casegate hold-out key" in bad.stderr
    assert "hunter2" not in bad.stderr + bad.stdout

    sliced = tmp_path / "holdout" / "s" / "slice.sealed"
    document = json.loads(sliced.read_text())
    first = document["ciphertext"][0]  # another letter: "A" in place of an "A" changes nothing
    document["ciphertext"] = ("B" if first == "A" else "A") + document["ciphertext"][1:]
    sliced.write_text(json.dumps(document))
    tampered = casegate("run", cwd=tmp_path, key=KEY_TEXT)
    assert tampered.returncode == 2
    assert "holdout/s/slice.sealed: the sealed file was altered" in tampered.stderr


def test_the_files_hold_cases_and_recordings_apart(tmp_path: Path) -> None:
    config = _project(tmp_path)
    seal_slice([config], [held_case("h1", "hq", contains="yes")], {"h1": "yes"})
    location = location_of(load_config(config))
    assert location is not None
    assert (tmp_path / "holdout" / "s" / ".gitattributes").read_text() == "*.sealed -diff\n"
    assert "h1" in read_slice(location, KEY).cases[0]
    assert read_recordings(location, KEY).responses == 1
    with pytest.raises(HoldoutError, match="sealed with another key"):
        read_recordings(location, OTHER_KEY)
