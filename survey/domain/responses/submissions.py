"""Recording one respondent's submission: check every reported value, then write it in one go.

Values arrive already randomized by the respondent's browser. Each is checked against the frozen
design (a known question, a code inside its domain, each question at most once, required questions
present, the survey open); anything wrong refuses the whole submission and writes nothing.

This is the path that runs once per respondent, so it is built for throughput. What a submission is
checked against (the questions of a published survey) cannot change any more, so it is read once
and kept (:class:`SubmissionForm`); what can change (open or closed, the dates, link or invitation)
is checked by the write itself, atomically, and read back only to say why a submission was refused.
On PostgreSQL the write is one statement; a submission costs one round trip to the database.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import json
import logging
import random
from collections.abc import Collection, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, bindparam, func, select
from sqlalchemy.orm import Session, scoped_session

from survey.domain.base import begin_writing
from survey.domain.errors import Conflict, DomainError, Forbidden
from survey.domain.models import (
    DECLINED,
    DECLINED_MARKER,
    TALLY_SHARDS,
    Design,
    Option,
    Question,
    Survey,
    refusal_on,
    today,
)
from survey.domain.responses.codes import INVITATION, check_code, claim, normalize, well_formed
from survey.domain.responses.mixing import BATCH, hold, release
from survey.domain.responses.receipts import key_hash, purge_old_receipts, received
from survey.domain.results.live import close_if_precise
from survey.domain.surveys.kinds import ANSWERS, kind_of
from survey.privacy.designs import DESIGNS

from . import writes

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Field:
    """What checking one answer needs to know of its question."""

    id: int
    key: str
    required: bool
    options: int
    #: A number question's range (None for questions with options).
    minimum: int | None = None
    maximum: int | None = None
    kind: str = "direct"
    #: Its design's id (None for a question asked directly): a randomized number's answer is a report
    #: code, checked against the domain of its design's reports (not against the range).
    design: str | None = None
    #: Whether it may be declined (:data:`survey.domain.models.DECLINED_MARKER` sent instead of an answer).
    decline: bool = False
    #: The split ballot it is an arm of (None for an ordinary question): a respondent answers one arm
    #: of a group (:mod:`survey.domain.surveys.arms`), so a group is required as a whole.
    arm_group: str | None = None

    def check(self, value: Any) -> int:
        """The value to store for the answer ``value``, or a DomainError saying what is wrong: its
        kind checks it (survey.domain.surveys.kinds)."""
        reports = DESIGNS[self.design].reports if self.design in DESIGNS else None
        return kind_of(self.kind).check(
            value, self.key, k=self.options, low=self.minimum, high=self.maximum, reports=reports
        )


@dataclass(frozen=True)
class SubmissionForm:
    """What a submission to a published survey is checked against: its questions, frozen since it
    opened. ``access`` is as last seen; the write checks it again."""

    survey_id: int
    slug: str
    access: str
    fields: tuple[Field, ...]

    @functools.cached_property
    def feeds(self) -> dict[int, writes.Feeds]:
        """What each question feeds (:func:`survey.domain.responses.writes.what_it_feeds`), worked out once."""
        return {f.id: writes.what_it_feeds(f) for f in self.fields}


#: slug → form, kept by the caller (the app keeps one per process); only published surveys enter.
FormCache = MutableMapping[str, SubmissionForm]
FORM_CACHE_SIZE = 1000

#: Built once: constructing a select() costs more than running it through the compiled cache.
_FORM_QUERY = (
    select(
        Survey.id,
        Survey.status,
        Survey.access,
        Question.id,
        Question.key,
        Question.required,
        func.count(Option.id),
        Question.minimum,
        Question.maximum,
        Question.kind,
        Design.mechanism_name,
        Question.decline,
        Question.arm_group,
    )
    .outerjoin(Question, Question.survey_id == Survey.id)
    .outerjoin(Option, Option.question_id == Question.id)
    .outerjoin(Design, Design.question_id == Question.id)
    .where(Survey.slug == bindparam("slug"))
    .group_by(Survey.id, Question.id, Design.mechanism_name)
    .order_by(Question.position)
)


def submission_form(session: Session, slug: str, cache: FormCache | None = None) -> SubmissionForm | None:
    """The form of survey ``slug``; None if there is no such survey or it is a draft (which
    respondents cannot see). One query the first time, none after that when ``cache`` is given:
    a published survey's questions, options and requirements never change."""
    if cache is not None and (form := cache.get(slug)) is not None:
        return form
    rows = session.execute(_FORM_QUERY, {"slug": slug}).all()
    if not rows or rows[0][1] == "draft":
        return None
    survey_id, _, access = rows[0][:3]
    form = SubmissionForm(survey_id, slug, access, tuple(Field(*row[3:]) for row in rows if row[3] is not None))
    if cache is not None:
        if len(cache) >= FORM_CACHE_SIZE:
            cache.clear()
        cache[slug] = form
    return form


