"""Counting reported values and turning the counts into estimates.

Estimates read running tallies (``answer_tallies``, ``submission_tallies``) that every submission
adds to in its own transaction (:func:`survey.domain.submissions.write_submission`), so the counts of a
survey cost a read of at most ``TALLY_SHARDS × cells`` rows whether it has ten respondents or ten
million. The tallies must always equal a GROUP BY over the stored answers; :func:`recount` computes that GROUP BY and
:func:`tally_mismatches` compares the two (the tests and ``flask --app survey recount`` use them).
Nothing here ever loads individual responses into Python.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import and_, delete, func, literal, or_, select, text, union_all
from sqlalchemy.orm import Session, aliased

from survey.privacy import Estimate, Mechanism, estimate, total_epsilon

from .base import begin_writing
from .kinds import NUMBERS, SHARES
from .models import (
    DIRECT_KINDS,
    Answer,
    AnswerTally,
    DayTally,
    PairTally,
    Question,
    Submission,
    SubmissionTally,
    Survey,
)
from .numbers import NumberSummary, summarize


@dataclass(frozen=True)
class Counts:
    """A survey's counts at one moment: submissions, per question id the count of each code, and for
    a number question (whose answers are numbers, not codes) the count of each value answered."""

    submissions: int
    by_question: dict[int, np.ndarray]
    numbers: dict[int, dict[int, int]] = field(default_factory=dict)


def _empty_counts(survey: Survey) -> Counts:
    return Counts(
        0,
        {q.id: np.zeros(len(q.options), dtype=np.int64) for q in survey.questions if not q.is_number},
        {q.id: {} for q in survey.questions if q.is_number},
    )


def _add(counts: Counts, question_id: int, value: int, count: int) -> None:
    if question_id in counts.numbers:
        counts.numbers[question_id][int(value)] = int(count)
    elif question_id in counts.by_question and 0 <= value < len(counts.by_question[question_id]):
        counts.by_question[question_id][value] = int(count)


def survey_counts(session: Session, survey: Survey) -> Counts:
    """The running tallies, summed over shards, read in one statement (so the submission count and
    the answer counts come from the same snapshot)."""
    answers = (
        select(AnswerTally.question_id, AnswerTally.value, func.sum(AnswerTally.count))
        .join(Question, Question.id == AnswerTally.question_id)
        .where(Question.survey_id == survey.id)
        .group_by(AnswerTally.question_id, AnswerTally.value)
    )
    submissions = select(literal(None), literal(None), func.sum(SubmissionTally.count)).where(
        SubmissionTally.survey_id == survey.id
    )
    counts = _empty_counts(survey)
    total = 0
    for question_id, value, count in session.execute(union_all(answers, submissions)):
        if question_id is None:
            total = int(count or 0)
        else:
            _add(counts, question_id, value, count)
    return Counts(total, counts.by_question, counts.numbers)


def submission_count(session: Session, survey: Survey) -> int:
    """How many submissions the survey has stored (from the running tally)."""
    total = session.scalar(select(func.sum(SubmissionTally.count)).where(SubmissionTally.survey_id == survey.id))
    return int(total or 0)


# -- keeping the tallies ---------------------------------------------------------------------------


def recount(session: Session, survey: Survey) -> Counts:
    """The counts by GROUP BY over the stored submissions and answers: what the tallies must equal."""
    counts = _empty_counts(survey)
    rows = session.execute(
        select(Answer.question_id, Answer.value, func.count())
        .join(Question, Question.id == Answer.question_id)
        .where(Question.survey_id == survey.id)
        .group_by(Answer.question_id, Answer.value)
    )
    for question_id, value, count in rows:
        _add(counts, question_id, value, count)
    total = session.scalar(select(func.count()).select_from(Submission).where(Submission.survey_id == survey.id))
    return Counts(int(total or 0), counts.by_question, counts.numbers)


#: ``(question id, value, other question id, other value) → count`` and ``(question id, value, day) → count``
PairCounts = dict[tuple[int, int, int, int], int]
DayCounts = dict[tuple[int, int, Any], int]


def _survey_question_ids(survey: Survey) -> Any:
    return select(Question.id).where(Question.survey_id == survey.id).scalar_subquery()


def pair_tally_counts(session: Session, survey: Survey) -> PairCounts:
    """The pair tallies of ``survey``, summed over shards."""
    rows = session.execute(
        select(
            PairTally.question_id, PairTally.value, PairTally.other_id, PairTally.other_value, func.sum(PairTally.count)
        )
        .where(PairTally.question_id.in_(_survey_question_ids(survey)))
        .group_by(PairTally.question_id, PairTally.value, PairTally.other_id, PairTally.other_value)
    )
    return {(a, va, b, vb): int(c) for a, va, b, vb, c in rows if c}


def day_tally_counts(session: Session, survey: Survey) -> DayCounts:
    """The day tallies of ``survey``, summed over shards."""
    rows = session.execute(
        select(DayTally.question_id, DayTally.value, DayTally.day, func.sum(DayTally.count))
        .where(DayTally.question_id.in_(_survey_question_ids(survey)))
        .group_by(DayTally.question_id, DayTally.value, DayTally.day)
    )
    return {(q, v, day): int(c) for q, v, day, c in rows if c}


def question_day_counts(session: Session, question: Question) -> dict[Any, np.ndarray]:
    """One question's reported counts per day of submission (the day tallies), days in order."""
    rows = session.execute(
        select(DayTally.day, DayTally.value, func.sum(DayTally.count))
        .where(DayTally.question_id == question.id)
        .group_by(DayTally.day, DayTally.value)
    )
    k = len(question.options)
    per_day: dict[Any, np.ndarray] = {}
    for day, value, count in rows:
        if isinstance(day, str):  # SQLite hands back the ISO text in a GROUP BY over a bare column
            day = dt.date.fromisoformat(day)
        if 0 <= value < k:
            per_day.setdefault(day, np.zeros(k, dtype=np.int64))[value] += int(count)
    return {day: per_day[day] for day in sorted(per_day)}


