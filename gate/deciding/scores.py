"""Scores compared case by case: a check's number in [0, 1], over the samples of each side.

A sample's score is `SampleResult.checks[i].score`; an error sample has none and a sample
whose check gave none is left out, so a case's mean is over its judged, scored samples
(hand-built results without samples: the case's own `CaseResult.checks[i].score`). Every
score either file holds is read and checked first: a number that is not one from 0 to 1
(NaN, 1.5, -0.2, a string) is refused, never believed (ResultsError, exit 2).

Per check, the shared cases of the same version that either side scored are listed with
the change of their mean and its 95% Welch interval (none with one sample a side). Over
the cases both sides scored, the suite's change is the mean per case with a cluster-robust
95% t interval, and its one-sided p-value is the exact paired sign-flip test
(gate.deciding.scorestats) over whole clusters, each case's difference taken over both
sides' first m scored samples (m the fewer), so the two sides stay exchangeable. Under
`samples: auto` m is at most the suite's look, whose spend the rule's level pays.
pass^k and pass@k are estimated per case from passes in samples (an error never passes).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from gate.deciding.noise.suitetest import suite_look
from gate.deciding.scorestats import (
    Interval,
    clustered_interval,
    pass_at_k,
    pass_hat_k,
    sign_flip_sum_lower,
    smallest_p,
    unit_sums,
    welch_interval,
)
from gate.errors import ResultsError
from gate.results import CaseResult, RunResults

#: pass^k and pass@k are reported at this k when no `min_pass_hat_k` names one
REPORTED_K = 3


@dataclass(frozen=True, slots=True)
class CaseScore:
    """One case's scores for one check on both sides (None: that side has none)."""

    id: str
    base: tuple[float, ...]
    cand: tuple[float, ...]
    interval: Interval | None

    @property
    def base_mean(self) -> float | None:
        return fmean(self.base) if self.base else None

    @property
    def cand_mean(self) -> float | None:
        return fmean(self.cand) if self.cand else None

    @property
    def change(self) -> float | None:
        if not self.base or not self.cand:
            return None
        return fmean(self.cand) - fmean(self.base)

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline_mean": self.base_mean,
            "candidate_mean": self.cand_mean,
            "baseline_samples": len(self.base),
            "candidate_samples": len(self.cand),
            "change": self.change,
            "change_ci": None if self.interval is None else [self.interval.low, self.interval.high],
        }


@dataclass(frozen=True, slots=True)
class CheckScores:
    """One check's scores over the shared cases, and the suite's paired test of them."""

    check: str
    cases: list[CaseScore]
    #: the mean change per case over the cases both sides scored, its 95% interval
    change: Interval
    #: the one-sided sign-flip p-value that the candidate's scores are lower
    p_lower: float
    #: the test's units (clusters, or cases) and the smallest p they allow (2^-non-zero units)
    units: int
    smallest_p: float
    clusters: int
    #: the share of the rule's level this look may spend (1 under fixed samples)
    spend: float = 1.0

    @property
    def paired(self) -> list[CaseScore]:
        return [case for case in self.cases if case.change is not None]

    @property
    def missing(self) -> list[str]:
        """Cases the baseline scored and the candidate did not (all errors, check gone)."""
        return [case.id for case in self.cases if case.base and not case.cand]

    @property
    def unmatched(self) -> list[str]:
        """Cases only the candidate scored: nothing to compare them with yet."""
        return [case.id for case in self.cases if case.cand and not case.base]

    def to_dict(self) -> dict[str, Any]:
        return {
            "paired_cases": len(self.paired),
            "mean_change": self.change.mean,
            "mean_change_ci": [self.change.low, self.change.high],
            "p_lower": self.p_lower,
            "units": self.units,
            "clusters": self.clusters,
            "missing_on_candidate": self.missing,
            "only_on_candidate": self.unmatched,
            "cases": {case.id: case.to_dict() for case in self.cases},
        }


@dataclass(frozen=True, slots=True)
class PassK:
    """pass^k and pass@k for the cases with at least k samples, per side."""

    k: int
    #: case id -> (baseline pass^k, candidate pass^k, baseline pass@k, candidate pass@k)
    cases: dict[str, tuple[float | None, float | None, float | None, float | None]]

    def suite(self, index: int) -> float | None:
        values = [row[index] for row in self.cases.values() if row[index] is not None]
        return fmean(v for v in values if v is not None) if values else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "baseline_pass_hat_k": self.suite(0),
            "candidate_pass_hat_k": self.suite(1),
            "baseline_pass_at_k": self.suite(2),
            "candidate_pass_at_k": self.suite(3),
            "cases": {
                case_id: dict(
                    zip(
                        (
                            "baseline_pass_hat_k",
                            "candidate_pass_hat_k",
                            "baseline_pass_at_k",
                            "candidate_pass_at_k",
                        ),
                        row,
                        strict=True,
                    )
                )
                for case_id, row in self.cases.items()
            },
        }


@dataclass(frozen=True, slots=True)
class ScoreAnalysis:
    checks: dict[str, CheckScores] = field(default_factory=dict)
    pass_k: PassK | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "checks": {name: check.to_dict() for name, check in self.checks.items()},
            "pass_k": None if self.pass_k is None else self.pass_k.to_dict(),
        }


def _checked(value: Any, case_id: str, check: str, role: str) -> float:
    if type(value) not in (int, float) or not math.isfinite(value) or not 0 <= value <= 1:
        raise ResultsError(
            f"the {role} results give case {case_id!r} check {check!r} the score "
            f"{str(value)[:40]!r}: a score is a number from 0 to 1, so the file was edited or "
            "broken and is not believed — run the suite again to write it"
        )
    return float(value)


