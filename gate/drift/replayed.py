"""The replay account of a check or a comparison (gate.deciding.replayed builds the words):
when the recordings a replayed candidate used were captured, how many of them the pull
request added or changed against its base commit, and the last drift run on record.

The last drift run is the drift report kept beside the history export
(`history/SUITE-drift.json`, the JSON `casegate drift --format json` writes, which the
weekly drift workflow commits). Like the history, it is read from the base commit under a
ruling: a pull request that writes its own copy cannot claim a clean drift run. A record
that cannot be read is named in the account and never changes a verdict.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gate.checks.graded import pairwise_rubric, uses_judge
from gate.deciding.basetree import inside
from gate.deciding.replayed import LastDrift, ReplayAccount, account, day_of
from gate.drift.report import read_report
from gate.errors import CasegateError
from gate.history.locate import drift_relative, trusted_export
from gate.judging.judge import judge_keys_of, pin_fingerprint
from gate.judging.services import used_keys
from gate.limits import MB, read_limited
from gate.produce.recordings import RecordingStore, request_key, system_fingerprint
from gate.produce.seal import KEY_ENV, RecordingKey, held
from gate.results import RunResults
from gate.suite.cases import Case
from gate.suite.config import LoadedConfig

if TYPE_CHECKING:
    from gate.deciding.recheck import Recorded
    from gate.deciding.ruler import Ruling
    from gate.outputs import Context, Output

#: a drift report holds a short diff per sample: far below this for any real suite
MAX_DRIFT_RECORD_BYTES = 64 * MB


def last_drift(
    loaded: LoadedConfig | None, ruling: Ruling | None
) -> tuple[LastDrift | None, str, str | None]:
    """The last drift run on record, where it was looked for, and why it could not be
    read (None: it could, or there is none)."""
    if loaded is None:
        return None, "", None
    try:
        path, source = trusted_export(loaded, ruling, drift_relative)
    except CasegateError as exc:
        return None, "", str(exc)
    if path is None:
        return None, "", None  # the base commit has no config: nothing on record
    try:
        data = read_limited(
            path, MAX_DRIFT_RECORD_BYTES, "a drift report", "write it again", CasegateError
        )
    except FileNotFoundError:
        return None, source, None
    except OSError as exc:
        return None, source, f"{source} cannot be read ({exc.strerror or exc})"
    except CasegateError as exc:
        return None, source, str(exc)
    try:
        report = read_report(data, source)
    except CasegateError as exc:
        return None, source, str(exc)
    day = day_of(report.created_at)
    if day is None:
        return None, source, f"{source} has no readable date"
    if report.suite != loaded.config.suite:
        return None, source, f"{source} is a drift report of another suite"
    if report.errors or report.interrupted:
        result = "incomplete"
    elif report.drifted:
        result = "drifted"
    else:
        result = "in step"
    flipped = set(report.flips)
    moved = set(report.changed_outputs) | set(report.model_changes)
    moved |= set(report.fingerprint_changes)
    found = LastDrift(
        day=day.isoformat(),
        result=result,
        cases=report.summary.cases,
        flips=len(flipped),
        changed=len(moved - flipped),
        errors=len(report.errors),
    )
    return found, source, None


def for_results(candidate: RunResults, loaded: LoadedConfig | None) -> ReplayAccount:
    """`compare` and `gate`: the dates the candidate's file gives; the drift record from
    the working copy when a config of this suite is at hand (None: no config)."""
    if loaded is not None and loaded.config.suite != candidate.suite:
        loaded = None
    drift, source, problem = None, "", None
    if candidate.mode == "replay":
        drift, source, problem = last_drift(loaded, None)
    return account(
        candidate.mode,
        (sample.captured_at for case in candidate.cases for sample in case.outputs),
        last_drift=drift,
        drift_source=source,
        drift_problem=problem,
    )


def for_check(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    candidate: RunResults,
    recorded: Recorded | None,
    ruling: Ruling | None,
) -> ReplayAccount:
    """`check` and the Action: the dates of the recordings the run replayed, as read
    before it ran (gate.deciding.recheck.snapshot); under a ruling, how many of them the
    pull request added or changed against the base commit's recordings."""
    if candidate.mode != "replay" or recorded is None:
        return account(candidate.mode, ())
    inputs = {case.id: case.key_input for case in cases}
    fingerprint = system_fingerprint(loaded.resolved_system())
    # case → (sample number, request key) of each sample replayed from the snapshot
    used: dict[str, list[tuple[int, str]]] = {}
    for result in candidate.cases:
        for sample in result.outputs:
            if result.id in inputs and (result.id, sample.sample) in recorded:
                key = request_key(fingerprint, inputs[result.id], sample.sample)
                used.setdefault(result.id, []).append((sample.sample, key))
    dates = [
        recorded.captured.get((case_id, number))
        for case_id, samples in used.items()
        for number, _ in samples
    ]
    drift, source, problem = last_drift(loaded, ruling)
    changed: int | None = None
    changed_cases: list[str] = []
    sealed_cases: list[str] = []
    relative_to: str | None = None
    changed_problem: str | None = None
    sealing = held()
    seal_problem = None if sealing else f"{KEY_ENV} is not set, so no seal could be checked"
    code_changed: list[str] = []
    if ruling is not None and ruling.base_tree is not None and ruling.head_tree is not None:
        relative_to = f"the base commit {ruling.review.base[:7]}"
        # Only while the recordings' keys are the base's: a changed system config (a version
        # bump) keys every answer afresh, and with no config on the base there is no old code.
        base = ruling.base.loaded if ruling.base is not None else None
        if base is not None and system_fingerprint(base.resolved_system()) == fingerprint:
            trees = (ruling.base_tree, ruling.head_tree)
            code_changed = system_code_changed(loaded, ruling, trees)
        try:
            trees = (ruling.base_tree, ruling.head_tree)
            changed_cases, changed, sealed_cases = _changed(
                loaded, cases, ruling, trees, used, recorded, sealing
            )
        except CasegateError as exc:
            changed_problem = f"the recordings this pull request changed are unknown: {exc}"
            # Fail closed: every replayed case counts as on an unsealed change, so the
            # rule `unverified_critical: block` still holds when the count cannot be made.
            changed_cases, sealed_cases = sorted(used), []
    return account(
        "replay",
        dates,
        changed=changed,
        changed_cases=changed_cases,
        relative_to=relative_to,
        changed_problem=changed_problem,
        sealed_cases=sealed_cases,
        seal_problem=seal_problem,
        last_drift=drift,
        drift_source=source,
        drift_problem=problem,
        code_changed=code_changed,
    )


