"""Live results: intervals that stay valid however often they are looked at, and stopping when precise.

The fixed-n interval of the results page promises 95% for one look at one sample size; a page
watched as answers arrive is looked at again and again. Beside it the page shows the *live* interval,
a confidence sequence (:func:`survey.privacy.confidence_sequence`), which holds at every moment at
once. It is computed from the running tallies alone, like the estimates.

The prior of the sequence is the privacy core's default (tuned for 1,000 respondents) for every
survey, fixed in code: tuning it for the survey's own planned size would let an organizer who edits
the plan after seeing answers choose the prior from the data, which voids the promise.

Stopping: the survey's target margin (planning settings) is compared with each randomized question's
largest live half-width. When every randomized question has reached it, the organizer's pages say so,
and a survey with ``auto_close`` on is closed by :func:`close_if_precise` right after a submission
that finds it there (:func:`survey.domain.surveys.lifecycle.close_automatically`: written only if the survey is
still open and set to close by itself at that moment, so it closes once, and never after a reopen).
Not every submission checks: checking reads every tally and computes every live interval (4–5 ms of
CPU, forty times the rest of the submission's), so a submission's own statement compares the
survey's count with the count at which the next check is due (``surveys.auto_close_due``), and only
a submission that reaches it checks (:func:`submissions_to_next_check`: every submission near the
margin, at most 2% of the count apart far from it).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy.orm import Session

from survey.domain.base import begin_writing
from survey.domain.errors import DomainError
from survey.domain.models import Question, Survey
from survey.domain.responses.tallies import (
    Counts,
    question_day_counts,
    question_mechanism,
    questions_day_counts,
    submission_count,
    survey_counts,
)
from survey.domain.results.coding import parse_category
from survey.domain.results.kept import digest, kept, kept_sequence, mechanism_key
from survey.domain.surveys import lifecycle
from survey.privacy import AnytimeTest, ConfidenceSequence, Mechanism, anytime_test, confidence_sequence, estimate

LEVEL = 0.95


@dataclass(frozen=True)
class LiveQuestion:
    """One randomized question's live intervals and how they compare with the target margin."""

    question: Question
    sequence: ConfidenceSequence
    n: int
    target_margin: float

    @property
    def half_width(self) -> float:
        """The largest half-width over the options: a margin is a claim about every option."""
        return float(np.max(self.sequence.half_width))

    @property
    def reached(self) -> bool:
        return self.n > 0 and self.half_width <= self.target_margin

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.question.key,
            "n": self.n,
            "half_width": self.half_width,
            "target_margin": self.target_margin,
            "reached": self.reached,
        }


@dataclass(frozen=True)
class LiveStatus:
    """Every randomized question's live state: has the survey reached its target margin?"""

    survey: Survey
    questions: list[LiveQuestion]

    @property
    def all_reached(self) -> bool:
        return bool(self.questions) and all(q.reached for q in self.questions)

    @property
    def waiting(self) -> list[LiveQuestion]:
        return [q for q in self.questions if not q.reached]

    def by_key(self) -> dict[str, LiveQuestion]:
        return {q.question.key: q for q in self.questions}

    def to_dict(self) -> dict[str, Any]:
        return {
            "target_margin": self.survey.target_margin,
            "level": LEVEL,
            "all_reached": self.all_reached,
            "auto_close": self.survey.auto_close,
            "questions": [q.to_dict() for q in self.questions],
        }


def live_status(session: Session, survey: Survey, counts: Counts | None = None) -> LiveStatus:
    """The live intervals of every randomized question, from the running tallies (read now by default)."""
    by_question = (counts or survey_counts(session, survey)).by_question
    questions = []
    for q in survey.randomized_option_questions:
        c = by_question[q.id]
        sequence = kept_sequence(question_mechanism(q), c, LEVEL)
        questions.append(LiveQuestion(q, sequence, int(c.sum()), survey.target_margin))
    return LiveStatus(survey, questions)


#: A survey set to close by itself is checked again after at most 1/RECHECK_DIVISOR of its count
#: more submissions: it closes at most 2% of its answers later than a check after every one would.
RECHECK_DIVISOR = 50


