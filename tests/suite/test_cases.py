"""Loading cases: YAML and JSONL, and one file:line problem per mistake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.cli import main
from gate.errors import CaseFileError
from gate.suite.cases import load_cases, resolve_case_paths
from tests.conftest import Project


def load_text(tmp_path: Path, name: str, text: str) -> list:  # type: ignore[type-arg]
    path = tmp_path / name
    path.write_text(text)
    return load_cases([path], display_root=tmp_path)


def problems_of(tmp_path: Path, name: str, text: str) -> list[str]:
    with pytest.raises(CaseFileError) as caught:
        load_text(tmp_path, name, text)
    return caught.value.problems


def test_yaml_list_single_mapping_and_jsonl(tmp_path: Path) -> None:
    listed = load_text(
        tmp_path,
        "a.yaml",
        "- {id: b, input: {q: 1}, expect: {contains: x}}\n"
        "- {id: a, input: {}, expect: {max_words: 3}, tags: [critical]}\n",
    )
    assert [c.id for c in listed] == ["a", "b"]
    assert listed[0].is_critical and not listed[1].is_critical
    single = load_text(tmp_path, "one.yml", "id: one\ninput: {}\nexpect: {json: true}\nweight: 2\n")
    assert single[0].weight == 2 and single[0].version == 1
    lines = load_text(
        tmp_path,
        "c.jsonl",
        '{"id": "j1", "input": {}, "expect": {"json": true}}\n\n'
        '{"id": "j2", "input": {}, "expect": {"json": true}, "critical": true}\n',
    )
    assert [c.line for c in lines] == [1, 3]
    assert lines[1].is_critical


def test_unknown_check_names_file_line_and_key(tmp_path: Path) -> None:
    text = "- id: a\n  input: {}\n  expect:\n    contains: x\n    contain: y\n"
    assert problems_of(tmp_path, "bad.yaml", text) == [
        "bad.yaml:5: case 'a': unknown check 'contain' in expect (did you mean 'contains'?)"
    ]


def test_every_problem_is_reported_once_each(tmp_path: Path) -> None:
    text = (
        "- id: ok\n  input: {}\n  expect: {json: true}\n"
        "- id: no-expect\n  input: {}\n"
        "- id: has space\n  input: {}\n  expect: {json: true}\n"
        "- id: ok\n  input: {}\n  expect: {json: true}\n"
        "- id: extra\n  input: {}\n  expect: {json: true}\n  critcal: true\n"
        "- id: badarg\n  input: {}\n  expect:\n    max_words: many\n"
    )
    problems = problems_of(tmp_path, "many.yaml", text)
    assert problems == [
        "many.yaml:4: case 'no-expect': missing required field 'expect'",
        "many.yaml:6: case 'has space': id: String should match pattern '^[A-Za-z0-9._-]+$'",
        "many.yaml:9: duplicate case id 'ok' (first at many.yaml:1)",
        "many.yaml:15: case 'extra': unknown field 'critcal' (did you mean 'critical'?)",
        "many.yaml:19: case 'badarg': max_words takes a whole number ≥ 0, got \"many\"",
    ]


def test_yaml_syntax_error_has_a_line(tmp_path: Path) -> None:
    problems = problems_of(tmp_path, "syntax.yaml", "- id: a\n  input: {\n  expect: x\n- nope: [\n")
    assert len(problems) == 1
    assert problems[0].startswith("syntax.yaml:")
    assert "invalid YAML" in problems[0]
    line = int(problems[0].split(":")[1])
    assert 2 <= line <= 5


def test_jsonl_syntax_error_has_its_line(tmp_path: Path) -> None:
    problems = problems_of(
        tmp_path, "x.jsonl", '{"id": "a", "input": {}, "expect": {"json": true}}\n{oops\n'
    )
    assert problems[0].startswith("x.jsonl:2: invalid JSON")


def test_input_must_be_a_mapping_and_strict_types(tmp_path: Path) -> None:
    problems = problems_of(
        tmp_path,
        "t.yaml",
        "- {id: a, input: text, expect: {json: true}}\n"
        "- {id: 7, input: {}, expect: {json: true}}\n",
    )
    assert problems[0].startswith("t.yaml:1: case 'a': input:")
    assert problems[1].startswith("t.yaml:2: id:")


def test_duplicates_across_files(tmp_path: Path) -> None:
    (tmp_path / "one.yaml").write_text("id: a\ninput: {}\nexpect: {json: true}\n")
    (tmp_path / "two.jsonl").write_text('{"id": "a", "input": {}, "expect": {"json": true}}\n')
    with pytest.raises(CaseFileError) as caught:
        load_cases([tmp_path / "one.yaml", tmp_path / "two.jsonl"], display_root=tmp_path)
    assert caught.value.problems == ["two.jsonl:1: duplicate case id 'a' (first at one.yaml:1)"]


def test_resolve_paths_folders_globs_and_misses(tmp_path: Path) -> None:
    (tmp_path / "cases" / "sub").mkdir(parents=True)
    for name in ("cases/a.yaml", "cases/sub/b.jsonl", "cases/notes.md", "extra.yml"):
        (tmp_path / name).write_text("")
    files, problems = resolve_case_paths(["cases", "*.yml", "missing/*.yaml"], tmp_path)
    assert [f.relative_to(tmp_path).as_posix() for f in files] == [
        "cases/a.yaml",
        "cases/sub/b.jsonl",
        "extra.yml",
    ]
    assert problems == ["cases: 'missing/*.yaml' matches no .yaml, .yml or .jsonl file"]


def test_expect_hash_changes_with_expectations(tmp_path: Path) -> None:
    first = load_text(tmp_path, "h1.yaml", "id: a\ninput: {}\nexpect: {max_words: 3}\n")[0]
    second = load_text(tmp_path, "h2.yaml", "id: a\ninput: {}\nexpect: {max_words: 4}\n")[0]
    assert first.expect_hash() != second.expect_hash()


def test_an_impossible_date_names_its_line(tmp_path: Path) -> None:
    text = "- id: a\n  input: {}\n  expect: {json: true}\n  added: 2026-02-30\n"
    assert problems_of(tmp_path, "date.yaml", text) == [
        "date.yaml:4: invalid date '2026-02-30': day is out of range for month"
    ]


def test_a_bad_case_file_is_exit_2_through_the_cli_without_a_traceback(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_text(
        "cases/date.yaml", "id: a\ninput: {}\nexpect: {json: true}\nadded: 2026-02-30\n"
    )
    assert main(["validate"]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == "casegate: cases/date.yaml:4: invalid date '2026-02-30': day is out of range for month\n"
    )


@pytest.mark.parametrize("name", ["deep.yaml", "deep.jsonl"])
def test_deep_nesting_is_refused_not_a_recursion_error(tmp_path: Path, name: str) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    text = deep + "\n" if name.endswith(".jsonl") else f"id: a\ninput: {{x: {deep}}}\n"
    (problem,) = problems_of(tmp_path, name, text)
    assert problem.startswith(f"{name}:")
    assert "nest" in problem  # "nested more than 100 levels deep", or libyaml's nesting limit


@pytest.mark.parametrize("name", ["just.yaml", "just.jsonl"])
def test_nesting_past_the_limit_but_within_python_is_refused_too(tmp_path: Path, name: str) -> None:
    inner = "[" * 150 + "]" * 150
    record = {"id": "a", "input": {"x": "PLACEHOLDER"}, "expect": {"json": True}}
    text = json.dumps(record).replace('"PLACEHOLDER"', inner) + "\n"
    (problem,) = problems_of(tmp_path, name, text)
    assert problem.startswith(f"{name}:1: ")
    assert problem.endswith("nested more than 100 levels deep")
    fine = json.dumps(record).replace('"PLACEHOLDER"', "[" * 90 + "]" * 90) + "\n"
    assert [case.id for case in load_text(tmp_path, name, fine)] == ["a"]


def test_a_5000_digit_number_is_refused_with_its_line(tmp_path: Path) -> None:
    digits = "9" * 5000
    yaml_problems = problems_of(
        tmp_path, "n.yaml", f"- id: a\n  input: {{n: {digits}}}\n  expect: {{json: true}}\n"
    )
    assert yaml_problems == [f"n.yaml:2: the number '{digits[:39]}…' has more than 4300 digits"]
    jsonl = f'{{"id": "a", "input": {{"n": {digits}}}, "expect": {{"json": true}}}}\n'
    assert problems_of(tmp_path, "n.jsonl", jsonl) == [
        "n.jsonl:1: invalid JSON: a number has more than 4300 digits"
    ]


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    lines = [
        "- id: a",
        "  expect: {json: true}",
        "  input:",
        "    l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]",
    ]
    lines += [f"    l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 10)}]" for n in range(1, 9)]
    (problem,) = problems_of(tmp_path, "bomb.yaml", "\n".join(lines) + "\n")
    assert problem.startswith("bomb.yaml:")
    assert "aliases expand this document by more than 1,000,000 nodes" in problem
    # Aliases that expand a little are fine.
    small = "\n".join(lines[:6]) + "\n"
    assert [case.id for case in load_text(tmp_path, "small.yaml", small)] == ["a"]


def test_case_ids_are_at_most_200_characters(tmp_path: Path) -> None:
    text = f"- {{id: {'x' * 201}, input: {{}}, expect: {{json: true}}}}\n"
    (problem,) = problems_of(tmp_path, "long.yaml", text)
    assert problem.startswith("long.yaml:1: case 'xxxxxxxx")
    assert problem.endswith("id: String should have at most 200 characters")
    assert len(problem) < 150  # the id is shortened in the message
    assert load_text(tmp_path, "ok.yaml", text.replace("x" * 201, "x" * 200))[0].id == "x" * 200


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("samples: 0", "samples: Input should be greater than or equal to 1"),
        ("samples: 1.5", "samples: Input should be a valid integer"),
        ("samples: true", "samples: Input should be a valid integer"),
        ("samples: 1000000000", "samples: Input should be less than or equal to 1000"),
        ("min_pass_rate: 1.5", "min_pass_rate: Input should be less than or equal to 1"),
        ("min_pass_rate: -0.1", "min_pass_rate: Input should be greater than or equal to 0"),
        ("weight: .inf", "weight: Input should be a finite number"),
    ],
)
def test_per_case_samples_and_thresholds_are_checked(
    tmp_path: Path, field: str, message: str
) -> None:
    text = f"- id: a\n  input: {{}}\n  expect: {{json: true}}\n  {field}\n"
    assert problems_of(tmp_path, "t.yaml", text) == [f"t.yaml:4: case 'a': {message}"]