def judge_keys(
    loaded: LoadedConfig,
    case: Case,
    texts: Sequence[str],
    asks: int = 1,
    contexts: Sequence[Sequence[Context]] | None = None,
) -> list[str]:
    """The recording keys of the pinned judge's answers on these output texts of `case`
    (`contexts`: each one's retrieved passages), for every check that asks it about one
    output (a pass/fail or graded judge, the RAG metrics; none for a pairwise judge, keyed
    on the baseline's output too): every ask of each, `judge.consistency` of them or `asks`
    (the ruler's), whichever is more, since a repeated ask decides whether the judge is noise."""
    pin = loaded.config.judge
    if pin is None or not uses_judge(case.expect):
        return []
    repeats = max(asks, pin.consistency or 1)
    passages = list(contexts) if contexts is not None else [()] * len(texts)
    return [
        key
        for text, given in zip(texts, passages, strict=True)
        for key in judge_keys_of(pin, case, text, given, repeats)
    ]


def measure_keys(
    loaded: LoadedConfig,
    case: Case,
    texts: Sequence[str],
    asks: int = 1,
    contexts: Sequence[Sequence[Context]] | None = None,
) -> list[str]:
    """The recording keys of what judges these output texts of `case` besides its checks'
    code: the judge's answers (`asks` and `contexts` as in `judge_keys`), the embeddings
    and moderation scores."""
    return [
        *judge_keys(loaded, case, texts, asks, contexts),
        *sorted(used_keys(loaded.config, case, texts)),
    ]


def ruled_asks(ruling: Ruling | None) -> int:
    """How many times the ruler's pin asks the judge about each output (1: once)."""
    base = ruling.base if ruling is not None else None
    pin = base.loaded.config.judge if base is not None else None
    return (pin.consistency or 1) if pin is not None else 1


