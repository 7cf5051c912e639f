"""What a randomized number's reports say: the population mean, with its interval, n and ε.

A randomized number (the kind whose ``randomized_number`` is true) is answered by a report code of
its design's number mechanism (:mod:`survey.privacy.numeric`); the report in the question's units,
``mechanism.value_of(code)``, has the respondent's true number (clamped to the range) as its
expectation. So the mean of the reports is an unbiased estimate of the population mean, and the
mechanism's own estimator (``mechanism.estimate(counts)``) gives it with its interval from the
running tallies, one count per code: the betting interval for the bounded mechanisms (it holds for
every distribution in the range and every n: docs/statistics.md, section 7), the normal interval for
Laplace, whose reports have no bound. Nothing else is summarized: the reports' spread, quartiles and
extremes are the noise's, not the answers'. Where the organizer cut the range into bins, each bin's
share is estimated from the same tallies, with its interval (:mod:`survey.privacy.number_bins`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from survey.domain.models import Question
from survey.domain.results.kept import kept_bins
from survey.domain.results.numbers import LIVE_TUNED_FOR
from survey.domain.surveys.budget import margin_in_units
from survey.domain.surveys.wording import epsilon_text
from survey.privacy.bounded import MeanInterval
from survey.privacy.designs import design_name
from survey.privacy.number_bins import BinShares

__all__ = ["RandomizedNumberSummary", "summarize_reports"]


@dataclass(frozen=True)
class RandomizedNumberSummary:
    """The estimated mean of a randomized number (None where there are too few reports for it)."""

    question: Question
    #: Its number mechanism (survey.privacy.numeric.NumberMechanism).
    mechanism: Any
    n: int
    interval: MeanInterval | None
    level: float
    #: The live interval (valid at every look): the betting interval with its bets tuned for
    #: :data:`~survey.domain.results.numbers.LIVE_TUNED_FOR` answers, as a direct number's; None for
    #: Laplace, whose reports have no bound, and before the first report.
    live: MeanInterval | None = None
    #: The estimated share of the true numbers in each of the question's bins, with its
    #: profile-likelihood interval; None without bins or reports, and for Laplace (no bound).
    bins: BinShares | None = None
    #: How many declined it ("prefer not to say"), where it may be declined (else None): the mean is
    #: about those who answered, the ``n`` reports.
    declined: int | None = None

    @property
    def mean(self) -> float | None:
        return None if self.interval is None else self.interval.estimate

    @property
    def ci_low(self) -> float | None:
        return None if self.interval is None else self.interval.low

    @property
    def ci_high(self) -> float | None:
        return None if self.interval is None else self.interval.high

    @property
    def interval_method(self) -> str:
        return "" if self.interval is None else self.interval.method

    @property
    def simulated_mean(self) -> float | None:
        """The true mean among a simulated survey's respondents (the demo), to read the estimate against."""
        truth = self.question.simulated_truth
        return float(truth[0]) if truth else None

    @property
    def epsilon(self) -> float:
        return float(self.mechanism.epsilon)

    @property
    def epsilon_text(self) -> str:
        return epsilon_text(self.epsilon)

    @property
    def design_name(self) -> str:
        return design_name(self.mechanism.design)

    @property
    def live_tuned_for(self) -> int:
        """The number of answers the live interval's bets are tuned for (a direct number's too)."""
        return LIVE_TUNED_FOR

    @property
    def live_half_width(self) -> float | None:
        """The larger side of the live interval around the estimated mean, in the question's units:
        what the survey's target margin is held against (None without a live interval)."""
        if self.live is None:
            return None
        return max(self.live.estimate - self.live.low, self.live.high - self.live.estimate)

    def target_in_units(self, margin: float) -> float:
        """The survey's target ``margin`` (a share's) for this number's mean, in its units."""
        return margin_in_units(margin, self.question.minimum, self.question.maximum)

    def live_dict(self) -> dict[str, Any]:
        """The mean's live interval, as the live API gives it beside the other questions'."""
        q = self.question
        return {
            "key": q.key,
            "n": self.n,
            "range": {"minimum": q.minimum, "maximum": q.maximum},
            "mean": self.mean,
            "live_low": None if self.live is None else self.live.low,
            "live_high": None if self.live is None else self.live.high,
            "tuned_for": LIVE_TUNED_FOR,
            "interval_method": "" if self.live is None else self.live.method,
        }

    def to_dict(self) -> dict[str, Any]:
        q = self.question
        return {
            "key": q.key,
            "text": q.text,
            "kind": q.kind,
            "randomized": True,
            "n": self.n,
            "range": {"minimum": q.minimum, "maximum": q.maximum},
            "epsilon": self.epsilon,
            "epsilon_infinite": math.isinf(self.epsilon),
            "design": self.mechanism.to_dict(),
            "level": self.level,
            "summary": {
                "mean": self.mean,
                "ci_low": self.ci_low,
                "ci_high": self.ci_high,
                "interval_method": self.interval_method,
                "simulated_mean": self.simulated_mean,
            },
            "bins": None if self.bins is None else self.bins.to_dict(),
            "declined": self.declined,
        }


def summarize_reports(
    question: Question, counts: Mapping[int, int], level: float = 0.95, mechanism: Any = None
) -> RandomizedNumberSummary:
    """The mean of a randomized number from ``{report code: how many sent it}`` (its tallies), with
    the interval its mechanism gives. The normal interval (Laplace) needs two reports; with fewer
    there is no estimate."""
    mechanism = mechanism if mechanism is not None else question.mechanism()
    kept = {int(code): int(n) for code, n in counts.items() if n > 0}
    n = sum(kept.values())
    interval = live = bins = None
    if n > 0:
        try:
            interval = mechanism.estimate(kept, level)
        except ValueError:  # the normal interval of a single report
            interval = None
        if math.isfinite(mechanism.bound):  # Laplace's reports have no bound, so no live interval
            live = mechanism.estimate(kept, level, tuned_for=LIVE_TUNED_FOR)
            if question.bins:
                bins = kept_bins(mechanism, kept, question.bins, level)  # the fit, once per tallies
    return RandomizedNumberSummary(question, mechanism, n, interval, level, live, bins)
