"""promptfoo's assertions as casegate checks, and what needs a person."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from gate import checks
from gate.importers.promptfoo.common import CHECKS_MODULE, PROMPTFOO_VERSION, NeedsPerson
from gate.importers.promptfoo.expect import RUBRIC_SCALE, Expect, _all_of, _any_of, _Text
from gate.importers.promptfoo.js import js_string, plain, shown_value, split_values
from gate.importers.promptfoo.jsshapes import map_javascript
from gate.importers.promptfoo.nunjucks import render_value
from gate.importers.promptfoo.reading import Folder, Yaml12Loader
from gate.importers.promptfoo.scores import MEASURED, RAG, map_rag, threshold_of
from gate.yamlfile import YamlSyntaxError, printable

#: A back-reference by number: after another pattern's groups it would point elsewhere.
_NUMBERED_REFERENCE = re.compile(r"\\[1-9]|\\g<\d")


#: the stub check of a draft case (a test promptfoo runs with no assertion)
DRAFT_CHECK = "needs_a_check"


@dataclass
class Stub:
    function: str
    kind: str
    test: str
    code: str
    inverse: bool
    threshold: Any = None
    transform: str | None = None


class Stubs:
    """The suite's stub checks: one per assertion object, so a defaultTest assertion that
    lands in every case, or a test that array vars expand, gets one stub."""

    def __init__(self) -> None:
        self.stubs: list[Stub] = []
        self._made: dict[int, str] = {}
        self._names: set[str] = set()

    def spec(
        self,
        assertion: Mapping[str, Any],
        kind: str,
        inverse: bool,
        owner: str,
        base: str,
        transform: str | None,
    ) -> str:
        name = self._made.get(id(assertion))
        if name is None:
            number = sum(stub.test == owner for stub in self.stubs) + 1
            name = re.sub(r"\W", "_", f"{base}_{number}")
            name = name if name.startswith("check") else f"check_{name}"
            while name in self._names:
                name += "_"
            self._names.add(name)
            self._made[id(assertion)] = name
            code = assertion.get("value")
            shown = code if isinstance(code, str) else json.dumps(plain(code), ensure_ascii=False)
            threshold = assertion.get("threshold")
            self.stubs.append(Stub(name, kind, owner, shown, inverse, threshold, transform))
        return f"{CHECKS_MODULE}:{name}"

    def draft(self) -> str:
        """The one check every draft case shares: it fails until a person writes the case's."""
        if DRAFT_CHECK not in self._names:
            self._names.add(DRAFT_CHECK)
            self.stubs.append(Stub(DRAFT_CHECK, "draft", "", "", False))
        return f"{CHECKS_MODULE}:{DRAFT_CHECK}"


@dataclass
class Context:
    """What mapping one test's assertions needs from outside it."""

    folder: Folder
    test: str  # "test 3 (its description)"
    name: str  # the test's case id, before any suffix
    stubs: Stubs
    judges: list[Any]  # promptfoo grader providers named on the way
    variables: Mapping[str, Any] = field(default_factory=dict)
    transform: str | None = None
    inherited: bool = False  # the assertion being mapped came from defaultTest
    #: every imported system declares `tools` (what `tool_args_valid` judges against)
    declares_tools: bool = False


_TEXT_KINDS = {
    "contains": ("contains", False),
    "icontains": ("contains", True),
    "contains-all": ("contains", False),
    "icontains-all": ("contains", True),
    "contains-any": ("any", False),
    "icontains-any": ("any", True),
}


def _needle(value: Any, kind: str) -> str:
    if (isinstance(value, str) and value) or (
        isinstance(value, int | float) and not isinstance(value, bool) and not _nan(value)
    ):
        return js_string(value)
    raise NeedsPerson(f"`{kind}` takes a non-empty string or a number; promptfoo refuses this")


def _nan(value: float) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _needles(value: Any, kind: str, notes: list[str]) -> list[str]:
    if isinstance(value, str):
        try:
            items: list[Any] = split_values(value)
        except ValueError as exc:
            raise NeedsPerson(f"`{kind}`: promptfoo refuses this value ({exc})") from None
        naive = [part.strip() for part in value.split(",")]
        if items != naive and '"' in value:
            notes.append(
                f"`{kind}` value {shown_value(value, 80)} read as {shown_value(items, 120)}; "
                f"promptfoo releases before March 2026 read it as {shown_value(naive, 120)}"
            )
    elif isinstance(value, list):
        items = value
    else:
        raise NeedsPerson(f"`{kind}` takes a list (or a comma-separated string)")
    if not items:
        raise NeedsPerson(f"`{kind}` with no values: promptfoo fails it on every output")
    if any(isinstance(item, dict | list) or item is None for item in items):
        raise NeedsPerson(f"`{kind}`: a value that is not text or a number")
    return [js_string(item) for item in items]


