"""`casegate add`: the command line. Reads a source, picks or ranks, writes drafts.

Every source goes read → select → `_redacted` → pick or rank → shape → compare → draft →
write: `_redacted` sees every exchange before anything of it is shown or written.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gate import secrets
from gate.grow.exchange import Exchange, Message, SourceError
from gate.reporting.show import one_line

SOURCES = ("from_results", "from_log", "from_otel", "from_langsmith", "from_langfuse")


#: a model call without message text: an instrumentation that records no content (the
#: OpenTelemetry GenAI instrumentations' default) leaves nothing a case could ask
NO_TEXT = (
    "without message text, left out: the instrumentation recorded no content (for "
    "OpenTelemetry, set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)"
)


NOT_REDACTED = (
    "casegate: warning: --no-redact: the drafts hold the source's text as it was, personal "
    "data included (emails, phone numbers, cards, IBANs, IP addresses, privacy.redact_keys)"
)


def add_parser(subparsers: Any) -> None:
    from gate.suite import options

    add = subparsers.add_parser(
        "add", help="draft a regression case from a failing result, a request log or a trace"
    )
    source = add.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--from-results",
        type=Path,
        metavar="RESULTS.json",
        help="a results file; with --case, the failing case to draft from",
    )
    source.add_argument(
        "--from-log",
        type=Path,
        metavar="FILE.jsonl",
        help="a request log: {request, response, metadata} or Batch API lines",
    )
    source.add_argument(
        "--from-otel",
        type=Path,
        metavar="FILE.json",
        help="an OTLP JSON export of OpenTelemetry GenAI spans",
    )
    source.add_argument(
        "--from-langsmith",
        type=Path,
        metavar="FILE",
        help="LangSmith runs (JSON list, {runs: [...]} or JSONL)",
    )
    source.add_argument(
        "--from-langfuse",
        type=Path,
        metavar="FILE",
        help="Langfuse traces or observations (JSON, {data: [...]} or JSONL)",
    )
    add.add_argument(
        "--case", dest="source_case", metavar="ID", help="with --from-results: the failing case"
    )
    add.add_argument(
        "--line", type=int, metavar="N", help="with --from-log: the line to draft from"
    )
    for flag, what in (
        ("--span", "span id (or trace id)"),
        ("--run", "run id (or trace id)"),
        ("--trace", "trace or observation id"),
    ):
        add.add_argument(flag, dest="pick", metavar="ID", help=f"the record's {what}")
    add.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only records whose metadata KEY equals VALUE (repeatable; all must match)",
    )
    add.add_argument(
        "--rank",
        action="store_true",
        help="cluster every record, rank the clusters and draft the top ones",
    )
    add.add_argument(
        "--top",
        type=int,
        metavar="N",
        help="with --rank: drafts to write (default 10)",
    )
    add.add_argument(
        "--id", dest="case_id", metavar="ID", help="the new case's id (default: from its text)"
    )
    add.add_argument(
        "--out",
        type=Path,
        metavar="DIR_OR_FILE",
        help="a folder (one file a draft) or a .yaml file (default: the suite's first case folder)",
    )
    add.add_argument("--dry-run", action="store_true", help="print the YAML; write nothing")
    add.add_argument(
        "--no-redact",
        action="store_true",
        help="keep personal data (emails, phones, cards, IBANs, IPs, privacy.redact_keys)",
    )
    add.add_argument(
        "--force", action="store_true", help="add a near-duplicate of an existing case"
    )
    options.config_option(add)
    add.set_defaults(handler=options.deferred("gate.grow.command", "cmd_add"))


def _redacted(exchange: Exchange, loaded: Any, tally: Counter[str]) -> Exchange:
    """The exchange with personal data taken out before anything is shown or written.

    Every text of the exchange (messages, output, tool calls, error, flag, named fields,
    metadata) goes through gate.pii.redact in one call, so one address is one placeholder
    throughout the exchange, and the values of `privacy.redact_keys` go whole. The counts
    are added to `tally`, which the command reports. Here, and nowhere else.
    """
    from gate.pii import redact

    keys = loaded.config.privacy.redact_keys
    found = redact(
        {
            "messages": [message.text for message in exchange.messages],
            "output": exchange.output,
            "tool_calls": list(exchange.tool_calls),
            "error": exchange.error,
            "flagged": exchange.flagged,
            "fields": dict(exchange.fields),
            "metadata": dict(exchange.metadata),
            "ids": list(exchange.ids),
            "file": exchange.file,
        },
        keys,
    )
    tally.update(found.counts)
    clean = found.value
    return dataclasses.replace(
        exchange,
        messages=tuple(
            Message(message.role, text)
            for message, text in zip(exchange.messages, clean["messages"], strict=True)
        ),
        output=clean["output"],
        tool_calls=tuple(clean["tool_calls"]),
        error=clean["error"],
        flagged=clean["flagged"],
        fields=clean["fields"],
        metadata=clean["metadata"],
        ids=tuple(clean["ids"]),
        file=clean["file"],
    )


#: credentials by their published shapes (OpenAI and Anthropic keys, GitHub tokens, AWS
#: access key ids, Slack tokens, JSON Web Tokens): a log that captured one (a debug line, a
#: pasted key, an error echoing it) must not become a committed case. Always masked, even
#: under --no-redact, which is about personal data.
_SECRET_SHAPES = re.compile(
    # No word boundary before: `\nghp_…` (an escaped newline), `%3Dghp_…`, `api_key_ghp_…`
    # all end in a token, and the prefixes are distinctive enough alone.
    r"(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}|sk_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|AKIA[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_-]{35}|hf_[A-Za-z0-9]{30,}|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z))",
    re.DOTALL,
)


def _without_secrets(exchange: Exchange, tally: Counter[str]) -> Exchange:
    """The exchange with every credential masked: the keys the suite's config reads from
    the environment (gate.secrets, announced by cmd_add) and any credential-shaped token."""

    def clean(text: str | None) -> str | None:
        if text is None:
            return None
        masked = _SECRET_SHAPES.sub(secrets.MASK, secrets.redact_spread(text))
        tally["secret"] += masked.count(secrets.MASK) - text.count(secrets.MASK)
        return masked

    def cleaned(text: str) -> str:
        return clean(text) or ""

    found = dataclasses.replace(
        exchange,
        messages=tuple(Message(m.role, cleaned(m.text)) for m in exchange.messages),
        output=clean(exchange.output),
        tool_calls=tuple(cleaned(call) for call in exchange.tool_calls),
        error=clean(exchange.error),
        flagged=clean(exchange.flagged),
        fields={cleaned(key): cleaned(value) for key, value in exchange.fields.items()},
        metadata={key: cleaned(value) for key, value in exchange.metadata.items()},
        # Ids and the file name reach the draft's provenance and every message about it.
        ids=tuple(cleaned(found) for found in exchange.ids),
        file=cleaned(exchange.file),
    )
    if not tally["secret"]:
        del tally["secret"]
    return found


def _redaction_said(tally: Counter[str], read: int) -> str:
    """What was taken out, by kind and count (never a value): one line for stderr."""
    if not tally:
        return f"redacted: nothing found in {read} record(s) (gate.pii; privacy.redact_keys)"
    shown = ", ".join(f"{count} {kind}" for kind, count in sorted(tally.items()))
    return f"redacted from {read} record(s) before drafting: {shown}"


def cmd_add(args: argparse.Namespace) -> int:
    from gate.suite.project import load_project

    _check_arguments(args)
    loaded, cases = load_project(args.config)
    # The keys the suite reads are masked wherever a source quotes them (_without_secrets).
    secrets.announce_keys(loaded.as_dict(), os.environ)
    if args.from_results is not None:
        return _from_results(args, loaded, cases)
    # Selected on the metadata as recorded (a redacted value would match no filter); nothing
    # of an exchange is shown or written before it is redacted.
    selected = select(_read(args), args.select, _source(args))
    tally: Counter[str] = Counter()
    selected = [_without_secrets(e, tally) for e in selected]
    if args.no_redact:
        exchanges = selected
        print(NOT_REDACTED, file=sys.stderr)
    else:
        exchanges = [_redacted(e, loaded, tally) for e in selected]
    print(f"casegate: {_redaction_said(tally, len(exchanges))}", file=sys.stderr)
    if args.rank:
        from gate.grow.adding import add_ranked

        worded = [e for e in exchanges if e.user_text().strip()]
        if len(worded) < len(exchanges):
            left = len(exchanges) - len(worded)
            print(f"casegate: warning: {left} model call(s) {NO_TEXT}", file=sys.stderr)
        return add_ranked(args, loaded, cases, worded)
    from gate.grow.adding import add_one

    chosen = pick(exchanges, args, _source(args))
    if not chosen.user_text().strip():
        raise SourceError(f"{one_line(chosen.where())}: {NO_TEXT}")
    return add_one(args, loaded, cases, chosen)


def _check_arguments(args: argparse.Namespace) -> None:
    from gate.grow.draft import id_problem

    problems = []
    if args.from_results is not None and not args.source_case:
        problems.append("--from-results needs --case ID: the failing case to draft from")
    if args.line is not None and args.from_log is None:
        problems.append("--line is for --from-log; pick a span, run or trace by its id")
    if args.rank and (args.line is not None or args.pick or args.case_id):
        problems.append(
            "--rank drafts the top clusters: it takes no --line, --span, --run, --trace or --id"
        )
    if args.rank and args.from_results is not None:
        problems.append(
            "--rank reads a whole export: --from-log, --from-otel, --from-langsmith or "
            "--from-langfuse"
        )
    if args.top is not None and not args.rank:
        problems.append("--top is for --rank")
    if args.from_results is not None and (args.line is not None or args.pick or args.select):
        problems.append(
            "--from-results picks the case with --case: no --line, --span, --run, --trace "
            "or --select"
        )
    if args.top is not None and not 1 <= args.top <= 1000:
        problems.append(f"--top takes 1 to 1000, not {args.top}")
    if args.case_id is not None and (problem := id_problem(args.case_id)):
        problems.append(f"--id: {problem}")
    for item in args.select:
        if "=" not in item or not item.split("=", 1)[0]:
            problems.append(f"--select {item[:80]!r}: write KEY=VALUE, e.g. --select env=prod")
    if problems:
        raise SourceError(problems)


def _source(args: argparse.Namespace) -> Path:
    found: Path = next(getattr(args, n) for n in SOURCES if getattr(args, n) is not None)
    return found


def _read(args: argparse.Namespace) -> list[Exchange]:
    from gate.grow import logs, otel, platforms

    readers: dict[str, Callable[[Path], list[Exchange]]] = {
        "from_log": logs.read_log,
        "from_otel": otel.read_otel,
        "from_langsmith": platforms.read_langsmith,
        "from_langfuse": platforms.read_langfuse,
    }
    name = next(n for n in readers if getattr(args, n) is not None)
    return readers[name](getattr(args, name))


def select(exchanges: list[Exchange], filters: Sequence[str], path: Path) -> list[Exchange]:
    """The exchanges whose metadata has every KEY=VALUE (values compared as text)."""
    from gate.grow.reading import shown

    wanted = [tuple(item.split("=", 1)) for item in filters]
    kept = [e for e in exchanges if all(e.metadata.get(k) == v for k, v in wanted)]
    if not kept:
        what = f"matching {' and '.join(filters)}" if filters else "with a request in it"
        raise SourceError(f"{shown(path)}: no record {what}"[:300])
    return kept


def pick(exchanges: list[Exchange], args: argparse.Namespace, path: Path) -> Exchange:
    """The one exchange `--line`/`--span`/`--run`/`--trace` names, or the only one."""
    from gate.grow.reading import shown
    from gate.reporting.show import one_line

    if args.line is not None:
        found = [e for e in exchanges if e.line == args.line]
        named = f"line {args.line}"
    elif args.pick:
        found = [e for e in exchanges if args.pick in e.ids]
        named = f"id {one_line(args.pick)[:80]!r}"
    else:
        found, named = exchanges, "a record"
    if len(found) == 1:
        return found[0]
    if not found:
        known = ", ".join(one_line(e.short())[:100] for e in exchanges[:5])
        more = ", …" if len(exchanges) > 5 else ""
        raise SourceError(
            f"{shown(path)}: no model call at {named} (a record without messages, or a span "
            f"without gen_ai.* attributes, is none); there are {len(exchanges)}: {known}{more}"
        )
    listed = ", ".join(one_line(e.short())[:100] for e in found[:5])
    more = ", …" if len(found) > 5 else ""
    which = f"at {named}" if args.line is not None or args.pick else "and none picked"
    raise SourceError(
        f"{shown(path)}: {len(found)} model calls {which} ({listed}{more}): pick one with "
        "--line, --span, --run or --trace, narrow with --select KEY=VALUE, or --rank them"
    )


def _from_results(args: argparse.Namespace, loaded: Any, cases: list[Any]) -> int:
    from gate.grow.adding import add_failure
    from gate.grow.fromresults import read_failure

    failure = read_failure(args.from_results, args.source_case, cases)
    tally: Counter[str] = Counter()
    # The failed checks' reasons quote the output (`starts_with` shows its start, a judge its
    # rationale): they ride through both steps as the exchange's messages do.
    quoted = dataclasses.replace(
        failure.exchange,
        messages=(
            *failure.exchange.messages,
            *(Message("reason", reason) for _, reason in failure.failed),
        ),
    )
    exchange = _without_secrets(quoted, tally)
    if args.no_redact:
        print(NOT_REDACTED, file=sys.stderr)
    else:
        exchange = _redacted(exchange, loaded, tally)
    own = len(failure.exchange.messages)
    reasons = [message.text for message in exchange.messages[own:]]
    failed = [(check, reason) for (check, _), reason in zip(failure.failed, reasons, strict=True)]
    exchange = dataclasses.replace(exchange, messages=exchange.messages[:own])
    failure = type(failure)(failure.case, failed, exchange, failure.origin)
    print(f"casegate: {_redaction_said(tally, 1)}", file=sys.stderr)
    return add_failure(args, loaded, cases, failure)
