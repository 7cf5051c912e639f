"""Database connections: each checked before use, and one log line per outage.

**Checked before use.** After the database restarts, every pooled connection is dead, and the first
request on each used to fail (4 of 16 after one restart). SQLAlchemy's ``pool_pre_ping`` would
send a round trip before every checkout, a third of all round trips on the submission path (one
statement). Most of that is not needed: a server that goes away closes its connections, and a
closed connection is readable at once (the server's goodbye, or end of file). So every checkout
asks the kernel, without a round trip, whether the idle connection has anything to read; only
then, or after the connection sat in the pool for more than ``IDLE_PING_SECONDS`` (where a
silently dropped connection is worth a ping), is a real ping sent, and a connection that fails it
is replaced before the request sees it. This is a pool ``checkout`` listener, so it covers every
way a connection leaves the pool: the ORM session and ``engine.raw_connection()`` alike (the
submission path's driver cursor, :func:`survey.domain.responses.submissions.autocommit_cursor`).

**An outage** is reported by whoever meets it (the error handlers of :mod:`survey.web.common`, the
health check) through the app's :class:`Outage` (:func:`outage_of`): the first failure logs one
line, further failures nothing, and the first connection that works again logs one line with how
long it lasted and how many requests were refused meanwhile. Per app, so per process in production:
each gunicorn worker says it once. (Held by the app, not the module: where several apps share a
process, as the tests build them, one app's outage was ended, in the log, by another's first
connection to a database that had never been down.)
"""

from __future__ import annotations

import logging
import os
import select
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
from flask import Flask, current_app, g, has_app_context
from sqlalchemy import URL, Engine, event, exc
from sqlalchemy.orm import scoped_session

IDLE_PING_SECONDS = 5.0

#: What a request meets when the database is down, restarting or unreachable: SQLAlchemy's errors
#: (the ORM, and taking a connection from the pool), and the driver's own on the submission path,
#: which runs its statement on the driver's cursor.
UNAVAILABLE: tuple[type[Exception], ...] = (
    exc.OperationalError,
    exc.TimeoutError,  # no pooled connection came free in time: the database is not answering
    exc.InterfaceError,
    psycopg.OperationalError,
    psycopg.InterfaceError,
)

#: SQLite's result codes (the primary code, the low byte) for a database that cannot be used now,
#: rather than a statement that is wrong (SQLITE_ERROR, which is also an OperationalError there):
#: BUSY, LOCKED, IOERR, FULL, CANTOPEN, PROTOCOL.
SQLITE_UNAVAILABLE = frozenset({5, 6, 10, 13, 14, 15})

log = logging.getLogger("survey.database")


def is_unavailable(error: BaseException) -> bool:
    """Whether ``error``, one of :data:`UNAVAILABLE`, means the database cannot be used now (down,
    restarting, unreachable, out of connections, locked) rather than that a statement is wrong.

    The DB-API's OperationalError is "not necessarily under the control of the programmer": so it is
    for psycopg, but SQLite raises it for a misspelt column too, which must stay a 500 with its
    traceback for whoever has to fix it."""
    if isinstance(error, exc.DBAPIError) and error.connection_invalidated:
        return True
    original = getattr(error, "orig", None) or error
    if isinstance(original, sqlite3.Error):
        return (getattr(original, "sqlite_errorcode", 0) & 0xFF) in SQLITE_UNAVAILABLE
    return True


def _has_input(dbapi_connection: Any) -> bool:
    """Whether an idle connection has something to read, without reading it. A live idle connection
    has nothing; one the server closed has its last message or end of file. SQLite: never."""
    fileno = getattr(dbapi_connection, "fileno", None)
    if fileno is None:
        return False
    try:
        fd = fileno()
    except Exception:  # the driver knows it is closed
        return True
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(0))