def pairwise_fingerprint(loaded: LoadedConfig, case: Case) -> str | None:
    """The fingerprint the pairwise judge's verdicts on `case` are recorded under (None: it
    has no pairwise judge). Those verdicts are keyed on the baseline's output too, so they
    are found by it, as the gate's snapshot of them finds them."""
    pin = loaded.config.judge
    if pin is None or pairwise_rubric(case.expect) is None:
        return None
    return pin_fingerprint(pin, "pairwise")


def changed_measures(
    mine: RecordingStore,
    base: RecordingStore | None,
    case_id: str,
    keys: Sequence[str],
    pairwise: str | None = None,
) -> dict[str, dict[str, Any]]:
    """The entries among `keys` (verdicts, measures), and the pairwise judge's verdicts
    recorded under `pairwise`, that this folder holds and the base lacks or holds
    otherwise: an author can flip a recorded FAIL to PASS, a preference to a tie, or a
    moderation score to 0, without touching the answer they judge."""
    if not keys and pairwise is None:
        return {}
    now = mine.entries(case_id)
    before = base.entries(case_id) if base is not None else {}
    wanted = set(keys)
    if pairwise is not None:
        wanted |= {
            key
            for key, entry in now.items()
            if isinstance(entry, dict) and entry.get("fingerprint") == pairwise
        }
    return {key: now[key] for key in sorted(wanted) if key in now and now[key] != before.get(key)}


#: the most of one code file compared with the base's (a larger one counts as changed)
CODE_LIMIT = 10 * MB


def system_code(loaded: LoadedConfig) -> list[Path]:
    """The files of the system's own code: a python target's module, the files a command
    names that exist beside the config. (Code they import in turn is not followed.)"""
    system = loaded.config.system
    found: list[Path] = []
    if system.provider == "python" and system.target:
        module = system.target.partition(":")[0].replace(".", "/")
        found += [loaded.root / f"{module}.py", loaded.root / module / "__init__.py"]
    elif system.provider == "command" and system.command:
        words = system.command.split() if isinstance(system.command, str) else system.command
        found += [loaded.root / word for word in words if "/" in word or "." in word]
    # lexists: a link counts too (compared as unreadable, so named as changed)
    return [path for path in found if os.path.lexists(path) and not path.is_dir()]


def system_code_changed(
    loaded: LoadedConfig, ruling: Ruling, trees: tuple[Path, Path]
) -> list[str]:
    """The system's code files, as repository paths, that differ from the base commit's
    (added counts); a file outside the repository, or unreadable on the base, counts too."""
    base_tree, head = trees
    refused = ruling.base.refused if ruling.base is not None else frozenset()
    changed = []
    for path in system_code(loaded):
        relative = os.path.relpath(path.absolute(), head.absolute())
        if relative == ".." or relative.startswith(f"..{os.sep}") or os.path.isabs(relative):
            continue  # not the pull request's file: outside the checkout
        shown = Path(relative).as_posix()
        try:
            # Both sides read as the ruler reads files: no link followed (a pull request's
            # system.py could link to a device or a huge file), a regular file only (a pipe
            # would block the read), and no more than a limit.
            if not stat.S_ISREG(os.lstat(path).st_mode):
                raise CasegateError("not a regular file")
            now = read_limited(
                inside(head, shown, "the system's code", frozenset()),
                CODE_LIMIT, "the system's code", "", CasegateError,
            )  # fmt: skip
            before = inside(base_tree, shown, "the system's code on the base commit", refused)
            same = before.is_file() and now == read_limited(
                before, CODE_LIMIT, "the system's code", "", CasegateError
            )
        except (CasegateError, OSError):
            same = False  # unreadable on either side: named as changed, never taken as equal
        if not same:
            changed.append(shown)
    return changed