def _in_transaction(session: Session) -> bool:
    """Whether the session has begun a transaction, without creating a scoped session to ask."""
    if isinstance(session, scoped_session):
        return session.registry.has() and session().in_transaction()
    return session.in_transaction()


@dataclass(frozen=True)
class SurveyState:
    """What can change while a survey runs, read when a submission was refused, to say why."""

    status: str
    opens_on: dt.date | None
    closes_on: dt.date | None
    access: str

    def refusal(self, day: dt.date) -> Conflict | None:
        return refusal_on(self.status, self.opens_on, self.closes_on, day)


def survey_state(session: Session, survey_id: int) -> SurveyState:
    row = session.execute(
        select(Survey.status, Survey.opens_on, Survey.closes_on, Survey.access).where(Survey.id == survey_id)
    ).one()
    return SurveyState(*row)


def validate_answers(fields: tuple[Field, ...], answers: Mapping[str, Any]) -> dict[int, int]:
    """Map question id → reported code, or raise DomainError at the first problem's path."""
    if not isinstance(answers, Mapping):
        raise DomainError("submission.answers_not_object", path=ANSWERS)
    known = {f.key for f in fields}
    unknown = sorted(key for key in answers if key not in known)
    if unknown:
        raise DomainError("submission.unknown_question", path=(*ANSWERS, unknown[0]), key=unknown[0])
    values: dict[int, int] = {}
    for field in fields:
        raw = answers.get(field.key)
        if raw is None or raw == "":
            if field.required and field.arm_group is None:
                raise DomainError("answer.required", path=(*ANSWERS, field.key), key=field.key)
            continue
        if raw == DECLINED_MARKER:
            # an explicit "prefer not to say": stored as such, never as a report
            if not field.decline:
                raise DomainError("answer.decline_not_allowed", path=(*ANSWERS, field.key), key=field.key)
            values[field.id] = DECLINED
            continue
        values[field.id] = field.check(raw)
    for problem in arm_problems(fields, values.keys()):
        raise problem
    if not values:
        raise DomainError("submission.empty", path=ANSWERS)
    return values


def arm_problems(fields: Sequence[Field], answered: Collection[int]) -> Iterator[DomainError]:
    """What is wrong with the split ballots of a submission that answered the questions ``answered``
    (their ids): two arms of one group answered (a respondent is assigned one), or none of a required
    group's (its arms are required when shown). A declined arm counts as answered."""
    groups: dict[str, list[Field]] = {}
    for field in fields:
        if field.arm_group is not None:
            groups.setdefault(field.arm_group, []).append(field)
    for group, arms in groups.items():
        chosen = [f for f in arms if f.id in answered]
        if len(chosen) > 1:
            yield DomainError(
                "answer.several_arms",
                path=(*ANSWERS, chosen[1].key),
                key=chosen[0].key,
                other=chosen[1].key,
                group=group,
            )
        elif not chosen and any(f.required for f in arms):
            yield DomainError(
                "answer.arm_missing", path=(*ANSWERS, arms[0].key), group=group, keys=", ".join(f.key for f in arms)
            )


