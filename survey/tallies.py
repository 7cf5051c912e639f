"""Counting reported values in the database and turning the counts into estimates.

Counts come from one GROUP BY over the answers of a survey; no response is loaded into Python, so
the cost of an estimate does not grow with respondents beyond what the database itself does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from survey.privacy import Estimate, Mechanism, estimate, total_epsilon

from .models import Answer, Question, Submission, Survey


def reported_counts(session: Session, survey: Survey) -> dict[int, np.ndarray]:
    """question id → counts of each reported code, by one GROUP BY."""
    counts = {q.id: np.zeros(len(q.options), dtype=np.int64) for q in survey.questions}
    rows = session.execute(
        select(Answer.question_id, Answer.value, func.count())
        .join(Question, Question.id == Answer.question_id)
        .where(Question.survey_id == survey.id)
        .group_by(Answer.question_id, Answer.value)
    )
    for question_id, value, count in rows:
        counts[question_id][value] = count
    return counts


def submission_count(session: Session, survey: Survey) -> int:
    return session.scalar(select(func.count()).select_from(Submission).where(Submission.survey_id == survey.id)) or 0


@dataclass
class QuestionResult:
    """One question's counts and, once someone answered it, its estimate."""

    question: Question
    mechanism: Mechanism
    counts: np.ndarray
    estimate: Estimate | None

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def randomized(self) -> bool:
        return self.question.is_randomized

    def to_dict(self, level: float = 0.95) -> dict[str, Any]:
        q = self.question
        eps = self.mechanism.epsilon if self.randomized else None
        low, high = self.estimate.ci(level) if self.estimate is not None else (None, None)
        categories = []
        for code, label in enumerate(q.labels):
            item: dict[str, Any] = {"code": code, "label": label, "reported": int(self.counts[code])}
            if self.estimate is not None:
                e = self.estimate
                item.update(
                    observed_share=float(e.observed[code]),
                    unbiased=float(e.unbiased[code]),
                    proportion=float(e.proportions[code]),
                    standard_error=float(e.standard_errors[code]),
                    ci_low=float(low[code]),
                    ci_high=float(high[code]),
                    interval_method=e.interval_methods[code],
                )
            if q.simulated_truth is not None:
                item["simulated_truth"] = q.simulated_truth[code]
            categories.append(item)
        return {
            "key": q.key,
            "text": q.text,
            "kind": q.kind,
            "randomized": self.randomized,
            "n": self.n,
            "epsilon": None if eps is None or math.isinf(eps) else eps,
            "epsilon_infinite": eps is not None and math.isinf(eps),
            "design": self.mechanism.to_dict() if self.randomized else None,
            "level": level,
            "categories": categories,
        }


def question_mechanism(question: Question) -> Mechanism:
    """The frozen design of a randomized question; the identity for a direct one.

    With the identity matrix the estimator reduces to the plain shares with Wilson intervals, which
    is exactly what a directly asked question should get.
    """
    mechanism = question.mechanism()
    if mechanism is None:
        mechanism = Mechanism(np.eye(len(question.options)), labels=question.labels)
    return mechanism


def survey_results(session: Session, survey: Survey) -> list[QuestionResult]:
    counts = reported_counts(session, survey)
    results = []
    for q in survey.questions:
        mech = question_mechanism(q)
        c = counts[q.id]
        results.append(QuestionResult(q, mech, c, estimate(mech, c) if c.sum() > 0 else None))
    return results


def survey_total_epsilon(survey: Survey) -> float:
    """What one respondent spends across the survey's randomized questions (direct ones excluded)."""
    return total_epsilon(q.mechanism() for q in survey.randomized_questions)
