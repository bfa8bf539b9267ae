"""The ruler: what a run is judged by, as the base commit says it is.

A pull request is untrusted input. Its config and cases may say anything; the
gate's rule, the baseline, the case selection, every case's criticality and
expectation, the sample counts and thresholds, the judge pin, the embeddings and
moderation services and the source of custom checks are read from the base commit
and compared with the pull request's. Every difference is a `RulerChange`; one that
loosens blocks unless it was accepted on purpose (a label, or `--accept-ruler-change`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.deciding.basetree import (
    extract_tree,
    inside,
    pull_request_base,
    repo_root_of,
    resolve_commit,
)
from gate.errors import CasegateError, ConfigError
from gate.history.integrity import rewritten_lines
from gate.history.integrity import summary as history_summary
from gate.holdout.rulerdiff import differences as holdout_differences
from gate.judging import checks
from gate.judging.checks.graded import pairwise_rubric
from gate.judging.judge import JudgePin
from gate.produce.services.pins import ServicePin
from gate.results import EPSILON, RunResults, summarise
from gate.suite import usercode
from gate.suite.cases import Case, load_cases, resolve_case_paths
from gate.suite.config import GateConfig, LoadedConfig, load_config
from gate.suite.defaults import expect_difference
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
        modules it imports (read, not imported: gate.suite.usercode.local_sources)."""
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
    cases = load_cases(files, display_root=repo_root, defaults=loaded.config.defaults)
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
#: "higher"/"lower" — that direction loosens; "any" — every change counts as loosening.
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
    # Absolute floors and budgets (None: off, the loosest).
    "min_pass_rate": "floor",
    "max_cost_usd": "higher",
    "max_latency_p95_ms": "higher",
    "max_errors": "higher",
}


def _loosens(direction: str, before: Any, after: Any) -> bool:
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


#: top-level config keys whose changes the review compares key by key (above and below)
COMPARED_KEYS = frozenset(
    {
        "suite",
        "cases",
        "samples",
        "adaptive",
        "min_pass_rate",
        "baseline",
        "pricing",
        "judge",
        "embeddings",
        "moderation",
        "holdout",
        "defaults",
        "gate",
        "system",
    }
)
#: keys that decide no verdict, each for a reason: how many calls run at once; where the
#: outputs come from (the pull request's own claim either way); warnings only; the drift
#: job. `mode` is not one (live gives the pull request's code the network), nor `history`
#: (whose file, once merged, every later report trusts): changing them loosens.
NO_VERDICT_KEYS = frozenset({"concurrency", "recordings", "baseline_max_age_days", "drift"})


def _unknown_changes(base: Side, head: Side) -> list[RulerChange]:
    """Changes to keys the review does not know: each loosens (when in doubt, no ship)."""
    before, after = base.loaded.config.model_dump(), head.loaded.config.model_dump()
    changes = []
    for key in sorted(set(before) | set(after)):
        if key in COMPARED_KEYS or key in NO_VERDICT_KEYS or before.get(key) == after.get(key):
            continue
        changes.append(
            RulerChange(
                f"config key {key}",
                "changed; casegate cannot tell whether it can turn a fail into a pass",
                head.config_line(key),
                True,
            )
        )
    gate_before, gate_after = before.get("gate") or {}, after.get("gate") or {}
    for key in sorted(set(gate_before) | set(gate_after)):
        if key in RULE_DIRECTIONS or gate_before.get(key) == gate_after.get(key):
            continue
        changes.append(
            RulerChange(
                "gate rule",
                f"{key} {_fmt(gate_before.get(key))} → {_fmt(gate_after.get(key))} (a key the "
                "review does not know: counted as loosening)",
                head.config_line("gate", key),
                True,
            )
        )
    return changes


def _rule_changes(base: Side, head: Side) -> list[RulerChange]:
    changes = []
    before = base.loaded.config.gate.model_dump()
    after = head.loaded.config.gate.model_dump()
    for key, direction in RULE_DIRECTIONS.items():
        if before.get(key) != after.get(key):
            changes.append(
                RulerChange(
                    "gate rule",
                    f"{key} {_fmt(before.get(key))} → {_fmt(after.get(key))}",
                    head.config_line("gate", key),
                    _loosens(direction, before.get(key), after.get(key)),
                )
            )
    return changes


