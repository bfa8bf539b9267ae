"""Cases: the durable part of a suite, kept as data files.

A `.yaml`/`.yml` file holds one case or a list of cases; a `.jsonl` file holds
one case per line. Every problem found while loading is collected and reported
as `file:line: problem`, so one `casegate validate` shows them all.
"""

from __future__ import annotations

import datetime as dt
import difflib
import glob
import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StringConstraints, ValidationError

from gate import checks, heap
from gate.errors import CaseFileError, located
from gate.files import parse_json
from gate.limits import MAX_CASE_FILE_BYTES, MAX_INPUT_FILES, read_limited
from gate.suite import inputfiles
from gate.suite.defaults import MAX_SAMPLES, SuiteDefaults, merge, stray_null_message
from gate.yamlfile import LineDict, YamlSyntaxError, dotted, line_of, load_yaml

#: Ids name recording files (id + ".json"), so they stay well inside a file name's 255 bytes.
MAX_ID_LENGTH = 200
CaseId = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9._-]+$", min_length=1, max_length=MAX_ID_LENGTH),
]
CASE_SUFFIXES = (".yaml", ".yml", ".jsonl")
InputPath = Annotated[str, StringConstraints(min_length=1, max_length=1000)]
#: the key of a case's input under which a python or command system finds its input files
INPUT_FILES_KEY = "input_files"


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: the case's name: letters, digits, `.`, `_`, `-`; it names its recordings
    id: CaseId
    #: what the system under test is given (the adapter's input)
    input: dict[str, Any]
    #: what must be true of the output: one entry per check (see Checks)
    expect: dict[str, Any]
    #: a critical case that regresses blocks the change (so does the tag `critical`)
    critical: bool = False
    #: free labels for selecting (`--tag`) and for the report's counts
    tags: list[str] = Field(default_factory=list)
    #: why the case exists, for a reviewer
    note: str | None = None
    #: where it came from: an incident, a ticket, a spec, a log line
    provenance: str | None = None
    #: when it was added (a date)
    added: dt.date | str | None = None
    #: bump it when `expect` changes on purpose: the baseline's verdict then no longer applies
    version: int = Field(default=1, ge=1)
    #: the case's weight in the suite's pass rate
    weight: float = Field(default=1.0, gt=0, allow_inf_nan=False)
    #: samples of this case a run draws (overrides the config's `samples`)
    samples: int | None = Field(default=None, ge=1, le=MAX_SAMPLES, strict=True)
    #: the share of its samples that must pass for the case to pass
    min_pass_rate: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    #: near-duplicates share a cluster; the suite test flips them together
    #: (gate.deciding.noise.clusters)
    cluster: str | None = Field(default=None, min_length=1, max_length=200)
    #: files of the suite the system reads (gate.suite.inputfiles), relative to the
    #: config's folder; their contents are part of the recording key and the ruler
    input_files: list[InputPath] = Field(default_factory=list, max_length=MAX_INPUT_FILES)

    # Where the case came from, for annotations and messages; not part of the data.
    _source: str = PrivateAttr(default="")
    _line: int = PrivateAttr(default=0)
    _judges: list[tuple[str, checks.Judge]] = PrivateAttr(default_factory=list)
    _from_defaults: frozenset[str] = PrivateAttr(default=frozenset())
    #: each input file (its path as `inputfiles.normal` writes it) → sha256 and location
    _files: dict[str, str] = PrivateAttr(default_factory=dict)
    _file_paths: dict[str, str] = PrivateAttr(default_factory=dict)

    @property
    def is_critical(self) -> bool:
        return self.critical or "critical" in self.tags

    # pydantic reaches `self._source` through a Python-level __getattr__ (about 1 µs),
    # and a run reads these per sample: they read pydantic's own slot instead.

    @property
    def source(self) -> str:
        return self._private()["_source"]  # type: ignore[no-any-return]

    @property
    def line(self) -> int:
        return self._private()["_line"]  # type: ignore[no-any-return]

    @property
    def judges(self) -> list[tuple[str, checks.Judge]]:
        return self._private()["_judges"]  # type: ignore[no-any-return]

    @property
    def from_defaults(self) -> frozenset[str]:
        """The `expect` keys the suite's `defaults:` gave this case (not its own)."""
        return self._private()["_from_defaults"]  # type: ignore[no-any-return]

    @property
    def input_file_hashes(self) -> dict[str, str]:
        """Each input file → the sha256 of its contents when the case loaded."""
        return self._private()["_files"]  # type: ignore[no-any-return]

    @property
    def input_file_paths(self) -> list[str]:
        """Where each input file is on disk (what the system is handed)."""
        return list(self._private()["_file_paths"].values())

    @property
    def key_input(self) -> Any:
        """What a recording's request key holds of this case: its input, and with input
        files the sha256 of each (a list, so it never equals an input, which is a mapping)."""
        if not self.input_files:
            return self.input
        files = self.input_file_hashes
        if not files:  # a Case built without `attach_input_files`: never key it on input alone
            raise RuntimeError(f"case {self.id!r}: its input files were never read")
        return [self.input, files]

    @property
    def system_input(self) -> dict[str, Any]:
        """The input the system receives: with input files, `input_files` maps each path as
        the case names it to where the file is (python and command systems read it there)."""
        if not self.input_files:
            return self.input
        return {**self.input, INPUT_FILES_KEY: dict(self._private()["_file_paths"])}

    def _private(self) -> dict[str, Any]:
        private = self.__pydantic_private__
        assert private is not None  # Case declares private attributes: pydantic fills it
        return private

    def expect_hash(self) -> str:
        """Fingerprint of what the case demands, defaults merged; a change is a ruler change."""
        blob = _EXPECT_ENCODER.encode(self.expect)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


