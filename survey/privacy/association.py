"""How two randomized answers go together: their joint distribution, conditional shares, odds ratio, φ.

Each respondent randomizes the two answers independently, so the pair of reports is a randomized
report of the pair of true answers through the Kronecker product of the two channel matrices,
``Q_ab = Q_a ⊗ Q_b``: ``P(report (i, j) | truth (s, t)) = Q_a[i, s]·Q_b[j, t]``. Flattening a
table of counts row-major (``joint_counts[i, j]`` at index ``i·k_b + j``) matches that index
order, so the joint distribution is :func:`survey.privacy.estimate` on the product mechanism:
unbiased, simplex maximum likelihood, and an interval per cell, with nothing new.

For two yes/no questions (two categories each; the first label counts as "yes") the measures a
researcher asks for next are functions of the four cells π = (yes|yes, yes|no, no|yes, no|no):
P(A | B), P(A | not B) (swap the questions for B given A), the odds ratio ``π₁₁π₀₀/(π₁₀π₀₁)`` and the
correlation φ (the Pearson correlation of the two true answers, what ``RRreg::RRcor`` estimates).

Intervals: profile likelihood over the four-cell simplex, through the product matrix. The set
``R = {π : ℓ(π) ≥ ℓ(π̂) − χ²₁(level)/2}`` is convex (ℓ is concave), and the profile-likelihood
interval of any function ``g`` is exactly ``g(R)``, ``[min g, max g]`` over ``R``. Why this
construction: it needs no standard error, so it does not break where the delta method does (a cell
estimated at 0 makes the log odds ratio's standard error infinite, and the unbiased cells, which
the peers' delta method starts from, can be negative); it is invariant to the scale (the interval
for the odds ratio is that of its logarithm, exponentiated); it follows the likelihood's asymmetry
near the edges; and it says "unbounded" honestly: when a table with a zero cell is inside ``R``
the odds ratio's interval reaches 0 or ∞, and when a table in which one answer is never (or
always) given is inside ``R`` the odds ratio and that conditional share are not identified and the
interval is the whole range. The benchmark (``benchmarks/analysis.md``) measures its coverage.
A parametric bootstrap would also be honest but costs a thousand fits per page view.

How ``g(R)`` is found. Exact ends come from the faces of the simplex: ``R`` meets the face where
some cells are 0 exactly when the largest likelihood on that face (a concave maximization) reaches
the threshold; then the odds ratio reaches 0 or ∞, a conditional share 0 or 1, φ −1 or 1 (on the
faces where those values hold), and a measure that a face leaves undefined (the odds ratio when
one answer may be given by nobody) gets its whole range. The other ends are extremes of ``g`` on
the boundary of ``R``, traced by rays from a point well inside ``R``, in coordinates where the
likelihood's curvature is the same in every direction (so that a thin ``R`` is sampled as well as
a round one); each ray's end is found by Newton's method on the concave log-likelihood along it,
a first pass of 200 rays picks each extreme's neighbourhood, and a trust-region Newton search over
the ray's direction (finite differences on a stencil of rays) converges on it. The same is done
inside every face that ``R`` reaches, where an extreme on an edge of ``R`` lies. The tests check
the ends against independent profile-likelihood computations to 1e-6.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.stats import chi2

from .estimation import Estimate, _check_level, _offset_mle, estimate
from .mechanisms import Mechanism

__all__ = ["Association", "Measure", "association", "product_mechanism"]

PROFILE_LIKELIHOOD = "profile-likelihood"

# the four cells of a 2×2 table, flattened row-major: A's answer first
_YY, _YN, _NY, _NN = 0, 1, 2, 3

#: Directions of the first pass over the boundary of the likelihood region (on the sphere for the
#: whole simplex, on the circle for a face), and the trust-region search that refines each
#: extreme: finite differences with step ``_STENCIL_STEP`` (in the chart around a direction), a
#: trust radius from ``_TRUST_START`` down to ``_TRUST_END`` (a step that short is convergence).
_FIRST_PASS_SPHERE, _FIRST_PASS_CIRCLE = 200, 90
_STENCIL_STEP, _TRUST_START, _TRUST_END, _TRUST_ROUNDS = 1e-3, 0.15, 1e-6, 40
#: A proposal rejected with a trust radius below this ends the search.
_TRUST_GIVE_UP = 1e-4
#: A model step that promises less than this (relative to the value) is convergence.
_TRUST_GAIN = 1e-12
#: Stencil offsets: the centre first, then ±x, ±y and the four diagonals (or ±x on a face).
_STENCILS = {
    1: np.array([[0.0], [1.0], [-1.0]]),
    2: np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1], [1, 1], [1, -1], [-1, 1], [-1, -1]], dtype=float),
}


def product_mechanism(mechanism_a: Mechanism, mechanism_b: Mechanism) -> Mechanism:
    """The mechanism of the pair of reports: ``np.kron(Q_a, Q_b)``, labels ``"a|b"``.

    Category ``i·k_b + j`` is "reported (or truly answered) option ``i`` of A and option ``j``
    of B", the row-major flattening of a ``k_a × k_b`` table. Its ε is the sum of the two
    (composition), as it must be.

        >>> from survey.privacy import CoinFlip, Warner
        >>> pair = product_mechanism(CoinFlip(0.5, 0.5), Warner(0.8))
        >>> pair.labels
        ('yes|yes', 'yes|no', 'no|yes', 'no|no')
        >>> round(pair.epsilon, 4) == round(CoinFlip(0.5, 0.5).epsilon + Warner(0.8).epsilon, 4)
        True
    """
    if not isinstance(mechanism_a, Mechanism) or not isinstance(mechanism_b, Mechanism):
        raise ValueError("both arguments must be Mechanisms")
    labels = [f"{a}|{b}" for a in mechanism_a.labels for b in mechanism_b.labels]
    if len(set(labels)) != len(labels):  # labels that contain "|" themselves
        labels = [f"{i}|{j}" for i in range(mechanism_a.k) for j in range(mechanism_b.k)]
    return Mechanism(np.kron(mechanism_a.matrix, mechanism_b.matrix), labels=labels)


class Measure:
    """One measure of association with its interval.

    Attributes
    ----------
    name : str
    estimate : float
        At the simplex maximum-likelihood table; ``nan`` where the measure is undefined there (a
        conditional share given an answer nobody is estimated to give).
    low, high : float
        The profile-likelihood interval at ``level``; ``0`` and ``math.inf`` are genuine ends of an
        odds ratio's interval, never a failure.
    level : float
    method : str
        ``"profile-likelihood"``.
    note : str
        Empty, or a plain sentence on an unbounded or undefined end.
    """

    def __init__(self, name: str, estimate: float, low: float, high: float, level: float, note: str = "") -> None:
        self.name = name
        self.estimate = estimate
        self.low, self.high = low, high
        self.level = level
        self.method = PROFILE_LIKELIHOOD
        self.note = note

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: non-finite numbers (an infinite end, an undefined estimate) become None."""

        def finite(x: float) -> float | None:
            return x if math.isfinite(x) else None

        return {
            "name": self.name,
            "estimate": finite(self.estimate),
            "ci_low": finite(self.low),
            "ci_high": finite(self.high),
            "high_unbounded": math.isinf(self.high),
            "level": self.level,
            "method": self.method,
            "note": self.note,
        }

    def __repr__(self) -> str:
        return f"Measure({self.name}: {self.estimate:.4g} [{self.low:.4g}, {self.high:.4g}])"