def check_connections_before_use(engine: Engine, outage: Outage, idle_seconds: float = IDLE_PING_SECONDS) -> None:
    """Hand out only connections that work: ping one that has input waiting or sat idle for more
    than ``idle_seconds`` (or any, during an outage), and replace it when the ping fails. Every
    checkout that works also tells ``outage`` (the engine's app's) that the database is back."""
    dialect = engine.dialect

    @event.listens_for(engine, "checkin")
    def remember_when(dbapi_connection: Any, record: Any) -> None:
        record.info["checked_in"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def check(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        checked_in = record.info.get("checked_in")
        # During an outage a pooled connection is pinged before it may say the database is back: a
        # connection that merely has not noticed yet would end the outage in the log, and the next
        # failure would start a second one (a brand-new connection has just reached the database).
        stale = checked_in is not None and (
            outage.since is not None or time.monotonic() - checked_in >= idle_seconds or _has_input(dbapi_connection)
        )
        if stale:
            try:
                dialect.do_ping(dbapi_connection)
            except dialect.loaded_dbapi.Error as error:
                # The pool discards it and makes a new one (SQLAlchemy's "pessimistic" handling).
                raise exc.DisconnectionError(f"stale connection: {error}") from error
        if outage.since is not None:
            outage.ended()
        if has_app_context():
            # From here on, what this request does may reach the database: after a failure, whether
            # anything was stored is no longer known (survey.web.common says so).
            g.database_reached = True


class Outage:
    """This process's view of whether its database answers, so that an outage is logged once when
    it starts and once when it ends, whatever the number of requests it fails in between."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: ``time.monotonic()`` of the first failure of the current outage; None while all is well.
        self.since: float | None = None
        self.refused = 0

    def failed(self, error: BaseException) -> None:
        """A request could not use the database: log it if it is the first since it last worked."""
        with self._lock:
            self.refused += 1
            if self.since is not None:
                return
            self.since = time.monotonic()
        log.error(
            "database unavailable (%s: %s); answering 503 until it is back, further failures are not logged",
            type(error).__name__,
            _first_line(error),
        )

    def ended(self) -> None:
        """A connection works again: log how long the outage lasted."""
        with self._lock:
            if self.since is None:
                return
            seconds, refused = time.monotonic() - self.since, self.refused
            self.since, self.refused = None, 0
        log.warning("database available again after %.1f s; %d requests were refused meanwhile", seconds, refused)


def end_sessions_through_outages(app: Flask, session: scoped_session) -> None:
    """End each request's session even when its connection died after the response was made.

    Flask-SQLAlchemy rolls the session back when the request ends; on a connection the database
    dropped meanwhile that rollback raises, after the response was written, and the server answered
    500 with a traceback instead of the finished response. The database has already ended that
    transaction, so here the failure is noted as an outage and the broken session dropped. (Teardown
    functions run last-registered first, so this runs before Flask-SQLAlchemy's, which then finds
    nothing left to do.)"""

    @app.teardown_appcontext
    def end_session(exception: BaseException | None) -> None:
        try:
            session.remove()
        except UNAVAILABLE as error:
            if not is_unavailable(error):
                raise
            outage_of(app).failed(error)
            session.registry.clear()


def _first_line(error: BaseException) -> str:
    """The driver's message without SQLAlchemy's appended statement, parameters and links."""
    original = getattr(error, "orig", None) or error
    lines = str(original).strip().splitlines()
    return lines[0][:300] if lines else ""


def outage_of(app: Flask) -> Outage:
    """The app's outage record (each gunicorn worker's app has its own), made with its first use."""
    found = app.extensions.get("outage")
    if found is None:
        found = app.extensions.setdefault("outage", Outage())
    return found


def current_outage() -> Outage:
    """The outage record of the app of the current context."""
    return outage_of(current_app._get_current_object())  # type: ignore[attr-defined]


def create_private_sqlite_file(url: URL) -> None:
    """Create a SQLite database file that does not exist yet readable and writable by its owner only
    (0600), before SQLite creates it with the process's umask (often world-readable). SQLite gives
    its journal and WAL files the database file's permissions. An existing file is left as it is."""
    if url.get_backend_name() != "sqlite" or url.query.get("uri"):
        return
    database = url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    try:
        os.close(os.open(Path(database), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        pass
    except OSError:
        return  # a missing folder or no permission: SQLite will say so when it connects


#: How long a SQLite connection waits for the one writer before it gives up ("database is locked").
SQLITE_BUSY_SECONDS = 30.0


def wait_for_sqlite_writers(engine: Engine, seconds: float = SQLITE_BUSY_SECONDS) -> None:
    """Let SQLite connections wait up to ``seconds`` for the write lock (the driver's default is 5 s).

    SQLite has one writer at a time; write transactions take the lock first
    (:func:`survey.domain.base.begin_writing`), so a writer only ever waits its turn. Five seconds
    proved too short on a loaded machine while a tally rebuild recounted: a submission would fail
    where waiting a little longer stores it."""
    if engine.dialect.name != "sqlite":
        return

    @event.listens_for(engine, "connect")
    def set_busy_timeout(dbapi_connection: Any, record: Any) -> None:
        dbapi_connection.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")


def no_jit_on_postgresql(engine: Engine, pooled: bool = False) -> None:
    """Turn PostgreSQL's JIT compilation off for the app's connections.

    PostgreSQL compiles a statement to machine code when the planner's cost estimate passes
    ``jit_above_cost``, and its estimates of a short list joined to itself are wild: a read of the
    pair tallies with the submissions not yet folded (survey.domain.responses.writes.pair_cells) was
    estimated at 106 million and spent 308 of its 379 ms compiling, to read a few hundred rows; the
    fold, 540 of 654 ms. Nothing the app sends runs long enough for compiled code to pay back its
    compilation.

    Behind a pooler in transaction mode (``pooled``) a ``SET`` would stay on whichever server
    connection it reached, for other clients, and miss the others: the database must have JIT off
    (``ALTER DATABASE ... SET jit = off``, docs/deploy.md). Each process's first connection asks, and
    a database that still has it on is logged, once per process."""
    if engine.dialect.name != "postgresql":
        return
    if pooled:
        asked = threading.Lock()

        @event.listens_for(engine, "connect")
        def check_jit(dbapi_connection: Any, record: Any) -> None:
            if not asked.acquire(blocking=False):
                return
            autocommit = dbapi_connection.autocommit
            try:
                dbapi_connection.autocommit = True
                setting = dbapi_connection.execute("SHOW jit").fetchone()[0]
            except Exception:
                asked.release()  # the next connection asks instead
                raise
            finally:
                if not dbapi_connection.closed:
                    dbapi_connection.autocommit = autocommit
            if setting != "off":
                log.warning(
                    "jit is %s on this database: behind a transaction pooler the app cannot turn it off "
                    "per connection; run ALTER DATABASE <name> SET jit = off (docs/deploy.md, PgBouncer)",
                    setting,
                )

        return

    @event.listens_for(engine, "connect")
    def set_no_jit(dbapi_connection: Any, record: Any) -> None:
        autocommit = dbapi_connection.autocommit
        dbapi_connection.autocommit = True  # (a SET in a transaction that is rolled back is undone)
        dbapi_connection.execute("SET jit = off")
        dbapi_connection.autocommit = autocommit


def erase_deleted_sqlite_rows(engine: Engine) -> None:
    """Have SQLite overwrite deleted rows with zeros (``secure_delete``) instead of leaving them in free
    pages of the file. A submission to a survey by invitation is held, then deleted from
    ``held_submissions`` when its batch is released (survey/domain/responses/mixing.py); without this, the held
    row (what a code admitted, in claim order) would stay readable in the file until the page is
    reused. The journal or WAL keeps a copy until the next checkpoint (SECURITY.md)."""
    if engine.dialect.name != "sqlite":
        return

    @event.listens_for(engine, "connect")
    def set_secure_delete(dbapi_connection: Any, record: Any) -> None:
        dbapi_connection.execute("PRAGMA secure_delete = ON")
