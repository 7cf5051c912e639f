"""Breakdowns by group: each group's debiased shares, and the difference between two groups.

A direct (not randomized) question splits the respondents into groups; every group's reports were
randomized by the same design, so each group is a survey of its own and is estimated by
:func:`survey.privacy.estimate` on its own counts, nothing else. What this module adds is the
comparison of two groups:

* For a category whose reported share is affine in its true share, ``λ = a·θ + b`` (every design
  the builder offers), the difference of true shares is ``θ_a − θ_b = (λ_a − λ_b)/a``, and the
  reported counts of the two groups are independent binomials. The interval is Newcombe's (1998)
  hybrid score interval for ``λ_a − λ_b``, built from the two groups' own intervals (the floored
  Wilson intervals the results page shows for each group), mapped through ``1/a`` and clipped to
  [−1, 1]. Newcombe's interval is the one the literature recommends for a difference of two
  proportions at small samples (Newcombe 1998; Fagerland, Lydersen and Laake 2015); the floor
  keeps the dips of Wilson's interval at small counts out of it. Its coverage is computed exactly,
  as a double binomial sum, in ``benchmarks/analysis.md``.
* The test of ``θ_a = θ_b`` (equivalently ``λ_a = λ_b``, since ``a ≠ 0``) is the inversion of that
  interval: the p-value is the smallest ``α`` at which the ``1 − α`` interval excludes 0. So "the
  interval excludes 0" and "p < 1 − level" never disagree on a page, and the test's size at a
  null difference is one minus the interval's coverage there, which the benchmark measures.
* For a category that is not affine (custom matrices) the difference of the unbiased estimates
  with the delta-method standard error ``sqrt(SE_a² + SE_b²)`` (a Wald interval and z-test),
  stated as ``"delta-wald"``.

A group with few respondents is shown with its honest, wide interval; :func:`few_respondents_threshold`
says from the design alone below which n that interval is expected to be wider than ±25 points.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import special
from scipy.stats import chi2, norm

from .estimation import Estimate, _check_level, estimate
from .mechanisms import Mechanism
from .planning import sample_size

__all__ = [
    "Breakdown",
    "GroupComparison",
    "breakdown",
    "compare_groups",
    "difference_interval",
    "few_respondents_threshold",
]

#: Interval methods for a difference, as :meth:`GroupComparison.ci` takes them.
DIFFERENCE_METHODS = ("wilson", "exact", "wald")
NEWCOMBE_FLOORED = "newcombe-wilson-floor-mapped"
NEWCOMBE_EXACT = "newcombe-clopper-pearson-mapped"
DELTA_WALD = "delta-wald"
#: The floor of each group's interval misses at most 1.4 times as often as the level allows (as in
#: :func:`survey.privacy.floored_wilson_interval`).
_FLOOR_FACTOR = 1.4
#: p-values below this are reported as 0 (scipy's inverse incomplete beta function, which the
#: floor of each interval needs, is reliable down to tails of about 1e-150).
_SMALLEST_P = 1e-100
#: The expected half-width (at the worst-case share) above which a group's interval counts as wide.
WIDE_HALF_WIDTH = 0.25


def _check_method(method: str) -> str:
    if method not in DIFFERENCE_METHODS:
        raise ValueError(f"unknown interval method {method!r}; choose one of {', '.join(DIFFERENCE_METHODS)}")
    return method


# -- the interval for a difference of two binomial shares ------------------------------------------


def _binomial_pieces(x: np.ndarray, n: np.ndarray, alpha: float, method: str) -> tuple[np.ndarray, np.ndarray]:
    """``(share − low, high − share)`` of one group's interval at level ``1 − alpha``.

    ``"wilson"`` is the floored Wilson interval of :func:`survey.privacy.floored_wilson_interval`
    (Wilson's, widened to contain Clopper–Pearson at ``1 − 1.4·alpha``), written here in terms of
    ``alpha`` so that the p-value can invert it down to ``alpha`` of 1e-100; ``"exact"`` is
    Clopper–Pearson alone. Both equal the library's intervals at every level it accepts (a test
    checks it); the tail of the floor is capped at 1 so that every ``alpha`` in (0, 1] is valid.
    """
    share = x / n
    with np.errstate(invalid="ignore", divide="ignore"):
        tail = min(_FLOOR_FACTOR * alpha, 1.0) / 2.0 if method == "wilson" else alpha / 2.0
        # upper bound through the lower bound of the mirrored count: exact for tiny tails
        cp_low = np.where(x <= 0, 0.0, special.betaincinv(np.maximum(x, 1.0), n - x + 1.0, tail))
        cp_high = np.where(x >= n, 1.0, 1.0 - special.betaincinv(np.maximum(n - x, 1.0), x + 1.0, tail))
        if method == "exact":
            return share - cp_low, cp_high - share
        z = float(-special.ndtri(alpha / 2.0))
        z2n = z * z / n
        centre = (share + z2n / 2.0) / (1.0 + z2n)
        half = z / (1.0 + z2n) * np.sqrt(share * (1.0 - share) / n + z2n / (4.0 * n))
        low = np.where(x <= 0, 0.0, np.clip(centre - half, 0.0, 1.0))
        high = np.where(x >= n, 1.0, np.clip(centre + half, 0.0, 1.0))
    return share - np.minimum(low, cp_low), np.maximum(high, cp_high) - share


def _reported_difference_interval(
    x_a: Any, n_a: Any, x_b: Any, n_b: Any, alpha: float, method: str
) -> tuple[np.ndarray, np.ndarray]:
    """An interval for ``λ_a − λ_b``, the difference of two independent binomial shares."""
    x_a, n_a, x_b, n_b = (np.asarray(v, dtype=float) for v in (x_a, n_a, x_b, n_b))
    difference = x_a / n_a - x_b / n_b
    if method == "wald":
        z = float(-special.ndtri(alpha / 2.0))
        share_a, share_b = x_a / n_a, x_b / n_b
        half = z * np.sqrt(share_a * (1.0 - share_a) / n_a + share_b * (1.0 - share_b) / n_b)
        return difference - half, difference + half
    below_a, above_a = _binomial_pieces(x_a, n_a, alpha, method)
    below_b, above_b = _binomial_pieces(x_b, n_b, alpha, method)
    # Newcombe's method 10: the distance to each end combines the two groups' distances that move
    # the difference that way (a's lower with b's upper for the lower end, and vice versa)
    return difference - np.hypot(below_a, above_b), difference + np.hypot(above_a, below_b)


def _map_difference(low: np.ndarray, high: np.ndarray, a: float) -> tuple[np.ndarray, np.ndarray]:
    low, high = np.asarray(low) / a, np.asarray(high) / a
    if a < 0:
        low, high = high, low
    return np.clip(low, -1.0, 1.0), np.clip(high, -1.0, 1.0)


def difference_interval(
    x_a: Any,
    n_a: Any,
    x_b: Any,
    n_b: Any,
    a: float,
    level: float = 0.95,
    method: str = "wilson",
) -> tuple[np.ndarray, np.ndarray]:
    """The interval :meth:`GroupComparison.ci` gives for ``θ_a − θ_b`` on an affine category.

    ``x_a`` of ``n_a`` and ``x_b`` of ``n_b`` reported the category; ``a`` is the slope of the
    design, ``P(report) = a·θ + b``. Arrays broadcast, so ``x_a[:, None]`` and ``x_b[None, :]``
    give the interval for every pair of counts at once (each group's interval is computed on its
    own array first, so that costs no more than the pairs). Methods: ``"wilson"`` (Newcombe's
    hybrid score interval from the two floored Wilson intervals, the default), ``"exact"`` (the
    same from Clopper–Pearson intervals: wider, with no minimum coverage it can promise either) and
    ``"wald"`` (the difference ± z·SE, for comparison).

        >>> low, high = difference_interval(60, 100, 40, 100, a=0.5)
        >>> round(float(low), 4), round(float(high), 4)
        (0.1228, 0.6563)
    """
    level = _check_level(level)
    method = _check_method(method)
    if not math.isfinite(a) or a == 0:
        raise ValueError(f"the design's slope a must be a non-zero number, got {a!r}")
    low, high = _reported_difference_interval(x_a, n_a, x_b, n_b, 1.0 - level, method)
    return _map_difference(low, high, a)


def _inverted_p_value(x_a: float, n_a: float, x_b: float, n_b: float, method: str) -> float:
    """The smallest ``α`` whose ``1 − α`` interval for ``λ_a − λ_b`` excludes 0.

    Each group's interval shrinks as ``α`` grows, so the end of the difference's interval nearest
    to 0 moves monotonically towards the observed difference and crosses 0 once: root-finding in
    ``log α`` finds it to ten significant digits.
    """
    difference = x_a / n_a - x_b / n_b
    if difference == 0.0:
        return 1.0
    if method == "wald":
        share_a, share_b = x_a / n_a, x_b / n_b
        se = math.sqrt(share_a * (1 - share_a) / n_a + share_b * (1 - share_b) / n_b)
        return 1.0 if se == 0.0 else float(min(1.0, 2.0 * norm.sf(abs(difference) / se)))

    def nearest_end(log_alpha: float) -> float:
        low, high = _reported_difference_interval(x_a, n_a, x_b, n_b, math.exp(log_alpha), method)
        return float(low) if difference > 0 else -float(high)

    from scipy.optimize import brentq  # only here: importing it costs the app's start-up time

    lo, hi = math.log(_SMALLEST_P), 0.0
    if nearest_end(lo) > 0:
        return 0.0
    if nearest_end(hi) <= 0:
        return 1.0
    return float(math.exp(brentq(nearest_end, lo, hi, xtol=1e-13, rtol=1e-13)))


# -- few respondents ---------------------------------------------------------------------------------


def _worst_share(mechanism: Mechanism, category: int) -> float:
    """The true share at which the category's interval is widest: where ``λ`` is nearest 1/2."""
    coef = mechanism.affine_coefficients(category)
    if coef is None:
        return 0.5
    a, b = coef
    return min(max((0.5 - b) / a, 0.0), 1.0)


