"""`casegate show CASE`: why a case failed.

The case as the suite defines it (file:line, tags, critical, note), each check's
verdict and reason, every sample's whole output, and what changed from the
baseline's output: by word for prose, by line for JSON. Plain text for a terminal,
coloured only on one that has not asked for none (NO_COLOR, TERM=dumb).

Outputs and reasons are untrusted. They are shown escaped, so no control character
can move the cursor, recolour the screen or reorder what a reader sees, and each
line of an output sits behind a "│ " gutter, so none of it can pass for a line of
casegate's (or, in a CI log, for a workflow command).
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from gate.logsafe import LEGACY_BROKEN
from gate.reporting.diffs import Op, diff_texts

if TYPE_CHECKING:
    from gate.results import CaseResult, CheckResult, RunResults, SampleResult
    from gate.suite.cases import Case

#: what each line of an output (or of a diff) sits behind
GUTTER = "│"
_GLOB = frozenset("*?[")


def _escapes() -> dict[int, str]:
    """Control characters (C0 but tab and line feed, DEL, C1), the bidirectional
    controls and Unicode's line and paragraph separators: shown as escapes."""
    controls = [*range(0x20), 0x7F, *range(0x80, 0xA0)]
    marks = [0x061C, 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
    table = {c: f"\\x{c:02x}" for c in controls} | {c: f"\\u{c:04x}" for c in marks}
    table[ord("\r")] = "\\r"
    del table[ord("\n")], table[ord("\t")]
    return table


_ESCAPES = _escapes()
_ONE_LINE = {**_ESCAPES, ord("\n"): "\\n"}

# ANSI styles, used only when colour is on.
BOLD, DIM, RED, GREEN, CYAN = "1", "2", "31", "32", "36"


def escaped(text: str) -> str:
    """`text` with every control character shown as an escape; line breaks kept."""
    return text.translate(_ESCAPES)


def one_line(text: str) -> str:
    """`text` escaped onto one line (a line break shown as \\n), with the runner's older
    command form `##[` broken up, since it is read anywhere in a line (gate.logsafe)."""
    return text.translate(_ONE_LINE).replace("##[", LEGACY_BROKEN)


def wants_colour(stream: TextIO, environ: Mapping[str, str] = os.environ) -> bool:
    """Colour for a terminal that has not asked for none (https://no-color.org)."""
    isatty = getattr(stream, "isatty", None)
    return (
        bool(isatty and isatty()) and not environ.get("NO_COLOR") and environ.get("TERM") != "dumb"
    )


class _Paint:
    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def __call__(self, style: str, text: str) -> str:
        """`text` in `style`, one line at a time (a style never runs into a gutter)."""
        if not self.colour or not style:
            return text
        return "\n".join(
            f"\x1b[{style}m{line}\x1b[0m" if line else line for line in text.split("\n")
        )


def render_case(
    result: CaseResult,
    baseline: CaseResult | None = None,
    *,
    case: Case | None = None,
    baseline_source: str | None = None,
    colour: bool = False,
    only_failing: bool = False,
) -> str:
    """One case, for a terminal: what it is, its checks, its outputs in full, and
    the change from the baseline's output.

    `case` is the suite's own definition (its file:line, tags and note win over the
    ones the results recorded); `baseline_source` names the baseline read, None when
    there is none to compare with. `only_failing` leaves out the samples that passed.
    """
    paint = _Paint(colour)
    lines = [_headline(result, baseline, baseline_source, paint)]
    lines += _about(result, case)
    lines += ["", paint(BOLD, "checks")]
    for check in result.checks:
        mark = paint(GREEN, "✓") if check.ok else paint(RED, "✗")
        reason = f": {one_line(check.reason)}" if check.reason else ""
        lines.append(f"  {mark} {one_line(check.check)}{reason}{_score(check, baseline)}")
    if not result.checks:
        lines.append("  (none judged)")
    shown = [s for s in result.outputs if not (only_failing and s.status == "pass")]
    for sample in shown:
        lines += ["", *_sample(sample, len(result.outputs), paint)]
        if baseline_source is not None and baseline is not None:
            lines += _change(sample, baseline, paint)
    hidden = len(result.outputs) - len(shown)
    if hidden:
        lines += ["", f"({hidden} passing sample(s) not shown)"]
    return "\n".join(lines)


def _headline(
    result: CaseResult, baseline: CaseResult | None, source: str | None, paint: _Paint
) -> str:
    text = paint(BOLD, f"case {one_line(result.id)}:") + " "
    text += paint(GREEN if result.status == "pass" else RED, result.status.upper())
    if result.critical:
        text += " (critical)"
    if source is not None:
        text += f"; on the baseline: {baseline.status if baseline else 'absent (a new case)'}"
    return text


def _about(result: CaseResult, case: Case | None) -> list[str]:
    """The case's file:line, tags, note, provenance, date added, input files (with their
    sha256) and sample count."""
    where: str | None = result.source
    tags, note, provenance, added = result.tags, result.note, result.provenance, result.added
    if case is not None:
        where, tags, note = f"{case.source}:{case.line}", case.tags, case.note
        provenance, added = case.provenance, None if case.added is None else str(case.added)
    rows: list[tuple[str, str | None]] = [
        ("defined at", where),
        ("tags", ", ".join(tags) if tags else None),
        ("note", note),
        ("provenance", provenance),
        ("added", added),
    ]
    if case is not None and case.input_file_hashes:
        # What the recording key and the ruler hold of each file (its first 12 hex digits).
        files = [f"{name} ({digest[:12]})" for name, digest in case.input_file_hashes.items()]
        rows.append(("reads", ", ".join(files)))
    if case is not None and case.version != result.version:
        rows.append(
            ("version", f"{result.version} in these results; the case file now has {case.version}")
        )
    if result.samples > 1:
        rows.append(("samples", f"{result.passes}/{result.samples} passed"))
    return [f"  {label:<10}  {one_line(value)}" for label, value in rows if value]


def _score(check: CheckResult, baseline: CaseResult | None) -> str:
    """` (score 0.640, baseline 0.568)`: the case's mean score on a check that measures."""
    if check.score is None:
        return ""
    before = next(
        (c.score for c in (baseline.checks if baseline else []) if c.check == check.check),
        None,
    )
    against = f", baseline {before:.3f}" if before is not None else ""
    return f" (score {check.score:.3f}{against})"


def _sample(sample: SampleResult, count: int, paint: _Paint) -> list[str]:
    label = "output" if count == 1 else f"output, sample {sample.sample + 1} of {count}"
    lines = [paint(BOLD, f"{label} ({sample.status})")]
    if count > 1:
        lines += [
            f"  {paint(RED, '✗')} {one_line(c.check)}"
            + (f": {one_line(c.reason)}" if c.reason or c.score is None else "")
            + (f" (score {c.score:.3f})" if c.score is not None else "")
            for c in sample.checks
            if not c.ok
        ]
    if sample.status == "error":
        lines.append(f"  error: {one_line(sample.reason)}")
    if sample.text is None:
        lines.append("  (no output)")
    elif not sample.text:
        lines.append("  (empty output)")
    else:
        lines += _guttered(escaped(sample.text).split("\n"), paint)
    for call in sample.tool_calls:
        name, arguments = (
            call.get("name", "?"),
            call.get("arguments", call.get("invalid_arguments")),
        )
        lines.append(f"  tool call: {one_line(str(name))} {one_line(_json(arguments))}")
    return lines


def _guttered(lines: Iterable[str], paint: _Paint) -> list[str]:
    gutter = paint(DIM, GUTTER)
    return [f"  {gutter} {line}" if line else f"  {gutter}" for line in lines]


def _change(sample: SampleResult, baseline: CaseResult, paint: _Paint) -> list[str]:
    """The sample's change from the baseline's output of the same index (else its first)."""
    texts = {s.sample: s.text for s in baseline.outputs if s.text is not None}
    if sample.text is None:
        return []
    if not texts:
        return ["", "the baseline has no output to compare with"]
    index = sample.sample if sample.sample in texts else min(texts)
    which = "the baseline's output" + (
        f" (sample {index + 1})" if len(baseline.outputs) > 1 else ""
    )
    diff = diff_texts(texts[index], sample.text)
    if not diff:
        return ["", f"the same as {which}"]
    if diff.kind == "words":
        heading = f"change from {which}, by word ([-removed-] {{+added+}})"

        def mark(op: Op, text: str) -> str:
            shown = escaped(text)
            if op == " ":
                return shown
            wrapped = f"[-{shown}-]" if op == "-" else f"{{+{shown}+}}"
            return paint(RED if op == "-" else GREEN, wrapped)

        body = diff.inline(mark).split("\n")
    else:
        heading = f"change from {which}, by line (JSON pretty-printed, keys sorted)"
        style = {"-": RED, "+": GREEN, "@": CYAN}
        body = [paint(style.get(line[:1], ""), escaped(line)) for line in diff.lines()]
    return ["", paint(BOLD, heading), *_guttered(body, paint)]


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


# --- choosing the cases -----------------------------------------------------------


def choose(
    patterns: Sequence[str], results: RunResults, where: str, defined: Iterable[str] = ()
) -> list[CaseResult]:
    """The results' cases that `patterns` (ids or globs) name, in their order; a
    CasegateError naming every pattern that names none, with the nearest id."""
    from gate.errors import CasegateError

    by_id = results.case_map()
    suite = set(defined)
    chosen: dict[str, CaseResult] = {}
    problems = []
    for pattern in patterns:
        if _GLOB & set(pattern):
            hits = [case_id for case_id in by_id if fnmatch.fnmatchcase(case_id, pattern)]
            if not hits:
                problems.append(f"no case in {where} matches {pattern!r}")
        elif pattern in by_id:
            hits = [pattern]
        elif pattern in suite:
            hits = []
            problems.append(
                f"case {pattern!r} is in the suite but not in {where}: run the suite "
                "(`casegate run`) to judge it"
            )
        else:
            hits = []
            hint = difflib.get_close_matches(pattern, [*by_id, *sorted(suite - set(by_id))], n=1)
            problems.append(
                f"no case {pattern!r} in {where}"
                + (f" (did you mean {hint[0]!r}?)" if hint else "")
            )
        chosen.update((case_id, by_id[case_id]) for case_id in hits)
    if problems:
        raise CasegateError(problems)
    return list(chosen.values())


# --- the command ------------------------------------------------------------------


def add_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Add `casegate show` to the command line's subcommands."""
    parser = subparsers.add_parser(
        "show",
        help="show why a case failed: its checks, its whole output, the change from the baseline",
    )
    parser.add_argument(
        "cases", nargs="+", metavar="CASE", help="a case id, or a glob (quoted) naming several"
    )
    parser.add_argument(
        "--results", type=Path, help="results file (default: .casegate/SUITE-results.json)"
    )
    parser.add_argument("--baseline", type=Path, help="baseline file (default: the config's)")
    parser.add_argument(
        "-c",
        "--config",
        default=Path("casegate.yml"),
        type=Path,
        help="run configuration (default: %(default)s)",
    )
    parser.set_defaults(handler=cmd_show)
    return parser


def cmd_show(args: argparse.Namespace, stdout: TextIO | None = None) -> int:
    from gate.results import read_results
    from gate.suite.project import load_project

    out = stdout or sys.stdout
    # The config gives the default paths and the cases' own definitions; with --results
    # and no config file, the results alone are enough.
    loaded: Any = None
    cases: Sequence[Case] = []
    if args.results is None or args.config.is_file():
        loaded, cases = load_project(args.config)
    results_path = args.results
    if results_path is None:  # where `casegate run` writes them
        results_path = Path(".casegate") / f"{loaded.config.suite}-results.json"
    results = read_results(results_path)
    # Which run this is: the default file holds whatever ran last, on whatever branch.
    stale = (
        "; the config has changed since, so run again to see it now"
        if loaded is not None
        and results.config_hash
        and results.config_hash != loaded.config_hash()
        else ""
    )
    print(
        f"casegate: from {_shown_path(results_path)}, the {results.mode or 'unknown'} run of "
        f"{one_line(results.created_at or 'an unknown time')}{stale}",
        file=sys.stderr,
    )
    defined = {case.id: case for case in cases}
    chosen = choose(args.cases, results, str(results_path), defined)

    baseline_path = args.baseline or (loaded.baseline_path if loaded is not None else None)
    baseline = None
    if baseline_path is not None and (args.baseline is not None or baseline_path.is_file()):
        baseline = read_results(baseline_path)
    elif baseline_path is not None:
        print(
            f"casegate: note: no baseline at {_shown_path(baseline_path)} yet (`casegate "
            "baseline` writes it): nothing to compare the outputs with",
            file=sys.stderr,
        )
    before = baseline.case_map() if baseline is not None else {}
    source = _shown_path(baseline_path) if baseline is not None and baseline_path else None
    colour = wants_colour(out)
    blocks = [
        render_case(
            result,
            before.get(result.id),
            case=defined.get(result.id),
            baseline_source=source,
            colour=colour,
        )
        for result in chosen
    ]
    out.write("\n\n".join(blocks) + "\n")
    return 0


def _shown_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