@dataclass(frozen=True)
class Recorded:
    """What became of a submission that was not refused: stored now, or ``already`` stored by an
    earlier attempt with the same key (and not stored again)."""

    already: bool = False


def record_submission(
    session: Session,
    form: SubmissionForm,
    answers: Mapping[str, Any],
    invitation: str | None = None,
    cache: FormCache | None = None,
    key: str | None = None,
    batch: int = BATCH,
    engine: Engine | None = None,
) -> Recorded:
    """Validate and store one submission atomically; commit on success, or raise DomainError.

    ``engine``, the session's, given by a caller who holds it: a submission by link on PostgreSQL
    then never makes the request's session (a scoped session made only to ask for its engine, then
    removed at the end of the request, was 5% of a worker's CPU under load).

    ``key`` (see :mod:`survey.domain.responses.receipts`) makes a resend safe: if a submission with this key
    was stored, the resend is answered ``Recorded(already=True)`` whatever else is now true (the
    code used up by that very submission, the survey closed since), and nothing is stored again.

    Refusals come in this order: a survey that does not accept submissions today (409), then a
    survey by invitation without a usable code (403), and only then anything about the answers
    (400). Whoever may not answer a survey by invitation so learns nothing about its questions, not
    even their keys. A survey by link costs no read for this: the write itself checks that the
    survey is open and still by link, and the state is read only when something was refused.

    For a survey by invitation, ``invitation`` is claimed by the same statement (PostgreSQL) or
    transaction (SQLite) that stores the submission, so a code is used up exactly when a submission
    is stored. Nothing links the two afterwards.
    """
    day = today()
    hashed = key_hash(key)
    try:
        recorded = _record(session, form, answers, invitation, cache, hashed, batch, day, engine)
    except DomainError:
        if hashed is not None and received(session, form.survey_id, hashed):
            session.rollback()
            return Recorded(already=True)
        raise
    if hashed is not None and not recorded.already:
        purge_old_receipts(session, day)
    return recorded


def _record(
    session: Session,
    form: SubmissionForm,
    answers: Mapping[str, Any],
    invitation: str | None,
    cache: FormCache | None,
    hashed: str | None,
    batch: int,
    day: dt.date,
    engine: Engine | None = None,
) -> Recorded:
    """Store the submission in a transaction of its own and commit it at once, before what follows it
    (a batch's release, closing by itself: each its own transaction), so that no writer waits on it.
    An exception to the rule that the domain leaves committing to its caller (docs/architecture.md)."""
    access = form.access
    try:
        values = validate_answers(form.fields, answers)
    except DomainError:
        # Whoever may not answer learns nothing about the questions: a survey that does not accept
        # answers, or a missing or unusable code, is said first (the form's access is as last seen:
        # the survey may need a code now). Valid answers cost no read: the write checks both.
        admit(session, form.survey_id, invitation, day)
        raise
    try:
        for _ in range(2):
            code = normalize(invitation) if access == "invitation" else None
            if code is not None and not well_formed(code):
                # closed (409), else not known (403); or no longer by invitation: then by link
                access = admit(session, form.survey_id, invitation, day).access
                code = None
            if code is not None:
                written = write_held(session, form, day, values, code, hashed)
            else:
                written = write_submission(session, form, day, values, access, hashed, engine)
            if written:
                if _in_transaction(session):  # otherwise the statement committed on its own
                    session.commit()
                _after_storing(session, form, written, batch)
                return Recorded()
            session.rollback()
            if hashed is not None and received(session, form.survey_id, hashed):
                return Recorded(already=True)  # an earlier attempt with this key was stored
            # Nothing was written: the survey changed since we last looked, or the code was used
            # by a submission racing this one. Read what is true now to say which.
            state = _refuse_if_closed(session, form.survey_id, day)
            if state.access == access:
                if code is not None:
                    check_code(session, form.survey_id, invitation)  # revoked meanwhile: say so
                    raise Forbidden("code.used", path=INVITATION)
                break
            access = state.access  # switched between link and invitation: once more, the new way
            if access == "invitation":
                check_code(session, form.survey_id, invitation)
            if cache is not None:
                cache[form.slug] = dataclasses.replace(form, access=access)
        raise Conflict("submission.survey_changed")
    except Exception:
        session.rollback()
        raise


