"""Scoring the held-out slice, and comparing two runs' slices case by case.

The slice runs as the suite does — the same system, checks, judge and recordings
machinery — over a store held in memory. What leaves this module is a
HoldoutSummary of counts, plus the per-case verdicts sealed with the slice's key,
so the next comparison can count regressions and fixes without any results file
naming a held-out case.

Where it runs: `run`, `record` and `baseline` score it in their own process. `check`
(and the Action) score it in the gate's own process, which never imports the
suite's code, and never in the supervised run, which does: that child does not
get the key. In replay that process reads the sealed recordings; live, it calls
only a hosted system (openai, anthropic) and a hosted judge, since a python or
command system is the suite's own code.

Nothing inside the slice reaches a message: a problem while scoring it (a missing
recording, a template a held-out input does not fit, a crash) becomes a count or a
message that names no case.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gate import checks
from gate.errors import CasegateError, ResultsError
from gate.holdout.keys import DEFAULT_KEY_ENV, HoldoutError, HoldoutKey, from_environment
from gate.holdout.keys import missing_note as key_missing_note
from gate.holdout.loading import load_slice_cases
from gate.holdout.store import (
    Location,
    SealedRecordings,
    locate,
    read_recordings,
    read_slice,
    require_slice_file,
    write_recordings,
)
from gate.holdout.verdicts import previous_reads, seal_verdicts
from gate.judging.live import preflight, start_live
from gate.judging.sample import aggregate, judge_sample, make_grader
from gate.judging.services import build as build_services
from gate.produce.answers import Answer, Request, answer_for, call_live
from gate.produce.progress import Progress
from gate.produce.recordings import request_key, system_fingerprint
from gate.results import CaseResult, HoldoutSummary, RunResults, SampleResult, read_results
from gate.suite.cases import Case
from gate.suite.config import LoadedConfig, Mode
from gate.suite.sections import HoldoutConfig

#: providers whose calls run no code from the repository
HOSTED = frozenset({"openai", "anthropic"})
SELECTION_NOTE = (
    "a run of a selection (--case/--tag) does not score it: how many held-out cases a "
    "pattern matches would tell their ids"
)
SHARD_NOTE = (
    "a shard (--shard I/N) does not score it: `casegate check --parts` scores the whole "
    "slice once, when the parts are merged"
)


@dataclass(slots=True)
class Prepared:
    """A slice read and decrypted, ready to score; or why it will not be scored."""

    location: Location
    holdout: HoldoutConfig
    #: the config whose defaults and thresholds define the held-out cases (the ruler's)
    definitions: LoadedConfig
    key: HoldoutKey | None = None
    skip: str | None = None
    #: why the slice, with its key at hand, must not be scored: it stays unscored, which
    #: `holdout_max_drop` counts as a block (a skip for want of the key never is)
    refuse: str | None = None
    cases: list[Case] = field(default_factory=list)
    store: SealedRecordings | None = None
    rotation: str | None = None


def key_variables(loaded: LoadedConfig, ruling: Any = None) -> list[str]:
    """Every variable a slice's key may be in: the supervised run gets none of them."""
    names = {DEFAULT_KEY_ENV}
    for side in (loaded, ruling.base.loaded if ruling is not None and ruling.base else None):
        if side is not None and side.config.holdout is not None:
            names.add(side.config.holdout.key_env)
    return sorted(names)


def prepare(
    loaded: LoadedConfig,
    *,
    mode: Mode,
    ruling: Any = None,
    environ: Mapping[str, str] | None = None,
    selection: Any = None,
    gate_process: bool = False,
) -> Prepared | None:
    """The slice the ruler declares, decrypted; None when it declares none.

    With a `ruling` whose base holds the ruler, the held-out cases and their thresholds
    come from the base commit. `gate_process`: the gate's own process (`check`), which
    must not run the suite's code.
    """
    base = ruling.base if ruling is not None and ruling.base is not None else None
    definitions = base.loaded if base is not None else loaded
    holdout = definitions.config.holdout
    if holdout is None:
        return None
    location = locate(loaded, holdout, base)
    prepared = Prepared(location, holdout, definitions)
    require_slice_file(location, holdout.key_env)
    prepared.key = from_environment(holdout.key_env, environ)
    if prepared.key is None:
        prepared.skip = key_missing_note(holdout.key_env)
        return prepared
    if selection is not None and not selection.everything:
        prepared.skip = SELECTION_NOTE if selection.filtered else SHARD_NOTE
        return prepared
    sliced = read_slice(location, prepared.key)
    prepared.rotation = sliced.rotation_id or None
    prepared.cases = load_slice_cases(sliced.cases, definitions, location.slice_shown)
    if gate_process and mode != "replay":
        reason = user_code(loaded, prepared.cases) or endpoint_change(
            loaded, base.loaded if base is not None else None, key_variables(loaded, ruling)
        )
        if reason is not None:
            prepared.refuse = reason
            return prepared
    prepared.store = read_recordings(location, prepared.key)
    return prepared


