"""Fuzzing the loaders: whatever a case, config, results or recording file holds, loading it
ends in a load or in casegate's own one-line errors: never a traceback, a hang or a blow-up.

Documents start mostly valid and are mutated: keys dropped or renamed, values swapped for
odd types, huge numbers, deep nesting, odd unicode, aliases and alias bombs, dates that do
not exist, raw bytes spliced in or the end cut off. Each example runs under a watchdog
(a hang detector, not a speed test) and a memory meter.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import math
import re
import signal
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gate.errors import CasegateError, ResultsError
from gate.outputs import Output
from gate.produce.recordings import RecordingStore
from gate.results import read_carefully, read_fast, read_results, write_results
from gate.suite.cases import load_cases
from gate.suite.config import load_config
from tests.factories import result, run, sampled

HANG_S = 10
MEMORY_CAP = 200 * 2**20
FUZZ = settings(
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


class Hang(BaseException):
    """An example ran past the watchdog (BaseException: no `except Exception` swallows it)."""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@contextlib.contextmanager
def guarded() -> Iterator[None]:
    """A watchdog and a memory meter around one example."""

    def alarm(signum: int, frame: FrameType | None) -> None:
        raise Hang(f"the example ran past {HANG_S} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    # Stuck in C code, where the alarm cannot interrupt: dump every stack and stop.
    faulthandler.dump_traceback_later(HANG_S * 3, exit=True)
    signal.alarm(HANG_S)
    # The kernel's peak resident size, reset before the example: what the loader's Python
    # and C (libyaml) allocations took at most, for two reads of /proc. Elsewhere,
    # tracemalloc (Python's allocations only, and it doubles a fuzzer's time).
    before = _reset_peak()
    if before is None:
        tracemalloc.start()
    try:
        yield
        if before is None:
            peak = tracemalloc.get_traced_memory()[1]
        else:
            peak = _status_bytes("VmHWM") - before
    finally:
        if before is None:
            tracemalloc.stop()
        signal.alarm(0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, previous)
    assert peak < MEMORY_CAP, f"the example peaked at {peak / 2**20:.0f} MB"


def _status_bytes(field: str) -> int:
    """A size line of /proc/self/status (`VmRSS:  1234 kB`), in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise OSError(f"/proc/self/status has no {field}")


def _reset_peak() -> int | None:
    """Reset the process's peak resident size (Linux 4.0+) and return the size now; None
    where that cannot be done."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return _status_bytes("VmRSS")
    except OSError:
        return None


def survives(load: Callable[[], object]) -> None:
    """Run a loader: it may succeed or raise casegate's own error, one line per problem."""
    error: CasegateError | None = None
    with guarded():
        try:
            load()
        except CasegateError as exc:
            error = exc
    if error is not None:
        assert error.problems
        for problem in error.problems:
            assert problem.strip(), error.problems
            assert "\n" not in problem and "\r" not in problem, problem
            assert "Traceback" not in problem, problem


# --- documents ---------------------------------------------------------------------


class Raw(str):
    """Text spliced into a document as it is (JSON or YAML flow syntax)."""


