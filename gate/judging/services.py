"""The services a selection of cases uses, built for a run or over a snapshot.

`build` is called beside the judge's `make_grader` in gate.pipeline.run; `for_snapshot` by
gate.deciding.recheck in the gate's own process; `used_keys` by `casegate recordings prune`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gate import checks
from gate.errors import CasegateError, ConfigError, MissingRecordingError, located
from gate.produce.answers import missing_message
from gate.produce.services.embeddings import Embedder
from gate.produce.services.moderation import Moderator
from gate.produce.services.recorded import (
    PREFIXES,
    Entries,
    RecordedService,
    Snapshot,
    entry_key,
    fingerprint_of,
)

if TYPE_CHECKING:
    from gate.produce.recordings import RecordingStore
    from gate.suite.cases import Case
    from gate.suite.config import Config, LoadedConfig

__all__ = [
    "Services",
    "Snapshot",
    "build",
    "for_snapshot",
    "import_targets",
    "require_pins",
    "snapshot_entries",
    "used_keys",
]

#: cases named in one refusal
LISTED = 10


@dataclass(frozen=True, slots=True)
class Services:
    """What `Subject.services` holds: each service the suite uses, or None."""

    embedder: Embedder | None = None
    moderator: Moderator | None = None

    @property
    def each(self) -> list[RecordedService]:
        return [service for service in (self.embedder, self.moderator) if service is not None]

    def prepare(self) -> None:
        for service in self.each:
            service.prepare()

    def raise_missing(self, store: RecordingStore) -> None:
        """A MissingRecordingError naming the cases a replay found no answer for."""
        for service in self.each:
            if service.missing:
                missing = {case_id: [0] for case_id in service.missing}
                raise MissingRecordingError(missing_message(missing, store, f"{service.noun} "))


def _users(cases: Iterable[Case]) -> dict[str, list[Case]]:
    found: dict[str, list[Case]] = {"embeddings": [], "moderation": []}
    for case in cases:
        names = checks.service_checks(case.expect)
        if "similar" in names:
            found["embeddings"].append(case)
        if "moderation" in names:
            found["moderation"].append(case)
    return found


def require_pins(loaded: LoadedConfig, cases: Sequence[Case]) -> None:
    """A ConfigError naming each case whose check needs a service the config does not pin."""
    problems: list[str] = []
    for key, users in _users(cases).items():
        if getattr(loaded.config, key) is None:
            check = "similar (method embedding)" if key == "embeddings" else "moderation"
            example = "provider, model" if key == "embeddings" else "model"
            problems.extend(
                f"{case.source}:{case.line}: case {case.id!r} uses {check} but {loaded.path} "
                f"has no `{key}:` block; add one ({example}), as casegate's docs/checks.md shows"
                for case in users[:LISTED]
            )
    if problems:
        raise ConfigError(problems)


def build(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    mode: str,
    entries: Entries,
    *,
    reuse_recorded: bool = False,
) -> Services | None:
    """The services the selected cases use, in `mode`; None when they use none."""
    require_pins(loaded, cases)
    users = _users(cases)
    config = loaded.config
    options: dict[str, Any] = {
        "mode": mode,
        "entries": entries,
        "root": loaded.root,
        "reuse_recorded": reuse_recorded,
    }
    # require_pins has made sure each service in use is pinned.
    embedder = moderator = None
    if users["embeddings"] and config.embeddings is not None:
        embedder = Embedder(config.embeddings, **options)
    if users["moderation"] and config.moderation is not None:
        moderator = Moderator(config.moderation, **options)
    if embedder is None and moderator is None:
        return None
    return Services(embedder, moderator)


def for_snapshot(config: Config, snapshot: Snapshot) -> Services:
    """Replay-only services over recordings read before the run: no call, no user code."""
    return Services(
        Embedder(config.embeddings, mode="replay", entries=snapshot) if config.embeddings else None,
        Moderator(config.moderation, mode="replay", entries=snapshot)
        if config.moderation
        else None,
    )


def import_targets(loaded: LoadedConfig) -> None:
    """`validate`: import each python service target, blaming the config's line on failure."""
    from gate import usercode
    from gate.yamlfile import line_of, load_yaml_file

    for key in ("embeddings", "moderation"):
        pin = getattr(loaded.config, key)
        if pin is None or pin.provider != "python" or pin.target is None:
            continue
        try:
            usercode.load_callable(pin.target, f"{key}.target", loaded.root)
        except usercode.UserCodeError as exc:
            raw = load_yaml_file(loaded.path)
            line = line_of(raw.get(key), "target") if isinstance(raw, dict) else None
            raise ConfigError(located(loaded.path, line, str(exc))) from None


def snapshot_entries(
    store: RecordingStore, cases: Iterable[Case]
) -> dict[tuple[str, str], dict[str, Any]]:
    """Every recorded embedding and moderation score of the cases that use a service."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    prefixes = tuple(PREFIXES.values())
    for case in cases:
        if not checks.service_checks(case.expect):
            continue
        try:
            entries = store.entries(case.id)
        except CasegateError:
            continue  # the run itself reports an unreadable recording
        for key, entry in entries.items():
            if key.startswith(prefixes) and isinstance(entry, dict):
                found[(case.id, key)] = entry
    return found


def used_keys(config: Config, case: Case, output_texts: Iterable[str]) -> set[str]:
    """The service entries `case` uses to judge these recorded outputs (for prune)."""
    keys: set[str] = set()
    texts = list(output_texts)
    if config.embeddings is not None:
        fingerprint = fingerprint_of(config.embeddings)
        keys.update(
            entry_key("embeddings", fingerprint, embedded)
            for text in texts
            for embedded in checks.embedded_texts(case.expect, text)
        )
    if config.moderation is not None:
        fingerprint = fingerprint_of(config.moderation)
        for text in texts:
            moderated = checks.moderated_text(case.expect, text)
            if moderated is not None:
                keys.add(entry_key("moderation", fingerprint, moderated))
    return keys
