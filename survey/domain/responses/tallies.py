"""Counting reported values and turning the counts into estimates.

Estimates read running tallies (``answer_tallies``, ``submission_tallies``...; declared in
:mod:`survey.domain.responses.writes`): the submission tally is added to in each submission's own
transaction, the others by the fold a moment later, and every read adds the submissions still
listed for the fold in the same statement. So the counts of a survey cost a read of at most
``TALLY_SHARDS × cells`` rows and the answers of a few hundred listed submissions, whether it has
ten respondents or ten million. The tallies must always equal a GROUP BY over the stored answers:
:func:`recount` computes it (the declaration's own ``SELECT`` over the stored answers) and
:func:`tally_mismatches` compares the two (the tests and ``flask --app survey recount`` use them).
Nothing here ever loads individual responses into Python.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import CompoundSelect, SmallInteger, delete, func, insert, literal, select, text, union_all
from sqlalchemy.orm import Session

from survey.domain.base import begin_writing
from survey.domain.models import (
    DECLINED,
    AnswerTally,
    PendingSubmission,
    Question,
    Submission,
    SubmissionTally,
    Survey,
)
from survey.domain.responses.mixing import question_kinds
from survey.domain.results.kept import kept_estimate
from survey.domain.results.numbers import NumberSummary, summarize
from survey.domain.results.randomized_numbers import RandomizedNumberSummary, summarize_reports
from survey.domain.surveys.arms import composed
from survey.domain.surveys.kinds import NUMBERS, SHARES
from survey.privacy import Estimate, Mechanism, estimate, total_epsilon

from . import writes


@dataclass(frozen=True)
class Counts:
    """A survey's counts at one moment: submissions, per question id the count of each code, and for
    a number question (whose answers are numbers, not codes) the count of each value answered."""

    submissions: int
    by_question: dict[int, np.ndarray]
    numbers: dict[int, dict[int, int]] = field(default_factory=dict)
    #: Per question that may be declined, how many respondents declined it (kept apart from the
    #: reports: an estimate is about those who answered).
    declined: dict[int, int] = field(default_factory=dict)


def _empty_counts(survey: Survey) -> Counts:
    return Counts(
        0,
        {q.id: np.zeros(len(q.options), dtype=np.int64) for q in survey.questions if not q.is_number},
        {q.id: {} for q in survey.questions if q.is_number},
        {q.id: 0 for q in survey.questions if q.decline},
    )


def _add(counts: Counts, question_id: int, value: int, count: int) -> None:
    if value == DECLINED and question_id in counts.declined:
        # only a question that may be declined stores DECLINED, and only as a decline
        counts.declined[question_id] = int(count)
    elif question_id in counts.numbers:
        counts.numbers[question_id][int(value)] = int(count)
    elif question_id in counts.by_question and 0 <= value < len(counts.by_question[question_id]):
        counts.by_question[question_id][value] = int(count)


def counts_statement(survey_id: int, feeds: Mapping[int, writes.Feeds], dialect: str = "postgresql") -> CompoundSelect:
    """The one SELECT of a survey's running tallies: ``(question id, value, count)`` per answer cell,
    summed over shards, with the answers of the submissions not yet folded
    (:func:`survey.domain.responses.writes.with_listed`; ``feeds``: what each of the survey's
    questions feeds), and a row ``(None, None, submissions)``."""
    tally = writes.TALLY["answers"]
    of_survey = AnswerTally.question_id.in_(select(Question.id).where(Question.survey_id == survey_id))
    answers = writes.with_listed(tally, of_survey, feeds, dialect)
    submissions = select(literal(None), literal(None), func.sum(SubmissionTally.count)).where(
        SubmissionTally.survey_id == survey_id
    )
    return union_all(answers, submissions)


def survey_counts(session: Session, survey: Survey) -> Counts:
    """The running tallies, summed over shards, with the submissions not yet folded, read in one
    statement (so the submission count and the answer counts come from the same snapshot)."""
    counts = _empty_counts(survey)
    total = 0
    dialect = session.get_bind().dialect.name
    for question_id, value, count in session.execute(counts_statement(survey.id, question_kinds(survey), dialect)):
        if question_id is None:
            total = int(count or 0)
        else:
            _add(counts, question_id, value, count)
    return Counts(total, counts.by_question, counts.numbers, counts.declined)


def submission_count(session: Session, survey: Survey) -> int:
    """How many submissions the survey has stored (from the running tally)."""
    total = session.scalar(select(func.sum(SubmissionTally.count)).where(SubmissionTally.survey_id == survey.id))
    return int(total or 0)


# -- keeping the tallies ---------------------------------------------------------------------------


def _recounted(session: Session, survey: Survey, name: str) -> list[Any]:
    """The rows (keys..., n) that tally ``name`` of :data:`survey.domain.responses.writes.TALLIES` must hold:
    the declaration every writer follows, over the survey's stored submissions and answers."""
    source = writes.stored(question_kinds(survey), survey_id=survey.id)
    return list(session.execute(writes.TALLY[name].counted(*source)))


