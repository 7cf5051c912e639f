"""What a split ballot shows a researcher: each arm's estimate, randomized minus direct, and the
non-compliance models, all read from the arms' own tallies (a split ballot's arms are ordinary
questions: :mod:`survey.domain.surveys.arms`).

- **Randomized minus direct** ("more is better", Lensvelt-Mulders et al. 2005): for each randomized
  arm beside an arm asked directly, the share of the randomized arm's first option ("yes") minus the
  direct arm's share of the option with the same label, with its MOVER interval and the one-sided
  p-value of "randomized is not higher" (:func:`survey.privacy.arms.randomized_minus_direct`).
- **Non-compliance** (Clark & Desharnais 1998; Moshagen, Musch & Erdfelder 2012): two randomized
  yes/no arms whose designs make every honest "yes" carrier say "yes" (P(report yes | yes) = 1, as a
  coin flip whose second coin always says "yes") with different chances of a forced "yes", fitted
  jointly (:func:`survey.privacy.noncompliance.cheating_detection`, ``stochastic_lie_detector``): the
  share who say "no" whatever happens, and the prevalence corrected for it. With two arms both models
  fit the two arms' rates exactly; they differ in what they assume of the non-compliant.

A comparison that cannot be made is not shown silently: :attr:`SplitBallot.notes` says why (no
answers yet in an arm, no arm asked directly, designs that do not identify non-compliance).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from survey.domain.errors import DomainError
from survey.domain.models import Question
from survey.domain.responses.tallies import QuestionResult, question_mechanism
from survey.domain.results.analysis import pair_counts
from survey.domain.surveys.arms import ArmGroup, groups_of, noncompliance_pair
from survey.privacy.arms import ArmDifference, randomized_minus_direct
from survey.privacy.noncompliance import NonComplianceFit, cheating_detection, stochastic_lie_detector

__all__ = ["ArmResult", "BallotGroup", "SplitBallot", "split_ballot_by", "split_ballots"]


@dataclass(frozen=True)
class ArmResult:
    """One arm: its question, the share of respondents assigned to it, and its result."""

    question: Question
    share: float
    result: QuestionResult

    @property
    def n(self) -> int:
        return self.result.n


@dataclass(frozen=True)
class Difference:
    """Randomized minus direct for one randomized arm and one direct arm, about one option."""

    randomized: str
    direct: str
    label: str
    result: ArmDifference


@dataclass
class SplitBallot:
    """One split ballot's analyses."""

    name: str
    arms: list[ArmResult]
    differences: list[Difference] = field(default_factory=list)
    #: The two arms the non-compliance models were fitted on, and the fits (None when they cannot be).
    fitted_arms: tuple[str, str] | None = None
    cheating: NonComplianceFit | None = None
    lie_detector: NonComplianceFit | None = None
    #: Why an analysis is not shown, one sentence each.
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.name,
            "arms": [{"key": a.question.key, "share": a.share, "n": a.n} for a in self.arms],
            "randomized_minus_direct": [
                {"randomized": d.randomized, "direct": d.direct, "option": d.label, **d.result.to_dict()}
                for d in self.differences
            ],
            "noncompliance": None
            if self.cheating is None or self.lie_detector is None or self.fitted_arms is None
            else {
                "arms": list(self.fitted_arms),
                "cheating_detection": self.cheating.to_dict(),
                "stochastic_lie_detector": self.lie_detector.to_dict(),
            },
            "notes": list(self.notes),
        }


def _differences(ballot: SplitBallot, level: float) -> None:
    direct = [a for a in ballot.arms if not a.question.is_randomized and a.question.kind_entry.has_options]
    randomized = [a for a in ballot.arms if a.question.is_randomized_option]
    if not direct or not randomized:
        return
    for r in randomized:
        label = r.question.labels[0]
        for d in direct:
            codes = [o.code for o in d.question.options if o.label.strip().casefold() == label.casefold()]
            if not codes:
                ballot.notes.append(
                    f"{r.question.key!r} and {d.question.key!r} are not compared: the direct arm has no option "
                    f"labelled {label!r}."
                )
                continue
            if r.n == 0 or d.n == 0:
                ballot.notes.append(
                    f"{r.question.key!r} minus {d.question.key!r} needs answers in both arms ({r.n} and {d.n} so far)."
                )
                continue
            result = randomized_minus_direct(
                r.result.mechanism, r.result.counts, int(d.result.counts[codes[0]]), d.n, category=0, level=level
            )
            ballot.differences.append(Difference(r.question.key, d.question.key, label, result))