def _file_value(value: Any, context: Context, what: str) -> Any:
    """An assertion value given as `file://…`: .txt is its text, .json/.yaml parsed."""
    if not (isinstance(value, str) and value.startswith("file://")):
        return value
    path = context.folder.paths(value, None, what)[0]
    if path.suffix in (".json", ".yaml", ".yml"):
        return context.folder.parse(context.folder.text(path, context.folder.config), path)
    if path.suffix == ".txt":
        return context.folder.text(path, context.folder.config).strip()
    raise NeedsPerson(f"`{what}` reads {value}, which promptfoo runs or refuses; port it by hand")


def map_assertion(assertion: Mapping[str, Any], expect: Expect, context: Context) -> str:
    """Add one assertion's checks to `expect`; returns what it became, or raises NeedsPerson."""
    kind = str(assertion.get("type", "")).removeprefix("not-")
    own = assertion.get("transform")
    transform = own or context.transform
    if transform is None or kind in CODE_KINDS or not _TRIM.fullmatch(str(transform)):
        return _map_one(assertion, expect, context)
    # The one transform casegate has: white space off both ends.
    inherited, context.transform = context.transform, None
    try:
        plain_assertion = {key: value for key, value in assertion.items() if key != "transform"}
        described = _map_one(plain_assertion, expect, context)
    finally:
        context.transform = inherited
    expect.strip = True
    return described + (
        "; `transform: output.trim()` became `normalize: [strip]`"
        + ("" if own is None else " (which every text check of the case reads)")
    )


def _map_one(assertion: Mapping[str, Any], expect: Expect, context: Context) -> str:
    kind = str(assertion.get("type", ""))
    inverse = kind.startswith("not-")
    base = kind.removeprefix("not-")
    notes: list[str] = []
    weight = assertion.get("weight", 1)
    if not isinstance(weight, int | float) or isinstance(weight, bool) or weight < 0:
        raise NeedsPerson(f"weight {weight!r} is not a number ≥ 0")
    if weight == 0:
        return "not carried over: with `weight: 0` promptfoo never fails a test on it (a metric)"
    transform = assertion.get("transform") or context.transform
    if transform is not None and base not in CODE_KINDS:
        raise NeedsPerson(
            f"promptfoo judges the output after `transform: {printable(str(transform))[:120]}`; "
            "casegate judges the output text as it is"
        )
    if base in CODE_KINDS:
        code = assertion.get("value")
        simple = (
            map_javascript(code, inverse, expect)
            if base == "javascript"
            and isinstance(code, str)
            and transform is None
            and assertion.get("threshold") is None
            else None
        )
        if simple is None:
            return _stub(assertion, kind, inverse, context)
        return f"`javascript` {shown_value(code, 120)} → {simple}" + (
            " (JavaScript counts UTF-16 code units, casegate characters: they differ only "
            "past U+FFFF, emoji among them)"
            if "_chars" in simple
            else ""
        )
    if base not in _MAPPED or (inverse and base not in _INVERTIBLE):
        # before its value is read: a `file://x.rb:fn` of an unknown kind names code, not data
        raise NeedsPerson(f"casegate has no check for `{kind}`")
    raw = assertion.get("value")
    value = render_value(_file_value(raw, context, kind), context.variables)
    if base in _TEXT_KINDS:
        requirement, insensitive = _TEXT_KINDS[base]
        if base in ("contains", "icontains"):
            needles = [_needle(value, kind)]
        else:
            needles = _needles(value, kind, notes)
        if inverse:
            requirement = {"contains": "not_contains", "any": "not_contains"}[requirement]
            if base.endswith("-all"):
                requirement = "not_all"
        expect.texts.append(_Text(requirement, needles, insensitive))
        return _described(kind, value, notes)
    if base == "equals":
        if isinstance(value, dict | list) and not inverse and not expect.extract_json:
            # promptfoo parses the output and compares it deeply: JSON Schema's `const`.
            expect.schemas.append({"const": plain(value)})
            return (
                f"`equals` {shown_value(value, 120)} → `json_schema: {{const: …}}` (deep equality)"
            )
        if isinstance(value, dict | list) or value is None:
            raise NeedsPerson("`equals` with a JSON value (deep equality) has no casegate check")
        expect.texts.append(_Text("not_equals" if inverse else "equals", [js_string(value)]))
        return _described(kind, value, notes)
    if base == "starts-with":
        if not isinstance(value, str) or not value:
            raise NeedsPerson("`starts-with` takes a non-empty string")
        if inverse:
            expect.forbidden.append("^" + re.escape(value))
        else:
            expect.starts.append(value)
        return _described(kind, value, notes)
    if base == "regex":
        return _map_regex(kind, value, inverse, expect)
    if base in ("is-json", "contains-json") and not inverse:
        return _map_json(base, value, expect)
    if base in _BUDGETS and not inverse:
        return _map_budget(base, assertion.get("threshold"), expect)
    if base == "finish-reason" and not inverse:
        if not isinstance(value, str) or not value:
            raise NeedsPerson("`finish-reason` takes a reason such as `stop` or `length`")
        expect.finish_reasons.append(value)
        return f"`finish-reason` {shown_value(value, 60)} → `finish_reason`"
    if base == "is-valid-openai-tools-call" and not inverse:
        if not context.declares_tools:
            raise NeedsPerson(
                "the provider declares no `tools` in its config, so there is no schema to "
                "judge the calls against; add the tools to the system, then `tool_args_valid: true`"
            )
        expect.tool_args_valid = True
        return (
            "`is-valid-openai-tools-call` → `tool_args_valid: true` (every call's arguments "
            "against the `parameters` the system's `tools` declare)"
        )
    if base == "word-count" and not inverse:
        return _map_words(value, expect)
    if base == "llm-rubric" and not inverse:
        return _map_rubric(assertion, value, expect, context)
    if base == "assert-set":
        raise NeedsPerson(
            f"`assert-set` with `threshold: {js_string(assertion.get('threshold'))}` passes when "
            "that share of its assertions passes; casegate's checks all must pass"
        )
    if base == "empty" and inverse:
        expect.patterns.append(r"\S")
        return (
            "`not-empty` → `regex: \\S` (the output holds a character that is not white space); "
            f"promptfoo {PROMPTFOO_VERSION} lists no `empty` type, so this follows the name"
        )
    if base in RAG:
        return map_rag(base, assertion, value, context.variables, expect)
    return MEASURED[base](assertion, value, expect)


