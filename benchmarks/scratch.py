"""What the benchmarks that run the app on a database of their own share: a scratch PostgreSQL
database, dropped at the end, and the app on a migrated database.

A benchmark runs as a script (``python benchmarks/held_ingest.py``) with the repository's root on
``sys.path``, and imports this as ``benchmarks.scratch``.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

from flask import Flask
from sqlalchemy import create_engine, text

from survey import create_app
from survey.platform.config import normalize_database_url
from survey.platform.extensions import db
from survey.platform.schema import upgrade_database


@contextlib.contextmanager
def scratch_postgresql(url: str, prefix: str) -> Iterator[str]:
    """A new, empty database named ``<prefix>_<8 hex digits>`` on the server of the PostgreSQL
    ``url``, dropped (connections and all) when the block ends; yields its URL, in the app's form."""
    base = normalize_database_url(url)
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield base.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def migrated_app(url: str, **config) -> Flask:
    """The app on ``url``, every migration run (the schema as production has it); ``config`` adds
    to or overrides the benchmarks' settings (secret key ``bench``)."""
    app = create_app({"SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": "bench", **config})
    with app.app_context():
        upgrade_database()
        db.engine.dispose()
    return app
