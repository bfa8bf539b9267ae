"""Deterministic checks: the judgement of an output, owned by the suite.

Each check is a factory: it receives the argument from a case's `expect`
entry, validates it (raising `CheckSpecError`, which the case loader turns
into a `file:line` problem) and returns a callable that judges one output.
A check never raises on odd output; it fails with a reason a person can act on.
"""

from __future__ import annotations

import json
import math
import re
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import regex as regex_engine  # `re` syntax with a match timeout
from jsonschema.exceptions import best_match

from gate import usercode
from gate.errors import SystemCallError
from gate.outputs import Output, ToolCall

JSON_PARSE_FAILED = object()
#: A pattern search on one output that takes longer fails its check: model output is
#: untrusted input, and a backtracking pattern must not hang the run.
REGEX_TIMEOUT_S = 1.0
#: The `regex` module copies an atom once per counted repeat when it compiles
#: (`a{1000}` is 1,000 nodes, nested counts multiply); past this it is refused at load.
MAX_PATTERN_SIZE = 20_000


class CheckSpecError(Exception):
    """A check's argument in a case file is invalid."""


@dataclass(frozen=True, slots=True)
class Verdict:
    check: str
    ok: bool
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "ok": self.ok, "reason": self.reason}


@dataclass(slots=True)
class Subject:
    """What a check sees: one output, its case input, parsed JSON on demand."""

    text: str
    case_input: Mapping[str, Any]
    tool_calls: Sequence[ToolCall] = ()
    case: Any = None
    #: the pinned LLM judge (gate.judge.Grader) when the suite has one
    grader: Any = None
    #: the sample's recorded figures (None: the provider reported none)
    stop_reason: str | None = None
    latency_ms: float | None = None
    cost_usd: float | None = None
    output_tokens: int | None = None
    _parsed: Any = field(default=None, repr=False)
    _parse_error: str | None = field(default=None, repr=False)
    _parsed_done: bool = field(default=False, repr=False)

    @classmethod
    def of(
        cls, output: Output, case: Any, grader: Any = None, *, cost_usd: float | None = None
    ) -> Subject:
        """`cost_usd`: the cost priced from the config when the output carries none."""
        return cls(
            output.text,
            case.input,
            output.tool_calls,
            case,
            grader,
            stop_reason=output.stop_reason,
            latency_ms=output.latency_ms,
            cost_usd=output.cost_usd if output.cost_usd is not None else cost_usd,
            output_tokens=output.output_tokens,
        )

    def parsed_json(self) -> tuple[Any, str | None]:
        """The output parsed as JSON, or (JSON_PARSE_FAILED, reason)."""
        if not self._parsed_done:
            self._parsed_done = True
            try:
                self._parsed = json.loads(self.text, parse_constant=_refuse_constant)
            except _NotJsonConstant as exc:
                self._parsed = JSON_PARSE_FAILED
                self._parse_error = (
                    f"output is not JSON: it contains {exc.args[0]}, which RFC 8259 does not allow"
                )
            except (ValueError, RecursionError) as exc:
                self._parsed = JSON_PARSE_FAILED
                self._parse_error = f"output is not JSON ({_short(str(exc), 80)})"
        return self._parsed, self._parse_error


class _NotJsonConstant(ValueError):
    """`NaN`, `Infinity` or `-Infinity`: Python's json accepts them, RFC 8259 does not."""


def _refuse_constant(name: str) -> Any:
    raise _NotJsonConstant(name)


Judge = Callable[[Subject], Verdict]
Factory = Callable[[str, Any, Sequence[str]], Judge]


def _short(text: str, limit: int = 60) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe(value: Any, limit: int = 60) -> str:
    try:
        return _short(json.dumps(value, ensure_ascii=False), limit)
    except (TypeError, ValueError):
        return _short(repr(value), limit)


# --- argument validation ----------------------------------------------------


def _strings(name: str, arg: Any, *, allow_single: bool = True) -> list[str]:
    if allow_single and isinstance(arg, str):
        return [arg]
    if isinstance(arg, list) and arg and all(isinstance(item, str) for item in arg):
        return list(arg)
    shape = "a string or a non-empty list of strings" if allow_single else "a list of strings"
    raise CheckSpecError(f"{name} takes {shape}, got {_describe(arg)}")


def _count(name: str, arg: Any) -> int:
    if isinstance(arg, bool) or not isinstance(arg, int) or arg < 0:
        raise CheckSpecError(f"{name} takes a whole number ≥ 0, got {_describe(arg)}")
    return arg


