"""Live intervals: confidence sequences that stay valid however often the results are looked at.

A fixed-n interval promises 95% for one look at one planned sample size. A results page watched as
answers arrive is looked at after every answer, and a researcher stops when the interval looks
narrow enough; checked that way over 10,000 answers, a 95% Wilson interval misses the truth at
some moment in more than half of all surveys (``benchmarks/live.md``). A *confidence sequence* is
a sequence of intervals that contain the truth at every moment at once with probability at least
``level``, so it can be checked after every answer, and the survey stopped whenever it is precise
enough, without losing its promise (Howard, Ramdas, McAuliffe and Sekhon, "Time-uniform, nonparametric, nonasymptotic
confidence sequences", Ann. Statist. 2021; for randomized response, Waudby-Smith, Wu and Ramdas,
"Nonparametric extensions of randomized response for private confidence sets", ICML 2023). The
price is width: about 1.5 times the fixed-n interval at the sample size it is tuned for.

Everything here works from the counts alone (the running tallies), so the live interval costs no
more to show than the fixed-n one::

    >>> from survey.privacy import CoinFlip
    >>> live = confidence_sequence(CoinFlip(0.5, 0.5), [400, 600])
    >>> [round(float(x), 4) for x in (live.low[0], live.high[0])]
    [0.2072, 0.395]

(the fixed-n interval for the same counts is [0.2401, 0.3614]).

**The martingale.** For a category whose report rate is affine in its share, ``λ = a·π + b``, each
report is a Bernoulli(λ) draw: 1 when the respondent reported the category. After ``t`` reports of
which ``S`` were the category, for every candidate rate ``λ``

    M_t(λ) = ∫ Π_i [λ'^{X_i} (1 − λ')^{1 − X_i}] / [λ^{X_i} (1 − λ)^{1 − X_i}] dBeta(λ'; α₀, β₀)
           = [B(α₀ + S, β₀ + t − S) / B(α₀, β₀)] / [λ^S (1 − λ)^{t − S}],

the likelihood ratio of "the rate is some λ' drawn from the prior" against "the rate is λ". Under
the true λ it is a non-negative martingale starting at 1 (each factor has expectation 1, and a
mixture of martingales with a prior fixed in advance is one), so by Ville's inequality
``P(∃t: M_t(λ) ≥ 1/α) ≤ α``: the set ``{λ : M_t(λ) < 1/α}`` holds the truth at every ``t`` at once
with probability at least ``1 − α``. It is mapped to shares through ``π = (λ − b)/a`` and cut to
[0, 1], as the fixed-n interval is.

**The prior** (see :class:`MixturePrior`): Beta with mean the candidate rate λ itself and
concentration κ = α₀ + β₀ = ``t*/(2·log(1/α) + log(1 + 2·log(1/α))) − 1``, which makes the set
narrowest near ``t*`` respondents (Howard et al.'s tuning of the normal mixture, §3.5, carried to
the conjugate beta as their ``confseq`` package does for Bernoulli data). The default
``t* = 1000`` sits in the middle of the sizes surveys have (500–2,000); the prior is a constant
fixed before any data, which the promise requires. Centring it at the candidate rather than at
one fixed point keeps the width the same near a share of 1% as near 50%: a prior centred at the
design's midpoint and as concentrated would widen the set for shares far from it, and one spread
wide enough to cover the whole range is tuned for small samples (``benchmarks/live.md`` shows
both). Each candidate having its own prior is fine: only the martingale at the true rate is used
in the argument above.

**Why the set is an interval and holds the estimate.** With the prior centred at λ,

    log M_t(λ) = Σ_{j<S} log(κ + j/λ) + Σ_{j<t−S} log(κ + j/(1 − λ)) − Σ_{j<t} log(κ + j),

a sum of convex functions of λ, so ``{M_t < 1/α}`` is an interval whose two ends are found by a
vectorized Newton search (in log λ; no loop over t, every category of a question at once). The
mixture of likelihoods is at most the largest likelihood, so ``M_t(λ̂) ≤ 1 < 1/α`` at the observed
rate ``λ̂ = S/t``: the interval always holds λ̂, and after the map and the cut it always holds the
point estimate ``(λ̂ − b)/a`` clipped to [0, 1]. When the whole interval lies outside the rates
the design can produce ([b, a + b]; it has probability at most α), the degenerate interval at that
clipped estimate is returned: adding points never lowers coverage. (For three or more categories the
consistent estimate, ``Estimate.proportions``, can differ from the clipped one; it was inside the
live interval in every simulated survey, but only the clipped estimate is guaranteed.)

**Custom matrices.** A category whose report rate is not affine in its share gets the projected
interval: a confidence sequence for every reported share at level ``1 − α/k`` (so that all hold at
once, by the union bound), and the range of the share over the populations whose reported shares
lie in that box (two linear programs). It is simultaneous by construction.

**Several categories at once** (``simultaneous=True``): Bonferroni, each piece at ``1 − α/k``; for
two categories one interval determines the other and nothing is divided.

**Testing a threshold** ("is the share above 10%?"): :func:`anytime_test` gives an e-value and an
anytime-valid p-value from the same martingale, mixed over the alternative only.

**Keeping history.** The intervals need only the current tallies. A page that keeps the earlier
ones may show their running intersection instead: still valid (on the event of probability
``level`` every one of them holds the truth), and never wider.

**What it assumes.** Respondents are a random sample of the population, answering in random
order, and each randomizes independently; the promise is about the share in that population. A
survey whose early responders differ from its late ones is estimating a moving target, live or not.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from .estimation import _check_level, check_counts
from .mechanisms import Mechanism

__all__ = [
    "TARGET_RESPONDENTS",
    "AnytimeTest",
    "ConfidenceSequence",
    "MixturePrior",
    "anytime_test",
    "confidence_sequence",
    "log_mixture_martingale",
]

#: The sample size the default prior makes the live interval narrowest at (surveys have 500–2,000).
TARGET_RESPONDENTS = 1000
#: The level the anytime test's default prior is tuned for (the test itself has no level).
TEST_LEVEL = 0.95

# Names of the intervals, as recorded in ``ConfidenceSequence.methods``.
MIXTURE_MAPPED = "mixture-cs-mapped"
MIXTURE_PROJECTED = "mixture-cs-projected"
BONFERRONI = "bonferroni-"

#: Newton's method stops when a step moves log λ (the bound, relatively) by less than this.
_TOLERANCE = 1e-11
_MAX_STEPS = 200


@dataclass(frozen=True)
class MixturePrior:
    """The beta prior of the mixture martingale, which decides at which sample size the set is tightest.

    ``concentration`` is κ = α₀ + β₀. With ``centre=None`` (the default and the recommended
    choice) the prior for a candidate rate λ is Beta(κλ, κ(1 − λ)), centred at the candidate; with
    a number ``c`` it is Beta(κc, κ(1 − c)) for every candidate, the plain conjugate mixture with
    one fixed prior. ``respondents`` records the sample size the prior was tuned for, if it was.

    :meth:`tuned` follows Howard et al. (2021, §3.5): near a rate λ the log-likelihood ratio is
    that of a Gaussian with variance ``t·λ(1 − λ)``, and the Gaussian mixture with prior precision
    ρ crosses ``log(1/α)`` at the smallest deviation at intrinsic time ``v`` when
    ``ρ = v / (2·log(1/α) + log(1 + 2·log(1/α)))``. A Beta(κλ, κ(1 − λ)) prior has variance
    ``λ(1 − λ)/(κ + 1)``, i.e. precision ``ρ = (κ + 1)·λ(1 − λ)`` on the same scale, so the rate λ
    drops out: ``κ + 1 = t*/(2·log(1/α) + log(1 + 2·log(1/α)))`` tunes the set for ``t*``
    respondents at every rate at once (κ = 125 for t* = 1000 at 95%).

        >>> prior = MixturePrior.tuned(1000, 0.95)
        >>> round(prior.concentration, 2)
        125.01
    """

    concentration: float
    centre: float | None = None
    respondents: float | None = None

    def __post_init__(self) -> None:
        kappa = float(self.concentration)
        if not math.isfinite(kappa) or kappa <= 0:
            raise ValueError(f"the prior's concentration must be a positive number, got {self.concentration!r}")
        if self.centre is not None and not 0.0 < float(self.centre) < 1.0:
            raise ValueError(f"the prior's centre must lie strictly between 0 and 1, got {self.centre!r}")

    @classmethod
    def tuned(cls, respondents: float = TARGET_RESPONDENTS, level: float = 0.95) -> MixturePrior:
        """The candidate-centred prior that makes the ``level`` set narrowest near ``respondents``."""
        return _tuned(float(respondents), _check_level(level))

    def to_dict(self) -> dict[str, Any]:
        return {"concentration": self.concentration, "centre": self.centre, "respondents": self.respondents}


@functools.lru_cache(maxsize=64)
def _tuned(respondents: float, level: float) -> MixturePrior:
    if not math.isfinite(respondents) or respondents <= 0:
        raise ValueError(f"respondents must be a positive number, got {respondents!r}")
    log_alpha = math.log(1.0 / (1.0 - level))
    kappa = respondents / (2.0 * log_alpha + math.log1p(2.0 * log_alpha)) - 1.0
    # for fewer than about twelve respondents the rule gives κ below 0.5 (or below 0): keep 0.5
    return MixturePrior(max(kappa, 0.5), None, respondents)


def _resolve_prior(prior: MixturePrior | float | None, level: float) -> MixturePrior:
    if prior is None:
        return MixturePrior.tuned(TARGET_RESPONDENTS, level)
    if isinstance(prior, MixturePrior):
        return prior
    if isinstance(prior, (int, float, np.integer, np.floating)) and not isinstance(prior, bool):
        return MixturePrior.tuned(float(prior), level)
    raise ValueError("prior must be a MixturePrior, a number of respondents to tune for, or None")


# -- the martingale ----------------------------------------------------------------------------------


def log_mixture_martingale(reported: Any, t: Any, rate: Any, prior: MixturePrior | None = None) -> np.ndarray:
    """``log M_t(λ)``: the log of the beta-mixture martingale after ``reported`` of ``t`` reports (arrays broadcast).

    ``rate`` is the candidate report rate λ in (0, 1). The live interval is the set of rates where
    this is below ``log(1/α)``; the anytime test's two-sided e-value is its exponential. With the
    default prior (tuned for 1,000 respondents at 95%)::

        >>> round(float(log_mixture_martingale(40, 100, 0.3)), 5)
        0.69963
        >>> float(log_mixture_martingale(0, 0, 0.3))   # nothing seen yet: M_0 = 1
        0.0
    """
    prior = prior if prior is not None else MixturePrior.tuned(TARGET_RESPONDENTS, 0.95)
    s = np.asarray(reported, dtype=float)
    t = np.asarray(t, dtype=float)
    lam = np.asarray(rate, dtype=float)
    if not np.all((lam > 0.0) & (lam < 1.0)):
        raise ValueError("candidate report rates must lie strictly between 0 and 1")
    if not np.all((s >= 0.0) & (s <= t)):
        raise ValueError("reported counts must lie between 0 and the number of reports")
    return _log_m(s, t - s, lam, prior)


def _log_m(s: np.ndarray, f: np.ndarray, lam: np.ndarray, prior: MixturePrior) -> np.ndarray:
    kappa = prior.concentration
    if prior.centre is None:
        a0, b0 = kappa * lam, kappa * (1.0 - lam)
        # Σ_{j<S} log(κλ + j) − S log λ, and the same for the other reports; lgamma(κ) − lgamma(κ + t)
        # is the normalizer B(α₀, β₀) and the denominator's Γ(κ + t) together
        out = special.gammaln(a0 + s) - special.gammaln(a0) + special.gammaln(b0 + f) - special.gammaln(b0)
        out = out + special.gammaln(kappa) - special.gammaln(kappa + s + f)
    else:
        a0, b0 = kappa * prior.centre, kappa * (1.0 - prior.centre)
        out = special.betaln(a0 + s, b0 + f) - special.betaln(a0, b0)
    # x·log(y) with 0·log 0 = 0: a rate of 0 or 1 is possible when nothing contradicts it
    return out - special.xlogy(s, lam) - special.xlog1py(f, -lam)


def _log_m_and_slope(
    s: np.ndarray, f: np.ndarray, lam: np.ndarray, rest: np.ndarray, prior: MixturePrior, mirrored: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``log M_t(λ)`` and ``λ·d log M_t/dλ`` (its slope in log λ), sharing the work; ``rest`` is 1 − λ.

    ``mirrored`` marks rows that are the mirror image ``(S, λ) → (t − S, 1 − λ)`` of the question
    asked, which leaves a centred prior unchanged and moves a fixed one to ``1 − centre``.
    """
    kappa = prior.concentration
    slope = f * lam / rest - s
    if prior.centre is None:
        a0, b0 = kappa * lam, kappa * rest
        a1, b1 = a0 + s, b0 + f
        value = special.gammaln(a1) - special.gammaln(a0) + special.gammaln(b1) - special.gammaln(b0)
        value += special.gammaln(kappa) - special.gammaln(kappa + s + f)
        slope += a0 * (special.digamma(a1) - special.digamma(a0) - special.digamma(b1) + special.digamma(b0))
    else:
        centre = np.where(mirrored, 1.0 - prior.centre, prior.centre)
        a0, b0 = kappa * centre, kappa * (1.0 - centre)
        value = special.betaln(a0 + s, b0 + f) - special.betaln(a0, b0)
    return value - special.xlogy(s, lam) - special.xlogy(f, rest), slope


