"""The privacy core: randomized-response mechanisms, their ε, debiasing, intervals and planning.

Pure mathematics on numpy and scipy, usable on its own in a notebook::

    >>> from survey.privacy import CoinFlip, estimate
    >>> mechanism = CoinFlip(truth_probability=0.5, yes_probability=0.5)
    >>> round(mechanism.epsilon, 4)            # ln 3
    1.0986
    >>> result = estimate(mechanism, [400, 600])   # 400 reported "yes", 600 "no"
    >>> round(float(result.proportions[0]), 2)
    0.3

Every mechanism is a channel matrix ``Q[reported, true]``; everything else is derived from it.
Nothing here imports Flask, SQLAlchemy or the rest of the application.
"""

from .composition import total_epsilon
from .deniability import mechanism_posterior_bounds, posterior_bounds
from .estimation import Estimate, estimate, simplex_mle, wilson_interval
from .mechanisms import (
    CoinFlip,
    ForcedResponse,
    GeneralizedRR,
    Mechanism,
    UnrelatedQuestion,
    Warner,
    epsilon_of_matrix,
    mechanism_from_dict,
)
from .planning import (
    design_effect,
    expected_shares,
    margin_of_error,
    per_respondent_variance,
    sample_size,
)

__all__ = [
    "CoinFlip",
    "Estimate",
    "ForcedResponse",
    "GeneralizedRR",
    "Mechanism",
    "UnrelatedQuestion",
    "Warner",
    "design_effect",
    "epsilon_of_matrix",
    "estimate",
    "expected_shares",
    "margin_of_error",
    "mechanism_from_dict",
    "mechanism_posterior_bounds",
    "per_respondent_variance",
    "posterior_bounds",
    "sample_size",
    "simplex_mle",
    "total_epsilon",
    "wilson_interval",
]
