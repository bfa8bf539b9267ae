"""Every difference between the base's ruler and the pull request's, as `RulerChange`s.

The gate's rule, the config's keys, the cases (criticality, expectations, thresholds,
samples), the source of custom checks, the baseline, the history export and the holdout
slice, each compared by a function of its own (the cases' in gate.deciding.rulercases);
`compare_rulers` gathers them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gate import checks
from gate.deciding.appendonly import appended_lines, rewritten_lines
from gate.deciding.appendonly import summary as history_summary
from gate.deciding.heldoutdiff import differences as holdout_differences
from gate.deciding.rulercases import _case_changes
from gate.deciding.rulerside import RULE_DIRECTIONS, RulerChange, Side, _fmt, _loosens
from gate.suite.judgepin import JudgePin
from gate.suite.pins import ServicePin

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
        "calibration",
    }
)
#: keys that decide no verdict, each for a reason: how many calls run at once; where the
#: outputs come from (the pull request's own claim either way); warnings only; the drift
#: job; the input shape `casegate add` gives its drafts (gate.grow.shape), which no run
#: reads; what `casegate add` drops from production data (`privacy`: no check reads it).
#: (`calibration`, the judge's bar, decides none either, but is compared below: a
#: lower bar silences every later report's warnings.) `mode` is not one (live gives the
#: pull request's code the network), nor `history` (whose file, once merged, every later
#: report trusts): changing them loosens.
NO_VERDICT_KEYS = frozenset(
    {"concurrency", "recordings", "baseline_max_age_days", "drift", "input_schema", "privacy"}
)


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
            f"{base.baseline} edited by this pull request (the base commit's copy is used; "
            f"drop the edit with git checkout BASE-BRANCH -- {base.baseline}, BASE-BRANCH being "
            "the branch it merges into: the baseline workflow refreshes it after the merge)",
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
        + _calibration_bar_changes(base, head)
        + _calibration_file_changes(base, head)
    )
    return sorted(changes, key=lambda change: not change.loosens)


def _calibration_bar_changes(base: Side, head: Side) -> list[RulerChange]:
    """The judge's bar (`calibration:`) decides no verdict and a check reads the base's;
    a change is listed, since once merged it decides what every later report warns of."""
    before, after = base.loaded.config.calibration, head.loaded.config.calibration
    moved = [
        f"{key} {_fmt(getattr(before, key))} → {_fmt(getattr(after, key))}"
        for key in type(before).model_fields
        if getattr(before, key) != getattr(after, key)
    ]
    if not moved:
        return []
    return [
        RulerChange(
            "judge calibration bar",
            ", ".join(moved) + " (this check holds the judge to the base's)",
            head.config_line("calibration"),
            False,
        )
    ]


def _calibration_file_changes(base: Side, head: Side) -> list[RulerChange]:
    """The judge's stored calibration decides no verdict, only whether reports trust the
    judge (gate.judging.trust); this check reads the base's copy. A pull request that
    changes it is listed, so a reviewer sees the figures every later report will quote."""
    name = f"{base.loaded.config.suite}.judge-calibration.json"
    before = _plain_bytes(base.loaded.root / name)
    after = _plain_bytes(head.loaded.root / name)
    if before == after:
        return []
    shown = os.path.relpath(head.loaded.root / name, head.repo_root)
    old, new = _calibration_figures(before), _calibration_figures(after)
    text = f"{old} → {new}" if old != new else f"{old}, other fields changed"
    return [
        RulerChange("judge calibration", text + " (this check reads the base's copy)", shown, False)
    ]


def _calibration_figures(data: bytes) -> str:
    if not data:
        return "none"
    try:
        stored = json.loads(data)
    except ValueError:
        return "unreadable"
    if not isinstance(stored, dict):
        return "unreadable"
    kappa, judged, labels = stored.get("kappa"), stored.get("judged"), stored.get("labels")
    numeric = isinstance(kappa, int | float) and not isinstance(kappa, bool)
    kappa_text = f"kappa {kappa:.2f}" if numeric else "no kappa"
    judged_text = f"{judged} judged" if isinstance(judged, int) else "? judged"
    labels_text = f"{labels} labels" if isinstance(labels, int) else "? labels"
    return f"{kappa_text}, {judged_text} of {labels_text}"


def _history_changes(base: Side, head: Side) -> list[RulerChange]:
    """The history export is append-only: a pull request that changes or removes a line
    the base holds rewrites what every later report says ("last failed …", "never").

    Lines it appends are listed, not blocked: the baseline job writes the history on the
    default branch, and once merged every later check trusts those lines, among them the
    runs that measure the shift between runs (which can make a later drop inconclusive,
    never a ship). A reviewer should see them come in."""
    relative = base.loaded.config.history_path
    moved = head.loaded.config.history_path
    shown = os.path.relpath(head.loaded.root / moved, head.repo_root)
    # A moved export must still hold every line the base's holds.
    before = _plain_bytes(base.loaded.root / relative)
    after = _plain_bytes(head.loaded.root / moved)
    rewrites = rewritten_lines(before, after, shown)
    if not rewrites:
        added, first = appended_lines(before, after)
        if not added:
            return []
        return [
            RulerChange(
                "history export",
                f"{added} line(s) appended by this pull request; the history is written by "
                "the baseline job, and once merged every later check trusts these lines "
                "(this check reads the base's copy)",
                f"{shown}:{first}",
                False,
            )
        ]
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
    """The held-out slice's settings and sealed cases (gate.deciding.heldoutdiff)."""
    return [
        RulerChange(
            found.subject, found.text, found.where or head.config_line(*found.keys), found.loosens
        )
        for found in holdout_differences(base.loaded, head.loaded)
    ]
