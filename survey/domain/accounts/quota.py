"""How many invitations and e-mails one account may make in a window of time (``INVITATION_RATE_LIMIT``).

An account that can invite can make the site send mail, under the site's name, to any address: a
stolen or careless account would be a spam relay, and each invitation is also a way to probe the
site. So each user has a budget per window (say 30 per hour), spent by every invitation (mailed,
shown or neither: the answer must not depend on whether the address has an account) and every
account link an administrator makes.

The count lives in the database, the one store that every worker process shares: counters in each
process's memory would give every worker its own budget. It is spent by one conditional statement,
``UPDATE send_quotas SET used = used + 1 WHERE ... AND used < limit``, which the database applies
to one row at a time, so two requests racing (in any processes) cannot both take the last unit;
the first unit of a window is an ``INSERT`` of the row, and of two racing inserts the loser (a
duplicate key) tries the update again. A spent unit belongs to the request's transaction: a refused
invitation gives it back. Windows are fixed (the hour from :00), like ``limits``' fixed windows:
a burst across the turn of a window can reach twice the limit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import delete, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from survey.domain.base import begin_writing
from survey.domain.errors import DomainError
from survey.domain.messages import message
from survey.domain.models import SendQuota, User


@dataclass(frozen=True)
class SendLimit:
    """At most ``amount`` invitations and e-mails per ``seconds`` per user."""

    amount: int
    seconds: int

    def words(self) -> str:
        """The limit in words ("30 per hour"), from the catalog's phrases."""
        span = {3600: "quota.per_hour", 86400: "quota.per_day", 60: "quota.per_minute"}.get(self.seconds)
        if span is None:
            return message("quota.per_seconds", amount=self.amount, seconds=self.seconds)
        return message(span, amount=self.amount)


class TooMany(DomainError):
    default_status = 429


def spend(session: Session, user: User, limit: SendLimit | None, now: float | None = None) -> None:
    """Take one unit of ``user``'s budget for the current window, or raise :class:`TooMany` (429)
    and take nothing. No limit (None) takes nothing."""
    if limit is None:
        return
    begin_writing(session)  # SQLite: one writer at a time from here, never a refused lock upgrade
    window = int((time.time() if now is None else now) // limit.seconds)
    refused = TooMany("quota.exhausted", limit=limit.words())
    if limit.amount <= 0:
        raise refused
    for _ in range(2):
        taken = session.execute(
            update(SendQuota)
            .where(SendQuota.user_id == user.id, SendQuota.window_number == window, SendQuota.used < limit.amount)
            .values(used=SendQuota.used + 1)
            .execution_options(synchronize_session=False)
        )
        if taken.rowcount == 1:
            return
        try:
            with session.begin_nested():
                session.add(SendQuota(user_id=user.id, window_number=window, used=1))
        except IntegrityError:
            continue  # the row exists: full, or another request made it a moment ago (update again)
        session.execute(
            delete(SendQuota)
            .where(SendQuota.user_id == user.id, SendQuota.window_number < window)
            .execution_options(synchronize_session=False)
        )
        return
    raise refused
