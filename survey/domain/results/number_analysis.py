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
  holds at once, Bonferroni) or, for Laplace, each group's normal interval; and each answered
  group's mean minus the first's, with MOVER's interval from the two groups' own intervals
  (:func:`mean_differences`: they hold together, and never reach beyond the range's width);
- **regression** (:func:`number_regression`): OLS with heteroskedasticity-consistent (HC3) standard
  errors from each covariate pattern's count, sum of reports and sum of squared reports (one GROUP
  BY over the answers, like the logistic regression of a randomized option).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session, aliased

from survey.domain.errors import DomainError
from survey.domain.models import DECLINED, Answer, Question, Survey
from survey.domain.responses.writes import TALLY, pair_cells, question_cells
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
)
from survey.domain.results.csvfile import CsvTable
from survey.domain.results.kept import digest, kept
from survey.privacy.bounded import MeanInterval, mean_interval
from survey.privacy.linear import LinearResult, linear_regression
from survey.privacy.numeric import GRID_STEPS

__all__ = [
    "MeanDifference",
    "NumberComparison",
    "NumberRegression",
    "compare_number",
    "mean_differences",
    "mover",
    "number_regression",
]


@dataclass(frozen=True)
class MeanDifference:
    """One group's mean minus the reference group's, with its interval."""

    label: str
    reference: str
    difference: float
    low: float
    high: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "minus": self.reference,
            "difference": self.difference,
            "ci_low": self.low,
            "ci_high": self.high,
        }


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
    #: Each answered group's mean minus the first answered group's (in the options' order), with
    #: MOVER intervals that hold all at once; empty with fewer than two answered groups.
    differences: tuple[MeanDifference, ...] = ()
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
            "reference": self.differences[0].reference if self.differences else None,
            "differences": [d.to_dict() for d in self.differences],
            "differences_method": "mover" if self.differences else None,
        }

    def csv(self) -> str:
        data = self.to_dict()
        table = CsvTable(NUMBER_BREAKDOWN_COLUMNS)
        differences = {d["label"]: d for d in data["differences"]}
        rows = []
        for g in [*data["groups"], {"label": "everyone", **data["total"]}]:
            d = differences.get(g["label"], {})
            group = [g["label"], g["n"], g["mean"], g["ci_low"], g["ci_high"], data["level"]]
            difference = [d.get("minus"), d.get("difference"), d.get("ci_low"), d.get("ci_high")]
            rows.append([data["question"], data["by"], *group, *difference])
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
    # the group's mean minus the reference group's (empty on the reference's row, "no answer" and
    # "everyone"), with its MOVER interval: all the differences' intervals hold at once at ``level``
    ("minus", "text"),
    ("difference", "number"),
    ("difference_low", "number"),
    ("difference_high", "number"),
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
    (those who skipped it in a group of their own) and the differences between the groups, from the
    pair tallies; the figures are kept while the counts read are the same."""
    question = _randomized_number(session, survey, question_key, ("question",))
    other = _question(session, survey, by, ("by",))
    if other.is_randomized or not other.kind_entry.paired:
        raise DomainError("comparison.number_by_direct", path=("by",), key=other.key)
    mechanism = question.mechanism()
    labels = {o.code: o.label for o in other.options}
    codes, by_group = _codes_by_group(session, question, other)
    everyone = sum(by_group.values(), np.zeros(codes.size, dtype=np.int64))
    if not everyone.any():
        raise DomainError("analysis.no_answers", path=("question",), key=question.key)
    counts: dict[str, np.ndarray] = {label: np.zeros(codes.size, dtype=np.int64) for label in labels.values()}
    skipped = np.zeros(codes.size, dtype=np.int64)
    for group, c in by_group.items():
        into = counts[labels[group]] if group in labels else skipped
        into += c
    if skipped.any():
        counts[NO_ANSWER if NO_ANSWER not in counts else f"({NO_ANSWER})"] = skipped
    options = list(labels.values())
    groups, total, simultaneous, differences = kept(
        digest(
            [
                "number_breakdown",
                repr(mechanism),
                level,
                codes.tobytes(),
                *(part for label, c in counts.items() for part in (label, c.tobytes())),
            ]
        ),
        lambda: _group_means(mechanism, codes, counts, everyone, level, options),
    )
    return NumberComparison(survey, question, other, dict(groups), total, level, simultaneous, differences)


def _codes_by_group(session: Session, question: Question, other: Question) -> tuple[np.ndarray, dict[Any, np.ndarray]]:
    """The randomized number's codes (sorted) and, per value of ``other`` (None: did not answer it),
    how many reported each code: :func:`~survey.domain.results.analysis.pair_counts` as arrays,
    without the number's declines (its answer tally counts them under :data:`DECLINED`, which is no
    report: the pair tallies hold reports only). The two GROUP BYs over the tallies are most of the
    cost; the rows come back as whole numbers on the connection (no ORM rows, no Decimals) and are
    summed by numpy."""
    low, high = sorted((question, other), key=lambda q: q.id)
    connection = session.connection()
    pairs = connection.execute(pair_cells(low, high, connection.dialect.name)).all()
    cells = question_cells(TALLY["answers"], [question], connection.dialect.name).subquery("cells")
    totals = connection.execute(
        select(cells.c.value, cells.c.n).where(*([cells.c.value != DECLINED] if question.decline else []))
    ).all()
    pair = _as_array(pairs, 3)
    if low is not question:
        pair[:, [0, 1]] = pair[:, [1, 0]]
    total = _as_array(totals, 2)
    codes = np.unique(np.concatenate([pair[:, 0], total[:, 0]]))
    size = codes.size
    at = np.searchsorted(codes, pair[:, 0])
    by_group: dict[Any, np.ndarray] = {}
    for group in np.unique(pair[:, 1]).tolist():
        mine = pair[:, 1] == group
        by_group[group] = np.bincount(at[mine], weights=pair[mine, 2], minlength=size).astype(np.int64)
    answered = sum(by_group.values(), np.zeros(size, dtype=np.int64))
    everyone = np.bincount(np.searchsorted(codes, total[:, 0]), weights=total[:, 1], minlength=size).astype(np.int64)
    if (everyone - answered).any():
        by_group[None] = np.maximum(everyone - answered, 0)
    return codes, by_group


def _as_array(rows: Sequence[Any], width: int) -> np.ndarray:
    """Rows of whole numbers as an array (np.array on the rows themselves probes each one for the
    array protocol, a caught exception per row: ten times the query's own time)."""
    flat = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64, count=len(rows) * width)
    return flat.reshape(-1, width)