def validate_scores(run: RunResults, role: str) -> None:
    """Refuse a results file holding any score that is not a number from 0 to 1, a check
    named twice in one list (which of its scores would count?), or a scored case whose
    samples are not all there (the case's line alone would be believed)."""
    for case in run.cases:
        lists = [case.checks, *(sample.checks for sample in case.outputs)]
        for results in lists:
            names = [result.check for result in results]
            if len(set(names)) != len(names):
                twice = next(name for name in names if names.count(name) > 1)
                raise ResultsError(
                    f"the {role} results name check {twice!r} twice for one output of case "
                    f"{case.id!r}: no run writes that, so the file was edited or broken and "
                    "is not believed — run the suite again to write it"
                )
            for result in results:
                if result.score is not None:
                    _checked(result.score, case.id, result.check, role)
        scored = any(result.score is not None for results in lists for result in results)
        if scored and len(case.outputs) != case.samples:
            raise ResultsError(
                f"the {role} results say case {case.id!r} drew {case.samples} sample(s) but "
                f"hold {len(case.outputs)}: its scores cannot be read from samples that are "
                "not there, so the file is not believed — run the suite again to write it"
            )


def scored_checks(runs: Sequence[RunResults]) -> list[str]:
    """Every check that gave a score somewhere in these runs."""
    names: set[str] = set()
    for run in runs:
        for case in run.cases:
            names.update(c.check for c in case.checks if c.score is not None)
            for sample in case.outputs:
                names.update(c.check for c in sample.checks if c.score is not None)
    return sorted(names)


def scores_of(case: CaseResult, check: str) -> list[float]:
    """The case's scores for `check` in sample order: its judged samples that have one
    (hand-built results without samples: the case's own score, if any)."""
    if not case.outputs:
        return [c.score for c in case.checks if c.check == check and c.score is not None][:1]
    found: list[float] = []
    for sample in sorted(case.outputs, key=lambda s: s.sample):
        if sample.status == "error":
            continue
        found.extend(c.score for c in sample.checks if c.check == check and c.score is not None)
    return found


def check_scores(
    check: str,
    pairs: Sequence[tuple[CaseResult, CaseResult]],
    clusters: Mapping[str, str] | None,
    looks: list[int] | None,
) -> CheckScores:
    """One check's per-case changes and the suite's paired sign-flip test of them."""
    cases: list[CaseScore] = []
    tested: dict[str, float] = {}
    limit, spend = suite_look(min((new.samples for _, new in pairs), default=0), looks)
    for old, new in pairs:
        base, cand = scores_of(old, check), scores_of(new, check)
        if not base and not cand:
            continue
        cases.append(CaseScore(new.id, tuple(base), tuple(cand), welch_interval(base, cand)))
        if base and cand:
            m = min(len(base), len(cand), limit or len(cand))
            tested[new.id] = fmean(cand[:m]) - fmean(base[:m])
    units = unit_sums(tested, clusters)
    estimate = {case.id: case.change for case in cases if case.change is not None}
    change, _ = clustered_interval({i: v for i, v in estimate.items() if v is not None}, clusters)
    grouped = {clusters.get(i) for i in tested if clusters.get(i)} if clusters else set()
    return CheckScores(
        check=check,
        cases=sorted(cases, key=lambda case: case.id),
        change=change,
        p_lower=sign_flip_sum_lower(units) if units else 1.0,
        units=len(units),
        smallest_p=smallest_p(units),
        clusters=len(grouped),
        spend=spend,
    )


def pass_k_of(pairs: Sequence[tuple[CaseResult | None, CaseResult]], k: int) -> PassK:
    """pass^k and pass@k of every case with samples on either side (errors never pass)."""
    rows = {}
    for old, new in pairs:
        if new.samples <= 1 and (old is None or old.samples <= 1):
            continue
        base = (
            (None, None)
            if old is None
            else (pass_hat_k(old.passes, old.samples, k), pass_at_k(old.passes, old.samples, k))
        )
        cand = pass_hat_k(new.passes, new.samples, k), pass_at_k(new.passes, new.samples, k)
        rows[new.id] = (base[0], cand[0], base[1], cand[1])
    return PassK(k, dict(sorted(rows.items())))


def reported_k(
    rule_k: int | None, pairs: Sequence[tuple[CaseResult | None, CaseResult]]
) -> int | None:
    """The rule's k, else REPORTED_K capped at the fewest samples of a sampled case
    (None: no case has samples)."""
    if rule_k is not None:
        return rule_k
    counts = [new.samples for _, new in pairs if new.samples > 1]
    return min(REPORTED_K, min(counts)) if counts else None


def analyse_scores(
    baseline: RunResults,
    candidate: RunResults,
    comparable: Sequence[str],
    clusters: Mapping[str, str] | None,
    looks: list[int] | None,
    rule_k: int | None,
) -> ScoreAnalysis | None:
    """Every scored check over the `comparable` cases (shared, same version), and pass^k
    over every candidate case; None when neither run holds a score or a sampled case."""
    validate_scores(baseline, "baseline")
    validate_scores(candidate, "candidate")
    before, after = baseline.case_map(), candidate.case_map()
    pairs = [(before[i], after[i]) for i in comparable]
    checks = {
        name: check_scores(name, pairs, clusters, looks)
        for name in scored_checks([baseline, candidate])
    }
    everything = [(before.get(case.id), case) for case in candidate.cases]
    k = reported_k(rule_k, everything)
    pass_k = pass_k_of(everything, k) if k is not None else None
    if not checks and (pass_k is None or not pass_k.cases):
        return None
    return ScoreAnalysis(checks, pass_k)
