"""gate/yamlfile.py: the values PyYAML's own loader would give, with their lines, built from
the parser's events at a small multiple of the file's size, and refused early and by line
when a document is too deep, expands through aliases or would take too much memory."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gate import yamlfile
from gate.errors import CaseFileError
from gate.limits import MAX_CASE_FILE_BYTES
from gate.suite.cases import load_cases
from gate.yamlfile import (
    MAX_ALIAS_NODES,
    MAX_YAML_MEMORY,
    LineDict,
    YamlSyntaxError,
    _Builder,
    load_yaml,
)
from gate.yamlloader import _LineLoader

ROOT = Path(__file__).resolve().parents[1]


def pyyaml(text: str) -> Any:
    """What PyYAML's own loader (the node graph casegate built before) makes of `text`."""
    return yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass


def shape(value: Any) -> Any:
    """A value with every mapping's line and key lines, for comparing two loads."""
    if isinstance(value, LineDict):
        return (
            "mapping",
            value.line,
            [(key, value.line_of(key), shape(item)) for key, item in value.items()],
        )
    if isinstance(value, list):
        return ["list", *(shape(item) for item in value)]
    return (type(value).__name__, value)


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.sampled_from(["yes", "off", "0x1F", "010", "1_000", "2026-01-02", "=", "~", "<<", ""]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(
    VALUES,
    st.lists(VALUES, min_size=1, max_size=3),
    st.sampled_from([False, True, None]),
    st.integers(min_value=20, max_value=120),
)
def test_documents_load_as_pyyaml_loads_them_lines_and_all(
    shared: Any, others: list[Any], flow: bool | None, width: int
) -> None:
    # A value that appears twice is written once with an anchor, then as an alias.
    document = {"shared": shared, "again": [shared, *others], "last": others}
    text = yaml.safe_dump(document, default_flow_style=flow, width=width, sort_keys=False)
    assert shape(load_yaml(text)) == shape(pyyaml(text))


ODD_DOCUMENTS = [
    "a: &x 1\nb: *x\n",
    "{<<: {a: 1}, b: 2}",
    "- {<<: [{a: 1}, {b: 2}], c: 3}",
    "- {<<: [{a: 1}, {a: 2}]}",
    "base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  z: 3\n",
    "? [1, 2]\n: x",
    "{1: a, 1.5: b, null: c, true: d}",
    "=: 1",
    "x: !!binary aGVsbG8=",
    "a: 010\nb: 0x1F\nc: 1_000\nd: 190:20:30\ne: -5\nf: +5\ng: -0\n",
    "a: .inf\nb: -.inf\nc: 1.5e+3\nd: 1e5\ne: 1_0.5\n",
    "a: yes\nb: Off\nc: ~\nd: null\ne: '1'\nf: |\n  text\n",
    "a: 2026-01-02\nb: 2026-01-02T10:00:00Z\n",
    "a: !!str 12\nb: ! 12\nc: !!int '12'\nd: !!float '2'\n",
    "- !!seq [1]\n- !!map {a: 1}\n",
    "a: &b [1, 2]\nc: [*b, *b]\n",
    "? a\n",
    "",
    "---\n...\n",
    "plain",
    "a:\n  b:\n    c: 1\n  d: 2\n",
]


@pytest.mark.parametrize("text", ODD_DOCUMENTS)
def test_odd_documents_load_as_pyyaml_loads_them(text: str) -> None:
    assert shape(load_yaml(text)) == shape(pyyaml(text))


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("a: 1\na: 2\n", 2, "invalid YAML: duplicate key 'a'"),
        ("{<<: {a: 1}, a: 2}", 1, "invalid YAML: duplicate key 'a'"),
        ("a: *nowhere\n", 1, "invalid YAML: found undefined alias 'nowhere'"),
        ("a: &x 1\nb: &x 2\n", 2, "invalid YAML: the anchor 'x' is defined twice (first on line 1)"),
        ("x:\n  - &a [1, *a]\n", 2, "an alias refers to a node that contains it"),
        ("<<: 3", 1, "invalid YAML: expected a mapping or list of mappings for merging, but found scalar"),
        ("- 1\n---\n- 2\n", 2, "invalid YAML: but found another document"),
        ("a: <<", 1, "invalid YAML: could not determine a constructor for the tag 'tag:yaml.org,2002:merge'"),
        ("x: !foo bar", 1, "invalid YAML: could not determine a constructor for the tag '!foo'"),
        ("a:\n  b: 2026-02-30\n", 2, "invalid date '2026-02-30': day is out of range for month"),
        ("a: !!bool maybe", 1, "invalid bool 'maybe'"),
        ("a: 1\nb: !!set {x, y}\n", 2, "the tag 'tag:yaml.org,2002:set' is not supported here: write a plain list or mapping"),
        ("a: 1\n\nb: !!omap [{x: 1}]\n", 3, "the tag 'tag:yaml.org,2002:omap' is not supported here: write a plain list or mapping"),
        ("a: [" + "[" * 100 + "]" * 100 + "]", 1, "nested more than 100 levels deep"),
        # Issue #25 trap 6: the parser's words, and what they usually mean
        ("a:\n\tb: 1\n", 2, "invalid YAML: found character that cannot start any token (a tab: YAML indents with spaces only)"),
        ("a: @x\n", 1, "invalid YAML: found character that cannot start any token (a value starting with @ or ` must be quoted)"),
        ("s: a\nsystem:\n  name: x\n provider: y\n", 4, "invalid YAML: did not find expected key (a line indented differently from the keys beside it)"),
        ("s: a\nsystem:\n  name: x\n   provider: y\n", 4, "invalid YAML: mapping values are not allowed in this context (a line indented deeper than the keys beside it, or a value holding ': ' that needs quotes)"),
        ('a: "x\n', 2, "invalid YAML: found unexpected end of stream (a quote left open)"),
    ],
)  # fmt: skip
def test_refusals_name_the_line(text: str, line: int, message: str) -> None:
    with pytest.raises(YamlSyntaxError) as caught:
        load_yaml(text)
    assert (caught.value.line, caught.value.message) == (line, message)


