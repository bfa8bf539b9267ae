"""`casegate import promptfoo`: score assertions, defaultTest as `defaults:`, draft cases,
and the test shapes promptfoo's own examples use (vars files, code and media vars).

The configs are written here, small, from promptfoo's documentation. The score checks
(`rouge_n`, `bleu`, the graded judge, the RAG checks) are built elsewhere, so these tests
read the YAML the import writes rather than running those checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gate.errors import CasegateError
from gate.importers.promptfoo import import_promptfoo
from gate.importers.promptfoo.scores import build_problem, shape_problem
from tests.importers.test_import_promptfoo import cases_of, validate_all, write_config


def imported(config: Path, out: Path) -> tuple[Any, dict[str, dict[str, Any]], dict[str, Any], str]:
    """(outcome, the cases as written by id, casegate.yml, MIGRATION.md)."""
    outcome = import_promptfoo(config, out)
    cases_file = next((out / "cases").glob("*.yaml"))
    written = {case["id"]: case for case in yaml.safe_load(cases_file.read_text())}
    settings = yaml.safe_load((out / "casegate.yml").read_text())
    return outcome, written, settings, (out / "MIGRATION.md").read_text()


HEAD = """
prompts: ['Answer {{query}} from {{context}}']
providers: [openai:gpt-4.1-mini]
"""


def test_score_assertions_become_the_score_checks_with_promptfoos_defaults(
    tmp_path: Path,
) -> None:
    config = write_config(
        tmp_path / "pf",
        HEAD
        + """
tests:
  - description: defaults
    vars: {query: q, context: c}
    assert:
      - {type: rouge-n, value: the cat sat}
      - {type: bleu, value: le chat}
      - {type: similar, value: a cat}
      - {type: levenshtein, value: cat}
  - description: thresholds
    vars: {query: q, context: c}
    assert:
      - {type: rouge-n, value: '{{query}} sat', threshold: 0.6}
      - {type: bleu, value: le chat, threshold: 0.3}
      - {type: similar, value: a cat, threshold: 0.9}
      - {type: levenshtein, value: cat, threshold: 2}
      - {type: llm-rubric, value: is polite, threshold: 0.8}
""",
    )
    outcome, cases, settings, migration = imported(config, tmp_path / "out")
    assert cases["defaults"]["expect"] == {
        "similar": {"to": "a cat", "min": 0.75, "method": "embedding"},
        "levenshtein": {"to": "cat", "max": 5},
        "rouge_n": {"to": "the cat sat", "n": 1, "threshold": 0.75},
        "bleu": {"to": "le chat", "threshold": 0.5},
    }
    assert cases["thresholds"]["expect"] == {
        "judge": {"rubric": "is polite", "scale": "0-10", "threshold": 0.8},
        "similar": {"to": "a cat", "min": 0.9, "method": "embedding"},
        "levenshtein": {"to": "cat", "max": 2},
        "rouge_n": {"to": "q sat", "n": 1, "threshold": 0.6},  # the var rendered in
        "bleu": {"to": "le chat", "threshold": 0.3},
    }
    assert (outcome.assertions, outcome.assertions_mapped) == (9, 9)
    assert "judge" in settings  # the graded judge needs the pin
    assert "promptfoo scores ROUGE-1 recall" in migration
    assert "promptfoo also needs its grader's pass" in migration


def test_rag_assertions_read_the_context_var_as_contexts(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "pf",
        HEAD
        + """
tests:
  - description: rag
    vars: {query: When was it built?, context: [It was built in 1889., It is in Paris.]}
    options: {disableVarExpansion: true}  # else promptfoo runs the test once per context
    assert:
      - {type: context-faithfulness, threshold: 0.9}
      - {type: context-recall, value: built in 1889, threshold: 0.7}
      - {type: context-relevance, threshold: 0.5}
      - {type: answer-relevance, threshold: 0.8}
  - description: rag-defaults
    vars: {query: q, context: one passage}
    assert:
      - {type: context-faithfulness}
  - description: no-query
    vars: {context: c}
    assert:
      - {type: context-relevance}
      - {type: contains, value: x}
