"""Suite defaults: what every case gets unless it says otherwise (`defaults:` in the config).

A case's own key wins; `null` for an `expect` key removes the default check; tags
and input files are the union of the suite's and the case's. Defaults are merged into
each case when it loads, so everything downstream — its checks, `expect_hash`, the
ruler — sees only the merged case, and changing a default changes every case it touches.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gate import checks
from gate.limits import MAX_INPUT_FILES
from gate.yamlfile import LineDict

#: More samples of one case than this is a typo, not a plan (each is a call, or a recording).
MAX_SAMPLES = 1000


class SuiteDefaults(BaseModel):
    """`defaults:` — merged under every case's own keys when the cases load."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: checks every case gets; a case's own entry wins, and its `null` removes one
    expect: dict[str, Any] = Field(default_factory=dict)
    #: tags every case gets, beside its own
    tags: list[str] = Field(default_factory=list)
    #: samples a case draws unless it says otherwise
    samples: int | None = Field(default=None, ge=1, le=MAX_SAMPLES, strict=True)
    #: the share of samples a case must pass unless it says otherwise
    min_pass_rate: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    #: files every case's system reads (gate.suite.inputfiles), after the case's own
    input_files: list[str] = Field(default_factory=list, max_length=MAX_INPUT_FILES)


def expect_problems(expect: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, problem) for each entry of `defaults.expect` a case could not use as it is."""
    problems: list[tuple[str, str]] = []
    for key, arg in expect.items():
        if arg is None:
            problems.append(
                (key, f"{key} is null: a default removes nothing (only a case's null does)")
            )
        elif key not in checks.KNOWN_KEYS:
            hint = difflib.get_close_matches(key, checks.KNOWN_KEYS, n=1)
            problems.append(
                (key, f"unknown check {key!r}" + (f" (did you mean {hint[0]!r}?)" if hint else ""))
            )
    if problems:
        return problems
    modifiers = {key: arg for key, arg in expect.items() if key in checks.MODIFIERS}
    try:
        checks.modifiers_of(modifiers)
    except checks.CheckSpecError as exc:
        key = next((k for k in modifiers if str(exc).startswith(k)), next(iter(modifiers)))
        return [(key, str(exc))]
    for key, arg in expect.items():
        if key in checks.MODIFIERS:
            continue
        try:
            # Built as a case would build it, with the defaults' modifiers applied.
            checks.build({**modifiers, key: arg})
        except checks.CheckSpecError as exc:
            problems.append((key, str(exc)))
    return problems


@dataclass(frozen=True, slots=True)
class Merged:
    """A case record with the suite's defaults merged under it."""

    record: dict[str, Any]
    #: `expect` keys the defaults supplied (not the case's own)
    from_defaults: frozenset[str] = frozenset()
    #: `expect` keys the case set to null that no default sets, in a suite with defaults:
    #: a typo, most likely
    stray_nulls: list[str] = field(default_factory=list)


NONE = SuiteDefaults()


def merge(record: Mapping[str, Any], defaults: SuiteDefaults) -> Merged:
    """Merge `defaults` under one raw case record; a malformed record is left for validation."""
    if defaults == NONE:  # most suites: nothing to merge, for every case of a large one
        return Merged(dict(record))
    merged = dict(record)
    own = record.get("expect", {})
    from_defaults: frozenset[str] = frozenset()
    stray: list[str] = []
    if isinstance(own, dict):
        expect = _like(own)
        for key, value in own.items():
            if value is not None:
                expect[key] = value
            elif not defaults.expect:
                # No defaults: null means nothing special, and the check's own
                # validation says what it takes.
                expect[key] = value
            elif key not in defaults.expect:
                stray.append(key)
        # Copied: every case gets its own argument, never one shared with its neighbours.
        added = {k: copy.deepcopy(v) for k, v in defaults.expect.items() if k not in own}
        expect.update(added)
        from_defaults = frozenset(added)
        if "expect" in record or expect:
            merged["expect"] = expect
    tags = record.get("tags", [])
    if defaults.tags and isinstance(tags, list):
        merged["tags"] = list(dict.fromkeys([*tags, *defaults.tags]))
    files = record.get("input_files", [])
    if defaults.input_files and isinstance(files, list):
        # Like tags, a union: a file every case reads is still read by a case naming its own.
        merged["input_files"] = list(dict.fromkeys([*files, *defaults.input_files]))
    for key in ("samples", "min_pass_rate"):
        default = getattr(defaults, key)
        if default is not None and record.get(key) is None:
            merged[key] = default
    return Merged(merged, from_defaults, stray)


def _like(original: dict[str, Any]) -> dict[str, Any]:
    """An empty mapping that keeps `original`'s line numbers, for messages naming a key."""
    if not isinstance(original, LineDict):
        return {}
    copied = LineDict()
    copied.line = original.line
    copied.key_lines = dict(getattr(original, "key_lines", {}))
    return copied


def stray_null_message(key: str, defaults: SuiteDefaults) -> str:
    """Why a case's `key: null` is refused, with the default it probably meant."""
    hint = difflib.get_close_matches(key, defaults.expect, n=1)
    return (
        f"expect.{key} is null, which removes a default check, but `defaults.expect` sets no "
        f"{key!r}" + (f" (did you mean {hint[0]!r}?)" if hint else "") + ": delete the line"
    )


def expect_difference(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[str, bool]:
    """What changed between two `expect` mappings, in words, and whether it only added checks.

    Adding a check can only make a case fail more often; removing one, changing
    an argument or any modifier can hide a failure.
    """
    removed = [key for key in before if key not in after]
    added = [key for key in after if key not in before]
    changed = [key for key in before if key in after and before[key] != after[key]]
    parts = [f"{key} removed" for key in removed]
    parts += [_change(key, before[key], after[key]) for key in changed]
    parts += [f"{key} added" for key in added]
    shown = ", ".join(parts[:4]) + (f" and {len(parts) - 4} more" if len(parts) > 4 else "")
    only_added = not removed and not changed and not (set(added) & checks.MODIFIERS)
    return shown, only_added


def _change(key: str, before: Any, after: Any) -> str:
    old, new = _scalar(before), _scalar(after)
    return f"{key} {old} → {new}" if old is not None and new is not None else f"{key} changed"


def _scalar(value: Any) -> str | None:
    """A short argument as written (numbers, short strings); None for anything longer."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return f"{value:g}"
    if isinstance(value, str) and len(value) <= 30:
        return repr(value)
    return None
