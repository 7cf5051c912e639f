"""How many invitations and e-mails one account may make in a window of time (``INVITATION_RATE_LIMIT``).

An account that can invite can make the site send mail, under the site's name, to any address: a
stolen or careless account would be a spam relay, and each invitation is also a way to probe the
site. So each user has a budget per window (say 30 per hour), spent by every invitation (mailed,
shown or neither: the answer must not depend on whether the address has an account) and every
account link an administrator makes.

The count lives in the database, the one store that every worker process shares: counters in each
process's memory would give every worker its own budget. A spent unit belongs to the request's
transaction: a refused invitation gives it back.

**A sliding window, not fixed hours.** Fixed windows (the hour from :00, as ``limits``' fixed windows
count) let a burst at 10:59 and another at 11:00 make twice the limit within two minutes. So the
window is cut into :data:`SLICES` slices (five minutes of an hour), each a row ``(user, slice
number, used)``, and a unit is taken only while the units of the current slice and the
:data:`SLICES` before it add up to less than the limit. Any span of the window's length lies within
those slices when its last unit is taken, so no span of an hour (of ``seconds``) ever holds more
than the limit; the price is that a unit keeps counting for between one and 13/12 windows (60 to 65
minutes of an hour) instead of until the next :00.

**Races.** The sum and the increment are two statements, so two requests of one user are made to
take turns: each first locks the user's row (``SELECT ... FOR NO KEY UPDATE`` on PostgreSQL;
SQLite has one writer at a time from :func:`~survey.domain.base.begin_writing`), in any worker
process, so two requests racing for the last unit cannot both take it. Rows older than the slices counted are
deleted as units are taken.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from sqlalchemy import delete, func, select, update
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


#: Slices a window is cut into (:func:`spend`): a unit counts for one to 13/12 windows.
SLICES = 12


def slice_number(when: float, seconds: int) -> int:
    """The slice of a ``seconds``-long window that the moment ``when`` (seconds since the epoch) is in."""
    return math.floor(when * SLICES / seconds)


def spend(session: Session, user: User, limit: SendLimit | None, now: float | None = None) -> None:
    """Take one unit of ``user``'s budget, or raise :class:`TooMany` (429) and take nothing: taken
    only while fewer than ``limit.amount`` were taken in the current slice and the :data:`SLICES`
    before it (see the module's docstring). No limit (None) takes nothing."""
    if limit is None:
        return
    begin_writing(session)  # SQLite: one writer at a time from here, never a refused lock upgrade
    refused = TooMany("quota.exhausted", limit=limit.words())
    if limit.amount <= 0:
        raise refused
    current = slice_number(time.time() if now is None else now, limit.seconds)
    if session.get_bind().dialect.name == "postgresql":
        # the user's requests take turns from here to the commit (module docstring, "Races")
        # (FOR NO KEY UPDATE: it makes spenders wait for one another, not a row that merely refers
        # to the user, whose foreign-key check takes FOR KEY SHARE)
        session.execute(select(User.id).where(User.id == user.id).with_for_update(key_share=True))
    counted = SendQuota.window_number >= current - SLICES
    used = session.scalar(
        select(func.coalesce(func.sum(SendQuota.used), 0)).where(SendQuota.user_id == user.id, counted)
    )
    if used >= limit.amount:
        raise refused
    taken = session.execute(
        update(SendQuota)
        .where(SendQuota.user_id == user.id, SendQuota.window_number == current)
        .values(used=SendQuota.used + 1)
        .execution_options(synchronize_session=False)
    )
    if taken.rowcount == 0:
        session.add(SendQuota(user_id=user.id, window_number=current, used=1))
        session.execute(
            delete(SendQuota).where(SendQuota.user_id == user.id, ~counted).execution_options(synchronize_session=False)
        )
    session.flush()
