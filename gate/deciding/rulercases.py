"""What a pull request changed about the cases, one `RulerChange` each: cases removed or
added, and for a case on both sides its criticality, input, input files, version,
expectations, threshold, samples, cluster and weight. gate.deciding.rulerdiff gathers them
with the rest."""

from __future__ import annotations

import hashlib
import json

from gate.checks.graded import pairwise_rubric
from gate.deciding.rulerside import RulerChange, Side, _fmt
from gate.suite.cases import Case
from gate.suite.defaults import expect_difference


def _threshold(case: Case, side: Side) -> float:
    return (
        case.min_pass_rate if case.min_pass_rate is not None else side.loaded.config.min_pass_rate
    )


def _samples(case: Case, side: Side) -> int | str:
    return case.samples or side.loaded.config.samples


def _input_hash(case: Case) -> str:
    blob = json.dumps(case.input, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def files_difference(before: dict[str, str], after: dict[str, str]) -> str:
    """What changed between two cases' input files (path → sha256), in words."""
    parts = [f"{name} removed" for name in before if name not in after]
    parts += [f"{name} edited" for name in before if name in after and before[name] != after[name]]
    parts += [f"{name} added" for name in after if name not in before]
    return ", ".join(parts[:4]) + (f" and {len(parts) - 4} more" if len(parts) > 4 else "")


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
    files_moved = old.input_file_hashes != new.input_file_hashes
    if files_moved and (old.is_critical or old.version == new.version):
        # The files are part of the question, as the input is: the base's bytes (read from
        # its tree) against the pull request's.
        changes.append(
            RulerChange(
                subject,
                "input_files changed"
                + ("" if old.version != new.version else " without a version bump")
                + f": {files_difference(old.input_file_hashes, new.input_file_hashes)}",
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
