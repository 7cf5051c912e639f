"""The geometry of one question's chart: a bar per option, its 95% interval, and for a simulated
survey the true share among its simulated respondents.

The page's Content-Security-Policy allows no script and no inline style, so the chart is plain SVG
drawn on the server: this module turns the numbers into coordinates, ``templates/results/_chart.html``
turns the coordinates into markup, and ``static/css/site.css`` gives the colours. The same numbers
are written out in the chart's ``<desc>`` for screen readers (and in the table beside it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

WIDTH = 640
PLOT_LEFT = 16
PLOT_RIGHT = 616
TOP = 6
ROW_HEIGHT = 48
LABEL_OFFSET = 15  # baseline of an option's text line, from the top of its row
BAR_OFFSET = 22  # top of the bar, from the top of its row
BAR_HEIGHT = 18
AXIS_HEIGHT = 26
LEGEND_HEIGHT = 26
TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)
MAX_LABEL = 48


def _x(share: float) -> float:
    """Position of a share on the 0–100% axis (shares are clipped: the consistent estimate and the
    intervals already lie in [0, 1], this only guards the drawing)."""
    share = min(max(share, 0.0), 1.0)
    return round(PLOT_LEFT + share * (PLOT_RIGHT - PLOT_LEFT), 2)


def _percent(share: float) -> str:
    return f"{100 * share:.1f}%"


def _short(label: str) -> str:
    return label if len(label) <= MAX_LABEL else label[: MAX_LABEL - 1].rstrip() + "…"


@dataclass(frozen=True)
class Bar:
    text: str
    text_y: float
    bar_y: float
    bar_width: float
    mid_y: float
    low_x: float
    high_x: float
    truth_x: float | None


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass(frozen=True)
class Chart:
    id: str
    title: str
    description: str
    width: int
    height: int
    left: float
    right: float
    top: float
    axis_y: float
    legend_y: float
    bars: list[Bar]
    ticks: list[Tick]
    has_truth: bool


def _bar(index: int, category: dict[str, Any]) -> Bar:
    top = TOP + index * ROW_HEIGHT
    proportion = category["proportion"]
    truth = category.get("simulated_truth")
    text = f"{_short(category['label'])}: {_percent(proportion)} "
    text += f"(95% interval {_percent(category['ci_low'])} to {_percent(category['ci_high'])})"
    if truth is not None:
        text += f", true share {_percent(truth)}"
    return Bar(
        text=text,
        text_y=top + LABEL_OFFSET,
        bar_y=top + BAR_OFFSET,
        bar_width=round(_x(proportion) - PLOT_LEFT, 2),
        mid_y=top + BAR_OFFSET + BAR_HEIGHT / 2,
        low_x=_x(category["ci_low"]),
        high_x=_x(category["ci_high"]),
        truth_x=None if truth is None else _x(truth),
    )


def _description(question: dict[str, Any]) -> str:
    parts = []
    for c in question["categories"]:
        part = f"{c['label']}: {_percent(c['proportion'])}, 95% interval {_percent(c['ci_low'])} to "
        part += _percent(c["ci_high"])
        if c.get("simulated_truth") is not None:
            part += f", true share among the simulated respondents {_percent(c['simulated_truth'])}"
        parts.append(part)
    return f"Consistent estimates from {question['n']} answers. " + "; ".join(parts) + "."


def estimate_chart(question: dict[str, Any]) -> Chart:
    """Chart of a question's consistent estimates, from ``QuestionResult.to_dict()`` with estimates."""
    categories = question["categories"]
    axis_y = TOP + len(categories) * ROW_HEIGHT + 4
    has_truth = any(c.get("simulated_truth") is not None for c in categories)
    return Chart(
        id=f"chart-{question['key']}",
        title=f"Estimated shares for “{question['text']}”, with 95% intervals",
        description=_description(question),
        width=WIDTH,
        height=axis_y + AXIS_HEIGHT + LEGEND_HEIGHT,
        left=PLOT_LEFT,
        right=PLOT_RIGHT,
        top=TOP,
        axis_y=axis_y,
        legend_y=axis_y + AXIS_HEIGHT + 12,
        bars=[_bar(i, c) for i, c in enumerate(categories)],
        ticks=[Tick(_x(t), f"{100 * t:.0f}%") for t in TICKS],
        has_truth=has_truth,
    )


# -- over time -------------------------------------------------------------------------------------

TIMELINE_HEIGHT = 200
TIMELINE_TOP = 10
TIMELINE_LEFT = 44
TIMELINE_BOTTOM = 170  # the time axis
SHARE_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True)
class TimelineChart:
    """An estimate after each day with its live band, as SVG geometry (``_timeline.html`` draws it)."""

    id: str
    title: str
    description: str
    width: int
    height: int
    left: float
    right: float
    top: float
    axis_y: float
    band: str  # an SVG path: the live interval's low edge left to right, then its high edge back
    line: str  # an SVG path: the estimate
    dots: list[tuple[float, float]]
    share_ticks: list[tuple[float, str]]  # (y, label)
    day_ticks: list[tuple[float, str]]  # (x, label)


def _y(share: float) -> float:
    share = min(max(share, 0.0), 1.0)
    return round(TIMELINE_BOTTOM - share * (TIMELINE_BOTTOM - TIMELINE_TOP), 2)


def timeline_chart(data: dict[str, Any], text: str) -> TimelineChart | None:
    """The chart of :meth:`survey.domain.results.live.Timeline.to_dict`; None before the first answer."""
    days = data["days"]
    if not days:
        return None
    right = PLOT_RIGHT
    span = max(len(days) - 1, 1)

    def x(i: int) -> float:
        return round(TIMELINE_LEFT + (right - TIMELINE_LEFT) * (i / span if len(days) > 1 else 0.5), 2)

    xs = [x(i) for i in range(len(days))]
    lows = [_y(v) for v in data["live_low"]]
    highs = [_y(v) for v in data["live_high"]]
    shares = [_y(v) for v in data["share"]]
    if len(days) == 1:  # one day: a short band and a dot, so that something is seen
        xs = [xs[0] - 6, xs[0] + 6]
        lows, highs, shares = lows * 2, highs * 2, shares * 2
    band = "M " + " L ".join(f"{a} {b}" for a, b in zip(xs, lows, strict=True))
    band += " L " + " L ".join(f"{a} {b}" for a, b in zip(reversed(xs), reversed(highs), strict=True)) + " Z"
    line = "M " + " L ".join(f"{a} {b}" for a, b in zip(xs, shares, strict=True))
    step = max(1, len(days) // 6)
    day_ticks = [(x(i), days[i][5:]) for i in range(0, len(days), step)]
    last = len(days) - 1
    description = (
        f"{len(days)} days with answers, from {days[0]} to {days[-1]}. After the last day ({data['n'][-1]} answers): "
        f"estimate {_percent(data['share'][-1])}, live interval {_percent(data['live_low'][last])} to "
        f"{_percent(data['live_high'][last])}."
    )
    return TimelineChart(
        id=f"timeline-{data['key']}",
        title=f"Share answering “{data['label']}” to “{text}” as answers arrived, with the live interval",
        description=description,
        width=WIDTH,
        height=TIMELINE_HEIGHT + 16,
        left=TIMELINE_LEFT,
        right=right,
        top=TIMELINE_TOP,
        axis_y=TIMELINE_BOTTOM,
        band=band,
        line=line,
        dots=[(a, b) for a, b in zip(xs, shares, strict=True)][-1:],
        share_ticks=[(_y(t), f"{100 * t:.0f}%") for t in SHARE_TICKS],
        day_ticks=day_ticks,
    )