def test_an_alias_deeper_than_the_limit_is_refused() -> None:
    inner = "[" * 60 + "]" * 60
    text = f"a: &deep {inner}\nb: {'[' * 50}*deep{']' * 50}\n"
    with pytest.raises(YamlSyntaxError) as caught:
        load_yaml(text)
    assert (caught.value.line, caught.value.message) == (2, "nested more than 100 levels deep")
    assert load_yaml(f"a: &deep {inner}\nb: {'[' * 30}*deep{']' * 30}\n")["a"] is not None


def bomb_lines(levels: int, width: int = 10) -> list[str]:
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * width)}]" for n in range(1, levels)]
    return lines


def test_an_alias_bomb_is_refused_at_the_line_where_it_passes_the_limit(tmp_path: Path) -> None:
    # l5 (line 6) adds 10 aliases of 111,110 nodes each: past the limit. What follows is
    # never read, so the broken line after it is never reached (the graph-building loader
    # read the whole document before it could measure it, and met the broken line first).
    lines = [*bomb_lines(9), "broken: [", "- id: a"]
    (tmp_path / "bomb.yaml").write_text("\n".join(lines) + "\n")
    with pytest.raises(CaseFileError) as caught:
        load_cases([tmp_path / "bomb.yaml"], display_root=tmp_path)
    assert caught.value.problems == [
        f"bomb.yaml:6: aliases expand this document by more than {MAX_ALIAS_NODES:,} nodes "
        "(an alias bomb?); write the repeated parts out, or use fewer aliases"
    ]


def test_aliases_are_the_anchors_own_objects() -> None:
    document = load_yaml("a: &x {k: [1, 2]}\nb: *x\nc: [*x]\n")
    assert document["b"] is document["a"] and document["c"][0] is document["a"]


def test_a_flow_mapping_keeps_no_key_lines_and_a_block_one_does() -> None:
    flow, block = load_yaml("- {a: 1, b: 2}\n- a: 1\n  b: 2\n")
    assert not hasattr(flow, "key_lines") and flow.line_of("b") == 1
    assert block.key_lines == {"a": 2, "b": 3} and block.line_of("b") == 3


def test_the_memory_budget_refuses_a_document_by_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlfile, "MAX_YAML_MEMORY", 1_000_000)
    rows = "".join(f"- {{a: {n}}}\n" for n in range(5000))
    with pytest.raises(YamlSyntaxError) as caught:
        load_yaml(rows)
    # About 320 bytes a row (a LineDict, its key, an int, a list slot): some 3,100 rows in.
    assert caught.value.line is not None and 2800 < caught.value.line < 3400
    assert caught.value.message == (
        "this document would take more than 1 MB of memory once read (that many lists and "
        "mappings); split it into several files"
    )
    monkeypatch.setattr(yamlfile, "MAX_YAML_MEMORY", 2_000_000)
    assert len(load_yaml(rows)) == 5000


def estimate(text: str) -> int:
    builder = _Builder(_LineLoader(text))
    builder.document()
    return builder.memory