def _pattern(name: str, arg: Any) -> regex_engine.Pattern[str]:
    """A compiled pattern (Python `re` syntax, through `regex` for its match timeout)."""
    if not isinstance(arg, str):
        raise CheckSpecError(f"{name} takes a regular expression string, got {_describe(arg)}")
    if pattern_size(arg) > MAX_PATTERN_SIZE:
        raise CheckSpecError(
            f"{name}: the regular expression {_describe(arg)} repeats too much (its counted "
            f"repeats would build more than {MAX_PATTERN_SIZE:,} elements); "
            "use a smaller {count}, or + or *"
        )
    try:
        return regex_engine.compile(arg)
    except RecursionError:
        problem = "its groups nest too deeply"
    except (regex_engine.error, OverflowError, ValueError) as exc:
        problem = _short(str(exc), 120)
    raise CheckSpecError(f"{name}: invalid regular expression {_describe(arg)}: {problem}")


_COUNTED_REPEAT = re.compile(r"\{(\d*)(,\d*)?\}")
_BRACED_ESCAPES = frozenset("xNpPuU")


def pattern_size(pattern: str) -> int:
    """An upper estimate of the elements `regex` builds: counted repeats multiply their atom.

    A small scanner, not a parser: it may overcount (comments in verbose mode), never
    undercount what a counted repeat expands to.
    """
    frames = [[0, 0]]  # per open group: [size so far, size of its last atom]
    index, end = 0, len(pattern)
    while index < end:
        char, frame, atom = pattern[index], frames[-1], 1
        if char == "\\":
            index += 2
            if pattern[index - 1 : index] in _BRACED_ESCAPES and pattern[index : index + 1] == "{":
                close = pattern.find("}", index)  # \x{263a}, \p{Lu}: one atom
                index = end if close < 0 else close + 1
        elif char == "[":
            index = _class_end(pattern, index)
        elif char == "(":
            frames.append([0, 0])
            index += 1
            continue
        elif char == ")" and len(frames) > 1:
            inner = frames.pop()
            frame, atom = frames[-1], max(inner[0], 1)
            index += 1
        elif char == "{" and (repeat := _COUNTED_REPEAT.match(pattern, index)) and repeat[1]:
            times = max(int(repeat[1][:12]), 1)
            frame[0] += frame[1] * (times - 1)
            frame[1] *= times
            index = repeat.end()
            if frame[0] > MAX_PATTERN_SIZE:
                return frame[0]
            continue
        elif char in "|*+?":  # an alternative starts afresh; these quantifiers copy nothing
            frame[1] = 0 if char == "|" else frame[1]
            index += 1
            continue
        else:
            index += 1
        frame[0] += atom
        frame[1] = atom
    return sum(frame[0] for frame in frames)


def _class_end(pattern: str, start: int) -> int:
    """The index just past the character class opening at `start`."""
    index = start + 1
    if pattern[index : index + 1] == "^":
        index += 1
    if pattern[index : index + 1] == "]":
        index += 1
    while index < len(pattern):
        if pattern[index] == "\\":
            index += 2
        elif pattern[index] == "]":
            return index + 1
        elif pattern.startswith("[:", index) and (close := pattern.find(":]", index + 2)) > 0:
            index = close + 2
        else:
            index += 1
    return index


def _too_slow(pattern: regex_engine.Pattern[str]) -> str:
    return (
        f"/{_short(pattern.pattern)}/ took longer than {REGEX_TIMEOUT_S:g} s on this output "
        "(catastrophic backtracking?); simplify the pattern"
    )


# --- normalisation ----------------------------------------------------------

NORMALIZERS: dict[str, Callable[[str], str]] = {
    "strip": str.strip,
    "lower": str.lower,
    "collapse_whitespace": lambda text: " ".join(text.split()),
}


def parse_normalize(arg: Any) -> list[str]:
    steps = _strings("normalize", arg)
    unknown = [step for step in steps if step not in NORMALIZERS]
    if unknown:
        raise CheckSpecError(
            f"normalize: unknown step {unknown[0]!r} (known: {', '.join(NORMALIZERS)})"
        )
    return steps


def _normalizer(steps: Sequence[str]) -> Callable[[str], str]:
    functions = [NORMALIZERS[step] for step in steps]

    def apply(text: str) -> str:
        for function in functions:
            text = function(text)
        return text

    return apply


