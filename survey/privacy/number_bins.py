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
nonparametric MLE of ``F``, by EM accelerated as SQUAREM does),
so the shares are consistent by construction (each in [0, 1], summing to 1). A bin's interval is the
set of shares whose *profile* likelihood (the best fit of every distribution giving the bin that
share) is within ``χ²₁(level)/2`` of the maximum: where the reports do not tell two bins apart (a
mechanism that reports only the sign, as Duchi's, carries nothing but the mean), every share
consistent with them stays in the interval, which is then wide, not wrong. Coverage over a battery
of distributions is measured in ``benchmarks/number_bins.md``.

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
    "MAX_BINS",
    "SUPPORT_SPACING",
    "BinShares",
    "bin_labels",
    "check_edges",
    "direct_bin_shares",
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


def _constrained_em(
    matrix: np.ndarray,
    counts: np.ndarray,
    inside: np.ndarray,
    theta: np.ndarray,
    start: np.ndarray,
    iterations: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The mixture weights of greatest likelihood with the mass on the ``inside`` points (points ×
    columns) fixed at ``theta`` (one per column), from ``start``; returns them and their
    log-likelihoods.

    Each EM step splits the responsibilities into the bin's and the rest's and scales each part to
    its fixed total (the exact maximum of the complete-data likelihood under the constraint). Plain
    EM crawls on this ill-posed problem (thousands of steps), so every two steps are extrapolated
    as SQUAREM does (Varadhan & Roland 2008, scheme S3), keeping the extrapolation only where it
    raises the likelihood: the likelihood never falls."""
    tiny = 1e-300

    def loglik(w: np.ndarray) -> np.ndarray:
        return counts @ np.log(np.maximum(matrix @ w, tiny))

    def step(w: np.ndarray) -> np.ndarray:
        r = w * (matrix.T @ (counts[:, None] / np.maximum(matrix @ w, tiny)))
        r_in = np.where(inside, r, 0.0)
        r_out = r - r_in
        return r_in * (theta / np.maximum(r_in.sum(axis=0), tiny)) + r_out * (
            (1 - theta) / np.maximum(r_out.sum(axis=0), tiny)
        )

    def project(w: np.ndarray) -> np.ndarray:
        w = np.maximum(w, 0.0)
        w_in = np.where(inside, w, 0.0)
        w_out = w - w_in
        return w_in * (theta / np.maximum(w_in.sum(axis=0), tiny)) + w_out * (
            (1 - theta) / np.maximum(w_out.sum(axis=0), tiny)
        )

    w = step(start)
    value = loglik(w)
    for _ in range(iterations):
        w1 = step(w)
        w2 = step(w1)
        r = w1 - w
        v = w2 - w1 - r
        alpha = -np.sqrt((r * r).sum(axis=0)) / np.maximum(np.sqrt((v * v).sum(axis=0)), tiny)
        alpha = np.clip(alpha, -1e4, -1.0)
        jumped = step(project(w - 2 * alpha * r + alpha**2 * v))
        plain = loglik(w2)
        better = loglik(jumped)
        keep = better > plain
        w = np.where(keep, jumped, w2)
        new_value = np.where(keep, better, plain)
        if np.all(new_value - value <= 1e-6):
            value = new_value
            break
        value = new_value
    return w, value


def _rescale(w: np.ndarray, inside: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Weights with each column's mass on its ``inside`` points scaled to ``theta`` and the rest to
    ``1 − theta`` (a little mass everywhere first, so no point starts, and EM keeps it, at zero)."""
    base = w + 1e-6
    s_in = (base * inside).sum(axis=0)
    s_out = (base * ~inside).sum(axis=0)
    return np.where(inside, base * theta / s_in, base * (1 - theta) / s_out)


def randomized_bin_shares(
    mechanism: NumberMechanism,
    counts: Mapping[int, float],
    edges: Sequence[float],
    level: float = 0.95,
    *,
    iterations: int = 200,
    refinements: int = 10,
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
    observed = np.zeros(CODE_GROUPS)
    for code, c in counts.items():
        if 0 <= int(code) <= GRID_STEPS and c > 0:
            observed[int(code) * CODE_GROUPS // (GRID_STEPS + 1)] += c
    seen = observed > 0
    a, y = matrix[seen], observed[seen]
    nothing = np.zeros((a.shape[1], 1), dtype=bool)
    w_hat, best_ = _constrained_em(a, y, nothing, np.zeros(1), np.full((a.shape[1], 1), 1.0 / a.shape[1]), iterations)
    w_hat = w_hat[:, 0]
    best = float(best_[0])
    bins = len(cut) + 1
    shares = np.bincount(owner, weights=w_hat, minlength=bins)
    drop = float(stats.chi2.ppf(level, 1)) / 2
    target = best - drop

    # both ends of every bin at once: a column per (bin, side), bisected from the estimate to the
    # edge of [0, 1], each warm-started from the previous fit
    sides = [(b, edge) for b in range(bins) for edge in (0.0, 1.0)]
    inside = np.array([owner == b for b, _ in sides]).T  # points × columns
    hat = np.array([shares[b] for b, _ in sides])
    edge = np.array([e for _, e in sides])

    def fit(theta: np.ndarray, start: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray]:
        return _constrained_em(a, y, inside, theta, start, steps)

    def rescaled(theta: np.ndarray) -> np.ndarray:
        """The MLE with the bin's mass moved to ``theta`` (in proportion): the warm start."""
        return _rescale(np.repeat(w_hat[:, None], len(sides), axis=1), inside, theta)

    w_edge, at_edge = fit(edge, rescaled(edge), iterations)
    reaches = at_edge >= target  # the whole way to the edge is plausible
    good, bad = hat.copy(), edge.copy()
    w_good, w_bad = rescaled(hat), w_edge
    for _ in range(refinements):
        middle = (good + bad) / 2
        # warm start: between the fits at the two ends of the bracket, rescaled to the middle share
        w, value = fit(middle, _rescale((w_good + w_bad) / 2, inside, middle), iterations)
        ok = (value >= target)[None, :]
        good, bad = np.where(ok[0], middle, good), np.where(ok[0], bad, middle)
        w_good, w_bad = np.where(ok, w, w_good), np.where(ok, w_bad, w)
    ends = np.where(reaches, edge, (good + bad) / 2)
    low_end = np.minimum(ends[0::2], shares)
    high_end = np.maximum(ends[1::2], shares)
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