def _rate_interval(
    reported: np.ndarray, t: np.ndarray, log_threshold: float, prior: MixturePrior
) -> tuple[np.ndarray, np.ndarray]:
    """The closed interval of rates λ with ``log M_t(λ) ≤ log_threshold`` (arrays broadcast).

    ``log M_t`` is convex in λ with its minimum (at most 0) at ``λ̂ = S/t``, so each end is the one
    root on its side. An end is 0 exactly when ``log M_t`` stays below the threshold as λ → 0: for
    the centred prior when S ≤ 1 (its limit is then 0 or ``log(κ/(κ + t − 1))``), for a fixed prior
    when S = 0; likewise at 1. The upper end is the lower end of the mirror image
    ``(S, λ) → (t − S, 1 − λ)``, so only lower ends are solved, all in one vectorized loop.
    """
    s, t = np.broadcast_arrays(np.asarray(reported, dtype=float), np.asarray(t, dtype=float))
    f = t - s
    seen = t > 0
    edge = 1.0 if prior.centre is None else 0.0  # this many reports of a kind still leave that end open
    low, high = np.zeros(s.shape), np.ones(s.shape)
    lower = np.flatnonzero(seen & (s > edge))
    upper = np.flatnonzero(seen & (f > edge))
    if lower.size + upper.size == 0:
        return low, high
    mirrored = np.concatenate([np.zeros(lower.size, dtype=bool), np.ones(upper.size, dtype=bool)])
    hits = np.concatenate([s.flat[lower], f.flat[upper]])
    misses = np.concatenate([f.flat[lower], s.flat[upper]])
    lam, rest = _lower_ends(hits, misses, mirrored, log_threshold, prior)
    low.flat[lower] = lam[: lower.size]
    high.flat[upper] = rest[lower.size :]
    return low, high