# --- text checks --------------------------------------------------------------


def equals(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
    if not isinstance(arg, str):
        raise CheckSpecError(f"equals takes a string, got {_describe(arg)}")
    norm = _normalizer(normalize)
    expected = norm(arg)

    def judge(subject: Subject) -> Verdict:
        actual = norm(subject.text)
        if actual == expected:
            return Verdict(name, True)
        return Verdict(name, False, _mismatch(expected, actual, normalized=bool(normalize)))

    return judge


#: characters shown on each side of the first difference between two long strings
DIFFERENCE_CONTEXT = 24
_ESCAPES = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})


def _mismatch(expected: str, actual: str, *, normalized: bool = False) -> str:
    """Both strings when they are short; else where they first differ, with context."""
    if _fits(expected) and _fits(actual):
        return f"expected {_describe(expected)}, got {_describe(actual)}"
    at = next(
        (i for i, (a, b) in enumerate(zip(expected, actual, strict=False)) if a != b),
        min(len(expected), len(actual)),
    )
    after = " (after normalize)" if normalized else ""
    return (
        f"differs at character {at + 1}{after}: expected {_around(expected, at)}, "
        f"got {_around(actual, at)}"
    )


def _fits(value: Any, limit: int = 60) -> bool:
    """Whether `_describe` shows `value` whole."""
    return len(_describe(value, limit + 1)) <= limit


def _around(text: str, at: int) -> str:
    """`text` near index `at`, line breaks shown as \\n, a cut marked "…", and
    "(end of text)" when the text ends where the other goes on."""
    if not text:
        return "(empty)"
    start, end = max(0, at - DIFFERENCE_CONTEXT), at + DIFFERENCE_CONTEXT
    shown = text[start:end].translate(_ESCAPES)
    ending = "…" if end < len(text) else " (end of text)" if at >= len(text) else ""
    return ("…" if start else "") + shown + ending


