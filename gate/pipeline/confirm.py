"""Confirmation reruns: a live check re-tests what would block on fresh samples.

The samples that flagged a drop were chosen for looking bad, so testing them
again would prove nothing. Each flagged case is run again at `confirm_samples`
on the candidate — and on the baseline system too, when its recorded config can
still be run — and only a drop that is significant on the fresh samples blocks.
A suite-level drop is confirmed the same way, on fresh samples of every shared
case. A block then needs both the first test and the fresh one, so confirmation
can only lower the chance of blocking an unchanged system. When the baseline
cannot be run again the confirmation is one-sided (fresh candidate samples
against the baseline samples that raised the flag), and the report says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from gate.deciding.compare import Comparison
from gate.deciding.noise import level
from gate.deciding.noise.analysis import Confirmation, case_test, significant
from gate.deciding.noise.clusters import clusters_of
from gate.deciding.noise.suitetest import suite_test
from gate.errors import CasegateError
from gate.pipeline.run import execute
from gate.results import EPSILON, CaseResult, RunResults
from gate.suite.cases import Case
from gate.suite.config import Config, GateConfig, LoadedConfig


def confirmed_cases(fresh: Sequence[tuple[CaseResult, CaseResult]], rule: GateConfig) -> set[str]:
    """The flagged cases whose drop is significant again on fresh (baseline, candidate)."""
    return set(significant([case_test(old, new) for old, new in fresh], rule, lower=True))


def suite_confirmed(
    fresh: Sequence[tuple[CaseResult, CaseResult]],
    rule: GateConfig,
    clusters: dict[str, str] | None,
) -> bool:
    """A suite-level drop, significant again on fresh samples of every shared case."""
    shares = level.shares(rule, has_critical=any(new.critical for _, new in fresh))
    test = suite_test(fresh, shares.suite, None, clusters)
    return test.p <= test.alpha and -test.mean > rule.tolerance + EPSILON


def baseline_config(baseline: RunResults, loaded: LoadedConfig) -> LoadedConfig:
    """The baseline's own system, prompt text as it was then, ready to run again."""
    data = dict(baseline.config)
    system = dict(data.get("system") or {})
    system.pop("prompt_file", None)  # the file may have changed since; its text is kept
    data["system"] = system
    # Both reruns are judged with today's ruler, so they stay comparable.
    data["judge"] = loaded.config.judge.model_dump() if loaded.config.judge else None
    try:
        config = Config.model_validate(data)
    except ValueError as exc:
        raise CasegateError(f"its recorded config no longer loads ({exc})") from None
    return LoadedConfig(config, loaded.path, [])


def rerun(
    loaded: LoadedConfig, cases: Sequence[Case], show_progress: bool
) -> dict[str, CaseResult]:
    results = execute(loaded, cases, "live", show_progress=show_progress)
    return {case.id: case for case in results.cases if case.status != "error"}


def confirm(
    comparison: Comparison,
    loaded: LoadedConfig,
    cases: Sequence[Case],
    baseline: RunResults,
    rule: GateConfig,
    *,
    show_progress: bool = False,
) -> tuple[Comparison, list[str]]:
    """Re-test the flagged regressions and a flagged suite-level drop; returns the
    comparison as the reruns leave it, and notes for the report."""
    analysis = comparison.noise
    if analysis is None:
        return comparison, []
    flagged = set(comparison.regressions)
    suite_flagged = (
        rule.block_on_pass_rate_drop
        and analysis.suite_p <= analysis.suite_alpha
        and -analysis.change.mean > rule.tolerance + EPSILON
    )
    wanted = flagged | (set(analysis.tests) if suite_flagged else set())
    if not wanted:
        return comparison, []
    subset = [
        case.model_copy(update={"samples": rule.confirm_samples})
        for case in cases
        if case.id in wanted
    ]
    notes = []
    fresh = rerun(loaded, subset, show_progress)
    try:
        fresh_baseline = rerun(baseline_config(baseline, loaded), subset, show_progress)
    except CasegateError as exc:
        fresh_baseline = {}
        notes.append(
            "confirmation is one-sided: it reran the candidate only, against the baseline "
            "samples that raised the flag, because the baseline system could not be run "
            f"again: {'; '.join(exc.problems)}"
        )
    tests = []
    for case_id in sorted(flagged):
        new = fresh.get(case_id)
        old = fresh_baseline.get(case_id) or comparison.baseline_cases[case_id]
        if new is None:
            notes.append(f"{case_id}: the confirmation rerun errored; the first verdict stands")
            continue
        tests.append((case_test(old, new), case_id in fresh_baseline))
    confirmed = set(significant([test for test, _ in tests], rule, lower=True))
    confirmations = {
        test.id: Confirmation(test.id in confirmed, test, baseline_rerun)
        for test, baseline_rerun in tests
    }
    suite_result = analysis.suite_confirmed
    if suite_flagged:
        note, suite_result = _confirm_suite(comparison, fresh, fresh_baseline, rule, loaded)
        notes.append(note)
    cleared = sorted(i for i, c in confirmations.items() if not c.confirmed)
    passing = [i for i in cleared if comparison.candidate_cases[i].passed]
    failing = [i for i in cleared if not comparison.candidate_cases[i].passed]
    analysis = dataclasses.replace(
        analysis,
        confirmations={**analysis.confirmations, **confirmations},
        within_noise=sorted({*analysis.within_noise, *cleared}),
        suite_confirmed=suite_result,
    )
    comparison = dataclasses.replace(
        comparison,
        noise=analysis,
        regressions=[i for i in comparison.regressions if i not in cleared],
        unchanged_pass=sorted([*comparison.unchanged_pass, *passing]),
        unchanged_fail=sorted([*comparison.unchanged_fail, *failing]),
    )
    return comparison, notes


def _confirm_suite(
    comparison: Comparison,
    fresh: dict[str, CaseResult],
    fresh_baseline: dict[str, CaseResult],
    rule: GateConfig,
    loaded: LoadedConfig,
) -> tuple[str, bool | None]:
    """The suite-level drop, tested again on fresh samples of every shared case: a note,
    and whether it held (None: it could not be re-tested)."""
    analysis = comparison.noise
    assert analysis is not None
    shared = [i for i in sorted(analysis.tests) if i in fresh]
    pairs = [(fresh_baseline.get(i) or comparison.baseline_cases[i], fresh[i]) for i in shared]
    clustered = clusters_of(fresh.values(), loaded.as_dict())
    if not pairs:
        return "the suite-level drop could not be re-tested (every rerun errored); it stands", None
    held = suite_confirmed(pairs, rule, clustered)
    sides = "both sides" if fresh_baseline else "the candidate only (one-sided)"
    verdict = "confirmed" if held else "NOT confirmed"
    return (
        f"suite-level drop {verdict} on fresh samples of {len(pairs)} shared cases "
        f"({rule.confirm_samples} each, {sides})"
    ), held
