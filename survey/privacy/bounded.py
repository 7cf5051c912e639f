"""The mean of a bounded number, with an interval that holds whatever the distribution in the range.

A number question has a known range, and a randomized number's reports have known bounds, so the
mean's interval need not assume normality. The t interval does, and fails where sensitive numbers
live: with 95% of answers at 0 it covers the mean in about 64% of samples at n = 20 and 78% at
n = 30 (benchmarks/number_intervals.md). This module's interval is a *betting* interval
(Waudby-Smith & Ramdas 2024, "Estimating means of bounded random variables by betting", JRSS B):
for each candidate mean ``m`` a gambler bets that the answers' mean is above ``m`` (and another
that it is below) with wealth ``∏ (1 + λ (z_i − m))``, where ``z_i ∈ [0, 1]`` is an answer scaled
to the range. If the mean were ``m`` each wealth is a test martingale, so by Ville's inequality it
reaches ``2/α`` with probability at most ``α/2``; the interval is the set of ``m`` at which neither
gambler got rich. That holds for every distribution in the range and every n, with no
approximation.

Which ``λ`` to bet is the only design choice. Here it is a *fixed* grid of bets (WSR's
"diversified Kelly"), averaged: with a fixed ``λ`` the wealth is a product, so it depends on the
answers only through how many gave each value, and the interval is computed from the running
tallies (one count per distinct value) in time proportional to the number of distinct values, never
to the number of respondents. The grid is log-spaced, spacing :data:`SPACING`, from the bet that is
best for the widest possible spread (a standard deviation of half the range) at the planned number
of answers, over a factor :data:`SPAN` (spreads down to a twentieth of the range), each bet capped
at :data:`CAP` of the largest wealth can stake. Averaging ``G`` bets costs ``log G`` nats of
evidence; in exchange the interval adapts to the answers' spread. Measured against the t interval
(benchmarks/number_intervals.md): about 1.35× its width at n = 20 and 1.6× at n ≥ 100 where the t
interval is right, and every cell at or above the level where it is not.

Because each fixed-``λ`` wealth is a test martingale at *every* n, the same interval computed at
any number of looks is also a confidence sequence: tuned to the planned number of answers instead
of the current one, it is the live (anytime-valid) interval (:func:`mean_interval` with
``tuned_for``).

    >>> r = mean_interval([0, 1, 2, 10], [50, 20, 10, 5], low=0, high=10)
    >>> r.n, round(r.estimate, 4), round(r.low, 4), round(r.high, 4)
    (85, 1.0588, 0.5189, 2.2207)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import brentq

__all__ = [
    "CAP",
    "CELLS",
    "SPACING",
    "SPAN",
    "MeanBreakdown",
    "MeanInterval",
    "bet_grid",
    "mean_breakdown",
    "mean_interval",
]

#: Successive bets differ by this factor: the log-wealth of a bet falls off slowly around the best
#: one (its width in ``log λ`` is about ``1/√(2 log(2/α))`` ≈ 0.37 at 95%), so a factor of e^0.37
#: loses little, and fewer bets cost less evidence.
SPACING = 1.45
#: The smallest and largest bet differ by this factor: the grid serves spreads from half the range
#: (its first bet) down to a twentieth of it (the best bet grows as 1/spread²; for a spread of 1/20
#: of the range it is 10× the first... and is capped near the ends anyway).
SPAN = 10.0
#: No bet stakes more than this share of what it could lose, so wealth stays positive.
CAP = 0.999


@dataclass(frozen=True)
class MeanInterval:
    """The mean of bounded answers and its betting interval, in the answers' units."""

    n: int
    estimate: float
    low: float
    high: float
    level: float
    #: The number of answers the bets were tuned for (n itself for a fixed-n interval, the planned
    #: number for a live one).
    tuned_for: int
    method: str = "betting"

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "estimate": self.estimate,
            "ci_low": self.low,
            "ci_high": self.high,
            "level": self.level,
            "interval_method": self.method,
            "tuned_for": self.tuned_for,
        }


def bet_grid(n: int, level: float = 0.95) -> np.ndarray:
    """The bets (``λ`` on answers scaled to [0, 1]) tuned for ``n`` answers at ``level``."""
    if n < 1:
        raise ValueError(f"the bets are tuned for at least one answer, got {n}")
    first = math.sqrt(2 * math.log(2 / (1 - level)) / (n * 0.25))
    count = math.ceil(math.log(SPAN) / math.log(SPACING)) + 1
    return first * SPACING ** np.arange(count)


#: Above this many distinct values the wealth is bounded from below on this many equal cells of the
#: range instead of summed value by value (:class:`_Cells`): the cost of an interval stops growing with
#: the number of distinct answers, and the interval can only widen, by a negligible amount.
CELLS = 4096


