"""The share of answers in each bin of a number's range, with an interval per bin.

The organizer cuts a number's range ``[low, high]`` at edges ``e_1 < … < e_{B−1}`` into bins
``[low, e_1), [e_1, e_2), …, [e_{B−1}, high]`` and asks what share of respondents answered in each.

**Asked directly** the answers are the numbers, so a bin's count is a binomial count and its interval
Wilson's (:func:`direct_bin_shares`); the shares sum to 1 and lie in [0, 1] by construction.

**Randomized** (:mod:`survey.privacy.numeric`) the reports are codes whose law given the true value
``t`` is known (:func:`survey.privacy.number_planning.code_probabilities`), so the codes' law is a
mixture ``P(code) = ∫ P(code | t) dF(t)`` over the unknown distribution ``F`` of the true numbers,
and a bin's share is ``F``'s mass on it. :func:`randomized_bin_shares` estimates it by maximum
likelihood on the simplex of distributions over a grid of support points in each bin (the
nonparametric MLE of ``F``), so the shares are consistent by construction (each in [0, 1], summing
to 1). A bin's interval is the set of shares whose *profile* likelihood (the best fit of every
distribution giving the bin that share) is within ``χ²₁(level)/2`` of the maximum: where the reports
do not tell two bins apart (a mechanism that reports only the sign, as Duchi's, carries nothing but
the mean), every share consistent with them stays in the interval, which is then wide, not wrong.
Coverage over a battery of distributions is measured in ``benchmarks/number_bins.md``.

Both are convex problems, solved by the barrier method (:func:`_barrier`): the maximum, then each
interval end directly as the least (greatest) share of the bin among the distributions whose
likelihood is within ``χ²₁(level)/2`` of it, all ends at once, stopped when the method's duality
gap is below :data:`END_TOLERANCE`. Each end is then *certified*, whatever the solver did: the
log-likelihood is concave, so every plausible distribution lies on the plausible side of its tangent
plane at the fitted one, and the least share over the simplex so cut (a linear program solved
exactly, :func:`_least_on_cut`) is at most the least plausible share. The maximum's fitted value is
at most the true one, so the target it sets is at most the true target. So an interval holds the
exact profile-likelihood interval at any n, wider by about the tolerance (measured: by less than
it). An EM run for a fixed number of steps has no such guarantee: the one this replaced stopped, at
a million reports, 1.25 units of log-likelihood below the maximum (the interval's drop is 1.92).

The codes are pooled into :data:`CODE_GROUPS` runs of consecutive codes before fitting (a
post-processing of the reports, so the likelihood stays exact for what it reads; the mechanisms'
densities are flat over far wider spans than a run), and each bin holds support points at most
:data:`SUPPORT_SPACING` of the range apart, its two ends included, so a distribution piled against an
edge (on either side) is in the model.

    >>> r = direct_bin_shares([0, 3, 7, 10], [10, 20, 30, 40], low=0, high=10, edges=[5])
    >>> [round(float(s), 2) for s in r.shares], r.n
    ([0.3, 0.7], 100)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy import stats

from .estimation import wilson_interval
from .number_planning import code_probabilities
from .numeric import GRID_STEPS, NumberMechanism

__all__ = [
    "CODE_GROUPS",
    "END_TOLERANCE",
    "MAX_BINS",
    "SUPPORT_SPACING",
    "BinShares",
    "bin_labels",
    "check_edges",
    "direct_bin_shares",
    "pooled_counts",
    "randomized_bin_shares",
]

#: The most bins a question may have.
MAX_BINS = 20
#: Runs of consecutive codes the fit reads (the 2,001 codes pooled into this many).
CODE_GROUPS = 100
#: Support points in a bin are at most this share of the range apart (and each bin has its two ends).
SUPPORT_SPACING = 1 / 32


@dataclass(frozen=True)
class BinShares:
    """The estimated share of each bin, with its interval (per bin, at ``level``)."""

    edges: tuple[float, ...]
    low: float
    high: float
    n: int
    shares: tuple[float, ...]
    ci_low: tuple[float, ...]
    ci_high: tuple[float, ...]
    level: float
    #: "wilson" (asked directly) or "profile-likelihood" (randomized).
    method: str

    @property
    def labels(self) -> list[str]:
        return bin_labels(self.low, self.high, self.edges)

    def to_dict(self) -> dict[str, Any]:
        ends = (self.low, *self.edges, self.high)
        return {
            "n": self.n,
            "level": self.level,
            "interval_method": self.method,
            "bins": [
                {
                    "label": label,
                    "from": ends[i],
                    "to": ends[i + 1],
                    "share": self.shares[i],
                    "ci_low": self.ci_low[i],
                    "ci_high": self.ci_high[i],
                }
                for i, label in enumerate(self.labels)
            ],
        }


def _number_text(x: float) -> str:
    return f"{x:g}"


def bin_labels(low: float, high: float, edges: Sequence[float]) -> list[str]:
    """``"0 to under 5"``, …, ``"20 to 30"``: what each bin holds, in words a reader checks."""
    ends = [low, *edges, high]
    last = len(ends) - 2
    return [
        f"{_number_text(ends[i])} to {'' if i == last else 'under '}{_number_text(ends[i + 1])}"
        for i in range(len(ends) - 1)
    ]


def check_edges(edges: Sequence[Any], low: float, high: float) -> tuple[float, ...]:
    """Edges as floats, strictly increasing and strictly inside ``(low, high)``, at most
    :data:`MAX_BINS` − 1 of them; a ValueError saying what is wrong otherwise."""
    out = []
    for e in edges:
        if isinstance(e, bool) or not isinstance(e, int | float) or not math.isfinite(float(e)):
            raise ValueError(f"a bin edge must be a number, got {e!r:.40}")
        out.append(float(e))
    if len(out) > MAX_BINS - 1:
        raise ValueError(f"at most {MAX_BINS} bins ({MAX_BINS - 1} edges), got {len(out)} edges")
    if any(not low < e < high for e in out):
        raise ValueError(f"every bin edge must lie strictly inside the range {low:g} to {high:g}")
    if any(b <= a for a, b in itertools.pairwise(out)):
        raise ValueError("bin edges must increase")
    return tuple(out)


def direct_bin_shares(
    values: Sequence[float] | np.ndarray,
    counts: Sequence[float] | np.ndarray,
    low: float,
    high: float,
    edges: Sequence[float],
    level: float = 0.95,
) -> BinShares:
    """Each bin's share of numbers answered directly (``values`` with their ``counts``), with
    Wilson's interval. A value on an edge belongs to the bin above it."""
    cut = check_edges(edges, low, high)
    x = np.asarray(values, dtype=float)
    c = np.asarray(counts, dtype=float)
    which = np.searchsorted(np.asarray(cut), x, side="right")
    per_bin = np.bincount(which, weights=c, minlength=len(cut) + 1)
    n = round(float(c.sum()))
    if n < 1:
        raise ValueError("no answers: no shares")
    lo, hi = wilson_interval(per_bin, n, level)
    return BinShares(
        cut, low, high, n, tuple(per_bin / n), tuple(np.atleast_1d(lo)), tuple(np.atleast_1d(hi)), level, "wilson"
    )


