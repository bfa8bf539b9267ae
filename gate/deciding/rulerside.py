"""The two sides a ruler change is found between: a `Side` (config, cases and files of one
tree), a `RulerChange`, the review of them, and which direction of a threshold loosens.

gate.deciding.rulerdiff finds the changes; gate.deciding.ruler decides with them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate import checks, usercode
from gate.errors import ConfigError
from gate.suite.cases import Case, load_cases, resolve_case_paths
from gate.suite.config import LoadedConfig, load_config
from gate.yamlfile import line_of, load_yaml


@dataclass(frozen=True, slots=True)
class RulerChange:
    """One difference between the base's ruler and the pull request's, in plain words."""

    #: what changed, e.g. "gate rule", "critical case refund-window" (plain text: the
    #: reports escape it)
    subject: str
    #: what happened to it, e.g. "block_on_critical_regression true → false"
    text: str
    #: `file:line` in the pull request (or the base, for something removed); "" if unknown
    where: str
    loosens: bool

    def describe(self) -> str:
        return f"{self.subject}: {self.text}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "change": self.text,
            "where": self.where,
            "loosens": self.loosens,
        }


@dataclass(frozen=True, slots=True)
class RulerReview:
    """The ruler of one pull request: its changes and whether they were accepted."""

    #: the commit the ruler was read from (short sha or ref)
    base: str
    changes: list[RulerChange] = field(default_factory=list)
    accepted: bool = False
    #: how the acceptance was given, e.g. "label casegate:accept-ruler-change, added by x"
    accepted_by: str | None = None
    #: facts about how the base was found (e.g. "not a merge commit: used base.sha")
    notes: list[str] = field(default_factory=list)
    #: how a person accepts the loosening changes, e.g. "add the label casegate:…"
    how_to_accept: str = ""

    @property
    def loosening(self) -> list[RulerChange]:
        return [change for change in self.changes if change.loosens]

    @property
    def tightening(self) -> list[RulerChange]:
        return [change for change in self.changes if not change.loosens]

    @property
    def blocks(self) -> bool:
        return bool(self.loosening) and not self.accepted

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "accepted": self.accepted,
            "accepted_by": self.accepted_by,
            "blocks": self.blocks,
            "notes": list(self.notes),
            "changes": [change.to_dict() for change in self.changes],
        }


# --- one side of the ruler ------------------------------------------------------------


@dataclass(slots=True)
class Side:
    """A config and its selected cases, as one commit (or the working tree) has them."""

    loaded: LoadedConfig
    cases: list[Case]
    repo_root: Path
    #: where the config file is shown as, relative to the repository root
    config_shown: str
    #: the baseline file's path relative to the repository root, or None
    baseline: str | None
    raw: dict[str, Any]
    #: paths left out of an extracted tree as links out of it
    refused: frozenset[str] = frozenset()

    @property
    def case_map(self) -> dict[str, Case]:
        return {case.id: case for case in self.cases}

    def config_line(self, *keys: str) -> str:
        node: Any = self.raw
        line = 1
        for key in keys:
            if not isinstance(node, dict) or key not in node:
                break
            line = line_of(node, key) or line
            node = node[key]
        return f"{self.config_shown}:{line}"

    def case_where(self, case: Case) -> str:
        return f"{case.source}:{case.line}" if case.source else self.config_shown

    def check_sources(self) -> dict[str, str]:
        """module → sha256 of its file, for every custom check's module and the local
        modules it imports (read, not imported: gate.usercode.local_sources)."""
        modules = sorted(
            {
                usercode.parse_spec(spec, "check")[0]
                for case in self.cases
                for spec in checks.custom_specs(case.expect)
            }
        )
        return self._hashed(modules)

    def instrument_sources(self) -> dict[str, str]:
        """module → sha256, for the python targets that measure outputs (`embeddings:`,
        `moderation:`, a python judge) and the local modules they import: an instrument's
        code is part of the ruler as a custom check's is."""
        config = self.loaded.config
        targets = [
            pin.target
            for pin in (config.embeddings, config.moderation)
            if pin is not None and pin.provider == "python" and pin.target
        ]
        judge = (config.judge.model_extra or {}) if config.judge is not None else {}
        if config.judge is not None and config.judge.provider == "python":
            targets.append(str(judge.get("target") or ""))
        modules = set()
        for target in targets:
            try:
                modules.add(usercode.parse_spec(target, "target")[0])
            except usercode.UserCodeError:
                continue  # the config's own validation names it
        return self._hashed(sorted(modules))

    def _hashed(self, modules: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for module in modules:
            sources = usercode.local_sources(module, self.loaded.root)
            if module not in sources:
                found[module] = "missing"
            for name, file in sources.items():
                found[name] = hashlib.sha256(file.read_bytes()).hexdigest()
        return found


def load_side(
    config: Path,
    overrides: Sequence[str],
    repo_root: Path,
    baseline: str | None = None,
    *,
    refused: frozenset[str] = frozenset(),
) -> Side:
    """Load a config and its cases without importing any user code.

    `baseline` overrides the config's `baseline:` (the Action's `baseline` input).
    """
    loaded = load_config(config, overrides)
    files, problems = resolve_case_paths(loaded.config.cases, loaded.root)
    if problems:
        raise ConfigError([f"{config}: {p}" for p in problems])
    files = [file for file in files if file.resolve() != config.resolve()]
    cases = load_cases(
        files, display_root=repo_root, defaults=loaded.config.defaults, root=loaded.root
    )
    raw = load_yaml(config.read_text(encoding="utf-8"))
    shown = config.resolve().relative_to(repo_root.resolve()).as_posix()
    relative = baseline or loaded.config.baseline
    baseline_shown = None
    if relative is not None:
        path = (loaded.root / relative) if not Path(relative).is_absolute() else Path(relative)
        try:
            baseline_shown = os.path.relpath(path, repo_root)
        except ValueError:
            baseline_shown = str(path)
    return Side(
        loaded, cases, repo_root, shown, baseline_shown, raw if isinstance(raw, dict) else {}
    )


# --- the comparison of two rulers ------------------------------------------------------


def _fmt(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _looser_number(before: Any, after: Any, looser_when: str) -> bool:
    """Whether a change of a numeric threshold loosens it (None means "no limit")."""
    if before is None or after is None:
        return after is None and before is not None if looser_when == "higher" else True
    if not isinstance(before, int | float) or not isinstance(after, int | float):
        return True  # e.g. samples 5 → auto: when in doubt, it loosens
    return after > before if looser_when == "higher" else after < before


#: gate rule fields: how a change of each loosens. "off" — true → false loosens;
#: "higher"/"lower" — that direction loosens; "any" — every change counts as loosening;
#: "block" — a change away from "block" loosens.
RULE_DIRECTIONS: dict[str, str] = {
    "block_on_critical_regression": "off",
    "block_on_critical_failure": "off",
    "block_on_pass_rate_drop": "off",
    "block_on_errors": "off",
    "block_on_critical_without_baseline": "off",
    "tolerance": "higher",
    "max_cost_increase": "higher",
    "max_latency_p95_increase": "higher",
    "alpha": "lower",
    "alpha_critical": "lower",
    "non_inferiority_margin": "higher",
    "on_inconclusive": "any",
    "confirm_samples": "any",
    "accept_label": "any",
    "max_pairwise_loss_rate": "higher",
    "holdout_max_drop": "higher",
    "unverified_critical": "block",
    # Absolute floors and budgets (None: off, the loosest).
    "min_pass_rate": "floor",
    "max_cost_usd": "higher",
    "max_latency_p95_ms": "higher",
    "max_errors": "higher",
    # The score rules (gate.deciding.scorerules): mappings and lists, so any change counts.
    "max_mean_score_drop": "any",
    "min_mean_score": "any",
    "min_pass_hat_k": "any",
}


def _loosens(direction: str, before: Any, after: Any) -> bool:
    if direction == "block":
        return bool(before == "block" and after != "block")
    if direction == "off":
        return bool(before) and not bool(after)
    if direction == "floor":  # lower loosens; None (no floor) is the loosest
        if before is None or after is None:
            return after is None and before is not None
        return bool(after < before)
    if direction == "any":
        if (before, after) == ("block", "ship"):
            return True
        return not (before == "ship" and after == "block")
    return _looser_number(before, after, direction)
