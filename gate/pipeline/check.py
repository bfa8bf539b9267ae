"""`casegate check` and the GitHub Action's check, as a pipeline of stages:

    read_ground        the baseline, the rule and everything else the candidate is held
                       to, read before any of the suite's code runs         -> Ground
    verify_changed     with `verify: changed`, the recordings the change added or changed
                       made again by CI, live (gate.pipeline.verify)        -> Verification
    produce_and_judge  the outputs (from the recordings in replay, else a supervised
                       run), each judged once by this process, and how often
                       the judge disagreed with itself (judge.consistency)    -> Judged
    like_with_like     the baseline judged again when another judge pin scored
                       it (gate.judging.rejudge)                            -> Ground
    compared           case by case against the baseline, built whole       -> Comparison
    decided            the written rule, with the judge's standing          -> Verdict
    markdown_report    what the pull request's comment says, ending with the suite's
                       figures (gate.suite.composition)                    -> str
    record_run         under `history: {record: all}`, a complete run outside a pull
                       request joins the history (gate.history.autorecord) -> str | None

Each stage is a function taking what the stages before it built; `check` calls them in
order. The CLI and the Action call `check`.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gate.deciding.compare import Comparison, compare
from gate.deciding.noise.runspread import RunSpread
from gate.deciding.recheck import Recorded, costed, recheck, snapshot
from gate.deciding.ruler import Ruling, restate
from gate.deciding.rulerside import RulerReview
from gate.deciding.rules import Verdict, decide
from gate.deciding.treediff import footprint_changes
from gate.drift import replayed
from gate.drift.age import replay_warnings
from gate.errors import ConfigError, ResultsError
from gate.files import write_text
from gate.history.autorecord import record_run
from gate.history.report import trusted_notes
from gate.history.spread import trusted_spread
from gate.holdout import scoring as holdout
from gate.holdout.verdicts import compare_runs
from gate.judging import consistency, judgeproc, pairwise, rejudge
from gate.judging.judgeproc import CustomVerdicts
from gate.logsafe import flatten
from gate.outputs import Output
from gate.pipeline.candidate import merged_parts, restamped
from gate.pipeline.confirm import confirm
from gate.pipeline.givens import judging_tree, sandbox_plan, withheld
from gate.pipeline.livejudge import judge_live
from gate.pipeline.replay import replayed_candidate
from gate.pipeline.run import adopt_recorded
from gate.pipeline.standing import stale_baseline, with_judge_lines
from gate.pipeline.verify import (
    Verification,
    measured_into,
    sealed_manifest,
    setting,
    verify_changed,
)
from gate.produce.sandbox import SandboxMode, SandboxPlan
from gate.produce.supervise import run_supervised
from gate.reporting import report, viewer
from gate.reporting.composition import composition_of
from gate.results import CaseOutputs, RunResults, read_results, write_results
from gate.secrets import hide_from_proc
from gate.suite.cases import Case
from gate.suite.config import LoadedConfig, Mode
from gate.suite.sections import GateConfig
from gate.suite.select import Selection, require_same_selection


@dataclass(frozen=True, slots=True)
class CheckOutcome:
    candidate: RunResults
    results_path: Path
    #: None when the run was interrupted: a partial run is never gated
    comparison: Comparison | None = None
    verdict: Verdict | None = None
    report_path: Path | None = None
    markdown: str = ""
    #: the HTML viewer, beside the markdown report (gate.reporting.viewer)
    viewer_path: Path | None = None
    #: what the supervised run printed, when captured
    output: str = ""
    #: which protections the run had (gate.produce.sandbox), for the log
    sandbox: tuple[str, ...] = ()
    #: the cases `verify: changed` recorded again before the check (gate.pipeline.verify)
    verified: tuple[str, ...] = ()
    #: the manifest of what verification wrote and sealed, for the baseline refresh to
    #: adopt after the merge (gate.produce.verified; None: nothing sealed)
    manifest: Path | None = None
    #: under `history: {record: all}`, what joined the history or why nothing did
    #: (gate.history.autorecord); None under `record: baseline`
    history: str | None = None

    @property
    def part(self) -> bool:
        """One shard's results: written for `casegate merge`, never gated on its own."""
        return self.candidate.shard is not None