@functools.lru_cache(maxsize=256)
def _threshold(mechanism: Mechanism, category: int, level: float, half_width: float) -> int:
    return sample_size(mechanism, half_width, _worst_share(mechanism, category), level, category)


def few_respondents_threshold(
    mechanism: Mechanism, category: int = 0, level: float = 0.95, half_width: float = WIDE_HALF_WIDTH
) -> int:
    """The number of respondents below which a group's interval is expected to be wide.

    That is the smallest n at which the expected half-width of the interval the results page shows
    (:func:`survey.privacy.margin_of_error`, an exact sum) is at most ``half_width`` (±25 points by
    default) at the share where the design's interval is widest (the true share whose reported
    share is nearest 1/2). Below it, a group's interval spans more than half of [0, 1] for a
    typical population: still honest, but the page should say that the group is small. Depends
    only on the design, never on the answers, so showing it reveals nothing.

        >>> from survey.privacy import CoinFlip
        >>> few_respondents_threshold(CoinFlip(0.5, 0.5))   # the seed design, ε = ln 3
        57
    """
    if not isinstance(mechanism, Mechanism):
        raise ValueError("the first argument must be a Mechanism")
    if not 0 <= category < mechanism.k:
        raise ValueError(f"category must be in 0..{mechanism.k - 1}")
    level = _check_level(level)
    half_width = float(half_width)
    if not 0.0 < half_width < 1.0:
        raise ValueError(f"half_width must be between 0 and 1, got {half_width!r}")
    return _threshold(mechanism, int(category), level, half_width)