def traced(text: str) -> tuple[Any, int]:
    """The loaded document and the memory it holds, as tracemalloc counts it."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        document = load_yaml(text)
        return document, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


SHAPES = {
    "cases": "".join(
        f"- id: case-{n}\n  input: {{question: How do I return order {n}?}}\n"
        f"  expect: {{contains: refund, max_words: 80}}\n  tags: [returns, orders]\n"
        for n in range(3000)
    ),
    "tiny mappings": "[" + ", ".join(f"{{a: {n}}}" for n in range(20000)) + "]",
    "numbers": "[" + ", ".join(str(n * 7) for n in range(50000)) + "]",
    "floats": "[" + ", ".join(f"{n / 7:.4f}" for n in range(30000)) + "]",
    "words": "[" + ", ".join(f"w{n}" for n in range(50000)) + "]",
    "block lists": "".join(f"- [{n}, x{n}]\n" for n in range(10000)),
}


@pytest.mark.parametrize("name", SHAPES)
def test_the_budget_estimate_covers_what_a_document_really_takes(name: str) -> None:
    # The budget counts estimated bytes: it must not under-count what is really built,
    # or the 256 MB it allows would let through more than that.
    text = SHAPES[name]
    _, kept = traced(text)
    assert estimate(text) >= 0.9 * kept, (estimate(text), kept)


def test_a_case_file_at_the_size_limit_fits_the_memory_budget() -> None:
    # The example suite's cases, repeated up to the 20 MB a case file may be, stay inside
    # the budget: it refuses only documents denser than real cases.
    texts = [path.read_text() for path in sorted((ROOT / "cases/support").glob("*.yaml"))]
    per_byte = sum(estimate(text) for text in texts) / sum(len(text) for text in texts)
    assert per_byte * MAX_CASE_FILE_BYTES < MAX_YAML_MEMORY, per_byte  # measured 7.9 a byte


@pytest.mark.parametrize("name", ["cases", "numbers", "words", "floats"])
def test_large_documents_load_in_a_small_multiple_of_their_size(name: str) -> None:
    text = SHAPES[name]
    document, kept = traced(text)
    assert document
    # Measured 2026-12-01: 3-12 times the text; the graph-building loader took 30-120.
    assert kept <= 20 * len(text), kept / len(text)


def test_the_slow_39_mb_case_file_loads_in_a_small_multiple_of_its_size(tmp_path: Path) -> None:
    # The shape of the report: one case whose input holds a long flow list of numbers,
    # 3.9 MB. The graph-building loader peaked at 476 MB (120 times the file) for it.
    # Measured in a child process (its peak resident memory): tracemalloc's bookkeeping
    # would slow the million-number parse down tenfold.
    numbers = ", ".join(str(n % 100) for n in range(1_000_000))
    case = f"- id: big\n  input: {{numbers: [{numbers}]}}\n  expect: {{json: true}}\n"
    path = tmp_path / "big.yaml"
    path.write_text(case)
    size = path.stat().st_size
    assert 3_800_000 < size < 4_000_000
    small = tmp_path / "small.yaml"
    small.write_text("- id: small\n  input: {numbers: [1]}\n  expect: {json: true}\n")
    script = textwrap.dedent(
        f"""
        import json, resource
        from pathlib import Path
        from gate.suite.cases import load_cases
        load_cases([Path({str(small)!r})])  # every import and schema built first
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        (case,) = load_cases([Path({str(path)!r})])
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps([len(case.input["numbers"]), (after - before) * 1024]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    )
    count, grown = json.loads(done.stdout)
    assert count == 1_000_000
    # Measured 2026-12-01: 5-6 times the file.
    assert grown <= 20 * size, grown / size


def test_a_parse_error_shows_its_line_and_a_caret_under_the_place() -> None:
    with pytest.raises(YamlSyntaxError) as tab:
        load_yaml("suite: s\nsystem:\n\tname: x\n")
    assert tab.value.line == 3 and tab.value.message.endswith(
        "(a tab: YAML indents with spaces only)"
    )
    assert tab.value.excerpt == "  | \\tname: x\n  | ^"
    with pytest.raises(YamlSyntaxError) as deeper:
        load_yaml("system:\n  name: x\n   provider: python\n")
    assert deeper.value.excerpt.splitlines() == ["  |    provider: python", "  |            ^"]


@given(st.text(max_size=200))
def test_no_line_of_a_parse_error_can_start_a_workflow_command(text: str) -> None:
    caught: YamlSyntaxError | None = None
    try:
        load_yaml(text)
    except YamlSyntaxError as exc:
        caught = exc
    if caught is not None:
        assert "\n" not in caught.message
        for line in caught.excerpt.splitlines():
            assert line.startswith("  | ") and "\t" not in line and "\r" not in line