def baseline_for(loaded: LoadedConfig, explicit: Path | None) -> Path:
    path = explicit or loaded.baseline_path
    if path is None:
        raise ConfigError(
            f"{loaded.path}: no baseline configured: set `baseline:` or pass --baseline PATH "
            "(create one with `casegate baseline`)"
        )
    return Path(path)


@dataclass(frozen=True, slots=True)
class Ground:
    """What the check judges against, read before any of the suite's code runs: the
    baseline and rule (the base's under a ruling), the base's history, the recordings
    and pairwise verdicts the candidate is held to, the held-out slice, the sandbox."""

    baseline_path: Path
    baseline: RunResults
    rule: GateConfig
    run_spread: RunSpread | None
    recorded: Recorded | None
    pair_verdicts: dict[tuple[str, str], Output] | None
    held_out: holdout.Prepared | None
    plan: SandboxPlan


@dataclass(frozen=True, slots=True)
class Judged:
    """The candidate with every sample judged by the gate, and what producing it said."""

    candidate: RunResults
    #: the ruler's review, with what the custom checks read that the pull request changed
    review: RulerReview | None
    output: str = ""
    said: tuple[str, ...] = ()


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
    environ: Mapping[str, str] | None = None,
    parts: Sequence[Path] = (),
    sandbox: SandboxMode = "auto",
    verify: str | None = None,
    head: str | None = None,
    link: str | None = None,
) -> CheckOutcome:
    """Ground, produce and judge, compare, decide, report: the check every pull request gets.

    With a `ruling` (a pull request, or `check --base`), the rule, the baseline and
    the cases' criticality and thresholds are the base commit's unless accepted.
    In replay the gate produces the candidate from the recordings itself; otherwise a
    supervised child runs the suite. With `parts`, the candidate is the shards' parts
    merged (gate.produce.merge). Either way the gate judges every output once. With a
    shard in `selection`, the run is one part: judged and written, never compared or gated.
    `head` is the commit under test (a pull request's head): what verification sealed is
    written beside the results bound to it. `link` is where the report's reader finds the
    HTML viewer (the Action: the run's artifacts), said in the markdown report.
    """
    # The supervised run never gets the slice's key; nor may it read it where the kernel
    # shows this process's starting environment.
    hide_from_proc(holdout.key_variables(loaded, ruling))
    ground = read_ground(loaded, cases, mode, baseline_path, ruling, environ, selection, sandbox)
    verified = Verification()
    if mode == "replay" and not parts and setting(loaded, ruling, verify) == "changed":
        if selection is not None and selection.shard is not None:
            # Each shard's job has a checkout of its own: what it recorded would not be
            # what the merging job replays.
            verified = Verification(said=("verify: not run in a shard's job",))
        else:
            # After the ground is read (the run's code never sees the baseline it is held
            # to), before the recordings are: the replay judges what CI recorded.
            verified = verify_changed(
                loaded, cases, ruling, environ,
                plan=sandbox_plan(sandbox, loaded, "record", environ, cases),
                withhold=withheld(loaded, ruling, "record"),
                results=out.with_name(f"{out.stem}-verify.json"), capture=capture, reap=reap,
            )  # fmt: skip
        if verified.recorded:
            ground = dataclasses.replace(
                ground,
                recorded=snapshot(loaded, cases, mode),
                pair_verdicts=pairwise.snapshot(loaded, cases, ruling, mode),
            )
    manifest = sealed_manifest(loaded, verified, head, out)
    judged = produce_and_judge(
        loaded, cases, mode, ground, ruling, environ=environ, selection=selection, parts=parts,
        out=out, show_progress=show_progress, capture=capture, reap=reap,
    )  # fmt: skip
    said = (*(flatten(line) for line in verified.said), *judged.said)
    judged = dataclasses.replace(judged, said=said)
    candidate = judged.candidate
    if candidate.interrupted or candidate.shard is not None:
        # A partial run is never gated; a shard's part is the gate's account, for the merge.
        if not candidate.interrupted:
            write_results(candidate, out)
        return CheckOutcome(candidate, out, output=judged.output, sandbox=judged.said)
    # The gate's own account, never the run's: the run left its verdicts to this process.
    write_results(candidate, out)
    require_same_selection(ground.baseline.selection, candidate.selection)
    ground, rejudged_line = like_with_like(loaded, cases, mode, ground, ruling, parts)
    held_out = ground.held_out
    if held_out is not None:
        candidate.holdout = holdout.score(held_out, loaded, mode, baseline=ground.baseline)
        write_results(candidate, out)  # with the slice's aggregates
    comparison = compared(loaded, cases, mode, ground, ruling, candidate, judged.review)
    notes = list(notes)
    replay = comparison.replay
    if replay is not None and replay.code_changed and replay.changed == 0:
        # Not a block (replay judges recorded answers by design, and the report says so), but
        # beside the verdict: a ship here says nothing of the new code.
        notes.append(
            f"the system's code changed ({', '.join(replay.code_changed[:5])}) and no "
            "recording did: this verdict judges the old code's answers; bump `system.version` "
            "and record again to judge the new code"
        )
    if mode == "live" and ruling is None:
        comparison, confirmed = confirm(
            comparison, loaded, cases, ground.baseline, ground.rule, show_progress=show_progress
        )
        notes += confirmed
    elif mode == "live":
        # Confirmation reruns run the system in this process: never a pull request's code.
        notes.append(
            "confirmation reruns are not made under a ruling: they would run the pull "
            "request's code outside the sandbox"
        )
    verdict = decided(comparison, ground.rule, candidate, loaded, ruling, notes)
    if rejudged_line is not None:
        verdict = dataclasses.replace(verdict, instrument=[*verdict.instrument, rejudged_line])
    report_path = report_path or out.with_name(f"{candidate.suite}-report.md")
    # The suite as the checked tree holds it: counts only (the held-out slice is not in it).
    suite = composition_of(loaded, cases)
    selected = selection is not None and selection.filtered
    markdown = report.markdown_report(
        comparison, verdict, marker=marker, composition=suite, selected=selected, link=link
    )
    write_text(report_path, markdown)
    viewer_path = viewer_beside(report_path)
    viewer.write_page(viewer_path, viewer.comparison_page(comparison, verdict))
    # A complete run outside a pull request joins the history when `record: all` asks.
    recorded = record_run(loaded, cases, candidate, ruled=ruling is not None, environ=environ)
    return CheckOutcome(
        candidate, out, comparison, verdict, report_path, markdown, viewer_path,
        output=judged.output, sandbox=judged.said, verified=verified.recorded,
        manifest=manifest, history=recorded,
    )  # fmt: skip