""",
    )
    outcome, cases, settings, migration = imported(config, tmp_path / "out")
    rag = cases["rag"]
    assert rag["expect"] == {
        "faithfulness": {"threshold": 0.9},
        "context_recall": {"reference": "built in 1889", "threshold": 0.7},
        "context_precision": {"reference": "When was it built?", "threshold": 0.5},
        "answer_relevance": {"threshold": 0.8},
    }
    assert rag["input"]["contexts"] == ["It was built in 1889.", "It is in Paris."]
    assert cases["rag-defaults"]["input"]["contexts"] == ["one passage"]
    assert cases["rag-defaults"]["expect"] == {"faithfulness": {"threshold": 0}}
    assert "default threshold is 0, which passes every output" in migration
    assert cases["no-query"]["expect"] == {"contains": "x"}
    assert "`context-relevance` needs a `query` var" in migration
    assert "judge" in settings
    assert (outcome.assertions, outcome.assertions_mapped) == (7, 6)


def test_shapes_of_the_score_checks_are_checked_before_anything_is_written() -> None:
    assert shape_problem("rouge_n", {"to": "a", "n": 5, "threshold": 0.5}) is not None
    assert shape_problem("bleu", {"to": "a", "threshold": 1.5}) is not None
    assert shape_problem("context_recall", {"threshold": 0.5}) is not None
    assert shape_problem("faithfulness", {"threshold": 0.5}) is None
    assert build_problem({"judge": {"rubric": "r", "scale": "1-10", "threshold": 0.5}})
    assert build_problem({"contains": 3}) is not None  # a check of this tree: its own rule
    assert build_problem({"bleu": {"to": "x", "threshold": 0.5}, "contains": "y"}) is None


def test_csv_tests_with_expected_columns_description_metadata_and_thresholds(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "pf"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "tests.csv").write_text(
        "query,context,__expected,__expected2,__description,__metadata:topic[],"
        "__config:__expected2:threshold\n"
        'Capital of France?,"Paris, the capital",contains: Paris,similar: the capital is Paris,'
        'capital,"geo\\,cities",0.85\n'
        "2+2?,n/a,4,grade: answers with a number,,math,0.7\n"
        "Empty?,n/a,,,,,0.5\n"
        '"Quoted ""name""",n/a,"icontains-any: Yes, Sure",rouge-n(0.3): quoted name,quoted,,0.4\n'
    )
    config = write_config(folder, HEAD + "tests: file://data/tests.csv\n")
    outcome, cases, _, migration = imported(config, tmp_path / "out")
    assert list(cases) == ["capital", "row-2", "row-3", "quoted"]
    capital = cases["capital"]
    assert capital["input"] == {"query": "Capital of France?", "context": "Paris, the capital"}
    assert capital["expect"] == {
        "contains": "Paris",
        "similar": {"to": "the capital is Paris", "min": 0.85, "method": "embedding"},
    }
    assert capital["note"] == "capital"
    assert capital["tags"] == ["topic=geo,cities"]  # `\,` keeps the comma, as promptfoo does
    # A cell that is no assertion type is `equals`; `grade:` is llm-rubric.
    assert cases["row-2"]["expect"] == {
        "equals": "4",
        "judge": {"rubric": "answers with a number", "scale": "0-10", "threshold": 0.7},
    }
    assert cases["row-2"]["tags"] == ["topic=math"]
    # No `__expected` value: a draft case, listed for a person.
    assert cases["row-3"]["expect"] == {"check": "promptfoo_checks:needs_a_check"}
    assert cases["row-3"]["tags"] == ["draft"]
    # `__config:__expected2:threshold` wins over `type(threshold):`, as in promptfoo.
    assert cases["quoted"]["input"]["query"] == 'Quoted "name"'
    assert cases["quoted"]["expect"] == {
        "normalize": ["lower"],
        "contains_any": ["Yes", "Sure"],
        "rouge_n": {"to": "quoted name", "n": 1, "threshold": 0.4},
    }
    assert "data/tests.csv:5" in migration  # each test says its file and line
    assert (outcome.tests, outcome.cases, outcome.drafts) == (4, 4, 1)


def test_csv_similar_default_and_bad_rows(tmp_path: Path) -> None:
    folder = tmp_path / "pf"
    folder.mkdir()
    (folder / "tests.csv").write_text("query,__expected\nq,similar: close to this\n")
    config = write_config(folder, HEAD + "tests: [file://tests.csv]\n")
    _, cases, _, _ = imported(config, tmp_path / "out")
    assert cases["row-1"]["expect"]["similar"]["min"] == 0.8

    for text, problem in (
        ("query,__expected\nq,contains: a,extra\n", ":2: row 1 has 3 fields, the header 2"),
        ("query,__expected,__config:__expected:threshold\nq,a,\n", ":2: column '__config"),
        ("query,__config:__expected:weight\nq,1\n", ":1: column '__config:__expected:weight'"),
    ):
        (folder / "tests.csv").write_text(text)
        with pytest.raises(CasegateError) as refused:
            import_promptfoo(config, tmp_path / "out2")
        assert str(refused.value).startswith(f"{folder / 'tests.csv'}{problem}")
        assert "\n" not in str(refused.value)
        assert not (tmp_path / "out2").exists()


