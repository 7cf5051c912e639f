"""What a number question's answers say: n, mean with its interval, spread and quartiles.

A number question (an age, a count of days) is asked directly, so its answers are the numbers
themselves and need no debiasing. They are summarized from the running tallies, one count per
distinct value, so the cost follows the number of distinct answers (at most the question's range),
never the number of respondents.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from survey.domain.models import Question


@dataclass(frozen=True)
class NumberSummary:
    """The answers to one number question, summarized (None where n is too small for the number)."""

    question: Question
    n: int
    mean: float | None
    standard_deviation: float | None
    #: ``mean ± t·sd/√n``, the t interval for the population mean (None below two answers).
    ci_low: float | None
    ci_high: float | None
    minimum: int | None
    lower_quartile: float | None
    median: float | None
    upper_quartile: float | None
    maximum: int | None
    level: float

    def to_dict(self) -> dict[str, Any]:
        q = self.question
        return {
            "key": q.key,
            "text": q.text,
            "kind": q.kind,
            "randomized": False,
            "n": self.n,
            "range": {"minimum": q.minimum, "maximum": q.maximum},
            "level": self.level,
            "summary": {
                "mean": self.mean,
                "standard_deviation": self.standard_deviation,
                "ci_low": self.ci_low,
                "ci_high": self.ci_high,
                "interval_method": "t",
                "minimum": self.minimum,
                "lower_quartile": self.lower_quartile,
                "median": self.median,
                "upper_quartile": self.upper_quartile,
                "maximum": self.maximum,
            },
        }


def _quantile(values: np.ndarray, cumulative: np.ndarray, n: int, p: float) -> float:
    """The ``p`` quantile of the answers (linear between order statistics, as R's type 7 and numpy's
    default), from the sorted distinct values and their cumulative counts."""
    position = (n - 1) * p  # 0-based position among the n sorted answers
    below = math.floor(position)
    fraction = position - below
    low = values[np.searchsorted(cumulative, below, side="right")]
    high = values[np.searchsorted(cumulative, min(below + 1, n - 1), side="right")]
    return float(low + fraction * (high - low))


def summarize(question: Question, counts: Mapping[int, int], level: float = 0.95) -> NumberSummary:
    """Summarize a number question from ``{value: how many answered it}``."""
    kept = sorted((v, c) for v, c in counts.items() if c > 0)
    n = sum(c for _, c in kept)
    if n == 0:
        return NumberSummary(question, 0, None, None, None, None, None, None, None, None, None, level)
    values = np.array([v for v, _ in kept], dtype=float)
    weights = np.array([c for _, c in kept], dtype=float)
    mean = float(np.dot(values, weights) / n)
    cumulative = np.cumsum(weights)
    quartiles = [_quantile(values, cumulative, n, p) for p in (0.25, 0.5, 0.75)]
    sd = low = high = None
    if n >= 2:
        sd = float(math.sqrt(np.dot(weights, (values - mean) ** 2) / (n - 1)))
        half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
        low, high = mean - half, mean + half
    return NumberSummary(
        question,
        n,
        mean,
        sd,
        low,
        high,
        int(values[0]),
        quartiles[0],
        quartiles[1],
        quartiles[2],
        int(values[-1]),
        level,
    )
