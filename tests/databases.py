"""The databases the tests' apps run on, and the configuration that points an app at one.

Every test app is built here or by the fixtures in ``conftest.py`` that call these, so that there is
one answer to "which database, migrated how, with which settings": SQLite always, and PostgreSQL too
when ``TEST_DATABASE_URL`` is set. The schema comes from the migrations, as in production.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from flask import Flask
from sqlalchemy import create_engine, event, text

from survey import create_app
from survey.platform.extensions import db
from survey.platform.schema import VERSION_TABLE, upgrade_database

from .live import CHEAP_PASSWORD_HASH
from .surveys import SMALL_SPEC

PG_URL = os.environ.get("TEST_DATABASE_URL")
#: The Redis server the rate-limit tests count on (.ci/run sets it; this machine's by default).
REDIS_URL = os.environ.get("TEST_REDIS_URL") or "redis://127.0.0.1:6379/0"
#: Every key this test session writes to Redis begins with this (conftest.py deletes them at the end);
#: another session's keys, on a shared server, are never touched.
REDIS_PREFIX = f"survey-test-{uuid.uuid4().hex[:10]}"
#: The backends a test parametrized over databases runs on.
BACKENDS = ["sqlite"] + (["postgresql"] if PG_URL else [])


def pg_url() -> str:
    """``TEST_DATABASE_URL`` in the form the app uses (its driver named)."""
    from survey.platform.config import normalize_database_url

    return normalize_database_url(PG_URL or "")


def migrate(config: dict) -> None:
    """Run every migration on the database ``config`` names (the only way the schema is made)."""
    app = create_app(config)
    with app.app_context():
        upgrade_database()
        db.engine.dispose()


def empty_pg_schema(schema: str) -> None:
    """Remove every row but the migration record, and restart the id sequences."""
    tables = ", ".join(f'"{schema}"."{t.name}"' for t in db.metadata.sorted_tables if t.name != VERSION_TABLE)
    engine = create_engine(pg_url())
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    engine.dispose()


def make_config(backend: str, tmp_path: Path, request) -> dict:
    """Configuration for an app on a migrated database that holds no rows yet.

    ``request`` is the test's, so that the session's migrated template (``sqlite_template``) or
    private schema (``pg_schema``) is made once, by the fixtures in ``conftest.py``.
    """
    config = {
        "TESTING": True,
        "SECRET_KEY": "test-secret",
        "WTF_CSRF_ENABLED": False,
        # the limiter is process-wide; tests that sign in often would trip it (tested on its own)
        "RATELIMIT_ENABLED": False,
        "PASSWORD_HASH_METHOD": CHEAP_PASSWORD_HASH,
        # no fold in the background, whose thread would outlive the test's app and schema; readers
        # add the listed submissions, and tests/test_pending_submissions.py folds (and starts folds) itself
        "FOLD_SECONDS": 0,
    }
    if backend == "sqlite":
        path = tmp_path / "test.sqlite"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        config["SQLALCHEMY_DATABASE_URI"] = f"sqlite:///{path}"
    else:
        schema = request.getfixturevalue("pg_schema")
        empty_pg_schema(schema)
        config["SQLALCHEMY_DATABASE_URI"] = pg_url()
        config["SQLALCHEMY_ENGINE_OPTIONS"] = {"connect_args": {"options": f"-csearch_path={schema}"}}
    return config


@contextlib.contextmanager
def own_database(backend: str, tmp_path: Path, name: str) -> Iterator[str]:
    """A database of its own, empty (a new SQLite file, or a new PostgreSQL database dropped at the
    end), for a server that runs in another process; yields its URL."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / f'{name}.sqlite'}"
        return
    database = f"survey_{name}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(pg_url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{database}"'))
    try:
        yield pg_url().rsplit("/", 1)[0] + f"/{database}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
        admin.dispose()


def redis_limits(name: str = "") -> dict[str, str]:
    """Settings that count an app's rate limits in the tests' Redis, under this session's prefix
    (and ``name`` after it: a store of its own, for servers whose counts must not meet others')."""
    prefix = f"{REDIS_PREFIX}:{name}" if name else REDIS_PREFIX
    return {"RATELIMIT_STORAGE_URL": REDIS_URL, "RATELIMIT_KEY_PREFIX": prefix}


def delete_redis_keys(prefix: str = REDIS_PREFIX) -> int:
    """Delete the keys under ``prefix`` (this session's by default; never anyone else's); how many."""
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        return client.delete(*keys) if keys else 0
    finally:
        client.close()


def limited_app(tmp_path: Path, sqlite_template: Path, **config) -> Flask:
    """An app on a migrated SQLite copy holding the small survey, with the rate limits on, counted in
    the tests' Redis (:func:`redis_limits`), and its counters cleared."""
    from survey.domain.surveys.specs import create_survey_from_spec
    from survey.platform.limits import limiter

    path = tmp_path / f"limited-{uuid.uuid4().hex[:6]}.sqlite"
    shutil.copyfile(sqlite_template, path)
    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{path}",
            "SECRET_KEY": "t",
            "RATELIMIT_ENABLED": True,
            "PASSWORD_HASH_METHOD": CHEAP_PASSWORD_HASH,
            "FOLD_SECONDS": 0,  # as make_config: the fold is tested where it is the point
            **redis_limits(),
            **config,
        }
    )
    with app.app_context():
        create_survey_from_spec(db.session, SMALL_SPEC)
        db.session.commit()
    limiter.reset(app)
    return app


@contextlib.contextmanager
def statements(app) -> Iterator[list[str]]:
    """Collect every SQL statement the app sends to its database while the block runs: those
    SQLAlchemy sends, and on PostgreSQL also those sent on the driver's own cursor."""
    seen: list[str] = []
    with app.app_context():
        engine = db.engine
    if engine.dialect.name == "postgresql":
        import psycopg

        original = psycopg.Cursor.execute

        def execute(self, query, *args, **kwargs):
            seen.append(query if isinstance(query, str) else str(query))
            return original(self, query, *args, **kwargs)

        psycopg.Cursor.execute = execute
        try:
            yield seen
        finally:
            psycopg.Cursor.execute = original
        return

    def listener(conn, cursor, statement, parameters, context, executemany):
        seen.append(statement)

    event.listen(engine, "before_cursor_execute", listener)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", listener)
