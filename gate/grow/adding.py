"""From a picked exchange (or a ranked export, or a failing result) to draft files:
shape the input, refuse near-duplicates and taken ids, render, write or print."""

from __future__ import annotations

import argparse
import glob
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gate.errors import CasegateError
from gate.grow.draft import (
    Draft,
    commit_of,
    make_case,
    propose_id,
    proposed_expect,
    provenance,
    render,
    today,
)
from gate.grow.exchange import Exchange, SourceError
from gate.grow.nearby import Near, embedded_duplicate, input_text, near_duplicate
from gate.grow.shape import Shaped, shape_input
from gate.reporting.show import one_line

#: drafts `--rank` writes unless `--top` says otherwise
DEFAULT_TOP = 10
HEADER = [
    "Drafted by `casegate add`: review before committing. Confirm `expect`, replace the",
    "note with why the case exists, then `casegate validate` and `casegate record`.",
]


class NearDuplicate(CasegateError):
    """The new input is a near-duplicate of a case: nothing is written (exit 2)."""


def _existing(cases: Sequence[Any], leave_out: str | None = None) -> list[tuple[str, str]]:
    return [(c.id, input_text(c.input)) for c in cases if c.id != leave_out]


def _near(
    loaded: Any, text: str, existing: list[tuple[str, str]]
) -> tuple[Near | None, str | None]:
    near = near_duplicate(text, existing)
    if near is not None:
        return near, None
    return embedded_duplicate(loaded, text, existing)


def _refuse_near(near: Near, cases: Sequence[Any], where: str) -> NearDuplicate:
    case = next(c for c in cases if c.id == near.case_id)
    return NearDuplicate(
        f"{one_line(where)}: the input is a near-duplicate of case {near.case_id!r} "
        f"({case.source}:{case.line}; {near.how}): nothing written; --force adds it anyway"
    )


def _taken(case_id: str, cases: Sequence[Any]) -> str | None:
    case = next((c for c in cases if c.id == case_id), None)
    return f"{case.source}:{case.line}" if case is not None else None


def default_folder(loaded: Any) -> Path:
    """The suite's first case folder: the first `cases:` entry, or the folder it is in."""
    first: str = loaded.config.cases[0]
    root: Path = loaded.root
    path = root / first
    if path.is_dir():
        return path
    if path.is_file() or not glob.has_magic(first):
        return path.parent
    parts = Path(first).parts
    plain = [p for p in parts[: next(i for i, p in enumerate(parts) if glob.has_magic(p))]]
    return root.joinpath(*plain)


def _targets(args: argparse.Namespace, loaded: Any, drafts: list[Draft]) -> dict[Path, list[Draft]]:
    out = args.out if args.out is not None else default_folder(loaded)
    if out.suffix in (".yaml", ".yml"):
        return {out: drafts}
    return {out / f"{draft.id}.yaml": [draft] for draft in drafts}


def write(args: argparse.Namespace, loaded: Any, drafts: list[Draft]) -> list[Path]:
    """Print (`--dry-run`) or write the drafts; an existing file is never replaced."""
    from gate.files import write_new_files

    targets = _targets(args, loaded, drafts)
    texts = {path: render(chunk, HEADER) for path, chunk in targets.items()}
    if args.dry_run:  # the YAML alone on stdout: what is said about it goes to stderr
        from gate.secrets import redact

        for text in texts.values():  # masked as a written file is (gate.files)
            print(redact(text.rstrip("\n")))
        return []
    return write_new_files(
        texts,
        refusal=[
            "{path}: exists; casegate add never replaces a file",
            "pick another --out or --id",
        ],
    )


def _uncovered(loaded: Any, written: Sequence[Path]) -> list[str]:
    """Written files the suite's `cases:` does not reach (a --out outside it)."""
    from gate.suite.cases import resolve_case_paths

    files, _ = resolve_case_paths(loaded.config.cases, loaded.root)
    known = {f.resolve() for f in files}
    return [str(p) for p in written if p.resolve() not in known]


def _relative(path: Path) -> Path:
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _report(loaded: Any, written: list[Path], drafted: list[Draft], notes: list[str]) -> None:
    for note in notes:
        print(f"casegate: warning: {one_line(note)}", file=sys.stderr)
    for path in written:
        print(f"wrote {one_line(str(_relative(path)))}")
    for outside in _uncovered(loaded, written):
        print(
            f"casegate: warning: {one_line(outside)} is outside the suite's `cases:`: move it in",
            file=sys.stderr,
        )
    if written:
        only = " ".join(f"--case {d.id}" for d in drafted[:5])
        print(
            "next: confirm each draft's `expect` and note, then `casegate validate` and "
            f"`casegate record --only-missing {only}`"
        )


