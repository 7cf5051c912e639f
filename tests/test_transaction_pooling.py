"""Behind a pooler in transaction mode (PgBouncer's ``pool_mode = transaction``), as docs/deploy.md says.

Such a pooler lends a server connection to another client between transactions, so nothing may stay
on one. The hosts' own test of the setting, with both hosts' connections taking turns on three
server connections, is tests/test_many_hosts.py (its ``pgbouncer`` case); here, why the setting is
needed, what it sets, and the one setting the database must then hold itself.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import create_engine, text

from survey import create_app
from survey.platform.config import from_environment, through_transaction_pooler
from survey.platform.extensions import db

from .databases import PG_URL, own_database
from .servers import start_pgbouncer

needs_postgresql = pytest.mark.skipif(not PG_URL, reason="TEST_DATABASE_URL is not set")


@pytest.fixture(scope="module")
def pooled(tmp_path_factory) -> Iterator[tuple[str, str]]:
    """A database of its own and PgBouncer in front of it; yields (the database's URL, through the pooler)."""
    folder: Path = tmp_path_factory.mktemp("pooled")
    with own_database("postgresql", folder, "pooled") as url, start_pgbouncer(url, folder / "pgbouncer.log") as pooler:
        yield url, pooler


def plain(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


@needs_postgresql
@pytest.mark.postgresql
def test_psycopg_prepares_statements_that_another_client_meets_behind_the_pooler(pooled):
    """Why the setting exists: two clients in turn, each running one statement more than psycopg's
    five before it prepares it, meet on one server connection, where the second's prepared statement
    takes the first's name. With preparing off, the same turns run."""
    _, pooler = pooled

    def turns(prepare_threshold: int | None) -> None:
        first, second = (
            psycopg.connect(plain(pooler), autocommit=True, prepare_threshold=prepare_threshold) for _ in range(2)
        )
        try:
            for i in range(8):
                for connection in (first, second):
                    assert connection.execute("SELECT %s::int + 1", (i,)).fetchone() == (i + 1,)
        finally:
            first.close()
            second.close()

    with pytest.raises(psycopg.errors.DuplicatePreparedStatement):
        turns(5)  # psycopg's default
    turns(None)


def test_the_setting_turns_preparing_off_and_keeps_the_pool(monkeypatch):
    url = "postgresql+psycopg://postgres@127.0.0.1:6432/survey"
    config = {
        "SQLALCHEMY_DATABASE_URI": url,
        "DATABASE_TRANSACTION_POOLING": True,
        "SQLALCHEMY_ENGINE_OPTIONS": {"pool_size": 15, "max_overflow": 0, "connect_args": {"connect_timeout": 5}},
    }
    through_transaction_pooler(config)
    assert config["SQLALCHEMY_ENGINE_OPTIONS"] == {
        "pool_size": 15,
        "max_overflow": 0,
        "connect_args": {"connect_timeout": 5, "prepare_threshold": None},
    }
    # connect_args given as None are made a dict; a driver other than psycopg cannot be told
    config = {"SQLALCHEMY_DATABASE_URI": url, "DATABASE_TRANSACTION_POOLING": True}
    config["SQLALCHEMY_ENGINE_OPTIONS"] = {"connect_args": None}
    through_transaction_pooler(config)
    assert config["SQLALCHEMY_ENGINE_OPTIONS"] == {"connect_args": {"prepare_threshold": None}}
    with pytest.raises(RuntimeError, match="needs the psycopg driver"):
        through_transaction_pooler({**config, "SQLALCHEMY_DATABASE_URI": "postgresql+psycopg2://u@h/survey"})
    # off, or on SQLite, nothing changes
    for unchanged in (
        {"SQLALCHEMY_DATABASE_URI": url, "DATABASE_TRANSACTION_POOLING": False},
        {"SQLALCHEMY_DATABASE_URI": "sqlite:///survey.sqlite", "DATABASE_TRANSACTION_POOLING": True},
    ):
        config = dict(unchanged)
        through_transaction_pooler(config)
        assert config == unchanged
    # from the environment, as a deployment sets it
    monkeypatch.setenv("DATABASE_TRANSACTION_POOLING", "1")
    assert from_environment()["DATABASE_TRANSACTION_POOLING"] is True
    monkeypatch.setenv("DATABASE_TRANSACTION_POOLING", "transaction")
    with pytest.raises(RuntimeError, match="DATABASE_TRANSACTION_POOLING must be true or false"):
        from_environment()


@needs_postgresql
@pytest.mark.postgresql
def test_the_app_sets_nothing_on_a_pooled_connection_and_says_when_the_database_compiles(pooled, tmp_path, caplog):
    """Behind the pooler the app leaves JIT to the database (a ``SET`` would stay on one server
    connection, for other clients): a database with JIT on is logged once, at the first connection;
    after ``ALTER DATABASE ... SET jit = off``, as docs/deploy.md says, nothing is."""
    url, _ = pooled
    database = plain(url).rsplit("/", 1)[1]

    def connect_app() -> tuple[list[str], list[str]]:
        """Three connections of a new app through a new pooler (whose server connections start with
        the database's settings): what each says of JIT, and what the app logged."""
        caplog.clear()
        with start_pgbouncer(url, tmp_path / "pgbouncer.log") as pooler:
            app = create_app(
                {
                    "SQLALCHEMY_DATABASE_URI": pooler.replace("postgresql://", "postgresql+psycopg://"),
                    "SECRET_KEY": "t",
                    "DATABASE_TRANSACTION_POOLING": True,
                }
            )
            with caplog.at_level(logging.WARNING, logger="survey.database"), app.app_context():
                connections = [db.engine.connect() for _ in range(3)]
                settings = [c.execute(text("SHOW jit")).scalar() for c in connections]
                for connection in connections:
                    connection.close()
                db.engine.dispose()
        return settings, [r.getMessage() for r in caplog.records if r.name == "survey.database"]

    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f'ALTER DATABASE "{database}" SET jit = on'))
        settings, warnings = connect_app()
        assert settings == ["on"] * 3  # the app set nothing on them
        assert len(warnings) == 1 and "ALTER DATABASE <name> SET jit = off" in warnings[0], warnings
        with admin.connect() as connection:
            connection.execute(text(f'ALTER DATABASE "{database}" SET jit = off'))
        assert connect_app() == (["off"] * 3, [])
    finally:
        admin.dispose()
