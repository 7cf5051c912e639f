"""Planning a number question: how wide the mean's interval will be, and how many answers it takes.

The organizer does not know how the true numbers are spread before asking, so the figure planned
for is the widest the interval can be: the answers split half and half between the range's two ends.
That spread is the worst case for every mechanism here (a mechanism's variance at a true value is
an even quadratic ``a t² + b``, so the reports' variance ``E[a t² + b] + Var(t)`` is largest with
``t = ±1`` half and half whenever ``a ≥ −1``; Duchi's has ``a = −1`` and is then the same for every
spread). The interval is the one the results page computes (:mod:`survey.privacy.bounded`: the
betting interval; Laplace's normal interval), on the tallies that spread is *expected* to give:
n times the probability of each code. tests/test_number_planning.py checks the planned half-width
against the mean half-width of simulated surveys of that spread.

    >>> round(number_margin(400, 0, 100), 2)                            # asked directly
    8.02
    >>> from survey.privacy.numeric import HybridNumber
    >>> round(number_margin(400, 0, 100, mechanism=HybridNumber(2.0, 0, 100)), 2)
    11.25
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import stats

from .bounded import mean_interval
from .numeric import GRID_STEPS, DuchiNumber, HybridNumber, LaplaceNumber, NumberMechanism, PiecewiseNumber

__all__ = ["code_probabilities", "number_margin", "number_sample_size"]

#: Answers up to which :func:`number_sample_size` searches; past them it extrapolates.
SEARCHED = 2**30

#: Sub-steps per grid step for the integral of the position's CDF (the midpoint rule: exact on the
#: CDF's linear pieces and across Duchi's jumps, which fall on whole positions).
_SUBSTEPS = 64


def _position_cdf(mechanism: NumberMechanism, t: float, positions: np.ndarray) -> np.ndarray:
    """P(the unrounded report's position on the grid ≤ p)."""
    y = mechanism.origin + mechanism.step * positions
    if isinstance(mechanism, HybridNumber):
        a = mechanism.piecewise_share
        duchi = mechanism.duchi
        return a * _position_cdf(mechanism.piecewise, t, positions) + (1 - a) * _position_cdf(
            duchi, t, (y - duchi.origin) / duchi.step
        )
    if isinstance(mechanism, DuchiNumber):
        high = float(mechanism.probability_high(t))
        return np.where(y >= mechanism.bound, 1.0, np.where(y >= -mechanism.bound, 1 - high, 0.0))
    if isinstance(mechanism, PiecewiseNumber):
        c, inside, outside = mechanism.bound, mechanism.inside_density, mechanism.outside_density
        left, right = (float(v) for v in mechanism.window(t))
        y = np.clip(y, -c, c)
        return (
            outside * (np.minimum(y, left) + c)
            + inside * np.clip(y - left, 0, right - left)
            + outside * np.clip(y - right, 0, None)
        )
    raise ValueError(f"no code probabilities for the {mechanism.design} mechanism (its reports have no bound)")


def code_probabilities(mechanism: NumberMechanism, t: float) -> np.ndarray:
    """P(code = j | t) for every code j of a bounded mechanism.

    A report at position ``p`` on the grid is sent as ``⌊p⌋ + 1`` with probability ``p − ⌊p⌋``, so
    ``P(j) = E[max(0, 1 − |p − j|)] = ∫_j^{j+1} F − ∫_{j−1}^{j} F`` for the position's CDF ``F``.
    """
    midpoints = (np.arange(_SUBSTEPS) + 0.5) / _SUBSTEPS
    starts = np.arange(-1, GRID_STEPS + 1, dtype=float)  # ∫ over [s, s + 1] for s = −1 .. G
    integrals = _position_cdf(mechanism, t, starts[:, None] + midpoints[None, :]).mean(axis=1)
    probabilities = integrals[1:] - integrals[:-1]
    return np.clip(probabilities, 0.0, None) / max(float(np.clip(probabilities, 0.0, None).sum()), 1e-300)


def _planned(low: float, high: float, level: float, mechanism: NumberMechanism | None) -> Callable[[int], float]:
    """The planned half-width as a function of the number of answers. What does not depend on it
    (the codes' probabilities at the widest spread: 14 ms for the hybrid on its 2,000-step grid, a
    tenfold of one interval's cost) is computed once, so that a search over ``n`` pays for it once."""
    if mechanism is None:
        return lambda n: mean_interval([low, high], [n / 2, n / 2], low, high, level).half_width
    if isinstance(mechanism, LaplaceNumber):
        variance = float(mechanism.variance(1.0)) + 1.0  # the reports' variance at the widest spread
        z = float(stats.norm.ppf(0.5 + level / 2))
        return lambda n: z * math.sqrt(variance / n) * mechanism.half
    probabilities = 0.5 * code_probabilities(mechanism, -1.0) + 0.5 * code_probabilities(mechanism, 1.0)
    kept = probabilities > 0
    values = mechanism.value_of(np.arange(GRID_STEPS + 1)[kept])
    shares = probabilities[kept]
    ends = mechanism.value_of([0, GRID_STEPS])
    return lambda n: mean_interval(values, n * shares, float(ends[0]), float(ends[1]), level).half_width


def number_margin(
    n: int, low: float, high: float, level: float = 0.95, mechanism: NumberMechanism | None = None
) -> float:
    """The planned half-width of the mean's interval with ``n`` answers in ``[low, high]``: asked
    directly (``mechanism`` None) or randomized, at the widest spread of the true numbers."""
    if n < 1:
        raise ValueError(f"plan for at least one answer, got {n}")
    return _planned(low, high, level, mechanism)(n)


def number_sample_size(
    margin: float, low: float, high: float, level: float = 0.95, mechanism: NumberMechanism | None = None
) -> int:
    """The fewest answers whose planned half-width (:func:`number_margin`) is at most ``margin``.

    Asked directly, a margin of half the range or more takes one answer (the interval never leaves
    the range); randomized, the reports reach past the range and so may an interval on a few of
    them, so every margin is searched. Past
    :data:`SEARCHED` answers the half-width is taken as proportional to 1/√n from there (the
    large-sample law, as the shares' planner does past 2^53), rounded up, instead of searched."""
    if not margin > 0:
        raise ValueError(f"the target margin must be greater than 0, got {margin!r}")
    planned = _planned(low, high, level, mechanism)

    def wide(n: int) -> bool:
        return planned(n) > margin

    if not wide(1):
        return 1
    small, large = 1, 2
    while wide(large):
        small, large = large, large * 2
        if large > SEARCHED:
            return math.ceil(SEARCHED * (planned(SEARCHED) / margin) ** 2)
    while large - small > 1:
        middle = (small + large) // 2
        if wide(middle):
            small = middle
        else:
            large = middle
    return large