def user_code(loaded: LoadedConfig, cases: Sequence[Case]) -> str | None:
    """Why scoring these cases live would run the suite's own code (None: it would not)."""
    config = loaded.config
    judged = any(checks.uses_judge(case.expect) for case in cases)
    measured = {name for case in cases for name in checks.service_checks(case.expect)}
    services = {"similar": config.embeddings, "moderation": config.moderation}
    found = [("system", config.system.provider)]
    found += [("judge pin", config.judge.provider)] if judged and config.judge else []
    found += [
        (f"{n} service", pin.provider) for n, pin in services.items() if n in measured and pin
    ]
    outside = [(what, provider) for what, provider in found if provider not in HOSTED]
    if not outside:
        return None
    what, provider = outside[0]
    why = f"the {what} is a {provider} one"
    return (
        f"outside replay, the gate's own process scores it only against hosted providers "
        f"(openai, anthropic), and {why}: the suite's own code would see held-out inputs"
    )


#: what says where a system, judge pin or service sends its requests, and with which key
ENDPOINT_KEYS = ("provider", "base_url", "api_key_env", "target", "command")


def _endpoints(loaded: LoadedConfig) -> dict[str, dict[str, Any]]:
    config = loaded.config
    pins: dict[str, Any] = {"system": loaded.resolved_system()}
    for what, pin in (
        ("judge pin", config.judge),
        ("embeddings service", config.embeddings),
        ("moderation service", config.moderation),
    ):
        if pin is not None:
            pins[what] = pin.model_dump(exclude_none=True)
    return {what: {k: found.get(k) for k in ENDPOINT_KEYS} for what, found in pins.items()}


def endpoint_change(
    loaded: LoadedConfig, base: LoadedConfig | None, key_names: Sequence[str]
) -> str | None:
    """Why scoring live would send held-out inputs, or the key, somewhere the base does not.

    The gate's process scores the slice with the pull request's config: its system, judge
    pin and services must reach the servers the base commit's reach, with the same keys,
    and none may present the slice's own key as an API key.
    """
    mine = _endpoints(loaded)
    for what, fields in mine.items():
        if fields.get("api_key_env") in key_names:
            return (
                f"the {what}'s api_key_env names {fields['api_key_env']}, the held-out "
                "slice's key: it would be sent to the server as an API key"
            )
    if base is None:
        return None
    theirs = _endpoints(base)
    for what, fields in mine.items():
        before = theirs.get(what, dict.fromkeys(ENDPOINT_KEYS))
        changed = sorted(key for key in ENDPOINT_KEYS if fields.get(key) != before.get(key))
        if changed:
            return (
                f"the pull request changes where the {what} sends requests "
                f"({', '.join(changed)}): held-out inputs go only where the base commit's do"
            )
    return None


def samples_of(case: Case, definitions: LoadedConfig) -> int:
    """Held-out cases take a fixed number of samples (`samples: auto`: adaptive.start)."""
    configured = definitions.config.samples
    if case.samples:
        return case.samples
    return configured if isinstance(configured, int) else definitions.config.adaptive.start


