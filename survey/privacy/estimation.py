"""Debiasing reported counts into population shares, with intervals that keep their word.

Three numbers per category, each for a reason:

* ``unbiased``: matrix inversion ``Q⁻¹ λ̂``. It can leave [0, 1], but it is unbiased, so it is
  what pools across surveys and what a meta-analysis wants.
* ``proportions``: maximum likelihood on the probability simplex (the consistent estimate). It is
  what a reader expects to see: non-negative, summing to 1, and equal to ``unbiased`` whenever that
  already lies in the simplex.
* ``ci()``: a confidence interval per category, by one of three methods (see :meth:`Estimate.ci`):

  - ``"wilson"`` (the default). Where a category's reported share is affine in its own true share,
    ``λ = a·θ + b`` (every binary design, GRR, m-category forced response), the reported count is
    binomial, so the interval is one for a binomial share, mapped through ``θ = (λ − b)/a`` and
    clipped to [0, 1]: the *floored Wilson* interval, the Wilson score interval widened where
    needed to contain the Clopper–Pearson interval at level ``1 − 1.4·(1 − level)``. Wilson alone
    covers only 84% just above the share at which one report is expected, at any n (and 89% where
    two are), because its bounds for small counts are too tight; containing an exact interval
    bounds every such dip by construction, so the floored interval covers at least 93% (for a 95%
    interval) at every true share and every n, while it keeps Wilson's width wherever counts are
    not small. Other categories (custom matrices) get the profile-likelihood interval over the
    simplex, which, unlike the delta method, follows the likelihood's asymmetry near the edges,
    with a continuity correction and an exact test of the vertex (docs/statistics.md §5.2): its
    floor is measured by enumerating every count vector (benchmarks/coverage_exact.md).
  - ``"exact"``: Clopper–Pearson mapped through the design (and, for custom matrices, the range of
    the share over the simplex points whose reported shares lie in a Bonferroni box of
    Clopper–Pearson intervals): at least ``level`` everywhere, by construction, at the price of
    width.
  - ``"wald"``: the delta method, ``unbiased ± z·SE`` with a half-count adjustment, kept for
    comparison; it spends half its width below zero near θ = 0.

  Simultaneous intervals (``simultaneous=True``) are Bonferroni over exact pieces, so they cover
  every category at once with probability at least ``level`` by the union bound.

The covariance is the sampling form ``Q⁻¹ (diag λ − λλᵀ) Q⁻ᵀ / n``: inference is about the
population the respondents were drawn from, not about the fixed answers of those respondents
(which is the smaller variance of Wang et al. 2017 that multi-freq-ldpy reports). It is evaluated at
the reported shares the consistent estimate implies, ``λ̃ = Q·π̃``; that is ``λ̂`` itself whenever
the unbiased estimate lies in the simplex, and keeps a category nobody reported from getting a
standard error of zero beside a negative estimate.

Every function accepts counts stacked along leading axes (shape ``(..., k)``), so the benchmark
runs this exact code on thousands of simulated surveys at once.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from scipy import special
from scipy.stats import binom, norm

from .mechanisms import Mechanism

__all__ = [
    "METHODS",
    "Estimate",
    "binomial_interval",
    "clopper_pearson_interval",
    "estimate",
    "floored_wilson_interval",
    "interval_coverage",
    "minimum_coverage",
    "simplex_mle",
    "wilson_interval",
]

#: The interval methods :meth:`Estimate.ci` offers.
METHODS = ("wilson", "exact", "wald")

# What each category's interval is, as recorded in ``Estimate.interval_methods`` and the exports.
FLOORED_WILSON = "wilson-floor-mapped"
CLOPPER_PEARSON = "clopper-pearson-mapped"
PROFILE_LIKELIHOOD = "profile-likelihood"
CLOPPER_PEARSON_PROJECTED = "clopper-pearson-projected"
DELTA_WALD = "delta-wald"
BONFERRONI = "bonferroni-"

#: The floored Wilson interval contains the Clopper–Pearson interval at level 1 − FLOOR_FACTOR·α,
#: so it misses at most 1.4 times as often as the level allows (7% for a 95% interval).
FLOOR_FACTOR = 1.4
#: Beyond this many reports on both sides of a count, the Clopper–Pearson interval at level
#: 1 − 1.4·α lies inside Wilson's at level 1 − α for every level up to 0.999 (it sticks out only for
#: counts below 510 there, below 46 at 95%; tests check it), so it is not computed there.
_FLOOR_COUNT_LIMIT = 2000
_FLOOR_LIMIT_LEVEL = 0.999


def _check_level(level: float) -> float:
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"the confidence level must be between 0 and 1, got {level!r}")
    return level


@functools.lru_cache(maxsize=64)
def _z(level: float) -> float:
    """The two-sided normal quantile; scipy's ppf costs far more than the rest of an interval."""
    return float(norm.ppf(0.5 + _check_level(level) / 2.0))


def _check_method(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"unknown interval method {method!r}; choose one of {', '.join(METHODS)}")
    return method


# -- intervals for a binomial share ------------------------------------------------------------


