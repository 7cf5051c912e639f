"""The declarative base of the models: plain SQLAlchemy, so that the domain needs no Flask.

The platform hands this base to Flask-SQLAlchemy (``SQLAlchemy(model_class=Base)``), which shares
its metadata and registry: ``db.session`` queries these models, and the migrations see their tables.
"""

from __future__ import annotations

from sqlalchemy import MetaData
from sqlalchemy.orm import DeclarativeBase, Session

#: Every constraint gets a predictable name, so that a later migration can drop or alter it by name
#: on PostgreSQL and in SQLite's batch mode alike (Alembic cannot address an unnamed constraint).
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def begin_writing(session: Session) -> None:
    """On SQLite, start the session's transaction as a writer (``BEGIN IMMEDIATE``) if none is open.

    SQLite has one writer at a time. A transaction that starts by reading and then writes must
    upgrade its lock, and when another connection is writing meanwhile SQLite refuses the upgrade at
    once ("database is locked") instead of waiting, because the two could wait for each other. A
    transaction that takes the write lock first only ever waits (up to the busy timeout) and never
    meets that refusal. PostgreSQL needs nothing of the kind.
    """
    connection = session.connection()
    if connection.dialect.name != "sqlite":
        return
    if not connection.connection.driver_connection.in_transaction:
        connection.exec_driver_sql("BEGIN IMMEDIATE")