def score(
    prepared: Prepared,
    loaded: LoadedConfig,
    mode: Mode,
    *,
    baseline: RunResults | None = None,
    only_missing: bool = False,
    show_progress: bool = False,
) -> HoldoutSummary:
    """Run the slice in `mode` against `loaded`'s system: its aggregates, sealed verdicts.

    `baseline` carries the read count forward. In record mode new responses are sealed
    into the slice's recordings file.
    """
    if prepared.refuse is not None:
        return HoldoutSummary(status="unscored", note=prepared.refuse)
    if prepared.skip is not None or prepared.key is None or prepared.store is None:
        return HoldoutSummary(
            status="skipped",
            note=prepared.skip or "",
            max_reads=prepared.holdout.max_reads,
        )
    try:
        results, unscored = _run(prepared, loaded, mode, only_missing, show_progress)
    except KeyboardInterrupt:
        _save(prepared, mode)
        raise
    except HoldoutError:
        raise
    except CasegateError as exc:
        raise HoldoutError(
            f"{prepared.location.slice_shown}: the held-out slice could not be run "
            f"({_kind(exc)}; the message is withheld, as it may name a held-out case): fix it as "
            "you would for the readable cases, e.g. pin the judge or service the slice uses"
        ) from None
    except Exception as exc:
        raise HoldoutError(
            f"{prepared.location.slice_shown}: the held-out slice could not be run "
            f"({type(exc).__name__}; its message is withheld, as it may quote a held-out case)"
        ) from None
    _save(prepared, mode)
    if unscored is not None:
        return HoldoutSummary(
            status="unscored",
            note=unscored,
            rotation=prepared.rotation,
            max_reads=prepared.holdout.max_reads,
        )
    total = sum(case.weight for case in results)
    passed = sum(case.weight for case in results if case.passed)
    return HoldoutSummary(
        status="scored",
        cases=len(results),
        passed=sum(1 for case in results if case.status == "pass"),
        failed=sum(1 for case in results if case.status == "fail"),
        errors=sum(1 for case in results if case.status == "error"),
        pass_rate=round(passed / total, 6) if total else 0.0,
        rotation=prepared.rotation,
        reads=previous_reads(baseline, prepared.rotation) + 1,
        max_reads=prepared.holdout.max_reads,
        verdicts=seal_verdicts(results, prepared.key, prepared.location.suite, prepared.rotation),
    )


def _kind(exc: CasegateError) -> str:
    return {
        "ConfigError": "a configuration problem",
        "MissingRecordingError": "a missing recording",
        "ResultsError": "an unreadable recording",
    }.get(type(exc).__name__, "a problem")


def _save(prepared: Prepared, mode: Mode) -> None:
    if mode == "record" and prepared.store is not None and prepared.store.changed:
        assert prepared.key is not None
        write_recordings(prepared.location, prepared.key, prepared.store)


def _run(
    prepared: Prepared, loaded: LoadedConfig, mode: Mode, only_missing: bool, show_progress: bool
) -> tuple[list[CaseResult], str | None]:
    """The held-out cases' results, or why the slice could not be scored (counts only)."""
    store = prepared.store
    assert store is not None
    cases = prepared.cases
    resolved = loaded.resolved_system()
    fingerprint = system_fingerprint(resolved)
    reuse = mode == "record" and only_missing
    grader = make_grader(loaded, cases, mode, store, reuse_recorded=reuse)
    services = build_services(loaded, cases, mode, store, reuse_recorded=reuse)
    requests = [
        Request(case, index, request_key(fingerprint, case.key_input, index))
        for case in cases
        for index in range(samples_of(case, prepared.definitions))
    ]

    def judge_one(request: Request, answer: Answer) -> SampleResult:
        return judge_sample(request.case, request.sample, answer, loaded, grader, services)

    scored: dict[Request, SampleResult] = {}
    if mode == "replay":
        missing_cases, missing_samples = 0, 0
        for case in cases:
            group = [request for request in requests if request.case is case]
            outputs = store.get_many_dated(case.id, [request.key for request in group])
            absent = sum(1 for output, _ in outputs if output is None)
            if absent:
                missing_cases, missing_samples = missing_cases + 1, missing_samples + absent
                continue
            for request, (output, captured) in zip(group, outputs, strict=True):
                scored[request] = judge_one(request, Answer(output, captured_at=captured))
        if missing_cases:
            return [], (
                f"{missing_cases} held-out case(s) ({missing_samples} sample(s)) have no "
                f"recording in {prepared.location.recordings_shown} for this system (new cases, "
                "or the prompt, model or params changed): a holder of the key runs `casegate "
                "record --only-missing` and commits that file"
            )
        unjudged = len(set(grader.missing)) if grader is not None else 0
        unmeasured = sum(len(set(s.missing)) for s in (services.each if services else []))
        if unjudged or unmeasured:
            return [], (
                f"{unjudged + unmeasured} held-out case(s) have no recorded judge verdict or "
                f"service measurement in {prepared.location.recordings_shown}: a holder of the "
                "key runs `casegate record --only-missing` and commits that file"
            )
    else:
        system = start_live(loaded, cases, resolved, grader, services)

        def work(request: Request) -> SampleResult:
            answer = answer_for(
                system,
                request,
                store,
                mode=mode,
                only_missing=only_missing,
                resolved=resolved,
                fingerprint=fingerprint,
            )
            return judge_one(request, answer)

        progress = (
            Progress(len(requests), f"held-out {mode}", stream=sys.stderr)
            if show_progress and len(requests) >= 20
            else None
        )
        try:
            scored, interrupted = call_live(
                requests, work, concurrency=loaded.config.concurrency, progress=progress
            )
        finally:
            if progress is not None:
                progress.close()
        if interrupted:
            raise KeyboardInterrupt
    results = []
    for case in cases:
        samples = [scored[r] for r in requests if r.case is case and r in scored]
        threshold = case.min_pass_rate
        if threshold is None:
            threshold = prepared.definitions.config.min_pass_rate
        results.append(aggregate(case, samples, threshold))
    return results, None


