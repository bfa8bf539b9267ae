"""Calibrating the pinned judge against verdicts a person gave.

`casegate judge calibrate LABELS.jsonl` grades labelled outputs with the pinned
judge and measures how far to trust it: agreement, Cohen's kappa, and the two
error rates that matter for a gate (false passes hide regressions, false fails
cry wolf). The result is stored beside the config, and every report on a suite
that uses the judge quotes it, or warns that the pin has moved since.

A label may be about a graded judge (`judge: {scale, threshold}`) or a RAG metric
(`faithfulness`, …; `check:` names which, `contexts:` gives the passages when the case
input has none): labels are pass or fail, so those are calibrated at their threshold, on
the verdict the gate would give, pooled with the pass/fail judge's labels.

Pairwise labels (a baseline output, a candidate output and which is better)
are judged exactly as the gate judges pairs, in both orders, and measured the
same way, with the missed-loss rate (the person preferred the baseline's
output, the judge did not) and how often the two orders agreed.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from gate.checks import Subject, evaluate
from gate.checks.graded import pairwise_rubric, pointwise_rubric
from gate.errors import ConfigError, MissingRecordingError, ResultsError
from gate.judging import consistency
from gate.judging.judge import Grader, MissingJudgeRecording, pin_fingerprint
from gate.judging.labels import PAIR_LABELS, Label, PairLabel
from gate.judging.labels import read_labels as read_labels  # the command reads them here
from gate.judging.pairwise import judge_pair
from gate.judging.trust import below_bar, system_warning
from gate.produce.recordings import RecordingStore, system_fingerprint
from gate.secrets import redact
from gate.suite.config import LoadedConfig
from gate.suite.judgepin import JudgePin
from gate.suite.sections import CalibrationBar

SCHEMA = "casegate.calibration/1"
#: the judge's outcome for the candidate, in the labels' words
_AS_LABEL: dict[str, str] = {"win": "B", "loss": "A", "tie": "tie"}


def calibration_path(loaded: LoadedConfig) -> Path:
    return loaded.root / f"{loaded.config.suite}.judge-calibration.json"


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


def cohen_kappa_of(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa over any categories; None when chance agreement is total."""
    n = len(pairs)
    if not n:
        return None
    observed = sum(a == b for a, b in pairs) / n
    categories = {a for a, _ in pairs} | {b for _, b in pairs}
    expected = sum(
        (sum(a == c for a, _ in pairs) / n) * (sum(b == c for _, b in pairs) / n)
        for c in categories
    )
    if expected >= 1 - 1e-12:
        return None
    return (observed - expected) / (1 - expected)


