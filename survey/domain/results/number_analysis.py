"""A randomized number by group, and as the outcome of a linear regression on direct questions.

A randomized number's report, in the question's units (``mechanism.value_of(code)``), has the
respondent's true number (clamped to the range) as its expectation whatever else is true of them,
since the browser's mechanism never sees the other answers. So within any group of respondents the
mean of the reports is an unbiased estimate of the group's mean, and ordinary least squares of the
reports on direct covariates estimates the true numbers' coefficients without bias
(:mod:`survey.privacy.linear`). What the randomization adds is variance, which the intervals carry:

- **by group** (:func:`compare_number`): each group's mean from its own codes, read from the pair
  tallies (one count per code and group, so the cost is the same for ten respondents or a million),
  with the betting interval of the bounded mechanisms (``mean_breakdown``: every group's interval
  holds at once, Bonferroni) or, for Laplace, each group's normal interval;
- **regression** (:func:`number_regression`): OLS with heteroskedasticity-consistent (HC3) standard
  errors from each covariate pattern's count, sum of reports and sum of squared reports (one GROUP
  BY over the answers, like the logistic regression of a randomized option).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session, aliased

from survey.domain.errors import DomainError
from survey.domain.models import DECLINED, Answer, Question, Survey
from survey.domain.results.analysis import (
    LEVEL,
    MAX_REGRESSION_CELLS,
    NO_ANSWER,
    _covariates,
    _design_columns,
    _design_matrix,
    _number_of_coefficients,
    _question,
    _too_large,
    pair_counts,
)
from survey.domain.results.csvfile import CsvTable
from survey.privacy.bounded import MeanInterval, mean_breakdown
from survey.privacy.linear import LinearResult, linear_regression
from survey.privacy.numeric import GRID_STEPS

__all__ = ["NumberComparison", "NumberRegression", "compare_number", "number_regression"]


@dataclass
class NumberComparison:
    """A randomized number's mean in each group of a direct question, and among everyone."""

    survey: Survey
    question: Question
    by: Question
    groups: dict[str, MeanInterval]
    total: MeanInterval
    level: float
    #: Whether the groups' intervals hold all at once (the betting intervals, Bonferroni) or each
    #: alone (Laplace's normal intervals).
    simultaneous: bool
    analysis: str = "number_breakdown"

    @property
    def by_name(self) -> str:
        return self.by.key

    def to_dict(self) -> dict[str, Any]:
        return {
            "survey": self.survey.slug,
            "question": self.question.key,
            "question_text": self.question.text,
            "by": self.by.key,
            "by_text": self.by.text,
            "kind": self.analysis,
            "range": {"minimum": self.question.minimum, "maximum": self.question.maximum},
            "level": self.level,
            "simultaneous": self.simultaneous,
            "interval_method": self.total.method,
            "groups": [
                {"label": label, "n": g.n, "mean": g.estimate, "ci_low": g.low, "ci_high": g.high}
                for label, g in self.groups.items()
            ],
            "total": {
                "n": self.total.n,
                "mean": self.total.estimate,
                "ci_low": self.total.low,
                "ci_high": self.total.high,
            },
        }

    def csv(self) -> str:
        data = self.to_dict()
        table = CsvTable(NUMBER_BREAKDOWN_COLUMNS)
        rows = [
            [data["question"], data["by"], g["label"], g["n"], g["mean"], g["ci_low"], g["ci_high"], data["level"]]
            for g in [*data["groups"], {"label": "everyone", **data["total"]}]
        ]
        return table.header() + table.rows(rows)


NUMBER_BREAKDOWN_COLUMNS = [
    ("question", "text"),
    ("by", "text"),
    ("group", "text"),
    ("n", "number"),
    ("mean", "number"),
    ("ci_low", "number"),
    ("ci_high", "number"),
    ("level", "number"),
]


def _randomized_number(session: Session, survey: Survey, key: str | None, path: tuple[str, ...]) -> Question:
    question = _question(session, survey, key, path)
    if not question.kind_entry.randomized_number:
        raise DomainError("comparison.not_randomized", path=path, key=question.key)
    return question


def compare_number(
    session: Session, survey: Survey, question_key: str | None, by: str | None, level: float = LEVEL
) -> NumberComparison:
    """The randomized number ``question_key``'s mean in each group of the direct question ``by``
    (those who skipped it in a group of their own), from the pair tallies."""
    question = _randomized_number(session, survey, question_key, ("question",))
    other = _question(session, survey, by, ("by",))
    if other.is_randomized or not other.kind_entry.paired:
        raise DomainError("comparison.number_by_direct", path=("by",), key=other.key)
    mechanism = question.mechanism()
    labels = {o.code: o.label for o in other.options}
    counts: dict[str, dict[int, int]] = {label: {} for label in labels.values()}
    skipped: dict[int, int] = {}
    everyone: dict[int, int] = {}
    for (code, group), n in pair_counts(session, question, other).items():
        into = counts[labels[group]] if group in labels else skipped
        into[code] = into.get(code, 0) + n
        everyone[code] = everyone.get(code, 0) + n
    if skipped:
        counts[NO_ANSWER if NO_ANSWER not in counts else f"({NO_ANSWER})"] = skipped
    if not everyone:
        raise DomainError("analysis.no_answers", path=("question",), key=question.key)
    if math.isfinite(mechanism.bound):
        ends = mechanism.value_of([0, GRID_STEPS])
        breakdown = mean_breakdown(
            {label: (mechanism.value_of(list(c)), list(c.values())) if c else ([], []) for label, c in counts.items()},
            float(ends[0]),
            float(ends[1]),
            level,
        )
        groups, simultaneous = breakdown.groups, True
    else:  # Laplace: each group's normal interval (it needs two reports)
        groups = {label: mechanism.estimate(c, level) for label, c in counts.items() if sum(c.values()) >= 2}
        simultaneous = False
    return NumberComparison(survey, question, other, groups, mechanism.estimate(everyone, level), level, simultaneous)


