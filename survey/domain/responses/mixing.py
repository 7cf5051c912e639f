"""Submissions to a survey by invitation are released in batches, so the database cannot tie a code to its answers.

A code is claimed in the same transaction that stores what it admitted: a code must be used up
exactly when its submission is stored. On PostgreSQL every row a transaction writes carries that
transaction's id (the system column ``xmin``), lands where the table's free space is at that moment
(``ctid``), and takes the next number of a sequence; SQLite's rowids and pages follow time the same
way. Anyone who can read the database could then join each used code to its submission through the
shared ``xmin``, the physical order, the id order, or the running tallies the transaction touched.

So a coded submission is not written into ``submissions`` at once. Its transaction claims the code
and stores the reported values in ``held_submissions`` (plus the key's receipt). When a survey holds
:data:`BATCH` of them, one transaction releases them all: it deletes the held rows, and inserts the
batch's submissions and answers in a uniformly random order (so ids and physical places are a random
permutation within the batch), all with the same date (the latest day among them), and adds the
whole batch to the running tallies at once. Every row the release writes carries the release's
``xmin``; the codes' rows carry their claims' ``xmin``, which tells only which batch each code went
to. Among a batch's submissions, nothing left in the tables links one to a particular code better
than chance: one in :data:`BATCH`, once :data:`BATCH` - 1 further submissions have arrived.

When a survey stops accepting answers (closed, or past its closing date) with fewer than a batch
held, they are released with as many of the survey's most recent released submissions as make a
full batch, re-inserted together (new ids, one date), so that the last ones are mixed among as many
as the rest. A survey with fewer submissions than a batch in all is released as one group: nobody
can be hidden among more submissions than there are.

What remains is outside the tables: the server's memory while a request runs, PostgreSQL's
write-ahead log and old row versions in the tables' pages until vacuuming and the log's recycling
overwrite them, and backups made meanwhile (SECURITY.md).
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import delete, exists, func, insert, select
from sqlalchemy.orm import Session

from survey.domain.base import begin_writing
from survey.domain.models import (
    TALLY_SHARDS,
    Answer,
    HeldSubmission,
    PendingSubmission,
    Submission,
    Survey,
    accepting_on,
    today,
)
from survey.domain.responses.pending import add_now
from survey.domain.responses.writes import Feeds, what_it_feeds

from . import writes

#: How many coded submissions are released together: each is hidden among this many.
BATCH = 10

_random = secrets.SystemRandom()


def held_count(session: Session, survey_id: int) -> int:
    """How many submissions the survey holds, waiting for a batch to fill."""
    return session.scalar(select(func.count()).where(HeldSubmission.survey_id == survey_id)) or 0


def hold(session: Session, survey_id: int, day: dt.date, values: Mapping[int, int]) -> int:
    """Add one checked submission to the survey's held ones, in the caller's transaction; returns how
    many the survey holds now (this one included)."""
    session.execute(
        insert(HeldSubmission).values(
            survey_id=survey_id, held_on=day, answers=[[q, v] for q, v in sorted(values.items())]
        )
    )
    return held_count(session, survey_id)


def release(
    session: Session,
    survey_id: int,
    kinds: Mapping[int, Feeds],
    batch: int = BATCH,
    force: bool = False,
) -> int:
    """Release the survey's held submissions if there are at least ``batch`` of them (or any, with
    ``force``); commits, and returns how many were released (0 if none).

    Racing releases of one survey serialize on the held rows (PostgreSQL) or the write lock (SQLite):
    each held row is released once. ``kinds`` maps every question id of the survey to its
    :class:`~survey.domain.responses.writes.Feeds`.
    """
    begin_writing(session)
    held = session.execute(
        delete(HeldSubmission)
        .where(HeldSubmission.survey_id == survey_id)
        .returning(HeldSubmission.held_on, HeldSubmission.answers)
    ).all()
    if not held or (len(held) < batch and not force):
        session.rollback()
        return 0
    # (day, answers, whether newly released rather than taken back)
    group: list[tuple[dt.date, list[tuple[int, int]], bool]] = [
        (
            day if isinstance(day, dt.date) else dt.date.fromisoformat(day),
            [(int(q), int(v)) for q, v in answers],
            True,
        )
        for day, answers in held
    ]
    if len(group) < batch:
        group += [
            (d, answers, False) for d, answers in _take_back_latest(session, survey_id, batch - len(group), kinds)
        ]
    day = max(d for d, _, _ in group)
    _random.shuffle(group)
    # One multi-row insert: the ids come in the order the rows are listed, and the i-th smallest id
    # goes to the i-th submission of the shuffled group.
    ids = sorted(
        session.scalars(
            insert(Submission)
            .values([{"survey_id": survey_id, "submitted_on": day}] * len(group))
            .returning(Submission.id)
        )
    )
    rows = [
        {"submission_id": submission_id, "question_id": q, "value": v}
        for submission_id, (_, answers, _) in zip(ids, group, strict=True)
        for q, v in answers
    ]
    if rows:
        session.execute(insert(Answer), rows)
    released = [(submission_id, answers, fresh) for submission_id, (_, answers, fresh) in zip(ids, group, strict=True)]
    _count(session, released, day, kinds, survey_id)
    session.commit()
    return len(held)


def release_if_closed(session: Session, survey: Survey, batch: int = BATCH) -> int:
    """Release whatever the survey holds once it no longer accepts answers (closed, archived, or past
    its closing date): no batch can fill any more. Cheap when nothing is held (one count)."""
    if survey.status == "draft" or accepting_on(survey.status, survey.opens_on, survey.closes_on, today())[0]:
        return 0
    if held_count(session, survey.id) == 0:
        return 0
    return release(session, survey.id, question_kinds(survey), batch, force=True)


def question_kinds(survey: Survey) -> dict[int, Feeds]:
    """What each of the survey's questions feeds (:func:`survey.domain.responses.writes.what_it_feeds`)."""
    return {q.id: what_it_feeds(q) for q in survey.questions}


