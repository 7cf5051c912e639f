"""The fold of the answer, day and pair tallies, started in the background after a submission,
about once per interval on each host.

A submission lists itself for the fold instead of adding to those tallies
(survey.domain.responses.pending); readers add what is listed, so nothing waits for the fold to
be right, but the list must stay short for them to stay fast. A host starts about one fold every
``FOLD_SECONDS`` (1 s; 0 turns it off, as the tests do unless they test it): each of its W
gunicorn workers at most every W × ``FOLD_SECONDS``, in its background thread
(survey.platform.background), so that no respondent waits for it: under load a fold takes the
submissions of the last second in one transaction. (Each worker folding every second made four
workers fold four times a second, each fold upserting the same few hundred cells of the
tallies for a quarter of the submissions: with the interval shared, the 4-worker ingest stored 4%
more, 9 of 12 paired runs; benchmarks/scale_ingest.md.) A fold that finds
the database down notes the outage like a request (survey.platform.connections) and tries again
with the next submission after the interval. A process that
stores no submission folds nothing, and nothing is left behind for long: the next submission
anywhere folds every listed one, and a rebuild of the tallies (``flask recount --fix``) empties it.
"""

from __future__ import annotations

import threading
import time

from flask import Flask

from survey.domain.responses.pending import fold_all

from . import background
from .config import worker_processes
from .connections import UNAVAILABLE, current_outage, is_unavailable
from .extensions import db


class Clock:
    """When the app's process may start its next fold. Held by the app (``app.extensions``), not by
    the module: in production one process is one app, and where several apps share a process (the
    tests, a script) a fold one started does not hold back another's."""

    def __init__(self) -> None:
        self.next_at = 0.0
        self.lock = threading.Lock()


def clock(app: Flask) -> Clock:
    """The app's fold clock, made with its first use."""
    found = app.extensions.get("folding")
    if found is None:
        found = app.extensions.setdefault("folding", Clock())
    return found


def fold_soon(app: Flask) -> bool:
    """Start a fold in the background unless this app's process started one less than
    ``FOLD_SECONDS`` × its host's worker processes ago; whether one was started."""
    every = app.config["FOLD_SECONDS"]
    if not every:
        return False
    now = time.monotonic()
    kept = clock(app)
    if now < kept.next_at:  # the common case, read without the lock
        return False
    with kept.lock:
        if now < kept.next_at:
            return False
        kept.next_at = now + every * worker_processes()  # read when a fold starts, not on every submission
    return background.run_later(app, _fold)


def fold_after_import(app: Flask) -> bool:
    """Start a fold in the background now, whatever the interval: an import lists its rows for the
    fold (thousands at once, and a closed survey gets no submission to start one later); whether one
    was started (not when the fold is off, as in most tests)."""
    if not app.config["FOLD_SECONDS"]:
        return False
    return background.run_later(app, _fold)


def _fold() -> None:
    """Fold what is listed; with the database down, note the outage (logged once, as the requests
    note theirs) and leave the list for a later fold, instead of logging a traceback per fold. A
    fold cut short by the outage changed nothing: its transaction is the database's to roll back."""
    try:
        fold_all(db.session)
    except UNAVAILABLE as error:
        state = getattr(getattr(error, "orig", None) or error, "sqlstate", None) or ""
        if not is_unavailable(error) or state.startswith(NOT_AN_OUTAGE):
            raise  # logged with its traceback by the background thread: a fold's own failure
        current_outage().failed(error)


#: SQLSTATEs of psycopg's OperationalErrors that a working database raises about this transaction (a
#: deadlock or a serialization failure, class 40; a cancelled statement; a lock not available): for
#: a fold, a fault to see with its traceback, not an outage.
NOT_AN_OUTAGE = ("40", "57014", "55P03")