#: the one `transform` casegate has: white space off both ends (`normalize: [strip]`)
_TRIM = re.compile(r"\s*(?:output|String\(output\))\.trim\(\)\s*;?\s*")
#: assertions whose value is code casegate never runs: each becomes a stub check
CODE_KINDS = ("javascript", "python", "ruby")
#: what map_assertion maps (with `not-` where _INVERTIBLE says)
_INVERTIBLE = {*_TEXT_KINDS, "equals", "starts-with", "regex", "empty", "assert-set"}
_MAPPED = {
    *_INVERTIBLE,
    "is-json",
    "contains-json",
    "latency",
    "cost",
    "finish-reason",
    "is-valid-openai-tools-call",
    "word-count",
    "llm-rubric",
    *MEASURED,
    *RAG,
}


def _map_rubric(assertion: Mapping[str, Any], value: Any, expect: Expect, context: Context) -> str:
    """`llm-rubric` → `judge`; with a `threshold`, the graded judge: promptfoo's grader
    scores 0 to 1, casegate's judge grades 0 to 10 and normalises to 0 to 1."""
    if isinstance(value, dict | list) and value:
        value = json.dumps(plain(value), ensure_ascii=False)
    if not isinstance(value, str) or not value.strip():
        raise NeedsPerson("`llm-rubric` with a rubric that is not text")
    notes: list[str] = []
    graded = assertion.get("threshold") is not None
    if graded:
        threshold = threshold_of(assertion, 0, 0, 1)
        if expect.rubrics:
            raise NeedsPerson(
                "a second `llm-rubric` beside a graded one: a case has one graded judge"
            )
        expect.rubric_threshold = threshold
        notes.append(
            f"graded: `scale: {RUBRIC_SCALE}`, `threshold: {threshold:g}` on the normalised "
            "score (promptfoo also needs its grader's pass; casegate's graded judge reads the "
            "score alone)"
        )
    elif expect.rubric_threshold is not None:
        raise NeedsPerson("a second `llm-rubric` beside a graded one: a case has one graded judge")
    expect.rubrics.append(value.strip())
    context.judges.extend(p for p in (assertion.get("provider"),) if p is not None)
    if assertion.get("rubricPrompt") is not None:
        notes.append(
            "`rubricPrompt` not carried over: casegate's judge prompt is its own, versioned"
        )
    return _described(str(assertion.get("type")), value, notes)


def _described(kind: str, value: Any, notes: Sequence[str]) -> str:
    return f"`{kind}` {shown_value(value, 120)}" + "".join(f"; {note}" for note in notes)