@pytest.mark.parametrize(
    ("reference", "says"),
    [
        ("tests.xls", "casegate reads no older spreadsheet format"),
        ("huggingface://datasets/x/y", "is a remote dataset"),
        ("https://docs.google.com/spreadsheets/d/abc", "is a remote dataset"),
        ("file://make_tests.py:generate", "is a program that generates the tests"),
    ],
)
def test_test_sources_casegate_cannot_read_say_what_to_do(
    tmp_path: Path, reference: str, says: str
) -> None:
    folder = tmp_path / "pf"
    folder.mkdir()
    (folder / "tests.xls").write_bytes(b"\xd0\xcf\x11\xe0")
    config = write_config(folder, HEAD + f"tests: '{reference}'\n")
    with pytest.raises(CasegateError, match=says):
        import_promptfoo(config, tmp_path / "out")


def test_tests_without_assertions_become_drafts_not_a_refusal(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "pf",
        """
prompts: ['Tell me about {{topic}}']
providers: [openai:gpt-4.1-mini]
tests:
  - vars: {topic: bananas}
  - vars: {topic: apples}
    assert: [{type: icontains, value: apple}]
""",
    )
    outcome, cases, _, migration = imported(config, tmp_path / "out")
    assert cases["test-1"]["expect"] == {"check": "promptfoo_checks:needs_a_check"}
    assert cases["test-1"]["tags"] == ["draft"]
    assert cases["test-2"]["expect"] == {"normalize": ["lower"], "contains": "apple"}
    assert "a draft case: the test has no assertion" in migration
    assert (outcome.tests, outcome.tests_mapped, outcome.drafts) == (2, 1, 1)
    stub = (tmp_path / "out" / "promptfoo_checks.py").read_text()
    assert "def needs_a_check(output: str, case: Any) -> tuple[bool, str]:" in stub
    namespace: dict[str, Any] = {}
    exec(compile(stub, "promptfoo_checks.py", "exec"), namespace)  # noqa: S102 - our own stub
    assert namespace["needs_a_check"]("anything", None)[0] is False
    validate_all(tmp_path / "out")


def test_vars_files_of_a_test_file_are_read_from_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "pf"
    write_config(
        folder / "tests",
        "- vars: extra.yaml\n  assert: [{type: contains, value: a}]\n"
        "- vars: {topic: file://topics/one.txt}\n  assert: [{type: contains, value: b}]\n",
        "more.yaml",
    )
    write_config(folder / "tests", "topic: from the test file's folder\n", "extra.yaml")
    write_config(folder / "topics", "from the config's folder\n", "one.txt")
    config = write_config(
        folder,
        HEAD.replace("{{query}} from {{context}}", "{{topic}}") + "tests: file://tests/more.yaml\n",
    )
    _, cases, _, _ = imported(config, tmp_path / "out")
    # `vars: FILE` from the test file's folder (promptfoo's readTest); a `file://` var value
    # from the config's folder, where promptfoo renders it.
    assert cases["test-1"]["input"] == {"topic": "from the test file's folder"}
    assert cases["test-2"]["input"] == {"topic": "from the config's folder"}


def test_ruby_assertions_are_stubs_and_their_file_is_never_read(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "pf",
        HEAD
        + """
tests:
  - vars: {query: q, context: c}
    assert:
      - {type: ruby, value: 'file://assert.rb:check_it'}
      - {type: not-ruby, value: output.include?('x')}
      - {type: javascript, value: "output.includes('Paris')"}
      - {type: javascript, value: "output.length <= 280"}
      - {type: javascript, value: "output && output.trim().length > 0"}
      - {type: javascript, value: "output.toLowerCase().includes('France')"}
""",
    )
    outcome, cases, _, migration = imported(config, tmp_path / "out")
    expect = cases["test-1"]["expect"]
    # ruby, not-ruby, and the one javascript that is not a plain check
    assert expect["check"] == [f"promptfoo_checks:check_test_1_{n}" for n in (1, 2, 3)]
    assert expect["contains"] == "Paris"
    assert expect["max_chars"] == 280
    assert expect["regex"] == r"\S"
    stubs = (tmp_path / "out" / "promptfoo_checks.py").read_text()
    assert "# file://assert.rb:check_it" in stubs
    assert "`ruby` is code" in migration
    # An upper-case needle under toLowerCase() never matches: left to a person, not guessed.
    assert "toLowerCase().includes('France')" in migration
    assert (outcome.assertions, outcome.assertions_mapped) == (6, 3)


