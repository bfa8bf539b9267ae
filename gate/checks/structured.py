"""Checks on JSON output: parse, schema, fields; and citations into the case input."""

from __future__ import annotations

import json
import math
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import gate.checks.base as base
from gate.checks.base import (
    UNMEASURED,
    CheckSpecError,
    Factory,
    Judge,
    Modifiers,
    Subject,
    Verdict,
    compile_pattern,
    describe,
    short,
    string_list,
    too_slow,
    whole_number,
)
from gate.checks.jsontext import ParsedJson
from gate.checks.text import fits, mismatch

if TYPE_CHECKING:
    import jsonschema

# --- JSON checks --------------------------------------------------------------

MISSING = object()


def parse_path(path: str) -> list[str]:
    return path.split(".")


def resolve(document: Any, path: Sequence[str]) -> Any:
    """Follow a dotted path through mappings and lists; MISSING when absent."""
    current = document
    for part in path:
        if isinstance(current, Mapping):
            if part not in current:
                return MISSING
            current = current[part]
        elif isinstance(current, list) and part.lstrip("-").isdigit():
            index = int(part)
            if not -len(current) <= index < len(current):
                return MISSING
            current = current[index]
        else:
            return MISSING
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


def _read_json(
    name: str, subject: Subject, modifiers: Modifiers, *, measures: bool = False
) -> ParsedJson | Verdict:
    """The JSON a check judges, or the failed verdict saying why there is none (scored
    the lowest by a check that `measures`)."""
    parsed = subject.parsed_json(extract=modifiers.extract_json)
    if parsed.ok:
        return parsed
    return Verdict(name, False, parsed.problem, UNMEASURED if measures else None)