def _lower_ends(
    s: np.ndarray, f: np.ndarray, mirrored: np.ndarray, log_threshold: float, prior: MixturePrior
) -> tuple[np.ndarray, np.ndarray]:
    """The root of ``log M_t(λ) = log_threshold`` below ``λ̂ = S/t``, as ``(λ, 1 − λ)``.

    Newton's method in ``u = log λ``: ``log M_t`` is convex in u too (each term
    ``log(κ + j·e^{−u})`` is, and ``log(κ + j/(1 − e^u))`` is because ``h = 1/(1 − e^u)`` has
    ``h·h'' ≥ h'²``), and nearly linear where it matters (``(S − 1)·log(1/λ)`` as λ → 0), so from
    the outside it converges monotonically (the tangent lies below the function) and from the
    inside one step overshoots to the outside; steps that would leave the bracket are replaced by
    a bisection, or by a step of e in λ while no outside point is known. The first guess is the
    Gaussian mixture's boundary (Howard et al. 2021, eq. 14). The outside iterate is returned, so
    rounding can only widen the interval.
    """
    t = s + f
    share = s / t
    spread = np.maximum(share * (1.0 - share), 1.0 / t)
    rho = (prior.concentration + 1.0) * spread
    half = np.sqrt((t * spread + rho) * (np.log1p(t * spread / rho) + 2.0 * log_threshold)) / t
    inner = np.log(share)  # log M is below the threshold here
    outer = np.full(s.size, -np.inf)  # and above it here
    u = np.where(share - half > 0, np.log(np.maximum(share - half, 1e-300)), inner - 1.0)
    result = np.empty(s.size)
    index = np.arange(s.size)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(_MAX_STEPS):
            value, slope = _log_m_and_slope(s, f, np.exp(u), -np.expm1(u), prior, mirrored)
            gap = value - log_threshold
            outside = gap > 0
            inner = np.where(outside, inner, u)
            outer = np.where(outside, u, outer)
            step = gap / slope
            proposal = u - step
            proposal = np.where(
                (outer < proposal) & (proposal < inner),
                proposal,
                np.where(np.isfinite(outer), (outer + inner) / 2.0, np.minimum(u, inner) - 1.0),
            )
            done = (outside & (np.abs(step) <= _TOLERANCE)) | (inner - outer <= _TOLERANCE)
            if done.any():
                result[index[done]] = outer[done]
                keep = ~done
                if not keep.any():
                    break
                index, s, f, mirrored, inner, outer, proposal = (
                    a[keep] for a in (index, s, f, mirrored, inner, outer, proposal)
                )
            u = proposal
        else:
            result[index] = outer  # not reached in practice; the outside end (or 0) is safe
    return np.exp(result), -np.expm1(result)


