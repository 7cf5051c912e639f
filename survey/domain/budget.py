"""A survey's privacy budget and what each question's privacy level costs, for the organizer.

The total ε is what one respondent spends across the randomized questions (basic composition,
:meth:`survey.domain.models.Survey.total_epsilon`); directly asked questions are not protected and not
part of it. Beside it, per randomized question: the expected margin of error at the survey's
expected number of respondents, the respondents needed for its target margin, and the design
effect, all from the privacy core at a true share of 50% (the worst case) and 95% confidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from survey.privacy import Mechanism, design_effect, margin_of_error, sample_size

from .models import Question, Survey
from .planning import PLANNING_LEVEL, PLANNING_SHARE
from .validation import within_cap


def planning_figures(mechanism: Mechanism, n: int, margin: float) -> dict[str, Any]:
    """What a design costs in precision: the expected margin of error at ``n`` respondents, the
    respondents needed for ``margin``, and the design effect (a true share of 50%, 95%). The budget
    panel and the builder's live preview both show these."""
    return {
        "margin_of_error": margin_of_error(mechanism, n, PLANNING_SHARE, PLANNING_LEVEL),
        "respondents_needed": sample_size(mechanism, margin, PLANNING_SHARE, PLANNING_LEVEL),
        "design_effect": design_effect(mechanism, PLANNING_SHARE),
    }


@dataclass(frozen=True)
class QuestionCost:
    """One randomized question's privacy level and what it costs in precision."""

    question: Question
    epsilon: float
    margin_of_error: float
    respondents_needed: int
    design_effect: float

    @property
    def one_sided(self) -> bool:
        return math.isinf(self.epsilon)


@dataclass(frozen=True)
class Budget:
    """The survey's total ε, its cap, and the per-question planning table."""

    total_epsilon: float
    cap: float | None
    expected_respondents: int
    target_margin: float
    costs: list[QuestionCost] = field(default_factory=list)
    direct: list[Question] = field(default_factory=list)

    @property
    def within_cap(self) -> bool:
        return within_cap(self.total_epsilon, self.cap)

    @property
    def infinite(self) -> bool:
        """Some question is only one-sided deniable, so the total is ∞."""
        return math.isinf(self.total_epsilon)


def survey_budget(survey: Survey) -> Budget:
    """The budget panel's figures for ``survey``, from its frozen (or draft) designs."""
    n, margin = survey.expected_respondents, survey.target_margin
    costs = []
    for question in survey.randomized_questions:
        mechanism = question.mechanism()
        assert mechanism is not None  # a randomized question always has a design
        costs.append(
            QuestionCost(question=question, epsilon=mechanism.epsilon, **planning_figures(mechanism, n, margin))
        )
    return Budget(
        total_epsilon=survey.total_epsilon(),
        cap=survey.epsilon_cap,
        expected_respondents=n,
        target_margin=margin,
        costs=costs,
        direct=survey.direct_questions,
    )
