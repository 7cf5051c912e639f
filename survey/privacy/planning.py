"""What a privacy level costs in precision, before anyone has answered.

Organizers choose ε by what it does to their margin of error and to the number of respondents they
need, so every figure here is computed from the mechanism's matrix at an expected share:

* :func:`margin_of_error` is the expected half-width of the interval the results page will show
  (the default interval of :meth:`survey.privacy.Estimate.ci`, clipped to [0, 1]), computed exactly
  as a finite sum over the reported count, not the large-sample formula ``z·SE``;
* :func:`sample_size` is the smallest number of respondents whose expected half-width is at most a
  target margin;
* :func:`design_effect` and :func:`per_respondent_variance` are ratios and variances of the
  unbiased estimate (docs/statistics.md §6), the large-sample view of the same cost.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import binom

from .estimation import _check_level, _check_method, _map_affine, _z, binomial_interval
from .mechanisms import Mechanism

__all__ = [
    "design_effect",
    "expected_shares",
    "margin_of_error",
    "per_respondent_variance",
    "sample_size",
    "summed_terms",
]

#: Counts further than 12 standard deviations plus 40 from the expected count carry less than
#: 1e-25 of the binomial's probability (Bernstein's inequality), so the sum leaves them out.
_TAIL_SDS, _TAIL_COUNTS = 12.0, 40.0
#: Above this many counts in that window (n beyond about 10^8) the sum takes every s-th count,
#: weighted by s, a step of at most 1/4000 of a standard deviation: the summand is smooth on that
#: scale (the sum of a smooth function on a fine lattice equals its integral, and the sum on the
#: full lattice, to far below the precision shown).
_MAX_TERMS = 100_000
#: Counts are exact in double precision up to 2^53; beyond, the large-sample value is used.
_MAX_EXACT_N = 2**53
#: The expected half-width falls as n grows wherever it is below 0.41 (checked exactly for every
#: n ≤ 3,000 on GRR with 2 to 10 options at ε from 0.1 to 4, coin flips and forced response, shares
#: 0 to 0.5); above, where the interval spans most of [0, 1], clipping makes it wobble by up to 1%.
_MONOTONE_BELOW = 0.4
#: For margins of 0.4 or more, answers up to this are checked against every smaller n.
_SCAN_LIMIT = 2000


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
    """n × Var(unbiased estimate of ``category``'s share) when its true share is ``share``.

    The diagonal entry of ``Q⁻¹ (diag λ − λλᵀ) Q⁻ᵀ`` at ``λ = Q π``; for a design where
    P(report) = a·θ + b it equals ``λ(1 − λ)/a²``.
    """
    lam = mechanism.matrix @ expected_shares(mechanism, share, category)
    inv = mechanism.inverse[category]
    return float(inv @ (np.diag(lam) - np.outer(lam, lam)) @ inv)


def _check_n(n: int) -> int:
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n must be a positive whole number, got {n!r}")
    return int(n)


def _large_sample_half_width(mechanism: Mechanism, n: int, share: float, level: float, category: int) -> float:
    return min(0.5, _z(level) * math.sqrt(per_respondent_variance(mechanism, share, category) / n))


def _window(n: int, lam: float) -> tuple[int, int, int]:
    """The counts the expected half-width sums: ``first`` to ``last`` every ``stride``-th."""
    mean = n * lam
    reach = _TAIL_SDS * math.sqrt(n * lam * (1.0 - lam)) + _TAIL_COUNTS
    first, last = max(0, math.floor(mean - reach)), min(n, math.ceil(mean + reach))
    return first, last, max(1, math.ceil((last - first + 1) / _MAX_TERMS))


def summed_terms(mechanism: Mechanism, n: int, share: float = 0.5, category: int = 0) -> int:
    """How many counts :func:`margin_of_error` sums at ``n`` respondents: what it costs (about a tenth of
    a microsecond each, at most 100,001), 0 where it gives the large-sample value. :func:`sample_size`
    sums as many at each n it tries (a few to a few dozen, near its answer)."""
    coef = mechanism.affine_coefficients(category)
    if coef is None or n > _MAX_EXACT_N:
        return 0
    first, last, stride = _window(n, min(max(coef[0] * share + coef[1], 0.0), 1.0))
    return (last - first) // stride + 1


def _expected_half_width(mechanism: Mechanism, n: int, share: float, level: float, category: int, method: str) -> float:
    coef = mechanism.affine_coefficients(category)
    if coef is None or n > _MAX_EXACT_N:
        return _large_sample_half_width(mechanism, n, share, level, category)
    a, b = coef
    lam = min(max(a * share + b, 0.0), 1.0)
    first, last, stride = _window(n, lam)
    x = np.arange(first, last + 1, stride, dtype=float)
    weights = binom.pmf(x, n, lam) * stride
    low, high = _map_affine(*binomial_interval(x, n, level, method), a, b)
    return 0.5 * float(weights @ (high - low))


def margin_of_error(
    mechanism: Mechanism,
    n: int,
    share: float = 0.5,
    level: float = 0.95,
    category: int = 0,
    *,
    method: str = "wilson",
) -> float:
    """Expected half-width of the interval the results page will show for ``category``'s share.

    That interval is ``Estimate.ci(level, method=method)``, clipped to [0, 1]: for every design the
    builder offers, the floored Wilson interval of the reported share mapped through the design.
    Its reported count is Binomial(n, λ) with ``λ = a·share + b``, so the expected half-width is the
    finite sum ``Σ_x Binom(x; n, λ)·(high(x) − low(x))/2``; counts whose probability is below
    1e-25 in total are left out, and for n beyond about 10^10 every s-th count is summed (see
    ``_MAX_TERMS``). It is smaller than the large-sample ``z·SE`` mainly where the interval is
    clipped at 0 or 1. ``share`` is the organizer's guess of the true share; 0.5 is the worst case
    for a yes/no question. A category whose reported share is not affine in its own (a custom
    matrix) and n beyond 2^53 get the large-sample half-width ``z·sqrt(variance / n)``.

        >>> from survey.privacy import CoinFlip
        >>> round(margin_of_error(CoinFlip(0.5, 0.5), 1000), 4)
        0.0618
    """
    n = _check_n(n)
    level = _check_level(level)
    method = _check_method(method)
    expected_shares(mechanism, share, category)  # validates share and category
    return _expected_half_width(mechanism, n, float(share), level, category, method)


def sample_size(
    mechanism: Mechanism,
    margin: float,
    share: float = 0.5,
    level: float = 0.95,
    category: int = 0,
    *,
    method: str = "wilson",
) -> int:
    """The smallest number of respondents whose expected half-width is at most ``margin``.

    The expected half-width is :func:`margin_of_error`'s. It is found by a search over n: from the
    large-sample value ``z²·variance / margin²``, steps that treat the half-width as proportional to
    ``1/√n`` bracket the answer, and bisection narrows the bracket to ``n − 1`` (half-width above
    the margin) and ``n`` (at most the margin). Wherever the half-width is below 0.4 it falls as n
    grows (checked exactly, see ``_MONOTONE_BELOW``), so that ``n`` is the smallest; for margins
    of 0.4 or more, where clipping at 0 and 1 makes it wobble by up to 1%, every smaller n is tried
    as well when the answer is at most 2,000 (beyond, a smaller n may reach such a margin by that
    wobble). Beyond 2^53 respondents the large-sample value is returned, rounded up.
    """
    margin = float(margin)
    if not 0.0 < margin < 1.0:
        raise ValueError(f"the target margin must be between 0 and 1, got {margin!r}")
    level = _check_level(level)
    method = _check_method(method)
    expected_shares(mechanism, share, category)
    share = float(share)

    def half_width(n: int) -> float:
        return _expected_half_width(mechanism, n, share, level, category, method)

    if half_width(1) <= margin:
        return 1
    variance = per_respondent_variance(mechanism, share, category)
    guess = _z(level) ** 2 * variance / margin**2
    if not math.isfinite(guess):
        raise ValueError(f"a margin of {margin:g} is too small to plan for")
    if guess > _MAX_EXACT_N:
        return math.ceil(guess - 1e-9)
    low, high = 1, None  # half_width(low) > margin >= half_width(high)
    n = max(2, math.ceil(guess))
    for _ in range(200):
        width = half_width(n)
        if width <= margin:
            high = n
        else:
            low = n
        if high is not None and high - low <= 1:
            break
        # the next probe: where a half-width proportional to 1/√n would meet the margin
        probe = math.ceil(n * (width / margin) ** 2)
        if high is None:
            if n >= _MAX_EXACT_N:
                return n
            n = min(max(probe, n + 1, 2 * n if width > 2 * margin else 0), _MAX_EXACT_N)
        else:
            n = min(max(probe, low + 1), high - 1)  # next to an end when the model says so
            if abs(n - probe) > 1 and high - low > 2:
                n = (low + high) // 2
    else:  # pragma: no cover
        raise ValueError(f"no sample size found for a margin of {margin:g}")
    if margin >= _MONOTONE_BELOW and high <= _SCAN_LIMIT:
        return next((n for n in range(1, high) if half_width(n) <= margin), high)
    return high


def design_effect(mechanism: Mechanism, share: float = 0.5, category: int = 0) -> float:
    """The ratio of the unbiased estimator's variance to that of asking the question directly.

    ``per_respondent_variance / (θ(1 − θ))``: how many times the respondents of a direct question
    this design needs for the same large-sample margin. The seed survey (ε = ln 3) has a design
    effect of 4 at θ = 0.5. Infinite at θ of 0 or 1, where a direct question has no variance at all.
    """
    direct = share * (1.0 - share)
    variance = per_respondent_variance(mechanism, share, category)
    if direct == 0.0:
        return math.inf
    return variance / direct
