"""How far the judge has earned trust: its stored calibration against the suite's bar
(`calibration:` in the config, gate.suite.sections.CalibrationBar), and whether the system
it was calibrated on is still the one under test.

A calibration measures the judge on outputs of one system. Outputs of another (a new
prompt, a new model) may fail in ways the labels never showed, so a calibration made
before the system changed is reported stale, as one made under another judge pin is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gate.judging.consistency import noisy
from gate.produce.recordings import system_fingerprint
from gate.suite.sections import CalibrationBar


def below_bar(
    calibration: Mapping[str, Any], bar: CalibrationBar, *, pointwise: bool = False
) -> list[str]:
    """Each way the calibration falls short of `bar`, in words (empty: it meets it).

    `pointwise`: the run judged outputs one by one, so the pointwise figures must meet the
    bar even when the file says it holds none (a calibration file is a file: "labels": 0
    must not hide a kappa of 0.2)."""
    short: list[str] = []
    if (
        calibration.get("labels")
        or pointwise
        or not isinstance(calibration.get("pairwise"), Mapping)
    ):
        short += _short_of(calibration, bar, "labels", "false-pass", "false_pass_rate")
    pairwise = calibration.get("pairwise")
    if isinstance(pairwise, Mapping):
        short += _short_of(pairwise, bar, "pairwise labels", "missed-loss", "missed_loss_rate")
    measured = calibration.get("consistency")
    if isinstance(measured, Mapping):
        flips = noisy(measured)
        if flips:
            short.append(flips)
    return short


def _short_of(
    figures: Mapping[str, Any], bar: CalibrationBar, what: str, error: str, error_key: str
) -> list[str]:
    short = []
    judged = _number(figures.get("judged"))
    if judged is None or judged < bar.min_labels:
        short.append(
            f"{_shown(judged, '.0f')} {what} judged, fewer than min_labels {bar.min_labels}"
        )
    for name, key, floor in (
        ("agreement", "agreement", bar.min_agreement),
        ("kappa", "kappa", bar.min_kappa),
    ):
        value = _number(figures.get(key))
        if floor is not None and (value is None or value < floor):
            short.append(f"{what}: {name} {_shown(value)}, below min_{key} {floor:g}")
    rate = _number(figures.get(error_key))
    if bar.max_false_pass is not None and (rate is None or rate > bar.max_false_pass):
        if rate is None:
            short.append(
                f"{what}: the {error} rate is unmeasured (no label where the person chose "
                "against the output): label some failures"
            )
        else:
            short.append(
                f"{what}: {error} rate {rate:.0%}, above max_false_pass {bar.max_false_pass:g}"
            )
    return short


def _number(value: Any) -> float | None:
    # A calibration file is input too: anything but a number is "not measured".
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _shown(value: float | None, spec: str = ".2f") -> str:
    return "no" if value is None else format(value, spec)


def system_warning(calibration: Mapping[str, Any], system: Mapping[str, Any] | None) -> str | None:
    """Why the calibration may not hold for `system` (a run's resolved system), or None."""
    if not isinstance(system, Mapping):
        return None
    stored = calibration.get("system_fingerprint")
    if not isinstance(stored, str):
        return (
            "the judge's calibration does not name the system under test it was made on "
            "(made before casegate stored it, or edited): recalibrate so reports can tell "
            "when the system changes"
        )
    if stored != system_fingerprint(system):
        return (
            "the system under test changed since the judge's last calibration: its outputs "
            "may fail in ways the labels never showed; label some of them and recalibrate"
        )
    return None
