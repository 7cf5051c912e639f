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

from .association import Association, Measure, association, product_mechanism
from .comparison import (
    Breakdown,
    GroupComparison,
    breakdown,
    compare_groups,
    difference_interval,
    few_respondents_threshold,
)
from .composition import total_epsilon
from .deniability import mechanism_posterior_bounds, posterior_bounds
from .estimation import (
    METHODS,
    Estimate,
    binomial_interval,
    clopper_pearson_interval,
    estimate,
    floored_wilson_interval,
    interval_coverage,
    minimum_coverage,
    simplex_mle,
    wilson_interval,
)
from .interface import BoundedNumbers, Codes, Randomizer, ReportDomain
from .mechanisms import (
    CoinFlip,
    Crosswise,
    ForcedResponse,
    GeneralizedRR,
    Mechanism,
    Triangular,
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
from .regression import RRLogisticResult, rr_logistic
from .sequences import (
    AnytimeTest,
    ConfidenceSequence,
    MixturePrior,
    anytime_test,
    confidence_sequence,
    log_mixture_martingale,
)

__all__ = [
    "METHODS",
    "AnytimeTest",
    "Association",
    "BoundedNumbers",
    "Breakdown",
    "Codes",
    "CoinFlip",
    "ConfidenceSequence",
    "Crosswise",
    "Estimate",
    "ForcedResponse",
    "GeneralizedRR",
    "GroupComparison",
    "Measure",
    "Mechanism",
    "MixturePrior",
    "RRLogisticResult",
    "Randomizer",
    "ReportDomain",
    "Triangular",
    "UnrelatedQuestion",
    "Warner",
    "anytime_test",
    "association",
    "binomial_interval",
    "breakdown",
    "clopper_pearson_interval",
    "compare_groups",
    "confidence_sequence",
    "design_effect",
    "difference_interval",
    "epsilon_of_matrix",
    "estimate",
    "expected_shares",
    "few_respondents_threshold",
    "floored_wilson_interval",
    "interval_coverage",
    "log_mixture_martingale",
    "margin_of_error",
    "mechanism_from_dict",
    "mechanism_posterior_bounds",
    "minimum_coverage",
    "per_respondent_variance",
    "posterior_bounds",
    "product_mechanism",
    "rr_logistic",
    "sample_size",
    "simplex_mle",
    "total_epsilon",
    "wilson_interval",
]
