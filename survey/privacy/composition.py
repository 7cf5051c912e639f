"""The survey's privacy budget: what one respondent spends across all randomized questions.

Independent randomizations of one person's answers compose by adding their ε (seed 003; Kasy,
Theorem 3.14). Directly asked questions are not randomized, are not protected at all, and are not
part of the sum: callers pass only the randomized questions' mechanisms.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from .interface import Randomizer

__all__ = ["total_epsilon"]


def total_epsilon(mechanisms: Iterable[Randomizer | float]) -> float:
    """Sum of ε over the randomized questions one respondent answers (basic composition).

    Accepts mechanisms (any :class:`~.interface.Randomizer`: a matrix or a number mechanism) or
    bare ε values. ∞ if any question is only one-sided deniable; 0 for an
    empty survey (nothing randomized, nothing spent, and nothing protected either).

        >>> from survey.privacy import CoinFlip
        >>> round(total_epsilon([CoinFlip(0.5, 0.5), CoinFlip(0.5, 0.5)]), 4)
        2.1972
    """
    total = 0.0
    for item in mechanisms:
        eps = float(item) if isinstance(item, int | float) else item.epsilon
        if math.isnan(eps) or eps < 0:
            raise ValueError(f"each ε must be 0 or more, got {eps!r}")
        total += eps
    return total