def questions_day_counts(session: Session, questions: list[Question]) -> dict[int, dict[Any, np.ndarray]]:
    """:func:`question_day_counts` of several questions at once (by question id), in one query."""
    if not questions:
        return {}
    by_id = {q.id: q for q in questions}
    rows = session.execute(
        select(DayTally.question_id, DayTally.day, DayTally.value, func.sum(DayTally.count))
        .where(DayTally.question_id.in_(list(by_id)))
        .group_by(DayTally.question_id, DayTally.day, DayTally.value)
    )
    found: dict[int, dict[Any, np.ndarray]] = {}
    for question_id, day, value, count in rows:
        if isinstance(day, str):  # SQLite hands back the ISO text in a GROUP BY over a bare column
            day = dt.date.fromisoformat(day)
        k = len(by_id[question_id].options)
        if 0 <= value < k:
            found.setdefault(question_id, {}).setdefault(day, np.zeros(k, dtype=np.int64))[value] += int(count)
    return {q: {day: per_day[day] for day in sorted(per_day)} for q, per_day in found.items()}


def recount_pairs(session: Session, survey: Survey) -> PairCounts:
    """What the pair tallies must equal: the GROUP BY over every pair of one submission's answers to
    two questions (lower id first) of which one is randomized and neither is a number question."""
    a, b = aliased(Answer), aliased(Answer)
    qa, qb = aliased(Question), aliased(Question)
    rows = session.execute(
        select(a.question_id, a.value, b.question_id, b.value, func.count())
        .join(b, and_(b.submission_id == a.submission_id, b.question_id > a.question_id))
        .join(qa, qa.id == a.question_id)
        .join(qb, qb.id == b.question_id)
        .where(
            qa.survey_id == survey.id,
            qa.kind != "number",
            qb.kind != "number",
            or_(qa.kind.not_in(DIRECT_KINDS), qb.kind.not_in(DIRECT_KINDS)),
        )
        .group_by(a.question_id, a.value, b.question_id, b.value)
    )
    return {(x, vx, y, vy): int(c) for x, vx, y, vy, c in rows}


def recount_days(session: Session, survey: Survey) -> DayCounts:
    """What the day tallies must equal: each randomized question's answers per value and day."""
    rows = session.execute(
        select(Answer.question_id, Answer.value, Submission.submitted_on, func.count())
        .join(Submission, Submission.id == Answer.submission_id)
        .join(Question, Question.id == Answer.question_id)
        .where(Question.survey_id == survey.id, Question.kind.not_in(DIRECT_KINDS))
        .group_by(Answer.question_id, Answer.value, Submission.submitted_on)
    )
    return {(q, v, day): int(c) for q, v, day, c in rows}


def _differences(name: str, kept: dict, counted: dict) -> list[str]:
    differ = sorted((k for k in kept.keys() | counted.keys() if kept.get(k) != counted.get(k)), key=str)
    if not differ:
        return []
    shown = "; ".join(f"{k}: tally {kept.get(k, 0)}, recount {counted.get(k, 0)}" for k in differ[:3])
    return [f"{name}: {len(differ)} cells differ ({shown})"]


