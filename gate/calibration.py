"""Calibrating the pinned judge against verdicts a person gave.

`casegate judge calibrate LABELS.jsonl` grades labelled outputs with the pinned
judge and measures how far to trust it: agreement, Cohen's kappa, and the two
error rates that matter for a gate (false passes hide regressions, false fails
cry wolf). The result is stored beside the config, and every report on a suite
that uses the judge quotes it, or warns that the pin has moved since.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.cases import Case
from gate.config import LoadedConfig
from gate.errors import CaseFileError, ConfigError, MissingRecordingError, ResultsError, located
from gate.judge import Grader, JudgePin, MissingJudgeRecording, pin_fingerprint
from gate.recordings import RecordingStore
from gate.secrets import redact

SCHEMA = "casegate.calibration/1"
VERDICTS = ("pass", "fail")


@dataclass(frozen=True, slots=True)
class Label:
    case: Case
    output: str
    human: bool  # True: a person judged it a pass
    line: int


def calibration_path(loaded: LoadedConfig) -> Path:
    return loaded.root / f"{loaded.config.suite}.judge-calibration.json"


def read_labels(path: Path, cases: Sequence[Case]) -> list[Label]:
    """One JSON object per line: {"case": id, "output": text, "verdict": "pass"|"fail"}."""
    by_id = {case.id: case for case in cases}
    labels, problems = [], []
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
        if not isinstance(entry, dict) or set(entry) - {"case", "output", "verdict", "note"}:
            problems.append(
                located(path, number, "expected {case, output, verdict} (and optional note)")
            )
            continue
        case = by_id.get(entry.get("case"))  # type: ignore[arg-type]
        if case is None:
            problems.append(located(path, number, f"unknown case {entry.get('case')!r}"))
        elif "judge" not in case.expect:
            problems.append(located(path, number, f"case {case.id!r} has no judge check"))
        elif not isinstance(entry.get("output"), str):
            problems.append(located(path, number, "output must be a string"))
        elif entry.get("verdict") not in VERDICTS:
            problems.append(located(path, number, "verdict must be 'pass' or 'fail'"))
        else:
            labels.append(Label(case, entry["output"], entry["verdict"] == "pass", number))
    if problems:
        raise CaseFileError(problems)
    if not labels:
        raise CaseFileError(f"{path}: no labels")
    return labels


def cohen_kappa(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """Agreement beyond chance; None when chance agreement is total (one label only)."""
    n = len(pairs)
    if not n:
        return None
    observed = sum(a == b for a, b in pairs) / n
    first = sum(a for a, _ in pairs) / n
    second = sum(b for _, b in pairs) / n
    expected = first * second + (1 - first) * (1 - second)
    if expected >= 1:
        return None
    return (observed - expected) / (1 - expected)


def _rate(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def calibrate(
    loaded: LoadedConfig, labels: Sequence[Label], mode: str, *, only_missing: bool = False
) -> dict[str, Any]:
    pin = loaded.config.judge
    if pin is None:
        raise ConfigError(f"{loaded.path}: no `judge:` is pinned; there is nothing to calibrate")
    store = RecordingStore(loaded.recordings_dir)
    grader = Grader(
        pin,
        mode=mode,
        store=store,
        root=loaded.root,
        reuse_recorded=mode == "record" and only_missing,
    )
    grader.prepare()

    def grade(label: Label) -> tuple[bool | None, str]:
        rubric = label.case.expect["judge"]["rubric"]
        try:
            return grader.verdict(label.case, rubric, label.output)
        except MissingJudgeRecording:
            return None, "no recording"
        except Exception as exc:
            return None, redact(str(exc))

    with ThreadPoolExecutor(max_workers=loaded.config.concurrency) as pool:
        graded = list(pool.map(grade, labels))
    if grader.missing:
        raise MissingRecordingError(
            [
                f"no recorded judge verdict for {len(grader.missing)} label(s) in "
                f"{store.folder}: cases {', '.join(sorted(set(grader.missing))[:10])}",
                "run `casegate judge calibrate --mode record LABELS.jsonl` with the judge's "
                "key set, and commit the recordings",
            ]
        )
    pairs = [(label.human, verdict) for label, (verdict, _) in zip(labels, graded, strict=True)]
    judged = [(h, j) for h, j in pairs if j is not None]
    human_fails = sum(1 for h, _ in judged if not h)
    human_passes = len(judged) - human_fails
    false_pass = sum(1 for h, j in judged if j and not h)
    false_fail = sum(1 for h, j in judged if h and not j)
    kappa = cohen_kappa([(h, bool(j)) for h, j in judged])
    return {
        "schema": SCHEMA,
        "suite": loaded.config.suite,
        "calibrated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "pin": pin.model_dump(mode="json"),
        "pin_fingerprint": pin_fingerprint(pin),
        "labels": len(labels),
        "judged": len(judged),
        "errors": len(labels) - len(judged),
        "agreement": _rate(sum(h == j for h, j in judged), len(judged)),
        "kappa": kappa,
        "false_pass_rate": _rate(false_pass, human_fails),
        "false_fail_rate": _rate(false_fail, human_passes),
        "confusion": {
            "both_pass": sum(1 for h, j in judged if h and j),
            "both_fail": sum(1 for h, j in judged if not h and not j),
            "judge_pass_human_fail": false_pass,
            "judge_fail_human_pass": false_fail,
        },
        "disagreements": [
            {
                "case": label.case.id,
                "line": label.line,
                "human": "pass" if label.human else "fail",
                "judge": "error" if verdict is None else ("pass" if verdict else "fail"),
                "reason": reason,
            }
            for label, (verdict, reason) in zip(labels, graded, strict=True)
            if verdict != label.human
        ],
    }


def _fmt(value: float | None, percent: bool = True) -> str:
    if value is None:
        return "n/a"
    return f"{value:.0%}" if percent else f"{value:.2f}"


def summary_lines(result: dict[str, Any]) -> list[str]:
    return [
        f"judge: {JudgePin.model_validate(result['pin']).describe()}",
        f"labels: {result['labels']} ({result['judged']} judged, {result['errors']} errors)",
        f"agreement: {_fmt(result['agreement'])}   Cohen's kappa: {_fmt(result['kappa'], False)}",
        f"false-pass rate: {_fmt(result['false_pass_rate'])} (judge passed what a person failed)",
        f"false-fail rate: {_fmt(result['false_fail_rate'])} (judge failed what a person passed)",
    ]


def read_calibration(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ResultsError(f"{path}: not valid JSON ({exc}); re-run the calibration") from None
    return data if isinstance(data, dict) and data.get("schema") == SCHEMA else None


def judge_lines(
    judge: dict[str, Any] | None, uses_judge: bool, calibration: dict[str, Any] | None
) -> tuple[list[str], list[str]]:
    """(information, warnings) about the judge for a report on a run that used it."""
    if judge is None or not uses_judge:
        return [], []
    try:
        pin = JudgePin.model_validate(judge)
    except ValueError:  # a results file is input too: its pin may be anything
        return [], ["the results file's judge pin is unreadable: the judge cannot be named"]
    info = [f"LLM judge: {pin.describe()}"]
    if calibration is None:
        return info, [
            "the LLM judge has never been calibrated for this suite: "
            "run `casegate judge calibrate LABELS.jsonl` before trusting its verdicts"
        ]
    when = str(calibration.get("calibrated_at", "?"))[:10]
    info[0] += (
        f"; last calibrated {when}: kappa {_fmt(calibration.get('kappa'), False)}, "
        f"agreement {_fmt(calibration.get('agreement'))} on {calibration.get('judged')} labels, "
        f"false-pass {_fmt(calibration.get('false_pass_rate'))}"
    )
    if calibration.get("pin_fingerprint") != pin_fingerprint(pin):
        try:
            old = JudgePin.model_validate(calibration.get("pin", {})).describe()
        except ValueError:
            old = "an unreadable pin"
        return info, [
            f"the judge pin changed since its last calibration ({old} → {pin.describe()}): "
            "recalibrate before trusting its verdicts"
        ]
    return info, []