def submissions_to_next_check(status: LiveStatus, n: int) -> int:
    """How many more submissions a survey of ``n`` that is not precise enough yet takes before its
    precision is checked again: half of what the widest waiting question is predicted to need (a
    half-width shrinks about as 1/√n, so n·((width/margin)² − 1) more), never more than
    n/RECHECK_DIVISOR, at least one. Near the margin the checks come every submission; far from it
    they come at a fixed fraction of the count, so a survey of a million is checked a few hundred
    times over its life instead of a million."""
    cap = max(1, n // RECHECK_DIVISOR)
    waiting = status.waiting
    margin = status.survey.target_margin
    if n <= 0 or not waiting:
        return 1
    if not margin or margin <= 0:
        return cap
    widest = max(q.half_width for q in waiting)
    predicted = n * ((widest / margin) ** 2 - 1.0)
    return int(max(1, min(cap, predicted / 2)))


def close_if_precise(session: Session, survey_id: int, seen: int | None = None) -> bool:
    """Close the survey if it is open, set to close automatically, and every randomized question has
    reached the target margin; returns whether it was closed now (by this call, not another).
    Commits what it changes.

    After a submission, ``seen`` is the survey's count with it, which the submission's statement
    found at or past the survey's ``auto_close_due`` (survey.domain.responses.writes): this call
    first claims that check (one conditional UPDATE, committed: of several workers that found it due
    at once, one checks), and a survey not precise yet gets its next check
    (:func:`submissions_to_next_check`). Without ``seen`` (the organizer turned the setting on) it
    checks at once.

    The decision reads; the close is written afterwards, in a transaction of its own that takes the
    write lock first (SQLite), by an UPDATE that checks again that the survey is open and set to
    close by itself. Answers only add to the tallies, so a survey found precise enough stays so."""
    claimed = None
    if seen is not None:
        claimed = seen + max(1, seen // RECHECK_DIVISOR)
        begin_writing(session)
        if not lifecycle.claim_precision_check(session, survey_id, seen, claimed):
            session.rollback()  # another worker checks, or the survey closed, or the setting is off
            return False
        session.commit()
    survey = session.get(Survey, survey_id)
    if survey is None or not survey.auto_close or not survey.is_open:
        return False
    status = live_status(session, survey)
    precise = status.all_reached
    if not precise:
        n = seen if seen is not None else submission_count(session, survey)
        due = n + submissions_to_next_check(status, n)
    session.rollback()
    if not precise:
        if due != claimed:
            begin_writing(session)
            lifecycle.schedule_precision_check(session, survey_id, due, claimed)
            session.commit()
        return False
    begin_writing(session)
    if not lifecycle.close_automatically(session, survey_id):
        session.rollback()  # closed by another worker, or reopened (which switches the setting off)
        return False
    session.commit()
    return True


# -- over time -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timeline:
    """One randomized question's estimate of one option, day by day, with the live interval: what a
    researcher watching the survey saw after each day (counts up to and including that day)."""

    question: Question
    category: int
    days: list[dt.date]
    n: list[int]
    share: list[float]
    low: list[float]
    high: list[float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.question.key,
            "label": self.question.labels[self.category],
            "days": [d.isoformat() for d in self.days],
            "n": self.n,
            "share": self.share,
            "live_low": self.low,
            "live_high": self.high,
        }


def cumulative_day_counts(
    session: Session, question: Question, per_day: dict[Any, np.ndarray] | None = None
) -> tuple[list[dt.date], np.ndarray]:
    """The question's reported counts up to and including each day someone answered (day tallies,
    or ``per_day`` when they have been read already)."""
    if per_day is None:
        per_day = question_day_counts(session, question)
    if not per_day:
        return [], np.zeros((0, len(question.options)), dtype=np.int64)
    return list(per_day), np.cumsum(np.array(list(per_day.values())), axis=0)


def timelines(session: Session, questions: list[Question], category: int = 0) -> dict[int, Timeline]:
    """:func:`timeline` of each of ``questions`` (by question id), their day tallies read in one query
    (a page of results or the live API would otherwise send one per question)."""
    days = questions_day_counts(session, questions)
    return {q.id: timeline(session, q, category, days.get(q.id, {})) for q in questions}


def timeline(
    session: Session, question: Question, category: int = 0, per_day: dict[Any, np.ndarray] | None = None
) -> Timeline:
    """The estimate of option ``category`` (stored code; the first option by default) after each day."""
    days, counts = cumulative_day_counts(session, question, per_day)
    if not days:
        return Timeline(question, category, [], [], [], [], [])
    mechanism: Mechanism = question_mechanism(question)

    def compute() -> tuple[list[float], list[float], list[float]]:
        estimates = estimate(mechanism, counts)
        live = confidence_sequence(mechanism, counts, LEVEL)
        return (
            estimates.proportions[:, category].astype(float).tolist(),
            live.low[:, category].astype(float).tolist(),
            live.high[:, category].astype(float).tolist(),
        )

    # the same day tallies give the same numbers: kept until a submission changes them (kept.py)
    dates = ",".join(d.isoformat() for d in days)
    key = digest(["timeline", mechanism_key(mechanism), LEVEL, category, dates, counts.astype(np.int64).tobytes()])
    share, low, high = kept(key, compute)  # copied: a caller may change its lists, never the kept ones
    n = counts.sum(axis=1).astype(int).tolist()
    return Timeline(question, category, days, n, list(share), list(low), list(high))


# -- an anytime-valid test -------------------------------------------------------------------------

#: The alternatives a researcher may test, in words ("is the share above 10%?").
ALTERNATIVES = {"greater": "above", "less": "below", "two-sided": "different from"}


def anytime(
    session: Session,
    survey: Survey,
    key: str | None,
    threshold: Any,
    alternative: str | None = "greater",
    category: int | str | None = None,
) -> AnytimeTest:
    """The anytime-valid test of "the share of ``category`` (a researcher's code; the first option by
    default) of randomized question ``key`` is ``alternative`` ``threshold``" on the running tallies."""
    question = next((q for q in survey.randomized_option_questions if q.key == key), None)
    if question is None:
        raise DomainError("live.not_randomized", path=("question",), key=key)
    code = parse_category(question, category)
    try:
        share = float(threshold)
    except (TypeError, ValueError):
        share = float("nan")
    if not 0.0 <= share <= 1.0:
        raise DomainError("live.threshold_out_of_range", path=("threshold",), threshold=threshold)
    alternative = alternative or "greater"
    if alternative not in ALTERNATIVES:
        raise DomainError("live.alternative_unknown", path=("alternative",), choices=", ".join(ALTERNATIVES))
    counts = survey_counts(session, survey).by_question[question.id]
    try:
        return anytime_test(question_mechanism(question), counts, share, category=code, alternative=alternative)
    except ValueError as e:
        raise DomainError("live.test_refused", path=("threshold",), reason=str(e)) from None