#: critical cases `unsourced` names one by one before it counts the rest
UNSOURCED_LISTED = 10
#: the note `casegate add` writes into a draft (gate.grow.draft): `validate` warns about
#: every case that still has it, so a draft is not committed without saying why it exists
NOTE_PLACEHOLDER = "TODO: why this case exists"


def unsourced(cases: Sequence[Case]) -> list[str]:
    """Warnings for critical cases with neither `provenance` nor `added`: a case that blocks
    a change should say where it came from, so a reviewer can weigh it."""
    found = [case for case in cases if case.is_critical and not case.provenance and not case.added]
    warnings = [
        f"{case.source}:{case.line}: critical case {case.id!r} has neither `provenance` nor "
        "`added`: say where it came from (an incident, a ticket, a spec) and when"
        for case in found[:UNSOURCED_LISTED]
    ]
    if len(found) > UNSOURCED_LISTED:
        warnings.append(f"and {len(found) - UNSOURCED_LISTED} more critical case(s) like them")
    return warnings


def unexplained(cases: Sequence[Case]) -> list[str]:
    """Warnings for cases whose note is still the placeholder `casegate add` wrote."""
    return [
        f"{case.source}:{case.line}: case {case.id!r} still has the note {NOTE_PLACEHOLDER!r} "
        "that `casegate add` wrote: say why the case exists (the incident, the ticket)"
        for case in cases
        if case.note is not None and case.note.strip() == NOTE_PLACEHOLDER
    ]


#: json.dumps(value, sort_keys=True, default=str) without building an encoder per call
_EXPECT_ENCODER = json.JSONEncoder(sort_keys=True, default=str)


def resolve_case_paths(patterns: Sequence[str], root: Path) -> tuple[list[Path], list[str]]:
    """Expand files, folders and globs (relative to root) into case files."""
    files: list[Path] = []
    problems: list[str] = []
    for pattern in patterns:
        path = root / pattern
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in CASE_SUFFIXES and p.is_file())
        elif path.is_file():
            found = [path]
        else:
            found = sorted(
                Path(p) for p in glob.glob(str(path), recursive=True) if p.endswith(CASE_SUFFIXES)
            )
        if not found:
            problems.append(f"cases: {pattern!r} matches no .yaml, .yml or .jsonl file")
        files.extend(found)
    unique = list(dict.fromkeys(files))
    return unique, problems


