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
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gate.deciding.basetree import (
    extract_tree,
    inside,
    pull_request_base,
    repo_root_of,
    resolve_commit,
)
from gate.deciding.rulercases import _threshold
from gate.deciding.rulerdiff import compare_rulers
from gate.deciding.rulerside import RulerChange, RulerReview, Side, load_side
from gate.errors import CasegateError, ConfigError
from gate.results import EPSILON, RunResults, summarise
from gate.suite.config import GateConfig, LoadedConfig


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
