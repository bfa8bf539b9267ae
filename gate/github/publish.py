"""What the Action tells the runner: log lines, the step's outputs and summary, annotations on
the lines of changed rulers, regressed cases and problems, and its exit codes."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from gate.logsafe import Annotation, command, fence
from gate.secrets import redact

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
Level = Literal["error", "warning", "notice"]


# --- the log and the step's files --------------------------------------------------


def _emit(line: str) -> None:
    print(line, flush=True)


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as stream:
            stream.write(redact(text))


def write_outputs(path: str | None, outputs: Mapping[str, str]) -> None:
    """Append outputs with the delimiter syntax, which is safe for any value."""
    chunks = []
    for name, value in outputs.items():
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
        chunks.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    _append(path, "".join(chunks))


def _rate(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


# --- annotations ----------------------------------------------------------------------


def workspace_path(path_text: str, cwd: Path, workspace: Path) -> str:
    """A path as annotations need it: relative to the repository's root."""
    try:
        return (cwd / path_text).resolve().relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return path_text


def ruler_annotations(outcome: Any, cwd: Path, workspace: Path) -> list[Annotation]:
    """An annotation on the line of each ruler change: an error while it blocks."""
    review = outcome.comparison.ruler
    if review is None:
        return []
    lines = []
    for change in review.changes:
        path_text, _, line_text = change.where.partition(" ")[0].rpartition(":")
        file = workspace_path(path_text, cwd, workspace) if path_text else None
        line = int(line_text) if line_text.isdigit() else None
        blocking = change.loosens and not review.accepted
        level: Level = "error" if blocking else "notice"
        state = (
            "accepted"
            if change.loosens and review.accepted
            else ("loosens the ruler" if change.loosens else "tightens the ruler")
        )
        lines.append(
            Annotation(
                level, f"{change.describe()} ({state})", file, line, "casegate: ruler change"
            )
        )
    return lines


def case_annotations(outcome: Any, cwd: Path, workspace: Path) -> list[Annotation]:
    """Errors on critical regressions and errored critical cases; warnings for the rest."""
    comparison = outcome.comparison
    lines = []
    cases = comparison.candidate_cases
    for case_id, kind in [(i, "regressed") for i in comparison.regressions] + [
        (i, "errored") for i in comparison.errors
    ]:
        case = cases[case_id]
        file, line = None, None
        if case.source:
            path_text, _, line_text = case.source.rpartition(":")
            file = workspace_path(path_text, cwd, workspace)
            line = int(line_text) if line_text.isdigit() else None
        level: Level = "error" if case.critical else "warning"
        title = f"casegate: {'critical ' if case.critical else ''}case {case_id} {kind}"
        lines.append(Annotation(level, case.reason or kind, file, line, title))
    return lines


def _problem_lines(problems: Sequence[str], workspace: Path) -> list[str]:
    """`path:line: message` problems become annotations on that file and line."""
    lines = []
    for problem in problems:
        head, sep, message = problem.partition(": ")
        path, _, line = head.rpartition(":")
        if sep and path and line.isdigit():
            file = workspace_path(path, Path.cwd(), workspace)
            lines.append(command("error", message, file=file, line=int(line)))
        else:
            lines.append(command("error", problem))
    return lines


def _print_untrusted(text: str) -> None:
    """Text the pull request can shape, fenced so no line of it is a workflow command."""
    if text.strip():
        print(fence(text.rstrip("\n")), flush=True)
