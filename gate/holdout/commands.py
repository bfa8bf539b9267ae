"""`casegate holdout init|add|rotate|reveal|status`: the slice's life, by its key holder.

These commands run where the key is (a maintainer's machine), and print counts:
which cases are held out is known to whoever runs `add`, and to nobody after.
`reveal` is the one way back to readable text, and says so loudly.
"""

from __future__ import annotations

import argparse
import datetime as dt
import fnmatch
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gate.errors import ConfigError
from gate.holdout import casefiles, rotation
from gate.holdout.keys import DEFAULT_KEY_ENV, HoldoutKey, generate, require
from gate.holdout.loading import build_case, load_slice_cases, refusal
from gate.holdout.parser import FROM_HOLDOUT, REVEALED
from gate.holdout.sealed import read_header
from gate.holdout.store import (
    Location,
    SealedRecordings,
    Slice,
    location_of,
    new_rotation,
    read_recordings,
    read_slice,
    remove_files,
    write_recordings,
    write_slice,
)
from gate.produce.recordings import RecordingStore
from gate.suite.config import LoadedConfig, load_config


def _say(line: str) -> None:
    print(f"casegate: {line}", file=sys.stderr)


def _shown(path: Path) -> str:
    """A path as the person typed it: relative to here when it is below here."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _declared(config: Path) -> tuple[LoadedConfig, Location]:
    loaded = load_config(config)
    location = location_of(loaded)
    if location is None:
        raise ConfigError(
            f"{config}: declares no held-out slice: add `holdout: holdout/{loaded.config.suite}` "
            "(the folder its sealed files go in), then rerun"
        )
    return loaded, location


def _key(loaded: LoadedConfig) -> HoldoutKey:
    holdout = loaded.config.holdout
    return require(holdout.key_env if holdout else DEFAULT_KEY_ENV)


def _readable(config: Path) -> list[Any]:
    from gate.suite.project import load_project  # the command line's loader: warnings, `cases: .`

    return list(load_project(config)[1])


def _held(sliced: Slice, loaded: LoadedConfig, location: Location) -> dict[str, str]:
    """Held-out id → its YAML text; every case must load (a HoldoutError counts those
    that do not)."""
    load_slice_cases(sliced.cases, loaded, location.slice_shown)
    texts: dict[str, str] = {}
    for text in sliced.cases:
        built = build_case(text, loaded)
        assert not isinstance(built, str)  # load_slice_cases has refused any that is not a case
        texts[built.id] = text
    return texts


def _in_history(path: Path) -> bool:
    """Whether git's history holds `path` (its cases were readable to anyone with it)."""
    from gate.deciding.basetree import git

    try:
        found = git("log", "-1", "--format=%H", "--", path.name, cwd=path.parent)
    except ConfigError:
        return False
    return found.returncode == 0 and bool(found.stdout.strip())


def _covered(loaded: LoadedConfig, target: Path) -> bool:
    """Whether the config's `cases:` would read a file at `target`."""
    target = target.resolve()
    for pattern in loaded.config.cases:
        path = (loaded.root / pattern).resolve()
        if path.is_dir() and target.is_relative_to(path):
            return True
        if target == path or fnmatch.fnmatch(str(target), str(loaded.root / pattern)):
            return True
    return False


def _readable_target(loaded: LoadedConfig, given: Path | None, name: str) -> Path:
    if given is not None:
        target = given
    else:
        folders = [p for p in loaded.config.cases if (loaded.root / p).is_dir()]
        if not folders:
            raise ConfigError(
                f"{loaded.path}: `cases:` names no folder to write the readable cases to: pass "
                "--to FILE.yaml (a file the config's `cases:` reads)"
            )
        target = loaded.root / folders[0] / name
    if target.suffix not in (".yaml", ".yml"):
        raise ConfigError(f"--to {target}: give a .yaml file (a list of cases)")
    if not _covered(loaded, target):
        raise ConfigError(
            f"--to {target}: the config's `cases:` does not read this file, so its cases would "
            "leave the suite: pick a file under a folder `cases:` names, or add it there"
        )
    return target


