"""Checks on the output's text: equality, substrings, patterns, lengths, affixes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gate.checks.base as base
from gate.checks.base import (
    CheckSpecError,
    Factory,
    Judge,
    Modifiers,
    Subject,
    Verdict,
    compile_pattern,
    describe,
    string_list,
    too_slow,
    whole_number,
)

# --- normalisation ----------------------------------------------------------

NORMALIZERS: dict[str, Callable[[str], str]] = {
    "strip": str.strip,
    "lower": str.lower,
    "collapse_whitespace": lambda text: " ".join(text.split()),
}


def parse_normalize(arg: Any) -> list[str]:
    steps = string_list("normalize", arg)
    unknown = [step for step in steps if step not in NORMALIZERS]
    if unknown:
        raise CheckSpecError(
            f"normalize: unknown step {unknown[0]!r} (known: {', '.join(NORMALIZERS)})"
        )
    return steps


def normalizer(steps: Sequence[str]) -> Callable[[str], str]:
    if not steps:  # most cases normalise nothing: one shared function, not a closure each
        return _unchanged
    functions = [NORMALIZERS[step] for step in steps]

    def apply(text: str) -> str:
        for function in functions:
            text = function(text)
        return text

    return apply


def _unchanged(text: str) -> str:
    return text


# --- text checks --------------------------------------------------------------


def equals(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    if not isinstance(arg, str):
        raise CheckSpecError(f"equals takes a string, got {describe(arg)}")
    norm = normalizer(modifiers.normalize)
    expected = norm(arg)

    def judge(subject: Subject) -> Verdict:
        actual = norm(subject.text)
        if actual == expected:
            return Verdict(name, True)
        return Verdict(
            name, False, mismatch(expected, actual, normalized=bool(modifiers.normalize))
        )

    return judge


#: characters shown on each side of the first difference between two long strings
DIFFERENCE_CONTEXT = 24
ESCAPES = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})


def mismatch(expected: str, actual: str, *, normalized: bool = False) -> str:
    """Both strings when they are short; else where they first differ, with context."""
    if fits(expected) and fits(actual):
        return f"expected {describe(expected)}, got {describe(actual)}"
    at = next(
        (i for i, (a, b) in enumerate(zip(expected, actual, strict=False)) if a != b),
        min(len(expected), len(actual)),
    )
    after = " (after normalize)" if normalized else ""
    return (
        f"differs at character {at + 1}{after}: expected {_around(expected, at)}, "
        f"got {_around(actual, at)}"
    )


def fits(value: Any, limit: int = 60) -> bool:
    """Whether `_describe` shows `value` whole."""
    return len(describe(value, limit + 1)) <= limit


def _around(text: str, at: int) -> str:
    """`text` near index `at`, line breaks shown as \\n, a cut marked "…", and
    "(end of text)" when the text ends where the other goes on."""
    if not text:
        return "(empty)"
    start, end = max(0, at - DIFFERENCE_CONTEXT), at + DIFFERENCE_CONTEXT
    shown = text[start:end].translate(ESCAPES)
    ending = "…" if end < len(text) else " (end of text)" if at >= len(text) else ""
    return ("…" if start else "") + shown + ending


def contains(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    norm = normalizer(modifiers.normalize)
    needles = [(raw, norm(raw)) for raw in string_list(name, arg)]

    def judge(subject: Subject) -> Verdict:
        text = norm(subject.text)
        missing = [raw for raw, needle in needles if needle not in text]
        if not missing:
            return Verdict(name, True)
        return Verdict(name, False, "missing " + ", ".join(describe(m) for m in missing))

    return judge


def contains_any(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    norm = normalizer(modifiers.normalize)
    options = string_list(name, arg, allow_single=False)
    needles = [norm(option) for option in options]

    def judge(subject: Subject) -> Verdict:
        text = norm(subject.text)
        if any(needle in text for needle in needles):
            return Verdict(name, True)
        return Verdict(name, False, "none of " + ", ".join(describe(o) for o in options))

    return judge


def not_contains(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    norm = normalizer(modifiers.normalize)
    needles = [(raw, norm(raw)) for raw in string_list(name, arg)]

    def judge(subject: Subject) -> Verdict:
        text = norm(subject.text)
        found = [raw for raw, needle in needles if needle in text]
        if not found:
            return Verdict(name, True)
        return Verdict(name, False, "contains forbidden " + ", ".join(describe(f) for f in found))

    return judge


def regex(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    pattern = compile_pattern(name, arg)

    def judge(subject: Subject) -> Verdict:
        try:
            found = pattern.search(subject.text, timeout=base.REGEX_TIMEOUT_S)
        except TimeoutError:
            return Verdict(name, False, too_slow(pattern))
        if found:
            return Verdict(name, True)
        return Verdict(name, False, f"no match for /{pattern.pattern}/")

    return judge


def not_regex(name: str, arg: Any, modifiers: Modifiers) -> Judge:
    pattern = compile_pattern(name, arg)

    def judge(subject: Subject) -> Verdict:
        try:
            match = pattern.search(subject.text, timeout=base.REGEX_TIMEOUT_S)
        except TimeoutError:
            return Verdict(name, False, too_slow(pattern))
        if match is None:
            return Verdict(name, True)
        return Verdict(
            name, False, f"matches forbidden /{pattern.pattern}/: {describe(match.group(0))}"
        )

    return judge


def _length_check(unit: str, measure: Callable[[str], int], *, upper: bool) -> Factory:
    def factory(name: str, arg: Any, modifiers: Modifiers) -> Judge:
        limit = whole_number(name, arg)

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

    def factory(name: str, arg: Any, modifiers: Modifiers) -> Judge:
        if not isinstance(arg, str) or not arg:
            raise CheckSpecError(f"{name} takes a non-empty string, got {describe(arg)}")
        norm = normalizer(modifiers.normalize)
        expected = norm(arg)
        if not expected:
            raise CheckSpecError(f"{name}: {describe(arg)} is empty after normalize")
        # Show as much of the output's own start (end) as the expected text, plus a little.
        width = min(len(expected) + 10, 40)

        def judge(subject: Subject) -> Verdict:
            text = norm(subject.text)
            if text.startswith(expected) if start else text.endswith(expected):
                return Verdict(name, True)
            if not text:
                return Verdict(name, False, f"expected to {verb} with {describe(arg)}, got (empty)")
            if start:
                shown = text[:width].translate(ESCAPES) + ("…" if len(text) > width else "")
            else:
                shown = ("…" if len(text) > width else "") + text[-width:].translate(ESCAPES)
            after = " (after normalize)" if modifiers.normalize else ""
            return Verdict(
                name, False, f"expected to {verb} with {describe(arg)}, {verb}s{after}: {shown}"
            )

        return judge

    return factory


starts_with = _affix_check(start=True)
ends_with = _affix_check(start=False)