# -- the four-cell functions, vectorized over rows of tables -------------------------------------------


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


def _p_a_given_b(p: np.ndarray) -> np.ndarray:
    return _ratio(p[..., _YY], p[..., _YY] + p[..., _NY])


def _p_a_given_not_b(p: np.ndarray) -> np.ndarray:
    return _ratio(p[..., _YN], p[..., _YN] + p[..., _NN])


def _log_odds_ratio(p: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.log(p[..., _YY]) + np.log(p[..., _NN]) - np.log(p[..., _YN]) - np.log(p[..., _NY])


def _phi(p: np.ndarray) -> np.ndarray:
    a = p[..., _YY] + p[..., _YN]
    b = p[..., _YY] + p[..., _NY]
    spread = a * (1 - a) * b * (1 - b)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = (p[..., _YY] * p[..., _NN] - p[..., _YN] * p[..., _NY]) / np.sqrt(spread)
    # undefined where one answer is constant; |φ| ≤ 1 always, beyond it is rounding
    return np.where(spread > 0, np.clip(value, -1.0, 1.0), np.nan)


# name: (function, its range, cells whose zero gives the low end, the high end, undefined)
_MEASURES: dict[str, tuple[Callable[[np.ndarray], np.ndarray], tuple[float, float], list, list, list]] = {
    "p_a_given_b": (_p_a_given_b, (0.0, 1.0), [(_YY,)], [(_NY,)], [(_YY, _NY)]),
    "p_a_given_not_b": (_p_a_given_not_b, (0.0, 1.0), [(_YN,)], [(_NN,)], [(_YN, _NN)]),
    "log_odds_ratio": (
        _log_odds_ratio,
        (-math.inf, math.inf),
        [(_YY,), (_NN,)],
        [(_YN,), (_NY,)],
        [(_YY, _YN), (_YY, _NY), (_YN, _NN), (_NY, _NN)],
    ),
    "phi": (_phi, (-1.0, 1.0), [(_YY, _NN)], [(_YN, _NY)], []),
}

_NOTES = {
    "p_a_given_b": "B may be answered by nobody: P(A | B) is not determined by the data",
    "p_a_given_not_b": "B may be answered by everybody: P(A | not B) is not determined by the data",
    "log_odds_ratio": "one answer may be given by nobody or everybody: the odds ratio is not determined by the data",
}


# -- the likelihood region and its extremes ------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _tangent_basis(k: int) -> np.ndarray:
    """An orthonormal basis (k × (k − 1)) of the directions that keep a table's sum at 1."""
    helmert = np.eye(k)[:, 1:] - np.eye(k)[:, :-1]
    basis, _ = np.linalg.qr(helmert)
    basis.setflags(write=False)
    return basis


@functools.lru_cache(maxsize=8)
def _first_pass(dimensions: int) -> np.ndarray:
    """Nearly uniform unit vectors: a Fibonacci lattice on the sphere, even angles on the circle."""
    if dimensions == 1:
        out = np.array([[-1.0], [1.0]])
    elif dimensions == 2:
        angle = np.linspace(0.0, 2.0 * math.pi, _FIRST_PASS_CIRCLE, endpoint=False)
        out = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    else:
        i = np.arange(_FIRST_PASS_SPHERE) + 0.5
        z = 1.0 - 2.0 * i / _FIRST_PASS_SPHERE
        angle = math.pi * (3.0 - math.sqrt(5.0)) * i
        r = np.sqrt(1.0 - z * z)
        out = np.stack([r * np.cos(angle), r * np.sin(angle), z], axis=1)
    out.setflags(write=False)
    return out


class _Slice:
    """``R`` restricted to one face of the simplex: the tables whose cells outside ``support`` are 0.

    The whole simplex is the face with every cell in the support. ``R`` is convex, so is each
    slice, and every point of its boundary is the end of exactly one ray from a point inside it.
    Log-likelihoods are kept relative to the maximum, ``Σ w·log(λ/λ̂)``, so that the threshold
    ``−drop`` is not lost in the rounding of ``ℓ`` itself however many respondents there are.
    """

    def __init__(self, region: _Region, support: np.ndarray, best: np.ndarray) -> None:
        self.q, self.w, self.reference = region.q[:, support], region.w, region.fitted
        self.support, self.k, self.drop = support, region.k, region.drop
        # the log-likelihood along a ray is known to about 1e-16 absolute; ask for that much
        self.tolerance = max(1e-13 * self.drop, 2e-15)
        size = support.size
        self.dimensions = size - 1
        peak = self.loglik(best)
        uniform = np.full(size, 1.0 / size)
        goal = peak - (peak + self.drop) / 4.0  # a point well inside: a quarter of the way down
        if self.loglik(uniform) >= goal:
            self.centre = uniform
        else:
            low, high = 0.0, 1.0
            for _ in range(24):  # any point well inside will do
                mid = (low + high) / 2.0
                if self.loglik((1 - mid) * best + mid * uniform) >= goal:
                    low = mid
                else:
                    high = mid
            self.centre = (1 - low) * best + low * uniform
        if self.dimensions == 0:
            return
        basis = _tangent_basis(size)
        fitted = self.q @ self.centre
        curvature = basis.T @ (self.q.T * (self.w / fitted**2)) @ self.q @ basis
        curvature += np.eye(self.dimensions) * 1e-12 * max(float(np.trace(curvature)), 1e-300)
        # whitening: a unit vector s is the direction basis·L⁻ᵀ·s, where the curvature is L·Lᵀ, so
        # that R looks round from its centre however thin it is
        self.whiten = basis @ np.linalg.inv(np.linalg.cholesky(curvature)).T

    def loglik(self, rho: np.ndarray) -> float:
        """``ℓ(π) − ℓ(π̂)`` per respondent."""
        fitted = self.q @ rho
        return -math.inf if np.any(fitted <= 0) else float(self.w @ np.log(fitted / self.reference))

    def full(self, rho: np.ndarray) -> np.ndarray:
        out = np.zeros((*rho.shape[:-1], self.k))
        out[..., self.support] = rho
        return out

    def boundary(self, units: np.ndarray, guess: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Where the ray from the centre in each (whitened) unit direction leaves the slice.

        Returns the points (in all cells) and their distances along the rays. Along a ray the
        log-likelihood is concave, so past the simplex's face or the point where it falls to the
        threshold there is no return: Newton's method from the far end of the ray (or from
        ``guess``, the distance along a neighbouring ray) approaches the crossing from outside,
        monotonically once outside, inside a bisection bracket.
        """
        directions = units @ self.whiten.T
        with np.errstate(divide="ignore", invalid="ignore"):
            exits = np.where(directions < 0, -self.centre / directions, np.inf)
        t_max = exits.min(axis=1)
        base = (self.q @ self.centre) / self.reference
        slope = (directions @ self.q.T) / self.reference
        low = np.zeros(t_max.shape)
        high = t_max.copy()
        t = t_max.copy() if guess is None else np.minimum(np.abs(guess), t_max)
        rows = np.arange(t.size)
        for _ in range(100):
            fitted = base + t[rows, None] * slope[rows]
            with np.errstate(divide="ignore", invalid="ignore"):
                gap = np.log(fitted) @ self.w + self.drop
                derivative = (slope[rows] / fitted) @ self.w
            gap = np.where(np.isnan(gap), -np.inf, gap)
            inside = gap >= 0
            low[rows] = np.where(inside, t[rows], low[rows])
            high[rows] = np.where(inside, high[rows], t[rows])
            done = (inside & (t[rows] == t_max[rows])) | (np.abs(gap) <= self.tolerance)
            done |= high[rows] - low[rows] <= 1e-15 * t_max[rows]
            keep = ~done
            rows, gap, derivative = rows[keep], gap[keep], derivative[keep]
            if rows.size == 0:
                break
            with np.errstate(divide="ignore", invalid="ignore"):
                newton = t[rows] - gap / derivative
            ok = np.isfinite(newton) & (newton > low[rows]) & (newton < high[rows])
            t[rows] = np.where(ok, newton, (low[rows] + high[rows]) / 2.0)
        points = self.full(np.clip(self.centre + t[:, None] * directions, 0.0, None))
        # a ray that ends on the simplex's face reports a negative distance: its point belongs to
        # that face's slice too (see _trust_region)
        return points, np.where(t >= t_max, -t, t)

    def extremes(self, functions: list[Callable[[np.ndarray], np.ndarray]]) -> np.ndarray:
        """``(min g, max g)`` on the slice's boundary for each function (``len(functions) × 2``).

        A first pass of rays in every direction picks each extreme's starting direction; a
        trust-region Newton search over the direction (finite differences on a 3 × 3 stencil of
        rays, or 3 on a face) then converges quadratically where the boundary is smooth. Where
        an extreme sits on an edge of the slice (a kink) the search stops short of it, and the
        slice of that face finds it instead (the caller searches every face ``R`` reaches).
        """
        count = len(functions)
        out = np.empty((count, 2))
        if self.dimensions == 0:
            point = self.full(self.centre[None, :])
            for f, g in enumerate(functions):
                value = float(g(point)[0])
                out[f] = (value, value) if not math.isnan(value) else (math.inf, -math.inf)
            return out
        units = _first_pass(self.dimensions)
        points, reach = self.boundary(units)
        which = np.repeat(np.arange(count), 2)  # search 2f minimizes g_f, 2f + 1 maximizes it
        sign = np.tile([-1.0, 1.0], count)
        best_unit = np.empty((2 * count, self.dimensions))
        best = np.empty(2 * count)
        best_reach = np.empty(2 * count)
        for f, g in enumerate(functions):
            values = g(points)
            for j in (2 * f, 2 * f + 1):
                signed = np.where(np.isnan(values), -np.inf, sign[j] * values)
                i = int(np.argmax(signed))
                best_unit[j], best[j], best_reach[j] = units[i], signed[i], reach[i]
        if self.dimensions > 1:
            _trust_region(self, functions, which, sign, best_unit, best, best_reach)
        out[:, 0] = -best[0::2]
        out[:, 1] = best[1::2]
        return out


def _trust_region(
    piece: _Slice,
    functions: list[Callable[[np.ndarray], np.ndarray]],
    which: np.ndarray,
    sign: np.ndarray,
    unit: np.ndarray,
    best: np.ndarray,
    reach: np.ndarray,
) -> None:
    """Maximize ``sign·g(boundary(u))`` over unit directions ``u``, for every search at once, in place.

    Coordinates are a chart around the current direction (``u + δ·E``, normalized, with ``E`` an
    orthonormal basis of the directions perpendicular to ``u``); each round evaluates a stencil of
    rays around the proposed direction, takes the proposal if it is no worse, and from the
    stencil's finite-difference gradient and Hessian proposes a Newton step (a steepest-ascent step
    where the model is not concave), no longer than the trust radius. A rejected proposal quarters
    the radius; a stencil point better than the best so far is moved to.
    """
    dims = unit.shape[1] - 1
    stencil = _STENCILS[dims]
    h = _STENCIL_STEP
    radius = np.where(np.isfinite(best), _TRUST_START, 0.0)
    proposal, proposal_reach = unit.copy(), reach.copy()
    gradient = np.zeros((unit.shape[0], dims))
    hessian = np.zeros((unit.shape[0], dims, dims))
    model = np.zeros(unit.shape[0], dtype=bool)
    for _ in range(_TRUST_ROUNDS):
        live = np.flatnonzero(radius > _TRUST_END)
        if live.size == 0:
            break
        trials = proposal[live, None, :] + h * np.einsum("pd,ldk->lpk", stencil, _perpendicular_basis(proposal[live]))
        trials /= np.linalg.norm(trials, axis=2, keepdims=True)
        points, reached = piece.boundary(trials.reshape(-1, dims + 1), np.repeat(proposal_reach[live], len(stencil)))
        points = points.reshape(live.size, len(stencil), -1)
        reached = reached.reshape(live.size, len(stencil))
        values = np.full((live.size, len(stencil)), -np.inf)
        for f, g in enumerate(functions):
            rows = which[live] == f
            if rows.any():
                values[rows] = g(points[rows]) * sign[live][rows, None]
        values = np.where(np.isnan(values), -np.inf, values)
        slack = 1e-13 * np.maximum(np.abs(best[live]), 1.0)  # best is finite: see the end of the loop
        accept = values[:, 0] >= best[live] - slack
        finite = np.all(np.isfinite(values), axis=1)
        # accepted proposals become the best, with a model from their stencil if it is finite
        taken = live[accept]
        unit[taken], best[taken], reach[taken] = proposal[taken], values[accept, 0], reached[accept, 0]
        model[taken] = finite[accept]
        fitted = accept & finite
        gradient[live[fitted]], hessian[live[fitted]] = _finite_differences(values[fitted], h, dims)
        radius[live[accept & ~finite]] /= 4.0
        # rejected proposals shrink the radius; a better stencil point is moved to, without a model
        radius[live[~accept]] /= 4.0
        # a rejected step this short is a kink (left to the face's slice) or the rounding of a
        # smooth extreme the model has found to within 1e-4 (a value within about 1e-8): done
        radius[live[~accept & (radius[live] < _TRUST_GIVE_UP)]] = 0.0
        pick = np.argmax(values, axis=1)
        peak = values[np.arange(live.size), pick]
        jump = ~accept & (peak > best[live] + slack)
        moved = live[jump]
        unit[moved], best[moved] = trials[jump, pick[jump]], peak[jump]
        reach[moved] = reached[jump, pick[jump]]
        model[moved] = False
        # an extreme on the simplex's face (a ray that ends there) is the face's slice's to find:
        # there the boundary has a kink, which the quadratic model cannot converge on
        radius[taken[reach[taken] < 0]] = 0.0
        # so is one whose stencil straddles the kink (some of its rays end on the face)
        radius[live[accept & np.any(reached < 0, axis=1)]] = 0.0
        # an infinite extreme (the odds ratio on a face) is final
        radius[~np.isfinite(best)] = 0.0
        # next proposals: a model step from the best where there is a model, else its stencil
        bare = live[~model[live]]
        proposal[bare], proposal_reach[bare] = unit[bare], reach[bare]
        modelled = live[model[live]]
        if modelled.size == 0:
            continue
        step = _model_steps(gradient[modelled], hessian[modelled], radius[modelled])
        length = np.linalg.norm(step, axis=1)
        gain = np.einsum("ld,ld->l", gradient[modelled], step) + 0.5 * np.einsum(
            "ld,lde,le->l", step, hessian[modelled], step
        )
        done = (length <= _TRUST_END) | (gain <= _TRUST_GAIN * np.maximum(np.abs(best[modelled]), 1.0))
        radius[modelled[done]] = 0.0  # converged: a step this short or this little worth is not taken
        grow = np.isin(modelled, taken) & ~done
        radius[modelled[grow]] = np.minimum(np.maximum(radius[modelled[grow]], 2.0 * length[grow]), 4 * _TRUST_START)
        moved = unit[modelled] + np.einsum("ld,ldk->lk", step, _perpendicular_basis(unit[modelled]))
        proposal[modelled] = moved / np.linalg.norm(moved, axis=1, keepdims=True)
        proposal_reach[modelled] = reach[modelled]


def _finite_differences(values: np.ndarray, h: float, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """Gradients and Hessians at the stencils' centres (rows of ``values`` in :data:`_STENCILS` order)."""
    f0 = values[:, 0]
    if dims == 1:
        return (
            ((values[:, 1] - values[:, 2]) / (2 * h))[:, None],
            ((values[:, 1] - 2 * f0 + values[:, 2]) / h**2)[:, None, None],
        )
    gradient = np.stack([values[:, 1] - values[:, 2], values[:, 3] - values[:, 4]], axis=1) / (2 * h)
    hxx = (values[:, 1] - 2 * f0 + values[:, 2]) / h**2
    hyy = (values[:, 3] - 2 * f0 + values[:, 4]) / h**2
    hxy = (values[:, 5] - values[:, 6] - values[:, 7] + values[:, 8]) / (4 * h**2)
    return gradient, np.stack([np.stack([hxx, hxy], axis=1), np.stack([hxy, hyy], axis=1)], axis=1)