def test_media_vars_skip_only_their_test(tmp_path: Path) -> None:
    folder = tmp_path / "pf"
    config = write_config(
        folder,
        """
prompts: ['Describe {{image}}{{audio}}{{q}}']
providers: [openai:gpt-4.1-mini]
tests:
  - vars: {image: file://assets/cat.jpg}
    assert: [{type: contains, value: cat}]
  - vars: {audio: file://assets/missing.wav}
    assert: [{type: contains, value: hello}]
  - vars: {q: text}
    assert: [{type: contains, value: text}]
""",
    )
    (folder / "assets").mkdir()
    (folder / "assets" / "cat.jpg").write_bytes(b"\xff\xd8\xff\x00binary")
    outcome, cases, _, migration = imported(config, tmp_path / "out")
    assert list(cases) == ["test-3"]
    assert "var `image` is an image (file://assets/cat.jpg)" in migration
    assert "var `audio` is audio (file://assets/missing.wav)" in migration
    assert "casegate's chat providers send text only (a case's `input_files` reach" in migration
    assert outcome.tests == 3


def test_default_test_becomes_the_suites_defaults(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "pf",
        """
prompts: ['{{q}}']
providers: [openai:gpt-4.1-mini]
defaultTest:
  assert:
    - {type: not-contains, value: As an AI}
    - {type: word-count, value: {max: 50}}
tests:
  - description: inherits
    vars: {q: a}
  - description: adds-to-a-default
    vars: {q: b}
    assert: [{type: not-contains, value: sorry}]
  - description: own-only
    vars: {q: c}
    options: {disableDefaultAsserts: true}
    assert: [{type: contains, value: c}]
""",
    )
    out = tmp_path / "out"
    _, written, settings, migration = imported(config, out)
    assert settings["defaults"] == {"expect": {"not_contains": "As an AI", "max_words": 50}}
    assert "expect" not in written["inherits"]
    assert written["adds-to-a-default"]["expect"] == {"not_contains": ["As an AI", "sorry"]}
    assert written["own-only"]["expect"] == {
        "contains": "c",
        "not_contains": None,
        "max_words": None,
    }
    assert "became `defaults.expect`" in migration
    # As casegate loads them, each case judges what promptfoo judged.
    merged = cases_of(out)
    assert merged["inherits"]["expect"] == {"not_contains": "As an AI", "max_words": 50}
    assert merged["adds-to-a-default"]["expect"] == {
        "not_contains": ["As an AI", "sorry"],
        "max_words": 50,
    }
    assert merged["own-only"]["expect"] == {"contains": "c"}
    validate_all(out)


def test_default_test_that_reads_each_tests_vars_stays_in_the_cases(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "pf",
        """
prompts: ['{{q}}']
providers: [openai:gpt-4.1-mini]
defaultTest:
  options: {transform: output.trim()}
  assert: [{type: equals, value: '{{expected}}'}]
tests:
  - vars: {q: a, expected: A}
  - vars: {q: b, expected: B}
""",
    )
    _, written, settings, _ = imported(config, tmp_path / "out")
    # A default modifier alone judges nothing: no `defaults:`, each case holds it all.
    assert "defaults" not in settings
    assert written["test-1"]["expect"] == {"normalize": ["strip"], "equals": "A"}
    assert written["test-2"]["expect"] == {"normalize": ["strip"], "equals": "B"}