def _after_storing(session: Session, form: SubmissionForm, written: Written, batch: int) -> None:
    """Release a full batch of held submissions, and close the survey if it is set to close once
    precise. The submission is stored by now: nothing here may turn that into an error for the
    respondent. What fails is left for the next submission to do (the held rows stay held)."""
    try:
        if written.held >= batch:
            release(session, form.survey_id, form.feeds, batch)
        if written.check_at is not None:
            close_if_precise(session, form.survey_id, seen=written.check_at)
    except Exception:
        session.rollback()
        log.exception("after storing a submission to survey %s", form.survey_id)


def admit(session: Session, survey_id: int, invitation: str | None, day: dt.date) -> SurveyState:
    """The survey's state if a submission may be made now with ``invitation``; otherwise raise
    DomainError: 409 when the survey does not accept submissions on ``day``, 403 when it is by
    invitation and the code is missing, unknown, for another survey or used. One read, two for a
    survey by invitation."""
    state = _refuse_if_closed(session, survey_id, day)
    if state.access == "invitation":
        check_code(session, survey_id, invitation)
    return state


def _refuse_if_closed(session: Session, survey_id: int, day: dt.date) -> SurveyState:
    state = survey_state(session, survey_id)
    refusal = state.refusal(day)
    if refusal is not None:
        raise refusal
    return state


@dataclass(frozen=True)
class Written:
    """What :func:`write_submission` did: whether the submission was stored, and, when its survey is
    set to close itself once precise enough and a check is due, the survey's count of submissions
    with this one (so the caller checks then, and only then)."""

    stored: bool
    check_at: int | None = None
    #: How many submissions the survey holds now, waiting to be released (surveys by invitation).
    held: int = 0

    def __bool__(self) -> bool:
        return self.stored

    @classmethod
    def from_row(cls, row: Any) -> Written:
        if row is None:
            return cls(False)
        return cls(True, None if row[0] is None else int(row[0]))


def write_held(
    session: Session,
    form: SubmissionForm,
    day: dt.date,
    values: Mapping[int, int],
    claim_code: str,
    receipt: str | None = None,
) -> Written:
    """Claim ``claim_code`` and hold the checked submission (:mod:`survey.domain.responses.mixing`), in the
    session's transaction, if and only if the survey accepts it by invitation at this moment and the
    code is unused (and, with ``receipt``, no submission with that key was stored); whether it was.
    The caller commits, or rolls back when nothing was written (a claim may have been made)."""
    params: dict[str, Any] = {"survey_id": form.survey_id, "slug": form.slug, "access": "invitation", "day": day}
    if session.get_bind().dialect.name == "postgresql":
        # One statement in the session's transaction (the caller commits, or rolls a partial claim back).
        statement = writes.postgresql_hold(receipt is not None)
        params.update(code=claim_code, receipt=receipt, answers=json.dumps([[q, v] for q, v in sorted(values.items())]))
        with session.connection().connection.driver_connection.cursor() as cursor:
            cursor.execute(statement.sql, statement.params(params))
            (held,) = cursor.fetchone()
        return Written(bool(held), None, held)
    begin_writing(session)
    accepting = session.execute(writes.accepting_statement(), params).first()
    if accepting is None or not claim(session, form.survey_id, claim_code):
        return Written(False)
    if receipt is not None and not _insert_receipt(session, form.survey_id, receipt, day):
        return Written(False)
    return Written(True, None, hold(session, form.survey_id, day, values))


