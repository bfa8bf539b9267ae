"""Line charts for the HTML viewer, as plain geometry the page's template draws as SVG.

Only numbers are computed here; every label reaches the page through the template, which
escapes it, so a commit or system name in the history can say nothing but itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: the drawing's size in SVG units (it scales to the page's width)
WIDTH, HEIGHT = 640, 230
#: room for the axis labels: left, right, top, bottom
LEFT, RIGHT, TOP, BOTTOM = 100, 16, 16, 56


@dataclass(frozen=True, slots=True)
class Mark:
    """One point of the line, where it is drawn and what it stands for."""

    x: float
    y: float
    label: str
    shown: str


@dataclass(frozen=True, slots=True)
class Chart:
    title: str
    width: int
    height: int
    #: "x1,y1 x2,y2 …" for the polyline
    points: str
    marks: tuple[Mark, ...]
    #: (y, text) for the value axis
    ticks: tuple[tuple[float, str], ...]
    left: int
    right: int
    bottom: float


def line_chart(
    title: str,
    labels: Sequence[str],
    values: Sequence[float],
    *,
    bounds: tuple[float, float] | None = None,
    unit: str = "",
) -> Chart | None:
    """A chart of `values` in order, or None when there is nothing finite to draw."""
    pairs = [(label, value) for label, value in zip(labels, values, strict=True)]
    pairs = [(label, value) for label, value in pairs if math.isfinite(value)]
    if not pairs:
        return None
    low, high = bounds if bounds is not None else _range([v for _, v in pairs])
    span = high - low or 1.0
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = inner_w / max(len(pairs) - 1, 1)
    marks = []
    for index, (label, value) in enumerate(pairs):
        x = LEFT + (index * step if len(pairs) > 1 else inner_w / 2)
        y = TOP + inner_h * (1 - (min(max(value, low), high) - low) / span)
        marks.append(Mark(round(x, 1), round(y, 1), label, _shown(value, unit)))
    ticks = tuple(
        (round(TOP + inner_h * (1 - k / 4), 1), _shown(low + span * k / 4, unit)) for k in range(5)
    )
    return Chart(
        title=title,
        width=WIDTH,
        height=HEIGHT,
        points=" ".join(f"{m.x},{m.y}" for m in marks),
        marks=tuple(marks),
        ticks=ticks,
        left=LEFT,
        right=WIDTH - RIGHT,
        bottom=HEIGHT - BOTTOM,
    )


def _range(values: Sequence[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    if low == high:  # one level: a flat line in the middle, not a division by zero
        return (low - 1, high + 1) if low else (0.0, 1.0)
    return min(low, 0.0), high


def _shown(value: float, unit: str) -> str:
    if unit == "%":
        return f"{value:.1f}%"
    if unit == "$":
        return f"${value:,.4f}"
    return f"{value:g}"


def history_charts(history: Mapping[str, Any] | None) -> list[Chart]:
    """Pass rate (and cost, when every point has one) over the recorded runs and the
    candidate, from a history account's `to_dict()` (gate.history.report.HistoryNotes)."""
    if not history or history.get("problem"):
        return []
    points = [dict(point) for point in history.get("trend") or []]
    labels = [f"{str(p.get('created_at', ''))[:10]} {str(p.get('commit', ''))[:7]}" for p in points]
    candidate = history.get("candidate")
    if candidate is not None:
        points.append(dict(candidate))
        labels.append("this run")
    if not points:
        return []
    charts = [
        line_chart(
            "Pass rate per recorded run",
            labels,
            [100 * float(p.get("pass_rate") or 0.0) for p in points],
            bounds=(0.0, 100.0),
            unit="%",
        )
    ]
    costs = [p.get("cost_usd") for p in points]
    if all(isinstance(cost, int | float) for cost in costs):
        charts.append(
            line_chart("Cost of the run", labels, [float(c or 0.0) for c in costs], unit="$")
        )
    return [chart for chart in charts if chart is not None]
