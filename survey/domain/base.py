"""The declarative base of the models: plain SQLAlchemy, so that the domain needs no Flask.

The platform hands this base to Flask-SQLAlchemy (``SQLAlchemy(model_class=Base)``), which shares
its metadata and registry: ``db.session`` queries these models, and the migrations see their tables.
"""

from __future__ import annotations

from sqlalchemy import MetaData
from sqlalchemy.orm import DeclarativeBase

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
