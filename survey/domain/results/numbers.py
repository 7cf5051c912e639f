"""What a number question's answers say: n, mean with its interval, spread and quartiles.

A number question (an age, a count of days) is asked directly, so its answers are the numbers
themselves and need no debiasing. They are summarized from the running tallies, one count per
distinct value, so the cost follows the number of distinct answers (at most the question's range),
never the number of respondents.

The mean's interval is the betting interval over the question's range
(:func:`survey.privacy.bounded.mean_interval`, docs/statistics.md): it holds for every distribution
of answers in ``[minimum, maximum]`` and every n from 1, and never leaves the range. The t interval
it replaces assumed normality and covered as little as 0.59 where most answers sit at one end
(benchmarks/number_intervals.md). Beside it, the *live* interval: the same bets tuned for
:data:`LIVE_TUNED_FOR` answers, valid at every look (a confidence sequence).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from survey.domain.models import Question
from survey.privacy.bounded import mean_interval
from survey.privacy.number_bins import BinShares, direct_bin_shares
from survey.privacy.sequences import TARGET_RESPONDENTS

#: The interval of the mean, as the exports name it.
INTERVAL_METHOD = "betting"

#: The number of answers the live interval's bets are tuned for: fixed in code, as the randomized
#: questions' live prior is (survey.domain.results.live), because a survey's planned size can be
#: edited after answers are seen, and bets chosen from the data void the promise of every look.
LIVE_TUNED_FOR = TARGET_RESPONDENTS


@dataclass(frozen=True)
class NumberSummary:
    """The answers to one number question, summarized (None where n is too small for the number)."""

    question: Question
    n: int
    mean: float | None
    standard_deviation: float | None
    #: The betting interval for the mean over the question's range (None with no answers).
    ci_low: float | None
    ci_high: float | None
    minimum: int | None
    lower_quartile: float | None
    median: float | None
    upper_quartile: float | None
    maximum: int | None
    level: float
    #: The live interval: the betting interval tuned for :data:`LIVE_TUNED_FOR` answers, valid however
    #: often it is looked at (None with no answers).
    live_low: float | None = None
    live_high: float | None = None
    #: The share of answers in each of the question's bins, with Wilson intervals (None without
    #: bins or answers).
    bins: BinShares | None = None

    @property
    def live_tuned_for(self) -> int:
        """The number of answers the live interval's bets are tuned for."""
        return LIVE_TUNED_FOR

    def live_dict(self) -> dict[str, Any]:
        """The mean's live interval, as the live API gives it beside the randomized questions'."""
        q = self.question
        return {
            "key": q.key,
            "n": self.n,
            "range": {"minimum": q.minimum, "maximum": q.maximum},
            "mean": self.mean,
            "live_low": self.live_low,
            "live_high": self.live_high,
            "tuned_for": self.live_tuned_for,
            "interval_method": INTERVAL_METHOD,
        }

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
                "interval_method": INTERVAL_METHOD,
                "minimum": self.minimum,
                "lower_quartile": self.lower_quartile,
                "median": self.median,
                "upper_quartile": self.upper_quartile,
                "maximum": self.maximum,
            },
            "bins": None if self.bins is None else self.bins.to_dict(),
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
    sd = None
    if n >= 2:
        sd = float(math.sqrt(np.dot(weights, (values - mean) ** 2) / (n - 1)))
    interval = mean_interval(values, weights, question.minimum, question.maximum, level)
    live = mean_interval(values, weights, question.minimum, question.maximum, level, tuned_for=LIVE_TUNED_FOR)
    return NumberSummary(
        question,
        n,
        mean,
        sd,
        interval.low,
        interval.high,
        int(values[0]),
        quartiles[0],
        quartiles[1],
        quartiles[2],
        int(values[-1]),
        level,
        live.low,
        live.high,
        direct_bin_shares(values, weights, question.minimum, question.maximum, question.bins, level)
        if question.bins
        else None,
    )