def _move_readable_recordings(
    ids: Sequence[str], readable: RecordingStore, sealed: SealedRecordings
) -> list[Path]:
    """Each case's readable recording file into the sealed store; the files to delete."""
    moved = []
    for case_id in ids:
        path = readable.path_for(case_id)
        if path.is_file():
            document = readable.read_file(path)
            sealed.documents[case_id] = document
            sealed.changed = True
            moved.append(path)
    return moved


def _delete(paths: Sequence[Path]) -> None:
    from gate.files import cannot_write

    for path in paths:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise cannot_write(path, exc) from None


def _release_recordings(
    ids: Sequence[str], sealed: SealedRecordings, readable: RecordingStore
) -> int:
    """Held-out recordings of `ids` back into the readable folder (merged with any there)."""
    count = 0
    with readable.exclusive() as work:
        for case_id in ids:
            document = sealed.documents.pop(case_id, None)
            if document is None:
                continue
            sealed.changed = True
            path = readable.path_for(case_id)
            merged = readable.read_file(path) if path.is_file() else dict(document)
            merged["responses"] = {**document["responses"], **merged.get("responses", {})}
            merged["case"] = case_id
            readable.write_file(path, merged, work)
            count += 1
    return count


# --- the commands ----------------------------------------------------------------------


def cmd_init(args: argparse.Namespace) -> int:
    variable = DEFAULT_KEY_ENV
    suite = "SUITE"
    if args.config.is_file():
        loaded = load_config(args.config)
        suite = loaded.config.suite
        location = location_of(loaded)
        if location is not None:
            variable = loaded.config.holdout.key_env if loaded.config.holdout else variable
            if location.slice_path.is_file():
                header = read_header(
                    location.slice_path.read_bytes(),
                    location.slice_shown,
                    purpose="holdout-cases",
                    suite=suite,
                )
                _say(
                    f"warning: {location.slice_shown} exists, sealed with key id "
                    f"{header['key_id']}: a new key cannot open it; keep the key it was sealed "
                    "with (or reveal the slice with it, and add its cases again)"
                )
    key = generate(variable)
    _say(
        f"a new key for a held-out slice (key id {key.key_id}), printed once below: casegate "
        "keeps no copy. Store it now as the repository's Actions secret "
        f"{variable} and in your password manager."
    )
    _say(
        f"then: export {variable}='…'; add `holdout: holdout/{suite}` to the config; "
        "`casegate holdout add FILE…` seals cases into it; pass the secret to the Action's step "
        f"(env: {variable}: ${{{{ secrets.{variable} }}}})"
    )
    print(key.text(), flush=True)
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    from gate.suite.cases import load_cases

    loaded, location = _declared(args.config)
    key = _key(loaded)
    sliced = read_slice(location, key) if location.slice_path.is_file() else Slice()
    held = _held(sliced, loaded, location)
    files = [Path(name) for name in args.files]
    for path in files:
        if not path.is_file():
            raise ConfigError(f"{path}: no such case file")
    incoming = load_cases(
        files, display_root=Path.cwd(), defaults=loaded.config.defaults, root=loaded.root
    )
    if args.case_patterns:
        incoming = [
            case
            for case in incoming
            if any(fnmatch.fnmatchcase(case.id, p) for p in args.case_patterns)
        ]
    if not incoming:
        raise ConfigError("no case to hold out: the files (and --case patterns) select none")
    moving = {case.id for case in incoming}
    problems = []
    for case in incoming:
        where = f"{case.source}:{case.line}: case {case.id!r}"
        why = refusal(case.expect)
        if why is not None:
            problems.append(f"{where}: cannot be held out: held-out cases may not {why}")
        elif case.is_critical:
            problems.append(
                f"{where}: is critical: a critical case blocks by name when it regresses, which "
                "a held-out case never does; keep it readable"
            )
        elif case.id in held:
            problems.append(f"{where}: the slice already holds a case with this id")
    sources = {case.source for case in incoming}
    for case in _readable(args.config):
        if case.id in moving and case.source not in sources:
            problems.append(
                f"{case.source}:{case.line}: case {case.id!r} is also a readable case of the "
                "suite: rename one of the two"
            )
    if problems:
        raise ConfigError(problems)
    texts = {
        record.case_id: record.text
        for path in files
        for record in casefiles.records(path)
        if record.case_id in moving
    }
    readable = RecordingStore(loaded.recordings_dir)
    store = read_recordings(location, key)
    old_recordings = _move_readable_recordings(sorted(moving), readable, store)
    if not sliced.rotation:
        sliced.rotation = new_rotation(0, _now())
    sliced.cases += [texts[case_id] for case_id in sorted(moving)]
    sliced.log.append(
        {"at": _now(), "action": "add", "moved_in": len(moving), "size": len(sliced.cases)}
    )
    write_slice(location, key, sliced)
    write_recordings(location, key, store)
    outcomes = [(path, casefiles.remove(path, moving)) for path in files]
    _delete(old_recordings)
    for path, outcome in outcomes:
        _say(f"{path}: {outcome}")
        if _in_history(path):
            _say(
                f"warning: {path} is in this repository's git history: its cases stay readable "
                "there to anyone; hold out cases that were never committed readable"
            )
    _say(
        f"sealed {len(moving)} case(s) into {location.slice_shown} (the slice holds "
        f"{len(sliced.cases)}) and {len(old_recordings)} recording file(s) into "
        f"{location.recordings_shown}; commit the slice folder and the changed case files"
    )
    if len(old_recordings) < len(moving):
        _say(
            f"{len(moving) - len(old_recordings)} of them have no recording yet: run `casegate "
            f"record --only-missing` with {key.variable} and the provider's key set"
        )
    return 0


