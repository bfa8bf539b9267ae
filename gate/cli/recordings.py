"""Recordings housekeeping: `casegate recordings prune` and `casegate recordings mv`.

A recorded response is in use when a current case would ask for it: its key comes
from the system's fingerprint, the case input and a sample index (as `gate.produce.answers`
computes it), and a judge verdict's from the judge pin, the rubric, the case input, a
recorded output that is itself in use and the ask (K of them under `judge.consistency:
K`); an embedding's or a moderation score's from its service's pin and a text it measures
(gate.produce.services). Several configs may
replay from one folder (a baseline config and a candidate config): prune keeps what
any config it is given uses, and names them. Whatever changes a file does so under
the lock the recorders take, so a `casegate record` running beside it loses nothing,
and rewrites the file whole.

This module is imported when the command line is built, so it imports pydantic,
the providers and the run only inside the functions that need them.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gate.produce.recordings import RecordingStore
    from gate.suite.cases import Case
    from gate.suite.config import LoadedConfig

DEFAULT_CONFIG = Path("casegate.yml")


class Usage:
    """The recordings that one config's current cases ask for."""

    def __init__(self, loaded: LoadedConfig, cases: Sequence[Case]) -> None:
        from gate.judging.calibration import calibration_path, read_calibration
        from gate.judging.judge import pin_fingerprint
        from gate.produce.recordings import system_fingerprint

        self.loaded = loaded
        self.cases = cases
        self.fingerprint = system_fingerprint(loaded.resolved_system())
        pin = loaded.config.judge
        self.judge = pin_fingerprint(pin) if pin is not None else None
        #: `judge.consistency: K` asks about every judged output K times, each its own
        #: recording (gate.judging.consistency): a replay needs every one of them
        self.asks = (pin.consistency or 1) if pin is not None else 1
        #: pairwise verdicts are keyed on the baseline's output too, which prune does not
        #: read: a case with a pairwise judge keeps every verdict under the pin.
        self.pairwise = pin_fingerprint(pin, "pairwise") if pin is not None else None
        calibration = read_calibration(calibration_path(loaded)) if pin is not None else None
        #: the verdicts `casegate judge calibrate` replays are keyed on the labels file's
        #: outputs, which prune cannot see: under the calibrated pin, all are kept.
        self.calibrated = (
            self.judge
            if calibration is not None and calibration.get("pin_fingerprint") == self.judge
            else None
        )

    def keys(self, case: Case, responses: Mapping[str, Any]) -> set[str]:
        """The keys of `responses` (one case's recording file) that `case` uses, and the
        keys of its system samples, recorded or not."""
        from gate.checks import uses_judge
        from gate.checks.graded import pairwise_rubric
        from gate.judging.judge import judge_keys_of, pin_fingerprint
        from gate.judging.services import used_keys
        from gate.produce.answers import requests_for, samples_for
        from gate.suite.judgepin import PROMPT_TABLES

        # A baseline replays more samples than a run: keep every one it is estimated from.
        fixed = samples_for(case, self.loaded)
        config = self.loaded.config
        count = max(fixed or config.adaptive.max, config.estimate_samples(fixed))
        used = {request.key for request in requests_for(case, self.fingerprint, range(count))}
        # The embeddings and moderation scores measured on the outputs in use (no output
        # text in them, so the judge's loop below passes them by).
        texts = [_output_text(responses[key]) for key in used & responses.keys()]
        used |= used_keys(self.loaded.config, case, [text for text in texts if text is not None])
        pin = self.loaded.config.judge
        if pin is None or self.judge is None or not uses_judge(case.expect):
            return used
        if pairwise_rubric(case.expect) is not None:
            used.update(
                key
                for key, entry in responses.items()
                if isinstance(entry, dict) and entry.get("fingerprint") == self.pairwise
            )
        # Every judged check's asks (a pass/fail or graded judge, the RAG metrics), as
        # gate.judging.judge.questions_of finds them from each output in use.
        for key in used & responses.keys():
            text = _output_text(responses[key])
            if text is not None:
                contexts = _output_contexts(responses[key])
                used.update(judge_keys_of(pin, case, text, contexts, self.asks))
        if self.calibrated is not None:
            calibrated = {pin_fingerprint(pin, kind) for kind in PROMPT_TABLES}  # type: ignore[arg-type]
            used.update(
                key
                for key, entry in responses.items()
                if isinstance(entry, dict) and entry.get("fingerprint") in calibrated
            )
        return used


