"""`verify: changed`: a pull request's replayed check first records again, itself, the
requests whose recordings the change added or changed.

A replayed verdict judges recordings, and those a pull request changed are its author's:
one draw of several, perhaps, or edited by hand. With `verify: changed`, before anything
is read or judged, the gate runs those cases live in a supervised run (sandboxed, with
the repository's provider key), asks the pinned judge about the new answers itself, and
seals what it judged (gate.produce.seal). The replayed check that follows then judges
CI's answers, and its report names them as sealed by CI. Without the provider key (a
fork's pull request has no secrets) nothing is recorded: the report says so, and the
gate rule `unverified_critical` decides on the critical cases left on the author's
recordings.

The setting is the base commit's under a ruling (a pull request cannot switch off its own
verification), unless the Action's `verify` input or `check --verify` names one.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gate import checks
from gate.deciding.replayed import listed
from gate.deciding.ruler import Ruling
from gate.drift.replayed import (
    base_store,
    changed_measures,
    measure_keys,
    pairwise_fingerprint,
    ruled_asks,
)
from gate.errors import CasegateError, SystemCallError
from gate.judging import consistency
from gate.judging.judge import recorded_contexts
from gate.judging.services import build as build_services
from gate.logsafe import flatten
from gate.pipeline.livejudge import judge_live
from gate.pipeline.run import adopt_recorded
from gate.produce.answers import samples_for
from gate.produce.dryrun import describe, plan_calls
from gate.produce.recordings import RecordingStore, request_key, system_fingerprint
from gate.produce.sandbox import SandboxPlan
from gate.produce.seal import held
from gate.produce.supervise import run_supervised
from gate.produce.verified import MANIFEST, Entries, seals_of, write_manifest, written_since
from gate.results import RunResults
from gate.suite.cases import Case
from gate.suite.config import LoadedConfig
from gate.suite.select import Selection

VERIFY_SETTINGS = ("off", "changed")


@dataclass(frozen=True, slots=True)
class Verification:
    """What `verify: changed` did, for the log: the cases recorded again, and why not."""

    recorded: tuple[str, ...] = ()
    said: tuple[str, ...] = ()
    #: what it wrote and sealed, case → request → entry, for the manifest the baseline
    #: refresh adopts after the merge (gate.produce.verified; empty without the key)
    entries: Entries = dataclasses.field(default_factory=dict)


def setting(loaded: LoadedConfig, ruling: Ruling | None, requested: str | None) -> str:
    """`off` or `changed`: as asked, else the base's config under a ruling, else the suite's."""
    if requested is not None:
        return requested
    source = ruling.base.loaded if ruling is not None and ruling.base is not None else loaded
    return source.config.verify


def needed_keys(loaded: LoadedConfig, cases: Sequence[Case]) -> list[str]:
    """The variables a live recording of `cases` reads a provider key from."""
    needed = []
    pins = [loaded.config.system.model_dump()]
    if loaded.config.judge is not None and any(checks.uses_judge(c.expect) for c in cases):
        pins.append(loaded.config.judge.model_dump())
    for pin in pins:
        variable = pin.get("api_key_env") or {
            "openai": "OPENAI_API_KEY",
            "anthropic": "ANTHROPIC_API_KEY",
        }.get(str(pin.get("provider")))
        if isinstance(variable, str) and variable not in needed:
            needed.append(variable)
    return needed


def changed_cases(loaded: LoadedConfig, cases: Sequence[Case], ruling: Ruling) -> list[str]:
    """The cases with a recording a replay may read that the base commit's recordings lack
    or hold otherwise, or with a sample the replay needs and no recording has."""
    base = base_store(loaded, ruling)
    mine = RecordingStore(loaded.recordings_dir)
    fingerprint = system_fingerprint(loaded.resolved_system())
    changed = []
    for case in cases:
        fixed = samples_for(case, loaded)
        count = fixed or loaded.config.adaptive.max
        keys = [request_key(fingerprint, case.key_input, index) for index in range(count)]
        try:
            now = mine.get_many_dated(case.id, keys)
            before = base.get_many_dated(case.id, keys) if base is not None else []
        except CasegateError:
            changed.append(case.id)  # unreadable: recorded again, never judged as it is
            continue
        before = before or [(None, None)] * len(keys)
        needed = fixed or loaded.config.adaptive.start
        texts = [output.text for output, _ in now if output is not None]
        contexts = [output.contexts for output, _ in now if output is not None]
        try:
            keys = measure_keys(loaded, case, texts, ruled_asks(ruling), contexts)
            verdicts = changed_measures(
                mine, base, case.id, keys, pairwise_fingerprint(loaded, case)
            )
        except CasegateError:
            verdicts = {"unreadable": {}}
        if (
            any(output is None for output, _ in now[:needed])
            or any(new[0] is not None and new != old for new, old in zip(now, before, strict=True))
            or verdicts  # a judge's verdict edited, its answer left alone
        ):
            changed.append(case.id)
    return changed


def verify_changed(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    ruling: Ruling | None,
    environ: Mapping[str, str] | None,
    *,
    plan: SandboxPlan,
    withhold: Sequence[str],
    results: Path,
    capture: bool,
    reap: bool,
) -> Verification:
    """Record again, live and supervised, the cases whose recordings the change added or
    changed; judge and seal the answers here. Nothing without a ruling to compare with."""
    if ruling is None or ruling.base_tree is None or ruling.head_tree is None:
        return Verification(said=("verify: changed needs a base to compare with (--base)",))
    ids = changed_cases(loaded, cases, ruling)
    if not ids:
        return Verification(said=("verify: no recording changed against the base commit",))
    # The base's pins say which keys it takes and who is asked: a pull request that points
    # the system elsewhere, or names another key, gets no recording made with the key.
    ruler = ruling.base.loaded if ruling.base is not None else loaded
    moved = _transport_change(loaded, ruler)
    if moved:
        # The base asked for verification and the change itself prevents it: no verdict.
        raise CasegateError(
            f"verify: the pull request changes {moved}, and CI records only where and with "
            "the key the base does; make that change on its own, or turn verification off "
            "on the base, then rerun"
        )
    judged = any(checks.uses_judge(case.expect) for case in cases)
    if judged and loaded.config.judge != ruler.config.judge:
        return Verification(
            said=(
                "verify: not run: the pull request changes the judge pin (a ruler change); "
                + _AUTHORS.format(len(ids)),
            )
        )
    source = os.environ if environ is None else environ
    needed = dict.fromkeys([*needed_keys(ruler, cases), *needed_keys(loaded, cases)])
    missing = [name for name in needed if not source.get(name)]
    if missing:
        return Verification(
            said=(
                f"verify: {len(ids)} case(s) on changed recordings were not recorded again: "
                f"{', '.join(missing)} is not set (a fork's pull request has no secrets); "
                "they are judged on the author's recordings",
            )
        )
    chosen = [case for case in cases if case.id in set(ids)]
    # What it will spend, said before it is spent (as `record --dry-run` says it).
    planned = plan_calls(loaded, chosen, only_missing=False, estimate=False)
    asked = sum(1 for case in chosen if checks.uses_judge(case.expect))
    for line in describe(loaded, planned, judged=asked)[:-1]:  # not "nothing was called"
        print(flatten(f"verify: {line.removeprefix('dry run: ')}"), file=sys.stderr, flush=True)
    before = seals_of(RecordingStore(loaded.recordings_dir), ids)
    kept = Path(tempfile.mkdtemp(prefix="casegate-verify-"))
    try:
        child = run_supervised(
            loaded.path,
            loaded.overrides,
            "record",
            results,
            expected=ids,
            selection=Selection(tuple(ids)),
            show_progress=False,
            capture=capture,
            reap=reap,
            withhold=withhold,
            sandbox=plan,
            gate_judges=True,  # the judge is asked here, below, never by the run
            recordings_into=kept,  # the run's recordings are its claim until checked here
        )
        recorded = child.results
        if recorded.interrupted:
            raise CasegateError("verify: the run that records the changed cases was interrupted")
        failed = sorted(case.id for case in recorded.cases if case.status == "error")
        if failed:
            # An error is never a pass: judged on the author's recordings instead, a case
            # whose call failed (or that the run made fail) would escape verification.
            raise CasegateError(
                f"verify: {len(failed)} case(s) could not be recorded again (a call failed): "
                f"{listed(tuple(failed))}; the check cannot judge them on CI's answers, rerun it"
            )
        said = [f"verify: recorded again by CI, live: {listed(tuple(ids))}", *child.sandbox_notes]
        said.append(adopt_recorded(loaded, chosen, recorded, kept))
        # Asked here under the base's config (its code, for a python judge; its endpoint
        # and key), recorded and sealed, then put beside the answers the replay reads.
        judge_live(recorded, chosen, ruler, "record")
        # Every ask `judge.consistency` wants too: the repeats decide whether the judge is
        # noise, so they are CI's as well, never the author's.
        consistency.asked_again(recorded, chosen, ruler, "record")
        measured_into(loaded, ruler, chosen, recorded)  # never the run's own measures
    finally:
        shutil.rmtree(kept, ignore_errors=True)
    key = held()
    written = written_since(RecordingStore(loaded.recordings_dir), ids, key, before) if key else {}
    return Verification(tuple(ids), tuple(flatten(line) for line in said), written)


_AUTHORS = "the {} case(s) on changed recordings are judged on the author's recordings"
#: the system's keys that say where a request goes and with which key
_TRANSPORT = ("base_url", "api_key_env")


def _transport_change(loaded: LoadedConfig, ruler: LoadedConfig) -> str | None:
    """The system key, among those that say where a request goes and with which key, that
    the change sets otherwise than the base (None: none)."""
    mine, theirs = loaded.resolved_system(), ruler.resolved_system()
    for key in _TRANSPORT:
        if mine.get(key) != theirs.get(key):
            return f"system.{key}"
    return None


def measure_services(pinned: LoadedConfig, cases: Sequence[Case], recorded: RunResults) -> None:
    """Ask the suite's services (embeddings, moderation) about the answers `recorded` holds,
    in this process under `pinned`'s pins, recorded (and sealed) where `pinned` keeps its
    recordings: a run's own measures of its answers are its claim."""
    users = [case for case in cases if checks.service_checks(case.expect)]
    services = build_services(pinned, users, "record", RecordingStore(pinned.recordings_dir))
    if services is None:
        return
    services.prepare()
    by_id = {case.id: case for case in users}
    try:
        for result in recorded.cases:
            case = by_id.get(result.id)
            if case is None:
                continue
            texts = [sample.text or "" for sample in result.outputs if sample.status != "error"]
            if services.embedder is not None:
                embedded = [t for text in texts for t in checks.embedded_texts(case.expect, text)]
                services.embedder.answers(case.id, embedded)
            if services.moderator is not None:
                moderated = [checks.moderated_text(case.expect, text) for text in texts]
                services.moderator.answers(case.id, [t for t in moderated if t is not None])
    except SystemCallError as exc:
        raise CasegateError(f"verify: a service could not measure the answers: {exc}") from None


