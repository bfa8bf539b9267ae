"""The labels a person gave the judge's verdicts (`casegate judge calibrate LABELS.jsonl`).

One JSON object a line: `{case, output, verdict: pass|fail}` (with an optional `note`; a
`check` naming which judged check it is about when the case has several: a graded judge
or a RAG metric is labelled pass or fail at its threshold; `contexts` the output was
grounded on, when the case input has none), or for a pairwise judge `{case,
baseline_output, candidate_output, label: A|B|tie}`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from gate.checks.graded import judged_checks, pairwise_rubric, uses_judge
from gate.errors import CaseFileError, located
from gate.outputs import Context
from gate.suite.cases import Case

VERDICTS = ("pass", "fail")
#: which output of a pair is better: A the baseline's, B the candidate's, or neither
PAIR_LABELS = ("A", "B", "tie")
PairLabelValue = Literal["A", "B", "tie"]
_POINTWISE_KEYS = {"case", "output", "verdict", "note", "check", "contexts"}
_PAIRWISE_KEYS = {"case", "baseline_output", "candidate_output", "label", "note"}


@dataclass(frozen=True, slots=True)
class Label:
    case: Case
    output: str
    human: bool  # True: a person judged it a pass
    line: int
    #: the judged check the label is about: `judge` (pass/fail or graded, at its threshold)
    #: or a RAG metric (at its threshold)
    check: str = "judge"
    #: the passages the output was grounded on (a RAG metric's; else the case input's)
    contexts: tuple[Context, ...] = ()


@dataclass(frozen=True, slots=True)
class PairLabel:
    case: Case
    baseline: str
    candidate: str
    #: A: the baseline's output is better; B: the candidate's; tie: neither
    human: PairLabelValue
    line: int


def read_labels(path: Path, cases: Sequence[Case]) -> list[Label | PairLabel]:
    """One JSON object per line: {"case": id, "output": text, "verdict": "pass"|"fail"},
    or for a pairwise judge {"case", "baseline_output", "candidate_output", "label"}."""
    by_id = {case.id: case for case in cases}
    labels: list[Label | PairLabel] = []
    problems: list[str] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CaseFileError(f"{path}: cannot read labels: {exc.strerror or exc}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(located(path, number, f"not valid JSON ({exc.msg})"))
            continue
        if isinstance(entry, dict) and "label" in entry and not set(entry) - _PAIRWISE_KEYS:
            found = _pair_label(entry, by_id, number)
            if isinstance(found, str):
                problems.append(located(path, number, found))
            else:
                labels.append(found)
            continue
        if not isinstance(entry, dict) or set(entry) - _POINTWISE_KEYS:
            problems.append(
                located(
                    path,
                    number,
                    "expected {case, output, verdict}, or for a pairwise judge {case, "
                    "baseline_output, candidate_output, label} (either with an optional note)",
                )
            )
            continue
        case = by_id.get(entry.get("case"))  # type: ignore[arg-type]
        if case is None:
            problems.append(located(path, number, f"unknown case {entry.get('case')!r}"))
        elif not uses_judge(case.expect):
            problems.append(located(path, number, f"case {case.id!r} has no judge check"))
        elif not judged_checks(case.expect):
            problems.append(
                located(
                    path,
                    number,
                    f"case {case.id!r} has a pairwise judge: label a pair instead "
                    "({case, baseline_output, candidate_output, label: A, B or tie})",
                )
            )
        elif not isinstance(entry.get("output"), str):
            problems.append(located(path, number, "output must be a string"))
        elif entry.get("verdict") not in VERDICTS:
            problems.append(located(path, number, "verdict must be 'pass' or 'fail'"))
        else:
            single = _single_label(entry, case, number)
            if isinstance(single, str):
                problems.append(located(path, number, single))
            else:
                labels.append(single)
    if problems:
        raise CaseFileError(problems)
    if not labels:
        raise CaseFileError(f"{path}: no labels")
    return labels


def _single_label(entry: dict[str, Any], case: Case, line: int) -> Label | str:
    """A pass/fail label on one of the case's judged checks, or the problem with it."""
    names = judged_checks(case.expect)
    check = entry.get("check")
    if check is None:
        if len(names) > 1 and "judge" not in names:
            return f"case {case.id!r} has {', '.join(names)}: say which with `check`"
        check = "judge" if "judge" in names else names[0]
    if check not in names:
        return f"check must be one of the case's judged checks ({', '.join(names)}), got {check!r}"
    contexts: list[Context] = []
    given = entry.get("contexts", [])
    if not isinstance(given, list):
        return "contexts must be a list of strings or {id, text}"
    for item in given:
        try:
            contexts.append(
                Context(text=item) if isinstance(item, str) else Context.model_validate(item)
            )
        except ValidationError:
            return "contexts must be a list of strings or {id, text}"
    return Label(case, entry["output"], entry["verdict"] == "pass", line, check, tuple(contexts))


def _pair_label(entry: dict[str, Any], by_id: dict[str, Case], line: int) -> PairLabel | str:
    """A pairwise label, or the problem with it."""
    case = by_id.get(entry.get("case"))  # type: ignore[arg-type]
    if case is None:
        return f"unknown case {entry.get('case')!r}"
    if pairwise_rubric(case.expect) is None:
        return f"case {case.id!r} has no pairwise judge (judge: {{rubric, mode: pairwise}})"
    baseline, candidate = entry.get("baseline_output"), entry.get("candidate_output")
    if not isinstance(baseline, str) or not isinstance(candidate, str):
        return "baseline_output and candidate_output must both be strings"
    label = entry.get("label")
    if label == "A":
        return PairLabel(case, baseline, candidate, "A", line)
    if label == "B":
        return PairLabel(case, baseline, candidate, "B", line)
    if label == "tie":
        return PairLabel(case, baseline, candidate, "tie", line)
    return (
        "label must be 'A' (the baseline_output is better), 'B' (the candidate_output is) or 'tie'"
    )