# -- the live interval ------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ConfidenceSequence:
    """Live intervals for every category of one question (or of a stack of surveys of it).

    ``low`` and ``high`` have the shape of the counts: they hold the true share of each category
    at every moment at once with probability at least ``level`` (each category on its own, or all
    at once when ``simultaneous``). Check them after every answer if you like, and stop whenever
    they are narrow enough: that is what they are for. ``methods`` names each category's
    construction (``"mixture-cs-mapped"`` or ``"mixture-cs-projected"``, with the prefix
    ``"bonferroni-"`` for simultaneous pieces), ``prior`` is the mixture's prior (for a custom
    matrix, the prior of its box of reported shares), ``t`` the number of reports.
    """

    labels: tuple[str, ...]
    low: np.ndarray
    high: np.ndarray
    t: int | np.ndarray
    level: float
    simultaneous: bool
    methods: tuple[str, ...]
    prior: MixturePrior

    @property
    def half_width(self) -> np.ndarray:
        """Half the width of each interval: what a target margin ("± 5 points") is compared with."""
        return (self.high - self.low) / 2.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary of one question's live intervals."""
        if self.low.ndim != 1:
            raise ValueError("to_dict describes one survey; index the stack first")
        return {
            "t": int(self.t),
            "level": self.level,
            "simultaneous": self.simultaneous,
            "prior": self.prior.to_dict(),
            "categories": [
                {
                    "label": label,
                    "low": float(self.low[v]),
                    "high": float(self.high[v]),
                    "half_width": float(self.half_width[v]),
                    "method": self.methods[v],
                }
                for v, label in enumerate(self.labels)
            ],
        }

    def __repr__(self) -> str:
        if self.low.ndim != 1:
            return f"ConfidenceSequence(<{self.low.shape[0]} surveys>, level={self.level})"
        parts = ", ".join(
            f"{label}: [{lo:.3f}, {hi:.3f}]" for label, lo, hi in zip(self.labels, self.low, self.high, strict=True)
        )
        return f"ConfidenceSequence(t={self.t}, level={self.level}, {parts})"


