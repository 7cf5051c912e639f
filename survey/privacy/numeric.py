"""Mechanisms whose reports are numbers: a bounded number randomized in the respondent's browser.

A sensitive number (drinks last week, days skipped, undeclared income) is asked with a known range
``[low, high]``. The browser clamps the true number to the range, maps it to ``t ∈ [-1, 1]``
(``t = (2x − low − high)/(high − low)``), draws a report ``y`` from the mechanism, and sends
``low + (high − low)(y + 1)/2``: the report in the question's own units, whose expectation is the
clamped true number. So the mean of the reports is an unbiased estimate of the population mean and
every estimator downstream (bins excepted) is the one for direct numbers, with a larger variance.

The mechanisms, each ε-locally differentially private by its definition (the ratio of the report's
density under any two true numbers is at most ``e^ε``, checked numerically in
tests/test_numeric_mechanisms.py):

- :class:`LaplaceNumber`: ``y = t + Laplace(2/ε)`` (the seed documents' mechanism for numeric
  queries: sensitivity 2 on [-1, 1]). Unbounded reports; variance ``8/ε²`` whatever ``t``.
- :class:`DuchiNumber`: ``y = ±C`` with ``C = (e^ε + 1)/(e^ε − 1)`` and
  ``P(y = C) = 1/2 + t/(2C)`` (Duchi, Jordan & Wainwright 2018). Variance ``C² − t²``: the best of
  these at small ε.
- :class:`PiecewiseNumber`: ``y`` uniform on a window ``[l(t), r(t)]`` around ``t`` with
  probability ``e^{ε/2}/(e^{ε/2} + 1)``, otherwise uniform on the rest of ``[−C, C]``,
  ``C = (e^{ε/2} + 1)/(e^{ε/2} − 1)`` (Wang et al. 2019, "piecewise mechanism"). Variance
  ``t²/(e^{ε/2} − 1) + (e^{ε/2} + 3)/(3(e^{ε/2} − 1)²)``: the best of these at large ε.
- :class:`HybridNumber`: the piecewise mechanism with probability ``α = 1 − e^{−ε/2}`` and Duchi's
  otherwise when ``ε > ε* ≈ 0.6094``, Duchi's alone below (Wang et al. 2019, "hybrid mechanism"); its
  worst-case variance is at or below both at every ε.

:func:`default_number_mechanism` picks, among the implemented mechanisms, the one whose worst-case
variance is smallest at the given ε, by computing it: a new mechanism added to
:data:`NUMBER_MECHANISMS` is chosen where it is better without anyone editing the rule.

Pure, like the rest of the privacy core.

    >>> m = HybridNumber(1.0)
    >>> round(float(m.variance(0.0)), 4), round(m.worst_variance, 4), round(LaplaceNumber(1.0).worst_variance, 1)
    (4.289, 4.289, 8.0)
    >>> default_number_mechanism(1.0).design
    'hybrid'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from scipy.optimize import brentq

from .interface import BoundedNumbers

__all__ = [
    "HYBRID_THRESHOLD",
    "NUMBER_MECHANISMS",
    "DuchiNumber",
    "HybridNumber",
    "LaplaceNumber",
    "NumberMechanism",
    "PiecewiseNumber",
    "Range",
    "default_number_mechanism",
    "number_mechanism_from_dict",
]


def _hybrid_threshold() -> float:
    """The ε below which mixing in the piecewise mechanism no longer helps (Wang et al. 2019 give it
    in closed form, ``ln((−5 + 2∛(6353 − 405√241) + 2∛(6353 + 405√241))/27) ≈ 0.6094``): where the
    mixture's constant variance meets Duchi's worst case. Solved here from the two variances."""

    def excess(epsilon: float) -> float:
        e, c = math.exp(epsilon / 2), 1 / math.tanh(epsilon / 2)
        return (e + 3) / (3 * e * (e - 1)) + c * c / e - c * c

    return float(brentq(excess, 0.1, 2.0, xtol=1e-14))


#: Below this ε the hybrid mechanism is Duchi's alone.
HYBRID_THRESHOLD = _hybrid_threshold()


def _check_epsilon(epsilon: float) -> float:
    try:
        epsilon = float(epsilon)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"epsilon must be a number, got {epsilon!r:.40}") from None
    if not math.isfinite(epsilon) or epsilon <= 0:
        raise ValueError(f"epsilon must be a finite number above 0, got {epsilon!r}")
    return epsilon


@dataclass(frozen=True)
class Range:
    """The question's range: the true number is clamped to it, and reports are mapped back into it."""

    low: float
    high: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.low) and math.isfinite(self.high)) or not self.low < self.high:
            raise ValueError(f"a range needs finite low < high, got {self.low!r} to {self.high!r}")

    @property
    def half(self) -> float:
        return (self.high - self.low) / 2

    @property
    def middle(self) -> float:
        return (self.high + self.low) / 2

    def normalize(self, x: Any) -> np.ndarray:
        """``x`` clamped to the range and mapped to [-1, 1]."""
        return (np.clip(np.asarray(x, dtype=float), self.low, self.high) - self.middle) / self.half

    def to_units(self, y: Any) -> np.ndarray:
        """A normalized report in the question's units (reports may lie outside the range)."""
        return self.middle + self.half * np.asarray(y, dtype=float)