def _output_contexts(entry: Any) -> list[Any]:
    """The contexts a recorded output holds (none when unreadable: then no RAG ask matches)."""
    from pydantic import ValidationError

    from gate.outputs import Context

    output = entry.get("output") if isinstance(entry, dict) else None
    given = output.get("contexts") if isinstance(output, dict) else None
    try:
        return [Context.model_validate(item) for item in given] if isinstance(given, list) else []
    except ValidationError:
        return []


def _output_text(entry: Any) -> str | None:
    output = entry.get("output") if isinstance(entry, dict) else None
    text = output.get("text") if isinstance(output, dict) else None
    return text if isinstance(text, str) else None


@dataclass(frozen=True, slots=True)
class Unused:
    """A recording file holding responses no current case uses."""

    path: Path
    document: dict[str, Any]
    keys: tuple[str, ...]
    #: whether any current case files its recordings here
    owned: bool

    @property
    def whole(self) -> bool:
        """Nothing in the file is in use: the file goes."""
        return len(self.keys) == len(self.document["responses"])


def find_unused(store: RecordingStore, usages: Sequence[Usage]) -> tuple[list[Unused], list[str]]:
    """(what no config uses, problems with files left alone); to delete what it finds,
    call it and `remove` under one `store.exclusive()`."""
    from gate.errors import ResultsError

    users: dict[str, list[tuple[Usage, Case]]] = {}
    for usage in usages:
        for case in usage.cases:
            users.setdefault(store.path_for(case.id).name, []).append((usage, case))
    unused: list[Unused] = []
    problems: list[str] = []
    for path in store.recording_files():
        try:
            document = store.read_file(path)
        except FileNotFoundError:  # removed by hand since the folder was listed
            continue
        except ResultsError as exc:
            problems.extend(f"{problem} (left alone)" for problem in exc.problems)
            continue
        responses = document["responses"]
        cases = users.get(path.name, [])
        used = set().union(*(usage.keys(case, responses) for usage, case in cases))
        stale = tuple(sorted(set(responses) - used))
        if stale or not cases:
            unused.append(Unused(path, document, stale, owned=bool(cases)))
    return unused, problems


def remove(store: RecordingStore, unused: Sequence[Unused], work: Path) -> None:
    """Delete what `find_unused` found; call under the same `store.exclusive()`."""
    from gate.files import cannot_write

    for item in unused:
        if item.whole:
            try:
                item.path.unlink(missing_ok=True)
            except OSError as exc:
                raise cannot_write(item.path, exc) from None
        else:
            kept = {
                key: entry
                for key, entry in item.document["responses"].items()
                if key not in item.keys
            }
            store.write_file(item.path, {**item.document, "responses": kept}, work)


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive, on Windows
        return str(path)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def describe(item: Unused) -> list[str]:
    """The lines prune prints for one file: the whole file, or each response in it."""
    responses = item.document["responses"]
    shown, held = _shown(item.path), _count(len(responses), "response")
    if not item.owned:
        return [f"{shown}: no current case files its recordings here ({held})"]
    if item.whole:
        return [f"{shown}: none of its {held} is in use"]
    lines = [f"{shown}: {len(item.keys)} of {held} unused"]
    for key in item.keys:
        entry = responses[key] if isinstance(responses[key], dict) else {}
        measured = entry.get("text") if "sample" not in entry else None
        about = [
            # An embedding or a moderation score names the text it measures (ASCII-escaped:
            # it is model output) where a system output names its sample.
            f"of {json.dumps(measured[:40])}"
            if isinstance(measured, str)
            else f"sample {entry.get('sample', '?')}",
            str(entry.get("system") or "?"),
            str(entry.get("model") or entry.get("provider") or "?"),
            f"captured {str(entry.get('captured_at') or '?')[:10]}",
        ]
        lines.append(f"  {key}  {', '.join(about)}")
    return lines


