"""Recorded responses: freeze the system so pull-request checks replay for free.

One JSON file per case, holding every recorded response for it keyed by a
fingerprint of (resolved system config, case input, sample index). Files are
indented with sorted keys so a pull request shows a readable diff.

Several recorders may share a folder (two `casegate record` runs, a run and
its judge): each write re-reads the case's file and merges into it while
holding a lock on `.casegate/lock` inside the folder, so none loses another's
responses. Temporaries live in that `.casegate/` folder too, which ignores
itself for git: a recorder killed mid-write leaves nothing `git add` picks up,
and the next one to write removes what it left.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gate.errors import CasegateError, ResultsError
from gate.files import TEMPORARY_SUFFIX, cannot_write, parse_json, write_text
from gate.limits import MAX_RECORDING_BYTES, read_limited
from gate.outputs import Output, ToolCall
from gate.produce.seal import provenance, sealed_entry
from gate.results import CaseOutputs, SampleResult
from gate.yamlfile import dotted

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: one recorder per folder at a time
    fcntl = None  # type: ignore[assignment]

SCHEMA = "casegate.recording/1"
#: The recorders' own folder inside a recordings folder: the lock and temporaries.
WORK_FOLDER = ".casegate"

#: Keys that change how a request travels, not what is asked: they never
#: invalidate a recording. `name` is a label; `prompt_file` is covered by the
#: prompt text it resolves to.
TRANSPORT_KEYS = frozenset(
    {"name", "prompt_file", "base_url", "api_key_env", "timeout_s", "max_retries", "max_wait_s"}
)


#: json.dumps(value, sort_keys=True, separators=(",", ":"), default=str), built once:
#: a run digests every request, and json.dumps with options builds an encoder per call.
_KEY_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)


def _digest(value: Any, length: int) -> str:
    blob = _KEY_ENCODER.encode(value)
    return hashlib.sha256(blob.encode()).hexdigest()[:length]


def system_fingerprint(system: Mapping[str, Any]) -> str:
    """What the system is, for recording keys: everything but transport and labels."""
    return _digest({k: v for k, v in system.items() if not _transport(k, v)}, 16)


def _transport(key: str, value: Any) -> bool:
    # `mode: batch` (gate.produce.batch) sends the same requests through the provider's batch
    # API: a batch-recorded answer replays like one recorded call by call. Any other
    # `mode` is a python or command system's own key, passed to the user's code.
    return key in TRANSPORT_KEYS or (key == "mode" and value == "batch")


def request_key(fingerprint: str, case_input: Any, sample: int) -> str:
    """The key of one request: the system's fingerprint, what is asked (a case's
    `key_input`, which holds its input files' hashes; a judge's question) and the sample."""
    return _digest([fingerprint, case_input, sample], 24)


def _read_bytes(path: Path | str) -> bytes:
    """The file's bytes (see gate.limits.read_limited: plain system calls, since a replay
    reads one file a case); a ResultsError naming it when it is larger than a recording
    may be."""
    return read_limited(path, MAX_RECORDING_BYTES, "a recording", _RERECORD, ResultsError)


_RERECORD = "delete it and re-record (`casegate record`)"


def _safe_name(case_id: str) -> str:
    # Case ids are restricted to [A-Za-z0-9._-]; a leading dot would hide the file.
    return ("_" + case_id if case_id.startswith(".") else case_id) + ".json"


class RecordingStore:
    """Reads and writes the recordings folder of one suite."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._lock = threading.Lock()
        self._swept = False

    def path_for(self, case_id: str) -> Path:
        return self.folder / _safe_name(case_id)

    def recording_files(self) -> list[Path]:
        """Every case file in the folder, sorted (not the recorders' own `.casegate/`)."""
        try:
            return sorted(path for path in self.folder.glob("*.json") if path.is_file())
        except OSError as exc:
            raise ResultsError(
                f"{self.folder}: cannot list the recordings ({exc.strerror or exc})"
            ) from None

    def _load(self, case_id: str) -> dict[str, Any]:
        """The case's recording as it is on disk now (an empty one when there is none)."""
        try:
            # A string path, not `path_for`: a replay reads one file a case, and
            # joining Paths cost it more than parsing the file.
            return self.read_file(os.path.join(self.folder, _safe_name(case_id)))
        except FileNotFoundError:
            return {"schema": SCHEMA, "case": case_id, "responses": {}}

    def read_file(self, path: Path | str) -> dict[str, Any]:
        """One recording file as it is on disk now; ResultsError naming it when it is bad
        (FileNotFoundError when there is none)."""
        try:
            document = parse_json(_read_bytes(path), unique_keys=True)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise ResultsError(
                f"{path}: cannot read this recording ({exc.strerror or exc})"
            ) from None
        except ValueError as exc:  # truncated, not UTF-8, too deep, a number too long
            raise ResultsError(
                f"{path}: not a valid recording ({exc}); delete it and re-record"
            ) from None
        if (
            not isinstance(document, dict)
            or document.get("schema") != SCHEMA
            or not isinstance(document.get("responses"), dict)
        ):
            raise ResultsError(f"{path}: not a {SCHEMA} file; delete it and re-record")
        return document

    def get(self, case_id: str, key: str) -> Output | None:
        return self.get_many(case_id, [key])[0]

    def get_many(self, case_id: str, keys: list[str]) -> list[Output | None]:
        """Outputs for several keys of one case; the file is read once and not kept."""
        return [output for output, _ in self.get_many_dated(case_id, keys)]

    def get_many_dated(
        self, case_id: str, keys: list[str]
    ) -> list[tuple[Output | None, str | None]]:
        """`get_many`, each output with its `captured_at` (None when unrecorded or undated)."""
        responses = self._load(case_id)["responses"]
        outputs: list[tuple[Output | None, str | None]] = []
        for key in keys:
            entry = responses.get(key)
            try:
                if entry is None:
                    outputs.append((None, None))
                    continue
                captured = entry.get("captured_at") if isinstance(entry, dict) else None
                dated = captured if isinstance(captured, str) else None
                outputs.append((Output.model_validate(entry["output"]), dated))
            except ValidationError as exc:
                error = exc.errors()[0]
                where = dotted(["output", *error["loc"]])
                raise self._malformed(case_id, key, f"at {where}: {error['msg']}") from None
            except (KeyError, TypeError) as exc:
                raise self._malformed(case_id, key, f"{type(exc).__name__}: {exc}") from None
        return outputs

    def _malformed(self, case_id: str, key: str, problem: str) -> ResultsError:
        return ResultsError(
            f"{self.path_for(case_id)}: recording {key} is malformed ({problem}); re-record it"
        )

    def put(
        self,
        case_id: str,
        key: str,
        output: Output,
        *,
        system: Mapping[str, Any],
        fingerprint: str,
        sample: int,
    ) -> None:
        """Store one response at once, so an interrupted recording keeps what it paid for."""
        entry = {
            "captured_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            **provenance(),
            "system": system.get("name"),
            "provider": system.get("provider"),
            "model": output.model or system.get("model"),
            "fingerprint": fingerprint,
            "sample": sample,
            "output": output.model_dump(mode="json", exclude_defaults=True),
        }
        entry = sealed_entry(case_id, key, entry)
        with self.exclusive() as work:
            # Read under the lock, not from memory: another recorder may have written
            # this case's file since, and its responses must survive this write.
            document = self._load(case_id)
            document["responses"][key] = entry
            self.write_file(self.path_for(case_id), document, work)

    # Entries that are not system outputs (gate.produce.services: embeddings, moderation scores)
    # share the case's file under keys of their own; their shape is their service's.

    def entries(self, case_id: str) -> dict[str, Any]:
        """Every entry of the case's file as stored, by key (empty when there is none)."""
        return dict(self._load(case_id)["responses"])

    def get_entry(self, case_id: str, key: str) -> dict[str, Any] | None:
        entry = self._load(case_id)["responses"].get(key)
        return entry if isinstance(entry, dict) else None

    def put_entry(self, case_id: str, key: str, entry: Mapping[str, Any]) -> None:
        """Store one entry at once, merged under the lock like `put`, sealed like it."""
        with self.exclusive() as work:
            document = self._load(case_id)
            document["responses"][key] = sealed_entry(case_id, key, dict(entry))
            self.write_file(self.path_for(case_id), document, work)

    def write_file(self, path: Path, document: Mapping[str, Any], work: Path) -> None:
        """Replace one recording file whole; only inside `exclusive()`, which gives `work`."""
        text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        write_text(path, text, scratch=work)

    def rename(self, old: str, new: str) -> Path:
        """Move case `old`'s recordings to case `new` (a renamed case); returns the new file.

        Refused, changing nothing, when `old` has no recording file or `new` has one.
        """
        source, target = self.path_for(old), self.path_for(new)
        with self.exclusive() as work:
            if not source.is_file():
                raise CasegateError(
                    f"{source}: no recording file for case {old!r}; nothing to rename"
                )
            if target.exists():
                raise CasegateError(
                    f"{target}: case {new!r} already has recordings, and casegate overwrites "
                    "none: delete one of the two files (or merge them by hand), then rerun"
                )
            document = self.read_file(source)
            document["case"] = new
            self.write_file(target, document, work)
            try:
                source.unlink()
            except OSError as exc:
                target.unlink(missing_ok=True)
                raise cannot_write(source, exc) from None
        return target

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[Path]:
        """Hold this folder's lock (threads and processes alike); yields the work folder.

        Not re-entrant: a thread holding it must not call `put` or `rename`.
        """
        work = self.folder / WORK_FOLDER
        with self._lock:
            try:
                work.mkdir(parents=True, exist_ok=True)
                ignore = work / ".gitignore"
                if not ignore.is_file():  # "*": git ignores every file here, this one too
                    ignore.write_text("*\n", encoding="utf-8")
                handle = (work / "lock").open("a")
            except OSError as exc:
                raise cannot_write(work, exc) from None
            with handle:
                if fcntl is not None:
                    fcntl.flock(handle, fcntl.LOCK_EX)  # released when the handle closes
                if not self._swept:
                    # Under the lock no other writer has a temporary open: any left
                    # here belongs to a recorder that was killed mid-write.
                    for stale in work.glob(f"*{TEMPORARY_SUFFIX}"):
                        stale.unlink(missing_ok=True)
                    self._swept = True
                yield work