def _noncompliance(ballot: SplitBallot, level: float) -> None:
    pair = noncompliance_pair((a, a.result.mechanism) for a in ballot.arms)
    if pair is None:
        if len([a for a in ballot.arms if a.question.is_randomized_option]) >= 2:
            ballot.notes.append(
                "The non-compliance models need two randomized yes/no arms whose designs make every “yes” "
                "carrier answer “yes” (a coin flip whose second coin always says “yes”) with different chances "
                "of a forced “yes”."
            )
        return
    (first, p1), (second, p2) = pair
    if first.n == 0 or second.n == 0:
        ballot.notes.append(f"The non-compliance models need answers in both arms ({first.n} and {second.n} so far).")
        return
    yes = [int(first.result.counts[0]), int(second.result.counts[0])]
    n = [first.n, second.n]
    ballot.fitted_arms = (first.question.key, second.question.key)
    ballot.cheating = cheating_detection(yes, n, [p1, p2], level=level)
    ballot.lie_detector = stochastic_lie_detector(yes, n, [1.0 - p1, 1.0 - p2], level=level)


def split_ballots(
    questions: Sequence[Question], results: Sequence[QuestionResult], level: float = 0.95
) -> list[SplitBallot]:
    """The analyses of every split ballot among ``questions``, from their arms' ``results`` (each arm's
    :class:`QuestionResult`; arms with a number answer are listed without comparisons)."""
    by_key = {r.question.key: r for r in results}
    by_question = {q.key: q for q in questions}
    ballots = []
    for group in groups_of(questions):
        ballot = _ballot(group, by_question, by_key)
        _differences(ballot, level)
        _noncompliance(ballot, level)
        ballots.append(ballot)
    return ballots


def _ballot(group: ArmGroup, questions: dict[str, Question], results: dict[str, QuestionResult]) -> SplitBallot:
    total = math.fsum(a.share for a in group.arms)
    arms = [ArmResult(questions[a.key], a.share / total, results[a.key]) for a in group.arms if a.key in results]
    return SplitBallot(group.name, arms)


@dataclass
class BallotGroup:
    """One group of a direct question (its option's label) and the ballot's analyses within it."""

    label: str
    ballot: SplitBallot


def split_ballot_by(
    session: Session, questions: Sequence[Question], name: str, by: Question, level: float = 0.95
) -> list[BallotGroup]:
    """The split ballot ``name``'s analyses within each group of ``by`` (a question asked directly,
    with options, outside the ballot): randomized minus direct, and the non-compliance models, per
    group, each from the pair tallies of its arms with ``by`` (so at the cost of a few tally rows,
    whatever the number of respondents). A respondent who did not answer ``by`` is in no group."""
    ballot = next((g for g in groups_of(questions) if g.name == name), None)
    if ballot is None:
        raise DomainError("split.unknown", path=("ballot",), ballot=name)
    if by.is_randomized or not by.kind_entry.has_options or by.arm_group is not None:
        raise DomainError("split.by_not_direct", path=("by",), key=by.key)
    arms = {q.key: q for q in questions if q.arm_group == name}
    counts: dict[str, dict[int, np.ndarray]] = {}
    for key, q in arms.items():
        per_group = {o.code: np.zeros(len(q.options)) for o in by.options}
        for (value, group), n in pair_counts(session, q, by).items():
            if group is not None and value >= 0 and group in per_group:
                per_group[group][value] += n
        counts[key] = per_group
    groups = []
    for option in by.options:
        results = [
            QuestionResult(q, question_mechanism(q), counts[q.key][option.code], None)
            for q in arms.values()
            if q.kind_entry.has_options
        ]
        [found] = split_ballots(list(arms.values()), results, level)
        groups.append(BallotGroup(option.label, found))
    return groups