# --- the entry points the command line and the Action use ---------------------------


def configured_baseline(loaded: LoadedConfig) -> RunResults | None:
    """The config's baseline, for the read count (None when there is none to read)."""
    path = loaded.baseline_path
    if path is None or not path.is_file():
        return None
    try:
        return read_results(path)
    except ResultsError:
        return None


def score_here(
    loaded: LoadedConfig,
    results: RunResults,
    mode: Mode,
    *,
    selection: Any = None,
    only_missing: bool = False,
    show_progress: bool = False,
    baseline: RunResults | None = None,
) -> None:
    """`run`, `record`, `baseline`: score the slice in this process, into `results`."""
    if results.interrupted:
        return
    prepared = prepare(loaded, mode=mode, selection=selection)
    if prepared is None:
        return
    try:
        results.holdout = score(
            prepared,
            loaded,
            mode,
            baseline=baseline if baseline is not None else configured_baseline(loaded),
            only_missing=only_missing,
            show_progress=show_progress,
        )
    except KeyboardInterrupt:
        # The readable cases finished: they are written, the run is marked interrupted.
        results.interrupted = True
        results.holdout = HoldoutSummary(status="unscored", note="interrupted")


def key_for(
    loaded: LoadedConfig | None, environ: Mapping[str, str] | None = None
) -> HoldoutKey | None:
    """The key a comparison reads sealed verdicts with (None: not set, or no slice)."""
    holdout = loaded.config.holdout if loaded is not None else None
    return from_environment(holdout.key_env if holdout else DEFAULT_KEY_ENV, environ)


def summary_line(holdout: HoldoutSummary) -> str:
    """One line for a run's terminal summary."""
    if holdout.status == "skipped":
        return f"held-out slice skipped: {holdout.note}"
    if holdout.status == "unscored":
        return f"held-out slice not scored: {holdout.note}"
    rate = f" ({holdout.pass_rate:.1%})" if holdout.pass_rate is not None else ""
    line = (
        f"held-out slice: {holdout.passed}/{holdout.cases} pass{rate}, {holdout.failed} fail, "
        f"{holdout.errors} error(s); scored {holdout.reads} time(s) since its last rotation"
    )
    if holdout.max_reads is not None and holdout.reads > holdout.max_reads:
        line += f" (more than holdout.max_reads {holdout.max_reads}: rotate it)"
    return line


def validate_line(loaded: LoadedConfig) -> str:
    """`casegate validate`: the slice opens, its cases load and their requests build."""
    prepared = prepare(loaded, mode="replay")
    assert prepared is not None
    shown = prepared.location.slice_shown
    if prepared.skip is not None:
        return f"held-out slice {shown}: not opened: {prepared.skip}"
    try:
        preflight(loaded, prepared.cases, loaded.resolved_system())
        make_grader(
            loaded,
            prepared.cases,
            "replay",
            prepared.store or SealedRecordings({}, shown),
            reuse_recorded=False,
        )
    except CasegateError as exc:
        raise HoldoutError(
            f"{shown}: {len(exc.problems)} problem(s) with the held-out cases' requests or "
            "pins (a template a held-out input does not fit, a judge or service the config "
            "does not pin); the details are withheld, as they name held-out cases"
        ) from None
    responses = prepared.store.responses if prepared.store is not None else 0
    return (
        f"held-out slice {shown}: {len(prepared.cases)} case(s) load, {responses} recorded "
        "response(s)"
    )