def _insert_receipt(session: Session, survey_id: int, receipt: str, day: dt.date) -> bool:
    dialect = session.get_bind().dialect.name
    params = {"survey_id": survey_id, "receipt": receipt, "day": day}
    return session.connection().execute(writes.receipt_statement(dialect), params).first() is not None


def write_submission(
    session: Session,
    form: SubmissionForm,
    day: dt.date,
    values: Mapping[int, int],
    access: str = "link",
    receipt: str | None = None,
    engine: Engine | None = None,
) -> Written:
    """Insert one checked submission (question id → code) to a survey by link and count it, if and
    only if the survey accepts it at this moment (and, with ``receipt``, no submission with that key
    hash was stored: the receipt is inserted with it); returns whether it was stored. Part of the
    session's transaction if it has one; otherwise, on PostgreSQL, a statement committed on its own.

    "Accepts" is decided by the database, atomically with the insert: the survey is open, ``day``
    lies within its dates and its access is ``access``. A submission admitted by a code never comes
    here: it is held and released in a batch (:func:`write_held`, :mod:`survey.domain.responses.mixing`). A
    shard of the tallies is drawn at random (``TALLY_SHARDS``) and rows are written in key order, so
    concurrent submissions seldom wait for one another and never deadlock. What is written is
    declared once, in :mod:`survey.domain.responses.writes`; this only sends it. ``engine``: the
    session's (:func:`record_submission`).
    """
    engine = engine or session.get_bind()
    dialect = engine.dialect.name
    params = writes.submission_params(
        values,
        form.feeds,
        dialect,
        survey_id=form.survey_id,
        slug=form.slug,
        access=access,
        day=day,
        shard=random.randrange(TALLY_SHARDS),
        receipt=receipt,
    )
    if dialect == "postgresql":
        # The driver's own cursor for a statement compiled once from the declaration: SQLAlchemy's
        # execution layer (and, outside a transaction, the session's) costs more CPU than the rest
        # of the submission's write (benchmarks/write_path.md).
        statement = writes.postgresql_submission(receipt is not None)
        if _in_transaction(session):
            with session.connection().connection.driver_connection.cursor() as cursor:
                cursor.execute(statement.sql, statement.params(params))
                return Written.from_row(cursor.fetchone())
        with autocommit_cursor(engine) as cursor:
            cursor.execute(statement.sql, statement.params(params))
            return Written.from_row(cursor.fetchone())
    if dialect != "sqlite":  # pragma: no cover - the app supports these two
        raise RuntimeError(f"submissions need PostgreSQL or SQLite, not {dialect}")
    begin_writing(session)
    connection = session.connection()
    statements = writes.sqlite_submission()
    inserted = connection.exec_driver_sql(statements.insert.sql, statements.insert.params(params)).first()
    if inserted is None:
        return Written(False)
    if receipt is not None and not _insert_receipt(session, form.survey_id, receipt, day):
        return Written(False)
    params["submission_id"], check_at = inserted
    for statement in statements.writes:
        connection.exec_driver_sql(statement.sql, statement.params(params))
    return Written(True, None if check_at is None else int(check_at))


@contextlib.contextmanager
def autocommit_cursor(engine: Engine) -> Iterator[Any]:
    """A driver cursor on a pooled connection in autocommit, for one self-contained statement.

    For the submission path on PostgreSQL: its single statement is atomic on its own, and taking the
    connection straight from the pool skips the ORM session's transaction bookkeeping, which cost
    more than the statement itself. The connection goes back to the pool as it came (autocommit off).
    """
    pooled = engine.raw_connection()
    driver = pooled.driver_connection
    try:
        driver.autocommit = True
        with driver.cursor() as cursor:
            yield cursor
    finally:
        if driver.closed or getattr(driver, "broken", False):
            pooled.invalidate()  # the database went away: discard it, as SQLAlchemy would
        else:
            driver.autocommit = False
        pooled.close()