def _shaped_draft(
    loaded: Any,
    exchange: Exchange,
    cases: Sequence[Any],
    case_id: str | None,
    commit: str | None,
    today: Any,
) -> tuple[Draft, Shaped]:
    shaped = shape_input(exchange, loaded.config.input_schema, [c.input for c in cases])
    expect, said = proposed_expect(exchange)
    chosen = case_id or propose_id(input_text(shaped.input) or exchange.user_text())
    comments = {"expect": said}
    if shaped.differences:
        comments["input"] = [
            "DRAFT input: it does not fit the suite's shape; complete it:",
            *shaped.differences,
        ]
    case = make_case(chosen, shaped.input, expect, provenance(exchange, commit), today)
    return Draft(case, comments), shaped


def add_one(args: argparse.Namespace, loaded: Any, cases: Sequence[Any], exchange: Exchange) -> int:

    commit = commit_of(loaded.root)
    draft, shaped = _shaped_draft(loaded, exchange, cases, args.case_id, commit, today())
    notes = [f"{one_line(exchange.where())}: input does not fit: {d}" for d in shaped.differences]
    near, skipped = _near(loaded, input_text(shaped.input), _existing(cases))
    if skipped:
        notes.append(skipped)
    if near is not None and not args.force:
        raise _refuse_near(near, cases, exchange.where())
    if near is not None:
        notes.append(f"near-duplicate of case {near.case_id!r} ({near.how}), added with --force")
    if (where := _taken(draft.id, cases)) is not None:
        raise SourceError(f"case id {draft.id!r} is taken ({where}): pick another with --id")
    print(
        f"drafted {draft.id} from {one_line(exchange.where())}; input: {shaped.how}",
        file=sys.stderr,
    )
    written = write(args, loaded, [draft])
    _report(loaded, written, [draft], notes)
    return 0


def add_ranked(
    args: argparse.Namespace, loaded: Any, cases: Sequence[Any], exchanges: list[Exchange]
) -> int:
    from gate.grow.rank import rank

    existing = _existing(cases)
    clusters, unit = rank(exchanges, [text for _, text in existing], loaded.config.pricing)
    commit, day = commit_of(loaded.root), today()
    drafts: list[Draft] = []
    notes: list[str] = []
    taken = {c.id for c in cases}
    top = args.top or DEFAULT_TOP
    # The ranking is what --rank is for; beside --dry-run's YAML it goes to stderr.
    table = sys.stderr if args.dry_run else sys.stdout
    print(
        f"{len(exchanges)} requests in {len(clusters)} clusters, ranked by failed, flagged, "
        f"cost ({unit}), novelty; drafting the top {top}:",
        file=table,
    )
    for cluster in clusters:
        if len(drafts) == top:
            break
        draft, _ = _shaped_draft(loaded, cluster.representative, cases, None, commit, day)
        text = input_text(draft.case["input"])
        near = near_duplicate(text, existing)
        where = one_line(cluster.representative.where())
        if near is not None and not args.force:
            notes.append(
                f"{where}: skipped, a near-duplicate of case {near.case_id!r} ({near.how})"
            )
            continue
        if draft.id in taken:
            notes.append(f"{where}: skipped, case id {draft.id!r} is taken")
            continue
        taken.add(draft.id)
        drafts.append(draft)
        print(
            f"{len(drafts):>3}. {draft.id}  {len(cluster.members)} request(s): "
            f"{cluster.reasons(unit)}  ({where})",
            file=table,
        )
    if loaded.config.embeddings is not None:
        notes.append("embedding similarity skipped under --rank: token ratio only")
    written = write(args, loaded, drafts) if drafts else []
    _report(loaded, written, drafts, notes)
    return 0


def add_failure(args: argparse.Namespace, loaded: Any, cases: Sequence[Any], failure: Any) -> int:
    from gate.grow.fromresults import failed_expect, failure_comments

    case = failure.case
    expect = failed_expect(failure)
    comments = failure_comments(failure)
    if not expect:
        expect, said = proposed_expect(failure.exchange)
        comments += said[1:]
    output = failure.exchange.output or failure.exchange.error or ""
    # The source's id and a hash of the wrong output: another failure is another case.
    digest = propose_id(output, salt=case.id).rsplit("-", 1)[1]
    case_id = args.case_id or f"{case.id[:150]}-regression-{digest}"
    near, skipped = _near(loaded, input_text(case.input), _existing(cases, leave_out=case.id))
    where = f"{failure.exchange.file} case {case.id}"
    if near is not None and not args.force:
        raise _refuse_near(near, cases, where)
    if (taken := _taken(case_id, cases)) is not None:
        raise SourceError(f"case id {case_id!r} is taken ({taken}): pick another with --id")
    origin = provenance(failure.exchange, commit_of(loaded.root))
    draft = Draft(
        make_case(case_id, dict(case.input), expect, origin, today()), {"expect": comments}
    )
    print(f"drafted {case_id} from the failing result of {case.id}", file=sys.stderr)
    written = write(args, loaded, [draft])
    _report(loaded, written, [draft], [skipped] if skipped else [])
    return 0
