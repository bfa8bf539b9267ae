"""The checks one imported case accumulates from its assertions, and the `expect:` block they
become: substring requirements that share a key are joined into one check, or into patterns."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: llm-rubric's score is in [0, 1]: casegate's graded judge grades 0 to 10, normalised
RUBRIC_SCALE = "0-10"


@dataclass
class _Text:
    """A substring requirement: contains / not_contains / any / not_all / equals."""

    kind: str
    needles: list[str]
    insensitive: bool = False


def _escaped(needles: Sequence[str], insensitive: bool) -> str:
    body = "|".join(re.escape(needle) for needle in needles)
    return f"(?i:{body})" if insensitive else (body if len(needles) == 1 else f"(?:{body})")


@dataclass
class Expect:
    """The checks one case accumulates; `build` resolves what shares one `expect` key."""

    texts: list[_Text] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    forbidden: list[str] = field(default_factory=list)
    schemas: list[dict[str, Any]] = field(default_factory=list)
    json: bool = False
    min_words: int | None = None
    max_words: int | None = None
    min_chars: int | None = None
    max_chars: int | None = None
    rubrics: list[str] = field(default_factory=list)
    #: `transform: output.trim()`: every text check reads the output stripped
    strip: bool = False
    #: an `llm-rubric` with a threshold: the graded judge (one per case)
    rubric_threshold: float | None = None
    custom: list[str] = field(default_factory=list)
    starts: list[str] = field(default_factory=list)
    #: `contains-json` (JSON inside prose) rather than `is-json` (the whole output)
    extract_json: bool = False
    #: the figures' budgets (`latency`, `cost`): the tightest of several wins
    budgets: dict[str, float] = field(default_factory=dict)
    finish_reasons: list[str] = field(default_factory=list)
    tool_args_valid: bool = False
    #: `similar`, `levenshtein`, `moderation`: one of each per case
    measured: dict[str, dict[str, Any]] = field(default_factory=dict)

    def build(self) -> tuple[dict[str, Any], list[str]]:
        expect: dict[str, Any] = {}
        notes: list[str] = []
        lowered = bool(self.texts) and all(t.insensitive for t in self.texts)
        patterns, forbidden = list(self.patterns), list(self.forbidden)
        if lowered or self.strip:
            expect["normalize"] = ["strip"] * self.strip + ["lower"] * lowered
        mixed = [t for t in self.texts if t.insensitive and not lowered]
        if mixed:
            notes.append(
                "case-insensitive assertions became `(?i:…)` patterns: the case also has "
                "case-sensitive ones, and `normalize` would apply to every text check"
            )
        for text in self.texts:
            as_pattern = text.insensitive and not lowered
            if text.kind == "contains" and not as_pattern:
                expect.setdefault("contains", []).extend(text.needles)
            elif text.kind == "contains":
                patterns.extend(_escaped([n], True) for n in text.needles)
            elif text.kind == "not_contains" and not as_pattern:
                expect.setdefault("not_contains", []).extend(text.needles)
            elif text.kind == "not_contains":
                forbidden.extend(_escaped([n], True) for n in text.needles)
            elif text.kind == "any" and "contains_any" not in expect and not as_pattern:
                expect["contains_any"] = list(text.needles)
            elif text.kind == "any":
                patterns.append(_escaped(text.needles, text.insensitive))
            elif text.kind == "equals" and "equals" not in expect:
                expect["equals"] = text.needles[0]
            elif text.kind == "equals":
                patterns.append(rf"\A{_escaped(text.needles, False)}\Z")
            elif text.kind == "not_equals":
                forbidden.append(rf"\A{_escaped(text.needles, False)}\Z")
            else:  # not_all: fails only when every needle appears
                forbidden.append(_all_of([_escaped([n], text.insensitive) for n in text.needles]))
        for key in ("contains", "not_contains"):
            if key in expect and len(expect[key]) == 1:
                expect[key] = expect[key][0]
        starts = list(self.starts)
        if starts and not lowered:  # `normalize: [lower]` would make it case-insensitive
            expect["starts_with"] = starts.pop(0)
        patterns.extend("^" + re.escape(start) for start in starts)
        if patterns:
            expect["regex"] = patterns[0] if len(patterns) == 1 else _all_of(patterns)
        if forbidden:
            expect["not_regex"] = forbidden[0] if len(forbidden) == 1 else _any_of(forbidden)
        if self.json and not self.schemas:
            expect["json"] = True
        if self.schemas:
            expect["json_schema"] = (
                self.schemas[0] if len(self.schemas) == 1 else {"allOf": self.schemas}
            )
        if self.min_words is not None:
            expect["min_words"] = self.min_words
        if self.max_words is not None:
            expect["max_words"] = self.max_words
        if self.min_chars is not None:
            expect["min_chars"] = self.min_chars
        if self.max_chars is not None:
            expect["max_chars"] = self.max_chars
        if self.rubrics:
            rubric = self.rubrics[0]
            if len(self.rubrics) > 1:
                rubric = "All of these hold:\n" + "\n".join(
                    f"{n}. {r}" for n, r in enumerate(self.rubrics, start=1)
                )
                notes.append(f"{len(self.rubrics)} llm-rubric assertions became one judge rubric")
            expect["judge"] = {"rubric": rubric}
            if self.rubric_threshold is not None:
                expect["judge"].update(scale=RUBRIC_SCALE, threshold=self.rubric_threshold)
        if self.custom:
            expect["check"] = self.custom[0] if len(self.custom) == 1 else list(self.custom)
        if self.extract_json:
            expect["extract_json"] = True
        expect.update(self.budgets)
        if self.finish_reasons:
            reasons = self.finish_reasons
            expect["finish_reason"] = reasons[0] if len(reasons) == 1 else reasons
        if self.tool_args_valid:
            expect["tool_args_valid"] = True
        expect.update(self.measured)
        return expect, notes


def _all_of(patterns: Sequence[str]) -> str:
    """One pattern that matches when every pattern matches somewhere (lookaheads from 0)."""
    return "^" + "".join(f"(?=[\\s\\S]*?(?:{p}))" for p in patterns)


def _any_of(patterns: Sequence[str]) -> str:
    return "|".join(f"(?:{p})" for p in patterns)
