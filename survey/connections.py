"""Database connections: check a pooled connection before use only when it may have gone stale.

SQLAlchemy's ``pool_pre_ping`` sends a ping before every checkout, which on the submission path is
a third of all round trips. A connection handed back a moment ago is as alive as it was then, so
here the ping is sent only to a connection that sat in the pool for more than
``IDLE_PING_SECONDS``. If the database restarts under load, a request on a connection used just
before fails once; SQLAlchemy then recognises the disconnect and discards the whole pool, so the
next requests get fresh connections.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from sqlalchemy import Engine, event, exc

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
