"""Mechanisms whose reports are numbers: a bounded number randomized in the respondent's browser.

A sensitive number (drinks last week, days skipped, undeclared income) is asked with a known range
``[low, high]``. The browser clamps the true number to the range, maps it to ``t ∈ [-1, 1]``
(``t = (2x − low − high)/(high − low)``), draws a report ``y`` with ``E[y | t] = t`` from the
mechanism, and rounds it *at random* to a grid (below). The report in the question's units,
``low + (high − low)(y + 1)/2``, has the clamped true number as its expectation, so the mean of the
reports is an unbiased estimate of the population mean.

The mechanisms, each ε-locally differentially private by its definition (the ratio of the report's
density under any two true numbers is at most ``e^ε``, attained; tests/test_numeric_mechanisms.py):

- :class:`LaplaceNumber`: ``y = t + Laplace(2/ε)`` (the seed documents' mechanism for numeric
  queries: sensitivity 2 on [-1, 1]). Unbounded reports; variance ``8/ε²`` whatever ``t``.
- :class:`DuchiNumber`: ``y = ±C`` with ``C = (e^ε + 1)/(e^ε − 1)`` and
  ``P(y = C) = 1/2 + t/(2C)`` (Duchi, Jordan & Wainwright 2018). Variance ``C² − t²``.
- :class:`PiecewiseNumber`: ``y`` has density ``e^ε·d`` on a window ``[l(t), l(t) + C − 1]``
  around ``t`` and ``d`` on the rest of ``[−C, C]``, ``C = (e^{ε/2} + 1)/(e^{ε/2} − 1)`` (Wang et
  al. 2019, "piecewise mechanism"). Variance ``t²/(e^{ε/2} − 1) + (e^{ε/2} + 3)/(3(e^{ε/2} − 1)²)``.
- :class:`HybridNumber`: the piecewise mechanism with probability ``α = 1 − e^{−ε/2}`` and Duchi's
  otherwise when ``ε > ε* ≈ 0.6094``, Duchi's alone below (Wang et al. 2019, "hybrid mechanism"). Its
  variance is the same for every ``t``, and its worst case is at or below the others' at every ε.

:func:`default_number_mechanism` picks the implemented mechanism with the smallest worst-case
variance at the given ε, by computing it, so a mechanism added to :data:`NUMBER_MECHANISMS` is
chosen where it is better without anyone editing a rule.

**Reports travel as whole numbers.** The report ``y`` is rounded to the grid ``origin + step·j``
(``j`` whole) by *randomized* rounding: up with probability equal to the fraction of a step it lies
above the lower point. That keeps the expectation (so the estimate stays unbiased), adds a variance
of at most ``step²/4`` (a millionth of the smallest mechanism variance at :data:`GRID_STEPS` = 2,000),
and is post-processing, so ε is unchanged. In exchange a report is a code the server checks against
a finite domain and counts like any other answer: the mean and its interval come from the running
tallies, one count per code (:mod:`survey.privacy.bounded`). For the bounded mechanisms the grid has
``GRID_STEPS + 1`` points from ``−C`` to ``C`` (Duchi's two reports are its ends, exactly); for
Laplace, whose reports are unbounded, the grid has the same step and no end.

**Every draw is a function of uniforms.** ``draw(t, u)`` maps ``uniforms`` numbers in [0, 1) to a
report by inverse CDFs, and the browser's sampler (``static/js/respond/numbers.js``) does the same
arithmetic on the same constants (``sampler()`` carries them, computed here: the page holds no
privacy formula), so a test feeds both the same random words and compares their reports.

    >>> m = HybridNumber(1.0)
    >>> round(float(m.variance(0.0)), 4), round(m.worst_variance, 4), round(LaplaceNumber(1.0).worst_variance, 1)
    (4.289, 4.289, 8.0)
    >>> default_number_mechanism(1.0).design
    'hybrid'
    >>> m = PiecewiseNumber(2.0, low=0, high=10)    # the highest code, in the question's units
    >>> m.reports, round(float(m.value_of(m.reports.high)), 4)
    (WholeCodes(low=0, high=2000), 15.8198)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from scipy import stats
from scipy.optimize import brentq

from .bounded import MeanInterval, mean_interval

__all__ = [
    "GRID_STEPS",
    "HYBRID_THRESHOLD",
    "NUMBER_MECHANISMS",
    "DuchiNumber",
    "HybridNumber",
    "LaplaceNumber",
    "NumberMechanism",
    "PiecewiseNumber",
    "WholeCodes",
    "default_number_mechanism",
    "number_mechanism_from_dict",
]

#: Steps of the report grid of a bounded mechanism (its ``2C`` divided into this many).
GRID_STEPS = 2000
#: Laplace codes are refused beyond this many steps from the range: a report that far out has
#: probability below ``e^{−10^6}`` at any ε the builder allows.
LAPLACE_CODE_LIMIT = 10**9


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


def _check_epsilon(epsilon: Any) -> float:
    try:
        epsilon = float(epsilon)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"epsilon must be a number, got {epsilon!r:.40}") from None
    if not math.isfinite(epsilon) or epsilon <= 0:
        raise ValueError(f"epsilon must be a finite number above 0, got {epsilon!r}")
    return epsilon


@dataclass(frozen=True)
class WholeCodes:
    """Reports that are whole numbers from ``low`` to ``high`` (the codes of a report grid)."""

    low: int
    high: int

    def contains(self, report: Any) -> bool:
        return isinstance(report, int) and not isinstance(report, bool) and self.low <= report <= self.high


@dataclass(frozen=True)
class NumberMechanism:
    """A mechanism for a number in ``[low, high]``; on ``t ∈ [-1, 1]`` its report has ``E[y | t] = t``.

    Subclasses give the report's law (``draw`` from uniforms, and a ``density`` or probabilities
    for the tests), its variance and its bound; the rest (the grid, the codes, the sampler, the
    estimate) follows.
    """

    epsilon: float
    low: float = -1.0
    high: float = 1.0
    design: ClassVar[str] = ""
    #: How many uniforms one draw of ``y`` takes (the rounding to the grid takes one more).
    uniforms: ClassVar[int] = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _check_epsilon(self.epsilon))
        low, high = float(self.low), float(self.high)
        if not (math.isfinite(low) and math.isfinite(high)) or not low < high:
            raise ValueError(f"a range needs finite low < high, got {self.low!r} to {self.high!r}")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)

    # --- the law of y on [-1, 1] -------------------------------------------------------------
    @property
    def bound(self) -> float:
        """The largest ``|y|`` a report can have (``inf`` for Laplace)."""
        raise NotImplementedError

    def draw(self, t: Any, u: Any) -> np.ndarray:
        """``y`` for true values ``t`` from uniforms ``u`` (shape ``t.shape + (uniforms,)``)."""
        raise NotImplementedError

    def variance(self, t: Any) -> np.ndarray:
        """``Var[y | t]``: what one respondent with true value ``t`` adds, before rounding."""
        raise NotImplementedError

    @property
    def worst_variance(self) -> float:
        """``max_t Var[y | t]``: every variance here is an even quadratic in ``t``, so its largest
        value on [-1, 1] is at ``t = 0`` or ``t = ±1``."""
        return float(max(self.variance(0.0), self.variance(1.0)))

    def sample(self, t: Any, rng: np.random.Generator) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        return self.draw(t, rng.random((*t.shape, self.uniforms)))

    # --- the range ----------------------------------------------------------------------------
    @property
    def half(self) -> float:
        return (self.high - self.low) / 2

    @property
    def middle(self) -> float:
        return (self.high + self.low) / 2

    def normalize(self, x: Any) -> np.ndarray:
        """``x`` clamped to the range and mapped to [-1, 1]."""
        return (np.clip(np.asarray(x, dtype=float), self.low, self.high) - self.middle) / self.half

    # --- the grid and the codes ---------------------------------------------------------------
    @property
    def origin(self) -> float:
        """``y`` of code 0."""
        return -self.bound

    @property
    def step(self) -> float:
        return 2 * self.bound / GRID_STEPS

    @property
    def reports(self) -> WholeCodes:
        """The codes a submission may carry."""
        return WholeCodes(0, GRID_STEPS)

    def to_code(self, y: Any, u: Any) -> np.ndarray:
        """``y`` rounded at random to the grid (up with the probability of its fraction of a step)."""
        position = (np.asarray(y, dtype=float) - self.origin) / self.step
        below = np.floor(position)
        return (below + (np.asarray(u) < position - below)).astype(np.int64)

    def value_of(self, code: Any) -> np.ndarray:
        """A code's report in the question's units."""
        return self.middle + self.half * (self.origin + self.step * np.asarray(code, dtype=float))

    def randomize(self, x: Any, rng: np.random.Generator) -> np.ndarray:
        """Codes for true numbers ``x``, drawn as the browser draws them."""
        t = self.normalize(x)
        u = rng.random((*t.shape, self.uniforms + 1))
        return self.to_code(self.draw(t, u[..., :-1]), u[..., -1])

    # --- what the app needs -------------------------------------------------------------------
    def constants(self) -> dict[str, float]:
        """The numbers the browser's draw uses, beyond ``t`` and the uniforms."""
        raise NotImplementedError

    def sampler(self) -> dict[str, Any]:
        """What the browser needs to draw a code: the range, the grid and the draw's constants."""
        return {
            "sampler": self.design,
            "low": self.low,
            "high": self.high,
            "origin": self.origin,
            "step": self.step,
            **self.constants(),
        }

    def to_dict(self) -> dict[str, Any]:
        return {"design": self.design, "epsilon": self.epsilon, "low": self.low, "high": self.high}

    def estimate(
        self, counts: Mapping[int, float], level: float = 0.95, *, tuned_for: int | None = None
    ) -> MeanInterval:
        """The population mean from the tallies of codes, with its betting interval (the reports
        are bounded by the grid's ends, so the interval holds whatever the true numbers); with
        ``tuned_for`` the live interval, valid at every look (:func:`survey.privacy.bounded.mean_interval`)."""
        codes = np.array(sorted(counts), dtype=np.int64)
        weights = np.array([counts[c] for c in codes], dtype=float)
        ends = self.value_of([0, GRID_STEPS])
        return mean_interval(self.value_of(codes), weights, float(ends[0]), float(ends[1]), level, tuned_for=tuned_for)