def _config_changes(base: Side, head: Side) -> list[RulerChange]:
    b, h = base.loaded.config, head.loaded.config
    changes = []
    if b.suite != h.suite:
        changes.append(
            RulerChange("suite", f"{b.suite} → {h.suite}", head.config_line("suite"), True)
        )
    if base.baseline != head.baseline:
        changes.append(
            RulerChange(
                "baseline path",
                f"{_fmt(base.baseline)} → {_fmt(head.baseline)}",
                head.config_line("baseline"),
                True,
            )
        )
    if b.samples != h.samples:
        # Either way: more samples switch the comparison to significance tests, which
        # against a one-sample baseline can never flag a regression.
        changes.append(
            RulerChange(
                "samples",
                f"{_fmt(b.samples)} → {_fmt(h.samples)}",
                head.config_line("samples"),
                True,
            )
        )
    if b.min_pass_rate != h.min_pass_rate:
        changes.append(
            RulerChange(
                "min_pass_rate",
                f"{_fmt(b.min_pass_rate)} → {_fmt(h.min_pass_rate)}",
                head.config_line("min_pass_rate"),
                h.min_pass_rate < b.min_pass_rate,
            )
        )
    if b.adaptive != h.adaptive:
        changes.append(
            RulerChange(
                "adaptive sampling",
                f"{b.adaptive.model_dump()} → {h.adaptive.model_dump()}",
                head.config_line("adaptive"),
                True,
            )
        )
    if b.pricing != h.pricing:
        # A lower price can turn a failed cost budget into a pass: any price that falls, a
        # model that loses or gains a price, loosens; prices that only rise tighten.
        changes.append(
            RulerChange(
                "pricing",
                _pricing_change(b.pricing, h.pricing),
                head.config_line("pricing"),
                _pricing_loosens(b.pricing, h.pricing),
            )
        )
    if b.judge != h.judge:
        changes.append(
            RulerChange(
                "judge pin",
                f"{_pin(b.judge)} → {_pin(h.judge)}",
                head.config_line("judge"),
                True,
            )
        )
    tools_before = checks.declared_tools(b.system.model_extra or {})
    tools_after = checks.declared_tools(h.system.model_extra or {})
    if tools_before != tools_after and any("tool_args_valid" in case.expect for case in base.cases):
        # tool_args_valid judges calls against the system's own declaration: when cases
        # rely on it, the declared schemas are part of the ruler.
        changed = sorted(
            name
            for name in {*(tools_before or {}), *(tools_after or {})}
            if (tools_before or {}).get(name) != (tools_after or {}).get(name)
        )
        changes.append(
            RulerChange(
                "tool schemas",
                f"system.tools changed ({', '.join(changed)}) while cases judge calls with "
                "tool_args_valid",
                head.config_line("system", "tools"),
                True,
            )
        )
    # The services `similar` and `moderation` measure with are instruments, like the judge.
    for key in ("embeddings", "moderation"):
        before, after = getattr(b, key), getattr(h, key)
        if before != after:
            text = _service_change(before, after)
            changes.append(RulerChange(f"{key} service", text, head.config_line(key), True))
    return changes