# -- randomized numbers -----------------------------------------------------------------------------


def _support(edges: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Support points in ``t ∈ [−1, 1]`` (edges given in t) and the bin of each: every bin's two ends
    and points at most :data:`SUPPORT_SPACING` × 2 apart between them."""
    ends = [-1.0, *edges, 1.0]
    points, owner = [], []
    for b in range(len(ends) - 1):
        a, z = ends[b], ends[b + 1]
        m = max(2, math.ceil((z - a) / (2 * SUPPORT_SPACING)) + 1)
        points.extend(np.linspace(a, z, m))
        owner.extend([b] * m)
    return np.array(points), np.array(owner)


@lru_cache(maxsize=64)
def _code_matrix(mechanism: NumberMechanism, ts: tuple[float, ...]) -> np.ndarray:
    """``P(code run g | t)`` for every support point: rows are the :data:`CODE_GROUPS` runs."""
    runs = np.arange(GRID_STEPS + 1) * CODE_GROUPS // (GRID_STEPS + 1)
    columns = [np.bincount(runs, weights=code_probabilities(mechanism, t), minlength=CODE_GROUPS) for t in ts]
    return np.array(columns).T


#: The barrier method's duality gap at which an interval end's fit stops (a share): the certified
#: end then lies outside the exact one by about this much (less, in tests/test_number_bins.py).
END_TOLERANCE = 1e-4
#: How far below the likelihood's maximum the fitted maximum may be (in log-likelihood units).
MAXIMUM_TOLERANCE = 1e-4
#: The ends' first barrier weight, over their number of constraints (their first duality gap's
#: inverse: they start from the maximum, already well inside).
_FIRST_WEIGHT = 10.0
#: The barrier's weight grows by this factor between centerings.
_GROWTH = 10.0
#: A centering stops when half the squared Newton decrement is below this. Loose, since the ends are
#: certified whatever the fit (:func:`_least_on_cut`): tuned on 12 surveys (three mechanisms, 300 to
#: a million reports) against fits a thousand times tighter, the ends came out wider by at most
#: 1e-4, in 60% of the time a tight centering (1e-6) took.
_CENTERED = 0.1


def _log_likelihood(matrix: np.ndarray, counts: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The log-likelihood of each row of weights ``w`` (columns × points)."""
    return np.log(np.maximum(w @ matrix.T, 1e-300)) @ counts


def _barrier(
    matrix: np.ndarray,
    counts: np.ndarray,
    w: np.ndarray,
    cost: np.ndarray | None,
    target: float,
    tolerance: float,
    weight: float,
) -> tuple[np.ndarray, float]:
    """Convex problems over mixture weights on the simplex, solved together (one per row of ``w``,
    each a strictly positive start summing to 1) by the barrier method (Boyd & Vandenberghe 2004,
    §11.3): with ``cost`` None, the weights of greatest log-likelihood; else, per row, the least
    ``cost · w`` among the weights whose log-likelihood is at least ``target`` (the start must be
    such weights, strictly).

    Each centering minimizes ``weight·objective − Σ log w − log(loglik − target)`` by Newton's
    method with the equality ``Σ w = 1`` (the Hessian scaled by the weights, so the tiny weights of
    points the data rule out do not spoil the solve), then the weight grows by :data:`_GROWTH`. At
    a centered point the objective is within ``constraints/weight`` of its optimum (the duality
    gap, §11.2.2): the loop stops when that is below ``tolerance`` and returns it with the weights.
    Every iterate is feasible (the line search keeps the weights positive and the log-likelihood
    above ``target``), so each returned objective is attained by a distribution the data allow; how
    close it is to the optimum a caller certifies itself (:func:`_least_on_cut`), so a centering
    cut short by its step limit costs width, never coverage."""
    m = w.shape[1]
    likelihood = cost is None
    constraints = m + (0 if likelihood else 1)
    diagonal = np.arange(m)

    def merit(v: np.ndarray) -> np.ndarray:
        ll = _log_likelihood(matrix, counts, v)
        if likelihood:
            return -weight * ll - np.log(v).sum(axis=1)
        slack = ll - target
        value = weight * (cost * v).sum(axis=1) - np.log(v).sum(axis=1) - np.log(np.maximum(slack, 1e-300))
        return np.where(slack > 0, value, np.inf)

    last = np.ones(w.shape[0])  # each row's last accepted step: the next starts from twice it
    while True:
        for _ in range(100):
            z = w @ matrix.T
            gradient_ll = (counts / z) @ matrix
            curvature = (matrix.T[None, :, :] * (counts / z**2)[:, None, :]) @ matrix  # −∇² loglik
            if likelihood:
                g = -weight * gradient_ll - 1 / w
                h = weight * curvature
            else:
                slack = (np.log(z) @ counts - target)[:, None]
                g = weight * cost - 1 / w - gradient_ll / slack
                outer = gradient_ll[:, :, None] * gradient_ll[:, None, :]
                h = (curvature + outer / slack[:, :, None]) / slack[:, :, None]
            scaled = h * w[:, :, None] * w[:, None, :]
            scaled[:, diagonal, diagonal] += 1.0
            solved = np.linalg.solve(scaled, np.stack([g * w, w], axis=2))
            u, v = solved[..., 0] * w, solved[..., 1] * w
            step = -u + (u.sum(axis=1) / v.sum(axis=1))[:, None] * v  # Σ step = 0
            decrement = -(g * step).sum(axis=1)
            if np.all(decrement / 2 <= _CENTERED):
                break
            falling = step < 0
            room = np.where(falling, -w / np.where(falling, step, -1.0), np.inf).min(axis=1)
            alpha = np.minimum(np.minimum(1.0, 0.99 * room), 2 * last)
            before = merit(w)
            for _ in range(60):  # backtracking (Armijo), per row
                trial = w + alpha[:, None] * step
                after = merit(trial)
                ok = after <= before - 0.25 * alpha * decrement + 1e-13 * np.abs(before)
                if ok.all():
                    break
                alpha = np.where(ok, alpha, alpha / 2)
            w = np.where(ok[:, None], trial, w)
            last = np.where(ok, alpha, last)
        if constraints / weight <= tolerance:
            return w, constraints / weight
        weight *= _GROWTH


def _least_on_cut(cost: np.ndarray, normal: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """Per row, the least ``cost · w`` over the simplex cut by ``normal · w ≥ bound`` (a linear
    program solved exactly: its optimum is at a vertex of the simplex inside the cut or where an edge
    of the simplex crosses the cut's plane; ``inf`` where the cut misses the simplex)."""
    inside = normal >= bound[:, None]
    best = np.where(inside, cost, np.inf).min(axis=1)
    a_i, a_j = normal[:, :, None], normal[:, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (bound[:, None, None] - a_j) / (a_i - a_j)  # the share on point i where edge (i, j) crosses
        crossing = (a_i != a_j) & (t >= 0) & (t <= 1)
        value = cost[:, None, :] + np.where(crossing, t, 0.0) * (cost[:, :, None] - cost[:, None, :])
    return np.minimum(best, np.where(crossing, value, np.inf).min(axis=(1, 2)))


def randomized_bin_shares(
    mechanism: NumberMechanism,
    counts: Mapping[int, float],
    edges: Sequence[float],
    level: float = 0.95,
) -> BinShares:
    """Each bin's share of the true numbers behind a bounded mechanism's report codes (``{code:
    count}``), with its profile-likelihood interval (module docstring)."""
    cut = check_edges(edges, mechanism.low, mechanism.high)
    if not math.isfinite(mechanism.bound):
        raise ValueError("bins need a mechanism with bounded reports (not Laplace's)")
    n = round(float(sum(counts.values())))
    if n < 1:
        raise ValueError("no reports: no shares")
    ts, owner = _support(tuple(float(t) for t in mechanism.normalize(cut)))
    matrix = _code_matrix(mechanism, tuple(ts.tolist()))
    observed = pooled_counts(counts)
    # a code no true number can send (a forged report) has likelihood 0 under every distribution: a
    # constant factor, left out
    seen = (observed > 0) & (matrix.sum(axis=1) > 0)
    if not seen.any():
        raise ValueError("no report any true number could have sent: no shares")
    a, y = matrix[seen], observed[seen]
    m = a.shape[1]
    # the maximum: its fitted value is a lower bound of the true maximum, so the target below is at
    # most the true one (the plausible set can only grow: the intervals err wide, never narrow)
    w_hat, _ = _barrier(a, y, np.full((1, m), 1.0 / m), None, 0.0, MAXIMUM_TOLERANCE, m / y.sum())
    best = float(_log_likelihood(a, y, w_hat)[0])
    target = best - float(stats.chi2.ppf(level, 1)) / 2
    bins = len(cut) + 1
    shares = np.bincount(owner, weights=w_hat[0], minlength=bins)

    # both ends of every bin at once, each the least (or, negated, greatest) share of the bin among
    # the weights whose likelihood reaches the target, all started from the maximum
    inside = np.array([owner == b for b in range(bins)], dtype=float)
    cost = np.concatenate([inside, -inside])
    w, _ = _barrier(a, y, np.repeat(w_hat, 2 * bins, axis=0), cost, target, END_TOLERANCE, _FIRST_WEIGHT * (m + 1.0))
    # the certificate: the log-likelihood is concave, so every plausible distribution lies on the
    # plausible side of its tangent plane at the fit, and the least share over that larger set (a
    # linear program) is at most the least plausible share, however well the fit converged
    z = w @ a.T
    tangent = (y / z) @ a
    reach = target - np.log(z) @ y + (tangent * w).sum(axis=1)
    least = _least_on_cut(cost, tangent, reach)
    least = np.where(np.isfinite(least), least, np.where(cost.sum(axis=1) > 0, 0.0, -1.0))  # never, but safe
    low_end = np.clip(np.minimum(least[:bins], shares), 0.0, 1.0)
    high_end = np.clip(np.maximum(-least[bins:], shares), 0.0, 1.0)
    return BinShares(
        cut,
        mechanism.low,
        mechanism.high,
        n,
        tuple(float(s) for s in shares),
        tuple(float(v) for v in low_end),
        tuple(float(v) for v in high_end),
        level,
        "profile-likelihood",
    )


def pooled_counts(counts: Mapping[int, float]) -> np.ndarray:
    """The tallies of codes pooled into the :data:`CODE_GROUPS` runs the fit reads (codes off the
    grid ignored): all a randomized number's bins depend on, besides the mechanism, edges and level."""
    observed = np.zeros(CODE_GROUPS)
    for code, c in counts.items():
        if 0 <= int(code) <= GRID_STEPS and c > 0:
            observed[int(code) * CODE_GROUPS // (GRID_STEPS + 1)] += c
    return observed