@dataclass(frozen=True)
class LaplaceNumber(NumberMechanism):
    design: ClassVar[str] = "laplace"

    @property
    def scale(self) -> float:
        return 2.0 / self.epsilon

    @property
    def bound(self) -> float:
        return math.inf

    @property
    def origin(self) -> float:
        return -1.0

    @property
    def step(self) -> float:
        return 2.0 / GRID_STEPS

    @property
    def reports(self) -> WholeCodes:
        return WholeCodes(-LAPLACE_CODE_LIMIT, GRID_STEPS + LAPLACE_CODE_LIMIT)

    def draw(self, t: Any, u: Any) -> np.ndarray:
        # the inverse CDF: y = t − b·sign(u − ½)·ln(1 − 2|u − ½|); u = 0 (one chance in 2^53)
        # would give −∞, so it is taken as the smallest uniform above 0
        t = np.asarray(t, dtype=float)
        u = np.maximum(np.asarray(u, dtype=float)[..., 0], 2.0**-53)
        centred = u - 0.5
        return t - self.scale * np.sign(centred) * np.log(1 - 2 * np.abs(centred))

    def density(self, y: Any, t: Any) -> np.ndarray:
        return np.exp(-np.abs(np.asarray(y, dtype=float) - t) / self.scale) / (2 * self.scale)

    def variance(self, t: Any) -> np.ndarray:
        return np.full(np.shape(t), 2 * self.scale**2)

    def constants(self) -> dict[str, float]:
        return {"scale": self.scale}

    def estimate(self, counts: Mapping[int, float], level: float = 0.95) -> MeanInterval:
        """Laplace's reports have no bound, so no interval holds for every distribution: this is the
        normal interval from the reports' variance (``method = "normal"``), shown beside the bounded
        mechanisms' in benchmarks/number_intervals.md."""
        codes = np.array(sorted(counts), dtype=np.int64)
        weights = np.array([counts[c] for c in codes], dtype=float)
        values = self.value_of(codes)
        n = round(float(weights.sum()))
        if n < 2:
            raise ValueError("the normal interval needs at least two reports")
        mean = float(values @ weights / n)
        sd = math.sqrt(float(weights @ (values - mean) ** 2) / (n - 1))
        half = float(stats.norm.ppf(0.5 + level / 2)) * sd / math.sqrt(n)
        return MeanInterval(n, mean, mean - half, mean + half, level, n, method="normal")