def _group_means(
    mechanism: Any,
    codes: np.ndarray,
    counts: dict[str, np.ndarray],
    everyone: np.ndarray,
    level: float,
    options: Sequence[str],
) -> tuple[dict[str, MeanInterval], MeanInterval, bool, tuple[MeanDifference, ...]]:
    """Each group's mean of the codes' reports and everyone's, with the mechanism's intervals, and
    the differences between the answered option groups (:func:`mean_differences`)."""
    bounded = math.isfinite(mechanism.bound)
    values = mechanism.value_of(codes)
    ends = mechanism.value_of([0, GRID_STEPS]) if bounded else None

    def interval(c: np.ndarray, at: float) -> MeanInterval:
        if bounded:
            return mean_interval(values[c > 0], c[c > 0], float(ends[0]), float(ends[1]), at)
        return mechanism.estimate(_as_counts(codes, c), at)

    if bounded:
        each = 1 - (1 - level) / max(sum(1 for c in counts.values() if c.any()), 1)  # Bonferroni
        groups = {label: interval(c, each) for label, c in counts.items() if c.any()}
    else:  # Laplace: each group's normal interval (it needs two reports)
        groups = {label: interval(c, level) for label, c in counts.items() if c.sum() >= 2}
    answered = [label for label in options if label in groups]
    differences = mean_differences(
        {label: (lambda at, c=counts[label]: interval(c, at)) for label in answered},
        level,
        mechanism.high - mechanism.low,
    )
    return groups, mechanism.estimate(_as_counts(codes, everyone), level), bounded, differences


def mover(first: MeanInterval, second: MeanInterval, width: float) -> tuple[float, float, float]:
    """``first − second`` and its MOVER interval (Zou & Donner 2008) from the two means' own
    intervals, cut to ``[−width, width]`` (two means of numbers in a range of that width differ by
    at most it): ``d ∓ √((θ̂₁ − l₁)² + (u₂ − θ̂₂)²)``, ``d + √((u₁ − θ̂₁)² + (θ̂₂ − l₂)²)``."""
    d = first.estimate - second.estimate
    low = d - math.hypot(first.estimate - first.low, second.high - second.estimate)
    high = d + math.hypot(first.high - first.estimate, second.estimate - second.low)
    return d, max(low, -width), min(high, width)


def mean_differences(
    intervals: Mapping[str, Callable[[float], MeanInterval]], level: float, width: float
) -> tuple[MeanDifference, ...]:
    """Each group's mean minus the first group's, from ``intervals`` (per group, in order: its mean
    with its interval at a given level). The differences' intervals hold all at once at ``level``
    (Bonferroni over the differences): each is MOVER's from the two groups' own intervals at
    ``1 − (1 − level)/differences``. With two groups, the one difference."""
    labels = list(intervals)
    if len(labels) < 2:
        return ()
    at = 1 - (1 - level) / (len(labels) - 1)
    means = {label: intervals[label](at) for label in labels}
    reference = labels[0]
    out = []
    for label in labels[1:]:
        d, low, high = mover(means[label], means[reference], width)
        out.append(MeanDifference(label, reference, d, low, high))
    return tuple(out)


def _as_counts(codes: np.ndarray, c: np.ndarray) -> dict[int, int]:
    return {int(code): int(n) for code, n in zip(codes, c, strict=True) if n > 0}


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