# -- regression ------------------------------------------------------------------------------------


@dataclass
class NumberRegression:
    """A linear regression of a randomized number on direct questions (HC3 standard errors)."""

    survey: Survey
    outcome: Question
    covariates: list[Question]
    fit: LinearResult
    dropped: list[str]
    analysis: str = "linear"

    def to_dict(self, level: float = LEVEL) -> dict[str, Any]:
        return {
            "survey": self.survey.slug,
            "outcome": self.outcome.key,
            "outcome_text": self.outcome.text,
            "kind": self.analysis,
            "range": {"minimum": self.outcome.minimum, "maximum": self.outcome.maximum},
            "covariates": [
                {"key": q.key, "text": q.text, "kind": q.kind}
                | (
                    {"baseline": None, "options": None, "range": [q.minimum, q.maximum]}
                    if q.is_number
                    else {"baseline": q.labels[0], "options": q.labels}
                )
                for q in self.covariates
            ],
            "dropped": self.dropped,
            **self.fit.to_dict(level),
        }

    def csv(self) -> str:
        data = self.to_dict()
        table = CsvTable(LINEAR_COLUMNS)
        rows = [
            [data["outcome"], c["name"], *(c[x] for x in LINEAR_FIELDS), data["covariance"], data["level"]]
            for c in data["coefficients"]
        ]
        return table.header() + table.rows(rows)


LINEAR_FIELDS = ("estimate", "standard_error", "ci_low", "ci_high", "p_value")
LINEAR_COLUMNS = [
    ("outcome", "text"),
    ("term", "text"),
    *((name, "number") for name in LINEAR_FIELDS),
    ("covariance", "text"),
    ("level", "number"),
]


def report_pattern_sums(
    session: Session, outcome: Question, covariates: list[Question], limit: int | None = None
) -> list[tuple[int, ...]]:
    """``(covariate values..., respondents, Σ code, Σ code²)`` per distinct pattern of the covariates
    among respondents who answered the outcome and every covariate (one GROUP BY over a join per
    covariate, at most ``limit`` rows)."""
    joined = [aliased(Answer) for _ in covariates]
    o = aliased(Answer)
    code = o.value
    query = select(*(c.value for c in joined), func.count(), func.sum(code), func.sum(code * code)).select_from(o)
    for alias, q in zip(joined, covariates, strict=True):
        query = query.join(alias, and_(alias.submission_id == o.submission_id, alias.question_id == q.id))
        if q.decline:  # who declined a covariate did not answer it
            query = query.where(alias.value != DECLINED)
    query = query.where(o.question_id == outcome.id).group_by(*(c.value for c in joined))
    if outcome.decline:  # among those who answered the outcome: a decline is not a report
        query = query.where(o.value != DECLINED)
    if limit is not None:
        query = query.limit(limit)
    return [tuple(int(v) for v in row) for row in session.execute(query)]


def number_regression(
    session: Session, survey: Survey, outcome_key: str | None, covariate_keys: list[str], cov_type: str = "HC3"
) -> NumberRegression:
    """OLS of the randomized number ``outcome_key``'s reports (in its units) on direct covariates:
    a number enters as itself, a question with options as indicators of its options but the first."""
    outcome = _question(session, survey, outcome_key, ("outcome",))
    if not outcome.kind_entry.randomized_number:
        raise DomainError("regression.outcome_not_randomized", path=("outcome",), key=outcome.key)
    covariates = _covariates(session, survey, covariate_keys)
    most = MAX_REGRESSION_CELLS // 2
    rows = report_pattern_sums(session, outcome, covariates, limit=most + 1)
    if not rows:
        raise DomainError("regression.no_answers", path=("outcome",))
    if len(rows) > most:
        raise _too_large(f"more than {most:,}", _number_of_coefficients(covariates))
    values = np.array([row[:-3] for row in rows], dtype=np.int64).reshape(len(rows), len(covariates))
    columns, names, dropped = _design_columns(covariates, values)
    if len(rows) * (len(columns) + 1) > MAX_REGRESSION_CELLS:
        raise _too_large(f"{len(rows):,}", len(columns) + 1)
    n = np.array([row[-3] for row in rows], dtype=float)
    s1 = np.array([row[-2] for row in rows], dtype=float)
    s2 = np.array([row[-1] for row in rows], dtype=float)
    # a report is a + b·code in the question's units: the sums follow from the codes' sums
    mechanism = outcome.mechanism()
    a = float(mechanism.value_of(0))
    b = float(mechanism.value_of(1)) - a
    sums = n * a + b * s1
    squares = n * a * a + 2 * a * b * s1 + b * b * s2
    try:
        fit = linear_regression(_design_matrix(values, columns), n, sums, squares, names=names, cov_type=cov_type)
    except ValueError as e:
        raise DomainError("regression.not_fitted", path=("covariates",), reason=str(e)) from None
    return NumberRegression(survey, outcome, covariates, fit, dropped)