def _rate(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def calibrate(
    loaded: LoadedConfig,
    labels: Sequence[Label | PairLabel],
    mode: str,
    *,
    only_missing: bool = False,
) -> dict[str, Any]:
    pin = loaded.config.judge
    if pin is None:
        raise ConfigError(f"{loaded.path}: no `judge:` is pinned; there is nothing to calibrate")
    store = RecordingStore(loaded.recordings_dir)
    graders = {
        kind: Grader(
            pin,
            mode=mode,
            store=store,
            root=loaded.root,
            reuse_recorded=mode == "record" and only_missing,
            kind=kind,
        )
        for kind in ("pointwise", "pairwise")
    }
    graders["pointwise"].prepare()
    singles = [label for label in labels if isinstance(label, Label)]
    pairs = [label for label in labels if isinstance(label, PairLabel)]

    def grade(label: Label, repeat: int = 0) -> tuple[bool | None, str]:
        grader = graders["pointwise"].again(repeat)
        try:
            if label.check == "judge" and pointwise_rubric(label.case.expect) is not None:
                rubric = label.case.expect["judge"]["rubric"]  # as calibrations always asked
                return grader.verdict(label.case, rubric, label.output)
            # A graded judge or a RAG metric: judged as the gate judges it, pass or fail at
            # its threshold (a malformed answer fails), which is what a label says.
            judges = [(n, j) for n, j in label.case.judges if n == label.check]
            subject = Subject(
                label.output,
                label.case.input,
                case=label.case,
                grader=grader,
                contexts=label.contexts,
            )
            verdict = evaluate(judges, subject)[0]
            return verdict.ok, verdict.reason
        except MissingJudgeRecording:
            return None, "no recording"
        except Exception as exc:
            return None, redact(str(exc))

    def compare_pair(label: PairLabel) -> tuple[str | None, str, bool]:
        rubric = pairwise_rubric(label.case.expect) or ""
        try:
            outcome, reason, agreed = judge_pair(
                graders["pairwise"],
                label.case.id,
                rubric,
                label.case.input,
                label.baseline,
                label.candidate,
            )
        except MissingJudgeRecording:
            return None, "no recording", False
        except Exception as exc:
            return None, redact(str(exc)), False
        return _AS_LABEL[outcome], redact(reason), agreed

    with ThreadPoolExecutor(max_workers=loaded.config.concurrency) as pool:
        graded = list(pool.map(grade, singles))
        compared = list(pool.map(compare_pair, pairs))
        consistent = None
        if pin.consistency and singles:
            consistent = consistency.measure(
                singles,
                [verdict for verdict, _ in graded],
                pin.consistency,
                lambda label, repeat: grade(label, repeat)[0],
                pool,
                pin.max_flip_rate,
            )
    missing = graders["pointwise"].missing + graders["pairwise"].missing
    if missing:
        raise MissingRecordingError(
            [
                f"no recorded judge verdict for {len(missing)} label(s) in "
                f"{store.folder}: cases {', '.join(sorted(set(missing))[:10])}",
                "run `casegate judge calibrate --mode record LABELS.jsonl` with the judge's "
                "key set, and commit the recordings",
            ]
        )
    result = {
        "schema": SCHEMA,
        "suite": loaded.config.suite,
        "calibrated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "pin": pin.model_dump(mode="json"),
        "pin_fingerprint": pin_fingerprint(pin),
        # The system whose outputs the labels are of: another one makes this calibration stale.
        "system_fingerprint": system_fingerprint(loaded.resolved_system()),
        **_pointwise_figures(singles, graded),
    }
    if pairs:
        result["pairwise"] = _pairwise_figures(pairs, compared)
    if consistent is not None:
        result["consistency"] = consistent
    result["below_bar"] = below_bar(result, loaded.config.calibration)
    return result


def _pointwise_figures(
    labels: Sequence[Label], graded: Sequence[tuple[bool | None, str]]
) -> dict[str, Any]:
    pairs = [(label.human, verdict) for label, (verdict, _) in zip(labels, graded, strict=True)]
    judged = [(h, j) for h, j in pairs if j is not None]
    human_fails = sum(1 for h, _ in judged if not h)
    human_passes = len(judged) - human_fails
    false_pass = sum(1 for h, j in judged if j and not h)
    false_fail = sum(1 for h, j in judged if h and not j)
    kappa = cohen_kappa([(h, bool(j)) for h, j in judged])
    return {
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


def _pairwise_figures(
    labels: Sequence[PairLabel], compared: Sequence[tuple[str | None, str, bool]]
) -> dict[str, Any]:
    """Agreement with a person on which output is better; A is the baseline's."""
    judged = [
        (label.human, choice, agreed)
        for label, (choice, _, agreed) in zip(labels, compared, strict=True)
        if choice is not None
    ]
    person_a = [j for h, j, _ in judged if h == "A"]
    # Pairs of identical outputs never reach the judge: they say nothing about its order bias.
    shown = [
        agreed
        for label, (choice, _, agreed) in zip(labels, compared, strict=True)
        if choice is not None and label.baseline != label.candidate
    ]
    return {
        "labels": len(labels),
        "judged": len(judged),
        "errors": len(labels) - len(judged),
        "agreement": _rate(sum(h == j for h, j, _ in judged), len(judged)),
        "kappa": cohen_kappa_of([(h, j) for h, j, _ in judged]),
        "missed_loss_rate": _rate(sum(j != "A" for j in person_a), len(person_a)),
        "order_agreement": _rate(sum(shown), len(shown)),
        "confusion": {
            f"person_{h}": {
                f"judge_{j}": sum(1 for a, b, _ in judged if (a, b) == (h, j)) for j in PAIR_LABELS
            }
            for h in PAIR_LABELS
        },
        "disagreements": [
            {
                "case": label.case.id,
                "line": label.line,
                "human": label.human,
                "judge": "error" if choice is None else choice,
                "reason": reason,
            }
            for label, (choice, reason, _) in zip(labels, compared, strict=True)
            if choice != label.human
        ],
    }


def _fmt(value: Any, percent: bool = True) -> str:
    # A calibration file is read as it is: anything but a number is "n/a".
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "n/a"
    return f"{value:.0%}" if percent else f"{value:.2f}"


def summary_lines(result: dict[str, Any]) -> list[str]:
    lines = [f"judge: {JudgePin.model_validate(result['pin']).describe()}"]
    if result["labels"]:
        lines += [
            f"labels: {result['labels']} ({result['judged']} judged, {result['errors']} errors)",
            f"agreement: {_fmt(result['agreement'])}   "
            f"Cohen's kappa: {_fmt(result['kappa'], False)}",
            f"false-pass rate: {_fmt(result['false_pass_rate'])} "
            "(judge passed what a person failed)",
            f"false-fail rate: {_fmt(result['false_fail_rate'])} "
            "(judge failed what a person passed)",
        ]
    pairs = result.get("pairwise")
    if pairs:
        lines += [
            f"pairwise labels: {pairs['labels']} ({pairs['judged']} judged, "
            f"{pairs['errors']} errors)",
            f"pairwise agreement: {_fmt(pairs['agreement'])}   "
            f"Cohen's kappa: {_fmt(pairs['kappa'], False)}",
            f"missed-loss rate: {_fmt(pairs['missed_loss_rate'])} (a person preferred the "
            "baseline's output, the judge did not)",
            f"order agreement: {_fmt(pairs['order_agreement'])} (both orders gave the same "
            "answer; the rest count as ties)",
        ]
    if isinstance(result.get("consistency"), dict):
        lines.append(consistency.summary(result["consistency"]))
    return lines


def disagreement_lines(result: dict[str, Any], labels: Path, limit: int = 20) -> list[str]:
    """Each label the judge disagreed with, by its line in the labels file."""
    pointwise = [
        f"  {labels}:{miss['line']}: {miss['case']}: person {miss['human']}, "
        f"judge {miss['judge']}: {miss['reason']}"
        for miss in result["disagreements"]
    ]
    pairwise = [
        f"  {labels}:{miss['line']}: {miss['case']}: person {_better(miss['human'])}, "
        f"judge {_better(miss['judge'])}: {miss['reason']}"
        for miss in (result.get("pairwise") or {}).get("disagreements", [])
    ]
    return (pointwise + pairwise)[:limit]


def _better(label: str) -> str:
    return {"A": "A (baseline better)", "B": "B (candidate better)"}.get(label, label)


def read_calibration(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ResultsError(f"{path}: not valid JSON ({exc}); re-run the calibration") from None
    return data if isinstance(data, dict) and data.get("schema") == SCHEMA else None


def judge_lines(
    judge: dict[str, Any] | None,
    uses_judge: bool,
    calibration: dict[str, Any] | None,
    bar: CalibrationBar | None = None,
    system: dict[str, Any] | None = None,
) -> tuple[list[str], list[str]]:
    """(information, warnings) about the judge for a report on a run that used it: its
    calibration held to `bar` (the suite's, read where the ruler is) and to `system`, the
    run's resolved system under test."""
    if judge is None or not uses_judge:
        return [], []
    try:
        pin = JudgePin.model_validate(judge)
    except ValueError:  # a results file is input too: its pin may be anything
        return [], ["the results file's judge pin is unreadable: the judge cannot be named"]
    info = [f"LLM judge: {pin.describe()}"]
    warnings = []
    provider, model = (system.get("provider"), system.get("model")) if system else (None, None)
    if isinstance(provider, str) and pin.judges_itself(provider, model):
        info[0] += " (self-judged: the model under test)"
        warnings.append(
            f"self-judged: the judge is the model under test ({pin.provider} {pin.model}), "
            "allowed by judge.allow_self_judge; a model grading its own answers tends to agree "
            "with itself"
        )
    if calibration is None:
        return info, [
            *warnings,
            "the LLM judge has never been calibrated for this suite: "
            "run `casegate judge calibrate LABELS.jsonl` before trusting its verdicts",
        ]
    when = str(calibration.get("calibrated_at", "?"))[:10]
    info[0] += f"; last calibrated {when}"
    if calibration.get("labels") != 0:  # 0: a calibration on pairwise labels only
        info[0] += (
            f": kappa {_fmt(calibration.get('kappa'), False)}, "
            f"agreement {_fmt(calibration.get('agreement'))} on {calibration.get('judged')} "
            f"labels, false-pass {_fmt(calibration.get('false_pass_rate'))}"
        )
    pairs = calibration.get("pairwise")
    if isinstance(pairs, dict):
        info[0] += (
            f"; pairwise: agreement {_fmt(pairs.get('agreement'))} on {pairs.get('judged')} "
            f"pairs, missed-loss {_fmt(pairs.get('missed_loss_rate'))}"
        )
    if isinstance(calibration.get("consistency"), dict):
        info[0] += "; " + consistency.summary(calibration["consistency"])
    if calibration.get("pin_fingerprint") != pin_fingerprint(pin):
        try:
            old = JudgePin.model_validate(calibration.get("pin", {})).describe()
        except ValueError:
            old = "an unreadable pin"
        warnings.append(
            f"the judge pin changed since its last calibration ({old} → {pin.describe()}): "
            "recalibrate before trusting its verdicts"
        )
    stale = system_warning(calibration, system)
    if stale:
        warnings.append(stale)
    short = below_bar(calibration, bar or CalibrationBar(), pointwise=True)
    if short:
        warnings.append(
            "the LLM judge's calibration is below the suite's bar (`calibration:`): "
            + "; ".join(short)
            + ". Its verdicts are a model's claim until it meets it"
        )
    return info, warnings