def measured_into(
    loaded: LoadedConfig, pinned: LoadedConfig, cases: Sequence[Case], recorded: RunResults
) -> None:
    """The services' measures of the recorded answers, taken here under `pinned`'s pins,
    and they and the judge's verdicts put beside the suite's recordings."""
    measure_services(pinned, cases, recorded)
    if pinned is not loaded:
        _copy_measures(pinned, loaded, cases, recorded)


def _copy_measures(
    pinned: LoadedConfig, loaded: LoadedConfig, cases: Sequence[Case], recorded: RunResults
) -> None:
    """The judge's verdicts and the services' measures of the recorded answers, from where
    `pinned` (the base's config) keeps them to the suite's recordings (sealed already: a
    seal names its case and key)."""
    theirs, mine = RecordingStore(pinned.recordings_dir), RecordingStore(loaded.recordings_dir)
    by_id = {case.id: case for case in cases}
    for result in recorded.cases:
        case = by_id.get(result.id)
        if case is None:
            continue
        judged = [sample for sample in result.outputs if sample.status != "error"]
        texts = [sample.text or "" for sample in judged]
        contexts = [recorded_contexts(sample.contexts) for sample in judged]
        keys = measure_keys(pinned, case, texts, 1, contexts)  # every ask its pin makes
        entries = theirs.entries(case.id)
        for key in keys:
            if isinstance(entries.get(key), dict):
                mine.put_entry(case.id, key, entries[key])


def sealed_manifest(
    loaded: LoadedConfig, verified: Verification, head: str | None, out: Path
) -> Path | None:
    """What verification sealed, written beside the results for the baseline refresh."""
    key = held()
    if not verified.entries or key is None or not head:
        return None
    path = out.parent / MANIFEST
    write_manifest(path, key, loaded.config.suite, head, verified.entries)
    return path