def json_check(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    if arg is not True:
        raise CheckSpecError(f"json takes `true`, got {describe(arg)}")

    def judge(subject: Subject) -> Verdict:
        read = _read_json(name, subject, modifiers)
        if isinstance(read, Verdict):
            return read
        return Verdict(name, True, f"read the JSON from {read.source}" if read.source else "")

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


def compile_schema(name: str, arg: Any) -> jsonschema.protocols.Validator:
    """A validator for a schema written in a case; CheckSpecError when it is not usable."""
    # Imported here, not at the top: jsonschema's format checkers take about a second to
    # import, which a suite without a schema check should not pay on every start.
    import jsonschema

    if not isinstance(arg, Mapping):
        raise CheckSpecError(f"{name} takes a JSON Schema mapping, got {describe(arg)}")
    try:
        schema = json.loads(json.dumps(arg))  # plain dicts, no line-tracking subclasses
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
        validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
        dangling = _dangling_refs(schema)
        unchecked = sorted(set(_formats(schema)) - set(validator_class.FORMAT_CHECKER.checkers))
    except jsonschema.SchemaError as exc:
        raise CheckSpecError(f"{name}: invalid schema: {short(exc.message, 160)}") from None
    except (TypeError, ValueError, LookupError, RecursionError) as exc:  # dates, odd $schema
        raise CheckSpecError(
            f"{name}: not a usable JSON Schema ({type(exc).__name__}: {short(str(exc))})"
        ) from None
    if dangling:
        raise CheckSpecError(
            f"{name}: $ref {dangling[0]!r} does not resolve inside the schema (casegate "
            "fetches no schema from elsewhere: put it under $defs and refer to '#/$defs/…')"
        )
    if unchecked:
        known = ", ".join(sorted(validator_class.FORMAT_CHECKER.checkers))
        raise CheckSpecError(
            f"{name}: format {unchecked[0]!r} cannot be checked, so it would be ignored "
            f"(checkable formats: {known}); remove it or use `pattern`"
        )
    return validator


def schema_problem(validator: jsonschema.protocols.Validator, value: Any) -> str | None:
    """The most relevant way `value` breaks the schema (path: message), or None."""
    from jsonschema.exceptions import best_match

    try:
        error = best_match(validator.iter_errors(value))
    except (RecursionError, TypeError, ValueError) as exc:  # pathological documents
        return f"schema validation failed: {short(str(exc))}"
    if error is None:
        return None
    return f"{_dotted(error.absolute_path)}: {short(error.message, 160)}"


def json_schema(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    validator = compile_schema(name, arg)

    def judge(subject: Subject) -> Verdict:
        read = _read_json(name, subject, modifiers, measures=True)
        if isinstance(read, Verdict):
            return read
        problem = schema_problem(validator, read.value)
        if problem is None:
            return Verdict(name, True, score=1.0)
        return Verdict(name, False, read.located(problem), schema_fraction(validator, read.value))

    return judge


def schema_fraction(validator: jsonschema.protocols.Validator, value: Any) -> float:
    """How much of a document that breaks its schema holds: its top-level `properties`
    that do (present and valid, or absent and optional), and the schema as a whole as one
    more part, which it breaks. A schema without properties has that one part: 0."""
    schema = validator.schema
    if not isinstance(schema, Mapping):
        return 0.0
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not isinstance(value, Mapping):
        return 0.0
    listed = schema.get("required")
    required = listed if isinstance(listed, list) else []
    # `descend` (every jsonschema validator has it) resolves a property's $refs as the
    # whole schema would.
    descend = validator.descend  # type: ignore[attr-defined]
    holding = 0
    for key, subschema in properties.items():
        try:
            if key in value:
                holding += not any(descend(value[key], subschema, path=key))
            else:
                holding += key not in required
        except (RecursionError, TypeError, ValueError):  # pathological documents
            continue
    return holding / (len(properties) + 1)


def fields(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    if not isinstance(arg, Mapping) or not arg:
        raise CheckSpecError(f"fields takes a mapping of dotted path → value, got {describe(arg)}")
    expected = [(str(path), parse_path(str(path)), value) for path, value in arg.items()]

    def judge(subject: Subject) -> Verdict:
        read = _read_json(name, subject, modifiers, measures=True)
        if isinstance(read, Verdict):
            return read
        parsed = read.value
        problems = [
            _field_problem(label, value, actual)
            for label, path, value in expected
            if (actual := resolve(parsed, path)) is MISSING or not json_equal(actual, value)
        ]
        # The score: the fraction of the expected fields the output has right.
        score = 1 - len(problems) / len(expected)
        if not problems:
            return Verdict(name, True, score=score)
        reason = read.located("; ".join(text for text, _ in problems))
        if any(cut for _, cut in problems):
            reason += " (values cut short: `casegate show` prints the whole output)"
        return Verdict(name, False, reason, score)

    return judge


#: a field's value is shown whole up to this many characters (of its JSON)
FIELD_LIMIT = 200


def _field_problem(label: str, expected: Any, actual: Any) -> tuple[str, bool]:
    """What is wrong at one path, each value whole up to FIELD_LIMIT (two long strings
    by where they first differ), and whether anything was cut."""
    if actual is MISSING:
        shown = describe(expected, FIELD_LIMIT)
        return f"{label}: missing (expected {shown})", not fits(expected, FIELD_LIMIT)
    whole = fits(expected, FIELD_LIMIT) and fits(actual, FIELD_LIMIT)
    if not whole and isinstance(expected, str) and isinstance(actual, str):
        return f"{label}: {mismatch(expected, actual)}", True
    shown = f"expected {describe(expected, FIELD_LIMIT)}, got {describe(actual, FIELD_LIMIT)}"
    return f"{label}: {shown}", not whole


def _is_absent(value: Any) -> bool:
    return value is MISSING or value is None or (isinstance(value, str) and not value.strip())


def _presence_check(*, want_present: bool) -> Factory:
    def factory(name: str, arg: Any, modifiers: Modifiers) -> Judge:
        paths = [(p, parse_path(p)) for p in string_list(name, arg, allow_single=False)]

        def judge(subject: Subject) -> Verdict:
            read = _read_json(name, subject, modifiers)
            if isinstance(read, Verdict):
                return read
            parsed = read.value
            wrong = [
                label for label, path in paths if _is_absent(resolve(parsed, path)) == want_present
            ]
            if not wrong:
                return Verdict(name, True)
            state = "missing or empty" if want_present else "present"
            return Verdict(name, False, read.located(f"{state}: {', '.join(wrong)}"))

        return judge

    return factory


fields_present = _presence_check(want_present=True)
fields_absent = _presence_check(want_present=False)


def citations(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    if not isinstance(arg, Mapping):
        raise CheckSpecError("citations takes {pattern: <regex>, source: <path>, min: <n>}")
    unknown = set(arg) - {"pattern", "source", "min"}
    if unknown:
        raise CheckSpecError(f"citations: unknown key {sorted(unknown)[0]!r}")
    pattern = compile_pattern("citations.pattern", arg.get("pattern"))
    if pattern.groups != 1:
        raise CheckSpecError(
            f"citations.pattern must have exactly one group, it has {pattern.groups}"
        )
    source = arg.get("source")
    if not isinstance(source, str) or not source:
        raise CheckSpecError("citations.source takes a dotted path into the case input")
    source_path = parse_path(source)
    minimum = whole_number("citations.min", arg.get("min", 1))

    def judge(subject: Subject) -> Verdict:
        supplied = resolve(subject.case_input, source_path)
        if not isinstance(supplied, list):
            return Verdict(name, False, f"case input {source!r} is not a list of document ids")
        allowed = {
            str(item.get("id")) if isinstance(item, Mapping) else str(item) for item in supplied
        }
        try:
            found = pattern.finditer(subject.text, timeout=base.REGEX_TIMEOUT_S)
            cited = [match.group(1) for match in found]
        except TimeoutError:
            return Verdict(name, False, too_slow(pattern))
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