def base_store(
    loaded: LoadedConfig, ruling: Ruling, trees: tuple[Path, Path] | None = None
) -> RecordingStore | None:
    """The base commit's recordings folder under a ruling: the one its own config names
    (a pull request that moves its recordings elsewhere is still compared with them), else
    the same path in its tree; None when the base has none. `trees`: (base, head), the
    ruling's by default."""
    base_tree, head = trees or (ruling.base_tree, ruling.head_tree)
    if base_tree is None or head is None:
        raise CasegateError("the ruling has no trees to compare the recordings in")
    if ruling.base is not None:
        named, root = ruling.base.loaded.recordings_dir, base_tree
    else:
        named, root = loaded.recordings_dir, head
    relative = os.path.relpath(named.absolute(), root.absolute())
    if relative == ".." or relative.startswith(f"..{os.sep}") or os.path.isabs(relative):
        raise CasegateError("the recordings folder is outside the repository")
    refused = ruling.base.refused if ruling.base is not None else frozenset()
    where = f"the recordings on the base commit {ruling.review.base[:7]}"
    folder = inside(base_tree, Path(relative).as_posix(), where, refused)
    return RecordingStore(folder) if folder.is_dir() else None


def _changed(
    loaded: LoadedConfig,
    cases_of: Sequence[Case],
    ruling: Ruling,
    trees: tuple[Path, Path],
    used: dict[str, list[tuple[int, str]]],
    recorded: Recorded,
    key: RecordingKey | None,
) -> tuple[list[str], int, list[str]]:
    """The cases, and the count of replayed recordings, that the base commit's recordings
    folder (the same path in its tree) lacks or holds otherwise; and of those cases, the
    ones whose every such recording CI sealed. `trees`: (base, head)."""
    base = base_store(loaded, ruling, trees)
    mine = RecordingStore(loaded.recordings_dir)
    by_id = {case.id: case for case in cases_of}
    cases, count, sealed = [], 0, []
    for case_id, samples in sorted(used.items()):
        keys = [request for _, request in samples]
        now = [(recorded[(case_id, n)], recorded.captured.get((case_id, n))) for n, _ in samples]
        try:
            before = base.get_many_dated(case_id, keys) if base else [(None, None)] * len(keys)
            texts = [new[0].text for new in now if new[0] is not None]
            contexts = [new[0].contexts for new in now if new[0] is not None]
            case = by_id.get(case_id)
            keys_judged = (
                measure_keys(loaded, case, texts, ruled_asks(ruling), contexts)
                if case is not None
                else []
            )
            pairs = pairwise_fingerprint(loaded, case) if case is not None else None
            verdicts = changed_measures(mine, base, case_id, keys_judged, pairs)
        except CasegateError:
            # Unreadable on either side: this case counts as changed and unsealed (failing
            # closed, case by case: one bad file must not clear the others).
            cases.append(case_id)
            count += len(samples)
            continue
        # Absent on the base, another output, or the same output captured again.
        differ = [
            (request, new, old)
            for (_, request), new, old in zip(samples, now, before, strict=True)
            if old[0] is None or old != new
        ]
        if differ or verdicts:
            cases.append(case_id)
            count += len(differ) + len(verdicts)
            if (
                key is not None
                and all(
                    _sealed_by_ci(key, mine, case_id, request, new, old)
                    for request, new, old in differ
                )
                and all(key.state(case_id, k, v) == "sealed" for k, v in verdicts.items())
            ):
                sealed.append(case_id)
    return cases, count, sealed


Dated = tuple["Output | None", "str | None"]


def _sealed_by_ci(
    key: RecordingKey,
    store: RecordingStore,
    case_id: str,
    request: str,
    replayed: Dated,
    base: Dated,
) -> bool:
    """Whether the replayed recording is the one CI sealed, and not an older CI draw of the
    same request put back in place of the base's (a lucky sample kept from history)."""
    try:
        entry = store.get_entry(case_id, request)
        stored = store.get_many_dated(case_id, [request])[0]
    except CasegateError:
        return False
    if entry is None or stored != replayed or key.state(case_id, request, entry) != "sealed":
        return False
    if base[0] is None or base[1] is None:
        return True
    now, then = _moment(replayed[1]), _moment(base[1])
    return now is not None and then is not None and now > then


def _moment(captured: str | None) -> dt.datetime | None:
    if not isinstance(captured, str) or len(captured) > 64:
        return None
    try:
        moment = dt.datetime.fromisoformat(captured)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)