def _prune_folder(
    folder: Path,
    users: Sequence[tuple[Path, Usage]],
    *,
    dry_run: bool,
    emit: Callable[[str], object],
) -> list[Unused]:
    from gate.produce.recordings import RecordingStore

    names = " and ".join(str(config) for config, _ in users)
    emit(f"{_shown(folder)}: keeping what {names} use{'s' if len(users) == 1 else ''}")
    for config, usage in users:
        if usage.calibrated is not None:
            emit(
                f"  every judge verdict under {config}'s calibrated judge pin is kept: "
                "`casegate judge calibrate` replays them for its labels"
            )
    if not folder.is_dir():
        return []
    store = RecordingStore(folder)
    usages = [usage for _, usage in users]
    if dry_run:  # writes are atomic, so reading needs no lock: a dry run writes nothing
        return _list_unused(store, usages, emit)
    with store.exclusive() as work:
        unused = _list_unused(store, usages, emit)
        remove(store, unused, work)
    return unused


def _list_unused(
    store: RecordingStore, usages: Sequence[Usage], emit: Callable[[str], object]
) -> list[Unused]:
    unused, problems = find_unused(store, usages)
    for problem in problems:
        emit(f"warning: {problem}")
    for item in unused:
        for line in describe(item):
            emit(line)
    return unused


@dataclass(frozen=True, slots=True)
class Project:
    """A config given to prune, with its current cases."""

    config: Path
    loaded: LoadedConfig
    cases: Sequence[Case]


def prune(projects: Sequence[Project], *, dry_run: bool, emit: Callable[[str], object]) -> None:
    """Delete (with `dry_run`, only list) the recordings no project uses.

    Everything is listed through `emit` before anything is deleted, and the lock the
    recorders take is held from the first read to the last deletion (a dry run, which
    reads files that are only ever replaced whole, takes no lock and writes nothing).
    """
    emit(f"configs considered: {', '.join(str(project.config) for project in projects)}")
    if len(projects) == 1:
        emit("  (pass -c once for every config that replays from the same recordings folder)")
    folders: dict[Path, list[tuple[Path, Usage]]] = {}
    for project in projects:
        usage = Usage(project.loaded, project.cases)
        folders.setdefault(project.loaded.recordings_dir, []).append((project.config, usage))
    files = responses = orphans = 0
    for folder, users in folders.items():
        unused = _prune_folder(folder, users, dry_run=dry_run, emit=emit)
        orphans += sum(1 for item in unused if not item.owned)
        files += sum(1 for item in unused if item.whole)
        responses += sum(len(item.keys) for item in unused if not item.whole)
    counted = f"{_count(files, 'file')} and {_count(responses, 'response')} inside other files"
    if not files and not responses:
        emit("nothing to prune: every recording is in use")
    elif dry_run:
        emit(f"would delete {counted} (--dry-run: nothing was deleted)")
        if orphans:
            emit("a case renamed? `casegate recordings mv OLD NEW` keeps its recordings")
    else:
        emit(f"deleted {counted}")


# --- the command line ----------------------------------------------------------


def cmd_prune(args: argparse.Namespace) -> int:
    from gate.suite.project import load_project

    projects = [
        Project(config, *load_project(config))
        for config in dict.fromkeys(args.configs or [DEFAULT_CONFIG])
    ]
    prune(projects, dry_run=args.dry_run, emit=lambda line: print(line, flush=True))
    return 0


