"""Debiasing reported counts into population shares, with intervals that tell the truth.

Three numbers per category, each for a reason:

* ``unbiased``: matrix inversion ``Q⁻¹ λ̂``. It can leave [0, 1], but it is unbiased, so it is
  what pools across surveys and what a meta-analysis wants.
* ``proportions``: maximum likelihood on the probability simplex (the consistent estimate). It is
  what a reader expects to see: non-negative, summing to 1, and equal to ``unbiased`` whenever that
  already lies in the simplex.
* ``ci()``: for every category whose reported share is affine in its own true share (all binary
  designs, GRR, m-category forced response), the Wilson interval of the reported share mapped
  through the design; its coverage is exactly Wilson's and it does not spend half its width below
  zero near θ = 0 as the Wald interval does. Other categories (custom matrices) get a delta-method
  Wald interval from the sampling covariance, with a half-count continuity adjustment so that a
  degenerate sample still gets a non-zero width.

The covariance is the sampling form ``Q⁻¹ (diag λ − λλᵀ) Q⁻ᵀ / n``: inference is about the
population the respondents were drawn from, not about the fixed answers of those respondents
(which is the smaller variance of Wang et al. 2017 that multi-freq-ldpy reports).

Every function accepts counts stacked along leading axes (shape ``(..., k)``), so the benchmark
runs this exact code on thousands of simulated surveys at once.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from scipy.stats import norm

from .mechanisms import Mechanism

__all__ = ["Estimate", "estimate", "simplex_mle", "wilson_interval"]

WILSON_MAPPED = "wilson-mapped"
DELTA_WALD = "delta-wald"


def _check_level(level: float) -> float:
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"the confidence level must be between 0 and 1, got {level!r}")
    return level


@functools.lru_cache(maxsize=64)
def _z(level: float) -> float:
    """The two-sided normal quantile; scipy's ppf costs far more than the rest of an interval."""
    return float(norm.ppf(0.5 + _check_level(level) / 2.0))


