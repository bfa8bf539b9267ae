"""What a verdict says about the instrument it was measured with: the judge's pin and its
calibration held to the suite's bar, and whether the baseline is still the yardstick it
claims to be. Shared by `check` and by `compare`/`gate` (gate.cli.comparing)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gate.checks import RUN_JUDGED
from gate.deciding.ruler import Ruling
from gate.deciding.rules import Verdict
from gate.deciding.staleness import BASE_CONFIG, baseline_warnings, overridden_keys
from gate.judging.calibration import judge_lines, read_calibration
from gate.results import RunResults
from gate.suite.config import LoadedConfig
from gate.suite.sections import CalibrationBar


def with_judge_lines(
    verdict: Verdict, candidate: RunResults, root: Path, bar: CalibrationBar | None = None
) -> Verdict:
    """Add the judge pin and its last calibration, held to the suite's `bar`, to a verdict
    on a run that used it."""
    # The judge, graded or not, and the RAG metrics it answers (checks.RUN_JUDGED).
    uses_judge = any(c.check in RUN_JUDGED for case in candidate.cases for c in case.checks)
    calibration = read_calibration(root / f"{candidate.suite}.judge-calibration.json")
    system = candidate.config.get("system")
    info, warnings = judge_lines(
        candidate.config.get("judge"),
        uses_judge,
        calibration,
        bar,
        system if isinstance(system, dict) else None,
    )
    if not info and not warnings:
        return verdict
    return dataclasses.replace(
        verdict, notes=[*verdict.notes, *warnings], instrument=[*verdict.instrument, *info]
    )


def stale_baseline(baseline: RunResults, loaded: LoadedConfig, ruling: Ruling | None) -> list[str]:
    """Why the baseline may be stale; judged against the base commit's config when the ruler
    comes from one (the pull request's own config differs from the baseline's by design).

    Without one, the config in use is the candidate's: its system (a prompt, a model) is the
    very change this check judges, named in the report's headline, never a stale baseline;
    nor is what `--set` changed on purpose.
    """
    if ruling is not None and ruling.base_config is not None:
        return baseline_warnings(baseline, ruling.base_config, against=BASE_CONFIG)
    ignore = ["system", *overridden_keys(loaded.overrides)]
    return baseline_warnings(baseline, loaded, ignore=ignore)