def recount(session: Session, survey: Survey) -> Counts:
    """The counts by GROUP BY over the stored submissions and answers: what the tallies must equal."""
    counts = _empty_counts(survey)
    for question_id, value, count in _recounted(session, survey, "answers"):
        _add(counts, question_id, value, count)
    total = sum(int(n) for _, n in _recounted(session, survey, "submissions"))
    return Counts(total, counts.by_question, counts.numbers, counts.declined)


#: ``(question id, value, other question id, other value) → count`` and ``(question id, value, day) → count``
PairCounts = dict[tuple[int, int, int, int], int]
DayCounts = dict[tuple[int, int, Any], int]


def tally_cells(session: Session, survey: Survey, tally: writes.Tally) -> dict[tuple, int]:
    """``tally``'s cells of ``survey`` as stored, summed over shards, with what the submissions not
    yet folded add to a deferred tally (:mod:`survey.domain.responses.pending`): keys → count,
    as every reader sees them."""
    kept = tally.kept().where(tally.of_survey(survey.id))
    if tally.deferred:  # one statement, one snapshot: a submission is listed or folded, not both
        dialect = session.get_bind().dialect.name
        kept = writes.with_listed(tally, tally.of_survey(survey.id), question_kinds(survey), dialect)
    rows = session.execute(kept)
    return {tuple(row[:-1]): int(row[-1]) for row in rows if row[-1]}


def recounted_cells(session: Session, survey: Survey, tally: writes.Tally) -> dict[tuple, int]:
    """What ``tally``'s cells of ``survey`` must hold: keys → count, recounted from the answers."""
    return {tuple(row[:-1]): int(row[-1]) for row in _recounted(session, survey, tally.name)}


def pair_tally_counts(session: Session, survey: Survey) -> PairCounts:
    """The pair tallies of ``survey``, summed over shards, with the submissions not yet folded."""
    return tally_cells(session, survey, writes.TALLY["pairs"])  # type: ignore[return-value]


def day_tally_counts(session: Session, survey: Survey) -> DayCounts:
    """The day tallies of ``survey``, summed over shards, with the submissions not yet folded."""
    return tally_cells(session, survey, writes.TALLY["days"])  # type: ignore[return-value]


def question_day_counts(session: Session, question: Question) -> dict[Any, np.ndarray]:
    """One question's reported counts per day of submission (the day tallies), days in order."""
    return questions_day_counts(session, [question]).get(question.id, {})