def _take_back_latest(
    session: Session, survey_id: int, count: int, kinds: Mapping[int, Feeds]
) -> list[tuple[dt.date, list[tuple[int, int]]]]:
    """Remove the survey's ``count`` most recently released submissions (the highest ids: a random
    part of the last batch) to release them again with the last few held ones, and take them out of
    the dated tallies (the day tallies: the group gets one date). Their other tallies stay as they are
    (those a submission still listed for the fold has not added to yet are added now)."""
    rows = session.execute(
        select(Submission.id, Submission.submitted_on)
        .where(Submission.survey_id == survey_id)
        .order_by(Submission.id.desc())
        .limit(count)
    ).all()
    if not rows:
        return []
    ids = [r[0] for r in rows]
    answers: dict[int, list[tuple[int, int]]] = {i: [] for i in ids}
    for submission_id, q, v in session.execute(
        select(Answer.submission_id, Answer.question_id, Answer.value)
        .where(Answer.submission_id.in_(ids))
        .order_by(Answer.submission_id, Answer.question_id)
    ):
        answers[submission_id].append((q, v))
    days = {r[0]: r[1] for r in rows}
    # Those still listed for the fold (sent by link before the survey went by invitation) have not
    # added to the deferred tallies yet: they add now, unlisted, like a fold's, so that every one of
    # them has added what the dated tallies give back below. All of the survey's listed ones, not only
    # those taken back: then no fold adds to the survey's cells while this transaction takes from them.
    # (driven from the short list: each listed id looked up, not the survey's submissions scanned)
    mine = exists().where(Submission.id == PendingSubmission.submission_id, Submission.survey_id == survey_id)
    add_now(session, mine, kinds)
    for tally in writes.TALLIES:
        if tally.dated:  # what they added there, by the declaration itself
            _uncount(session, tally, session.execute(tally.counted(*writes.stored(kinds, submission_ids=ids))).all())
    session.execute(delete(Answer).where(Answer.submission_id.in_(ids)).execution_options(synchronize_session=False))
    session.execute(delete(Submission).where(Submission.id.in_(ids)).execution_options(synchronize_session=False))
    return [(days[i], answers[i]) for i in ids]


def _uncount(session: Session, tally: writes.Tally, cells: Sequence[Any]) -> None:
    """Subtract ``cells`` (rows of keys and a count) from ``tally``, shard by shard, deleting rows
    that reach zero."""
    table = tally.table
    for *key, count in sorted(cells):
        cell = [table.c[k] == v for k, v in zip(tally.keys, key, strict=True)]
        rows = session.execute(select(table.c.shard, table.c["count"]).where(*cell).order_by(table.c.shard)).all()
        for shard, have in rows:
            if count <= 0:
                break
            take = min(count, have)
            count -= take
            where = (*cell, table.c.shard == shard)
            # subtracted where it stands, then dropped if nothing is left: a writer that added to the
            # row since it was read (a fold, an import) keeps what it added
            session.execute(table.update().where(*where).values(count=table.c["count"] - take))
            if take == have:
                session.execute(delete(table).where(*where, table.c["count"] <= 0))
        if count > 0:  # pragma: no cover - the tallies disagree with the answers: recount --fix repairs them
            raise RuntimeError(f"{tally.label} miss {count} at {tuple(key)}")


def _count(
    session: Session,
    released: list[tuple[int, list[tuple[int, int]], bool]],
    day: dt.date,
    feeds: Mapping[int, Feeds],
    survey_id: int,
) -> None:
    """Add the batch (id, answers, whether newly released) to the tallies on one random shard, by
    the declaration (:func:`survey.domain.responses.writes.batch_statements`): one statement on PostgreSQL."""
    dialect = session.get_bind().dialect.name
    shard = _random.randrange(TALLY_SHARDS)
    params = writes.batch_params(released, feeds, dialect, survey_id=survey_id, day=day, shard=shard)
    connection = session.connection()
    for statement in writes.batch_statements(dialect):
        connection.exec_driver_sql(statement.sql, statement.params(params))


def kinds_of(fields: Sequence[Any]) -> dict[int, Feeds]:
    """What each of a submission form's fields (:class:`survey.domain.responses.submissions.Field`) feeds."""
    return {f.id: what_it_feeds(f) for f in fields}
