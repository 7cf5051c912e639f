"""Non-compliance models: how many respondents did not follow the randomization, from two arms.

Some respondents answer "no" whatever the procedure tells them ("self-protective no"). With one
randomization probability that is invisible and biases the prevalence down; with two arms that use
different probabilities, the share can be estimated (Lensvelt-Mulders et al. 2005 found it large in
validation studies). Two models, both as in RRreg's ``RRuni(model = "CDM" / "SLD", group = ...)``:

- **Cheating detection** (Clark & Desharnais 1998): honest "yes" carriers ``π``, honest non-carriers
  ``β``, and cheaters ``γ = 1 − π − β`` who say "no" whatever happens. In arm g a non-carrier is
  prompted to say "yes" with probability ``p_g``, so ``P(yes | g) = π + β p_g``.
- **Stochastic lie detector** (Moshagen, Musch & Erdfelder 2012): prevalence ``π`` and the share
  ``t`` of carriers who answer honestly; a non-carrier says "no" with probability ``p_g``, so
  ``P(yes | g) = π t + (1 − π)(1 − p_g)``.

Both are ``P(yes | g) = u + v c_g`` for a point ``(u, v)`` of the triangle ``u, v ≥ 0, u + v ≤ 1``
(CDM: ``u = π``, ``v = β``, ``c_g = p_g``; SLD: ``u = π t``, ``v = 1 − π``, ``c_g = 1 − p_g``), so one
fit serves both: the binomial log-likelihood of the two arms' "yes" counts is concave in ``(u, v)``,
its maximum is RRreg's closed form when that lies in the triangle, and otherwise lies on an edge,
found by a one-dimensional concave search. Intervals are profile-likelihood intervals (the
likelihood ratio against χ²₁, maximizing over the other parameter within the triangle, so they never
leave [0, 1]); standard errors are the delta method's at the maximum, as RRreg's but with ``n``
where RRreg divides by ``n − 1``.

    >>> fit = cheating_detection(yes=[300, 560], n=[1000, 1000], p=[0.2, 0.6])
    >>> {k: round(v, 4) for k, v in fit.estimates.items()}
    {'pi': 0.17, 'beta': 0.65, 'gamma': 0.18}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import optimize, stats

__all__ = ["NonComplianceFit", "cheating_detection", "noncompliance_sample_size", "stochastic_lie_detector"]

_EDGE = 1e-12


def _loglik(u: float, v: float, yes: np.ndarray, n: np.ndarray, c: np.ndarray) -> float:
    lam = np.clip(u + v * c, 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(yes > 0, yes * np.log(lam), 0.0) + np.where(n - yes > 0, (n - yes) * np.log1p(-lam), 0.0)
    total = float(terms.sum())
    return total if math.isfinite(total) else -math.inf


def _best_on_segment(
    point: Callable[[float], tuple[float, float]], lo: float, hi: float, ll: Callable
) -> tuple[float, float]:
    """(s, log-likelihood) maximizing the concave ``ll(point(s))`` over ``[lo, hi]``.

    Every segment here is affine in s, so each arm's rate ``λ_g(s)`` is affine too and the
    log-likelihood's slope, ``Σ_g λ_g' (y_g/λ_g − (n_g − y_g)/(1 − λ_g))``, is decreasing: the maximum
    is an end where the slope does not change sign, else the slope's root, found by Brent's method
    on the slope (a dozen evaluations, where a bounded minimization of the likelihood took about forty;
    the fits and their profile intervals are most of a split ballot's cost on the results page)."""
    if hi - lo <= _EDGE:
        return lo, ll(*point(lo))
    yes, n, c = ll.data  # type: ignore[attr-defined]
    u0, v0 = point(lo)
    u1, v1 = point(hi)
    # two arms: plain floats (numpy's overhead on two-element arrays was most of the search's time)
    arms = []
    for y, m, cg in zip(yes.tolist(), n.tolist(), c.tolist(), strict=True):
        start = u0 + v0 * cg
        rise = ((u1 + v1 * cg) - start) / (hi - lo)
        if rise != 0:
            arms.append((y, m - y, start, rise))

    def slope(s: float) -> float:
        total = 0.0
        for y, no, start, rise in arms:
            lam = start + rise * (s - lo)
            if y > 0:
                total += rise * (y / lam if lam > 0 else math.inf)
            if no > 0:
                total -= rise * (no / (1.0 - lam) if lam < 1 else math.inf)
        return total

    inset = (hi - lo) * 1e-12
    left, right = slope(lo + inset), slope(hi - inset)
    if not left > 0:
        best = lo
    elif not right < 0:
        best = hi
    else:
        best = float(optimize.brentq(slope, lo + inset, hi - inset, xtol=1e-14, rtol=4 * np.finfo(float).eps))
    candidates = [(best, ll(*point(best))), (lo, ll(*point(lo))), (hi, ll(*point(hi)))]
    return max(candidates, key=lambda x: x[1])


class _Loglik:
    """The two arms' binomial log-likelihood at (u, v) (:func:`_loglik`, in plain floats: it is called
    hundreds of times per fit), carrying its data for the segment search."""

    def __init__(self, yes: np.ndarray, n: np.ndarray, c: np.ndarray) -> None:
        self.data = (yes, n, c)
        self._arms = [(y, m - y, cg) for y, m, cg in zip(yes.tolist(), n.tolist(), c.tolist(), strict=True)]

    def __call__(self, u: float, v: float) -> float:
        total = 0.0
        for y, no, cg in self._arms:
            lam = min(max(u + v * cg, 0.0), 1.0)
            if y > 0:
                if lam <= 0:
                    return -math.inf
                total += y * math.log(lam)
            if no > 0:
                if lam >= 1:
                    return -math.inf
                total += no * math.log1p(-lam)
        return total


@dataclass(frozen=True)
class NonComplianceFit:
    """A fitted non-compliance model: estimates, standard errors and profile-likelihood intervals
    of its parameters (named as RRreg names them), with the maximized log-likelihood."""

    model: str
    estimates: dict[str, float]
    standard_errors: dict[str, float]
    intervals: dict[str, tuple[float, float]]
    loglik: float
    n: tuple[int, ...]
    level: float
    #: Whether the maximum lies on the edge of the parameter space (a share at 0): the closed form
    #: left [0, 1] there, and the standard errors are not reported (NaN).
    boundary: bool
    u: float = field(repr=False)
    v: float = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "n": list(self.n),
            "level": self.level,
            "boundary": self.boundary,
            "loglik": self.loglik,
            "parameters": {
                name: {
                    "estimate": value,
                    "standard_error": None if math.isnan(self.standard_errors[name]) else self.standard_errors[name],
                    "ci_low": self.intervals[name][0],
                    "ci_high": self.intervals[name][1],
                }
                for name, value in self.estimates.items()
            },
        }


