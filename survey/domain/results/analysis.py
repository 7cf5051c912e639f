"""Comparisons a researcher asks for next: one sensitive answer by group, by week, or against another.

The estimators are the privacy core's (:func:`survey.privacy.breakdown`,
:func:`survey.privacy.association`); this module counts what they need in the database and names
the groups. Counting is one GROUP BY over the answers of the two questions (a self-join on the
submission), so the cost follows the number of answers to the question, not the survey's size; the
figures are in ``benchmarks/scale.md``.

Who is counted: a breakdown counts everyone who answered the sensitive question, those who skipped
the grouping question in a group of their own ("no answer"); an association counts only those who
answered both questions, since a reported pair needs both reports.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import and_, case, func, select
from sqlalchemy.orm import Session, aliased

from survey.domain.errors import DomainError
from survey.domain.models import DECLINED, Answer, Question, Survey
from survey.domain.responses.tallies import question_day_counts, question_mechanism
from survey.domain.responses.writes import TALLY, pair_cells, question_cells
from survey.domain.results.coding import parse_category
from survey.domain.results.csvfile import CsvTable
from survey.domain.results.plans import merge_joins
from survey.domain.surveys.outline import option_counts, question_list
from survey.privacy import Association, Breakdown, RRLogisticResult, association, breakdown, rr_logistic

LEVEL = 0.95
#: The largest table of two randomized questions' answers an association estimates (their numbers of
#: options multiplied). Every cell's interval is a profile-likelihood search over the whole table
#: through the product design (:func:`survey.privacy.association`), and its cost grows faster than the
#: square of the cells: the slowest of the tables ``benchmarks/worst_case.md`` tries took about 0.1 s
#: of CPU at 36 cells, 0.3 s at 100 and 1.3 s at 400 (a uniform table of 1,000 answers there, 12 s);
#: two 50-option questions (2,500 cells) ran for minutes. docs/analysis.md says so.
MAX_ASSOCIATION_CELLS = 36
#: The ``by`` that groups respondents by the week (Monday to Sunday) their answers arrived in.
WEEK = "week"
NO_ANSWER = "no answer"


def week_label(day: dt.date) -> str:
    """The week ``day`` falls in, named by its Monday (ISO weeks start on Monday)."""
    return f"week of {(day - dt.timedelta(days=day.weekday())).isoformat()}"


def _question(session: Session, survey: Survey, key: str | None, path: tuple[str, ...]) -> Question:
    """The survey's question ``key``, read alone (with its options and design): an analysis of two
    questions of a 200-question survey reads two, not 200 with their 10,000 options."""
    if not key:
        raise DomainError("analysis.key_required", path=path, field=path[0])
    found = session.scalar(select(Question).where(Question.survey_id == survey.id, Question.key == key))
    if found is None:
        raise DomainError("analysis.unknown_question", path=path, key=key)
    return found


def pair_counts(session: Session, first: Question, second: Question) -> dict[tuple[int, int | None], int]:
    """How many respondents reported each pair of values: ``(first's value, second's or None)``.

    Everyone who answered ``first`` is counted; None stands for "did not answer ``second``". Read
    from the running pair tallies (:class:`~survey.domain.models.PairTally`) and ``first``'s answer
    tallies, so it costs the same whatever the number of respondents.
    """
    low, high = sorted((first, second), key=lambda q: q.id)
    rows = session.execute(pair_cells(low, high, session.get_bind().dialect.name))
    pairs: dict[tuple[int, int | None], int] = {}
    answered: dict[int, int] = defaultdict(int)
    for value_low, value_high, count in rows:
        value, other = (value_low, value_high) if low is first else (value_high, value_low)
        pairs[(value, other)] = int(count)
        answered[value] += int(count)
    totals = session.execute(question_cells(TALLY["answers"], [first], session.get_bind().dialect.name))
    for _, value, count in totals:
        skipped = int(count) - answered[value]
        if skipped:
            pairs[(value, None)] = skipped
    return pairs


def week_counts(session: Session, question: Question) -> dict[str, np.ndarray]:
    """The question's reported counts per week of submission, in calendar order (from the running
    day tallies)."""
    by_week: dict[dt.date, np.ndarray] = {}
    for day, counts in question_day_counts(session, question).items():
        monday = day - dt.timedelta(days=day.weekday())
        by_week[monday] = by_week.get(monday, 0) + counts
    return {week_label(monday): by_week[monday] for monday in sorted(by_week)}


@dataclass
class Comparison:
    """One sensitive question compared across groups (a :class:`Breakdown`) or with another
    sensitive question (an :class:`Association`), with what the page and the exports need to name it."""

    survey: Survey
    question: Question
    by: Question | None  # None: by week
    analysis: str  # "breakdown" or "association" (``kind`` in the JSON)
    result: Breakdown | Association

    @property
    def by_name(self) -> str:
        return "week of submission" if self.by is None else self.by.key

    def to_dict(self) -> dict[str, Any]:
        return {
            "survey": self.survey.slug,
            "question": self.question.key,
            "question_text": self.question.text,
            "by": WEEK if self.by is None else self.by.key,
            "by_text": "Week of submission" if self.by is None else self.by.text,
            "kind": self.analysis,
            **self.result.to_dict(),
        }

    def csv(self) -> str:
        """The table the page shows, one row per group (breakdown) or per cell (association)."""
        data = self.to_dict()
        if self.analysis == "breakdown":
            table = CsvTable(BREAKDOWN_COLUMNS)
            rows = [_breakdown_row(data, group) for group in data["groups"]]
            rows.append(_breakdown_row(data, {"label": "everyone", **data["total"], "few": False}))
        else:
            table = CsvTable(ASSOCIATION_COLUMNS)
            first, by, level = data["question"], data["by"], data["level"]
            rows = [[first, c["a"], by, c["b"], *(c[x] for x in CELL_FIELDS), level] for c in data["cells"]]
            for name, m in (data["measures"] or {}).items():
                high = math.inf if m["high_unbounded"] else m["ci_high"]
                rows.append([first, name, by, "", None, None, m["estimate"], m["ci_low"], high, level])
        return table.header() + table.rows(rows)


BREAKDOWN_COLUMNS = [
    ("question", "text"),
    ("category", "text"),
    ("by", "text"),
    ("group", "text"),
    ("n", "number"),
    ("share", "number"),
    ("ci_low", "number"),
    ("ci_high", "number"),
    ("level", "number"),
    ("few_respondents", "number"),
    ("difference_vs_rest", "number"),
    ("difference_ci_low", "number"),
    ("difference_ci_high", "number"),
    ("p_value", "number"),
    ("holm_adjusted_p_value", "number"),
]
CELL_FIELDS = ("reported", "unbiased", "proportion", "ci_low", "ci_high")
ASSOCIATION_COLUMNS = [
    ("question_a", "text"),
    ("answer_a", "text"),
    ("question_b", "text"),
    ("answer_b", "text"),
    ("reported", "number"),
    ("unbiased", "number"),
    ("estimate", "number"),
    ("ci_low", "number"),
    ("ci_high", "number"),
    ("level", "number"),
]


def _breakdown_row(data: dict[str, Any], group: dict[str, Any]) -> list[Any]:
    c = group.get("comparison") or {}
    return [
        data["question"],
        data["category"],
        data["by"],
        group["label"],
        group["n"],
        group["share"],
        group["ci_low"],
        group["ci_high"],
        data["level"],
        int(bool(group["few"])),
        c.get("difference"),
        c.get("ci_low"),
        c.get("ci_high"),
        c.get("p_value"),
        group.get("adjusted_p_value"),
    ]


def _no_answers(question: Question) -> DomainError:
    return DomainError("analysis.no_answers", path=("question",), key=question.key)


def compare(
    session: Session,
    survey: Survey,
    question_key: str | None,
    by: str | None,
    category: int | str | None = None,
    level: float = LEVEL,
) -> Comparison:
    """Compare the randomized question ``question_key`` by ``by``: a direct question's key (a
    breakdown by its options), ``"week"`` (a breakdown by week of submission) or another randomized
    question's key (their association). ``category`` is the option whose share a breakdown shows
    and compares (its code; the first option by default)."""
    question = _question(session, survey, question_key, ("question",))
    if not question.is_randomized_option:
        raise DomainError("comparison.not_randomized", path=("question",), key=question.key)
    mechanism = question_mechanism(question)
    if by == WEEK:
        other = None
    else:
        other = _question(session, survey, by, ("by",))
        if other.id == question.id:
            raise DomainError("comparison.same_question", path=("by",))
        if not other.kind_entry.paired or other.is_number:  # a number makes a group of each value
            raise DomainError(
                "comparison.too_many_groups",
                path=("by",),
                key=other.key,
                kind=other.kind,
            )
    code = parse_category(question, category)

    if other is not None and other.is_randomized:
        check_association_size(question, other)
        pairs = pair_counts(session, question, other)
        table = np.zeros((len(question.options), len(other.options)), dtype=np.int64)
        for (value, value_b), count in pairs.items():
            if value_b is not None and 0 <= value < table.shape[0] and 0 <= value_b < table.shape[1]:
                table[value, value_b] += count
        if table.sum() == 0:
            raise DomainError("comparison.no_answers", path=("by",), key=question.key, other=other.key)
        result = association(mechanism, question_mechanism(other), table, level)
        return Comparison(survey, question, other, "association", result)

    if other is None:
        groups = week_counts(session, question)
    else:
        pairs = pair_counts(session, question, other)
        labels = {o.code: o.label for o in other.options}
        k = len(question.options)
        counts = {label: np.zeros(k, dtype=np.int64) for label in labels.values()}
        skipped = np.zeros(k, dtype=np.int64)
        for (value, group), count in pairs.items():
            if 0 <= value < k:
                (counts[labels[group]] if group in labels else skipped)[value] += count
        groups = dict(counts)
        if skipped.sum():
            groups[NO_ANSWER if NO_ANSWER not in groups else f"({NO_ANSWER})"] = skipped
    if not groups or sum(int(c.sum()) for c in groups.values()) == 0:
        raise _no_answers(question)
    result = breakdown(mechanism, groups, level=level, category=code)
    return Comparison(survey, question, other, "breakdown", result)


def check_association_size(question: Question, other: Question) -> None:
    """Refuse, before anything is read or estimated, an association whose table has more cells than
    :data:`MAX_ASSOCIATION_CELLS`, saying what to do instead."""
    cells = len(question.options) * len(other.options)
    if cells > MAX_ASSOCIATION_CELLS:
        raise DomainError(
            "association.too_large",
            path=("by",),
            key=question.key,
            other=other.key,
            options=len(question.options),
            other_options=len(other.options),
            cells=cells,
            most=MAX_ASSOCIATION_CELLS,
        )


def too_large_to_pair(session: Session, survey: Survey, question: Question) -> set[str]:
    """The keys of the randomized questions whose association with ``question`` has more cells than
    :data:`MAX_ASSOCIATION_CELLS` (the compare page says so beside them)."""
    counts = option_counts(session, survey)
    k = counts.get(question.id, 0)
    return {
        q.key
        for q in question_list(session, survey)
        if q.is_randomized and k * counts.get(q.id, 0) > MAX_ASSOCIATION_CELLS
    }


def comparable(session: Session, survey: Survey) -> tuple[list[Question], list[Question]]:
    """The questions a comparison can be asked about (randomized) and by (direct questions with
    options: a number question has too many values to make groups of), in survey order."""
    questions = question_list(session, survey)
    randomized = [q for q in questions if q.is_randomized_option]
    direct = [q for q in questions if not q.is_randomized and q.kind_entry.paired]
    return randomized, direct


def covariates_of(session: Session, survey: Survey) -> list[Question]:
    """The questions a regression can take as covariates: every question asked directly."""
    return [q for q in question_list(session, survey) if not q.is_randomized]


# -- regression ------------------------------------------------------------------------------------


@dataclass
class Regression:
    """A logistic regression of one randomized yes/no-like outcome on direct questions, fitted on
    the counts per covariate pattern (:func:`survey.privacy.rr_logistic`)."""

    survey: Survey
    outcome: Question
    category: int
    covariates: list[Question]
    fit: RRLogisticResult
    patterns: list[tuple[str, ...]]  # per distinct pattern: the option labels, in covariate order
    pattern_n: list[int]
    pattern_x: np.ndarray
    dropped: list[str]  # indicator columns left out because no respondent had that option

    def to_dict(self, level: float = LEVEL) -> dict[str, Any]:
        share, low, high = self.fit.predict(self.pattern_x, level) if self.fit.converged else (None, None, None)
        predictions = [
            {
                "pattern": dict(zip([q.key for q in self.covariates], labels, strict=True)),
                "n": n,
                **(
                    {"share": float(share[i]), "ci_low": float(low[i]), "ci_high": float(high[i])}
                    if share is not None
                    else {"share": None, "ci_low": None, "ci_high": None}
                ),
            }
            for i, (labels, n) in enumerate(zip(self.patterns, self.pattern_n, strict=True))
        ]
        return {
            "survey": self.survey.slug,
            "outcome": self.outcome.key,
            "outcome_text": self.outcome.text,
            "category": self.outcome.labels[self.category],
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
            "predictions": predictions,
        }

    def csv(self) -> str:
        data = self.to_dict()
        table = CsvTable(REGRESSION_COLUMNS)
        rows = [
            [data["outcome"], data["category"], c["name"], *(c[x] for x in COEFFICIENT_FIELDS), data["level"]]
            for c in data["coefficients"]
        ]
        return table.header() + table.rows(rows)


COEFFICIENT_FIELDS = (
    "estimate",
    "standard_error",
    "ci_low",
    "ci_high",
    "p_value",
    "odds_ratio",
    "odds_ratio_low",
    "odds_ratio_high",
)
REGRESSION_COLUMNS = [
    ("outcome", "text"),
    ("category", "text"),
    ("term", "text"),
    *((name, "number") for name in COEFFICIENT_FIELDS),
    ("level", "number"),
]
MAX_COVARIATES = 6
#: The largest model a regression fits on request: its distinct covariate patterns times its
#: coefficients, the cells of the design matrix the fit works on. Each Newton step costs about
#: patterns × coefficients² (and the fit takes up to 105), so this bounds the fit to a fraction of a
#: second (``benchmarks/worst_case.md``); a larger model is refused (422), before it is fitted, with
#: what to do instead. Six 50-option covariates (295 coefficients) so fit up to 338 patterns, a
#: number and five 5-option covariates (22) up to 4,545.
MAX_REGRESSION_CELLS = 100_000
#: The most predictions a regression lists (those of the patterns with the most respondents).
MAX_PREDICTIONS = 1000


def _number_of_coefficients(covariates: list[Question]) -> int:
    """The most coefficients these covariates can make: the intercept, one per number question and
    one per option but the first of every other question."""
    return 1 + sum(1 if q.is_number else len(q.options) - 1 for q in covariates)


def pattern_counts(
    session: Session, outcome: Question, code: int, covariates: list[Question], limit: int | None = None
) -> list[tuple[int, ...]]:
    """``(covariate values..., respondents, of whom reported code)`` per distinct pattern of the
    covariates, among respondents who answered the outcome and every covariate: one GROUP BY over a
    join per covariate, at most ``limit`` rows (which ones, when there are more, is the database's)."""
    joined = [aliased(Answer) for _ in covariates]
    o = aliased(Answer)
    reported = func.sum(case((o.value == code, 1), else_=0))
    query = select(*(c.value for c in joined), func.count(), reported).select_from(o)
    for alias, q in zip(joined, covariates, strict=True):
        query = query.join(alias, and_(alias.submission_id == o.submission_id, alias.question_id == q.id))
        if q.decline:  # who declined a covariate did not answer it
            query = query.where(alias.value != DECLINED)
    query = query.where(o.question_id == outcome.id).group_by(*(c.value for c in joined))
    if outcome.decline:  # among those who answered the outcome: a decline is not a report
        query = query.where(o.value != DECLINED)
    if limit is not None:
        query = query.limit(limit)
    with merge_joins(session):  # one pass over each question's answers, in submission order
        return [tuple(int(v) for v in row) for row in session.execute(query)]


def _design_matrix(values: np.ndarray, columns: list[tuple[int, int | None]]) -> np.ndarray:
    """One row per covariate pattern: the number itself for ``(j, None)``, else the indicator of
    covariate ``j`` having code ``c``."""
    out = np.empty((values.shape[0], len(columns)))
    for i, (j, c) in enumerate(columns):
        out[:, i] = values[:, j] if c is None else (values[:, j] == c)
    return out


def _too_large(patterns: int | str, coefficients: int) -> DomainError:
    return DomainError(
        "regression.too_large",
        path=("covariates",),
        patterns=patterns,
        coefficients=coefficients,
        most=MAX_REGRESSION_CELLS,
    )


def _covariates(session: Session, survey: Survey, covariate_keys: list[str]) -> list[Question]:
    """The covariates a regression was asked for, each once: at least one, at most
    :data:`MAX_COVARIATES`, every one asked directly (a randomized covariate would need its own
    deconvolution). Shared by the regression of a yes/no-like outcome and of a randomized number."""
    keys = list(dict.fromkeys(k for k in covariate_keys if k))
    if not keys:
        raise DomainError("regression.no_covariates", path=("covariates",))
    if len(keys) > MAX_COVARIATES:
        raise DomainError("regression.too_many_covariates", path=("covariates",), most=MAX_COVARIATES)
    covariates = [_question(session, survey, key, ("covariates",)) for key in keys]
    for q in covariates:
        if q.is_randomized:
            raise DomainError("regression.covariate_randomized", path=("covariates",), key=q.key)
    return covariates


def _design_columns(
    covariates: list[Question], values: np.ndarray
) -> tuple[list[tuple[int, int | None]], list[str], list[str]]:
    """The design's columns over the patterns ``values`` (one column per covariate), their names, and
    the indicators dropped: a number question enters as itself; a question with options as one
    indicator per option but the first, for the options someone in the sample chose."""
    columns: list[tuple[int, int | None]] = []
    names, dropped = [], []
    for j, q in enumerate(covariates):
        if q.is_number:
            columns.append((j, None))
            names.append(q.key)
            continue
        seen = set(np.unique(values[:, j]).tolist())
        for code, label in enumerate(q.labels[1:], start=1):
            if code in seen:
                columns.append((j, code))
                names.append(f"{q.key} = {label}")
            else:
                dropped.append(f"{q.key} = {label}")
    return columns, names, dropped


def regression(
    session: Session,
    survey: Survey,
    outcome_key: str | None,
    covariate_keys: list[str],
    category: int | str | None = None,
) -> Regression:
    """Fit ``P(true answer = category | covariates)`` by logistic regression on the randomized
    outcome; each direct covariate enters as indicators of its options, the first option the baseline.

    Its cost is bounded by :data:`MAX_REGRESSION_CELLS` whatever the number of respondents: the
    patterns are read at most as many as could fit, and a model beyond the limit is refused before
    it is fitted. Only the GROUP BY that counts the patterns grows with the respondents."""
    outcome = _question(session, survey, outcome_key, ("outcome",))
    if not outcome.is_randomized_option:
        raise DomainError("regression.outcome_not_randomized", path=("outcome",), key=outcome.key)
    code = parse_category(outcome, category)
    mechanism = question_mechanism(outcome)
    if mechanism.affine_coefficients(code) is None:
        raise DomainError(
            "regression.not_applicable",
            path=("category",),
        )
    covariates = _covariates(session, survey, covariate_keys)
    # every model has the intercept and at least one more coefficient, so more patterns than this is
    # too large whatever options turn out to be chosen
    most = MAX_REGRESSION_CELLS // 2
    rows = pattern_counts(session, outcome, code, covariates, limit=most + 1)
    if not rows:
        raise DomainError("regression.no_answers", path=("outcome",))
    if len(rows) > most:
        raise _too_large(f"more than {most:,}", _number_of_coefficients(covariates))
    values = np.array([row[:-2] for row in rows], dtype=np.int64).reshape(len(rows), len(covariates))
    columns, names, dropped = _design_columns(covariates, values)
    if len(rows) * (len(columns) + 1) > MAX_REGRESSION_CELLS:
        raise _too_large(f"{len(rows):,}", len(columns) + 1)
    X = _design_matrix(values, columns)
    total = np.array([row[-2] for row in rows], dtype=float)
    yes = np.array([row[-1] for row in rows], dtype=float)
    # each pattern twice: its respondents who reported the category, and the others
    try:
        fit = rr_logistic(
            mechanism,
            np.vstack([X, X]),
            np.concatenate([np.ones(len(rows)), np.zeros(len(rows))]),
            np.concatenate([yes, total - yes]),
            category=code,
            names=names,
        )
    except ValueError as e:
        raise DomainError("regression.not_fitted", path=("covariates",), reason=str(e)) from None
    # the predictions, in the order of the codes: every pattern, or the MAX_PREDICTIONS with the most respondents
    busiest = sorted(range(len(rows)), key=lambda i: (-total[i], tuple(values[i])))[:MAX_PREDICTIONS]
    order = sorted(busiest, key=lambda i: tuple(values[i]))
    shown = values[order]
    labels_of = [None if q.is_number else q.labels for q in covariates]
    labels = [
        tuple(str(v) if names_ is None else names_[v] for v, names_ in zip(p.tolist(), labels_of, strict=True))
        for p in shown
    ]
    return Regression(
        survey,
        outcome,
        code,
        covariates,
        fit,
        labels,
        [int(total[i]) for i in order],
        _design_matrix(shown, columns),
        dropped,
    )