def _records(path: Path, text: str) -> Iterable[tuple[int | None, Any]]:
    """(line, raw record) pairs from one file; raises CaseFileError on syntax."""
    if path.suffix == ".jsonl":
        # Lines end at \n, \r\n or \r only: `splitlines` would also break a JSON string
        # at a raw U+2028, U+2029 or U+0085, which JSON allows unescaped.
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        for number, raw_line in enumerate(text.split("\n"), start=1):
            if not raw_line.strip():
                continue
            try:
                yield number, parse_json(raw_line, unique_keys=True)
            except ValueError as exc:
                raise CaseFileError(located(path, number, f"invalid JSON: {exc}")) from None
        return
    try:
        document = load_yaml(text)
    except YamlSyntaxError as exc:
        problem = located(path, exc.line, exc.message)
        raise CaseFileError(problem, {problem: exc.excerpt} if exc.excerpt else None) from None
    if document is None:
        return
    if isinstance(document, dict):
        yield line_of(document), document
    elif isinstance(document, list):
        for item in document:
            yield line_of(item), item
    else:
        raise CaseFileError(located(path, 1, "expected a case (mapping) or a list of cases"))


def _validation_problem(path: Path, line: int | None, raw: Any, exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = dotted(error["loc"])
    key = str(error["loc"][0]) if error["loc"] else None
    key_line = line_of(raw, key) if isinstance(raw, LineDict) and key else line
    if error["type"] == "extra_forbidden":
        hint = difflib.get_close_matches(where, Case.model_fields, n=1)
        message = f"unknown field '{where}'" + (f" (did you mean {hint[0]!r}?)" if hint else "")
    elif error["type"] == "missing":
        message = f"missing required field '{where}'"
    else:
        message = f"{where}: {error['msg']}"
    case_id = raw.get("id") if isinstance(raw, dict) else None
    prefix = f"case {_shown_id(case_id)}: " if isinstance(case_id, str) else ""
    return located(path, key_line or line, prefix + message)


def _shown_id(case_id: object) -> str:
    text = repr(case_id)
    return text if len(text) <= 60 else text[:59] + "…"


def _check_problem(
    path: Path,
    raw: LineDict | dict[str, Any],
    exc: checks.CheckSpecError,
    from_defaults: frozenset[str] = frozenset(),
) -> str:
    expect = raw.get("expect")
    message = str(exc)
    key = None
    if message.startswith("unknown check "):
        key = message.split("'")[1]
        hint = difflib.get_close_matches(key, checks.KNOWN_KEYS, n=1)
        message = f"unknown check {key!r} in expect" + (
            f" (did you mean {hint[0]!r}?)"
            if hint
            else f" (known: {', '.join(sorted(checks.KNOWN_KEYS))})"
        )
    else:
        key = next((k for k in (expect or {}) if message.startswith(k)), None)
    if key in from_defaults:
        message += " (a check from `defaults.expect`: set the key in this case to override it)"
    line = line_of(expect, key) if key else line_of(expect)
    return located(path, line or line_of(raw), f"case {_shown_id(raw.get('id'))}: {message}")


_FROM_DEFAULTS = " (from `defaults.input_files`)"
#: an input file's path → (sha256, location), or what is wrong with it: read once a load
FileCache = dict[str, tuple[str, str] | str]


def attach_input_files(case: Case, root: Path | None, cache: FileCache | None = None) -> list[str]:
    """Read the case's input files under `root` (the config's folder) and keep their sha256
    on the case; the problems otherwise, each naming the file and the fix."""
    return [problem for _, problem in _read_input_files(case, root, cache)]


def _read_input_files(
    case: Case, root: Path | None, cache: FileCache | None = None
) -> list[tuple[str | None, str]]:
    """`attach_input_files`, each problem with the path it is about (None: the case's)."""
    # Before the early return: an input that carries `input_files` itself would hand the
    # system paths nobody checked, hashed or compared with the base (the key is casegate's).
    if INPUT_FILES_KEY in case.input:
        return [
            (
                None,
                f"input.{INPUT_FILES_KEY} is where the system finds the files `input_files` "
                "names: rename that input key",
            )
        ]
    if not case.input_files:
        return []
    if root is None:
        return [(None, "input_files: this command cannot read input files (no config folder)")]
    cache = {} if cache is None else cache
    hashes: dict[str, str] = {}
    paths: dict[str, str] = {}
    problems: list[tuple[str | None, str]] = []
    for written in case.input_files:
        name = inputfiles.normal(written)
        found = cache.get(name)
        if found is None:
            try:
                path = inputfiles.locate(root, written)
                found = cache[name] = (inputfiles.digest(root, written), str(path))
            except inputfiles.InputFileError as exc:
                found = cache[name] = f"input_files: {exc}"
        if isinstance(found, str):
            problems.append((written, found))
            continue
        hashes[name], paths[written] = found
    if not problems:
        case._private().update(_files=dict(sorted(hashes.items())), _file_paths=paths)
    return problems


def load_cases(
    files: Sequence[Path],
    display_root: Path | None = None,
    defaults: SuiteDefaults | None = None,
    root: Path | None = None,
) -> list[Case]:
    """Load and validate every case, the suite's `defaults` merged under each, its input
    files read under `root` (the config's folder); raises CaseFileError listing every problem."""
    with heap.bulk():
        return _load_cases(files, display_root, defaults or SuiteDefaults(), root)


def _load_cases(
    files: Sequence[Path], display_root: Path | None, defaults: SuiteDefaults, root: Path | None
) -> list[Case]:
    problems: list[str] = []
    excerpts: dict[str, str] = {}
    read: FileCache = {}
    cases: list[Case] = []
    first_seen: dict[str, tuple[Path, int | None]] = {}
    for path in files:
        shown = _display(path, display_root)
        try:
            text = _read_text(path, shown)
            records = list(_records(shown, text))
        except CaseFileError as exc:
            problems.extend(exc.problems)
            excerpts.update(exc.excerpts)
            continue
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(located(shown, None, f"cannot read: {exc}"))
            continue
        for line, raw in records:
            if not isinstance(raw, dict):
                problems.append(located(shown, line, "a case must be a mapping"))
                continue
            merged = merge(raw, defaults)
            if merged.stray_nulls:
                problems.extend(
                    located(
                        shown,
                        line_of(raw.get("expect"), key) or line,
                        f"case {_shown_id(raw.get('id'))}: {stray_null_message(key, defaults)}",
                    )
                    for key in merged.stray_nulls
                )
                continue
            try:
                case = Case.model_validate(merged.record)
            except ValidationError as exc:
                problems.append(_validation_problem(shown, line, raw, exc))
                continue
            try:
                judges = checks.build(case.expect)
            except checks.CheckSpecError as exc:
                problems.append(_check_problem(shown, merged.record, exc, merged.from_defaults))
                continue
            unread = _read_input_files(case, root, read)
            if unread:
                own = raw.get("input_files")
                own = own if isinstance(own, list) else []
                where = line_of(raw, "input_files") if own else None
                problems.extend(
                    located(
                        shown,
                        where or line,
                        f"case {_shown_id(case.id)}: {problem}"
                        + ("" if written is None or written in own else _FROM_DEFAULTS),
                    )
                    for written, problem in unread
                )
                continue
            # One update, not four assignments through pydantic's __setattr__.
            case._private().update(
                _judges=judges,
                _from_defaults=merged.from_defaults,
                _source=str(shown),
                _line=line or 1,
            )
            if case.id in first_seen:
                first = located(*first_seen[case.id], "")[:-2]
                problems.append(
                    located(shown, line, f"duplicate case id {case.id!r} (first at {first})")
                )
                continue
            first_seen[case.id] = (shown, line)
            cases.append(case)
    if problems:
        raise CaseFileError(problems, excerpts)
    cases.sort(key=lambda case: case.id)
    return cases


def _read_text(path: Path, shown: Path) -> str:
    """The case file's text; CaseFileError naming it when it is larger than a case file
    may be (then it is never parsed). Line ends stay as written: libyaml and
    `splitlines` take \r\n and \r for line ends as they take \n."""
    fix = "split it into several files (`cases:` takes folders and globs)"
    data = read_limited(path, MAX_CASE_FILE_BYTES, "a case file", fix, CaseFileError, shown)
    return data.decode("utf-8")


def _display(path: Path, root: Path | None) -> Path:
    if root is None:
        return path
    try:
        return path.resolve().relative_to(root.resolve())
    except ValueError:
        return path