def _check(yes: Sequence[int], n: Sequence[int], p: Sequence[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y, m, q = (np.asarray(a, dtype=float) for a in (yes, n, p))
    if not (y.shape == m.shape == q.shape == (2,)):
        raise ValueError("two arms: yes, n and p each need two entries")
    if (m <= 0).any() or (y < 0).any() or (y > m).any() or (y != np.round(y)).any() or (m != np.round(m)).any():
        raise ValueError("each arm needs n > 0 respondents and 0 <= yes <= n, whole numbers")
    if ((q < 0) | (q > 1)).any() or abs(q[0] - q[1]) < 1e-9:
        raise ValueError("the arms' probabilities must lie in [0, 1] and differ")
    return y, m, q


def _fit(yes: np.ndarray, n: np.ndarray, c: np.ndarray) -> tuple[float, float, float, bool]:
    """(u, v, log-likelihood, on the boundary) at the maximum over the triangle."""
    ll = _Loglik(yes, n, c)
    rates = yes / n
    v = (rates[1] - rates[0]) / (c[1] - c[0])
    u = rates[0] - v * c[0]
    if u >= -_EDGE and v >= -_EDGE and u + v <= 1 + _EDGE:
        u, v = max(float(u), 0.0), max(float(v), 0.0)
        boundary = u <= _EDGE or v <= _EDGE or u + v >= 1 - _EDGE
        return u, v, ll(u, v), bool(boundary)
    edges = [
        (lambda s: (0.0, s), 0.0, 1.0),  # u = 0
        (lambda s: (s, 0.0), 0.0, 1.0),  # v = 0
        (lambda s: (s, 1.0 - s), 0.0, 1.0),  # u + v = 1
    ]
    best = max(((*_best_on_segment(point, lo, hi, ll), point) for point, lo, hi in edges), key=lambda x: x[1])
    s, value, point = best
    u, v = point(s)
    return float(u), float(v), value, True


def _profile_interval(
    estimate: float,
    line: Callable[[float], tuple[Callable[[float], tuple[float, float]], float, float]],
    loglik: float,
    ll: Callable,
    level: float,
) -> tuple[float, float]:
    """{ψ ∈ [0, 1]: 2(ℓ̂ − max over the line of ψ of ℓ) ≤ χ²₁(level)}; ``line(ψ)`` gives the segment
    of the triangle where the parameter equals ψ."""
    cutoff = float(stats.chi2.ppf(level, 1))

    def deviance(psi: float) -> float:
        point, lo, hi = line(psi)
        if hi < lo - _EDGE:
            return math.inf
        _, value = _best_on_segment(point, lo, max(lo, hi), ll)
        return 2 * (loglik - value) - cutoff

    ends = []
    for edge in (0.0, 1.0):
        if abs(edge - estimate) <= _EDGE or deviance(edge) <= 0:
            ends.append(edge)
        else:
            a, b = sorted((estimate, edge))
            ends.append(float(optimize.brentq(deviance, a, b, xtol=1e-10)))
    return ends[0], ends[1]


def _delta_se(gradient_u: float, gradient_v: float, rates: np.ndarray, n: np.ndarray, c: np.ndarray) -> float:
    """The delta method's standard error of ``a·u + b·v`` through the arms' rates."""
    # (u, v) = M⁻¹ (λ1, λ2) with M = [[1, c1], [1, c2]]
    inverse = np.linalg.inv(np.array([[1.0, c[0]], [1.0, c[1]]]))
    weights = np.array([gradient_u, gradient_v]) @ inverse
    variance = float(np.sum(weights**2 * rates * (1 - rates) / n))
    return math.sqrt(variance)


def cheating_detection(
    yes: Sequence[int], n: Sequence[int], p: Sequence[float], level: float = 0.95
) -> NonComplianceFit:
    """Clark & Desharnais's cheating detection model from two arms' "yes" counts; ``p`` is each
    arm's probability that a non-carrier is prompted to say "yes"."""
    y, m, c = _check(yes, n, p)
    u, v, loglik, boundary = _fit(y, m, c)
    ll = _Loglik(y, m, c)
    lines = {
        "pi": lambda psi: (lambda s: (psi, s), 0.0, 1.0 - psi),
        "beta": lambda psi: (lambda s: (s, psi), 0.0, 1.0 - psi),
        "gamma": lambda psi: (lambda s: (s, 1.0 - psi - s), 0.0, 1.0 - psi),
    }
    estimates = {"pi": u, "beta": v, "gamma": 1.0 - u - v}
    rates = y / m
    gradients = {"pi": (1.0, 0.0), "beta": (0.0, 1.0), "gamma": (-1.0, -1.0)}
    errors = {k: math.nan if boundary else _delta_se(*g, rates, m, c) for k, g in gradients.items()}
    intervals = {k: _profile_interval(estimates[k], lines[k], loglik, ll, level) for k in estimates}
    return NonComplianceFit(
        "CDM", estimates, errors, intervals, loglik, tuple(int(x) for x in m), level, boundary, u, v
    )


def stochastic_lie_detector(
    yes: Sequence[int], n: Sequence[int], p: Sequence[float], level: float = 0.95
) -> NonComplianceFit:
    """Moshagen, Musch & Erdfelder's stochastic lie detector from two arms' "yes" counts; ``p`` is
    each arm's probability that a non-carrier says "no"."""
    y, m, q = _check(yes, n, p)
    c = 1.0 - q
    u, v, loglik, boundary = _fit(y, m, c)
    ll = _Loglik(y, m, c)
    prevalence = 1.0 - v
    honest = u / prevalence if prevalence > _EDGE else math.nan
    lines = {
        "pi": lambda psi: (lambda s: (s, 1.0 - psi), 0.0, psi),
        "t": lambda psi: (lambda s: (psi * (1.0 - s), s), 0.0, 1.0),
    }
    estimates = {"pi": prevalence, "t": honest}
    rates = y / m
    errors = {"pi": math.nan, "t": math.nan}
    if not boundary:
        errors["pi"] = _delta_se(0.0, -1.0, rates, m, c)
        # t = u / (1 − v): gradient (1/(1 − v), u/(1 − v)²)
        errors["t"] = _delta_se(1.0 / prevalence, u / prevalence**2, rates, m, c)
    intervals = {
        "pi": _profile_interval(prevalence, lines["pi"], loglik, ll, level),
        "t": _profile_interval(honest, lines["t"], loglik, ll, level) if prevalence > _EDGE else (0.0, 1.0),
    }
    return NonComplianceFit(
        "SLD", estimates, errors, intervals, loglik, tuple(int(x) for x in m), level, boundary, u, v
    )


def noncompliance_sample_size(
    model: str,
    p: Sequence[float],
    truth: dict[str, float],
    margin: float,
    parameter: str = "pi",
    level: float = 0.95,
    shares: Sequence[float] | None = None,
) -> int:
    """Respondents (split evenly between the two arms, or by ``shares``) for ``parameter``'s interval
    to have half-width ``margin`` at the organizer's guess ``truth`` (CDM: ``pi``, ``beta``; SLD:
    ``pi``, ``t``), from the delta-method standard error (the profile interval's half-width at these
    sizes: within 10% in tests/test_noncompliance.py)."""
    if model not in ("CDM", "SLD"):
        raise ValueError(f"model must be CDM or SLD, got {model!r}")
    if not 0 < margin < 1:
        raise ValueError(f"the margin must be between 0 and 1, got {margin!r}")
    q = np.asarray(p, dtype=float)
    if model == "CDM":
        u, v, c = truth["pi"], truth["beta"], q
        gradients = {"pi": (1.0, 0.0), "beta": (0.0, 1.0), "gamma": (-1.0, -1.0)}
    else:
        prevalence, honest = truth["pi"], truth["t"]
        u, v, c = prevalence * honest, 1.0 - prevalence, 1.0 - q
        gradients = {"pi": (0.0, -1.0), "t": (1.0 / prevalence, u / prevalence**2)}
    if parameter not in gradients:
        raise ValueError(f"{model} has no parameter {parameter!r}; it has {', '.join(gradients)}")
    rates = np.clip(u + v * c, 1e-12, 1 - 1e-12)
    z = float(stats.norm.ppf(0.5 + level / 2))
    if shares is None:
        # the standard error with n respondents in each arm is se_1/√n; the margin needs z·se_1/√n ≤ margin
        per_arm = _delta_se(*gradients[parameter], rates, np.ones(2), c)
        return 2 * math.ceil((z * per_arm / margin) ** 2)
    split = np.asarray(shares, dtype=float)
    if split.shape != (2,) or (split <= 0).any():
        raise ValueError("shares: two positive numbers, one per arm")
    split = split / split.sum()
    # with N respondents in all, arm g has N·s_g: the variance is se_1(n = s)² / N
    return math.ceil((z * _delta_se(*gradients[parameter], rates, split, c) / margin) ** 2)