def flow(value: Any, *, yaml: bool) -> str:
    """JSON text (a YAML flow document too), with Raw pieces left as they are."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        pairs = (
            f"{flow(k if yaml else str(k), yaml=yaml)}: {flow(v, yaml=yaml)}"
            for k, v in value.items()
        )
        return "{" + ", ".join(pairs) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(flow(item, yaml=yaml) for item in value) + "]"
    if isinstance(value, float) and not math.isfinite(value) and yaml:
        return ".nan" if math.isnan(value) else ".inf" if value > 0 else "-.inf"
    if isinstance(value, str) and yaml:
        # YAML allows only printable characters, even in quotes: escape the rest.
        text = json.dumps(value, ensure_ascii=False)
        return NOT_YAML_PRINTABLE.sub(lambda m: f"\\U{ord(m[0]):08x}", text)
    return json.dumps(value)


NOT_YAML_PRINTABLE = re.compile(
    "[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


def deep(levels: int, opening: str = "[", closing: str = "]") -> Raw:
    return Raw(opening * levels + closing * levels)


def alias_bomb(width: int, levels: int) -> Raw:
    chain = ["&b0 [" + ", ".join(["lol"] * width) + "]"]
    chain += [f"&b{n} [" + ", ".join([f"*b{n - 1}"] * width) + "]" for n in range(1, levels)]
    return Raw("[" + ", ".join(chain) + "]")


COMMON_RAW = [
    Raw("9" * 5000),
    Raw("-" + "1" * 4301),
    Raw("1" * 4300),
    Raw("1e999999"),
    Raw('"\\ud800"'),
    Raw('"\\u0000"'),
    deep(100_000),
    deep(99),
    deep(101),
    deep(120, '{"a": ', "}"),
]
YAML_RAW = [
    Raw("2026-02-30"),
    Raw("2026-13-01T10:00:00Z"),
    Raw("0x" + "f" * 4000),
    Raw("0b" + "1" * 20000),
    Raw("!!binary AAAA"),
    Raw("!!binary '@@'"),
    Raw("!!set {a, b}"),
    Raw("!!omap [{a: 1}, {b: 2}]"),
    Raw("!!python/object:os.system {}"),
    Raw("!!int nope"),
    Raw("!!float nope"),
    Raw("!!timestamp yesterday"),
    Raw("&a1 [1, 2, {x: y}]"),
    Raw("*a1"),
    Raw("&a2 {id: dup}"),
    Raw("*a2"),
    Raw("*undefined"),
    Raw("&a3 [*a3]"),
    Raw("{<<: *a2, extra: 1}"),
    Raw(".nan"),
    Raw("~"),
    Raw("'single ''quoted'''"),
    Raw("? [complex, key]"),
    alias_bomb(10, 9),
    alias_bomb(3, 30),
    deep(999),
    deep(1001),
]
ODD_STRINGS = [
    "",
    " ",
    "auto",
    "critical",
    "../../etc/passwd",
    "/etc/passwd",
    "a/b",
    "2026-02-30",
    "\u202e\u200b\ufeff",
    "\x00\x01",
    "x" * 201,
    "{{ question }}",
    "{{ undefined_var }}",
    "{% for %}",
    "(a+)+$",
    "a{99999999999}",
    "(" * 50,
    "[",
    "module:function",
    "os:system",
    "line\nbreak",
    "\u2028\u2029\x85",
    "😀" * 20,
]
odd_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.text(max_size=20),
    st.sampled_from(ODD_STRINGS),
)
odd_values = st.recursive(
    odd_scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=8) | st.sampled_from(ODD_STRINGS), children, max_size=4)
    ),
    max_leaves=12,
)


def paths_in(document: Any) -> list[tuple[Any, Any]]:
    """(container, key) for every value inside the document, without recursion."""
    found: list[tuple[Any, Any]] = []
    stack = [document]
    while stack:
        node = stack.pop()
        items = (
            node.items()
            if isinstance(node, dict)
            else enumerate(node)
            if isinstance(node, list)
            else ()
        )
        for key, value in items:
            found.append((node, key))
            stack.append(value)
    return found


def mutate(document: Any, data: st.DataObject, raw: list[Raw], most: int = 4) -> Any:
    """Change a few places of a copy of `document`: odd values, raw pieces, drops, renames."""
    document = json.loads(json.dumps(document))
    for _ in range(data.draw(st.integers(0, most), label="mutations")):
        places = paths_in(document)
        if not places:
            return data.draw(odd_values | st.sampled_from(raw))
        container, key = data.draw(st.sampled_from(places), label="place")
        action = data.draw(st.sampled_from(["odd", "raw", "drop", "rename", "wrap"]))
        if action == "odd":
            container[key] = data.draw(odd_values)
        elif action == "raw":
            container[key] = data.draw(st.sampled_from(raw))
        elif action == "wrap":
            container[key] = [container[key]] if data.draw(st.booleans()) else {"x": container[key]}
        elif isinstance(container, dict):
            value = container.pop(key)
            if action == "rename":
                container[data.draw(st.sampled_from(ODD_STRINGS) | st.text(max_size=10))] = value
        elif container:
            container.pop(key)
    return document


def damage(text: str, data: st.DataObject) -> bytes:
    """Sometimes cut the end off or splice in bytes that need not be UTF-8."""
    blob = text.encode("utf-8", "surrogatepass")
    choice = data.draw(st.sampled_from(["none"] * 6 + ["truncate", "splice"]))
    if choice == "truncate" and blob:
        return blob[: data.draw(st.integers(0, len(blob) - 1))]
    if choice == "splice":
        at = data.draw(st.integers(0, len(blob)))
        return blob[:at] + data.draw(st.binary(min_size=1, max_size=8)) + blob[at:]
    return blob


# --- cases ---------------------------------------------------------------------------

VALID_CHECKS: dict[str, Any] = {
    "equals": "x",
    "contains": ["14 days", "refund"],
    "contains_any": ["sorry", "apolog"],
    "not_contains": "store credit",
    "regex": r"\d{3}",
    "not_regex": "(?i)will arrive (by|on)",
    "max_words": 25,
    "min_words": 1,
    "max_chars": 200,
    "json": True,
    "json_schema": {"type": "object", "properties": {"a": {"type": "string"}}},
    "fields": {"a.b": 1},
    "fields_present": ["summary"],
    "fields_absent": ["secret"],
    "citations": {"pattern": r"\[(kb-\d+)\]", "source": "docs", "min": 1},
    "tool_called": "lookup",
    "tool_not_called": ["refund"],
    "tool_sequence": ["a", "b"],
    "tool_args": {"refund": {"amount": 25}},
    "check": "checks_module:is_polite",
    "normalize": ["strip", "lower"],
}
case_records = st.fixed_dictionaries(
    {
        "id": st.from_regex(r"[A-Za-z0-9._-]{1,12}", fullmatch=True),
        "input": st.fixed_dictionaries({"question": st.text(max_size=30)}),
        "expect": st.lists(st.sampled_from(sorted(VALID_CHECKS)), min_size=1, max_size=4).map(
            lambda names: {name: VALID_CHECKS[name] for name in names}
        ),
    },
    optional={
        "critical": st.booleans(),
        "tags": st.lists(st.sampled_from(["critical", "shipping", "policy"]), max_size=3),
        "note": st.text(max_size=30),
        "added": st.dates().map(str),
        "version": st.integers(1, 5),
        "weight": st.floats(0.1, 5),
        "samples": st.integers(1, 5),
        "min_pass_rate": st.floats(0, 1),
    },
)


@settings(FUZZ, max_examples=1500)
@given(data=st.data(), cases=st.lists(case_records, min_size=1, max_size=4))
def test_yaml_case_files(folder: Path, data: st.DataObject, cases: list[dict[str, Any]]) -> None:
    document = mutate(cases, data, COMMON_RAW + YAML_RAW)
    path = folder / "cases.yaml"
    path.write_bytes(damage(flow(document, yaml=True), data))
    survives(lambda: load_cases([path], display_root=folder))


@settings(FUZZ, max_examples=1200)
@given(data=st.data(), cases=st.lists(case_records, min_size=1, max_size=4))
def test_jsonl_case_files(folder: Path, data: st.DataObject, cases: list[dict[str, Any]]) -> None:
    lines = [flow(mutate(case, data, COMMON_RAW, most=2), yaml=False) for case in cases]
    path = folder / "cases.jsonl"
    path.write_bytes(damage("\n".join(lines) + "\n", data))
    survives(lambda: load_cases([path], display_root=folder))


# --- configs -------------------------------------------------------------------------

config_documents = st.fixed_dictionaries(
    {
        "suite": st.sampled_from(["support"] * 6 + ["a/b", "..", "x" * 120, "ok.name-1"]),
        "cases": st.sampled_from(["cases", ["cases", "more/*.yaml"]]),
        "system": st.fixed_dictionaries(
            {
                "name": st.just("sys"),
                "provider": st.sampled_from(["python", "command", "openai", "anthropic", "bard"]),
            },
            optional={
                "target": st.just("bot:answer"),
                "command": st.just(["node", "bot.js"]),
                "model": st.sampled_from(["gpt-4.1", "claude-x"]),
                "prompt_file": st.sampled_from(
                    [
                        "prompts/p.md",
                        "prompts/binary.md",
                        "prompts/out.md",
                        "../x.md",
                        "/etc/hostname",
                        "gone.md",
                    ]
                ),
                "message": st.sampled_from(["{{ question }}", "{% if %}", "{{ x | nope }}"]),
                "params": st.dictionaries(
                    st.sampled_from(["temperature", "max_tokens", "seed", "top_k", "bogus"]),
                    odd_scalars,
                    max_size=3,
                ),
                "max_retries": odd_scalars,
                "max_wait_s": odd_scalars,
                "timeout_s": odd_scalars,
                "tools": st.just([{"name": "t", "parameters": {"type": "object"}}]),
            },
        ),
    },
    optional={
        "samples": st.one_of(st.integers(-2, 5), st.just("auto"), st.just(1.5)),
        "min_pass_rate": st.floats(),
        "concurrency": st.integers(-1, 300),
        "mode": st.sampled_from(["replay", "record", "live", "psychic"]),
        "gate": st.fixed_dictionaries(
            {}, optional={"tolerance": st.floats(), "alpha": st.floats()}
        ),
        "adaptive": st.fixed_dictionaries({}, optional={"max": st.integers(-1, 5000)}),
        "pricing": st.dictionaries(
            st.text(max_size=5),
            st.fixed_dictionaries({"input": st.floats(), "output": st.floats()}),
            max_size=2,
        ),
        "judge": st.fixed_dictionaries(
            {"provider": st.sampled_from(["openai", "anthropic", "nope"])},
            optional={
                "model": st.just("m"),
                "prompt_version": st.integers(0, 3),
                "temperature": st.floats(),
            },
        ),
    },
)
overrides = st.lists(
    st.sampled_from(
        [
            "samples=0",
            "samples=auto",
            "suite=../x",
            "system.prompt_file=../../x",
            "suite.x=1",
            "=",
            "a..b=1",
            "system.max_wait_s=-1",
        ]
    )
    | st.builds(
        "{}={}".format,
        st.sampled_from(["samples", "system.model", "system.params.temperature", "gate.tolerance"]),
        st.text(max_size=12),
    ),
    max_size=2,
)


@pytest.fixture(scope="module")
def config_folder(folder: Path) -> Path:
    root = folder / "project"
    (root / "prompts").mkdir(parents=True)
    (root / "prompts" / "p.md").write_text("Be brief.")
    (root / "prompts" / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00")
    (folder / "outside.md").write_text("not yours")
    (root / "prompts" / "out.md").symlink_to(folder / "outside.md")
    return root


@settings(FUZZ, max_examples=1500)
@given(data=st.data(), config=config_documents, sets=overrides)
def test_config_files(
    config_folder: Path, data: st.DataObject, config: dict[str, Any], sets: list[str]
) -> None:
    document = mutate(config, data, COMMON_RAW + YAML_RAW)
    path = config_folder / "casegate.yml"
    path.write_bytes(damage(flow(document, yaml=True), data))
    survives(lambda: load_config(path, sets))


# --- results -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def results_document(folder: Path) -> dict[str, Any]:
    path = folder / "seed-results.json"
    seeded = run(
        [result("a"), result("b", "fail", critical=True), result("c", "error"), sampled("d", 2, 3)]
    )
    seeded.cases[0].outputs[0].tool_calls = [{"name": "lookup", "arguments": {"order": "A-17"}}]
    write_results(seeded, path)
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


@settings(FUZZ, max_examples=1200)
@given(data=st.data())
def test_results_files(folder: Path, results_document: dict[str, Any], data: st.DataObject) -> None:
    document = mutate(results_document, data, COMMON_RAW)
    path = folder / "results.json"
    raw = damage(flow(document, yaml=False), data)
    path.write_bytes(raw)
    survives(lambda: read_results(path))
    # The fast read (pydantic's JSON parser) answers only what the careful one would; it
    # skips keys the schema does not know unread, however deeply they nest.
    fast = read_fast(raw)
    if fast is not None:
        try:
            careful = read_carefully(raw, path).to_dict()
        except ResultsError as exc:
            careful = str(exc)
        assert careful == fast.to_dict() or "nested more than 100 levels deep" in careful


# --- recordings ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def recording_document(folder: Path) -> dict[str, Any]:
    store = RecordingStore(folder / "seed-recordings")
    output = Output(
        text="hi", input_tokens=3, output_tokens=1, model="m", raw={"id": "x", "choices": [1]}
    )
    store.put(
        "c", "k1", output, system={"name": "s", "provider": "openai"}, fingerprint="f", sample=0
    )
    store.put("c", "k2", Output(text=""), system={}, fingerprint="f", sample=1)
    loaded: dict[str, Any] = json.loads(store.path_for("c").read_text())
    return loaded


@settings(FUZZ, max_examples=1200)
@given(data=st.data())
def test_recording_files(
    folder: Path, recording_document: dict[str, Any], data: st.DataObject
) -> None:
    store = RecordingStore(folder / "recordings")
    store.folder.mkdir(exist_ok=True)
    document = mutate(recording_document, data, COMMON_RAW)
    store.path_for("c").write_bytes(damage(flow(document, yaml=False), data))
    survives(lambda: store.get_many("c", ["k1", "k2", "missing"]))


def _peak_over_the_cap() -> None:
    block = bytearray(MEMORY_CAP + 100 * 2**20)
    block[::4096] = b"\x01" * len(block[::4096])  # touched: resident, not only reserved


def test_the_meter_catches_an_example_over_the_memory_cap() -> None:
    with pytest.raises(AssertionError, match=r"the example peaked at 3\d\d MB"), guarded():
        _peak_over_the_cap()
    with guarded():
        bytearray(10 * 2**20)