def _model_steps(gradient: np.ndarray, hessian: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """Newton's step on each quadratic model that is concave, steepest ascent otherwise; at most ``radius``."""
    norm = np.linalg.norm(gradient, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ascent = np.where(norm[:, None] > 0, gradient / norm[:, None] * radius[:, None], 0.0)
        if gradient.shape[1] == 1:
            curve = hessian[:, 0, 0]
            concave = curve < 0
            newton = -gradient / curve[:, None]
        else:
            hxx, hxy, hyy = hessian[:, 0, 0], hessian[:, 0, 1], hessian[:, 1, 1]
            det = hxx * hyy - hxy * hxy
            concave = (hxx < 0) & (det > 0)
            newton = (
                -np.stack(
                    [hyy * gradient[:, 0] - hxy * gradient[:, 1], hxx * gradient[:, 1] - hxy * gradient[:, 0]], axis=1
                )
                / det[:, None]
            )
    step = np.where((concave & np.all(np.isfinite(newton), axis=1))[:, None], newton, ascent)
    length = np.linalg.norm(step, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(length > radius, radius / length, 1.0)
    return step * scale[:, None]


def _perpendicular_basis(units: np.ndarray) -> np.ndarray:
    """For each unit vector (2 or 3 dimensions), an orthonormal basis of the directions perpendicular to it."""
    if units.shape[1] == 2:
        return np.stack([-units[:, 1], units[:, 0]], axis=1)[:, None, :]
    helper = np.eye(3)[np.argmin(np.abs(units), axis=1)]
    e1 = _cross(units, helper)
    e1 /= np.linalg.norm(e1, axis=1, keepdims=True)
    return np.stack([e1, _cross(units, e1)], axis=1)


def _cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.stack(
        [
            u[:, 1] * v[:, 2] - u[:, 2] * v[:, 1],
            u[:, 2] * v[:, 0] - u[:, 0] * v[:, 2],
            u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0],
        ],
        axis=1,
    )


class _Region:
    """``R = {π in the simplex : ℓ(π) ≥ ℓ(π̂) − drop}`` for reported shares through ``q`` (2×2 tables)."""

    def __init__(self, q: np.ndarray, shares: np.ndarray, pi_hat: np.ndarray, drop: float) -> None:
        seen = shares > 0
        self.q, self.w = q[seen], shares[seen]
        self.k = q.shape[1]
        self.pi_hat = pi_hat
        self.fitted = self.q @ pi_hat
        self.drop = drop
        self._faces: dict[tuple[int, ...], tuple[float, np.ndarray]] = {}
        self._reaches: dict[tuple[int, ...], bool] = {}

    def face(self, zero: tuple[int, ...]) -> tuple[float, np.ndarray]:
        """The largest ``ℓ − ℓ(π̂)`` on the face where the cells ``zero`` are 0, and where."""
        zero = tuple(sorted(zero))
        if zero not in self._faces:
            keep = np.setdiff1d(np.arange(self.k), zero)
            if keep.size == 1:
                point = np.ones(1)
                fitted = self.q[:, keep[0]]
            else:
                start = self.pi_hat[keep]
                start = start / start.sum() if start.sum() > 0 else np.full(keep.size, 1.0 / keep.size)
                point, _ = _offset_mle(self.q[:, keep], np.zeros(self.q.shape[0]), self.w, start)
                fitted = self.q[:, keep] @ point
            value = -math.inf if np.any(fitted <= 0) else float(self.w @ np.log(fitted / self.fitted))
            self._faces[zero] = (value, point)
        return self._faces[zero]

    def face_reaches(self, zero: tuple[int, ...]) -> bool:
        """Whether ``R`` meets the face where the cells ``zero`` are 0 (a concave maximization).

        A face lies inside the face of each of its zero cells, so it is tried only if ``R`` reaches
        all of those; and a face far from ``R`` is ruled out by a bound before any maximization.
        """
        zero = tuple(sorted(zero))
        if zero not in self._reaches:
            if len(zero) > 1 and not all(self.face_reaches((i,)) for i in zero):
                reached = False
            elif self._face_bound(zero) < -self.drop * (1.0 + 1e-9):
                reached = False
            else:
                reached = self.face(zero)[0] >= -self.drop * (1.0 + 1e-9)
            self._reaches[zero] = reached
        return self._reaches[zero]

    def _face_bound(self, zero: tuple[int, ...]) -> float:
        """An upper bound on ``ℓ − ℓ(π̂)`` over the face, from the tangent of the logarithm.

        ``log λ ≤ log λ₀ + λ/λ₀ − 1`` for any ``λ₀ > 0`` makes the log-likelihood at most a linear
        function of the table, whose largest value on the face is at one of its corners. With
        ``λ₀`` from a few EM steps on the face, the bound is close wherever the face is not, and
        rules most faces out at the cost of a few vector operations.
        """
        keep = np.setdiff1d(np.arange(self.k), zero)
        design = self.q[:, keep]
        rho = self.pi_hat[keep] + 1e-3
        rho /= rho.sum()
        for _ in range(3):
            base = design @ rho
            if np.any(base <= 0):  # a report this face cannot produce: no bound, solve it
                return math.inf
            rho = rho * ((self.w / base) @ design)
            rho /= rho.sum()
        base = design @ rho
        if np.any(base <= 0):
            return math.inf
        return float(self.w @ (np.log(base / self.fitted) - 1.0) + np.max((self.w / base) @ design))

    def extremes(self, functions: list[Callable[[np.ndarray], np.ndarray]]) -> np.ndarray:
        """``(min g, max g)`` over ``R`` for each function: on its boundary inside the simplex and on
        every face of the simplex it reaches (a smaller face only if ``R`` reaches the face around it).
        """
        out = _Slice(self, np.arange(self.k), self.pi_hat).extremes(functions)
        queue = [(i,) for i in range(self.k)]
        seen: set[tuple[int, ...]] = set()
        while queue:
            zero = queue.pop()
            if zero in seen or len(zero) >= self.k:
                continue
            seen.add(zero)
            if not self.face_reaches(zero):
                continue
            keep = np.setdiff1d(np.arange(self.k), zero)
            found = _Slice(self, keep, self.face(zero)[1]).extremes(functions)
            out[:, 0] = np.minimum(out[:, 0], found[:, 0])
            out[:, 1] = np.maximum(out[:, 1], found[:, 1])
            queue.extend(tuple(sorted((*zero, i))) for i in keep)
        return out


def _profile_measures(region: _Region, names: list[str], level: float) -> dict[str, Measure]:
    pi_hat = region.pi_hat
    extremes = region.extremes([_MEASURES[name][0] for name in names])
    out = {}
    for name, (low, high) in zip(names, extremes, strict=True):
        g, (bottom, top), low_faces, high_faces, undefined = _MEASURES[name]
        point = float(g(pi_hat))
        note = ""
        low, high = float(low), float(high)
        if any(region.face_reaches(face) for face in undefined):
            low, high, note = bottom, top, _NOTES[name]
        else:
            if any(region.face_reaches(face) for face in low_faces):
                low = bottom
            if any(region.face_reaches(face) for face in high_faces):
                high = top
            if not math.isnan(point):  # the estimate lies in R, whatever the rays found
                low, high = min(low, point), max(high, point)
            if not low <= high:  # pragma: no cover - no ray found a table where it is defined
                low, high, note = bottom, top, _NOTES.get(name, "")
        out[name] = Measure(name, point, max(low, bottom), min(high, top), level, note)
    return out


# -- the result --------------------------------------------------------------------------------------


def _chi_square_p_value(table: np.ndarray) -> float | None:
    table = table[table.sum(axis=1) > 0]
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[0] < 2 or table.shape[1] < 2:
        return None
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / table.sum()
    statistic = float(((table - expected) ** 2 / expected).sum())
    return float(chi2.sf(statistic, (table.shape[0] - 1) * (table.shape[1] - 1)))


def _cramers_v(table: np.ndarray) -> float:
    rows, columns = table.sum(axis=1), table.sum(axis=0)
    expected = np.outer(rows, columns)
    keep = expected > 0
    statistic = float(((table - expected)[keep] ** 2 / expected[keep]).sum())
    smaller = min(int((rows > 0).sum()), int((columns > 0).sum())) - 1
    return math.sqrt(min(statistic / smaller, 1.0)) if smaller > 0 else math.nan


class Association:
    """The joint distribution of two randomized answers and, for two yes/no questions, how they relate.

    Built by :func:`association`.

    Attributes
    ----------
    mechanism_a, mechanism_b : Mechanism
        The two questions' designs.
    mechanism : Mechanism
        The product design ``Q_a ⊗ Q_b`` of the pair (:func:`product_mechanism`).
    counts : numpy.ndarray
        The ``k_a × k_b`` table of reported pairs.
    n : int
        Respondents who answered both.
    joint : Estimate
        :func:`survey.privacy.estimate` on the product mechanism and the flattened counts: every
        cell's unbiased share, simplex MLE and interval (profile likelihood: the product's cells are
        not affine), in row-major order.
    table, unbiased_table : numpy.ndarray
        ``joint.proportions`` and ``joint.unbiased`` as ``k_a × k_b`` tables.
    independence_p_value : float or None
        Pearson's chi-square test of independence on the *reported* table. The true answers are
        independent exactly when the reported ones are (``Q_a ⊗ Q_b`` maps product distributions
        to product distributions, and its inverse does too), so this is a valid test of the true
        answers' independence, at the randomization's cost in power.
    cramers_v : float
        Cramér's V of the estimated table (0: independent, 1: one answer determines the other);
        a point estimate, without interval.
    level : float
    p_a_given_b, p_a_given_not_b, odds_ratio, phi : Measure or None
        For two yes/no questions (two categories each, the first label being "yes"), each with its
        profile-likelihood interval at ``level``; None otherwise. ``phi`` is the correlation of the
        two true answers.
    """

    _BINARY = ("p_a_given_b", "p_a_given_not_b", "log_odds_ratio", "phi")

    def __init__(self, mechanism_a: Mechanism, mechanism_b: Mechanism, counts: np.ndarray, level: float) -> None:
        self.mechanism_a, self.mechanism_b = mechanism_a, mechanism_b
        self.mechanism = product_mechanism(mechanism_a, mechanism_b)
        self.counts = counts
        self.joint: Estimate = estimate(self.mechanism, counts.reshape(-1))
        self.n = int(self.joint.n)
        shape = (mechanism_a.k, mechanism_b.k)
        self.table = self.joint.proportions.reshape(shape)
        self.unbiased_table = self.joint.unbiased.reshape(shape)
        self.level = level
        self.independence_p_value = _chi_square_p_value(counts.astype(float))
        self.cramers_v = _cramers_v(self.table)
        self.binary = shape == (2, 2)
        self._measures: dict[float, dict[str, Measure]] = {}

    def measures(self, level: float | None = None) -> dict[str, Measure] | None:
        """Every measure of a 2×2 association at ``level`` (default: the association's level).

        Keys ``"p_a_given_b"``, ``"p_a_given_not_b"``, ``"odds_ratio"`` and ``"phi"``; None unless
        both questions have two categories. Computed once per level, all measures together (they
        share the likelihood region). For P(B | A), swap the questions.
        """
        if not self.binary:
            return None
        level = self.level if level is None else _check_level(level)
        if level not in self._measures:
            drop = float(chi2.ppf(level, 1)) / (2.0 * self.n)  # per respondent
            region = _Region(self.mechanism.matrix, self.joint.observed, self.joint.proportions, drop)
            found = _profile_measures(region, list(self._BINARY), level)
            log_or = found.pop("log_odds_ratio")
            if not log_or.note and math.isinf(log_or.high):
                log_or.note = "a table with an empty cell fits the data: the odds ratio has no upper bound"
            elif not log_or.note and math.isinf(log_or.low):
                log_or.note = "a table with an empty cell fits the data: the odds ratio's lower bound is 0"
            with np.errstate(over="ignore"):
                found["odds_ratio"] = Measure(
                    "odds_ratio",
                    math.exp(log_or.estimate) if not math.isnan(log_or.estimate) else math.nan,
                    math.exp(log_or.low),
                    math.exp(log_or.high),
                    level,
                    log_or.note,
                )
            self._measures[level] = found
        return self._measures[level]

    def _measure(self, name: str) -> Measure | None:
        found = self.measures()
        return None if found is None else found[name]

    @property
    def p_a_given_b(self) -> Measure | None:
        """P(A = yes | B = yes)."""
        return self._measure("p_a_given_b")

    @property
    def p_a_given_not_b(self) -> Measure | None:
        """P(A = yes | B = no)."""
        return self._measure("p_a_given_not_b")

    @property
    def odds_ratio(self) -> Measure | None:
        """The odds ratio π₁₁π₀₀/(π₁₀π₀₁): 1 when independent; its interval may reach 0 or ∞."""
        return self._measure("odds_ratio")

    @property
    def phi(self) -> Measure | None:
        """The correlation of the two true yes/no answers (the φ coefficient)."""
        return self._measure("phi")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary: the joint table with intervals, the test, and the 2×2 measures."""
        low, high = self.joint.ci(self.level)
        shape = self.table.shape
        cells = [
            {
                "a": self.mechanism_a.labels[i],
                "b": self.mechanism_b.labels[j],
                "reported": int(self.counts[i, j]),
                "unbiased": float(self.unbiased_table[i, j]),
                "proportion": float(self.table[i, j]),
                "ci_low": float(low[i * shape[1] + j]),
                "ci_high": float(high[i * shape[1] + j]),
            }
            for i in range(shape[0])
            for j in range(shape[1])
        ]
        found = self.measures()
        return {
            "n": self.n,
            "level": self.level,
            "cells": cells,
            "independence_p_value": self.independence_p_value,
            "cramers_v": None if math.isnan(self.cramers_v) else self.cramers_v,
            "measures": None if found is None else {name: m.to_dict() for name, m in found.items()},
        }

    def __repr__(self) -> str:
        rows = "; ".join(
            f"{self.mechanism.labels[i]}: {p:.3f}" for i, p in enumerate(self.joint.proportions.reshape(-1))
        )
        return f"Association(n={self.n}, {rows})"


def association(mechanism_a: Mechanism, mechanism_b: Mechanism, joint_counts: Any, level: float = 0.95) -> Association:
    """Estimate how two randomized answers go together, from the table of reported pairs.

    ``joint_counts[i, j]`` is the number of respondents who reported option ``i`` to question A
    (in ``mechanism_a.labels`` order) and option ``j`` to question B; respondents who skipped one
    of the two are not in it. Two yes/no questions, 1,000 respondents of the seed design each::

        >>> from survey.privacy import CoinFlip
        >>> seed = CoinFlip(0.5, 0.5)
        >>> result = association(seed, seed, [[300, 200], [250, 250]])
        >>> result.table.round(3).tolist()       # rows: A yes, no; columns: B yes, no
        [[0.4, 0.1], [0.2, 0.3]]
        >>> m = result.p_a_given_b
        >>> round(m.estimate, 3), round(m.low, 3), round(m.high, 3)
        (0.667, 0.547, 0.787)
        >>> m = result.odds_ratio
        >>> round(m.estimate, 2), round(m.low, 2), round(m.high, 2)
        (6.0, 1.91, 33.19)
        >>> m = result.phi
        >>> round(m.estimate, 3), round(m.low, 3), round(m.high, 3)
        (0.408, 0.157, 0.658)

    Raises ``ValueError`` for a table of the wrong shape, negative or fractional counts, or no
    respondents (as :func:`survey.privacy.estimate` does).
    """
    if not isinstance(mechanism_a, Mechanism) or not isinstance(mechanism_b, Mechanism):
        raise ValueError("the first two arguments must be Mechanisms")
    level = _check_level(level)
    try:
        counts = np.asarray(joint_counts, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("joint_counts must be a table of numbers") from None
    if counts.shape != (mechanism_a.k, mechanism_b.k):
        raise ValueError(
            f"joint_counts must be a {mechanism_a.k} × {mechanism_b.k} table (A's options by B's), "
            f"got shape {counts.shape}"
        )
    if not np.all(np.isfinite(counts)) or np.any(counts < 0) or np.any(counts != np.round(counts)):
        raise ValueError("counts must be non-negative whole numbers")
    if counts.sum() == 0:
        raise ValueError("no responses: there is nothing to estimate until someone has answered both")
    return Association(mechanism_a, mechanism_b, counts.astype(np.int64), level)