def _map_to_shares(
    lam_low: np.ndarray, lam_high: np.ndarray, share_hat: np.ndarray, a: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Intervals of rates mapped to shares ``(λ − b)/a``, cut to [0, 1]; empty cuts become the clipped estimate."""
    one, other = (lam_low - b) / a, (lam_high - b) / a
    low, high = np.where(a > 0, one, other), np.where(a > 0, other, one)
    low, high = np.maximum(low, 0.0), np.minimum(high, 1.0)
    point = np.clip(share_hat, 0.0, 1.0)
    empty = low > high
    return np.where(empty, point, low), np.where(empty, point, high)


def confidence_sequence(
    mechanism: Mechanism,
    counts: Any,
    level: float = 0.95,
    simultaneous: bool = False,
    prior: MixturePrior | float | None = None,
) -> ConfidenceSequence:
    """Live (anytime-valid) intervals for every category's share, from the reported counts alone.

    ``counts`` are the running tallies, in ``mechanism.labels`` order (stacks of shape
    ``(surveys, k)`` work too). The intervals hold the true shares at every moment of the survey
    at once with probability at least ``level``, however often they are looked at and whenever
    the survey is stopped; see the module's documentation for the construction. ``simultaneous``
    makes them hold for all categories at once (Bonferroni, ``1 − (1 − level)/k`` per category,
    undivided for two categories). ``prior`` is a :class:`MixturePrior`, or a number of
    respondents to tune it for (default 1,000; a survey with a planned size, say from
    :func:`survey.privacy.sample_size` for its target margin, may tune for that). Choose it before
    the survey starts: a prior picked after looking at the data voids the promise.

        >>> from survey.privacy import GeneralizedRR
        >>> live = confidence_sequence(GeneralizedRR(3, epsilon=2), [50, 30, 20])
        >>> live.methods
        ('mixture-cs-mapped', 'mixture-cs-mapped', 'mixture-cs-mapped')
        >>> [round(float(x), 3) for x in live.high]
        [0.849, 0.565, 0.405]

    With no reports yet every interval is [0, 1].
    """
    level = _check_level(level)
    raw = check_counts(mechanism, counts)
    k = mechanism.k
    piece = 1.0 - (1.0 - level) / k if simultaneous and k > 2 else level
    chosen, prior = prior, _resolve_prior(prior, piece)
    log_threshold = math.log(1.0 / (1.0 - piece))
    t = raw.sum(axis=-1)
    low, high = np.zeros(raw.shape), np.ones(raw.shape)
    coefs = [mechanism.affine_coefficients(v) for v in range(k)]
    affine = [v for v in range(k) if coefs[v] is not None]
    general = [v for v in range(k) if coefs[v] is None]
    prefix = BONFERRONI if simultaneous and k > 2 else ""
    methods = tuple(prefix + MIXTURE_MAPPED if coef is not None else MIXTURE_PROJECTED for coef in coefs)
    if affine:
        a = np.array([coefs[v][0] for v in affine])
        b = np.array([coefs[v][1] for v in affine])
        s = raw[..., affine]
        lam_low, lam_high = _rate_interval(s, t[..., None], log_threshold, prior)
        seen = t[..., None] > 0
        share_hat = (np.where(seen, s / np.where(seen, t[..., None], 1.0), b + a / 2.0) - b) / a
        low[..., affine], high[..., affine] = _map_to_shares(lam_low, lam_high, share_hat, a, b)
    if general:
        # the box's pieces are at 1 − α/k whatever ``simultaneous`` says, and so is its default prior
        box_prior = _resolve_prior(chosen, 1.0 - (1.0 - level) / k)
        _projected(mechanism, raw, level, box_prior, general, low, high)
        if len(general) == k:
            prior = box_prior
    return ConfidenceSequence(
        labels=mechanism.labels,
        low=low,
        high=high,
        t=int(t) if t.ndim == 0 else t.astype(np.int64),
        level=level,
        simultaneous=bool(simultaneous),
        methods=methods,
        prior=prior,
    )


def _projected(
    mechanism: Mechanism,
    raw: np.ndarray,
    level: float,
    prior: MixturePrior,
    categories: list[int],
    low: np.ndarray,
    high: np.ndarray,
) -> None:
    """Projected intervals for categories that are not affine (custom matrices), one survey at a time.

    Every reported share gets a live interval at ``1 − α/k``: all of them hold at every moment with
    probability at least ``1 − α`` (union bound), and whenever they do, the true population is
    among the simplex points whose reported shares ``Qπ`` lie in that box; each share then lies
    between the minimum and maximum a linear program finds there. One box serves every category,
    so the result is simultaneous too. A box no population can explain gives [0, 1].
    """
    from scipy.optimize import linprog  # only here: importing it costs the app's start-up time

    k = mechanism.k
    q = mechanism.matrix
    flat = raw.reshape(-1, k)
    flat_low, flat_high = low.reshape(-1, k), high.reshape(-1, k)
    unique, inverse = np.unique(flat, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    lam_low, lam_high = _rate_interval(unique, unique.sum(axis=1, keepdims=True), math.log(k / (1.0 - level)), prior)
    a_ub = np.vstack([q, -q])
    for u in range(unique.shape[0]):
        b_ub = np.concatenate([lam_high[u], -lam_low[u]])
        rows = inverse == u
        for v in categories:
            cost = np.zeros(k)
            cost[v] = 1.0
            ends = []
            for sign in (1.0, -1.0):
                result = linprog(
                    sign * cost,
                    A_ub=a_ub,
                    b_ub=b_ub,
                    A_eq=np.ones((1, k)),
                    b_eq=[1.0],
                    bounds=(0.0, 1.0),
                    method="highs",
                )
                if result.status != 0:
                    ends = [0.0, 1.0]
                    break
                ends.append(float(result.x[v]))
            flat_low[rows, v] = min(max(ends[0], 0.0), 1.0)
            flat_high[rows, v] = min(max(ends[1], 0.0), 1.0)


# -- the anytime-valid test -------------------------------------------------------------------------

ALTERNATIVES = ("greater", "less", "two-sided")


@dataclass(frozen=True)
class AnytimeTest:
    """An anytime-valid test of one category's share against a threshold.

    ``e_value`` is the value of a test supermartingale under the null hypothesis: the chance that
    it *ever* reaches ``1/α`` while the null holds is at most α. ``p_value = min(1, 1/e_value)``
    is therefore anytime-valid: the chance that it ever falls to α or below under the null is at
    most α, however often it is looked at. It is not monotone in time; someone who keeps its
    history may report the running minimum, which is just as valid.
    """

    threshold: float
    category: int
    label: str
    alternative: str
    t: int
    reported: int
    e_value: float
    p_value: float
    prior: MixturePrior

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "category": self.category,
            "label": self.label,
            "alternative": self.alternative,
            "t": self.t,
            "reported": self.reported,
            "e_value": self.e_value,
            "p_value": self.p_value,
            "prior": self.prior.to_dict(),
        }


def anytime_test(
    mechanism: Mechanism,
    counts: Any,
    threshold: float,
    category: int = 0,
    alternative: str = "greater",
    prior: MixturePrior | float | None = None,
) -> AnytimeTest:
    """Is the share of ``category`` above (``"greater"``), below (``"less"``) or unlike (``"two-sided"``) ``threshold``?

    Returns an :class:`AnytimeTest` with an e-value and an anytime-valid p-value from the same
    martingale as the live interval. For ``"greater"`` the null hypothesis is ``π ≤ threshold``,
    i.e. ``λ ≤ λ₀ = a·threshold + b`` (for ``a > 0``; ``a < 0`` turns it around), and the e-value
    mixes the likelihood ratio against λ₀ over the alternatives only, the Beta(κλ₀, κ(1 − λ₀))
    prior cut to ``λ' > λ₀``:

        E_t = ∫_{λ'>λ₀} Π_i (λ'/λ₀)^{X_i} ((1 − λ')/(1 − λ₀))^{1 − X_i} dprior(λ').

    *Why it is valid for the whole null, not just λ₀*: for a fixed ``λ' > λ₀`` one report
    multiplies the product by ``R = (λ'/λ₀)^X ((1 − λ')/(1 − λ₀))^{1 − X}``, and for a true rate λ,
    ``E_λ[R] = λ·λ'/λ₀ + (1 − λ)(1 − λ')/(1 − λ₀)``, affine in λ with slope
    ``λ'/λ₀ − (1 − λ')/(1 − λ₀) > 0`` and equal to 1 at ``λ = λ₀``; so ``E_λ[R] ≤ 1`` for every
    ``λ ≤ λ₀``. Each product is a non-negative supermartingale starting at 1, so is their mixture
    (Tonelli), and Ville's inequality bounds the chance it ever reaches 1/α by α. ``"less"``
    mirrors it; ``"two-sided"`` (null ``π = threshold``) uses the whole prior, so it is exactly
    ``M_t(λ₀)`` of :func:`confidence_sequence`: with the same prior, its p-value is at most
    ``1 − level`` exactly when the threshold lies outside the live interval.

    The default prior is the live interval's, tuned for 1,000 respondents at 95% (at 90% for the
    one-sided tests, which spend all of α on one side, as Howard et al. tune one-sided mixtures).

        >>> from survey.privacy import CoinFlip
        >>> result = anytime_test(CoinFlip(0.5, 0.5), [400, 600], threshold=0.2)
        >>> round(result.e_value, 1), round(result.p_value, 4)
        (77.4, 0.0129)

    Only for categories whose report rate is affine in their share (every named design); for a
    custom matrix, use whether the threshold lies in :func:`confidence_sequence`'s interval.
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {', '.join(ALTERNATIVES)}, got {alternative!r}")
    raw = check_counts(mechanism, counts)
    if raw.ndim != 1:
        raise ValueError("anytime_test takes the counts of one survey")
    if not isinstance(category, (int, np.integer)) or not 0 <= category < mechanism.k:
        raise ValueError(f"category must be an index in 0..{mechanism.k - 1}, got {category!r}")
    try:
        threshold = float(threshold)
    except (TypeError, ValueError):
        raise ValueError(f"threshold must be a number, got {threshold!r}") from None
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be a share between 0 and 1, got {threshold!r}")
    coef = mechanism.affine_coefficients(int(category))
    if coef is None:
        raise ValueError(
            "an anytime test is not available for this category: its report rate is not affine in its share "
            "(a custom matrix); see whether the threshold lies in confidence_sequence's interval instead"
        )
    a, b = coef
    lam0 = a * threshold + b
    if not 0.0 < lam0 < 1.0:
        raise ValueError(
            f"at a share of {threshold:g} this design's report rate is {lam0:g}: every report is then "
            "certain, and there is nothing to test"
        )
    tuned_level = TEST_LEVEL if alternative == "two-sided" else round(1.0 - 2.0 * (1.0 - TEST_LEVEL), 12)
    prior = _resolve_prior(prior, tuned_level)
    s, t = float(raw[category]), float(raw.sum())
    log_full = float(_log_m(np.asarray(s), np.asarray(t - s), np.asarray(lam0), prior))
    if alternative == "two-sided":
        log_e = log_full
    else:
        # the direction in rates: a share above the threshold is a rate above λ₀ when a > 0
        upper = (alternative == "greater") == (a > 0)
        kappa = prior.concentration
        centre = lam0 if prior.centre is None else prior.centre
        a0, b0 = kappa * centre, kappa * (1.0 - centre)
        tail = special.betaincc if upper else special.betainc
        weight = float(tail(a0, b0, lam0))  # the prior's mass on the alternative
        if not weight > 0.0:
            raise ValueError("this prior puts no weight on the alternative: centre it nearer the threshold")
        with np.errstate(divide="ignore"):
            log_e = log_full + float(np.log(tail(a0 + s, b0 + t - s, lam0))) - math.log(weight)
    e_value = math.exp(log_e) if log_e < 709.0 else math.inf
    return AnytimeTest(
        threshold=threshold,
        category=int(category),
        label=mechanism.labels[category],
        alternative=alternative,
        t=int(t),
        reported=int(s),
        e_value=e_value,
        p_value=1.0 if log_e <= 0.0 else math.exp(-log_e),
        prior=prior,
    )