def cmd_mv(args: argparse.Namespace) -> int:
    from gate.errors import CasegateError
    from gate.produce.recordings import RecordingStore
    from gate.suite.config import load_config

    problems = [
        f"{what} {name!r} is not a case id (letters, digits, . _ -; at most 200)"
        for what, name in (("OLD", args.old), ("NEW", args.new))
        if not _is_case_id(name)
    ]
    if problems:
        raise CasegateError(problems)
    store = RecordingStore(load_config(args.config).recordings_dir)
    source = store.path_for(args.old)
    target = store.rename(args.old, args.new)
    print(f"renamed {_shown(source)} → {_shown(target)} (case {args.old!r} → {args.new!r})")
    return 0


def cmd_adopt(args: argparse.Namespace) -> int:
    """Adopt what CI sealed for a merged pull request's head (gate.produce.verified)."""
    from gate.errors import ConfigError
    from gate.produce.recordings import RecordingStore
    from gate.produce.seal import KEY_ENV, held
    from gate.produce.verified import ARTIFACT, adopt, read_manifest
    from gate.suite.project import load_project

    key = held()
    if key is None:
        raise ConfigError(
            f"adopting recordings needs {KEY_ENV}, the key CI seals with: without it no seal "
            f"can be told from a forgery (set the secret for the job that adopts `{ARTIFACT}`)"
        )
    loaded, cases = load_project(args.config)
    entries = read_manifest(args.folder, key, loaded.config.suite, args.head)
    adopted = adopt(entries, RecordingStore(loaded.recordings_dir), {c.id for c in cases}, key)
    for line in adopted.lines(args.folder):
        print(line, flush=True)
    return 0


def _is_case_id(name: str) -> bool:
    from pydantic import TypeAdapter, ValidationError

    from gate.suite.cases import CaseId

    try:
        TypeAdapter(CaseId).validate_python(name)
    except ValidationError:
        return False
    return True


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`casegate recordings prune|mv|adopt`."""
    recordings = commands.add_parser("recordings", help="tidy the recordings folder")
    actions = recordings.add_subparsers(dest="recordings_command", required=True, metavar="COMMAND")
    prune_parser = actions.add_parser(
        "prune",
        help="delete the recordings no current case uses, naming each (--dry-run: only name them)",
    )
    prune_parser.add_argument(
        "-c",
        "--config",
        dest="configs",
        action="append",
        type=Path,
        metavar="CONFIG",
        help="a config whose cases' recordings are kept; repeat it for every config that "
        f"shares the recordings folder (default: {DEFAULT_CONFIG})",
    )
    prune_parser.add_argument(
        "--dry-run", action="store_true", help="list what would be deleted; delete nothing"
    )
    prune_parser.set_defaults(handler=cmd_prune)
    mv = actions.add_parser("mv", help="move a renamed case's recordings to its new id")
    mv.add_argument("old", metavar="OLD", help="the case id the recordings are filed under")
    mv.add_argument("new", metavar="NEW", help="the case's new id")
    mv.add_argument(
        "-c",
        "--config",
        default=DEFAULT_CONFIG,
        type=Path,
        help="the config naming the recordings folder (default: %(default)s)",
    )
    mv.set_defaults(handler=cmd_mv)
    adopt = actions.add_parser(
        "adopt",
        help="take in the answers CI recorded and sealed for a merged pull request "
        "(the casegate-verified-recordings artifact)",
    )
    adopt.add_argument(
        "folder", metavar="FOLDER", type=Path, help="the artifact, downloaded (or its manifest)"
    )
    adopt.add_argument(
        "--head",
        required=True,
        metavar="SHA",
        help="the pull request's head commit: the manifest must have been verified on it",
    )
    adopt.add_argument(
        "-c",
        "--config",
        default=DEFAULT_CONFIG,
        type=Path,
        help="the suite whose recordings folder takes them (default: %(default)s)",
    )
    adopt.set_defaults(handler=cmd_adopt)
