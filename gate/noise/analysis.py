"""The comparison under noise: with repeated samples, every rule is decided by a test.

Per case, a drop counts as a regression only when it exceeds the tolerance and
a one-sided Fisher exact test on passes/samples says it is not chance. Critical
cases are few and declared in advance, so each is tested at `alpha_critical`;
all other cases form one family under Holm's step-down at `alpha`. At suite
level a paired sign-flip test over the shared cases' rate differences decides
the pass-rate rule, and a t interval on the mean difference says whether a
drop beyond `non_inferiority_margin` can be ruled out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from gate.config import GateConfig
from gate.noise.stats import MeanChange, fisher_lower, holm, mean_change, sign_flip_lower, wilson
from gate.results import EPSILON, CaseResult


@dataclass(frozen=True, slots=True)
class CaseTest:
    id: str
    critical: bool
    base_passes: int
    base_samples: int
    cand_passes: int
    cand_samples: int
    p_lower: float  # the candidate's rate is lower
    p_higher: float  # the candidate's rate is higher
    base_interval: tuple[float, float]
    cand_interval: tuple[float, float]

    @property
    def change(self) -> float:
        return self.cand_passes / self.cand_samples - self.base_passes / self.base_samples

    def counts(self) -> str:
        return f"{self.base_passes}/{self.base_samples} → {self.cand_passes}/{self.cand_samples}"


@dataclass(slots=True)
class Confirmation:
    """A flagged case re-run on fresh samples before the gate blocks on it."""

    confirmed: bool
    test: CaseTest
    baseline_rerun: bool  # False: the baseline's original samples were used


@dataclass(slots=True)
class NoiseAnalysis:
    tests: dict[str, CaseTest]
    regressions: list[str]
    fixes: list[str]
    within_noise: list[str]
    suite_p: float
    change: MeanChange
    samples: int  # the typical samples per case, for the "samples to decide" estimate
    confirmations: dict[str, Confirmation] = field(default_factory=dict)

    def change_text(self) -> str:
        """`mean change -3.7 points per case (95% CI -8.4 to +1.0)`"""
        change = self.change
        return (
            f"mean change {change.mean * 100:+.1f} points per case "
            f"(95% CI {change.low * 100:+.1f} to {change.high * 100:+.1f})"
        )


def case_test(old: CaseResult, new: CaseResult) -> CaseTest:
    return CaseTest(
        id=new.id,
        critical=new.critical,
        base_passes=old.passes,
        base_samples=old.samples,
        cand_passes=new.passes,
        cand_samples=new.samples,
        p_lower=fisher_lower(old.passes, old.samples, new.passes, new.samples),
        p_higher=fisher_lower(new.passes, new.samples, old.passes, old.samples),
        base_interval=wilson(old.passes, old.samples),
        cand_interval=wilson(new.passes, new.samples),
    )


def significant(tests: Sequence[CaseTest], rule: GateConfig, *, lower: bool) -> list[str]:
    """Cases whose change (drop or rise) beyond the tolerance is significant."""
    sign = -1 if lower else 1
    moved = [t for t in tests if sign * t.change > rule.tolerance + EPSILON]
    found = [
        t.id
        for t in moved
        if t.critical and (t.p_lower if lower else t.p_higher) <= rule.alpha_critical
    ]
    # The Holm family is every non-critical case tested, moved or not.
    family = [t for t in tests if not t.critical]
    rejected = holm([t.p_lower if lower else t.p_higher for t in family], rule.alpha)
    moved_ids = {t.id for t in moved}
    found += [t.id for t, r in zip(family, rejected, strict=True) if r and t.id in moved_ids]
    return sorted(found)


def analyse(pairs: Sequence[tuple[CaseResult, CaseResult]], rule: GateConfig) -> NoiseAnalysis:
    """`pairs` are (baseline, candidate) results of the cases both runs judged."""
    tests = [case_test(old, new) for old, new in pairs]
    regressions = significant(tests, rule, lower=True)
    fixes = significant(tests, rule, lower=False)
    within = [t.id for t in tests if t.change < -EPSILON and t.id not in regressions]
    differences = [
        Fraction(t.cand_passes, t.cand_samples) - Fraction(t.base_passes, t.base_samples)
        for t in tests
    ]
    samples = sorted(t.cand_samples for t in tests)
    return NoiseAnalysis(
        tests={t.id: t for t in tests},
        regressions=regressions,
        fixes=fixes,
        within_noise=sorted(within),
        suite_p=sign_flip_lower(differences),
        change=mean_change([float(d) for d in differences]),
        samples=samples[len(samples) // 2] if samples else 0,
    )


def noisy(pairs: Sequence[tuple[CaseResult, CaseResult]]) -> bool:
    """Repeated samples on either side switch the comparison to tests."""
    return any(old.samples > 1 or new.samples > 1 for old, new in pairs)