@dataclass(frozen=True)
class DuchiNumber(NumberMechanism):
    design: ClassVar[str] = "duchi"

    @property
    def bound(self) -> float:
        return 1.0 / math.tanh(self.epsilon / 2)  # (e^ε + 1)/(e^ε − 1)

    def probability_high(self, t: Any) -> np.ndarray:
        """``P(y = +C | t)``."""
        return 0.5 + np.asarray(t, dtype=float) / (2 * self.bound)

    def draw(self, t: Any, u: Any) -> np.ndarray:
        u = np.asarray(u, dtype=float)[..., 0]
        return np.where(u < self.probability_high(t), self.bound, -self.bound)

    def variance(self, t: Any) -> np.ndarray:
        return self.bound**2 - np.asarray(t, dtype=float) ** 2

    def constants(self) -> dict[str, float]:
        return {"bound": self.bound}


@dataclass(frozen=True)
class PiecewiseNumber(NumberMechanism):
    design: ClassVar[str] = "piecewise"

    @property
    def bound(self) -> float:
        return 1.0 / math.tanh(self.epsilon / 4)  # (e^{ε/2} + 1)/(e^{ε/2} − 1)

    @property
    def inside_density(self) -> float:
        """The density on the window: its probability ``e^{ε/2}/(e^{ε/2} + 1)`` over its width ``C − 1``."""
        half_exp = math.exp(self.epsilon / 2)
        return half_exp / (half_exp + 1) / (self.bound - 1)

    @property
    def outside_density(self) -> float:
        return self.inside_density / math.exp(self.epsilon)

    def window(self, t: Any) -> tuple[np.ndarray, np.ndarray]:
        """``[l(t), r(t)]``, the window of width ``C − 1`` reported with the higher density."""
        c = self.bound
        left = (c + 1) / 2 * np.asarray(t, dtype=float) - (c - 1) / 2
        return left, left + (c - 1)

    def density(self, y: Any, t: Any) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        left, right = self.window(t)
        inside = (left <= y) & (y <= right)
        outside = (np.abs(y) <= self.bound) & ~inside
        return np.where(inside, self.inside_density, np.where(outside, self.outside_density, 0.0))

    def draw(self, t: Any, u: Any) -> np.ndarray:
        # the inverse of the CDF, which is linear on [−C, l), [l, r] and (r, C]
        c, inside, outside = self.bound, self.inside_density, self.outside_density
        u = np.asarray(u, dtype=float)[..., 0]
        left, right = self.window(t)
        before = outside * (left + c)  # P(y < l)
        through = before + inside * (c - 1)  # P(y ≤ r)
        y = np.where(
            u < before,
            -c + u / outside,
            np.where(u < through, left + (u - before) / inside, right + (u - through) / outside),
        )
        return np.clip(y, -c, c)

    def variance(self, t: Any) -> np.ndarray:
        e = math.exp(self.epsilon / 2)
        return np.asarray(t, dtype=float) ** 2 / (e - 1) + (e + 3) / (3 * (e - 1) ** 2)

    def constants(self) -> dict[str, float]:
        return {"bound": self.bound, "inside_density": self.inside_density, "outside_density": self.outside_density}