@dataclass(frozen=True)
class NumberMechanism:
    """A mechanism on ``t ∈ [-1, 1]`` whose report ``y`` has ``E[y | t] = t``.

    Subclasses define the report's law (``sample``, ``density`` or ``probabilities``) and its
    variance; the rest (ε, the report domain, the browser's sampler) follows.
    """

    epsilon: float
    design: ClassVar[str] = ""
    name: ClassVar[str] = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _check_epsilon(self.epsilon))

    # --- the law of the report -------------------------------------------------------------
    def sample(self, t: Any, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def variance(self, t: Any) -> np.ndarray:
        """``Var[y | t]``: the variance one respondent with true value ``t`` adds."""
        raise NotImplementedError

    @property
    def bound(self) -> float:
        """The largest ``|y|`` a report can have (``inf`` for Laplace)."""
        raise NotImplementedError

    @property
    def worst_variance(self) -> float:
        """``max_t Var[y | t]``: every variance here is a quadratic in ``t``, even, so its largest
        value on [-1, 1] is at ``t = 0`` or ``t = ±1`` (the hybrid's is the same for every ``t``)."""
        return float(max(self.variance(0.0), self.variance(1.0)))

    # --- what the app needs ----------------------------------------------------------------
    def reports(self, value_range: Range) -> BoundedNumbers:
        """The reports a submission may carry, in the question's units."""
        if not math.isfinite(self.bound):
            return BoundedNumbers(-math.inf, math.inf, whole=False)
        low, high = value_range.to_units([-self.bound, self.bound])
        return BoundedNumbers(float(low), float(high), whole=False)

    def sampler(self) -> dict[str, Any]:
        """What the browser needs: the design and ε (every constant is derived from them there)."""
        return {"sampler": self.design, "epsilon": self.epsilon}

    def to_dict(self) -> dict[str, Any]:
        return {"design": self.design, "epsilon": self.epsilon}

    def randomize(self, x: Any, value_range: Range, rng: np.random.Generator) -> np.ndarray:
        """Reports in the question's units for true numbers ``x``, as the browser draws them."""
        return value_range.to_units(self.sample(value_range.normalize(x), rng))


@dataclass(frozen=True)
class LaplaceNumber(NumberMechanism):
    design: ClassVar[str] = "laplace"
    name: ClassVar[str] = "Laplace noise"

    @property
    def scale(self) -> float:
        return 2.0 / self.epsilon

    @property
    def bound(self) -> float:
        return math.inf

    def sample(self, t: Any, rng: np.random.Generator) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        return t + rng.laplace(0.0, self.scale, size=t.shape)

    def density(self, y: Any, t: Any) -> np.ndarray:
        return np.exp(-np.abs(np.asarray(y, dtype=float) - t) / self.scale) / (2 * self.scale)

    def variance(self, t: Any) -> np.ndarray:
        return np.full(np.shape(t), 2 * self.scale**2)


@dataclass(frozen=True)
class DuchiNumber(NumberMechanism):
    design: ClassVar[str] = "duchi"
    name: ClassVar[str] = "two-point (Duchi et al.)"

    @property
    def bound(self) -> float:
        return 1.0 / math.tanh(self.epsilon / 2)  # (e^ε + 1)/(e^ε − 1)

    def probability_high(self, t: Any) -> np.ndarray:
        """``P(y = +C | t)``."""
        return 0.5 + np.asarray(t, dtype=float) / (2 * self.bound)

    def sample(self, t: Any, rng: np.random.Generator) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        return np.where(rng.random(t.shape) < self.probability_high(t), self.bound, -self.bound)

    def variance(self, t: Any) -> np.ndarray:
        return self.bound**2 - np.asarray(t, dtype=float) ** 2


@dataclass(frozen=True)
class PiecewiseNumber(NumberMechanism):
    design: ClassVar[str] = "piecewise"
    name: ClassVar[str] = "piecewise (Wang et al.)"

    @property
    def _half_exp(self) -> float:
        return math.exp(self.epsilon / 2)

    @property
    def bound(self) -> float:
        return 1.0 / math.tanh(self.epsilon / 4)  # (e^{ε/2} + 1)/(e^{ε/2} − 1)

    def window(self, t: Any) -> tuple[np.ndarray, np.ndarray]:
        """``[l(t), r(t)]``, the window of width ``C − 1`` reported with the higher density."""
        c = self.bound
        left = (c + 1) / 2 * np.asarray(t, dtype=float) - (c - 1) / 2
        return left, left + c - 1

    @property
    def inside_probability(self) -> float:
        return self._half_exp / (self._half_exp + 1)

    @property
    def high_density(self) -> float:
        """The density inside the window; outside it is this divided by ``e^ε``."""
        return self.inside_probability / (self.bound - 1)

    def density(self, y: Any, t: Any) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        left, right = self.window(t)
        inside = (left <= y) & (y <= right)
        outside = (np.abs(y) <= self.bound) & ~inside
        return np.where(inside, self.high_density, np.where(outside, self.high_density / math.exp(self.epsilon), 0.0))

    def sample(self, t: Any, rng: np.random.Generator) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        c = self.bound
        left, right = self.window(t)
        u = rng.random(t.shape)
        inside = left + (right - left) * u
        # outside: uniform over [−C, l) ∪ (r, C], of total length C + 1, laid end to end
        v = (c + 1) * rng.random(t.shape)
        below = left + c  # length of [−C, l)
        outside = np.where(v < below, -c + v, right + (v - below))
        return np.where(rng.random(t.shape) < self.inside_probability, inside, outside)

    def variance(self, t: Any) -> np.ndarray:
        e = self._half_exp
        return np.asarray(t, dtype=float) ** 2 / (e - 1) + (e + 3) / (3 * (e - 1) ** 2)


@dataclass(frozen=True)
class HybridNumber(NumberMechanism):
    design: ClassVar[str] = "hybrid"
    name: ClassVar[str] = "hybrid (Wang et al.)"
    piecewise: PiecewiseNumber = field(init=False, repr=False, compare=False)
    duchi: DuchiNumber = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "piecewise", PiecewiseNumber(self.epsilon))
        object.__setattr__(self, "duchi", DuchiNumber(self.epsilon))

    @property
    def piecewise_share(self) -> float:
        """``α``: how often the piecewise mechanism reports (else Duchi's)."""
        return 1 - math.exp(-self.epsilon / 2) if self.epsilon > HYBRID_THRESHOLD else 0.0

    @property
    def bound(self) -> float:
        return self.piecewise.bound if self.piecewise_share > 0 else self.duchi.bound

    def sample(self, t: Any, rng: np.random.Generator) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        which = rng.random(t.shape) < self.piecewise_share
        return np.where(which, self.piecewise.sample(t, rng), self.duchi.sample(t, rng))

    def variance(self, t: Any) -> np.ndarray:
        # E[y|t] = t under both, so the mixture's variance is the mixture of second moments − t².
        a = self.piecewise_share
        t = np.asarray(t, dtype=float)
        return a * self.piecewise.variance(t) + (1 - a) * self.duchi.variance(t)


#: Every implemented number mechanism, by design id.
NUMBER_MECHANISMS: dict[str, type[NumberMechanism]] = {
    m.design: m for m in (LaplaceNumber, DuchiNumber, PiecewiseNumber, HybridNumber)
}


def default_number_mechanism(epsilon: float, candidates: Sequence[str] | None = None) -> NumberMechanism:
    """The implemented mechanism with the smallest worst-case variance of the mean at ``epsilon``."""
    built = [NUMBER_MECHANISMS[d](epsilon) for d in (candidates or NUMBER_MECHANISMS)]
    return min(built, key=lambda m: (m.worst_variance, m.design != "hybrid"))


def number_mechanism_from_dict(data: dict[str, Any]) -> NumberMechanism:
    """The inverse of :meth:`NumberMechanism.to_dict`."""
    design = data.get("design")
    if design not in NUMBER_MECHANISMS:
        raise ValueError(f"unknown number mechanism {design!r}; known: {', '.join(NUMBER_MECHANISMS)}")
    return NUMBER_MECHANISMS[design](data["epsilon"])