def cmd_rotate(args: argparse.Namespace) -> int:
    loaded, location = _declared(args.config)
    key = _key(loaded)
    sliced = read_slice(location, key)
    held = _held(sliced, loaded, location)
    readable_cases = _readable(args.config)
    eligible = [case for case in readable_cases if not case.is_critical]
    try:
        count = rotation.swap_size(args.fraction, len(held), len(eligible))
    except ValueError as exc:
        raise ConfigError(f"--fraction: {exc}") from None
    if not held or count == 0:
        raise ConfigError(
            "nothing to rotate: the slice or the suite's non-critical readable cases are empty"
        )
    seed = args.seed if args.seed is not None else secrets.randbelow(2**32)
    leaving, arriving = rotation.choose(
        sorted(held), [case.id for case in eligible], args.fraction, seed
    )
    staying_readable = {case.id for case in readable_cases} - set(arriving)
    clashes = sum(1 for case_id in leaving if case_id in staying_readable)
    if clashes:
        raise ConfigError(
            f"{clashes} of the held-out case(s) this rotation would move out share an id with a "
            "readable case (which ones is not shown); try another --seed, or reveal the slice"
        )
    target = _readable_target(loaded, args.to, FROM_HOLDOUT)
    by_source: dict[Path, set[str]] = {}
    arriving_set = set(arriving)
    for case in readable_cases:
        if case.id in arriving_set:
            by_source.setdefault(Path(case.source), set()).add(case.id)
    texts = {
        record.case_id: record.text
        for path, ids in by_source.items()
        for record in casefiles.records(path)
        if record.case_id in ids
    }
    readable = RecordingStore(loaded.recordings_dir)
    store = read_recordings(location, key)
    released = _release_recordings(leaving, store, readable)
    taken = _move_readable_recordings(arriving, readable, store)
    number = int(sliced.rotation.get("number", 0)) + 1
    sliced.cases = [held[i] for i in sorted(set(held) - set(leaving))] + [
        texts[i] for i in arriving
    ]
    sliced.rotation = new_rotation(number, _now(), seed=seed, fraction=args.fraction)
    sliced.log.append(
        {
            "at": sliced.rotation["at"],
            "action": "rotate",
            "rotation": number,
            "seed": seed,
            "fraction": args.fraction,
            "moved_out": len(leaving),
            "moved_in": len(arriving),
            "size": len(sliced.cases),
        }
    )
    write_slice(location, key, sliced)
    write_recordings(location, key, store)
    casefiles.append(
        target,
        [held[i] for i in leaving],
        "Cases that were held out until a rotation (casegate holdout rotate): readable now.",
    )
    for path, ids in sorted(by_source.items()):
        casefiles.remove(path, ids)
    _delete(taken)
    print(
        f"rotation {number} (seed {seed}, fraction {args.fraction:g}): {len(leaving)} held-out "
        f"case(s) out to {_shown(target)}, {len(arriving)} readable case(s) into the slice "
        f"({len(sliced.cases)} held out); {released} + {len(taken)} recording file(s) moved; "
        "the read count starts again"
    )
    print(
        f"the same swap again: casegate holdout rotate --fraction {args.fraction:g} --seed {seed}"
    )
    return 0