def adopt_run(
    source: Path,
    target: RecordingStore,
    system: Mapping[str, Any],
    inputs: Mapping[str, Any],
    cases: Iterable[CaseOutputs],
    *,
    every_entry: bool = False,
) -> int:
    """Write into `target` what a supervised run recorded into its own folder `source`
    (untrusted files the gate copied out): each answered sample of `cases`, keyed by the
    cases' `key_input` (`inputs`) and the resolved `system`, whose recording holds exactly
    the answer the run reported. The gate writes each entry afresh (its date, provenance and
    seal are this process's). With `every_entry` (a run of merged code: the baseline after a
    merge) it also copies every other entry of those cases as the run wrote it (the judge's
    verdicts and service measures it asked for); otherwise the gate measures those itself.
    Returns how many samples it wrote; raises ResultsError, writing nothing, when a
    recording is missing or holds another answer than the run reported."""
    theirs = RecordingStore(source)
    fingerprint = system_fingerprint(system)
    chosen: list[tuple[str, str, int, Output]] = []
    services: list[tuple[str, str, dict[str, Any]]] = []
    problems: list[str] = []
    for case in cases:
        if case.id not in inputs:
            continue
        try:
            entries = theirs.entries(case.id)
        except CasegateError as exc:
            problems.append(exc.problems[0])
            continue
        for sample in case.outputs:
            if sample.status == "error":
                continue  # a failed call is never recorded
            key = request_key(fingerprint, inputs[case.id], sample.sample)
            output = _reported(entries.get(key), sample)
            if output is None:
                problems.append(f"case {case.id!r} sample {sample.sample}")
                continue
            chosen.append((case.id, key, sample.sample, output))
        answers = {key for case_id, key, _, _ in chosen if case_id == case.id}
        if every_entry:
            services += [
                (case.id, key, entry)
                for key, entry in entries.items()
                if isinstance(entry, dict) and key not in answers
            ]
    if problems:
        shown = ", ".join(problems[:5]) + (
            f" and {len(problems) - 5} more" if len(problems) > 5 else ""
        )
        raise ResultsError(
            f"the run's recordings do not hold the answers it reported ({shown}): nothing it "
            "recorded was kept"
        )
    for case_id, key, number, output in chosen:
        target.put(case_id, key, output, system=system, fingerprint=fingerprint, sample=number)
    for case_id, key, entry in services:
        target.put_entry(case_id, key, entry)
    return len(chosen)


def _reported(entry: Any, sample: SampleResult) -> Output | None:
    """The recorded output when it is the answer `sample` reports, figure for figure."""
    if not isinstance(entry, dict):
        return None
    try:
        output = Output.model_validate(entry.get("output"))
        calls = [ToolCall.model_validate(call) for call in sample.tool_calls]
    except ValidationError:
        return None
    reported = (
        sample.text,
        calls,
        sample.latency_ms,
        sample.input_tokens,
        sample.output_tokens,
        sample.stop_reason,
    )
    held = (
        output.text,
        output.tool_calls,
        output.latency_ms,
        output.input_tokens,
        output.output_tokens,
        output.stop_reason,
    )
    return output if held == reported else None
