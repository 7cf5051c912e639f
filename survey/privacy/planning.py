"""What a privacy level costs in precision, before anyone has answered.

Organizers choose ε by what it does to their margin of error and to the number of respondents they
need, so every figure here is computed from the mechanism's matrix at an expected share, with the
same sampling variance the estimator's intervals use (STATISTICS.md §7).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm

from .mechanisms import Mechanism

__all__ = ["design_effect", "expected_shares", "margin_of_error", "per_respondent_variance", "sample_size"]


def expected_shares(mechanism: Mechanism, share: float = 0.5, category: int = 0) -> np.ndarray:
    """True shares to plan with: ``share`` for ``category``, the rest spread evenly over the others."""
    share = float(share)
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"the expected share must be in [0, 1], got {share!r}")
    if not 0 <= category < mechanism.k:
        raise ValueError(f"category must be in 0..{mechanism.k - 1}")
    pi = np.full(mechanism.k, (1.0 - share) / (mechanism.k - 1))
    pi[category] = share
    return pi


def per_respondent_variance(mechanism: Mechanism, share: float = 0.5, category: int = 0) -> float:
    """n × Var(estimated share of ``category``) when its true share is ``share``.

    The diagonal entry of ``Q⁻¹ (diag λ − λλᵀ) Q⁻ᵀ`` at ``λ = Q π``; for a design where
    P(report) = a·θ + b it equals ``λ(1 − λ)/a²``.
    """
    lam = mechanism.matrix @ expected_shares(mechanism, share, category)
    inv = mechanism.inverse[category]
    return float(inv @ (np.diag(lam) - np.outer(lam, lam)) @ inv)


def _z(level: float) -> float:
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"the confidence level must be between 0 and 1, got {level!r}")
    return float(norm.ppf(0.5 + level / 2.0))


def margin_of_error(mechanism: Mechanism, n: int, share: float = 0.5, level: float = 0.95, category: int = 0) -> float:
    """Expected half-width of the interval for ``category``'s share at ``n`` respondents.

    ``share`` is the organizer's guess of the true share; 0.5 is the worst case for a yes/no
    question.

        >>> from survey.privacy import CoinFlip
        >>> round(margin_of_error(CoinFlip(0.5, 0.5), 1000), 4)
        0.062
    """
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive whole number, got {n!r}")
    return _z(level) * math.sqrt(per_respondent_variance(mechanism, share, category) / n)


def sample_size(mechanism: Mechanism, margin: float, share: float = 0.5, level: float = 0.95, category: int = 0) -> int:
    """Respondents needed for an expected half-width of at most ``margin``."""
    margin = float(margin)
    if not 0.0 < margin < 1.0:
        raise ValueError(f"the target margin must be between 0 and 1, got {margin!r}")
    variance = per_respondent_variance(mechanism, share, category)
    needed = _z(level) ** 2 * variance / margin**2
    if not math.isfinite(needed):
        raise ValueError(f"a margin of {margin:g} is too small to plan for")
    return max(1, math.ceil(needed - 1e-9))


def design_effect(mechanism: Mechanism, share: float = 0.5, category: int = 0) -> float:
    """How many times the respondents of a direct question this design needs for the same margin.

    The ratio of the estimator's variance to that of asking directly, ``θ(1 − θ)/n``. The seed
    survey (ε = ln 3) has a design effect of 4 at θ = 0.5. Infinite at θ of 0 or 1, where a direct
    question has no variance at all.
    """
    direct = share * (1.0 - share)
    variance = per_respondent_variance(mechanism, share, category)
    if direct == 0.0:
        return math.inf
    return variance / direct
