"""What ε means to one respondent: how far an observer's suspicion can move after seeing a report.

Pages translate ε into "someone who was 50% sure you answered yes can become at most 75% sure"
(docs/statistics.md §3: Bayes' rule with every report's likelihood ratio at most e^ε); organizers
pick a privacy level from that sentence, not from the number. Respondents read the same bound as
odds: what is sent "favours one answer over another at most 3 to 1" (:func:`odds_bound`, and
:func:`report_odds` for the one report their browser actually sent).
"""

from __future__ import annotations

import math

import numpy as np

from .mechanisms import Mechanism

__all__ = ["highest_posterior", "mechanism_posterior_bounds", "odds_bound", "posterior_bounds", "report_odds"]


def _check_prior(prior: float) -> float:
    prior = float(prior)
    if not 0.0 <= prior <= 1.0:
        raise ValueError(f"the prior must be a probability in [0, 1], got {prior!r}")
    return prior


def posterior_bounds(epsilon: float, prior: float = 0.5) -> tuple[float, float]:
    """The range an observer's belief can reach after one report of an ε-private mechanism.

    An observer who believed the true answer was "yes" with probability ``prior`` can, whatever
    the report, end up believing it with at least ``low`` and at most ``high``::

        >>> [round(x, 4) for x in posterior_bounds(math.log(3), 0.5)]
        [0.25, 0.75]

    ``epsilon = inf`` gives (0, 1): a report can settle the question.
    """
    prior = _check_prior(prior)
    epsilon = float(epsilon)
    if math.isnan(epsilon) or epsilon < 0:
        raise ValueError(f"epsilon must be 0 or more, got {epsilon!r}")
    if prior in (0.0, 1.0):
        return prior, prior
    if math.isinf(epsilon):
        return 0.0, 1.0
    # Written with e^-ε so that large ε stays finite.
    shrink = math.exp(-epsilon)
    high = prior / (prior + shrink * (1.0 - prior))
    low = shrink * prior / (shrink * prior + (1.0 - prior))
    return low, high


def mechanism_posterior_bounds(mechanism: Mechanism, prior: float = 0.5, category: int = 0) -> tuple[float, float]:
    """The exact range of an observer's belief in ``category`` after one report of ``mechanism``.

    Tighter than :func:`posterior_bounds` for asymmetric designs (coin-flip with a forced-"yes"
    probability other than 1/2): it looks at the reports the design actually produces. For more
    than two categories the remaining prior mass is put on the alternative that moves the belief
    most, so the bounds hold whatever the observer believed about the other options.
    """
    prior = _check_prior(prior)
    if not 0 <= category < mechanism.k:
        raise ValueError(f"category must be in 0..{mechanism.k - 1}")
    if prior in (0.0, 1.0):
        return prior, prior
    q = mechanism.matrix
    mine = q[:, category]
    others = np.delete(q, category, axis=1)
    # every report the design produces, against the alternatives that move the belief least and
    # most: one vectorized pass (a loop over reports and alternatives cost k² Python steps per
    # category, seconds for a page of 50-option questions)
    least, most = others.min(axis=1), others.max(axis=1)
    produced = (mine != 0.0) | (most != 0.0)
    mine = np.concatenate([mine[produced], mine[produced]])
    alternative = np.concatenate([least[produced], most[produced]])
    denominator = prior * mine + (1.0 - prior) * alternative
    with np.errstate(divide="ignore", invalid="ignore"):
        posterior = np.where(denominator > 0, prior * mine / denominator, prior)
    if posterior.size == 0:
        return 1.0, 0.0
    return float(min(1.0, posterior.min())), float(max(0.0, posterior.max()))


def highest_posterior(mechanism: Mechanism, prior: float = 0.5) -> float:
    """The highest belief in any option an observer can reach after one report: the largest upper
    bound of :func:`mechanism_posterior_bounds` over the categories, computed for all of them in
    one pass (the same arithmetic, so the same number to the last bit).

    For each report and category, the alternative that moves the belief most is the report's
    smallest probability among the *other* true answers: the smallest of the row, or its second
    smallest where the category itself holds the smallest.

    With a prior of 1/2 between an option and the alternative that moves it most, GRR's bound is
    e^ε / (e^ε + 1) whatever the number of options::

        >>> from survey.privacy import GeneralizedRR
        >>> round(highest_posterior(GeneralizedRR(3, epsilon=1.0)), 4)
        0.7311
    """
    prior = _check_prior(prior)
    if prior in (0.0, 1.0):
        return prior
    q = mechanism.matrix
    ordered = np.sort(q, axis=1)
    own = np.arange(mechanism.k)[None, :]
    least = np.where(own == q.argmin(axis=1)[:, None], ordered[:, 1:2], ordered[:, 0:1])
    most = np.where(own == q.argmax(axis=1)[:, None], ordered[:, -2:-1], ordered[:, -1:])
    produced = (q != 0.0) | (most != 0.0)
    denominator = prior * q + (1.0 - prior) * least
    with np.errstate(divide="ignore", invalid="ignore"):
        posterior = np.where(denominator > 0, prior * q / denominator, prior)
    # the other alternative (the largest) only ever lowers the belief: it bounds from below
    return float(max(0.0, posterior[produced].max(initial=0.0)))


def odds_bound(epsilon: float) -> float:
    """How strongly any one report can favour one true answer over another: at most e^ε to 1.

    This is the likelihood ratio ε-privacy bounds, P(report | a) / P(report | b) ≤ e^ε for every
    report and answers a, b; an observer who held a and b equally likely ends at odds of at most
    e^ε to 1 (the 75% of :func:`posterior_bounds` at ε = ln 3 is odds of 3 to 1)::

        >>> round(odds_bound(math.log(3)), 9)
        3.0
    """
    epsilon = float(epsilon)
    if math.isnan(epsilon) or epsilon < 0:
        raise ValueError(f"epsilon must be 0 or more, got {epsilon!r}")
    return math.inf if math.isinf(epsilon) else math.exp(epsilon)


def report_odds(mechanism: Mechanism, report: int) -> float:
    """How strongly the one report ``report`` favours one true answer over another: the largest
    ratio of its probabilities under two answers (its row of the matrix), inf when some answer
    cannot produce it. At most :func:`odds_bound` of the mechanism's ε, often less::

        >>> from survey.privacy import CoinFlip
        >>> seed = CoinFlip(truth_probability=0.5, yes_probability=0.5)
        >>> [round(report_odds(seed, r), 9) for r in (0, 1)]
        [3.0, 3.0]
    """
    row = np.asarray(mechanism.matrix)[report]
    if row.max() <= 0:
        raise ValueError(f"report {report} is never sent by this design")
    return math.inf if row.min() <= 0 else float(row.max() / row.min())