class _Cells:
    """The answers as cells: each cell's smallest and largest value, count and sum.

    ``log(1 + λ(z − m))`` is concave in ``z``, so on a cell it lies above its chord between the cell's
    smallest and largest value; summed over the cell's answers, the chord gives
    ``C·f(a) + (f(b) − f(a))·(S − C·a)/(b − a)``, which needs only the cell's count ``C`` and sum
    ``S``. That is a lower bound of the log-wealth, so the set where no gambler got rich can only
    grow: the interval stays valid. A cell holding one distinct value is exact (``a = b``), so with
    at most :data:`CELLS` distinct values nothing is bounded at all.
    """

    def __init__(self, z: np.ndarray, counts: np.ndarray) -> None:
        if z.size <= CELLS:
            self.low = self.high = z
            self.count, self.total = counts, counts * z
            return
        cell = np.minimum((z * CELLS).astype(np.int64), CELLS - 1)
        order = np.argsort(cell, kind="stable")
        cell, zs, cs = cell[order], z[order], counts[order]
        starts = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
        self.low = np.minimum.reduceat(zs, starts)
        self.high = np.maximum.reduceat(zs, starts)
        self.count = np.add.reduceat(cs, starts)
        self.total = np.add.reduceat(cs * zs, starts)

    def mirrored(self) -> _Cells:
        """The same cells for ``1 − z`` (the other gambler's answers)."""
        other = object.__new__(_Cells)
        other.low, other.high = 1 - self.high, 1 - self.low
        other.count, other.total = self.count, self.count - self.total
        return other

    def log_wealth(self, m: float, bets: np.ndarray) -> float:
        """log of the average over the bets of ``∏ (1 + λ (z_i − m))`` (or the chords' lower bound)."""
        at_low = np.log1p(np.outer(bets, self.low - m))
        spread = self.high - self.low
        logs = at_low @ self.count
        wide = spread > 0
        if wide.any():
            at_high = np.log1p(np.outer(bets, self.high[wide] - m))
            slope = (at_high - at_low[:, wide]) / spread[wide]
            logs = logs + slope @ (self.total[wide] - self.count[wide] * self.low[wide])
        top = float(logs.max())
        return top + math.log(float(np.mean(np.exp(logs - top))))


def mean_interval(
    values: Sequence[float] | np.ndarray,
    counts: Sequence[float] | np.ndarray,
    low: float,
    high: float,
    level: float = 0.95,
    *,
    tuned_for: int | None = None,
) -> MeanInterval:
    """The mean of answers in ``[low, high]`` given as distinct ``values`` and their ``counts``.

    ``tuned_for`` (default: the number of answers) is the n the bets are tuned for; give the planned
    number of answers for a live interval that stays valid however often it is looked at.
    """
    if not (math.isfinite(low) and math.isfinite(high)) or not low < high:
        raise ValueError(f"the range needs finite low < high, got {low!r} to {high!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level!r}")
    x = np.asarray(values, dtype=float)
    c = np.asarray(counts, dtype=float)
    if x.shape != c.shape or x.ndim != 1:
        raise ValueError("values and counts must be two lists of the same length")
    if (c < 0).any() or not np.isfinite(c).all() or not np.isfinite(x).all():
        raise ValueError("counts must be finite and not negative, values finite")
    kept = c > 0
    x, c = x[kept], c[kept]
    if ((x < low) | (x > high)).any():
        raise ValueError(f"every value must lie in the range {low:g} to {high:g}")
    n = round(float(c.sum()))
    if n < 1:
        raise ValueError("no answers: the mean of nothing has no interval")
    z = (x - low) / (high - low)
    mean = float(z @ c / n)
    tuned = n if tuned_for is None else int(tuned_for)
    bets = bet_grid(tuned, level)
    threshold = math.log(2 / (1 - level))
    tiny = 1e-12

    cells = _Cells(z, c)
    mirrored = cells.mirrored()

    def above(m: float) -> float:  # evidence that the mean is above m
        return cells.log_wealth(m, np.minimum(bets, CAP / m)) - threshold

    def below(m: float) -> float:  # evidence that the mean is below m
        return mirrored.log_wealth(1 - m, np.minimum(bets, CAP / (1 - m))) - threshold

    # Each wealth falls as m moves toward the answers' mean (where, by Jensen, it is at most 1), so
    # each end is the one root between the range's edge and the mean.
    lower = brentq(above, tiny, mean, xtol=1e-12) if mean > tiny and above(tiny) > 0 else 0.0
    upper = brentq(below, mean, 1 - tiny, xtol=1e-12) if mean < 1 - tiny and below(1 - tiny) > 0 else 1.0
    width = high - low
    return MeanInterval(
        n=n,
        estimate=low + width * mean,
        low=low + width * lower,
        high=low + width * upper,
        level=level,
        tuned_for=tuned,
    )


@dataclass(frozen=True)
class MeanBreakdown:
    """The mean of a bounded number in each group of a direct question, with intervals that hold for
    every group at once (Bonferroni: each at ``1 − (1 − level)/groups``)."""

    groups: dict[str, MeanInterval]
    level: float
    simultaneous: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "simultaneous": self.simultaneous,
            "groups": [{"group": name, **interval.to_dict()} for name, interval in self.groups.items()],
        }


def mean_breakdown(
    groups: dict[str, tuple[Sequence[float] | np.ndarray, Sequence[float] | np.ndarray]],
    low: float,
    high: float,
    level: float = 0.95,
    *,
    simultaneous: bool = True,
) -> MeanBreakdown:
    """Each group's mean from its ``(values, counts)``; groups without answers are left out. With
    ``simultaneous`` (the default) the intervals cover every group's mean at once with probability
    at least ``level``; each interval is still valid for any distribution in the range."""
    answered = {name: (v, c) for name, (v, c) in groups.items() if float(np.sum(c)) > 0}
    each = 1 - (1 - level) / max(len(answered), 1) if simultaneous else level
    return MeanBreakdown(
        {name: mean_interval(v, c, low, high, each) for name, (v, c) in answered.items()}, level, simultaneous
    )