@dataclass(frozen=True)
class HybridNumber(NumberMechanism):
    design: ClassVar[str] = "hybrid"
    uniforms: ClassVar[int] = 2
    piecewise: PiecewiseNumber = field(init=False, repr=False, compare=False)
    duchi: DuchiNumber = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "piecewise", PiecewiseNumber(self.epsilon, self.low, self.high))
        object.__setattr__(self, "duchi", DuchiNumber(self.epsilon, self.low, self.high))

    @property
    def piecewise_share(self) -> float:
        """``α``: how often the piecewise mechanism reports (else Duchi's)."""
        return -math.expm1(-self.epsilon / 2) if self.epsilon > HYBRID_THRESHOLD else 0.0

    @property
    def bound(self) -> float:
        return self.piecewise.bound if self.piecewise_share > 0 else self.duchi.bound

    def draw(self, t: Any, u: Any) -> np.ndarray:
        u = np.asarray(u, dtype=float)
        part = u[..., 1:2]
        return np.where(u[..., 0] < self.piecewise_share, self.piecewise.draw(t, part), self.duchi.draw(t, part))

    def variance(self, t: Any) -> np.ndarray:
        # E[y | t] = t under both parts, so the variance is the mixture of theirs
        a = self.piecewise_share
        return a * self.piecewise.variance(t) + (1 - a) * self.duchi.variance(t)

    def constants(self) -> dict[str, Any]:
        return {
            "piecewise_share": self.piecewise_share,
            "piecewise": self.piecewise.constants(),
            "duchi": self.duchi.constants(),
        }


#: Every implemented number mechanism, by design id.
NUMBER_MECHANISMS: dict[str, type[NumberMechanism]] = {
    m.design: m for m in (LaplaceNumber, DuchiNumber, PiecewiseNumber, HybridNumber)
}


def default_number_mechanism(
    epsilon: float, low: float = -1.0, high: float = 1.0, candidates: Sequence[str] | None = None
) -> NumberMechanism:
    """The implemented mechanism with the smallest worst-case variance of the mean at ``epsilon``
    (ties to the hybrid, which equals Duchi's below the threshold)."""
    built = [NUMBER_MECHANISMS[d](epsilon, low, high) for d in (candidates or NUMBER_MECHANISMS)]
    return min(built, key=lambda m: (m.worst_variance, m.design != "hybrid"))


def number_mechanism_from_dict(data: Mapping[str, Any]) -> NumberMechanism:
    """The inverse of :meth:`NumberMechanism.to_dict`."""
    design = data.get("design")
    if design not in NUMBER_MECHANISMS:
        raise ValueError(f"unknown number mechanism {design!r}; known: {', '.join(NUMBER_MECHANISMS)}")
    return NUMBER_MECHANISMS[design](data["epsilon"], data.get("low", -1.0), data.get("high", 1.0))
