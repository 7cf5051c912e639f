"""Submission keys: a resend of a stored submission is answered "already received" and stored once.

A respondent whose answers were stored but who never saw the reply (the database restarted after the
commit, a worker was killed, the phone lost its signal) sends again. Without a key, an open link
stores a second copy, and a survey by invitation tells them their own code "has already been used".
The respondent's page makes a key of 128 random bits once per filling of the form and sends it with
every attempt; the API takes it in the body or an ``Idempotency-Key`` header. The write that stores
a submission also inserts the key's receipt, in the same transaction, under a unique constraint: of
two attempts with one key, one stores and the other finds the receipt.

A receipt is the key's SHA-256 hash and a day, for :data:`RECEIPT_DAYS` days: long enough for any
retry, short enough that the table stays small. It refers to no submission. The key is random and
only the page that made it knows it (the page keeps it no longer than the filling it belongs to).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from survey.domain.errors import DomainError
from survey.domain.models import SubmissionReceipt

#: Receipts older than this many days are deleted (a retry comes within minutes, not days).
RECEIPT_DAYS = 2
#: Where a bad key is, in a submission.
KEY = ("submission_key",)
KEY_PATTERN = re.compile(r"[A-Za-z0-9_-]{16,64}")

ALREADY_RECEIVED_MESSAGE = (
    "These answers were already received: they are stored once, however often they are sent. Thank you."
)


def key_hash(key: str | None) -> str | None:
    """The hash a receipt keeps for ``key``; None when no key was sent. A key is 16 to 64 letters,
    digits, ``-`` or ``_`` (the page sends 32 hexadecimal digits); anything else is refused."""
    if key is None or key == "":
        return None
    if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
        raise DomainError("submission.key_malformed", path=KEY)
    return hashlib.sha256(key.encode("ascii")).hexdigest()


def received(session: Session, survey_id: int, hashed: str | None) -> bool:
    """Whether a submission with this key hash was stored for the survey."""
    if hashed is None:
        return False
    return (
        session.scalar(
            select(SubmissionReceipt.received_on).where(
                SubmissionReceipt.survey_id == survey_id, SubmissionReceipt.key_hash == hashed
            )
        )
        is not None
    )


class _Purge:
    """Old receipts are deleted by the first submission of each day in each process: a bounded,
    indexed delete that needs no scheduler."""

    last: dt.date | None = None

    @classmethod
    def due(cls, day: dt.date) -> bool:
        if cls.last == day:
            return False
        cls.last = day
        return True


def purge_old_receipts(session: Session, day: dt.date, force: bool = False) -> int:
    """Delete receipts more than :data:`RECEIPT_DAYS` days old, once a day per process (or now, with
    ``force``); commits; returns how many went."""
    if not force and not _Purge.due(day):
        return 0
    result = session.execute(
        delete(SubmissionReceipt)
        .where(SubmissionReceipt.received_on < day - dt.timedelta(days=RECEIPT_DAYS))
        .execution_options(synchronize_session=False)
    )
    session.commit()
    return result.rowcount or 0