def viewer_beside(report_path: Path) -> Path:
    """`SUITE-report.md` → `SUITE-report.html` (a report already named .html keeps its name)."""
    page = report_path.with_suffix(".html")
    return page if page != report_path else report_path.with_name(report_path.name + ".view.html")


def read_ground(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    mode: Mode,
    baseline_path: Path,
    ruling: Ruling | None,
    environ: Mapping[str, str] | None,
    selection: Selection | None,
    sandbox: SandboxMode,
) -> Ground:
    """Stage 1: everything the candidate is held to, read first (a bad baseline costs no
    calls; nothing the suite's code could rewrite is read after it runs)."""
    if ruling is not None:
        baseline_path = ruling.baseline_path
    baseline = read_results(baseline_path)
    return Ground(
        baseline_path=baseline_path,
        baseline=baseline,
        rule=ruling.rule if ruling is not None else loaded.config.gate,
        # From repeated trusted runs (the base's history), never the candidate's.
        run_spread=trusted_spread(loaded, ruling, baseline),
        recorded=snapshot(loaded, cases, mode),
        pair_verdicts=pairwise.snapshot(loaded, cases, ruling, mode),
        # The held-out slice is decrypted and scored here, never in the child (no key).
        held_out=holdout.prepare(
            loaded,
            mode=mode,
            ruling=ruling,
            environ=environ,
            selection=selection,
            gate_process=True,
        ),
        plan=sandbox_plan(sandbox, loaded, mode, environ, cases),
    )