def wilson_interval(successes: Any, n: Any, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a binomial share (arrays broadcast)."""
    z = _z(_check_level(level))
    n = np.asarray(n, dtype=float)
    share = np.asarray(successes, dtype=float) / n
    z2n = z * z / n
    centre = (share + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * np.sqrt(share * (1.0 - share) / n + z2n / (4.0 * n))
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


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
        begin = np.full(flat.shape, 1.0 / k)
    else:
        begin = np.asarray(start, dtype=float).reshape(flat.shape)
    out = np.empty((flat.shape[0], k))
    for i, row in enumerate(flat):
        out[i] = _mle_one(q, row / row.sum(), begin[i], tol, max_iter)
    return out.reshape((*lam.shape[:-1], k))


def _mle_one(q: np.ndarray, lam: np.ndarray, start: np.ndarray, tol: float, max_iter: int) -> np.ndarray:
    seen = lam > 0
    qs, ls = q[seen], lam[seen]
    k = q.shape[1]

    def loglik(pi: np.ndarray) -> float:
        fitted = qs @ pi
        return -math.inf if np.any(fitted <= 0) else float(ls @ np.log(fitted))

    pi = np.clip(start, 0.0, None)
    pi = pi / pi.sum()
    if not math.isfinite(loglik(pi)):
        pi = np.full(k, 1.0 / k)
    free = pi > 0
    current = loglik(pi)
    for _ in range(max_iter):
        fitted = qs @ pi
        grad = (ls / fitted) @ qs  # at the optimum: 1 on the support, at most 1 off it
        support = np.flatnonzero(free)
        # 1. Newton step on the face of the support, keeping Σπ = 1.
        weights = ls / fitted**2
        hessian = -(qs[:, support].T * weights) @ qs[:, support]
        m = support.size
        system = np.zeros((m + 1, m + 1))
        system[:m, :m] = hessian
        system[:m, m] = 1.0
        system[m, :m] = 1.0
        rhs = np.concatenate([-grad[support], [0.0]])
        direction = np.linalg.lstsq(system, rhs, rcond=None)[0][:m]
        slope = float(grad[support] @ direction)
        if not slope > 0 or not np.all(np.isfinite(direction)):
            direction = grad[support] - grad[support].mean()  # projected gradient
            slope = float(grad[support] @ direction)
        stationary = slope <= tol * tol or np.abs(grad[support] - grad[support].mean()).max() <= tol
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
        if outside.size == 0 or grad[outside].max() <= 1.0 + tol:
            break
        corner = np.zeros(k)
        corner[outside[np.argmax(grad[outside])]] = 1.0
        # derivative of loglik((1 − s)π + s·corner) is positive at s = 0; bisect for its zero
        low, high = 0.0, 1.0
        for _ in range(60):
            mid = (low + high) / 2
            point = (1 - mid) * pi + mid * corner
            if float((ls / (qs @ point)) @ (qs @ (corner - pi))) > 0:
                low = mid
            else:
                high = mid
        pi = (1 - low) * pi + low * corner
        current = loglik(pi)
        free = pi > 0
    return pi


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
        Reported shares ``counts / n``.
    unbiased : numpy.ndarray
        Matrix-inversion estimate ``Q⁻¹ λ̂``: unbiased, may lie outside [0, 1].
    proportions : numpy.ndarray
        Consistent estimate: maximum likelihood on the simplex, non-negative and summing to 1;
        equal to ``unbiased`` when that lies in the simplex.
    covariance : numpy.ndarray
        Sampling covariance of ``unbiased``, ``Q⁻¹ (diag λ̂ − λ̂λ̂ᵀ) Q⁻ᵀ / n``.
    standard_errors : numpy.ndarray
        Square roots of the covariance diagonal.
    interval_methods : tuple of str
        Per category, ``"wilson-mapped"`` or ``"delta-wald"``: which interval :meth:`ci` gives.
    """

    def __init__(self, mechanism: Mechanism, counts: np.ndarray) -> None:
        self.mechanism = mechanism
        self.labels = mechanism.labels
        self.counts = counts
        n = counts.sum(axis=-1)
        self.n = int(n) if n.ndim == 0 else n
        self.observed = counts / n[..., None]
        self.unbiased = self.observed @ mechanism.inverse.T
        self.proportions = self._consistent()
        lam = self.observed
        spread = _multinomial_covariance(lam)
        inv = mechanism.inverse
        self.covariance = inv @ spread @ inv.T / np.asarray(n, dtype=float)[..., None, None]
        self.standard_errors = np.sqrt(np.clip(np.diagonal(self.covariance, axis1=-2, axis2=-1), 0, None))
        self._affine = [mechanism.affine_coefficients(v) for v in range(mechanism.k)]
        self.interval_methods = tuple(WILSON_MAPPED if coef is not None else DELTA_WALD for coef in self._affine)

    def _consistent(self) -> np.ndarray:
        unbiased = self.unbiased
        inside = np.all(unbiased >= 0.0, axis=-1)
        result = np.where(inside[..., None], unbiased, 0.0)
        if not np.all(inside):
            outside = ~inside
            start = _project_to_simplex(unbiased[outside])
            result[outside] = simplex_mle(self.mechanism.matrix, self.observed[outside], start)
        return result

    def ci(self, level: float = 0.95, simultaneous: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Confidence intervals ``(low, high)`` for every category's share, inside [0, 1].

        ``simultaneous=True`` gives Bonferroni intervals that cover all categories at once with
        probability at least ``level`` (for two categories one interval determines the other, so
        nothing is divided).
        """
        level = _check_level(level)
        k = self.mechanism.k
        if simultaneous and k > 2:
            level = 1.0 - (1.0 - level) / k
        z = _z(level)
        low = np.empty_like(self.unbiased)
        high = np.empty_like(self.unbiased)
        n = np.asarray(self.n, dtype=float)
        delta = None
        for v, coef in enumerate(self._affine):
            if coef is not None:
                a, b = coef
                lo, hi = wilson_interval(self.counts[..., v], n, level)
                lo, hi = (lo - b) / a, (hi - b) / a
                if a < 0:
                    lo, hi = hi, lo
            else:
                if delta is None:
                    delta = self._adjusted_standard_errors()
                lo = self.unbiased[..., v] - z * delta[..., v]
                hi = self.unbiased[..., v] + z * delta[..., v]
            low[..., v] = np.clip(lo, 0.0, 1.0)
            high[..., v] = np.clip(hi, 0.0, 1.0)
        return low, high

    def _adjusted_standard_errors(self) -> np.ndarray:
        k = self.mechanism.k
        lam = (self.counts + 0.5) / (np.asarray(self.n, dtype=float)[..., None] + 0.5 * k)
        inv = self.mechanism.inverse
        cov = inv @ _multinomial_covariance(lam) @ inv.T / np.asarray(self.n, dtype=float)[..., None, None]
        return np.sqrt(np.clip(np.diagonal(cov, axis1=-2, axis2=-1), 0, None))

    def to_dict(self, level: float = 0.95, simultaneous: bool = False) -> dict[str, Any]:
        """A JSON-ready summary of one survey's estimate (what the results pages and API show)."""
        if self.counts.ndim != 1:
            raise ValueError("to_dict describes one survey; index the stack first")
        low, high = self.ci(level, simultaneous)
        eps = self.mechanism.epsilon
        return {
            "n": self.n,
            "epsilon": None if math.isinf(eps) else eps,
            "design": self.mechanism.to_dict(),
            "level": level,
            "simultaneous": simultaneous,
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
                    "interval_method": self.interval_methods[v],
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


def _multinomial_covariance(lam: np.ndarray) -> np.ndarray:
    """``diag λ − λλᵀ`` per row of ``lam`` (the covariance of one multinomial draw)."""
    eye = np.eye(lam.shape[-1])
    return lam[..., :, None] * eye - lam[..., :, None] * lam[..., None, :]


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
    if np.any(raw.sum(axis=-1) == 0):
        raise ValueError("no responses: there is nothing to estimate until someone has answered")
    return Estimate(mechanism, raw.astype(np.int64))
