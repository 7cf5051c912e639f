"""Randomized minus direct: did asking through randomized response draw out more "yes"?

A split-ballot study asks one arm directly and another through a design. If people under-report
when asked plainly, the randomized arm's estimated share is higher; the validation literature
(Lensvelt-Mulders et al. 2005) calls this the "more is better" comparison. The difference of the two
arms' shares gets its interval by the method of variance estimates recovery (MOVER, Zou & Donner
2008; Newcombe 1998's hybrid score interval is its two-binomial case): from each arm's own interval
(the randomized arm's is :meth:`Estimate.ci`, the direct arm's the floored Wilson interval),

    low  = d − √((θ̂_R − l_R)² + (u_D − θ̂_D)²)
    high = d + √((u_R − θ̂_R)² + (θ̂_D − l_D)²),      d = θ̂_R − θ̂_D,

so it inherits each arm's good small-sample behaviour and stays inside [−1, 1]. The one-sided
p-value for "randomized is not higher" is the z test's, ``Φ(−d/SE)`` with the two arms' standard
errors (the randomized arm's from its design's covariance, the direct arm's ``√(θ̂(1 − θ̂)/n)``): the
interval is what to report, the p-value what a reviewer asks for beside it.

    >>> from survey.privacy import CoinFlip
    >>> r = randomized_minus_direct(CoinFlip(0.5, 0.5), [330, 670], yes_direct=120, n_direct=1000)
    >>> round(r.difference, 3), round(r.low, 3), round(r.high, 3), r.p_value < 0.001
    (0.04, -0.021, 0.102, False)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from .estimation import estimate, floored_wilson_interval
from .mechanisms import Mechanism

__all__ = ["ArmDifference", "mover_difference", "randomized_minus_direct"]


def mover_difference(
    first: float, first_low: float, first_high: float, second: float, second_low: float, second_high: float
) -> tuple[float, float]:
    """The MOVER interval for ``first − second`` from the two estimates' own intervals."""
    difference = first - second
    low = difference - math.sqrt((first - first_low) ** 2 + (second_high - second) ** 2)
    high = difference + math.sqrt((first_high - first) ** 2 + (second - second_low) ** 2)
    return max(low, -1.0), min(high, 1.0)


@dataclass(frozen=True)
class ArmDifference:
    """The randomized arm's share minus the direct arm's, with its interval and a one-sided test."""

    randomized: float
    randomized_interval: tuple[float, float]
    direct: float
    direct_interval: tuple[float, float]
    difference: float
    low: float
    high: float
    level: float
    #: One-sided p-value of "the randomized arm's share is not above the direct arm's".
    p_value: float
    n_randomized: int
    n_direct: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "randomized": {"estimate": self.randomized, "ci": list(self.randomized_interval), "n": self.n_randomized},
            "direct": {"estimate": self.direct, "ci": list(self.direct_interval), "n": self.n_direct},
            "difference": self.difference,
            "ci_low": self.low,
            "ci_high": self.high,
            "level": self.level,
            "p_value": self.p_value,
        }


def _intervals(mechanism: Mechanism, counts: Any, category: int, yes: int, n: int, level: float):
    fitted = estimate(mechanism, counts)
    low, high = fitted.ci(level)
    randomized = float(np.clip(fitted.proportions[category], 0.0, 1.0))
    d_low, d_high = floored_wilson_interval(yes, n, level)
    return (
        randomized,
        (float(low[category]), float(high[category])),
        yes / n,
        (float(d_low), float(d_high)),
    )


def randomized_minus_direct(
    mechanism: Mechanism,
    reported_counts: Any,
    yes_direct: int,
    n_direct: int,
    category: int = 0,
    level: float = 0.95,
) -> ArmDifference:
    """The randomized arm's estimated share of ``category`` (from its reports' counts under
    ``mechanism``) minus the direct arm's share (``yes_direct`` of ``n_direct`` said it)."""
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level!r}")
    if n_direct <= 0 or not 0 <= yes_direct <= n_direct:
        raise ValueError("the direct arm needs n > 0 answers and 0 <= yes <= n")
    counts = np.asarray(reported_counts, dtype=float)
    if counts.sum() <= 0:
        raise ValueError("the randomized arm has no reports")
    r, r_ci, d, d_ci = _intervals(mechanism, counts, category, yes_direct, n_direct, level)
    low, high = mover_difference(r, *r_ci, d, *d_ci)

    fitted = estimate(mechanism, counts)
    se = math.hypot(float(fitted.standard_errors[category]), math.sqrt(d * (1 - d) / n_direct))
    p_value = float(stats.norm.sf((r - d) / se)) if se > 0 else (0.0 if r > d else 1.0)
    return ArmDifference(
        randomized=r,
        randomized_interval=r_ci,
        direct=d,
        direct_interval=d_ci,
        difference=r - d,
        low=low,
        high=high,
        level=level,
        p_value=p_value,
        n_randomized=round(float(counts.sum())),
        n_direct=int(n_direct),
    )
