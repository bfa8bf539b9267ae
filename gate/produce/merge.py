"""`casegate merge`: join the N parts of a sharded run into the run they split.

Each part is a results file a `--shard I/N` job wrote. The merged run is what one
unsharded run of the same config would have written (timestamps aside), or
nothing: parts that overlap, leave a gap, come from another config or system,
were interrupted, or hold a case their shard does not own are refused, since a
merged run that silently lacks a case is a partial judgement that looks whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gate.errors import ResultsError
from gate.produce.recordings import system_fingerprint
from gate.results import CaseResult, HoldoutSummary, RunResults, read_results, summarise
from gate.suite.cases import Case
from gate.suite.select import describe_stored
from gate.suite.shard import Shard, shard_of

#: What every part of one run shares; a part that differs on any was not the same run.
SAME_RUN = ("suite", "system", "config_hash", "mode", "overrides", "selection", "casegate_version")
HOLDOUT_NOTE = (
    "merged from shards: the held-out slice is scored by `casegate check --parts`, "
    "in the gate's own process"
)


def read_parts(paths: Sequence[Path]) -> list[tuple[Path, RunResults]]:
    if not paths:
        raise ResultsError("no parts to merge: pass every shard's results file")
    return [(path, read_results(path)) for path in paths]


def _shard_of_part(path: Path, part: RunResults) -> Shard:
    if part.interrupted:
        raise ResultsError(
            f"{path}: this part was interrupted after {len(part.cases)} case(s): run its "
            "shard again to the end before merging"
        )
    shard = Shard.stored(part.shard, f"{path}: shard")
    if shard is None:
        raise ResultsError(
            f"{path}: not a shard's results (it records no `shard`): merge only the parts "
            "that `--shard I/N` runs wrote"
        )
    return shard


def _same_run(parts: Sequence[tuple[Path, RunResults]]) -> None:
    first_path, first = parts[0]
    fingerprint = system_fingerprint(first.config.get("system") or {})
    for path, part in parts[1:]:
        for key in SAME_RUN:
            if getattr(part, key) != getattr(first, key):
                raise ResultsError(
                    f"{path}: {key} differs from {first_path}'s ({getattr(part, key)!r} vs "
                    f"{getattr(first, key)!r}): parts of one run share their config; run "
                    "every shard from the same commit and settings"
                )
        if system_fingerprint(part.config.get("system") or {}) != fingerprint:
            raise ResultsError(
                f"{path}: the system differs from {first_path}'s: parts of one run call "
                "the same system"
            )


def _cover(parts: Sequence[tuple[Path, RunResults]]) -> list[Shard]:
    """Each part's shard, when the parts are each shard of one split exactly once."""
    seen: dict[int, Path] = {}
    shards = []
    count = None
    for path, part in parts:
        shard = _shard_of_part(path, part)
        shards.append(shard)
        if count is not None and shard.count != count:
            raise ResultsError(
                f"{path}: shard {shard} is of a {shard.count}-way split, the others of "
                f"{count}: merge the parts of one split"
            )
        count = shard.count
        if shard.index in seen:
            raise ResultsError(
                f"overlapping parts: shard {shard} is both {seen[shard.index]} and {path}: "
                "pass each shard's part once (run that shard again if you cannot tell which "
                "is right)"
            )
        seen[shard.index] = path
    assert count is not None
    missing = [f"{index}/{count}" for index in range(1, count + 1) if index not in seen]
    if missing:
        raise ResultsError(
            f"a gap: no part for shard {', '.join(missing)}: a merged run without them would "
            "look whole and judge less; wait for every shard job, or run the missing ones"
        )
    return shards


#: case id → (version, expect_hash): what each configured case expects
Expected = Mapping[str, tuple[int, str | None]]


def expected_of(cases: Sequence[Case]) -> Expected:
    return {case.id: (case.version, case.expect_hash()) for case in cases}


def merge(
    parts: Sequence[tuple[Path, RunResults]],
    *,
    expected: Expected | None = None,
    config_hash: str | None = None,
) -> RunResults:
    """One run from every shard's part; a ResultsError names the first problem.

    `expected` and `config_hash` are the configured suite's, when the merge is
    checked against a config (always: `casegate merge`, `check --parts`, the Action).
    """
    shards = _cover(parts)
    _same_run(parts)
    _, first = parts[0]
    if config_hash is not None and first.config_hash != config_hash:
        raise ResultsError(
            f"the parts ran another config (hash {first.config_hash[:12]}) than the one "
            f"given (hash {config_hash[:12]}): merge the parts of this commit's run, with "
            "the same --set overrides"
        )
    owner: dict[str, Path] = {}
    cases = []
    for (path, part), shard in zip(parts, shards, strict=True):
        for case in part.cases:
            owning = shard_of(case.id, shard.count)
            if owning != shard.index:
                raise ResultsError(
                    f"{path}: holds case {case.id!r}, which belongs to shard "
                    f"{owning}/{shard.count}, not {shard}: the part was not written by that "
                    "shard's run"
                )
            if case.id in owner:
                raise ResultsError(
                    f"{path}: case {case.id!r} is also in {owner[case.id]}: a case is judged "
                    "in one part only; run the shards again from one commit"
                )
            owner[case.id] = path
            cases.append(case)
    if expected is not None:
        _complete(owner, expected, first.selection)
        _same_expectations(cases, expected, owner)
    cases.sort(key=lambda case: case.id)
    holdout = None
    if any(part.holdout is not None for _, part in parts):
        holdout = HoldoutSummary(status="skipped", note=HOLDOUT_NOTE)
    return RunResults(
        suite=first.suite,
        system=first.system,
        config=first.config,
        config_hash=first.config_hash,
        created_at=max(part.created_at for _, part in parts),
        casegate_version=first.casegate_version,
        mode=first.mode,
        overrides=first.overrides,
        selection=first.selection,
        summary=summarise(cases),
        holdout=holdout,
        cases=cases,
    )


def _same_expectations(
    cases: Sequence[CaseResult], expected: Expected, owner: dict[str, Path]
) -> None:
    """Each part judged today's cases: a part written before a case's `expect` changed
    holds verdicts on another question."""
    for case in cases:
        version, expect_hash = expected[case.id]
        if (case.version, case.expect_hash) != (version, expect_hash):
            raise ResultsError(
                f"{owner[case.id]}: case {case.id!r} was judged on other expectations than "
                "the config's (its `expect` or version changed since): run the shards again "
                "from this commit"
            )


def _complete(
    owner: dict[str, Path], expected_ids: Expected, selection: dict[str, Any] | None
) -> None:
    expected = set(expected_ids)
    missing = sorted(expected - set(owner))
    if missing:
        shown = ", ".join(repr(case_id) for case_id in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise ResultsError(
            f"a gap: {len(missing)} case(s) of {describe_stored(selection)} are in no part "
            f"({shown}{more}): the parts were run on other cases; run every shard again "
            "from this commit"
        )
    extra = sorted(set(owner) - expected)
    if extra:
        raise ResultsError(
            f"the parts hold {len(extra)} case(s) this config does not have (e.g. "
            f"{extra[0]!r}): they were run from another commit"
        )
