"""Run a slice of the suite: `--case PATTERN` and `--tag TAG` (`--tag '!slow'` excludes),
and `--shard I/N` (gate.suite.shard) on top of them.

A selected run is a partial judgement: its results record the selection, and
`gate`/`check` take it as a candidate only against a baseline with the same one.
A shard is never gated at all: its parts are merged first (gate.produce.merge).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gate.errors import ConfigError
from gate.suite.cases import Case
from gate.suite.shard import Shard


@dataclass(frozen=True, slots=True)
class Selection:
    """Glob patterns on case ids and tags, and a shard; empty means the whole suite."""

    cases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    shard: Shard | None = None

    @property
    def everything(self) -> bool:
        return not self.filtered and self.shard is None

    @property
    def filtered(self) -> bool:
        """Patterns on ids or tags (a shard aside)."""
        return bool(self.cases or self.tags)

    @classmethod
    def stored(cls, selection: dict[str, Any] | None) -> Selection:
        """The selection a results file records (`to_dict`); None is the whole suite."""
        if not selection:
            return cls()
        return cls(tuple(selection.get("cases", ())), tuple(selection.get("tags", ())))

    def includes(self, case: Case) -> bool:
        return self.chooses(case.id, case.tags, critical=case.is_critical)

    def chooses(self, case_id: str, case_tags: Sequence[str], *, critical: bool) -> bool:
        """`includes` for what a results file keeps of a case: its id, tags and criticality."""
        if self.shard is not None and not self.shard.includes(case_id):
            return False
        if self.cases and not any(fnmatch.fnmatchcase(case_id, p) for p in self.cases):
            return False
        wanted = [tag for tag in self.tags if not tag.startswith("!")]
        unwanted = [tag[1:] for tag in self.tags if tag.startswith("!")]
        tags = [*case_tags, *(["critical"] if critical else [])]
        if wanted and not any(fnmatch.fnmatchcase(t, p) for p in wanted for t in tags):
            return False
        return not any(fnmatch.fnmatchcase(t, p) for p in unwanted for t in tags)

    def to_dict(self) -> dict[str, Any] | None:
        """As stored in the results (the shard is stored apart): None for the whole suite."""
        if not self.filtered:
            return None
        return {"cases": sorted(self.cases), "tags": sorted(self.tags)}

    def describe(self) -> str:
        parts = [f"--case {p}" for p in self.cases] + [f"--tag {t}" for t in self.tags]
        if self.shard is not None:
            parts.append(f"--shard {self.shard}")
        return " ".join(parts) or "the whole suite"


def select(cases: Sequence[Case], selection: Selection) -> list[Case]:
    """The selected cases; a ConfigError when patterns match none.

    A shard may be empty (a small suite over many jobs): its part is merged all the same.
    """
    if selection.everything:
        return list(cases)
    unsharded = Selection(selection.cases, selection.tags)
    chosen = [case for case in cases if unsharded.includes(case)]
    if not chosen:
        raise ConfigError(
            f"{unsharded.describe()} selects none of the {len(cases)} case(s): "
            "`casegate list` shows their ids and tags"
        )
    shard = selection.shard
    return chosen if shard is None else [case for case in chosen if shard.includes(case.id)]


def describe_stored(selection: dict[str, Any] | None) -> str:
    return Selection.stored(selection).describe()


def require_same_selection(
    baseline: dict[str, Any] | None, candidate: dict[str, Any] | None
) -> None:
    """A selected candidate is judged only against a baseline of the same selection."""
    if candidate and candidate != baseline:
        raise ConfigError(
            f"the candidate ran {describe_stored(candidate)} but the baseline "
            f"{describe_stored(baseline)}: a slice is a partial judgement and is never gated "
            "against a different one (gate a whole run, or make a baseline of the same slice)"
        )