def test_equals_with_a_json_value_is_deep_equality(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "pf",
        HEAD
        + """
tests:
  - vars: {query: q, context: c}
    assert:
      - {type: equals, value: {city: Paris, tags: [a, 1]}}
      - {type: is-json, value: {type: object, required: [city]}}
""",
    )
    outcome, cases, _, _ = imported(config, tmp_path / "out")
    assert cases["test-1"]["expect"] == {
        "json_schema": {
            "allOf": [
                {"const": {"city": "Paris", "tags": ["a", 1]}},
                {"type": "object", "required": ["city"]},
            ]
        }
    }
    assert outcome.assertions_mapped == 2
    from gate import checks
    from gate.checks.base import Subject

    judges = checks.build(cases["test-1"]["expect"])
    verdicts = {
        text: all(v.ok for v in checks.evaluate(judges, Subject(text, {})))
        for text in ('{"tags": ["a", 1], "city": "Paris"}', '{"city": "Paris", "tags": ["a"]}')
    }
    assert verdicts == {
        '{"tags": ["a", 1], "city": "Paris"}': True,
        '{"city": "Paris", "tags": ["a"]}': False,
    }


def test_nunjucks_loops_over_a_mappings_pairs_port_to_items(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "pf",
        """
prompts: ['{% for role, text in turns %}{{role}}={{text}};{% endfor %}{% for k, v in pairs %}{{k}}{{v}}{% endfor %}']
providers: [openai:gpt-4.1-mini]
tests:
  - vars: {turns: {user: hi, assistant: hello}, pairs: [[a, 1], [b, 2]]}
    assert: [{type: contains, value: x}]
""",
    )
    out = tmp_path / "out"
    import_promptfoo(config, out)
    from gate.systems.templates import render

    message = yaml.safe_load((out / "casegate.yml").read_text())["system"]["message"]
    case = cases_of(out)["test-1"]
    assert render(message, "test-1", case["input"]) == "user=hi;assistant=hello;a1b2"


# --- attacks: a tests file, a vars file or a media var outside the config's folder --------


@pytest.mark.parametrize(
    "reference",
    [
        "tests: file://../../etc/passwd.csv",
        "tests: file://../outside.csv",
        "tests: file://linked.csv",
        "tests:\n  - vars: ../outside.yaml\n    assert: [{type: contains, value: a}]",
        "tests:\n  - vars: {image: file://../secret.png}\n    assert: [{type: contains, value: a}]",
        "tests:\n  - vars: {t: file://linked.txt}\n    assert: [{type: contains, value: a}]",
    ],
)
def test_a_reference_that_leaves_the_config_folder_is_never_read(
    tmp_path: Path, reference: str
) -> None:
    folder = tmp_path / "pf"
    folder.mkdir()
    outside = tmp_path / "outside.csv"
    outside.write_text("t,__expected\nSECRET-CSV,contains: a\n")
    (tmp_path / "outside.yaml").write_text("t: SECRET-YAML\n")
    (tmp_path / "secret.png").write_bytes(b"\x89PNG")
    (tmp_path / "secret.txt").write_text("SECRET-TEXT")
    (folder / "linked.csv").symlink_to(outside)
    (folder / "linked.txt").symlink_to(tmp_path / "secret.txt")
    config = write_config(
        folder, "prompts: ['{{t}}']\nproviders: [openai:gpt-4.1-mini]\n" + reference
    )
    with pytest.raises(CasegateError) as refused:
        import_promptfoo(config, tmp_path / "out")
    message = str(refused.value)
    assert "is refused: casegate import reads only files inside the config's folder" in message
    assert "SECRET" not in message
    assert not (tmp_path / "out").exists()


# --- spreadsheets ---------------------------------------------------------------------------

_MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_R_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def workbook(sheets: dict[str, list[list[Any]]], extra: dict[str, bytes] | None = None) -> bytes:
    """A minimal .xlsx: text in shared strings (the first sheet) or inline (the others),
    numbers as numbers, an empty string as a missing cell."""
    import io
    import zipfile

    strings: list[str] = []
    parts: dict[str, str] = {}
    for index, (_name, rows) in enumerate(sheets.items(), start=1):
        cells_xml = []
        for r, row in enumerate(rows, start=1):
            cells = []
            for c, value in enumerate(row):
                ref = f"{chr(65 + c)}{r}"
                if value == "":
                    continue
                if isinstance(value, int | float):
                    cells.append(f'<c r="{ref}"><v>{value}</v></c>')
                elif index == 1:
                    strings.append(value)
                    cells.append(f'<c r="{ref}" t="s"><v>{len(strings) - 1}</v></c>')
                else:
                    cells.append(f'<c r="{ref}" t="inlineStr"><is><t>{value}</t></is></c>')
            cells_xml.append(f'<row r="{r}">{"".join(cells)}</row>')
        parts[f"xl/worksheets/sheet{index}.xml"] = (
            f'<worksheet xmlns="{_MAIN_NS}"><sheetData>{"".join(cells_xml)}</sheetData></worksheet>'
        )
    names = "".join(
        f'<sheet name="{name}" sheetId="{i}" r:id="rId{i}"/>'
        for i, name in enumerate(sheets, start=1)
    )
    parts["xl/workbook.xml"] = (
        f'<workbook xmlns="{_MAIN_NS}" xmlns:r="{_R_NS}"><sheets>{names}</sheets></workbook>'
    )
    rels = "".join(
        f'<Relationship Id="rId{i}" Target="worksheets/sheet{i}.xml" Type="x"/>'
        for i in range(1, len(sheets) + 1)
    )
    parts["xl/_rels/workbook.xml.rels"] = (
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        f"{rels}</Relationships>"
    )
    parts["xl/sharedStrings.xml"] = (
        f'<sst xmlns="{_MAIN_NS}">' + "".join(f"<si><t>{s}</t></si>" for s in strings) + "</sst>"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in parts.items():
            archive.writestr(name, text)
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_xlsx_tests_read_like_csv_rows_from_the_chosen_sheet(tmp_path: Path) -> None:
    folder = tmp_path / "pf"
    folder.mkdir()
    header = ["query", "context", "__expected", "__description"]
    (folder / "tests.xlsx").write_bytes(
        workbook(
            {
                "First": [
                    header,
                    ["Capital?", "Paris", "contains: Paris", "capital"],
                    [2, 4, 6, ""],
                ],
                "Second": [header, ["Sum?", "n/a", "rouge-n(0.5): two", ""], ["", "", "", ""]],
            }
        )
    )
    config = write_config(folder, HEAD + "tests: file://tests.xlsx\n")
    _, cases, _, migration = imported(config, tmp_path / "out")
    assert cases["capital"]["input"] == {"query": "Capital?", "context": "Paris"}
    assert cases["capital"]["expect"] == {"contains": "Paris"}
    # A number stays a number in a var; `__expected` reads it as text (`equals`).
    assert cases["row-2"]["input"] == {"query": 2, "context": 4}
    assert cases["row-2"]["expect"] == {"equals": "6"}
    assert "tests.xlsx:3" in migration  # the sheet's row

    config = write_config(folder, HEAD + "tests: file://tests.xlsx#Second\n")
    _, cases, _, _ = imported(config, tmp_path / "out2")
    assert list(cases) == ["row-1"]  # the blank row is no test
    assert cases["row-1"]["expect"] == {"rouge_n": {"to": "two", "n": 1, "threshold": 0.5}}

    config = write_config(folder, HEAD + "tests: file://tests.xlsx#Third\n")
    with pytest.raises(CasegateError, match=r"no sheet 'Third' \(it has: First, Second\)"):
        import_promptfoo(config, tmp_path / "out3")


def test_an_xlsx_that_declares_entities_or_unpacks_huge_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "pf"
    folder.mkdir()
    config = write_config(folder, HEAD + "tests: file://tests.xlsx\n")
    laughs = (
        b'<?xml version="1.0"?><!DOCTYPE s [<!ENTITY a "lol"><!ENTITY b "&a;&a;&a;&a;">]>'
        b'<sst xmlns="' + _MAIN_NS.encode() + b'"><si><t>&b;</t></si></sst>'
    )
    book = workbook({"S": [["q", "__expected"], ["a", "b"]]})
    import io
    import zipfile

    patched = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(book)) as original, zipfile.ZipFile(patched, "w") as out:
        for item in original.infolist():
            data = laughs if item.filename == "xl/sharedStrings.xml" else original.read(item)
            out.writestr(item.filename, data)
    (folder / "tests.xlsx").write_bytes(patched.getvalue())
    with pytest.raises(CasegateError, match="declares a DOCTYPE"):
        import_promptfoo(config, tmp_path / "out")

    huge = workbook({"S": [["q"], ["a"]]}, extra={"xl/media/big.bin": b"0" * (21 * 2**20)})
    (folder / "tests.xlsx").write_bytes(huge)
    with pytest.raises(CasegateError, match="unpacks past 20 MB"):
        import_promptfoo(config, tmp_path / "out")
    (folder / "tests.xlsx").write_bytes(b"not a zip at all")
    with pytest.raises(CasegateError, match=r"tests.xlsx: not a readable .xlsx workbook"):
        import_promptfoo(config, tmp_path / "out")
    assert not (tmp_path / "out").exists()