def produce_and_judge(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    mode: Mode,
    ground: Ground,
    ruling: Ruling | None,
    *,
    environ: Mapping[str, str] | None,
    selection: Selection | None,
    parts: Sequence[Path],
    out: Path,
    show_progress: bool,
    capture: bool,
    reap: bool,
) -> Judged:
    """Stages 2 and 3: the candidate's outputs, each judged once by this process.

    Custom checks are judged in a process of their own, from the base's tree under a
    ruling; every other check here. In replay no code of the suite runs at all."""
    imports, tree = judging_tree(loaded, ruling)
    ruler_cases = ruling.base.case_map if ruling is not None and ruling.base else None
    ruler = ruling.base.loaded if ruling is not None and ruling.base is not None else None

    def judge_custom(produced: Sequence[CaseOutputs]) -> CustomVerdicts | None:
        return judgeproc.judge_custom(
            produced, cases, imports=imports, tree=tree, sandbox=ground.plan,
            environ=environ, ruler_cases=ruler_cases,
        )  # fmt: skip

    said = tuple(ground.plan.describe())
    output = ""
    if ground.recorded is not None and not parts:
        candidate, custom = replayed_candidate(
            loaded, cases, ground.recorded, reference=ground.baseline,
            selection=selection.to_dict() if selection is not None else None,
            ruler=ruler, judge_custom=judge_custom,
        )  # fmt: skip
        # The sandbox held only the custom checks' process: with none, nothing of the suite
        # ran, and lines about what confined it would describe a run that never happened.
        said = (REPLAYED_IN_GATE, *(said if custom is not None else ()))
        # How often the judge disagrees with itself: asked as the replay asked its verdicts,
        # as often as the ruler's pin says.
        candidate = consistency.asked_again(candidate, cases, loaded, "replay", ruled_by=ruler)
        if selection is not None and selection.shard is not None:
            candidate.shard = selection.shard.to_dict()
    else:
        # A recording run records into a folder of its own; the gate keeps what it judged.
        kept = Path(tempfile.mkdtemp(prefix="casegate-recorded-")) if mode == "record" else None
        try:
            if parts:
                candidate = merged_parts(parts, loaded, cases, mode, selection)
            else:
                child = run_supervised(
                    loaded.path,
                    loaded.overrides,
                    mode,
                    out,
                    expected=[case.id for case in cases],
                    reference=ground.baseline_path,
                    show_progress=show_progress,
                    capture=capture,
                    selection=selection,
                    reap=reap,
                    withhold=withheld(loaded, ruling, mode),
                    sandbox=ground.plan,
                    # Its verdicts would be its claim: every output is judged once, below.
                    gate_judges=True,
                    recordings_into=kept,
                )
                candidate, output = child.results, child.output
                said += child.sandbox_notes
                if candidate.interrupted:
                    return Judged(candidate, None, output, said)
            if not parts:  # the judge's verdicts are the gate's, asked under the ruler's pin
                judge_live(candidate, cases, ruler or loaded, mode)
            costed(candidate.cases, ruler)  # the custom checks judge the ruler's cost
            custom = judge_custom(candidate.cases)
            candidate = recheck(
                candidate, loaded, cases, ground.recorded, reference=ground.baseline,
                shards=len(parts) if parts else None,  # a merge holds each shard exactly once
                custom=custom, ruler=ruler,
            )  # fmt: skip
            # Asked as judge_live asked the verdicts (a merge of parts: as the parts' replay
            # asked them), before the measures are copied.
            if parts and mode == "replay":
                candidate = consistency.asked_again(
                    candidate, cases, loaded, "replay", ruled_by=ruler
                )
            else:
                candidate = consistency.asked_again(candidate, cases, ruler or loaded, mode)
            if kept is not None and not parts:  # only a run the gate could trust
                said += (adopt_recorded(loaded, cases, candidate, kept),)
                measured_into(loaded, ruler or loaded, cases, candidate)
        finally:
            if kept is not None:
                shutil.rmtree(kept, ignore_errors=True)
    if custom is not None and custom.network is not None:
        said += (f"sandbox: the judging process's network: {custom.network}",)
    candidate = restamped(candidate, loaded, mode)
    review = ruling.review if ruling is not None else None
    if ruling is not None and custom is not None and ruling.base_tree and ruling.head_tree:
        found = footprint_changes(custom.footprint, ruling.base_tree, ruling.head_tree)
        review = ruling.with_changes(found)
    if ruling is not None and ruling.base is not None:
        candidate = restate(candidate, ruling.base)
    return Judged(candidate, review, output, said)


