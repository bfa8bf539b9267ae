"""The one-shot CI check — run, compare with the baseline, gate, report — shared by
`casegate check` and the GitHub Action."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gate import report
from gate.calibration import judge_lines, read_calibration
from gate.cases import Case
from gate.compare import Comparison, compare
from gate.config import LoadedConfig, Mode
from gate.confirm import confirm
from gate.errors import ConfigError
from gate.files import write_text
from gate.recheck import recheck, snapshot
from gate.results import RunResults, read_results
from gate.ruler import Ruling, restate
from gate.rules import Verdict, decide
from gate.select import Selection, require_same_selection
from gate.supervise import run_supervised


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    candidate: RunResults
    results_path: Path
    #: None when the run was interrupted: a partial run is never gated
    comparison: Comparison | None = None
    verdict: Verdict | None = None
    report_path: Path | None = None
    markdown: str = ""
    #: what the supervised run printed, when captured
    output: str = ""


def with_judge_lines(verdict: Verdict, candidate: RunResults, root: Path) -> Verdict:
    """Add the judge pin and its last calibration to a verdict on a run that used it."""
    uses_judge = any(c.check == "judge" for case in candidate.cases for c in case.checks)
    calibration = read_calibration(root / f"{candidate.suite}.judge-calibration.json")
    info, warnings = judge_lines(candidate.config.get("judge"), uses_judge, calibration)
    if not info and not warnings:
        return verdict
    return dataclasses.replace(
        verdict, notes=[*verdict.notes, *warnings], instrument=[*verdict.instrument, *info]
    )


def baseline_for(loaded: LoadedConfig, explicit: Path | None) -> Path:
    path = explicit or loaded.baseline_path
    if path is None:
        raise ConfigError(
            f"{loaded.path}: no baseline configured: set `baseline:` or pass --baseline PATH "
            "(create one with `casegate baseline`)"
        )
    return Path(path)


def check(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    *,
    baseline_path: Path,
    mode: Mode,
    out: Path,
    report_path: Path | None = None,
    show_progress: bool = True,
    marker: str | None = None,
    notes: Sequence[str] = (),
    ruling: Ruling | None = None,
    capture: bool = False,
    selection: Selection | None = None,
    reap: bool = False,
) -> CheckOutcome:
    """Run the candidate in a supervised child, then compare, gate and report here.

    With a `ruling` (a pull request, or `check --base`), the rule, the baseline and
    the cases' criticality and thresholds are the base commit's unless accepted.
    """
    if ruling is not None:
        baseline_path = ruling.baseline_path
    rule = ruling.rule if ruling is not None else loaded.config.gate
    baseline = read_results(baseline_path)  # read first: a bad baseline costs no calls
    recorded = snapshot(loaded, cases, mode)  # before any of the suite's code runs
    child = run_supervised(
        loaded.path,
        loaded.overrides,
        mode,
        out,
        expected=[case.id for case in cases],
        reference=baseline_path,
        show_progress=show_progress,
        capture=capture,
        selection=selection,
        reap=reap,
    )
    candidate = child.results
    if candidate.interrupted:
        return CheckOutcome(candidate, out, output=child.output)
    candidate = recheck(candidate, loaded, cases, recorded)
    require_same_selection(baseline.selection, candidate.selection)
    if ruling is not None and ruling.base is not None:
        candidate = restate(candidate, ruling.base)
    comparison = compare(baseline, candidate, rule)
    comparison.ruler = ruling.review if ruling is not None else None
    notes = list(notes)
    if mode == "live":
        notes += confirm(comparison, loaded, cases, baseline, rule, show_progress=show_progress)
    # The judge's calibration is read where the ruler is: the base's, in a pull request.
    calibration_root = ruling.base.loaded.root if ruling and ruling.base else loaded.root
    verdict = with_judge_lines(decide(comparison, rule), candidate, calibration_root)
    if notes:
        verdict = dataclasses.replace(verdict, notes=[*notes, *verdict.notes])
    report_path = report_path or out.with_name(f"{candidate.suite}-report.md")
    markdown = report.markdown_report(comparison, verdict, marker=marker)
    write_text(report_path, markdown)
    return CheckOutcome(
        candidate, out, comparison, verdict, report_path, markdown, output=child.output
    )