def questions_day_counts(session: Session, questions: list[Question]) -> dict[int, dict[Any, np.ndarray]]:
    """:func:`question_day_counts` of several questions at once (by question id), in one query.

    The rows (a question's days times its options) are put in place by numpy, one array per
    question: a page of 25 questions over a year has tens of thousands of them."""
    if not questions:
        return {}
    by_id = {q.id: q for q in questions}
    cells = writes.question_cells(writes.TALLY["days"], questions, session.get_bind().dialect.name)
    rows = session.execute(cells).all()
    if not rows:
        return {}
    question_ids, values, days, counts = zip(*rows, strict=True)
    if isinstance(days[0], str):  # SQLite hands back the ISO text in a GROUP BY over a bare column
        days = tuple(dt.date.fromisoformat(d) for d in days)
    question_ids, values = np.asarray(question_ids), np.asarray(values, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    found: dict[int, dict[Any, np.ndarray]] = {}
    for question_id in np.unique(question_ids).tolist():
        k = len(by_id[question_id].options)
        mine = np.flatnonzero((question_ids == question_id) & (values >= 0) & (values < k))
        if not len(mine):
            continue
        ordered = sorted({days[i] for i in mine})
        row_of = {day: i for i, day in enumerate(ordered)}
        table = np.zeros((len(ordered), k), dtype=np.int64)
        np.add.at(table, ([row_of[days[i]] for i in mine], values[mine]), counts[mine])
        found[question_id] = dict(zip(ordered, table, strict=True))
    return found


def recount_pairs(session: Session, survey: Survey) -> PairCounts:
    """What the pair tallies must equal: the GROUP BY over every pair of one submission's answers to
    two questions (lower id first) that the declaration pairs (:func:`survey.domain.responses.writes.what_it_feeds`)."""
    return {(x, vx, y, vy): int(c) for x, vx, y, vy, c in _recounted(session, survey, "pairs")}


def recount_days(session: Session, survey: Survey) -> DayCounts:
    """What the day tallies must equal: the answers, per value and day, of the questions counted by day."""
    return {(q, v, day): int(c) for q, v, day, c in _recounted(session, survey, "days")}


def _differences(name: str, kept: dict, counted: dict) -> list[str]:
    differ = sorted((k for k in kept.keys() | counted.keys() if kept.get(k) != counted.get(k)), key=str)
    if not differ:
        return []
    shown = "; ".join(f"{k}: tally {kept.get(k, 0)}, recount {counted.get(k, 0)}" for k in differ[:3])
    return [f"{name}: {len(differ)} cells differ ({shown})"]


def tally_mismatches(session: Session, survey: Survey) -> list[str]:
    """Where the running tallies differ from a recount, in words; empty when they agree. Every tally
    of :data:`survey.domain.responses.writes.TALLIES` is checked against that same declaration."""
    problems: list[str] = []
    for tally in writes.TALLIES:
        kept, counted = tally_cells(session, survey, tally), recounted_cells(session, survey, tally)
        if kept == counted:
            continue
        if tally.name == "submissions":
            problems.append(f"submissions: tally {sum(kept.values())}, recount {sum(counted.values())}")
        elif tally.name == "answers":
            problems += _answer_differences(survey, kept, counted)
        else:
            problems += _differences(tally.label, kept, counted)
    return problems


def _answer_differences(survey: Survey, kept: dict[tuple, int], counted: dict[tuple, int]) -> list[str]:
    """The answer tallies' differences, question by question: option counts in code order, or the
    numbers answered that differ."""
    problems = []
    for q in survey.questions:
        x = {v: n for (qid, v), n in kept.items() if qid == q.id}
        y = {v: n for (qid, v), n in counted.items() if qid == q.id}
        if x == y:
            continue
        if q.is_number:
            differ = sorted(v for v in x.keys() | y.keys() if x.get(v) != y.get(v))
            pairs = ", ".join(f"{v}: tally {x.get(v, 0)}, recount {y.get(v, 0)}" for v in differ[:5])
            problems.append(f"question {q.key!r}: {pairs}")
        else:
            codes = range(len(q.options))
            tally, again = [x.get(c, 0) for c in codes], [y.get(c, 0) for c in codes]
            problems.append(f"question {q.key!r}: tally {tally}, recount {again}")
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
    feeds = question_kinds(survey)
    begin_writing(session)
    # Unlisted first, before any tally is touched: a fold holding some of these rows is waited for
    # (it needs nothing the rebuild holds by then, so the two cannot wait in a circle), a fold that
    # comes later skips them, and the recount below counts them.
    mine = select(Submission.id).where(Submission.survey_id == survey_id)
    session.execute(
        delete(PendingSubmission)
        .where(PendingSubmission.submission_id.in_(mine))
        .execution_options(synchronize_session=False)
    )
    for tally in writes.TALLIES:
        session.execute(delete(tally.table).where(tally.of_survey(survey_id)))
    source = writes.stored(feeds, survey_id=survey_id)
    for tally in writes.TALLIES:
        rows = tally.with_shard(*source, literal(0, SmallInteger))
        session.execute(insert(tally.table).from_select([*tally.keys, "shard", "count"], rows))


# -- estimates -------------------------------------------------------------------------------------


@dataclass
class QuestionResult:
    """One question's counts and, once someone answered it, its estimate."""

    question: Question
    mechanism: Mechanism
    counts: np.ndarray
    estimate: Estimate | None
    #: How many declined it ("prefer not to say"), where it may be declined (else None). Declines are
    #: not reports: ``n`` and the estimate are about those who answered.
    declined: int | None = None

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
            "declined": self.declined,
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
    counts = counts or survey_counts(session, survey)
    by_question = counts.by_question
    results = []
    for q in survey.questions if questions is None else questions:
        if q.kind_entry.result != SHARES:
            continue  # summarized, not estimated: see number_results
        mech = question_mechanism(q)
        c = by_question[q.id]
        found = kept_estimate(mech, c, estimate) if c.sum() > 0 else None
        results.append(QuestionResult(q, mech, c, found, counts.declined.get(q.id)))
    return results


def number_results(
    session: Session, survey: Survey, counts: Counts | None = None, questions: list[Question] | None = None
) -> list[NumberSummary | RandomizedNumberSummary]:
    """Every number question's summary (or those among ``questions``), from the running tallies
    (``counts``, read now by default): asked directly, the numbers summarized; randomized, the mean
    its mechanism estimates from the tallies of report codes."""
    counts = counts or survey_counts(session, survey)
    numbers = counts.numbers
    chosen = survey.questions if questions is None else questions
    return [
        dataclasses.replace(summarize_reports(q, numbers[q.id]), declined=counts.declined.get(q.id))
        if q.kind_entry.randomized_number
        else summarize(q, numbers[q.id])
        for q in chosen
        if q.kind_entry.result == NUMBERS
    ]


def results_total_epsilon(
    results: list[QuestionResult], numbers: list[NumberSummary | RandomizedNumberSummary] = ()
) -> float:
    """The survey's total ε from mechanisms already built for its results (saves rebuilding them):
    its option questions' and, given their summaries, its randomized numbers' (basic composition)."""
    randomized = [
        *((r.question.arm_group, r.mechanism.epsilon) for r in results if r.randomized),
        *((m.question.arm_group, m.mechanism.epsilon) for m in numbers if isinstance(m, RandomizedNumberSummary)),
    ]
    return total_epsilon(composed(randomized))