def like_with_like(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    mode: Mode,
    ground: Ground,
    ruling: Ruling | None,
    parts: Sequence[Path],
) -> tuple[Ground, str | None]:
    """Stage 3b: when another judge pin scored the baseline, its outputs judged again by
    the pin that judged the candidate, asked the way the candidate's verdicts were
    (gate.judging.rejudge); and the line the report states."""
    ruler = ruling.base.loaded if ruling is not None and ruling.base is not None else None
    if ground.recorded is not None and not parts:
        if ruling is not None and rejudge.differs(ground.baseline, loaded):
            # The verdicts would come from the pull request's recordings, keyed on the
            # baseline's outputs: nothing counts or seals those, so they are its claim.
            raise ResultsError(rejudge.IN_A_PULL_REQUEST)
        baseline, line = rejudge.rejudged(ground.baseline, cases, loaded, "replay")
    else:
        baseline, line = rejudge.rejudged(ground.baseline, cases, ruler or loaded, mode)
    return dataclasses.replace(ground, baseline=baseline), line


def compared(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    mode: Mode,
    ground: Ground,
    ruling: Ruling | None,
    candidate: RunResults,
    review: RulerReview | None,
) -> Comparison:
    """Stage 4: case by case against the baseline, with every stage input built in."""
    held_out = ground.held_out
    comparison = compare(
        ground.baseline,
        candidate,
        ground.rule,
        ruler=review,
        warnings=stale_baseline(ground.baseline, loaded, ruling),
        # Judged here, never by a run: the pairs are part of the verdict.
        pairwise=pairwise.for_check(
            loaded, cases, ruling, ground.baseline, candidate, mode, ground.pair_verdicts
        ),
        # Case by case with the slice's key, else its aggregates.
        holdout=compare_runs(
            ground.baseline, candidate, held_out.key if held_out is not None else None
        ),
        run_spread=ground.run_spread,
        recording_warnings=replay_warnings(candidate),
        replay=replayed.for_check(loaded, cases, candidate, ground.recorded, ruling),
    )
    # The base commit's history under a ruling: the pull request's copy is its own claim.
    return dataclasses.replace(
        comparison, history=trusted_notes(comparison, candidate, loaded, ruling)
    )


def decided(
    comparison: Comparison,
    rule: GateConfig,
    candidate: RunResults,
    loaded: LoadedConfig,
    ruling: Ruling | None,
    notes: Sequence[str],
) -> Verdict:
    """Stage 5: the written rule applied, with the judge's standing beside it."""
    # The judge's calibration is read where the ruler is: the base's, in a pull request.
    ruler = ruling.base.loaded if ruling and ruling.base else loaded
    verdict = with_judge_lines(
        decide(comparison, rule), candidate, ruler.root, ruler.config.calibration
    )
    if notes:
        verdict = dataclasses.replace(verdict, notes=[*notes, *verdict.notes])
    return verdict


#: what a replayed check says of its run, in place of a run's sandbox report
REPLAYED_IN_GATE = (
    "replay: no code of the suite ran to produce the outputs (they are the recordings, "
    "read by the gate)"
)