def cmd_reveal(args: argparse.Namespace) -> int:
    loaded, location = _declared(args.config)
    if not args.yes:
        raise ConfigError(
            "reveal writes every held-out case and recording out as readable files and deletes "
            "the slice: once read, the cases can never be held out again. Rerun with --yes"
        )
    key = _key(loaded)
    sliced = read_slice(location, key)
    held = _held(sliced, loaded, location)
    target = _readable_target(loaded, args.to, REVEALED)
    if target.exists():
        raise ConfigError(f"--to {target}: exists already; pass --to a new file")
    clashes = sorted(set(held) & {case.id for case in _readable(args.config)})
    if clashes:
        raise ConfigError(
            f"held-out case {case_id!r} shares its id with a readable case: rename the readable "
            "one first"
            for case_id in clashes
        )
    readable = RecordingStore(loaded.recordings_dir)
    store = read_recordings(location, key)
    casefiles.append(
        target,
        [held[i] for i in sorted(held)],
        "Cases that were held out, revealed by `casegate holdout reveal`: readable for good.",
    )
    released = _release_recordings(sorted(held), store, readable)
    removed = remove_files(location)
    for line in (
        f"REVEALED: {len(held)} held-out case(s) are readable now, in {_shown(target)}, and "
        f"{released} recording file(s) in {_shown(loaded.recordings_dir)}",
        f"deleted {', '.join(_shown(path) for path in removed)}: this slice can no longer measure "
        "unseen behaviour",
        "remove `holdout:` from the config, or hold out fresh cases with `casegate holdout add`",
    ):
        _say(line)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    loaded, location = _declared(args.config)
    holdout = loaded.config.holdout
    assert holdout is not None
    if not location.slice_path.is_file():
        print(f"{location.slice_shown}: no slice yet (`casegate holdout add FILE…` makes one)")
        return 0
    header = read_header(
        location.slice_path.read_bytes(),
        location.slice_shown,
        purpose="holdout-cases",
        suite=location.suite,
    )
    print(f"{location.slice_shown}: sealed with key id {header['key_id']} ({holdout.key_env})")
    from gate.holdout.keys import from_environment

    key = from_environment(holdout.key_env)
    if key is None:
        print(f"{holdout.key_env} is not set: how many cases it holds is not known without it")
        return 0
    sliced = read_slice(location, key)
    cases = load_slice_cases(sliced.cases, loaded, location.slice_shown)
    store = read_recordings(location, key)
    current = sliced.rotation
    print(
        f"{len(cases)} held-out case(s), {store.responses} recorded response(s); rotation "
        f"{current.get('number', 0)} ({current.get('id')}, {current.get('at')})"
    )
    for entry in sliced.log:
        details = ", ".join(f"{k} {v}" for k, v in entry.items() if k not in ("at", "action"))
        print(f"  {entry.get('at')} {entry.get('action')}: {details}")
    return 0
