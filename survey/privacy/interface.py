"""The general mechanism interface: what the app may ask of any randomized-response mechanism.

Today's one implementation is the channel matrix (:class:`~.mechanisms.Mechanism` and the named
designs built on it). The next ones are known: a mechanism whose reports are numbers (a bounded
number, randomized in the browser), and a design whose respondents are split at random into arms,
each with its own mechanism. So the page, the browser and the checks of a submission ask a
mechanism only what this interface declares, and nothing of them assumes a square matrix:

- ``sampler()``: what the respondent's browser needs to draw a report, as a JSON-ready object whose
  ``"sampler"`` names how (for a matrix, ``{"sampler": "columns", "columns": Q.T}``: the
  distribution of the report for each true answer). A number mechanism would send its own
  (``{"sampler": "laplace", ...}``), a design of arms its arms' with their weights
  (``{"sampler": "arms", "arms": [{"weight": ..., **arm.sampler()}, ...]}``); a browser refuses a
  sampler it does not know rather than guess.
- ``reports``: the domain of reports, what a submission may carry (:class:`Codes` 0..k-1 for a
  matrix; :class:`BoundedNumbers` for a number mechanism; for arms, the arm and its report).
- ``epsilon``: the local privacy loss of one report (for arms, the largest of the arms': each
  respondent is in one arm and sends one report).
- ``estimate(counts)``: the estimator hook, from the tallies of reports to the estimate of the true
  answers (for a matrix, :func:`~.estimation.estimate`, which debiases through ``Q⁻¹``).

Pure, like the rest of the privacy core: nothing here imports the app.

    >>> from survey.privacy import CoinFlip
    >>> mechanism = CoinFlip(0.5, 0.5)
    >>> isinstance(mechanism, Randomizer), mechanism.reports
    (True, Codes(k=2))
    >>> mechanism.sampler()["sampler"], mechanism.reports.contains(1), BoundedNumbers(0, 10).contains(11)
    ('columns', True, False)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["BoundedNumbers", "Codes", "Randomizer", "ReportDomain"]


@runtime_checkable
class ReportDomain(Protocol):
    """The values a report may take: a submission carrying another is refused."""

    def contains(self, report: Any) -> bool: ...


@dataclass(frozen=True)
class Codes:
    """Reports that are option codes ``0 .. k-1`` (the rows of a channel matrix)."""

    k: int

    def contains(self, report: Any) -> bool:
        return isinstance(report, int) and not isinstance(report, bool) and 0 <= report < self.k


@dataclass(frozen=True)
class BoundedNumbers:
    """Reports that are numbers from ``low`` to ``high`` (both included): the domain of a mechanism
    whose reports are numbers. Whole numbers only when ``whole``."""

    low: float
    high: float
    whole: bool = True

    def contains(self, report: Any) -> bool:
        if isinstance(report, bool) or not isinstance(report, int | float) or not math.isfinite(report):
            return False
        if self.whole and report != int(report):
            return False
        return self.low <= report <= self.high


@runtime_checkable
class Randomizer(Protocol):
    """What any mechanism offers: its ε, its domain of reports, what the browser samples with, and
    its estimator. Nothing here is a matrix: a matrix is one way to have these."""

    @property
    def epsilon(self) -> float:
        """The local privacy loss of one report (``math.inf`` where a report can identify the answer)."""
        ...

    @property
    def reports(self) -> ReportDomain:
        """What a report may be."""
        ...

    def sampler(self) -> dict[str, Any]:
        """What the respondent's browser needs to draw a report: JSON-ready, ``"sampler"`` says how."""
        ...

    def estimate(self, counts: Any) -> Any:
        """The estimate of the true answers from the tallies of the reports."""
        ...