def wilson_interval(successes: Any, n: Any, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a binomial share (arrays broadcast).

    On its own it is not the interval :meth:`Estimate.ci` reports: its coverage dips to 84% just
    above the share where one success is expected (see :func:`floored_wilson_interval`).
    """
    z = _z(_check_level(level))
    n = np.asarray(n, dtype=float)
    successes = np.asarray(successes, dtype=float)
    share = successes / n
    z2n = z * z / n
    centre = (share + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * np.sqrt(share * (1.0 - share) / n + z2n / (4.0 * n))
    low = np.where(successes <= 0, 0.0, np.clip(centre - half, 0.0, 1.0))  # exact ends: rounding
    high = np.where(successes >= n, 1.0, np.clip(centre + half, 0.0, 1.0))  # must not exclude 0 or 1
    return low, high


def clopper_pearson_interval(successes: Any, n: Any, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Clopper–Pearson ("exact") interval for a binomial share (arrays broadcast).

    Each bound is the share at which the observed count sits in a tail of probability
    ``(1 − level)/2``, so the interval covers the true share with probability at least ``level``
    whatever it is: conservative, and wider than Wilson's.
    """
    tail = (1.0 - _check_level(level)) / 2.0
    x = np.asarray(successes, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(x <= 0, 0.0, special.betaincinv(np.maximum(x, 1.0), n - x + 1.0, tail))
        high = np.where(x >= n, 1.0, special.betaincinv(x + 1.0, np.maximum(n - x, 1.0), 1.0 - tail))
    return low, high


def floored_wilson_interval(successes: Any, n: Any, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson interval widened to contain the Clopper–Pearson interval at ``1 − 1.4·(1 − level)``.

    Why: Wilson's interval has the right width and nearly the right coverage on average, but its
    bounds for small counts are too tight, so just above the share at which a few successes are
    expected it covers far less than ``level`` (84% for one, 89% for two, 92% for three, whatever
    n is). This interval contains an exact one, so its coverage is at least ``1 − 1.4·(1 − level)``
    (93% for 95%) at every share and every n, by construction rather than by measurement; and
    where counts are not small the exact interval lies inside Wilson's and nothing changes (at
    95%, a count of 400 in 1000 gets Wilson's [0.3701, 0.4307]). Brown, Cai and DasGupta's (2001)
    modified Wilson interval repairs the dips at one and two successes with a one-sided Poisson
    bound (for counts up to 2 when n ≤ 50, 3 when n ≤ 100), but exact computation shows dips to
    91.6% at three successes (n ≤ 50) and to 92.7% beyond, at no width cost; the floor costs up to
    5.6% of width at n = 20, under 4% from n = 30 on (``benchmarks/estimators.md``).
    """
    level = _check_level(level)
    x = np.asarray(successes, dtype=float)
    n = np.asarray(n, dtype=float)
    low, high = wilson_interval(x, n, level)
    floor_level = 1.0 - FLOOR_FACTOR * (1.0 - level)
    if level <= _FLOOR_LIMIT_LEVEL:
        x, n = np.broadcast_arrays(x, n)
        small = np.minimum(x, n - x) < _FLOOR_COUNT_LIMIT
        if not small.all():
            low, high = np.array(low, dtype=float), np.array(high, dtype=float)
            if small.any():
                exact_low, exact_high = clopper_pearson_interval(x[small], n[small], floor_level)
                low[small] = np.minimum(low[small], exact_low)
                high[small] = np.maximum(high[small], exact_high)
            return low, high
    exact_low, exact_high = clopper_pearson_interval(x, n, floor_level)
    return np.minimum(low, exact_low), np.maximum(high, exact_high)


def binomial_interval(
    successes: Any, n: Any, level: float = 0.95, method: str = "wilson"
) -> tuple[np.ndarray, np.ndarray]:
    """The interval :meth:`Estimate.ci` uses for a binomial reported share, by method.

    ``"wilson"``: :func:`floored_wilson_interval`; ``"exact"``: :func:`clopper_pearson_interval`;
    ``"wald"``: the share ± z·SE with the standard error of the share itself (for comparison).
    """
    method = _check_method(method)
    if method == "wilson":
        return floored_wilson_interval(successes, n, level)
    if method == "exact":
        return clopper_pearson_interval(successes, n, level)
    n = np.asarray(n, dtype=float)
    share = np.asarray(successes, dtype=float) / n
    half = _z(_check_level(level)) * np.sqrt(share * (1.0 - share) / n)
    return share - half, share + half


# -- the consistent estimate ----------------------------------------------------------------------


def simplex_mle(
    matrix: np.ndarray,
    observed: np.ndarray,
    start: np.ndarray | None = None,
    *,
    tol: float = 1e-12,
    max_iter: int = 500,
) -> np.ndarray:
    """Maximum-likelihood true shares on the probability simplex.

    ``observed`` holds reported counts or shares, shape ``(..., k)``; the log-likelihood
    ``Σ_r c_r log (Qπ)_r`` is concave, so its maximum on the simplex is found exactly by an
    active-set method: Newton steps on the face of the current support (shares that reach zero
    leave it) and, when a share outside the support would raise the likelihood, a line search
    towards that corner (a Frank-Wolfe step) brings it back. It converges to the same point as EM
    (the iterative Bayesian update ``π ← π ⊙ Qᵀ(λ̂ ⊘ Qπ)``), but to machine precision and in a few
    steps where EM crawls, which it does whenever the maximum lies on the boundary.
    """
    q = np.asarray(matrix, dtype=float)
    lam = np.asarray(observed, dtype=float)
    k = q.shape[1]
    flat = lam.reshape(-1, lam.shape[-1])
    if start is None:
        begin = np.full((flat.shape[0], k), 1.0 / k)
    else:  # one start for every row, or one per row (the matrix need not be square)
        begin = np.broadcast_to(np.asarray(start, dtype=float), (flat.shape[0], k))
    out = np.empty((flat.shape[0], k))
    for i, row in enumerate(flat):
        out[i] = _mle_one(q, row / row.sum(), begin[i], tol, max_iter)
    return out.reshape((*lam.shape[:-1], k))


def _mle_one(q: np.ndarray, lam: np.ndarray, start: np.ndarray, tol: float, max_iter: int) -> np.ndarray:
    seen = lam > 0
    return _offset_mle(q[seen], np.zeros(int(seen.sum())), lam[seen], start, tol, max_iter)[0]


def _offset_mle(
    design: np.ndarray,
    offset: np.ndarray,
    weights: np.ndarray,
    start: np.ndarray,
    tol: float = 1e-12,
    max_iter: int = 500,
) -> tuple[np.ndarray, float]:
    """Maximize ``Σ_r w_r log(offset_r + (design·ρ)_r)`` over the simplex; return ``(ρ, value)``.

    The simplex MLE is the case ``offset = 0``; the profile likelihood of one share ``t`` is the
    case ``offset = t·Q[:, v]``, ``design = (1 − t)·Q[:, others]``. The objective is concave, and
    at its maximum the gradient equals a common value ``ν = ρ·∇`` on the support and is at most
    ``ν`` off it; the active-set Newton method below reaches that point to machine precision.
    """
    m = design.shape[1]

    def loglik(rho: np.ndarray) -> float:
        fitted = offset + design @ rho
        return -math.inf if np.any(fitted <= 0) else float(weights @ np.log(fitted))

    pi = np.clip(start, 0.0, None)
    total = pi.sum()
    pi = pi / total if total > 0 else np.full(m, 1.0 / m)
    if not math.isfinite(loglik(pi)):
        pi = np.full(m, 1.0 / m)
    free = pi > 0
    current = loglik(pi)
    if m == 1 or not math.isfinite(current):
        return pi, current
    for _ in range(max_iter):
        fitted = offset + design @ pi
        grad = (weights / fitted) @ design
        support = np.flatnonzero(free)
        nu = float(pi @ grad)
        # 1. Newton step on the face of the support, keeping Σπ = 1.
        scaled = design[:, support] * np.sqrt(weights / fitted**2)[:, None]
        hessian = -(scaled.T @ scaled)
        size = support.size
        system = np.zeros((size + 1, size + 1))
        system[:size, :size] = hessian
        system[:size, size] = 1.0
        system[size, :size] = 1.0
        rhs = np.concatenate([-grad[support], [0.0]])
        direction = None
        if design.shape[0] >= size:  # otherwise the face's Hessian is singular: least squares
            try:
                solution = np.linalg.solve(system, rhs)
                if np.abs(system @ solution - rhs).max() <= 1e-9 * (1.0 + np.abs(rhs).max()):
                    direction = solution[:size]
            except np.linalg.LinAlgError:
                pass
        if direction is None:
            direction = np.linalg.lstsq(system, rhs, rcond=None)[0][:size]
        slope = float(grad[support] @ direction)
        if not slope > 0 or not np.all(np.isfinite(direction)):
            direction = grad[support] - grad[support].mean()  # projected gradient
            slope = float(grad[support] @ direction)
        spread = np.abs(grad[support] - grad[support].mean()).max()
        # a Newton step worth less than the rounding error of the objective cannot be verified
        # by the line search below (it would halve the step 50 times), and is not worth taking
        stationary = slope <= 4e-16 * max(1.0, abs(current)) or spread <= tol * max(1.0, abs(nu))
        if not stationary:
            shrinking = direction < 0
            limit = np.min(-pi[support][shrinking] / direction[shrinking]) if shrinking.any() else math.inf
            step = min(1.0, limit)
            while step > 1e-16:
                trial = pi.copy()
                trial[support] += step * direction
                trial = np.clip(trial, 0.0, None)
                value = loglik(trial)
                if value >= current + 1e-4 * step * slope:
                    break
                step /= 2
            else:
                stationary = True
            if not stationary:
                if step == limit:
                    hit = support[shrinking][np.argmin(-pi[support][shrinking] / direction[shrinking])]
                    trial[hit] = 0.0
                trial /= trial.sum()
                pi, current = trial, loglik(trial)
                free = pi > 0
                continue
        # 2. On a stationary point of the face: is some excluded share worth bringing back?
        outside = np.flatnonzero(~free)
        if outside.size == 0 or grad[outside].max() <= nu + tol * max(1.0, abs(nu)):
            break
        corner = np.zeros(m)
        corner[outside[np.argmax(grad[outside])]] = 1.0
        # derivative of loglik((1 − s)π + s·corner) is positive at s = 0; bisect for its zero
        low, high = 0.0, 1.0
        for _ in range(60):
            mid = (low + high) / 2
            point = (1 - mid) * pi + mid * corner
            if float((weights / (offset + design @ point)) @ (design @ (corner - pi))) > 0:
                low = mid
            else:
                high = mid
        pi = (1 - low) * pi + low * corner
        current = loglik(pi)
        free = pi > 0
    return pi, current


def _project_to_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row onto the probability simplex (Duchi et al. 2008)."""
    k = v.shape[-1]
    flat = v.reshape(-1, k)
    ordered = -np.sort(-flat, axis=1)
    cumulative = np.cumsum(ordered, axis=1) - 1.0
    index = np.arange(1, k + 1)
    feasible = ordered - cumulative / index > 0
    rho = k - 1 - np.argmax(feasible[:, ::-1], axis=1)
    shift = cumulative[np.arange(flat.shape[0]), rho] / (rho + 1)
    return np.maximum(flat - shift[:, None], 0.0).reshape(v.shape)


# -- intervals for categories that are not affine ------------------------------------------------


def _profile_interval(
    q: np.ndarray, lam: np.ndarray, pi_hat: np.ndarray, v: int, drop: float, guess: float
) -> tuple[float, float]:
    """The set of ``π_v`` whose profile log-likelihood is within ``drop`` of the maximum: its two
    ends (:func:`_profile_end`)."""
    return _profile_end(q, lam, pi_hat, v, drop, guess, 0.0), _profile_end(q, lam, pi_hat, v, drop, guess, 1.0)


def _profile_end(
    q: np.ndarray, lam: np.ndarray, pi_hat: np.ndarray, v: int, drop: float, guess: float, edge: float
) -> float:
    """The end on the side of ``edge`` (0 or 1) of the set of ``π_v`` whose profile log-likelihood
    is within ``drop`` of the maximum (one end alone where only one is wanted: the continuity
    correction, :func:`_shifted_ends`, uses one end of each shifted interval).

    ``lam`` holds reported shares (the log-likelihood per respondent, so ``drop = χ²₁/(2n)``).
    The profile ``P(t) = max{ℓ(π) : π in the simplex, π_v = t}`` is concave in ``t`` (the
    log-likelihood is concave and the simplex convex), so the set is an interval and each end is
    the one root of ``P(t) = ℓ(π̂) − drop`` on its side of ``π̂_v``. Newton's method on a concave
    function converges monotonically once it has overshot, and a bisection bracket guards it;
    ``dP/dt = ∇ℓ(π)·(e_v − ρ)`` comes free from the inner maximum (the envelope theorem). Each
    ``P(t)`` is the maximum over the other shares ``π = t·e_v + (1 − t)·ρ``, solved by
    :func:`_offset_mle` warm-started from the previous ``t``.
    """
    seen = lam > 0
    qs, w = q[seen], lam[seen]
    k = q.shape[1]
    others = np.delete(np.arange(k), v)
    column, rest = qs[:, v], qs[:, others]
    best = float(w @ np.log(qs @ pi_hat))
    target = best - drop
    t_hat = float(pi_hat[v])
    rho_hat = pi_hat[others]
    rho_hat = rho_hat / rho_hat.sum() if rho_hat.sum() > 0 else np.full(k - 1, 1.0 / (k - 1))

    def profile(t: float, start: np.ndarray) -> tuple[float, float, np.ndarray]:
        if t >= 1.0:
            value = -math.inf if np.any(column <= 0) else float(w @ np.log(column))
            rho = start
        else:
            rho, value = _offset_mle((1.0 - t) * rest, t * column, w, start)
        if not math.isfinite(value):
            return value, math.nan, rho
        fitted = t * column + (1.0 - t) * (rest @ rho)
        gradient = (w / fitted) @ qs
        return value, float(gradient[v] - gradient[others] @ rho), rho

    def end() -> float:
        if t_hat == edge:
            return edge
        value, _, _ = profile(edge, rho_hat)
        if value >= target:
            return edge
        inside, outside, rho = t_hat, edge, rho_hat
        t = t_hat + math.copysign(guess, edge - t_hat)
        if not min(t_hat, edge) < t < max(t_hat, edge):
            t = (t_hat + edge) / 2
        for _ in range(100):
            value, slope, new_rho = profile(t, rho)
            gap = value - target
            if gap >= 0:
                inside, rho = t, new_rho
            else:
                outside = t
                if math.isfinite(value):
                    rho = new_rho
            if abs(gap) <= 1e-13 * max(1.0, abs(target)) or abs(outside - inside) <= 1e-12:
                break
            step = t - gap / slope if math.isfinite(gap) and slope and math.isfinite(slope) else math.nan
            if not min(inside, outside) < step < max(inside, outside):
                step = (inside + outside) / 2
            t = step
        return t

    return end()


#: Above this many categories the rows that test a vertex are the ones where it is the largest
#: entry, not the best of every subset of rows (2^k of them).
_VERTEX_SUBSET_LIMIT = 10


def _vertex_test_rows(q: np.ndarray, v: int) -> tuple[np.ndarray, float] | None:
    """The reported categories whose pooled count best tells "everyone's answer is ``v``" apart.

    Under the population ``e_v`` the pooled count of a set ``A`` of reported categories is
    Binomial(n, a_v) with ``a = Σ_{r∈A} Q[r, ·]``; under any other population its share is
    ``a·π < a_v`` when ``a_v`` exceeds every other ``a_u``, so few reports in ``A`` speak against the
    vertex. Of the sets that qualify, the one with the largest gap to the nearest other answer per
    standard deviation, ``(a_v − max a_u)/√(a_v(1 − a_v))``; None when no set qualifies.
    """
    k = q.shape[1]
    if k <= _VERTEX_SUBSET_LIMIT:
        members = (np.arange(1, 2**k - 1)[:, None] >> np.arange(k)) & 1
    else:
        members = (q[:, v] > np.delete(q, v, axis=1).max(axis=1)).astype(int)[None, :]
    pooled = members @ q
    share = pooled[:, v]
    gap = share - np.delete(pooled, v, axis=1).max(axis=1)
    usable = (gap > 1e-12) & (share < 1.0)
    if not np.any(usable):
        return None
    score = np.where(usable, gap / np.sqrt(np.where(usable, share * (1.0 - share), 1.0)), -np.inf)
    best = int(np.argmax(score))
    return members[best].astype(bool), float(share[best])


def _vertex_plausible(rows: tuple[np.ndarray, float] | None, counts: np.ndarray, alpha: float) -> bool:
    """Whether an exact one-sided test at level ``alpha`` keeps "every true answer is ``v``".

    Why the profile interval needs this: at a vertex of the simplex the other k − 1 shares all sit
    on their boundary, so twice the log-likelihood ratio is not χ²₁ but a mixture of χ² with up to
    k − 1 degrees of freedom, and the profile interval (calibrated on χ²₁) leaves out a true share
    of 1 too often (9.8% of surveys for a 4×4 matrix at n = 50, by exact enumeration). The vertex
    is a simple hypothesis, so an exact test of it costs one Clopper–Pearson bound; ``rows`` are
    :func:`_vertex_test_rows`'s choice.
    """
    if rows is None:
        return False
    members, share = rows
    n = float(counts.sum())
    pooled = float(counts[members].sum())
    if pooled >= n:
        return True
    return bool(special.betaincinv(pooled + 1.0, n - pooled, 1.0 - alpha) >= share)


#: How far (in reports) the counts are moved for the continuity correction of profile intervals:
#: a quarter of a report, the least that, with the vertex test, kept the floor in every cell of
#: benchmarks/coverage_exact.md (half a report also does, 5% wider at n = 30).
_SHIFT = 0.25


def _shifted_ends(
    q: np.ndarray, inverse: np.ndarray, row: np.ndarray, v: int, drop: float, ends: tuple[float, float], z: float
) -> tuple[float, float]:
    """The profile interval widened to those of the counts :data:`_SHIFT` of a report away.

    Why: the counts are whole numbers, and the profile interval (like Wilson's, which it resembles
    for one share) is too short on the side of small counts: exact enumeration found it covering
    90.2% for a 4×4 matrix at n = 30. Each end is widened to the same end for the counts moved a
    fraction of a report in the direction that moves ``v``'s unbiased share most that way (from
    the reported category with the lowest weight in ``Q⁻¹``'s row ``v`` that anyone reported to
    the one with the highest, and back): two more profiles per category, a widening of order
    ``1/n`` against a width of order ``1/√n``.
    """
    total = float(row.sum())
    weights = inverse[v]
    low, high = ends
    for sign in (1.0, -1.0):
        toward = int(np.argmax(sign * weights))
        held = np.flatnonzero(row > 0)
        away = int(held[np.argmin(sign * weights[held])])
        if away == toward:
            continue
        moved = min(_SHIFT, float(row[away]))
        shifted = row.astype(float).copy()
        shifted[toward] += moved
        shifted[away] -= moved
        lam = shifted / total
        start = _project_to_simplex(lam @ inverse.T)
        pi = _mle_one(q, lam, start, 1e-12, 500)
        se = math.sqrt(max(float((inverse[v] ** 2) @ (q @ pi)) - float(inverse[v] @ (q @ pi)) ** 2, 0.0) / total)
        # the one end this shift widens: the upper when moved up, the lower when moved down
        moved_end = _profile_end(q, lam, pi, v, drop, z * se if se > 0 else 0.05, 1.0 if sign > 0 else 0.0)
        if sign > 0:
            high = max(high, moved_end)
        else:
            low = min(low, moved_end)
    return low, high


def _projected_intervals(
    q: np.ndarray, counts: np.ndarray, level: float, categories: list[int]
) -> dict[int, tuple[float, float]]:
    """Exact intervals for custom matrices: the range of each ``π_v`` over a box of reported shares.

    The box is Clopper–Pearson at ``1 − (1 − level)/k`` on every reported share, so it holds the
    true reported shares with probability at least ``level`` (the union bound); whenever it does,
    the true ``π`` is among the simplex points ``π`` with ``Qπ`` in the box, and so every ``π_v``
    lies between the minimum and maximum a linear program finds there. One box serves every
    category at once, so these intervals are also simultaneous. Reports no design point can explain
    at this level (an empty feasible set) give [0, 1]: the data say nothing the design can read.
    """
    from scipy.optimize import linprog  # only here: importing it costs the app's start-up time

    k = q.shape[1]
    n = float(counts.sum())
    low, high = clopper_pearson_interval(counts, n, 1.0 - (1.0 - level) / k)
    a_ub = np.vstack([q, -q])
    b_ub = np.concatenate([high, -low])
    a_eq, b_eq = np.ones((1, k)), np.ones(1)
    out = {}
    for v in categories:
        cost = np.zeros(k)
        cost[v] = 1.0
        ends = []
        for sign in (1.0, -1.0):
            result = linprog(sign * cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=(0.0, 1.0), method="highs")
            if result.status != 0:
                ends = [0.0, 1.0]
                break
            ends.append(float(result.x[v]))
        out[v] = (min(max(ends[0], 0.0), 1.0), min(max(ends[1], 0.0), 1.0))
    return out


# -- the estimate ----------------------------------------------------------------------------------


class Estimate:
    """Debiased shares of one randomized question (or of a stack of surveys of it).

    Built by :func:`estimate`; modelled on ``scipy.stats`` result objects: the point estimates are
    attributes and intervals come from a method, :meth:`ci`, that takes the level.

    Attributes
    ----------
    mechanism : Mechanism
        The design the reports were made under.
    labels : tuple of str
        Category names, in order.
    counts : numpy.ndarray
        Reported counts per category.
    n : int or numpy.ndarray
        Number of reports.
    observed : numpy.ndarray
        Reported shares ``λ̂ = counts / n``.
    unbiased : numpy.ndarray
        Matrix-inversion estimate ``Q⁻¹ λ̂``: unbiased, may lie outside [0, 1].
    proportions : numpy.ndarray
        Consistent estimate: maximum likelihood on the simplex, non-negative and summing to 1;
        equal to ``unbiased`` when that lies in the simplex.
    fitted : numpy.ndarray
        The reported shares the consistent estimate implies, ``λ̃ = Q·proportions``; exactly
        ``observed`` whenever ``unbiased`` lies in the simplex.
    covariance : numpy.ndarray
        Sampling covariance of ``unbiased``, ``Q⁻¹ (diag λ̃ − λ̃λ̃ᵀ) Q⁻ᵀ / n``. It is evaluated at
        ``λ̃`` rather than ``λ̂`` because the plug-in at ``λ̂`` gives a category nobody reported
        (``λ̂ = 0``) a variance of exactly zero beside a negative estimate, as if the truth were
        known; ``λ̃`` is the reported share a population inside the simplex would produce, and it
        equals ``λ̂`` (so nothing changes) whenever the unbiased estimate is a possible population.
    standard_errors : numpy.ndarray
        Square roots of the covariance diagonal.
    interval_methods : tuple of str
        Per category, the name of the interval the default :meth:`ci` gives:
        ``"wilson-floor-mapped"`` where the design is affine in that category's share,
        ``"profile-likelihood"`` elsewhere. :meth:`interval_method_names` names the others.
    """

    def __init__(self, mechanism: Mechanism, counts: np.ndarray) -> None:
        self.mechanism = mechanism
        self.labels = mechanism.labels
        self.counts = counts
        n = counts.sum(axis=-1)
        self.n = int(n) if n.ndim == 0 else n
        self.observed = counts / n[..., None]
        self.unbiased = self.observed @ mechanism.inverse.T
        inside = np.all(self.unbiased >= 0.0, axis=-1)
        self.proportions = self._consistent(inside)
        self.fitted = np.where(inside[..., None], self.observed, self.proportions @ mechanism.matrix.T)
        inv = mechanism.inverse
        spread = _multinomial_covariance(self.fitted)
        self.covariance = inv @ spread @ inv.T / np.asarray(n, dtype=float)[..., None, None]
        self.standard_errors = np.sqrt(np.clip(np.diagonal(self.covariance, axis1=-2, axis2=-1), 0, None))
        self._affine = [mechanism.affine_coefficients(v) for v in range(mechanism.k)]
        self._intervals: dict[tuple[float, bool, str], tuple[np.ndarray, np.ndarray]] = {}
        self.interval_methods = self.interval_method_names()

    def _consistent(self, inside: np.ndarray) -> np.ndarray:
        unbiased = self.unbiased
        result = np.where(inside[..., None], unbiased, 0.0)
        if not np.all(inside):
            outside = ~inside
            start = _project_to_simplex(unbiased[outside])
            result[outside] = simplex_mle(self.mechanism.matrix, self.observed[outside], start)
        return result

    # -- intervals ---------------------------------------------------------------------------------

    @staticmethod
    def _resolve(method: str | None, simultaneous: bool) -> str:
        if method is None:
            return "exact" if simultaneous else "wilson"
        return _check_method(method)

    def _piece_level(self, level: float, simultaneous: bool) -> float:
        # for two categories one interval determines the other: nothing to divide
        k = self.mechanism.k
        return 1.0 - (1.0 - level) / k if simultaneous and k > 2 else level

    def interval_method_names(self, simultaneous: bool = False, method: str | None = None) -> tuple[str, ...]:
        """Per category, the name of the interval ``ci(simultaneous=..., method=...)`` gives.

        ``"wilson-floor-mapped"`` (floored Wilson, mapped through the design),
        ``"profile-likelihood"``, ``"clopper-pearson-mapped"``, ``"clopper-pearson-projected"``
        (the exact interval of a custom matrix) and ``"delta-wald"``; simultaneous intervals over
        more than two categories carry the prefix ``"bonferroni-"``.
        """
        method = self._resolve(method, simultaneous)
        prefix = BONFERRONI if simultaneous and self.mechanism.k > 2 else ""
        names = []
        for coef in self._affine:
            if method == "wald":
                name = DELTA_WALD
            elif method == "exact":
                name = CLOPPER_PEARSON if coef is not None else CLOPPER_PEARSON_PROJECTED
            else:
                name = FLOORED_WILSON if coef is not None else PROFILE_LIKELIHOOD
            # the projected box is Bonferroni over the reported shares already, and simultaneous
            if name == CLOPPER_PEARSON_PROJECTED:
                names.append(name)
            else:
                names.append(prefix + name)
        return tuple(names)

    def ci(
        self, level: float = 0.95, simultaneous: bool = False, method: str | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Confidence intervals ``(low, high)`` for every category's share, inside [0, 1].

        ``method`` is one of :data:`METHODS`:

        * ``"wilson"`` (the default for a single category): the floored Wilson interval of the
          reported share mapped through the design where it is affine in the category's share
          (coverage at least ``1 − 1.4·(1 − level)`` at every share and n, and close to ``level`` on
          average); the profile-likelihood interval over the simplex elsewhere (custom matrices),
          whose coverage is measured in ``benchmarks/estimators.md``.
        * ``"exact"``: Clopper–Pearson mapped through the design, or for custom matrices the range
          of the share over a Bonferroni box of Clopper–Pearson intervals on the reported shares:
          coverage at least ``level`` at every share and n.
        * ``"wald"``: ``unbiased ± z·SE``, with the SE computed after adding half a count to every
          category (the former fallback for custom matrices, kept for comparison).

        ``simultaneous=True`` gives intervals that cover all categories at once with probability at
        least ``level``: by default exact pieces at level ``1 − (1 − level)/k`` (Bonferroni; the
        union bound makes the joint promise hold for every population), undivided for two
        categories, where one interval determines the other. Other methods may be asked for with
        ``simultaneous=True``; they are then Bonferroni over pieces that are not exact, and the
        joint promise is only approximate.
        """
        level = _check_level(level)
        method = self._resolve(method, simultaneous)
        key = (level, bool(simultaneous), method)
        if key not in self._intervals:
            self._intervals[key] = self._compute(level, simultaneous, method)
        low, high = self._intervals[key]
        return low.copy(), high.copy()

    def _compute(self, level: float, simultaneous: bool, method: str) -> tuple[np.ndarray, np.ndarray]:
        piece = self._piece_level(level, simultaneous)
        low = np.empty_like(self.unbiased)
        high = np.empty_like(self.unbiased)
        n = np.asarray(self.n, dtype=float)
        if method == "wald":
            z = _z(piece)
            delta = self._adjusted_standard_errors()
            return (
                np.clip(self.unbiased - z * delta, 0.0, 1.0),
                np.clip(self.unbiased + z * delta, 0.0, 1.0),
            )
        general = []
        for v, coef in enumerate(self._affine):
            if coef is None:
                general.append(v)
                continue
            a, b = coef
            lo, hi = binomial_interval(self.counts[..., v], n, piece, method)
            low[..., v], high[..., v] = _map_affine(lo, hi, a, b)
        if general:
            self._general_intervals(low, high, general, piece, method)
        return low, high

    def _general_intervals(
        self, low: np.ndarray, high: np.ndarray, categories: list[int], level: float, method: str
    ) -> None:
        """Profile-likelihood (or projected exact) intervals, one survey at a time.

        Surveys with the same counts get the same intervals, so each distinct row is solved once.
        """
        k = self.mechanism.k
        q = self.mechanism.matrix
        flat_counts = self.counts.reshape(-1, k)
        flat_props = self.proportions.reshape(-1, k)
        flat_se = self.standard_errors.reshape(-1, k)
        flat_low = low.reshape(-1, k)
        flat_high = high.reshape(-1, k)
        unique, first, inverse = np.unique(flat_counts, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        z = _z(level)
        alpha = FLOOR_FACTOR * (1.0 - level)
        vertex_rows = {v: _vertex_test_rows(q, v) for v in categories} if method != "exact" else {}
        for u, row in enumerate(unique):
            i = first[u]
            total = float(row.sum())
            if method == "exact":
                ends = _projected_intervals(q, row.astype(float), level, categories)
            else:
                drop = z * z / (2.0 * total)
                ends = {
                    v: _profile_interval(q, row / total, flat_props[i], v, drop, z * float(flat_se[i, v]))
                    for v in categories
                }
                for v in categories:
                    low_end, high_end = _shifted_ends(q, self.mechanism.inverse, row, v, drop, ends[v], z)
                    if high_end < 1.0 and _vertex_plausible(vertex_rows[v], row, alpha):
                        high_end = 1.0
                    ends[v] = (low_end, high_end)
            rows = inverse == u
            for v, (lo, hi) in ends.items():
                flat_low[rows, v] = min(max(lo, 0.0), 1.0)
                flat_high[rows, v] = min(max(hi, 0.0), 1.0)

    def cs(self, level: float = 0.95, simultaneous: bool = False, prior: Any = None) -> Any:
        """Live intervals, valid however often they are looked at: :func:`survey.privacy.confidence_sequence`.

        Unlike :meth:`ci`, which promises ``level`` for one look at a planned sample size, these
        hold at every moment of the survey at once, so they may be watched as answers arrive.
        """
        from .sequences import confidence_sequence  # sequences builds on this module

        return confidence_sequence(self.mechanism, self.counts, level, simultaneous, prior)

    def _adjusted_standard_errors(self) -> np.ndarray:
        k = self.mechanism.k
        lam = (self.counts + 0.5) / (np.asarray(self.n, dtype=float)[..., None] + 0.5 * k)
        inv = self.mechanism.inverse
        cov = inv @ _multinomial_covariance(lam) @ inv.T / np.asarray(self.n, dtype=float)[..., None, None]
        return np.sqrt(np.clip(np.diagonal(cov, axis1=-2, axis2=-1), 0, None))

    def to_dict(self, level: float = 0.95, simultaneous: bool = False, method: str | None = None) -> dict[str, Any]:
        """A JSON-ready summary of one survey's estimate (what the results pages and API show)."""
        if self.counts.ndim != 1:
            raise ValueError("to_dict describes one survey; index the stack first")
        low, high = self.ci(level, simultaneous, method)
        names = self.interval_method_names(simultaneous, method)
        eps = self.mechanism.epsilon
        return {
            "n": self.n,
            "epsilon": None if math.isinf(eps) else eps,
            "design": self.mechanism.to_dict(),
            "level": level,
            "simultaneous": simultaneous,
            "method": self._resolve(method, simultaneous),
            "categories": [
                {
                    "label": label,
                    "reported": int(self.counts[v]),
                    "observed_share": float(self.observed[v]),
                    "unbiased": float(self.unbiased[v]),
                    "proportion": float(self.proportions[v]),
                    "standard_error": float(self.standard_errors[v]),
                    "ci_low": float(low[v]),
                    "ci_high": float(high[v]),
                    "interval_method": names[v],
                }
                for v, label in enumerate(self.labels)
            ],
        }

    def __repr__(self) -> str:
        if self.counts.ndim != 1:
            return f"Estimate(<{self.counts.shape[0]} surveys>, mechanism={self.mechanism!r})"
        low, high = self.ci()
        parts = ", ".join(
            f"{label}: {p:.3f} [{lo:.3f}, {hi:.3f}]"
            for label, p, lo, hi in zip(self.labels, self.proportions, low, high, strict=False)
        )
        return f"Estimate(n={self.n}, {parts})"


def _map_affine(low: np.ndarray, high: np.ndarray, a: float, b: float) -> tuple[np.ndarray, np.ndarray]:
    """An interval for the reported share mapped to the true share ``(λ − b)/a``, clipped to [0, 1]."""
    low, high = (np.asarray(low) - b) / a, (np.asarray(high) - b) / a
    if a < 0:
        low, high = high, low
    return np.clip(low, 0.0, 1.0), np.clip(high, 0.0, 1.0)


def _multinomial_covariance(lam: np.ndarray) -> np.ndarray:
    """``diag λ − λλᵀ`` per row of ``lam`` (the covariance of one multinomial draw)."""
    eye = np.eye(lam.shape[-1])
    return lam[..., :, None] * eye - lam[..., :, None] * lam[..., None, :]


def check_counts(mechanism: Mechanism, counts: Any) -> np.ndarray:
    """``counts`` as floats after the checks every estimator from counts makes (a Mechanism, one
    non-negative whole number per category, possibly stacked); a ValueError that says what is wrong."""
    if not isinstance(mechanism, Mechanism):
        raise ValueError("the first argument must be a Mechanism")
    try:
        raw = np.asarray(counts, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("counts must be numbers, one per category") from None
    if raw.ndim == 0 or raw.shape[-1] != mechanism.k:
        got = "a single number" if raw.ndim == 0 else f"{raw.shape[-1]} counts"
        raise ValueError(f"expected {mechanism.k} counts ({', '.join(mechanism.labels)}), got {got}")
    if not np.all(np.isfinite(raw)) or np.any(raw < 0):
        raise ValueError("counts must be non-negative numbers")
    if np.any(raw != np.round(raw)):
        raise ValueError("counts must be whole numbers")
    return raw


def estimate(mechanism: Mechanism, counts: Any) -> Estimate:
    """Debias the reported counts of one randomized question.

    ``counts[r]`` is how many respondents reported category ``r``, in ``mechanism.labels`` order.
    The seed survey's worked example::

        >>> from survey.privacy import CoinFlip
        >>> result = estimate(CoinFlip(0.5, 0.5), [400, 600])
        >>> round(float(result.proportions[0]), 3)
        0.3
        >>> [round(float(x[0]), 4) for x in result.ci()]
        [0.2401, 0.3614]

    Counts may be stacked, shape ``(surveys, k)``, to estimate many surveys at once. Raises
    ``ValueError`` for counts of the wrong length, negative or fractional counts, or no responses.
    A small sample is not an error: it gives wide intervals.
    """
    raw = check_counts(mechanism, counts)
    if np.any(raw.sum(axis=-1) == 0):
        raise ValueError("no responses: there is nothing to estimate until someone has answered")
    return Estimate(mechanism, raw.astype(np.int64))


# -- exact coverage ----------------------------------------------------------------------------------


def _affine_or_raise(mechanism: Mechanism, category: int) -> tuple[float, float]:
    if not 0 <= category < mechanism.k:
        raise ValueError(f"category must be in 0..{mechanism.k - 1}")
    coef = mechanism.affine_coefficients(category)
    if coef is None:
        raise ValueError(
            f"category {category}'s reported share is not affine in its true share, so its count is "
            "not binomial in it and the coverage is no finite binomial sum: simulate it instead"
        )
    return coef


def _reported_bounds(
    mechanism: Mechanism, n: int, category: int, level: float, method: str
) -> tuple[np.ndarray, np.ndarray]:
    """Bounds on the reported share, for every count ``0..n``, whose image is ``ci()``'s interval."""
    _affine_or_raise(mechanism, category)
    x = np.arange(n + 1, dtype=float)
    if method != "wald":
        return binomial_interval(x, n, level, method)
    # delta-wald: unbiased ± z·SE with half a count added to every category; for an affine category
    # the row of Q⁻¹ is (e_v − b·1)/a, so this depends on the category's own count only
    share = (x + 0.5) / (n + 0.5 * mechanism.k)
    half = _z(level) * np.sqrt(share * (1.0 - share) / n)
    return x / n - half, x / n + half


def _check_n(n: int) -> int:
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive whole number, got {n!r}")
    return int(n)


def _coverage_of_bounds(low: np.ndarray, high: np.ndarray, n: int, a: float, b: float, theta: np.ndarray) -> np.ndarray:
    """P(θ in the clipped image of [low[X], high[X]]) for X ~ Binomial(n, aθ + b), for each θ.

    Inside (0, 1) that is ``P(low[X] ≤ λ ≤ high[X])``. At θ = 0 and θ = 1 the clipping counts an
    interval that lies wholly beyond the end (shown as [0, 0] or [1, 1]) as covering it, so only
    one bound matters there.
    """
    lam = np.clip(a * theta + b, 0.0, 1.0)
    lower_only = (theta == 0.0) if a > 0 else (theta == 1.0)  # only low ≤ λ is needed
    upper_only = (theta == 1.0) if a > 0 else (theta == 0.0)  # only high ≥ λ is needed
    if np.all(np.diff(low) >= 0) and np.all(np.diff(high) >= 0):
        # the counts whose interval holds λ are a run: those with low ≤ λ and high ≥ λ
        top = np.where(upper_only, n, np.searchsorted(low, lam, side="right") - 1)
        bottom = np.where(lower_only, 0, np.searchsorted(high, lam, side="left"))
        cover = binom.cdf(top, n, lam) - binom.cdf(bottom - 1, n, lam)
        return np.where(top >= bottom, np.clip(cover, 0.0, 1.0), 0.0)
    x = np.arange(n + 1)
    theta_low, theta_high = _map_affine(low, high, a, b)
    out = np.empty(theta.shape)
    for index in np.ndindex(theta.shape):
        held = (theta_low <= theta[index]) & (theta[index] <= theta_high)
        out[index] = binom.pmf(x[held], n, lam[index]).sum()
    return out


def interval_coverage(
    mechanism: Mechanism,
    n: int,
    theta: Any,
    *,
    category: int = 0,
    level: float = 0.95,
    method: str = "wilson",
) -> np.ndarray:
    """Exact coverage of ``ci(level, method=method)`` for ``category`` at true shares ``theta``.

    For a category whose reported share is ``λ = a·θ + b`` the reported count is Binomial(n, λ)
    and the interval is a function of it, so the coverage is the finite sum
    ``Σ_x Binom(x; n, λ)·1[θ in CI(x)]``: no simulation, no Monte-Carlo error. Raises
    ``ValueError`` for a category without that structure (custom matrices), whose coverage depends
    on the whole population and has to be simulated.

        >>> from survey.privacy import CoinFlip
        >>> float(interval_coverage(CoinFlip(0.5, 0.5), 100, 0.3).round(4))
        0.9481
    """
    n = _check_n(n)
    level = _check_level(level)
    method = _check_method(method)
    a, b = _affine_or_raise(mechanism, category)
    theta = np.asarray(theta, dtype=float)
    if np.any((theta < 0) | (theta > 1)):
        raise ValueError("true shares must lie in [0, 1]")
    low, high = _reported_bounds(mechanism, n, category, level, method)
    return _coverage_of_bounds(low, high, n, a, b, theta)


def minimum_coverage(
    mechanism: Mechanism,
    n: int,
    *,
    category: int = 0,
    level: float = 0.95,
    method: str = "wilson",
) -> tuple[float, float]:
    """The lowest exact coverage of the interval over every true share in [0, 1], and where.

    Returns ``(coverage, theta)``; the coverage is an infimum: it is approached as θ tends to
    ``theta`` from one side, where a bound of some count's interval sits. Between two consecutive
    bounds the set of counts whose interval holds θ is one run ``x_lo..x_hi``, and
    ``P(x_lo ≤ X ≤ x_hi)`` rises then falls in λ (its derivative is ``n`` times the difference of
    two binomial(n − 1) probabilities whose ratio is monotone), so its lowest value on the piece is
    at an end; evaluating every one-sided limit at every bound is therefore exact. What the app can
    say of the interval at ``n`` respondents is "covers at least this".

        >>> from survey.privacy import GeneralizedRR
        >>> coverage, _ = minimum_coverage(GeneralizedRR(2, epsilon=4), 30)
        >>> coverage >= 0.93
        True
    """
    n = _check_n(n)
    level = _check_level(level)
    method = _check_method(method)
    a, b = _affine_or_raise(mechanism, category)
    low, high = _reported_bounds(mechanism, n, category, level, method)
    if not (np.all(np.diff(low) >= 0) and np.all(np.diff(high) >= 0)):
        raise ValueError(
            f"the {method} interval's bounds are not monotone in the count; use interval_coverage on a grid"
        )
    lam_min, lam_max = sorted((b, a + b))
    lam_min, lam_max = max(lam_min, 0.0), min(lam_max, 1.0)
    bounds = np.unique(np.concatenate([low, high]))
    bounds = bounds[(bounds > lam_min) & (bounds < lam_max)]
    candidates = []
    # from below: λ ↑ e holds the counts with low < e and high ≥ e
    below = np.concatenate([bounds, [lam_max]])
    top = np.searchsorted(low, below, side="left") - 1
    bottom = np.searchsorted(high, below, side="left")
    candidates.append((below, top, bottom))
    # from above: λ ↓ e holds the counts with low ≤ e and high > e
    above = np.concatenate([[lam_min], bounds])
    top = np.searchsorted(low, above, side="right") - 1
    bottom = np.searchsorted(high, above, side="right")
    candidates.append((above, top, bottom))
    # and the ends of the range themselves
    ends = np.array([lam_min, lam_max])
    top = np.searchsorted(low, ends, side="right") - 1
    bottom = np.searchsorted(high, ends, side="left")
    candidates.append((ends, top, bottom))
    best_cover, best_lam = math.inf, lam_min
    for lam, top, bottom in candidates:
        cover = np.where(top >= bottom, binom.cdf(top, n, lam) - binom.cdf(bottom - 1, n, lam), 0.0)
        i = int(np.argmin(cover))
        if cover[i] < best_cover:
            best_cover, best_lam = float(cover[i]), float(lam[i])
    return max(best_cover, 0.0), float(np.clip((best_lam - b) / a, 0.0, 1.0))