def _pricing_loosens(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """Only raising an existing price tightens: a new price makes an unknown cost known
    (and perhaps within a budget it failed), a lower or removed one hides a cost."""
    if set(after) - set(before):
        return True
    for model, price in before.items():
        new = after.get(model)
        if new is None or new.input < price.input or new.output < price.output:
            return True
        extra = {k: v for k, v in price.model_dump().items() if k not in ("input", "output")}
        for key, value in extra.items():
            changed = new.model_dump().get(key)
            if value is not None and (changed is None or changed < value):
                return True
    return False


def _pricing_change(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    parts = []
    for model in sorted(set(before) | set(after)):
        old, new = before.get(model), after.get(model)
        if old == new:
            continue
        if old is None:
            parts.append(f"{model} added")
        elif new is None:
            parts.append(f"{model} removed")
        else:
            parts.append(
                f"{model} {old.input:g}/{old.output:g} → {new.input:g}/{new.output:g} per million"
            )
    return "; ".join(parts) or "the price table changed"


def _service_change(before: ServicePin | None, after: ServicePin | None) -> str:
    if before is None or after is None or before.describe() != after.describe():
        return f"{_pin(before)} → {_pin(after)}"
    fields = type(after).model_fields
    changed = [name for name in fields if getattr(before, name) != getattr(after, name)]
    return f"{before.describe()}: {', '.join(changed)} changed"


def _pin(pin: JudgePin | ServicePin | None) -> str:
    return pin.describe() if pin is not None else "none"


def _threshold(case: Case, side: Side) -> float:
    return (
        case.min_pass_rate if case.min_pass_rate is not None else side.loaded.config.min_pass_rate
    )


def _samples(case: Case, side: Side) -> int | str:
    return case.samples or side.loaded.config.samples


def _input_hash(case: Case) -> str:
    blob = json.dumps(case.input, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _case_changes(base: Side, head: Side) -> list[RulerChange]:
    before, after = base.case_map, head.case_map
    changes: list[RulerChange] = []
    removed = sorted(set(before) - set(after))
    for case_id in removed:
        case = before[case_id]
        kind = "critical case" if case.is_critical else "case"
        changes.append(
            RulerChange(
                f"{kind} {case_id}",
                "removed from the selection",
                f"{base.case_where(case)} (base)",
                True,
            )
        )
    added = sorted(set(after) - set(before))
    for case_id in added:
        if after[case_id].is_critical:
            changes.append(
                RulerChange(
                    f"critical case {case_id}", "added", head.case_where(after[case_id]), False
                )
            )
    plain = [i for i in added if not after[i].is_critical]
    if plain:
        changes.append(
            RulerChange(
                "cases",
                f"{len(plain)} new case(s) added: {', '.join(plain[:10])}"
                + (" …" if len(plain) > 10 else ""),
                head.config_shown,
                False,
            )
        )
    for case_id in sorted(set(before) & set(after)):
        changes.extend(_one_case(before[case_id], after[case_id], base, head))
    return changes


def _one_case(old: Case, new: Case, base: Side, head: Side) -> list[RulerChange]:
    subject = f"{'critical case' if old.is_critical else 'case'} {new.id}"
    where = head.case_where(new)
    changes = []
    if old.is_critical != new.is_critical:
        text = "made non-critical" if old.is_critical else "made critical"
        changes.append(RulerChange(subject, text, where, old.is_critical))
    expect_moved = old.expect_hash() != new.expect_hash()
    if _input_hash(old) != _input_hash(new) and (old.is_critical or old.version == new.version):
        # A new input is a new question: the baseline's verdict was for another one.
        changes.append(
            RulerChange(
                subject,
                "input changed" + ("" if old.version != new.version else " without a version bump"),
                where,
                True,
            )
        )
    if old.version != new.version:
        # A new version sets the case aside from the comparison: for a critical case
        # that hides a regression, and so does a bump that changes nothing it demands;
        # so does one that takes a pairwise case out of a pairwise loss-rate rule.
        paired = (
            base.loaded.config.gate.max_pairwise_loss_rate is not None
            and pairwise_rubric(old.expect) is not None
        )
        changes.append(
            RulerChange(
                subject,
                f"version {old.version} → {new.version}"
                + ("" if expect_moved else " without a change to what it expects")
                + (
                    " (its pairwise comparison is skipped while max_pairwise_loss_rate is set)"
                    if paired
                    else ""
                ),
                where,
                old.is_critical or not expect_moved or paired,
            )
        )
    if expect_moved:
        silent = old.version == new.version
        # Added checks can only fail more; anything else may hide a failure.
        what, only_added = expect_difference(old.expect, new.expect)
        moved = {k for k in {*old.expect, *new.expect} if old.expect.get(k) != new.expect.get(k)}
        by_defaults = bool(moved) and all(
            (k not in old.expect or k in old.from_defaults)
            and (k not in new.expect or k in new.from_defaults)
            for k in moved
        )
        changes.append(
            RulerChange(
                subject,
                "expect changed"
                + (" without a version bump" if silent else "")
                + f": {what}"
                + (" (through `defaults.expect`)" if by_defaults else ""),
                head.config_line("defaults", "expect") if by_defaults else where,
                (old.is_critical or silent) and not only_added,
            )
        )
    # A config-wide change is listed once, under the config; a case lists its own.
    own = old.min_pass_rate is not None or new.min_pass_rate is not None
    if own and _threshold(old, base) != _threshold(new, head):
        b, h = _threshold(old, base), _threshold(new, head)
        changes.append(RulerChange(subject, f"min_pass_rate {_fmt(b)} → {_fmt(h)}", where, h < b))
    if (old.samples or new.samples) and _samples(old, base) != _samples(new, head):
        b2, h2 = _samples(old, base), _samples(new, head)
        changes.append(RulerChange(subject, f"samples {_fmt(b2)} → {_fmt(h2)}", where, True))
    if old.cluster != new.cluster:
        # Clusters widen the suite test's interval: leaving one narrows it.
        changes.append(
            RulerChange(subject, f"cluster {_fmt(old.cluster)} → {_fmt(new.cluster)}", where, True)
        )
    by_tag = base.loaded.config.clusters is not None and base.loaded.config.clusters.by == "tag"
    if by_tag and old.cluster is None and old.tags[:1] != new.tags[:1]:
        changes.append(
            RulerChange(
                subject,
                f"first tag {_fmt(old.tags[:1])} → {_fmt(new.tags[:1])}, which is its cluster",
                where,
                True,
            )
        )
    if old.weight != new.weight:
        changes.append(
            RulerChange(subject, f"weight {_fmt(old.weight)} → {_fmt(new.weight)}", where, True)
        )
    return changes


def _check_source_changes(base: Side, head: Side) -> list[RulerChange]:
    changes = _source_changes(
        "custom check module", base.check_sources(), head.check_sources(), head
    )
    # A function of a base module that no base case calls is new code in the judging
    # process too: what it does to the module's state, other cases' checks would see.
    base_specs = {spec for case in base.cases for spec in checks.custom_specs(case.expect)}
    for spec in sorted(
        {spec for case in head.cases for spec in checks.custom_specs(case.expect)} - base_specs
    ):
        changes.append(
            RulerChange(
                f"custom check {spec}",
                "a function no case on the base calls: new code in the judging process",
                head.config_shown,
                True,
            )
        )
    changes += _source_changes(
        "instrument module", base.instrument_sources(), head.instrument_sources(), head
    )
    return changes


def _source_changes(
    what: str, before: Mapping[str, str], after: Mapping[str, str], head: Side
) -> list[RulerChange]:
    changes = []
    for module in sorted(set(before) | set(after)):
        if before.get(module) == after.get(module):
            continue
        if module not in before:
            text = "new: code the pull request brings into the judging process"
        elif module not in after:
            text = "no longer used"
        else:
            text = "source changed"
        changes.append(RulerChange(f"{what} {module}", text, head.config_shown, True))
    return changes


def _baseline_changes(base: Side, head: Side) -> list[RulerChange]:
    if base.baseline is None or base.baseline != head.baseline:
        return []
    old = base.repo_root / base.baseline
    new = head.repo_root / head.baseline
    old_bytes = old.read_bytes() if old.is_file() and not old.is_symlink() else None
    new_bytes = new.read_bytes() if new.is_file() and not new.is_symlink() else None
    if old_bytes == new_bytes:
        return []
    return [
        RulerChange(
            "baseline file",
            f"{base.baseline} edited by this pull request (the base commit's copy is used)",
            head.baseline or "",
            True,
        )
    ]


def compare_rulers(base: Side, head: Side) -> list[RulerChange]:
    """Every difference between two rulers; loosening ones first, in a stable order."""
    changes = (
        _rule_changes(base, head)
        + _config_changes(base, head)
        + _unknown_changes(base, head)
        + _baseline_changes(base, head)
        + _check_source_changes(base, head)
        + _case_changes(base, head)
        + _holdout_changes(base, head)
        + _history_changes(base, head)
    )
    return sorted(changes, key=lambda change: not change.loosens)


def _history_changes(base: Side, head: Side) -> list[RulerChange]:
    """The history export is append-only: a pull request that changes or removes a line
    the base holds rewrites what every later report says ("last failed …", "never")."""
    relative = base.loaded.config.history or f"history/{base.loaded.config.suite}.jsonl"
    moved = head.loaded.config.history or f"history/{head.loaded.config.suite}.jsonl"
    shown = os.path.relpath(head.loaded.root / moved, head.repo_root)
    # A moved export must still hold every line the base's holds.
    rewrites = rewritten_lines(
        _plain_bytes(base.loaded.root / relative),
        _plain_bytes(head.loaded.root / moved),
        shown,
    )
    if not rewrites:
        return []
    return [
        RulerChange(
            "history export",
            history_summary(rewrites) + " (the base's copy is what reports read)",
            f"{shown}:{rewrites[0].line}",
            True,
        )
    ]


def _plain_bytes(path: Path) -> bytes:
    """A file's bytes when it is a real file inside its tree, else none."""
    try:
        if path.is_symlink() or not path.is_file():
            return b""
        return path.read_bytes()
    except OSError:
        return b""


def _holdout_changes(base: Side, head: Side) -> list[RulerChange]:
    """The held-out slice's settings and sealed cases (gate.holdout.rulerdiff)."""
    return [
        RulerChange(
            found.subject, found.text, found.where or head.config_line(*found.keys), found.loosens
        )
        for found in holdout_differences(base.loaded, head.loaded)
    ]


# --- judging under the base's ruler --------------------------------------------------


@dataclass(slots=True)
class Ruling:
    """What the gate uses: the base's ruler, or the pull request's once accepted."""

    review: RulerReview
    rule: GateConfig
    baseline_path: Path
    #: the base's cases whose criticality and thresholds the candidate is judged by;
    #: None when the pull request's own ruler applies (accepted, or no base config)
    base: Side | None
    #: the base commit's config, accepted or not (None: the base has none); the baseline's
    #: config fingerprint is compared with it (gate.deciding.staleness)
    base_config: LoadedConfig | None = None
    #: the base commit's files, extracted (gate.deciding.basetree), and the pull request's checkout
    base_tree: Path | None = None
    head_tree: Path | None = None
    #: who accepted a loosening change (the label, the flag), whether or not one was found
    accepted_by: str | None = None

    def with_changes(self, found: Sequence[RulerChange]) -> RulerReview:
        """The review with changes found after the run (gate.deciding.treediff) added."""
        review = self.review
        known = {(change.subject, change.text) for change in review.changes}
        new = [change for change in found if (change.subject, change.text) not in known]
        if not new:
            return review
        changes = sorted([*review.changes, *new], key=lambda change: not change.loosens)
        accepted = review.accepted or self.accepted_by is not None
        return dataclasses.replace(
            review,
            changes=changes,
            accepted=accepted,
            accepted_by=review.accepted_by or (self.accepted_by if accepted else None),
        )


def rule_against_base(
    head: Side,
    base: Side | None,
    *,
    commit: str,
    accepted: bool,
    accepted_by: str | None,
    how_to_accept: str,
    notes: Sequence[str] = (),
) -> Ruling:
    """Compare the pull request's ruler with the base's and decide which one judges."""
    if base is None:
        changes = [
            RulerChange(
                "casegate config",
                f"{head.config_shown} does not exist on the base commit {commit[:7]}: "
                "this pull request brings its own ruler",
                head.config_shown,
                True,
            )
        ]
    else:
        changes = compare_rulers(base, head)
    review = RulerReview(
        base=commit[:12],
        changes=changes,
        accepted=accepted and bool(changes),
        accepted_by=accepted_by if accepted and changes else None,
        notes=list(notes),
        how_to_accept=how_to_accept,
    )
    if base is None:
        return Ruling(review, head.loaded.config.gate, _baseline_file(head, "baseline"), None)
    if review.accepted:
        # Accepting a looser rule is not accepting a rewritten baseline: at the same path,
        # the base's copy still holds the verdicts the candidate is compared with.
        baseline = _baseline_file(head, "baseline")
        if base.baseline is not None and base.baseline == head.baseline:
            kept = inside(base.repo_root, base.baseline, "baseline on the base", base.refused)
            baseline = kept if kept.is_file() else baseline
        return Ruling(review, head.loaded.config.gate, baseline, None)
    if base.baseline is None:
        raise ConfigError(
            f"{base.config_shown} on the base commit {commit[:7]} sets no `baseline:`, so there "
            "is nothing trusted to compare with: set it on the base branch first"
        )
    path = inside(
        base.repo_root, base.baseline, f"baseline on the base commit {commit[:7]}", base.refused
    )
    if not path.is_file():
        changes.insert(
            0,
            RulerChange(
                "baseline file",
                f"{base.baseline} does not exist on the base commit {commit[:7]}: "
                "this pull request brings its own baseline",
                head.baseline or "",
                True,
            ),
        )
        path = _baseline_file(head, "baseline")
    return Ruling(review, base.loaded.config.gate, path, base)


def _baseline_file(side: Side, what: str) -> Path:
    if side.baseline is None:
        raise ConfigError(
            f"{side.config_shown}: no baseline configured: set `baseline:` "
            "(create one with `casegate baseline`)"
        )
    return inside(side.repo_root, side.baseline, what)


def restate(candidate: RunResults, base: Side) -> RunResults:
    """The candidate's verdicts under the base's criticality and pass thresholds.

    A pull request that marks a critical case non-critical, lowers its `min_pass_rate`
    to 0 or moves it out of a cluster is judged as if it had not: the samples stay its own.
    """
    cases = base.case_map
    # The suite test's clusters are the base's too (gate.deciding.noise.clusters).
    clusters = base.loaded.as_dict().get("clusters")
    candidate.config = {k: v for k, v in candidate.config.items() if k != "clusters"}
    if clusters is not None:
        candidate.config["clusters"] = clusters
    for result in candidate.cases:
        case = cases.get(result.id)
        if case is None:
            continue
        result.critical = case.is_critical
        result.cluster, result.tags = case.cluster, list(case.tags)
        if result.status == "error" or not result.samples:
            continue
        threshold = _threshold(case, base)
        passed = result.passes / result.samples + EPSILON >= threshold
        if passed != result.passed:
            result.passed = passed
            result.status = "pass" if passed else "fail"
            if not passed:
                result.reason = (
                    f"{result.passes}/{result.samples} samples passed, below the base's "
                    f"min_pass_rate {threshold:g}" + (f"; {result.reason}" if result.reason else "")
                )
    candidate.summary = summarise(candidate.cases)
    return candidate


def ruling_for(
    config: Path,
    overrides: Sequence[str],
    *,
    base_ref: str | None,
    scratch: Path,
    baseline: str | None = None,
    acceptance: Callable[[str], str | None],
    how_to_accept: Callable[[str], str],
    event_base_sha: str | None = None,
    event_head_sha: str | None = None,
) -> Ruling:
    """Read the ruler from the base commit and decide which one judges this change.

    `base_ref` names the base (`check --base REF`); None means a pull request's
    checkout, whose base is the merge commit's first parent. `acceptance(label)`
    says who or what accepted a loosening change (None: nobody), given the
    acceptance label the *base* config names.
    """
    # Not resolved: a config that is a link would lead git to another repository.
    repo_root = repo_root_of(config.absolute().parent)
    if repo_root is None:
        raise ConfigError(
            f"{config}: not inside a git checkout, so the ruler cannot be read from a base "
            "commit (run actions/checkout first, or drop --base)"
        )
    inside(repo_root, os.path.relpath(config.absolute(), repo_root), "the config")
    if base_ref is None:
        commit, notes = pull_request_base(repo_root, event_base_sha, event_head_sha)
    else:
        commit, notes = resolve_commit(repo_root, base_ref), []
    head = load_side(config, overrides, repo_root, baseline)
    tree, refused = extract_tree(repo_root, commit, scratch)
    # The judging process (gate.judging.judgeproc), as the sandbox user, reads the base's checks
    # from here: it may pass through the scratch folder, never list or write it.
    os.chmod(scratch, 0o711)  # noqa: S103
    base_config = tree / os.path.relpath(config.absolute(), repo_root)
    base = None
    if base_config.is_file() and not base_config.is_symlink():
        try:
            base = load_side(base_config, (), tree, refused=refused)
        except CasegateError as exc:
            raise ConfigError(
                [
                    f"the base commit {commit[:7]}'s config or cases do not load, so there is no "
                    "trusted ruler to judge by:",
                    *exc.problems,
                ]
            ) from None
    label = (base or head).loaded.config.gate.accept_label
    accepted_by = acceptance(label)
    ruling = rule_against_base(
        head,
        base,
        commit=commit,
        accepted=accepted_by is not None,
        accepted_by=accepted_by,
        how_to_accept=how_to_accept(label),
        notes=notes,
    )
    ruling.base_config = base.loaded if base is not None else None
    ruling.base_tree, ruling.head_tree = tree, repo_root
    ruling.accepted_by = accepted_by
    return ruling
