"""The fold: what listed submissions add to the deferred tallies (answers, days, pairs), added a
batch at a time.

Why deferred: one submission of ten questions adds to 45 cells of the pair tallies, and those 45
upserts were about 40% of the CPU PostgreSQL spent on a submission (0.35 of 0.85 ms; benchmarks/
scale.md, "Ingest"); left to the fold as well, its ten answer cells and ten day cells made the
ingest of four workers 16% faster (paired runs against the code before; benchmarks/scale_ingest.md,
"Reading"). So a new submission adds at once only to the submission tally
(whose count tells it whether closing automatically is due for a check), lists its id in
``pending_submissions`` (:class:`~survey.domain.models.PendingSubmission`) in its own statement, and
the fold takes up to :data:`BATCH` listed submissions, adds their answers, days and pairs (grouped:
a few hundred cells for hundreds of submissions) and deletes their rows, in one transaction. Readers
add the listed submissions to the stored cells in the same statement
(:func:`survey.domain.responses.writes.with_listed`), so every count is exact whether or not the fold
has run: a submission is in the list or in the tallies, never both, never neither. The list is
nearly empty at every moment, so PostgreSQL's statistics of it (autovacuum's) often say "empty";
readers and the fold gather it once per statement and plan it at a declared size instead
(migration 0026), which keeps them linear in what is listed.

Who folds: the web process after storing a submission, about once a second a host in the background
(survey.platform.folding); the rebuild of a survey's tallies, which recounts them and empties its
list; a release that takes back listed submissions (sent by link before the survey went by
invitation), which adds them as it removes them (survey.domain.responses.mixing); the migrations
that change what the list means (0024, 0025). On PostgreSQL concurrent folds take disjoint batches
(``FOR UPDATE SKIP LOCKED``) and add rows in key order, as every writer of the tallies does, so they
never wait for one another in a circle; SQLite has one writer at a time.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping

from sqlalchemy import ColumnElement, SmallInteger, delete, func, literal, select
from sqlalchemy.orm import Session

from survey.domain.base import begin_writing
from survey.domain.models import TALLY_SHARDS, PendingSubmission, Question, Submission

from . import writes

#: Submissions folded in one transaction at most.
BATCH = 2000

_random = secrets.SystemRandom()


def fold(session: Session, batch: int = BATCH, commit: bool = True) -> int:
    """Add up to ``batch`` listed submissions to the deferred tallies and unlist them, in
    one transaction (committed unless not ``commit``); how many were taken (0: none was listed, or
    every listed one is being folded by someone else)."""
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        statement = writes.postgresql_fold()
        params = statement.params({"batch": batch, "shard": _random.randrange(TALLY_SHARDS)})
        with session.connection().connection.driver_connection.cursor() as cursor:  # the session's transaction
            # The planner cannot know how few rows the list holds, estimates the self-join at millions
            # of rows, and compiles the statement to machine code first: 540 of 654 ms for a fold of
            # 400 submissions that runs in 40 ms without (EXPLAIN ANALYZE). Off for this transaction.
            cursor.execute("SET LOCAL jit = off")
            cursor.execute(statement.sql, params)
            (folded,) = cursor.fetchone()
        if commit:
            session.commit()
        return int(folded)
    # SQLite, one writer at a time: the same in steps, in one transaction that takes the write lock first
    begin_writing(session)
    first = select(PendingSubmission.submission_id).order_by(PendingSubmission.submission_id).limit(batch)
    taken = add_now(session, PendingSubmission.submission_id.in_(first.scalar_subquery()))
    if commit:
        session.commit()
    return taken


def add_now(session: Session, which: ColumnElement[bool], feeds: Mapping[int, writes.Feeds] | None = None) -> int:
    """Unlist the listed submissions ``which`` selects and add them to the deferred tallies now, from
    their stored answers, in the caller's transaction; how many. ``feeds``: what their questions
    feed, when the caller knows (else read from their kinds). The rows are deleted first
    (``RETURNING``), so that no fold can take them meanwhile."""
    ids = list(session.scalars(delete(PendingSubmission).where(which).returning(PendingSubmission.submission_id)))
    add_submissions(session, ids, feeds)
    return len(ids)


def add_submissions(
    session: Session,
    ids: list[int],
    feeds: Mapping[int, writes.Feeds] | None = None,
    tallies: tuple[writes.Tally, ...] = writes.DEFERRED,
) -> None:
    """Add the stored submissions ``ids`` to ``tallies`` (the deferred ones unless told), in the
    caller's transaction, a chunk at a time (SQLite takes a bounded number of parameters).
    ``feeds``: see :func:`add_now`. The caller has unlisted them."""
    if not ids:
        return
    if feeds is None:  # what each question of the submissions' surveys feeds (a question's kind decides it)
        surveys = select(Submission.survey_id).where(Submission.id.in_(ids)).distinct()
        feeds = {
            row.id: writes.what_it_feeds(row)
            for row in session.execute(select(Question.id, Question.kind).where(Question.survey_id.in_(surveys)))
        }
    shard = literal(_random.randrange(TALLY_SHARDS), SmallInteger)
    dialect = session.get_bind().dialect.name
    for start in range(0, len(ids), BATCH):
        chunk = ids[start : start + BATCH]
        for tally in tallies:
            session.execute(writes.upsert(dialect, tally, *writes.stored(feeds, submission_ids=chunk), shard))


def fold_all(session: Session, commit: bool = True) -> int:
    """Fold until nothing is listed (or what is left is being folded by someone else); how many."""
    total = 0
    while True:
        done = fold(session, commit=commit)
        total += done
        if done < BATCH:
            return total


def listed(session: Session) -> int:
    """How many submissions wait for the fold."""
    return session.scalar(select(func.count()).select_from(PendingSubmission)) or 0