def _map_regex(kind: str, value: Any, inverse: bool, expect: Expect) -> str:
    if not isinstance(value, str) or not value:
        raise NeedsPerson("`regex` takes a non-empty pattern")
    try:
        checks.REGISTRY["regex"]("regex", value, checks.Modifiers())
    except checks.CheckSpecError as exc:
        raise NeedsPerson(f"the pattern is not valid in Python's `re` syntax: {exc}") from None
    kept = expect.forbidden if inverse else expect.patterns
    if kept:  # the case's one `regex` (or `not_regex`) key will hold them together
        together = (_any_of if inverse else _all_of)([*kept, value])
        try:
            checks.REGISTRY["regex"]("regex", together, checks.Modifiers())
        except checks.CheckSpecError as exc:
            raise NeedsPerson(f"it cannot share the case's pattern with others ({exc})") from None
        if _NUMBERED_REFERENCE.search(value):
            raise NeedsPerson("its numbered back-reference would point elsewhere beside others")
    kept.append(value)
    return _described(kind, value, [])


def _map_json(kind: str, value: Any, expect: Expect) -> str:
    """`is-json` reads the whole output; `contains-json` the JSON inside it (`extract_json`).
    casegate reads one way per case, so a case cannot have both."""
    extract = kind == "contains-json"
    if (expect.json or expect.schemas) and expect.extract_json != extract:
        raise NeedsPerson(
            "the test has both `is-json` and `contains-json`; casegate's JSON checks read "
            "either the whole output or the JSON inside it, one way per case"
        )
    expect.extract_json = extract
    note = (
        "; casegate reads the first JSON object or array (in a ``` fence first), where "
        "promptfoo passes when any JSON in the output does"
        if extract
        else ""
    )
    if value in (None, ""):
        expect.json = True
        added = "`json: true`, `extract_json: true`" if extract else "`json: true`"
        return f"`{kind}` → {added}{note}"
    schema = value
    if isinstance(value, str):
        try:
            schema = yaml.load(value, Loader=Yaml12Loader)  # noqa: S506 - a SafeLoader subclass
        except (yaml.YAMLError, YamlSyntaxError, ValueError, RecursionError) as exc:
            raise NeedsPerson(f"its JSON schema does not parse ({exc})") from None
    if not isinstance(schema, dict):
        raise NeedsPerson(f"`{kind}` with a schema that is not a mapping")
    schema = plain(schema)
    try:
        checks.REGISTRY["json_schema"]("json_schema", schema, checks.Modifiers())
    except checks.CheckSpecError as exc:
        raise NeedsPerson(str(exc)) from None
    expect.schemas.append(schema)
    return f"`{kind}` with a schema → `json_schema` {shown_value(schema, 120)}{note}"


#: promptfoo's budget assertions: their casegate check and what the threshold counts
_BUDGETS = {
    "latency": ("max_latency_ms", "milliseconds", "latency"),
    "cost": ("max_cost_usd", "dollars", "cost"),
}


def _map_budget(kind: str, threshold: Any, expect: Expect) -> str:
    key, unit, figure = _BUDGETS[kind]
    if (
        not isinstance(threshold, int | float)
        or isinstance(threshold, bool)
        or not math.isfinite(threshold)
        or threshold < 0
    ):
        raise NeedsPerson(f"`{kind}` needs a `threshold` in {unit} (a number ≥ 0)")
    expect.budgets[key] = min(threshold, expect.budgets.get(key, threshold))
    return (
        f"`{kind}` below {js_string(threshold)} {unit} → `{key}`; in replay casegate judges "
        f"the {figure} recorded with the answer"
    )


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _map_words(value: Any, expect: Expect) -> str:
    if _whole(value):
        low = high = value
    elif isinstance(value, dict) and set(value) <= {"min", "max"} and value:
        low, high = value.get("min"), value.get("max")
        if not all(bound is None or _whole(bound) for bound in (low, high)):
            raise NeedsPerson("`word-count` bounds must be whole numbers")
        if low is not None and high is not None and low > high:
            raise NeedsPerson("`word-count` with min above max: promptfoo refuses it")
    else:
        raise NeedsPerson("`word-count` takes a whole number or {min, max}")
    if low is not None:
        expect.min_words = max(low, expect.min_words or 0)
    if high is not None:
        expect.max_words = high if expect.max_words is None else min(high, expect.max_words)
    return f"`word-count` {shown_value(value, 60)} → min_words/max_words"


def _stub(assertion: Mapping[str, Any], kind: str, inverse: bool, context: Context) -> str:
    owner, base = ("defaultTest", "default") if context.inherited else (context.test, context.name)
    transform = assertion.get("transform") or context.transform
    shown = None if transform is None else printable(str(transform))
    spec = context.stubs.spec(assertion, kind, inverse, owner, base, shown)
    raise NeedsPerson(f"`{kind}` is code: the stub `{spec}` fails until a person ports it", spec)