def contains(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
    norm = _normalizer(normalize)
    needles = [(raw, norm(raw)) for raw in _strings(name, arg)]

    def judge(subject: Subject) -> Verdict:
        text = norm(subject.text)
        missing = [raw for raw, needle in needles if needle not in text]
        if not missing:
            return Verdict(name, True)
        return Verdict(name, False, "missing " + ", ".join(_describe(m) for m in missing))

    return judge


def contains_any(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
    norm = _normalizer(normalize)
    options = _strings(name, arg, allow_single=False)
    needles = [norm(option) for option in options]

    def judge(subject: Subject) -> Verdict:
        text = norm(subject.text)
        if any(needle in text for needle in needles):
            return Verdict(name, True)
        return Verdict(name, False, "none of " + ", ".join(_describe(o) for o in options))

    return judge


def not_contains(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
    norm = _normalizer(normalize)
    needles = [(raw, norm(raw)) for raw in _strings(name, arg)]

    def judge(subject: Subject) -> Verdict:
        text = norm(subject.text)
        found = [raw for raw, needle in needles if needle in text]
        if not found:
            return Verdict(name, True)
        return Verdict(name, False, "contains forbidden " + ", ".join(_describe(f) for f in found))

    return judge


def regex(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
    pattern = _pattern(name, arg)

    def judge(subject: Subject) -> Verdict:
        try:
            found = pattern.search(subject.text, timeout=REGEX_TIMEOUT_S)
        except TimeoutError:
            return Verdict(name, False, _too_slow(pattern))
        if found:
            return Verdict(name, True)
        return Verdict(name, False, f"no match for /{pattern.pattern}/")

    return judge


def not_regex(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
    pattern = _pattern(name, arg)

    def judge(subject: Subject) -> Verdict:
        try:
            match = pattern.search(subject.text, timeout=REGEX_TIMEOUT_S)
        except TimeoutError:
            return Verdict(name, False, _too_slow(pattern))
        if match is None:
            return Verdict(name, True)
        return Verdict(
            name, False, f"matches forbidden /{pattern.pattern}/: {_describe(match.group(0))}"
        )

    return judge


def _length_check(unit: str, measure: Callable[[str], int], *, upper: bool) -> Factory:
    def factory(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
        limit = _count(name, arg)

        def judge(subject: Subject) -> Verdict:
            size = measure(subject.text)
            if (size <= limit) if upper else (size >= limit):
                return Verdict(name, True)
            bound = "the limit is" if upper else "the minimum is"
            return Verdict(name, False, f"{size} {unit}, {bound} {limit}")

        return judge

    return factory


def _word_count(text: str) -> int:
    return len(text.split())


max_words = _length_check("words", _word_count, upper=True)
min_words = _length_check("words", _word_count, upper=False)
max_chars = _length_check("characters", len, upper=True)
min_chars = _length_check("characters", len, upper=False)


def _affix_check(*, start: bool) -> Factory:
    verb = "start" if start else "end"

    def factory(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
        if not isinstance(arg, str) or not arg:
            raise CheckSpecError(f"{name} takes a non-empty string, got {_describe(arg)}")
        norm = _normalizer(normalize)
        expected = norm(arg)
        if not expected:
            raise CheckSpecError(f"{name}: {_describe(arg)} is empty after normalize")
        # Show as much of the output's own start (end) as the expected text, plus a little.
        width = min(len(expected) + 10, 40)

        def judge(subject: Subject) -> Verdict:
            text = norm(subject.text)
            if text.startswith(expected) if start else text.endswith(expected):
                return Verdict(name, True)
            if not text:
                return Verdict(
                    name, False, f"expected to {verb} with {_describe(arg)}, got (empty)"
                )
            if start:
                shown = text[:width].translate(_ESCAPES) + ("…" if len(text) > width else "")
            else:
                shown = ("…" if len(text) > width else "") + text[-width:].translate(_ESCAPES)
            after = " (after normalize)" if normalize else ""
            return Verdict(
                name, False, f"expected to {verb} with {_describe(arg)}, {verb}s{after}: {shown}"
            )

        return judge

    return factory


starts_with = _affix_check(start=True)
ends_with = _affix_check(start=False)


# --- the sample's recorded figures ---------------------------------------------

#: providers' own stop reasons, by what they mean (OpenAI's names)
FINISH_REASONS = {
    "end_turn": "stop",  # Anthropic
    "stop_sequence": "stop",  # Anthropic
    "completed": "stop",  # OpenAI Responses
    "max_tokens": "length",  # Anthropic
    "tool_use": "tool_calls",  # Anthropic
}


def _finish(reason: str) -> str:
    return FINISH_REASONS.get(reason, reason)


def finish_reason(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
    allowed = _strings(name, arg)
    wanted = {_finish(reason) for reason in allowed}
    expected = " or ".join(_describe(reason) for reason in allowed)

    def judge(subject: Subject) -> Verdict:
        recorded = subject.stop_reason
        if not isinstance(recorded, str) or not recorded:
            return Verdict(name, False, "unknown finish reason (the provider reported none)")
        meaning = _finish(recorded)
        if meaning in wanted:
            return Verdict(name, True)
        shown = _describe(recorded) + (f" ({meaning})" if meaning != recorded else "")
        if meaning == "length":
            return Verdict(
                name,
                False,
                f"the answer was cut off at the output token limit (finish reason {shown}, "
                f"expected {expected}): raise max_tokens or ask for a shorter answer",
            )
        return Verdict(name, False, f"finish reason {shown}, expected {expected}")

    return judge


def _limit(name: str, arg: Any, *, whole: bool) -> float:
    number = isinstance(arg, int) if whole else isinstance(arg, int | float)
    infinite = isinstance(arg, float) and not math.isfinite(arg)
    if isinstance(arg, bool) or not number or infinite or arg < 0:
        kind = "a whole number ≥ 0" if whole else "a number ≥ 0"
        raise CheckSpecError(f"{name} takes {kind}, got {_describe(arg)}")
    limit: float = arg  # an int stays exact: a YAML integer may be too large for a float
    return limit


def _budget(
    unknown: str,
    read: Callable[[Subject], Any],
    figure: Callable[[float], str],
    limit_of: Callable[[float], str],
    *,
    whole: bool = False,
) -> Factory:
    """A check that a recorded figure is within a limit; an unknown figure fails."""

    def factory(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
        limit = _limit(name, arg, whole=whole)

        def judge(subject: Subject) -> Verdict:
            value = read(subject)
            if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
                return Verdict(name, False, unknown)  # None, or NaN: no figure to judge
            if value <= limit:
                return Verdict(name, True)
            return Verdict(name, False, f"{figure(value)}, the limit is {limit_of(limit)}")

        return judge

    return factory


def _number(value: float) -> str:
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.1f}".removesuffix(".0")


def _usd(value: float) -> str:
    if isinstance(value, int) or math.isinf(value):
        return f"${value}"
    return "$" + (f"{value:.6f}".rstrip("0").rstrip(".") if value >= 0.000001 else f"{value:g}")


max_latency_ms = _budget(
    "unknown latency (the provider reported none)",
    lambda subject: subject.latency_ms,
    lambda ms: f"recorded latency {_number(ms)} ms",
    lambda ms: f"{_number(ms)} ms",
)
max_cost_usd = _budget(
    "unknown cost (the provider reported none, and `pricing` in the config has no price for "
    "this model)",
    lambda subject: subject.cost_usd,
    lambda usd: f"recorded cost {_usd(usd)}",
    _usd,
)
max_output_tokens = _budget(
    "unknown output tokens (the provider reported none)",
    lambda subject: subject.output_tokens,
    lambda count: f"{_number(count)} output tokens",
    _number,
    whole=True,
)


# --- JSON checks --------------------------------------------------------------

_MISSING = object()


def parse_path(path: str) -> list[str]:
    return path.split(".")


def resolve(document: Any, path: Sequence[str]) -> Any:
    """Follow a dotted path through mappings and lists; _MISSING when absent."""
    current = document
    for part in path:
        if isinstance(current, Mapping):
            if part not in current:
                return _MISSING
            current = current[part]
        elif isinstance(current, list) and part.lstrip("-").isdigit():
            index = int(part)
            if not -len(current) <= index < len(current):
                return _MISSING
            current = current[index]
        else:
            return _MISSING
    return current


def json_equal(left: Any, right: Any) -> bool:
    """JSON equality: `true` is not `1`, `1.0` equals `1`, order matters in lists."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right or (
            isinstance(left, float) and isinstance(right, float) and math.isnan(left + right)
        )
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    return type(left) is type(right) and bool(left == right)


def _parsed_or_fail(name: str, subject: Subject) -> tuple[Any, Verdict | None]:
    parsed, error = subject.parsed_json()
    if parsed is JSON_PARSE_FAILED:
        return None, Verdict(name, False, error or "output is not JSON")
    return parsed, None


def json_check(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
    if arg is not True:
        raise CheckSpecError(f"json takes `true`, got {_describe(arg)}")

    def judge(subject: Subject) -> Verdict:
        _, failed = _parsed_or_fail(name, subject)
        return failed or Verdict(name, True)

    return judge


def _dotted(path: Sequence[Any]) -> str:
    return ".".join(str(part) for part in path) or "(root)"


def _dangling_refs(schema: Any) -> list[str]:
    """The `$ref`s that are not JSON pointers into the schema itself, or point at nothing.

    Found when the cases load, so a broken schema is a config error, not a failed case.
    """
    found: list[str] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and not _resolves(schema, ref):
                found.append(ref)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


#: keywords whose value is one subschema, a list of them, or a mapping of name → subschema
_SUBSCHEMA = frozenset(
    [
        "additionalItems",
        "additionalProperties",
        "contains",
        "contentSchema",
        "else",
        "if",
        "items",
        "not",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
    ]
)
_SUBSCHEMA_LISTS = frozenset(["allOf", "anyOf", "oneOf", "prefixItems", "items"])
_SUBSCHEMA_MAPS = frozenset(
    ["$defs", "definitions", "dependentSchemas", "dependencies", "patternProperties", "properties"]
)


def _formats(schema: Any) -> list[str]:
    """Every `format` the schema asserts, following only keywords that hold subschemas
    (a `format` key inside `const`, `enum` or `examples` is data, not an assertion)."""
    found: list[str] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        if isinstance(node.get("format"), str):
            found.append(node["format"])
        for key, value in node.items():
            if key in _SUBSCHEMA and isinstance(value, dict):
                stack.append(value)
            elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
                stack.extend(value)
            elif key in _SUBSCHEMA_MAPS and isinstance(value, dict):
                stack.extend(value.values())
    return found


def _resolves(schema: Any, ref: str) -> bool:
    if not ref.startswith("#"):
        return False
    node = schema
    pointer = urllib.parse.unquote(ref[1:])
    for raw in pointer.split("/")[1:] if pointer else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return True


def json_schema(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
    if not isinstance(arg, Mapping):
        raise CheckSpecError(f"json_schema takes a JSON Schema mapping, got {_describe(arg)}")
    try:
        schema = json.loads(json.dumps(arg))  # plain dicts, no line-tracking subclasses
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
        validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
        dangling = _dangling_refs(schema)
        unchecked = sorted(set(_formats(schema)) - set(validator_class.FORMAT_CHECKER.checkers))
    except jsonschema.SchemaError as exc:
        raise CheckSpecError(f"json_schema: invalid schema: {_short(exc.message, 160)}") from None
    except (TypeError, ValueError, LookupError, RecursionError) as exc:  # dates, odd $schema
        raise CheckSpecError(
            f"json_schema: not a usable JSON Schema ({type(exc).__name__}: {_short(str(exc))})"
        ) from None
    if dangling:
        raise CheckSpecError(
            f"json_schema: $ref {dangling[0]!r} does not resolve inside the schema (casegate "
            "fetches no schema from elsewhere: put it under $defs and refer to '#/$defs/…')"
        )
    if unchecked:
        known = ", ".join(sorted(validator_class.FORMAT_CHECKER.checkers))
        raise CheckSpecError(
            f"json_schema: format {unchecked[0]!r} cannot be checked, so it would be ignored "
            f"(checkable formats: {known}); remove it or use `pattern`"
        )

    def judge(subject: Subject) -> Verdict:
        parsed, failed = _parsed_or_fail(name, subject)
        if failed:
            return failed
        try:
            error = best_match(validator.iter_errors(parsed))
        except (RecursionError, TypeError, ValueError) as exc:  # pathological documents
            return Verdict(name, False, f"schema validation failed: {_short(str(exc))}")
        if error is None:
            return Verdict(name, True)
        return Verdict(name, False, f"{_dotted(error.absolute_path)}: {_short(error.message, 160)}")

    return judge


def fields(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
    if not isinstance(arg, Mapping) or not arg:
        raise CheckSpecError(f"fields takes a mapping of dotted path → value, got {_describe(arg)}")
    expected = [(str(path), parse_path(str(path)), value) for path, value in arg.items()]

    def judge(subject: Subject) -> Verdict:
        parsed, failed = _parsed_or_fail(name, subject)
        if failed:
            return failed
        problems = [
            _field_problem(label, value, actual)
            for label, path, value in expected
            if (actual := resolve(parsed, path)) is _MISSING or not json_equal(actual, value)
        ]
        if not problems:
            return Verdict(name, True)
        reason = "; ".join(text for text, _ in problems)
        if any(cut for _, cut in problems):
            reason += " (values cut short: `casegate show` prints the whole output)"
        return Verdict(name, False, reason)

    return judge


#: a field's value is shown whole up to this many characters (of its JSON)
FIELD_LIMIT = 200


def _field_problem(label: str, expected: Any, actual: Any) -> tuple[str, bool]:
    """What is wrong at one path, each value whole up to FIELD_LIMIT (two long strings
    by where they first differ), and whether anything was cut."""
    if actual is _MISSING:
        shown = _describe(expected, FIELD_LIMIT)
        return f"{label}: missing (expected {shown})", not _fits(expected, FIELD_LIMIT)
    whole = _fits(expected, FIELD_LIMIT) and _fits(actual, FIELD_LIMIT)
    if not whole and isinstance(expected, str) and isinstance(actual, str):
        return f"{label}: {_mismatch(expected, actual)}", True
    shown = f"expected {_describe(expected, FIELD_LIMIT)}, got {_describe(actual, FIELD_LIMIT)}"
    return f"{label}: {shown}", not whole


def _is_absent(value: Any) -> bool:
    return value is _MISSING or value is None or (isinstance(value, str) and not value.strip())


def _presence_check(*, want_present: bool) -> Factory:
    def factory(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
        paths = [(p, parse_path(p)) for p in _strings(name, arg, allow_single=False)]

        def judge(subject: Subject) -> Verdict:
            parsed, failed = _parsed_or_fail(name, subject)
            if failed:
                return failed
            wrong = [
                label for label, path in paths if _is_absent(resolve(parsed, path)) == want_present
            ]
            if not wrong:
                return Verdict(name, True)
            state = "missing or empty" if want_present else "present"
            return Verdict(name, False, f"{state}: {', '.join(wrong)}")

        return judge

    return factory


fields_present = _presence_check(want_present=True)
fields_absent = _presence_check(want_present=False)


def citations(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
    if not isinstance(arg, Mapping):
        raise CheckSpecError("citations takes {pattern: <regex>, source: <path>, min: <n>}")
    unknown = set(arg) - {"pattern", "source", "min"}
    if unknown:
        raise CheckSpecError(f"citations: unknown key {sorted(unknown)[0]!r}")
    pattern = _pattern("citations.pattern", arg.get("pattern"))
    if pattern.groups != 1:
        raise CheckSpecError(
            f"citations.pattern must have exactly one group, it has {pattern.groups}"
        )
    source = arg.get("source")
    if not isinstance(source, str) or not source:
        raise CheckSpecError("citations.source takes a dotted path into the case input")
    source_path = parse_path(source)
    minimum = _count("citations.min", arg.get("min", 1))

    def judge(subject: Subject) -> Verdict:
        supplied = resolve(subject.case_input, source_path)
        if not isinstance(supplied, list):
            return Verdict(name, False, f"case input {source!r} is not a list of document ids")
        allowed = {
            str(item.get("id")) if isinstance(item, Mapping) else str(item) for item in supplied
        }
        try:
            cited = [m.group(1) for m in pattern.finditer(subject.text, timeout=REGEX_TIMEOUT_S)]
        except TimeoutError:
            return Verdict(name, False, _too_slow(pattern))
        unknown = sorted({c for c in cited if c not in allowed})
        if unknown:
            return Verdict(
                name,
                False,
                f"cites {', '.join(unknown)}, not among the supplied documents "
                f"({', '.join(sorted(allowed)) or 'none'})",
            )
        distinct = len(set(cited))
        if distinct < minimum:
            return Verdict(name, False, f"{distinct} distinct citations, at least {minimum} needed")
        return Verdict(name, True)

    return judge


# --- tool-call checks ---------------------------------------------------------


def _called(subject: Subject) -> list[str]:
    return [call.name for call in subject.tool_calls]


def tool_called(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
    wanted = _strings(name, arg)

    def judge(subject: Subject) -> Verdict:
        called = _called(subject)
        missing = [tool for tool in wanted if tool not in called]
        if not missing:
            return Verdict(name, True)
        return Verdict(
            name, False, f"not called: {', '.join(missing)} (called: {', '.join(called) or 'none'})"
        )

    return judge


def tool_not_called(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
    forbidden = _strings(name, arg)

    def judge(subject: Subject) -> Verdict:
        found = [tool for tool in forbidden if tool in _called(subject)]
        if not found:
            return Verdict(name, True)
        return Verdict(name, False, f"called forbidden tool: {', '.join(found)}")

    return judge


def tool_sequence(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
    sequence = _strings(name, arg, allow_single=False)

    def judge(subject: Subject) -> Verdict:
        called = iter(_called(subject))
        # A subsequence test: other calls may come between the named ones.
        if all(any(tool == c for c in called) for tool in sequence):
            return Verdict(name, True)
        return Verdict(
            name,
            False,
            f"expected calls in order {' → '.join(sequence)}, "
            f"got {' → '.join(_called(subject)) or 'no calls'}",
        )

    return judge


def tool_args(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
    if not isinstance(arg, Mapping) or not all(isinstance(v, Mapping) for v in arg.values()):
        raise CheckSpecError("tool_args takes {tool name: {dotted path: expected value}}")
    expected = {
        tool: [(str(p), parse_path(str(p)), v) for p, v in paths.items()]
        for tool, paths in arg.items()
    }

    def judge(subject: Subject) -> Verdict:
        problems = []
        for tool, checks in expected.items():
            calls = [call for call in subject.tool_calls if call.name == tool]
            if not calls:
                problems.append(f"{tool}: not called")
                continue
            # Any one call of the tool satisfying every path is enough.
            best: list[str] | None = None
            for call in calls:
                misses = []
                if call.invalid_arguments is not None:
                    raw = _short(call.invalid_arguments, 40)
                    best = best or [f"{tool}: arguments are not a JSON object ({raw})"]
                    continue
                for label, path, value in checks:
                    actual = resolve(call.arguments, path)
                    if actual is _MISSING:
                        misses.append(f"{tool}.{label}: missing")
                    elif not json_equal(actual, value):
                        misses.append(
                            f"{tool}.{label}: expected {_describe(value)}, got {_describe(actual)}"
                        )
                if best is None or len(misses) < len(best):
                    best = misses
            problems.extend(best or [])
        if not problems:
            return Verdict(name, True)
        return Verdict(name, False, "; ".join(problems))

    return judge


# --- the pinned LLM judge ------------------------------------------------------


def llm_judge(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
    if (
        not isinstance(arg, Mapping)
        or set(arg) != {"rubric"}
        or not isinstance(arg["rubric"], str)
        or not arg["rubric"].strip()
    ):
        raise CheckSpecError("judge takes {rubric: 'what must be true of the output'}")
    rubric = arg["rubric"].strip()

    def judge(subject: Subject) -> Verdict:
        if subject.grader is None:
            return Verdict(name, False, "no judge is pinned: add `judge:` to the config")
        # An outage or an unparseable verdict raises SystemCallError: the sample
        # becomes an error, never a pass and never a silent fail.
        ok, reason = subject.grader.verdict(subject.case, rubric, subject.text)
        return Verdict(name, ok, reason)

    return judge


def uses_judge(expect: Mapping[str, Any]) -> bool:
    return "judge" in expect


# --- user-written checks ------------------------------------------------------


def custom_specs(expect: Mapping[str, Any]) -> list[str]:
    """The `module:function` specs a case's `check:` names (its user code)."""
    if "check" not in expect:
        return []
    return _strings("check", expect["check"])


def custom(name: str, arg: Any, normalize: Sequence[str]) -> Judge:
    # Only the spec is read here: loading cases never imports user code. The run
    # imports every custom check up front (gate.usercode.prepare_check).
    specs = _strings(name, arg)
    for spec in specs:
        try:
            usercode.parse_spec(spec, "check")
        except usercode.UserCodeError as exc:
            raise CheckSpecError(str(exc)) from None

    def judge(subject: Subject) -> Verdict:
        for spec in specs:
            try:
                function = usercode.check_function(spec)
            except KeyError:
                return Verdict(name, False, f"{spec} was not imported before the run")
            try:
                outcome = function(subject.text, subject.case)
            except Exception as exc:
                return Verdict(
                    name, False, f"{spec} raised {type(exc).__name__}: {_short(str(exc))}"
                )
            if isinstance(outcome, tuple) and len(outcome) == 2:
                ok, reason = bool(outcome[0]), str(outcome[1])
            elif isinstance(outcome, bool):
                ok, reason = outcome, ""
            else:
                return Verdict(
                    name,
                    False,
                    f"{spec} returned {_describe(outcome)}, not a bool or (bool, reason)",
                )
            if not ok:
                return Verdict(name, False, reason or f"{spec} returned False")
        return Verdict(name, True)

    return judge


REGISTRY: dict[str, Factory] = {
    "equals": equals,
    "contains": contains,
    "contains_any": contains_any,
    "not_contains": not_contains,
    "regex": regex,
    "not_regex": not_regex,
    "max_words": max_words,
    "min_words": min_words,
    "max_chars": max_chars,
    "min_chars": min_chars,
    "starts_with": starts_with,
    "ends_with": ends_with,
    "finish_reason": finish_reason,
    "max_latency_ms": max_latency_ms,
    "max_cost_usd": max_cost_usd,
    "max_output_tokens": max_output_tokens,
    "json": json_check,
    "json_schema": json_schema,
    "fields": fields,
    "fields_present": fields_present,
    "fields_absent": fields_absent,
    "citations": citations,
    "tool_called": tool_called,
    "tool_not_called": tool_not_called,
    "tool_sequence": tool_sequence,
    "tool_args": tool_args,
    "check": custom,
    "judge": llm_judge,
}

MODIFIERS = {"normalize"}
KNOWN_KEYS = set(REGISTRY) | MODIFIERS


def build(expect: Mapping[str, Any]) -> list[tuple[str, Judge]]:
    """Turn a case's `expect` mapping into judges; raises CheckSpecError(key, ...)."""
    normalize = parse_normalize(expect["normalize"]) if "normalize" in expect else []
    judges = []
    for key, arg in expect.items():
        if key in MODIFIERS:
            continue
        factory = REGISTRY.get(key)
        if factory is None:
            raise CheckSpecError(f"unknown check {key!r}")
        judges.append((key, factory(key, arg, normalize)))
    if not judges:
        raise CheckSpecError("expect names no check (normalize alone judges nothing)")
    return judges


def evaluate(judges: Sequence[tuple[str, Judge]], subject: Subject) -> list[Verdict]:
    """Run every judge; a judge that raises anyway becomes a failed verdict."""
    verdicts = []
    for name, judge in judges:
        try:
            verdicts.append(judge(subject))
        except SystemCallError:
            raise  # the judge could not judge: the caller makes the sample an error
        except Exception as exc:  # a bug in a check must not end the run
            verdicts.append(Verdict(name, False, f"check crashed: {type(exc).__name__}: {exc}"))
    return verdicts
