"""What a submitted batch was for: `.casegate/batches/ID.json`, written the moment it is.

The file maps every custom id to the request it answers (case id, request key,
sample). A custom id is `r<index>-<request key>`, so a result can only land on the
request it was submitted for: a state file edited to point an id at another case, or
at another config's request, no longer matches and is refused. The API key is never
in it (gate.files masks secrets in every write anyway).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gate.errors import CasegateError
from gate.files import parse_json, write_text

SCHEMA: Final = "casegate.batch/1"
#: a provider's batch id, as a file name (OpenAI `batch_…`, Anthropic `msgbatch_…`)
BATCH_ID = re.compile(r"[A-Za-z0-9_-]{1,200}")
#: Anthropic's rule for custom ids; OpenAI takes any string, so this one suits both
CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
FOLDER = Path(".casegate") / "batches"


class StateError(CasegateError):
    """A batch's state file is missing, unreadable, or does not fit the current config."""


class Entry(BaseModel):
    """The request one custom id answers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    case: str
    key: str = Field(pattern=r"^[0-9a-f]{1,64}$")
    sample: int = Field(ge=0)


class BatchState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: Literal["casegate.batch/1"] = Field(default=SCHEMA, alias="schema")
    provider: Literal["openai", "anthropic"]
    batch_id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,200}$")
    suite: str
    config_hash: str
    fingerprint: str
    #: the run mode that submitted it: `record` stores the answers, `live` does not
    mode: Literal["record", "live"]
    only_missing: bool = False
    #: the `--set` overrides and the case selection of the run that submitted it
    overrides: list[str] = Field(default_factory=list)
    selection: dict[str, Any] | None = None
    submitted_at: str
    #: `submitted` until its results were read back into a run
    status: Literal["submitted", "collected"] = "submitted"
    collected_at: str | None = None
    requests: dict[str, Entry]

    def signature(self) -> frozenset[tuple[str, str, int]]:
        return frozenset((e.case, e.key, e.sample) for e in self.requests.values())


def custom_id(index: int, key: str) -> str:
    return f"r{index}-{key}"


def binding_problem(cid: str, entry: Entry) -> str | None:
    """Why `cid` cannot be the id submitted for `entry` (None when it can)."""
    if not CUSTOM_ID.fullmatch(cid):
        return f"custom id {cid!r} is not one casegate submits"
    index, _, key = cid.removeprefix("r").partition("-")
    if not index.isdigit() or key != entry.key:
        return f"custom id {cid!r} was not submitted for case {entry.case!r} sample {entry.sample}"
    return None


def signature_of(requests: Iterable[tuple[str, str, int]]) -> frozenset[tuple[str, str, int]]:
    return frozenset(requests)


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def folder_for(root: Path) -> Path:
    """Where a config's batches are kept: beside the config, in git-ignored `.casegate/`."""
    return root / FOLDER


def path_for(root: Path, batch_id: str) -> Path:
    if not BATCH_ID.fullmatch(batch_id):
        raise StateError(
            f"{batch_id!r} is not a batch id (letters, digits, '_' and '-'): pass the id a "
            "record or live run printed, e.g. `casegate batch resume batch_abc123`"
        )
    return folder_for(root) / f"{batch_id}.json"


def write(root: Path, state: BatchState) -> Path:
    path = path_for(root, state.batch_id)
    text = json.dumps(state.model_dump(mode="json", by_alias=True), indent=2, sort_keys=True)
    write_text(path, text + "\n")
    return path


def read(path: Path) -> BatchState:
    """A state file, or StateError naming it and the fix."""
    try:
        document = parse_json(path.read_bytes(), unique_keys=True)
    except FileNotFoundError:
        raise StateError(
            f"{path}: no such batch; `casegate batch list` shows the batches submitted for "
            "this config (pass -c when the config is elsewhere)"
        ) from None
    except OSError as exc:
        raise StateError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise StateError(f"{path}: not a batch state file ({exc})") from None
    try:
        state = BatchState.model_validate(document)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "the file"
        raise StateError(
            f"{path}: not a {SCHEMA} file ({where}: {error['msg']}); it was edited or "
            "written by another casegate: delete it and run again (the batch itself is "
            "still billed at the provider)"
        ) from None
    expected = path.name.removesuffix(".json")
    if state.batch_id != expected:
        raise StateError(
            f"{path}: holds batch {state.batch_id!r}, not {expected!r}; the file was "
            "renamed or edited: delete it"
        )
    for cid, entry in state.requests.items():
        problem = binding_problem(cid, entry)
        if problem is not None:
            raise StateError(f"{path}: {problem}; the file was edited: delete it")
    return state


def every(root: Path) -> list[tuple[Path, BatchState | None]]:
    """Every state file beside the config, oldest name first; None for one unreadable."""
    folder = folder_for(root)
    try:
        paths = sorted(folder.glob("*.json"))
    except OSError:
        return []
    found: list[tuple[Path, BatchState | None]] = []
    for path in paths:
        try:
            found.append((path, read(path)))
        except StateError:
            found.append((path, None))
    return found


def pending(
    root: Path,
    provider: str,
    config_hash: str,
    fingerprint: str,
    signature: frozenset[tuple[str, str, int]],
) -> BatchState | None:
    """A submitted, uncollected batch of exactly these requests for this config, if any."""
    for _, state in every(root):
        if (
            state is not None
            and state.status == "submitted"
            and state.provider == provider
            and state.config_hash == config_hash
            and state.fingerprint == fingerprint
            and state.signature() == signature
        ):
            return state
    return None