# -- two groups ----------------------------------------------------------------------------------------


def _group_estimate(mechanism: Mechanism, counts: Any, name: str) -> Estimate:
    result = estimate(mechanism, counts)
    if result.counts.ndim != 1:
        raise ValueError(f"{name} must be one group's counts, one per category")
    return result


class GroupComparison:
    """Two groups' debiased shares of one category and the difference between them.

    Built by :func:`compare_groups`.

    Attributes
    ----------
    estimate_a, estimate_b : Estimate
        Each group's :func:`survey.privacy.estimate` on its own counts (every category).
    category : int
        The category compared; ``label`` is its name.
    n_a, n_b : int
        The groups' numbers of respondents.
    share_a, share_b : float
        The groups' consistent estimates of the category's share (what the results page shows).
    difference : float
        ``share_a − share_b``.
    unbiased_difference : float
        The difference of the unbiased estimates: unbiased, may lie outside [−1, 1]. For an
        affine category it is the observed difference of reported shares divided by ``a``, which
        the interval always contains (up to the clipping to [−1, 1]).
    level : float
        The level of ``low``, ``high`` and of the significance statement.
    low, high : float
        The interval for ``θ_a − θ_b`` at ``level`` (see :meth:`ci`), inside [−1, 1]; it always
        holds ``difference``.
    p_value : float
        Two-sided p-value of ``θ_a = θ_b``: for an affine category the smallest ``α`` at which
        the ``1 − α`` interval excludes 0, so ``p_value < 1 − level`` exactly when 0 lies outside
        ``[low, high]``; otherwise the z-test of the delta method.
    interval_method : str
        ``"newcombe-wilson-floor-mapped"``, ``"newcombe-clopper-pearson-mapped"`` or
        ``"delta-wald"``.
    few_a, few_b : bool
        Whether each group has fewer respondents than ``wide_below``.
    wide_below : int
        :func:`few_respondents_threshold` of the design and category.
    """

    def __init__(
        self,
        estimate_a: Estimate,
        estimate_b: Estimate,
        category: int,
        level: float,
        method: str,
    ) -> None:
        mechanism = estimate_a.mechanism
        self.mechanism = mechanism
        self.estimate_a, self.estimate_b = estimate_a, estimate_b
        self.category = category
        self.label = mechanism.labels[category]
        self.n_a, self.n_b = int(estimate_a.n), int(estimate_b.n)
        self.share_a = float(estimate_a.proportions[category])
        self.share_b = float(estimate_b.proportions[category])
        self.difference = self.share_a - self.share_b
        self.unbiased_difference = float(estimate_a.unbiased[category] - estimate_b.unbiased[category])
        self._affine = mechanism.affine_coefficients(category)
        self.method = method if self._affine is not None else "wald"
        self.interval_method = (
            DELTA_WALD
            if self._affine is None or method == "wald"
            else (NEWCOMBE_FLOORED if method == "wilson" else NEWCOMBE_EXACT)
        )
        self.level = level
        self.low, self.high = self.ci(level)
        self.p_value = self._p_value()
        self.wide_below = few_respondents_threshold(mechanism, category, level)
        self.few_a, self.few_b = self.n_a < self.wide_below, self.n_b < self.wide_below

    def _counts(self) -> tuple[float, float, float, float]:
        v = self.category
        return (
            float(self.estimate_a.counts[v]),
            float(self.n_a),
            float(self.estimate_b.counts[v]),
            float(self.n_b),
        )

    def _delta_se(self) -> float:
        v = self.category
        return math.hypot(float(self.estimate_a.standard_errors[v]), float(self.estimate_b.standard_errors[v]))

    def ci(self, level: float = 0.95) -> tuple[float, float]:
        """The interval for ``θ_a − θ_b`` at ``level``, inside [−1, 1].

        For an affine category: Newcombe's hybrid score interval of the reported shares' difference
        from the two groups' floored Wilson intervals (or Clopper–Pearson with ``method="exact"``),
        divided by the design's slope ``a`` (:func:`difference_interval`). Otherwise: the unbiased
        difference ± z·SE (delta method). Either is widened, if need be, to hold ``difference``:
        the two can part only when a group's reports lie beyond what the design can produce (its
        unbiased estimate is outside [0, 1] and its shown share is clipped), and widening can only
        raise the coverage.
        """
        level = _check_level(level)
        if self._affine is None:
            half = float(-special.ndtri((1.0 - level) / 2.0)) * self._delta_se()
            centre = self.unbiased_difference
            low, high = max(centre - half, -1.0), min(centre + half, 1.0)
        else:
            x_a, n_a, x_b, n_b = self._counts()
            low, high = difference_interval(x_a, n_a, x_b, n_b, self._affine[0], level, self.method)
        return min(float(low), self.difference), max(float(high), self.difference)

    def _p_value(self) -> float:
        # the widened interval holds 0 at every level when the shown difference is 0 or has the
        # other sign than the unbiased one (both groups' reports beyond the design's range)
        if self.difference * self.unbiased_difference <= 0.0:
            return 1.0
        if self._affine is None:
            se = self._delta_se()
            if se == 0.0:
                return 0.0
            return float(min(1.0, 2.0 * norm.sf(abs(self.unbiased_difference) / se)))
        return _inverted_p_value(*self._counts(), self.method)

    @property
    def significant(self) -> bool:
        """Whether the interval at ``level`` excludes 0 (equivalently ``p_value < 1 − level``)."""
        return not self.low <= 0.0 <= self.high

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (what a results page or an export shows)."""
        return {
            "category": self.label,
            "level": self.level,
            "n_a": self.n_a,
            "n_b": self.n_b,
            "share_a": self.share_a,
            "share_b": self.share_b,
            "difference": self.difference,
            "unbiased_difference": self.unbiased_difference,
            "ci_low": self.low,
            "ci_high": self.high,
            "p_value": self.p_value,
            "interval_method": self.interval_method,
            "few_a": self.few_a,
            "few_b": self.few_b,
            "wide_below": self.wide_below,
        }

    def __repr__(self) -> str:
        return (
            f"GroupComparison({self.label}: {self.share_a:.3f} (n={self.n_a}) − {self.share_b:.3f} "
            f"(n={self.n_b}) = {self.difference:+.3f} [{self.low:+.3f}, {self.high:+.3f}], "
            f"p = {self.p_value:.3g})"
        )


def compare_groups(
    mechanism: Mechanism,
    counts_a: Any,
    counts_b: Any,
    level: float = 0.95,
    category: int = 0,
    method: str = "wilson",
) -> GroupComparison:
    """Compare one category's share between two groups of respondents.

    ``counts_a`` and ``counts_b`` are the groups' reported counts, one per category in
    ``mechanism.labels`` order (as for :func:`survey.privacy.estimate`); the groups must not
    share respondents. Each group is estimated on its own counts, and the difference of the
    category's true shares gets an interval and a test (see the module's documentation). The two
    groups of the seed design, 60 and 40 "yes" of 100 each::

        >>> from survey.privacy import CoinFlip
        >>> result = compare_groups(CoinFlip(0.5, 0.5), [60, 40], [40, 60])
        >>> round(result.share_a, 2), round(result.share_b, 2), round(result.difference, 2)
        (0.7, 0.3, 0.4)
        >>> round(result.low, 4), round(result.high, 4), round(result.p_value, 4)
        (0.1228, 0.6563, 0.0045)

    ``method`` is ``"wilson"`` (the default), ``"exact"`` or ``"wald"``, as for
    :func:`difference_interval`. Raises ``ValueError`` as :func:`survey.privacy.estimate` does
    (an empty group cannot be compared).
    """
    if not isinstance(mechanism, Mechanism):
        raise ValueError("the first argument must be a Mechanism")
    if not 0 <= category < mechanism.k:
        raise ValueError(f"category must be in 0..{mechanism.k - 1}")
    level = _check_level(level)
    method = _check_method(method)
    return GroupComparison(
        _group_estimate(mechanism, counts_a, "counts_a"),
        _group_estimate(mechanism, counts_b, "counts_b"),
        int(category),
        level,
        method,
    )


# -- many groups ----------------------------------------------------------------------------------------


def _holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment: each family-wise error statement holds at its level."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


class GroupRow:
    """One group of a :class:`Breakdown`.

    Attributes
    ----------
    label : str
        The group's name (an option of the direct question, a week, ...).
    n : int
        Its number of respondents.
    estimate : Estimate or None
        :func:`survey.privacy.estimate` on the group's own counts; None for a group nobody is in.
    share, low, high : float or None
        The category's consistent estimate and its interval at the breakdown's level.
    few : bool
        Whether ``n`` is below the breakdown's ``wide_below`` (its interval is wide).
    comparison : GroupComparison or None
        This group against the rest of the respondents (or against the reference group); None for
        the reference itself, an empty group, or when nobody is outside the group.
    adjusted_p_value : float or None
        The comparison's p-value after Holm's adjustment over all the breakdown's comparisons.
    """

    def __init__(self, label: str, n: int, estimate_: Estimate | None, category: int, level: float, wide: int) -> None:
        self.label = label
        self.n = n
        self.estimate = estimate_
        if estimate_ is None:
            self.share = self.low = self.high = None
        else:
            low, high = estimate_.ci(level)
            self.share = float(estimate_.proportions[category])
            self.low, self.high = float(low[category]), float(high[category])
        self.few = n < wide
        self.comparison: GroupComparison | None = None
        self.adjusted_p_value: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "n": self.n,
            "share": self.share,
            "ci_low": self.low,
            "ci_high": self.high,
            "few": self.few,
            "comparison": None if self.comparison is None else self.comparison.to_dict(),
            "adjusted_p_value": self.adjusted_p_value,
        }

    def __repr__(self) -> str:
        if self.share is None:
            return f"GroupRow({self.label!r}, n=0)"
        note = ", few" if self.few else ""
        return f"GroupRow({self.label!r}, n={self.n}, {self.share:.3f} [{self.low:.3f}, {self.high:.3f}]{note})"


class Breakdown:
    """One randomized question's category broken down by the groups of a direct question.

    Built by :func:`breakdown`.

    Attributes
    ----------
    rows : list of GroupRow
        One per group, in the order given.
    total : Estimate
        The estimate on every group's counts together (the whole sample).
    category, label : int, str
        The category shown and compared.
    level : float
    reference : str or None
        The group every other is compared with; None when each is compared with the rest.
    homogeneity_p_value : float or None
        Pearson's chi-square test that every group reports alike (all categories at once). Since
        the design is the same in every group and ``Q`` is invertible, equal reported
        distributions mean equal true distributions, so this tests "the true answers do not
        differ by group". Its chi-square approximation wants about 5 expected reports per cell;
        None with fewer than two non-empty groups.
    wide_below : int
        :func:`few_respondents_threshold`: groups smaller than this have wide intervals.
    """

    def __init__(
        self,
        rows: list[GroupRow],
        total: Estimate,
        category: int,
        level: float,
        reference: str | None,
        homogeneity_p_value: float | None,
        wide_below: int,
    ) -> None:
        self.rows = rows
        self.total = total
        self.category = category
        self.label = total.labels[category]
        self.level = level
        self.reference = reference
        self.homogeneity_p_value = homogeneity_p_value
        self.wide_below = wide_below

    def __getitem__(self, label: str) -> GroupRow:
        for row in self.rows:
            if row.label == label:
                return row
        raise KeyError(label)

    def to_dict(self) -> dict[str, Any]:
        low, high = self.total.ci(self.level)
        return {
            "category": self.label,
            "level": self.level,
            "reference": self.reference,
            "wide_below": self.wide_below,
            "homogeneity_p_value": self.homogeneity_p_value,
            "total": {
                "n": self.total.n,
                "share": float(self.total.proportions[self.category]),
                "ci_low": float(low[self.category]),
                "ci_high": float(high[self.category]),
            },
            "groups": [row.to_dict() for row in self.rows],
        }

    def __repr__(self) -> str:
        rows = "\n  ".join(repr(row) for row in self.rows)
        return f"Breakdown({self.label!r}, level={self.level:g}, wide below n={self.wide_below}:\n  {rows})"


def _homogeneity_p_value(table: np.ndarray) -> float | None:
    table = table[table.sum(axis=1) > 0]
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[0] < 2:
        return None
    if table.shape[1] < 2:
        return 1.0  # every group reported one and the same category
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / table.sum()
    statistic = float(((table - expected) ** 2 / expected).sum())
    df = (table.shape[0] - 1) * (table.shape[1] - 1)
    return float(chi2.sf(statistic, df))


def breakdown(
    mechanism: Mechanism,
    groups: Mapping[str, Any] | Sequence[tuple[str, Any]],
    level: float = 0.95,
    category: int = 0,
    reference: str | None = None,
    method: str = "wilson",
) -> Breakdown:
    """Each group's debiased shares, and each group compared with the others.

    ``groups`` maps a group's label to its reported counts (one per category, in
    ``mechanism.labels`` order), or is a sequence of ``(label, counts)`` pairs; the groups must
    not share respondents (the options of a single-choice direct question, the weeks of
    submission). A group with no respondents is kept, with no estimate.

    Every group's estimate is :func:`survey.privacy.estimate` on its own counts. Comparisons of
    ``category``: with ``reference=None`` (the default) each group against **the rest of the
    respondents** (all other groups pooled: "does this group differ from everybody else?"), which
    needs no choice of baseline and suits weeks and many options alike; with ``reference`` set to
    a label, each other group against that group (a fixed baseline, as a regression's indicators
    have). Each comparison is :func:`compare_groups`; their p-values are also given after Holm's
    adjustment over the breakdown, and an omnibus chi-square test of "no difference between any
    groups" comes with it.

        >>> from survey.privacy import CoinFlip
        >>> result = breakdown(CoinFlip(0.5, 0.5), {"under 30": [60, 40], "30 and over": [40, 60], "n/a": [0, 0]})
        >>> [(row.label, row.n, row.share and round(row.share, 2), row.few) for row in result.rows]
        [('under 30', 100, 0.7, False), ('30 and over', 100, 0.3, False), ('n/a', 0, None, True)]
        >>> row = result["under 30"]                 # against everybody else (here "30 and over")
        >>> round(row.comparison.difference, 2), round(row.comparison.low, 3), round(row.comparison.high, 3)
        (0.4, 0.123, 0.656)
    """
    if not isinstance(mechanism, Mechanism):
        raise ValueError("the first argument must be a Mechanism")
    if not 0 <= category < mechanism.k:
        raise ValueError(f"category must be in 0..{mechanism.k - 1}")
    level = _check_level(level)
    method = _check_method(method)
    items = list(groups.items()) if isinstance(groups, Mapping) else [tuple(item) for item in groups]
    if not items:
        raise ValueError("a breakdown needs at least one group")
    labels = [str(label) for label, _ in items]
    if len(set(labels)) != len(labels):
        raise ValueError("group labels must be distinct")
    if reference is not None and str(reference) not in labels:
        raise ValueError(f"the reference group {reference!r} is not among the groups")
    table = np.zeros((len(items), mechanism.k), dtype=np.int64)
    for i, (label, counts) in enumerate(items):
        try:
            raw = np.asarray(counts, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"group {label!r}: counts must be numbers, one per category") from None
        if raw.shape != (mechanism.k,):
            raise ValueError(f"group {label!r}: expected {mechanism.k} counts, got shape {raw.shape}")
        if not np.all(np.isfinite(raw)) or np.any(raw < 0) or np.any(raw != np.round(raw)):
            raise ValueError(f"group {label!r}: counts must be non-negative whole numbers")
        table[i] = raw.astype(np.int64)
    sizes = table.sum(axis=1)
    if sizes.sum() == 0:
        raise ValueError("no responses: there is nothing to estimate until someone has answered")
    wide = few_respondents_threshold(mechanism, category, level)
    rows = [
        GroupRow(label, int(size), estimate(mechanism, table[i]) if size else None, category, level, wide)
        for i, (label, size) in enumerate(zip(labels, sizes, strict=True))
    ]
    total_counts = table.sum(axis=0)
    reference_index = None if reference is None else labels.index(str(reference))
    compared = []
    for i, row in enumerate(rows):
        if row.estimate is None or i == reference_index:
            continue
        if reference_index is None:
            other = total_counts - table[i]
        else:
            other = table[reference_index]
        if other.sum() == 0:
            continue
        other_estimate = rows[reference_index].estimate if reference_index is not None else estimate(mechanism, other)
        row.comparison = GroupComparison(row.estimate, other_estimate, category, level, method)
        compared.append(row)
    for row, adjusted in zip(compared, _holm([row.comparison.p_value for row in compared]), strict=True):
        row.adjusted_p_value = adjusted
    return Breakdown(
        rows,
        estimate(mechanism, total_counts),
        category,
        level,
        None if reference is None else str(reference),
        _homogeneity_p_value(table.astype(float)),
        wide,
    )
