"""Suite defaults: merged under every case, validated at their line, and part of the ruler."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from gate.cli import main
from gate.deciding import rulerdiff, rulerside
from gate.deciding.basetree import extract_tree
from gate.errors import CaseFileError
from gate.suite.cases import load_cases
from gate.suite.defaults import SuiteDefaults, expect_difference, merge
from tests.conftest import Project, case
from tests.fakes.actions import git, init_repository

# --- the merge ------------------------------------------------------------------------


def test_a_case_key_wins_null_removes_and_tags_are_unioned() -> None:
    defaults = SuiteDefaults(
        expect={"max_words": 50, "not_contains": "guaranteed", "normalize": ["lower"]},
        tags=["support", "smoke"],
        samples=3,
        min_pass_rate=0.8,
    )
    merged = merge(
        {
            "id": "a",
            "input": {},
            "expect": {"max_words": 10, "not_contains": None, "contains": "x"},
            "tags": ["billing", "support"],
            "samples": 5,
        },
        defaults,
    )
    assert merged.record["expect"] == {"max_words": 10, "contains": "x", "normalize": ["lower"]}
    assert merged.from_defaults == {"normalize"}
    assert merged.record["tags"] == ["billing", "support", "smoke"]
    assert merged.record["samples"] == 5  # the case's own
    assert merged.record["min_pass_rate"] == 0.8  # the default's
    assert merged.stray_nulls == []


def test_each_case_gets_its_own_copy_of_a_default_argument() -> None:
    defaults = SuiteDefaults(expect={"contains_any": ["a", "b"]})
    first = merge({"id": "a", "expect": {}}, defaults).record["expect"]
    second = merge({"id": "b", "expect": {}}, defaults).record["expect"]
    first["contains_any"].append("c")
    assert second["contains_any"] == ["a", "b"] == defaults.expect["contains_any"]


KEYS = st.sampled_from(["contains", "max_words", "regex", "normalize", "json"])
VALUES = st.one_of(st.integers(0, 9), st.text(max_size=3))


@given(
    defaults=st.dictionaries(KEYS, VALUES, max_size=5),
    own=st.dictionaries(KEYS, st.one_of(st.none(), VALUES), max_size=5),
    default_tags=st.lists(st.sampled_from("abc"), max_size=3, unique=True),
    own_tags=st.lists(st.sampled_from("bcd"), max_size=3, unique=True),
)
def test_merging_is_the_case_wins_rule(
    defaults: dict[str, Any],
    own: dict[str, Any],
    default_tags: list[str],
    own_tags: list[str],
) -> None:
    merged = merge(
        {"id": "x", "expect": own, "tags": own_tags},
        SuiteDefaults(expect=defaults, tags=default_tags),
    )
    case_wins = {key: value for key, value in {**defaults, **own}.items() if value is not None}
    if defaults:
        assert merged.record["expect"] == case_wins
        assert merged.stray_nulls == [k for k, v in own.items() if v is None and k not in defaults]
    else:  # without defaults a null is left for the check to refuse
        assert merged.record["expect"] == own and merged.stray_nulls == []
    assert merged.from_defaults == set(defaults) - set(own)
    assert set(merged.record["tags"]) == set(default_tags) | set(own_tags)
    assert len(merged.record["tags"]) == len(set(merged.record["tags"]))


@given(
    before=st.dictionaries(KEYS, VALUES, max_size=4),
    added=st.dictionaries(st.sampled_from(["contains", "max_words", "regex", "json"]), VALUES),
)
def test_only_added_checks_count_as_only_added(
    before: dict[str, Any], added: dict[str, Any]
) -> None:
    after = {**before, **{k: v for k, v in added.items() if k not in before}}
    _, only_added = expect_difference(before, after)
    assert only_added
    if before:  # taking any check away is never "only added"
        removed = dict(list(after.items())[1:])
        assert not expect_difference(after, removed)[1]


# --- loading cases with defaults --------------------------------------------------------


def cases_of(tmp_path: Path, text: str, defaults: SuiteDefaults) -> list[Any]:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return load_cases([path], display_root=tmp_path, defaults=defaults)


def problems_of(tmp_path: Path, text: str, defaults: SuiteDefaults) -> list[str]:
    with pytest.raises(CaseFileError) as caught:
        cases_of(tmp_path, text, defaults)
    return caught.value.problems


def test_cases_load_with_the_defaults_merged(tmp_path: Path) -> None:
    defaults = SuiteDefaults(expect={"max_words": 50}, tags=["critical"], samples=4)
    loaded = cases_of(
        tmp_path,
        "- {id: a, input: {}, expect: {contains: x}}\n"
        "- {id: b, input: {}}\n"  # no expect of its own: the defaults' checks are enough
        "- {id: c, input: {}, expect: {max_words: 10}, samples: 2}\n",
        defaults,
    )
    a, b, c = loaded
    assert a.expect == {"contains": "x", "max_words": 50} and a.from_defaults == {"max_words"}
    assert [name for name, _ in a.judges] == ["contains", "max_words"]
    assert b.expect == {"max_words": 50}
    assert c.expect == {"max_words": 10} and c.from_defaults == frozenset()
    assert all(one.is_critical for one in loaded)  # a default tag is every case's tag
    assert (a.samples, c.samples) == (4, 2)


def test_a_null_for_a_check_no_default_sets_is_a_typo(tmp_path: Path) -> None:
    text = "- id: a\n  input: {}\n  expect:\n    contains: x\n    max_word: null\n"
    assert problems_of(tmp_path, text, SuiteDefaults(expect={"max_words": 50})) == [
        "c.yaml:5: case 'a': expect.max_word is null, which removes a default check, but "
        "`defaults.expect` sets no 'max_word' (did you mean 'max_words'?): delete the line"
    ]
    # Without any defaults a null means nothing special: the check's own rules refuse it.
    assert problems_of(tmp_path, text.replace("max_word", "max_words"), SuiteDefaults()) == [
        "c.yaml:5: case 'a': max_words takes a whole number ≥ 0, got null"
    ]


def test_removing_every_check_leaves_a_case_that_judges_nothing(tmp_path: Path) -> None:
    text = "- id: a\n  input: {}\n  expect:\n    max_words: null\n"
    problems = problems_of(tmp_path, text, SuiteDefaults(expect={"max_words": 50}))
    assert problems == [
        "c.yaml:4: case 'a': expect names no check (a modifier alone judges nothing)"
    ]


def test_expect_hash_is_of_the_merged_expectation(tmp_path: Path) -> None:
    text = "- {id: a, input: {}, expect: {contains: x}}\n"
    own = cases_of(tmp_path, text, SuiteDefaults())[0]
    # A suite without defaults keeps the hashes its baselines hold.
    blob = json.dumps({"contains": "x"}, sort_keys=True)
    assert own.expect_hash() == hashlib.sha256(blob.encode()).hexdigest()[:16]
    with_default = cases_of(tmp_path, text, SuiteDefaults(expect={"max_words": 50}))[0]
    written_out = cases_of(
        tmp_path, "- {id: a, input: {}, expect: {contains: x, max_words: 50}}\n", SuiteDefaults()
    )[0]
    assert with_default.expect_hash() == written_out.expect_hash() != own.expect_hash()
    raised = cases_of(tmp_path, text, SuiteDefaults(expect={"max_words": 80}))[0]
    assert raised.expect_hash() != with_default.expect_hash()


# --- the config ----------------------------------------------------------------------


def line_of(path: Path, fragment: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if fragment in line)


@pytest.mark.parametrize(
    ("expect", "fragment", "message"),
    [
        (
            {"contains": "x", "max_wrds": 3},
            "max_wrds",
            "defaults.expect: unknown check 'max_wrds' (did you mean 'max_words'?)",
        ),
        (
            {"contains": "x", "max_words": "many"},
            "max_words",
            'defaults.expect: max_words takes a whole number ≥ 0, got "many"',
        ),
        (
            {"contains": None},
            "contains",
            "defaults.expect: contains is null: a default removes nothing (only a case's null does)",
        ),
        (
            {"normalize": ["shout"]},
            "normalize",
            "defaults.expect: normalize: unknown step 'shout' (known: strip, lower, "
            "collapse_whitespace)",
        ),
    ],
)
def test_a_bad_default_names_the_config_and_its_line(
    project: Project,
    capsys: pytest.CaptureFixture[str],
    expect: dict[str, Any],
    fragment: str,
    message: str,
) -> None:
    project.write_cases([case("a", "hello", contains="hello")])
    path = project.write_config(defaults={"expect": expect})
    assert main(["validate"]) == 2
    err = capsys.readouterr().err
    line = line_of(path, fragment)
    assert f"casegate: {path.name}:{line}: {message}\n" == err
    assert "Traceback" not in err


def test_an_unknown_key_under_defaults_has_a_hint(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("a", "hello", contains="hello")])
    project.write_config(defaults={"tag": ["smoke"]})
    assert main(["validate"]) == 2
    assert "unknown key 'defaults.tag' (did you mean 'tags'?)" in capsys.readouterr().err


def test_a_bad_default_from_set_is_blamed_on_the_set(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("a", "hello", contains="hello")])
    assert main(["validate", "--set", "defaults.expect.max_words=many"]) == 2
    assert capsys.readouterr().err.startswith(
        "casegate: --set defaults.expect.max_words=many: defaults.expect: max_words takes"
    )


# --- end to end ------------------------------------------------------------------------


def test_a_run_judges_by_the_merged_checks(
    project: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The echo bot answers "plain: QUESTION": the default forbids "plain".
    project.write_config(
        defaults={"expect": {"not_contains": "plain"}, "tags": ["smoke"], "samples": 2}
    )
    project.write_cases(
        [
            case("plain-is-forbidden", "hello", contains="hello"),
            case("opted-out", "hello", contains="hello", not_contains=None),
            case("own-samples", "hi", contains="hi", not_contains=None, fields_={"samples": 1}),
        ]
    )
    out = tmp_path / "r.json"
    assert main(["run", "--mode", "live", "--out", str(out), "--quiet"]) == 0
    results = {c["id"]: c for c in json.loads(out.read_text())["cases"]}
    assert results["plain-is-forbidden"]["status"] == "fail"
    assert "not_contains" in results["plain-is-forbidden"]["reason"]
    assert results["opted-out"]["status"] == "pass"
    assert {i: c["samples"] for i, c in results.items()} == {
        "opted-out": 2,
        "own-samples": 1,
        "plain-is-forbidden": 2,
    }
    assert all(c["tags"] == ["smoke"] for c in results.values())
    assert main(["list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {row["id"]: row["samples"] for row in listed} == {
        "opted-out": 2,
        "own-samples": 1,
        "plain-is-forbidden": 2,
    }


# --- the ruler: loosening through defaults is no bypass ------------------------------


GUARDED = {"not_contains": "guaranteed"}
CASES = [
    case("greet", "hello", contains="hello", fields_={"critical": True}),
    case("echo", "world", contains="world"),
]


@pytest.fixture
def repo(project: Project) -> Project:
    """A repository whose base commit holds a suite with a default check, and its baseline."""
    project.write_config(defaults={"expect": GUARDED})
    project.write_cases(CASES)
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    init_repository(project.root)
    return project


def edit_defaults(project: Project, defaults: dict[str, Any]) -> None:
    data = yaml.safe_load(project.config_path.read_text())
    data["defaults"] = defaults
    project.config_path.write_text(yaml.safe_dump(data, sort_keys=False))


def changes_after(repo: Project, tmp_path: Path) -> list[str]:
    tree, refused = extract_tree(repo.root, "HEAD", tmp_path / "scratch")
    base = rulerside.load_side(tree / "casegate.yml", (), tree, refused=refused)
    head = rulerside.load_side(repo.config_path, (), repo.root)
    found = rulerdiff.compare_rulers(base, head)
    return [f"{'-' if c.loosens else '+'} {c.describe()} @ {c.where}" for c in found]


def test_removing_a_default_check_is_a_loosening_change_of_every_case(
    repo: Project, tmp_path: Path
) -> None:
    edit_defaults(repo, {"expect": {}})
    line = line_of(repo.config_path, "  expect:")  # where the pull request changed it
    assert changes_after(repo, tmp_path) == [
        f"- case echo: expect changed without a version bump: not_contains removed "
        f"(through `defaults.expect`) @ casegate.yml:{line}",
        f"- critical case greet: expect changed without a version bump: not_contains removed "
        f"(through `defaults.expect`) @ casegate.yml:{line}",
    ]


def test_raising_a_default_limit_loosens_and_adding_a_default_check_tightens(
    repo: Project, tmp_path: Path
) -> None:
    edit_defaults(repo, {"expect": {**GUARDED, "max_words": 80}})
    assert [change.split(" @ ")[0] for change in changes_after(repo, tmp_path)] == [
        "+ case echo: expect changed without a version bump: max_words added "
        "(through `defaults.expect`)",
        "+ critical case greet: expect changed without a version bump: max_words added "
        "(through `defaults.expect`)",
    ]
    edit_defaults(repo, {"expect": {"not_contains": "guaranteed!"}, "min_pass_rate": 0.5})
    found = {change.split(" @ ")[0] for change in changes_after(repo, tmp_path)}
    assert "- case echo: min_pass_rate 1 → 0.5" in found
    assert (
        "- critical case greet: expect changed without a version bump: "
        "not_contains 'guaranteed' → 'guaranteed!' (through `defaults.expect`)" in found
    )


def test_a_pull_request_that_drops_a_default_a_critical_case_relied_on_is_blocked(
    repo: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    # The change under test makes the bot promise what the default check forbids, and
    # drops that check from the defaults: judged by its own ruler, every case passes.
    repo.write_system(
        "def answer(case_input, system):\n"
        "    return case_input['question'] + ': refund guaranteed'\n"
    )
    edit_defaults(repo, {"expect": {}})
    git("checkout", "-q", "-b", "pr", cwd=repo.root)
    git("commit", "-qam", "drop the guard", cwd=repo.root)
    assert main(["check", "--base", "main", "--mode", "live", "--quiet"]) == 1
    out = capsys.readouterr().out
    # Nothing regressed under the pull request's own checks: the ruler change alone blocks.
    assert "regressions (0)" in out and "critical case(s) passed on the baseline" not in out
    assert (
        "✗ loosens: critical case greet: expect changed without a version bump: "
        "not_contains removed (through `defaults.expect`)" in out
    )
    assert "loosens the ruler" in out
    # Accepted on purpose, the pull request's own ruler judges it: nothing else blocks.
    code = main(["check", "--base", "main", "--mode", "live", "--quiet", "--accept-ruler-change"])
    assert code == 0, capsys.readouterr().out
