"""Database connections: check a pooled connection before use only when it may have gone stale.

SQLAlchemy's ``pool_pre_ping`` sends a ping before every checkout, which on the submission path is
a third of all round trips. A connection handed back a moment ago is as alive as it was then, so
here the ping is sent only to a connection that sat in the pool for more than
``IDLE_PING_SECONDS``. If the database restarts under load, a request on a connection used just
before fails once; SQLAlchemy then recognises the disconnect and discards the whole pool, so the
next requests get fresh connections.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Engine, event, exc

IDLE_PING_SECONDS = 5.0


def ping_idle_connections(engine: Engine, idle_seconds: float = IDLE_PING_SECONDS) -> None:
    dialect = engine.dialect

    @event.listens_for(engine, "checkin")
    def remember_when(dbapi_connection: Any, record: Any) -> None:
        record.info["checked_in"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def ping_if_idle(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        checked_in = record.info.get("checked_in")
        if checked_in is None or time.monotonic() - checked_in < idle_seconds:
            return
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as error:
            # The pool replaces this connection and tries again (SQLAlchemy's "pessimistic" handling).
            raise exc.DisconnectionError(f"stale connection: {error}") from error


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


def erase_deleted_sqlite_rows(engine: Engine) -> None:
    """Have SQLite overwrite deleted rows with zeros (``secure_delete``) instead of leaving them in free
    pages of the file. A submission to a survey by invitation is held, then deleted from
    ``held_submissions`` when its batch is released (survey/domain/mixing.py); without this, the held
    row (what a code admitted, in claim order) would stay readable in the file until the page is
    reused. The journal or WAL keeps a copy until the next checkpoint (SECURITY.md)."""
    if engine.dialect.name != "sqlite":
        return

    @event.listens_for(engine, "connect")
    def set_secure_delete(dbapi_connection: Any, record: Any) -> None:
        dbapi_connection.execute("PRAGMA secure_delete = ON")