def tally_mismatches(session: Session, survey: Survey) -> list[str]:
    """Where the running tallies differ from a recount, in words; empty when they agree."""
    kept, counted = survey_counts(session, survey), recount(session, survey)
    problems = _differences("pairs of answers", pair_tally_counts(session, survey), recount_pairs(session, survey))
    problems += _differences("answers per day", day_tally_counts(session, survey), recount_days(session, survey))
    if kept.submissions != counted.submissions:
        problems.append(f"submissions: tally {kept.submissions}, recount {counted.submissions}")
    for q in survey.questions:
        if q.is_number:
            x, y = kept.numbers[q.id], counted.numbers[q.id]
            if x != y:
                differ = sorted(v for v in x.keys() | y.keys() if x.get(v) != y.get(v))
                pairs = ", ".join(f"{v}: tally {x.get(v, 0)}, recount {y.get(v, 0)}" for v in differ[:5])
                problems.append(f"question {q.key!r}: {pairs}")
            continue
        a, b = kept.by_question[q.id], counted.by_question[q.id]
        if not np.array_equal(a, b):
            problems.append(f"question {q.key!r}: tally {a.tolist()}, recount {b.tolist()}")
    return problems


def rebuild_tallies(session: Session, survey: Survey) -> None:
    """Replace the survey's tallies by a recount (after a bulk load; to repair). The caller commits.

    On PostgreSQL new submissions are held off first, so a submission committing meanwhile is either
    in the recount or adds to the rebuilt tally, never both and never neither. The rebuild locks one
    table, ``submissions``, which every submission writes (SHARE ROW EXCLUSIVE: readers go on,
    writers wait). One table, not the tally tables themselves: a submission's single statement takes
    its table locks in an order PostgreSQL chooses (a prepared plan takes them in another order than
    a freshly parsed one), so locking two tables could interleave with a submission holding the
    second and wanting the first, a deadlock. A submission waiting for this lock holds no row locks
    yet (every table lock of a statement is taken before it runs), and the rebuild needs no lock a
    submission's table locks conflict with, so no cycle can form. SQLite has one writer at a time.
    """
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text(f"LOCK TABLE {Submission.__tablename__} IN SHARE ROW EXCLUSIVE MODE"))
    survey_id = survey.id  # (a read, if the survey was expired: before the write lock below)
    begin_writing(session)
    question_ids = select(Question.id).where(Question.survey_id == survey_id).scalar_subquery()
    session.execute(delete(AnswerTally).where(AnswerTally.question_id.in_(question_ids)))
    session.execute(delete(PairTally).where(PairTally.question_id.in_(question_ids)))
    session.execute(delete(DayTally).where(DayTally.question_id.in_(question_ids)))
    session.execute(delete(SubmissionTally).where(SubmissionTally.survey_id == survey_id))
    pairs = [
        {"question_id": a, "value": va, "other_id": b, "other_value": vb, "shard": 0, "count": c}
        for (a, va, b, vb), c in recount_pairs(session, survey).items()
    ]
    if pairs:
        session.execute(PairTally.__table__.insert(), pairs)
    days = [
        {"question_id": q, "value": v, "day": day, "shard": 0, "count": c}
        for (q, v, day), c in recount_days(session, survey).items()
    ]
    if days:
        session.execute(DayTally.__table__.insert(), days)
    counted = recount(session, survey)
    rows = [
        {"question_id": qid, "value": code, "shard": 0, "count": int(c)}
        for qid, counts in counted.by_question.items()
        for code, c in enumerate(counts)
        if c
    ] + [
        {"question_id": qid, "value": value, "shard": 0, "count": c}
        for qid, values in counted.numbers.items()
        for value, c in values.items()
        if c
    ]
    if rows:
        session.execute(AnswerTally.__table__.insert(), rows)
    if counted.submissions:
        session.execute(
            SubmissionTally.__table__.insert(), [{"survey_id": survey.id, "shard": 0, "count": counted.submissions}]
        )


# -- estimates -------------------------------------------------------------------------------------


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


def survey_results(
    session: Session, survey: Survey, counts: Counts | None = None, questions: list[Question] | None = None
) -> list[QuestionResult]:
    """Every option question's counts and estimate (number questions: :func:`number_results`), or
    those of ``questions`` (a page of them); ``counts`` defaults to the running tallies read now."""
    by_question = (counts or survey_counts(session, survey)).by_question
    results = []
    for q in survey.questions if questions is None else questions:
        if q.kind_entry.result != SHARES:
            continue  # summarized, not estimated: see number_results
        mech = question_mechanism(q)
        c = by_question[q.id]
        results.append(QuestionResult(q, mech, c, estimate(mech, c) if c.sum() > 0 else None))
    return results


def number_results(
    session: Session, survey: Survey, counts: Counts | None = None, questions: list[Question] | None = None
) -> list[NumberSummary]:
    """Every number question's summary (or those among ``questions``), from the running tallies
    (``counts``, read now by default)."""
    numbers = (counts or survey_counts(session, survey)).numbers
    chosen = survey.questions if questions is None else questions
    return [summarize(q, numbers[q.id]) for q in chosen if q.kind_entry.result == NUMBERS]


def results_total_epsilon(results: list[QuestionResult]) -> float:
    """The survey's total ε from mechanisms already built for its results (saves rebuilding them)."""
    return total_epsilon(r.mechanism for r in results if r.randomized)
