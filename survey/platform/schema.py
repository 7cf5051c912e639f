"""The database schema is made and changed only by the Alembic migrations in ``survey/migrations``.

``flask --app survey init-db`` (which ``make run`` calls) and the tests go through
:func:`upgrade_database`; ``flask --app survey db ...`` (Flask-Migrate) offers the rest of Alembic.
A database made by ``db.create_all()`` before migrations existed holds exactly the tables of the
first revision: it is stamped with that revision instead, then upgraded like any other.
"""

from __future__ import annotations

import functools

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from flask import current_app
from sqlalchemy import inspect

from .extensions import db

#: The tables of revision 0001, the schema ``db.create_all()`` made before there were migrations.
FIRST_REVISION = "0001"
FIRST_REVISION_TABLES = frozenset(
    {"users", "surveys", "invitations", "memberships", "questions", "submissions", "answers", "designs", "options"}
)
VERSION_TABLE = "alembic_version"


class SchemaError(RuntimeError):
    """A database this app cannot safely bring up to date on its own."""


def alembic_config() -> Config:
    return current_app.extensions["migrate"].migrate.get_config()


def head_revision() -> str:
    return _head(current_app.extensions["migrate"].directory)


@functools.cache
def _head(directory: str) -> str:
    # The migration scripts do not change while the app runs: read them once, not per health check.
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision() -> str | None:
    with db.engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def upgrade_database() -> tuple[str | None, str]:
    """Bring the app's database to the newest revision; returns (revision before, revision after)."""
    tables = set(inspect(db.engine).get_table_names())
    before = current_revision() if VERSION_TABLE in tables else None
    config = alembic_config()
    if before is None and tables & FIRST_REVISION_TABLES:
        if not FIRST_REVISION_TABLES <= tables:
            missing = ", ".join(sorted(FIRST_REVISION_TABLES - tables))
            raise SchemaError(
                f"the database has some of this app's tables but not all (missing: {missing}) and no record "
                "of migrations; restore it from a backup or point DATABASE_URL at an empty database"
            )
        command.stamp(config, FIRST_REVISION)
        before = FIRST_REVISION
    command.upgrade(config, "head")
    return before, head_revision()
