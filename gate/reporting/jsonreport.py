"""The comparison as JSON (`casegate compare --format json`): every list and figure, for
machines. Its keys are a contract: new ones may come, none goes."""

from __future__ import annotations

from typing import Any

from gate.deciding.compare import Comparison
from gate.deciding.noise.analysis import NoiseAnalysis
from gate.deciding.rules import Verdict
from gate.reporting.sections import case_verdict


def json_report(comparison: Comparison, verdict: Verdict) -> dict[str, Any]:
    def side(s: Any) -> dict[str, Any]:
        return {"system": s.system, "pass_rate": s.pass_rate, "passed": s.passed, "cases": s.cases}

    return {
        "verdict": verdict.decision,
        "reasons": [reason.to_dict() for reason in verdict.reasons],
        "notes": verdict.notes,
        "instrument": verdict.instrument,
        "suite": comparison.suite,
        "baseline": side(comparison.baseline),
        "candidate": side(comparison.candidate),
        "shared": {
            "cases": comparison.shared_cases,
            "baseline_pass_rate": comparison.shared_baseline_rate,
            "candidate_pass_rate": comparison.shared_candidate_rate,
        },
        "regressions": comparison.regressions,
        "critical_regressions": comparison.critical(comparison.regressions),
        "fixes": comparison.fixes,
        "unchanged_pass": comparison.unchanged_pass,
        "unchanged_fail": comparison.unchanged_fail,
        "errors": comparison.errors,
        "added": comparison.added,
        "removed": comparison.removed,
        "changed": comparison.changed,
        "system_changes": {k: list(v) for k, v in comparison.system_changes.items()},
        "ruler_changes": comparison.ruler_changes,
        "scope": comparison.scope,
        "allowed_config_changes": comparison.allowed_changes,
        "ruler": None if comparison.ruler is None else comparison.ruler.to_dict(),
        "baseline_warnings": comparison.warnings,
        "recording_warnings": comparison.recording_warnings,
        "usage": {delta.name: delta.to_dict() for delta in comparison.usage},
        "flaky": [i for i, case in sorted(comparison.candidate_cases.items()) if case.flaky],
        "judge_noisy": comparison.judge_noisy,
        "noise": None if comparison.noise is None else _noise_json(comparison, comparison.noise),
        "pairwise": None if comparison.pairwise is None else comparison.pairwise.to_dict(),
        # per check each case's change in mean score, the suite's test; pass^k and pass@k
        "scores": None if comparison.scores is None else comparison.scores.to_dict(),
        "holdout": None if comparison.holdout is None else comparison.holdout.to_dict(),
        "history": None if comparison.history is None else comparison.history.to_dict(),
        "sampling": (
            None
            if comparison.sampling is None
            else comparison.sampling.to_dict(comparison.regressions, comparison.candidate_cases)
        ),
        # Live or replayed: the candidate's mode, and for a replay what it rests on.
        "mode": comparison.replay.mode if comparison.replay is not None else None,
        "replay": (
            comparison.replay.to_dict()
            if comparison.replay is not None and comparison.replay.replayed
            else None
        ),
    }


def _noise_json(comparison: Comparison, analysis: NoiseAnalysis) -> dict[str, Any]:
    change = analysis.change
    return {
        "suite_p_value": analysis.suite_p,
        "suite_alpha": analysis.suite_alpha,
        "alpha_shares": {
            "critical": analysis.shares.critical,
            "suite": analysis.shares.suite,
            "pairwise": analysis.shares.pairwise,
        },
        "clusters": analysis.clusters,
        "design_effect": analysis.design_effect,
        "run_shift_variance": analysis.run_shift,
        "run_spread": None if analysis.run_spread is None else analysis.run_spread.to_dict(),
        "shift_explained": analysis.shift_explained,
        "spread_beside": {
            case_id: spread.to_dict() for case_id, spread in analysis.spread_beside.items()
        },
        "suite_confirmed": analysis.suite_confirmed,
        "mean_change": change.mean,
        "mean_change_ci": [change.low, change.high],
        "shared_cases": change.cases,
        "within_noise": analysis.within_noise,
        "cases": {
            case_id: {
                "critical": test.critical,
                "baseline": [test.base_passes, test.base_samples],
                "candidate": [test.cand_passes, test.cand_samples],
                "baseline_ci": list(test.base_interval),
                "candidate_ci": list(test.cand_interval),
                "p_lower": test.p_lower,
                "p_higher": test.p_higher,
                "verdict": case_verdict(case_id, comparison, analysis),
            }
            for case_id, test in analysis.tests.items()
            if case_id in comparison.regressions
            or case_id in comparison.fixes
            or case_id in analysis.within_noise
        },
        "confirmed": sorted(i for i, c in analysis.confirmations.items() if c.confirmed),
        "not_confirmed": sorted(i for i, c in analysis.confirmations.items() if not c.confirmed),
    }
