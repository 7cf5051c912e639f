"""Fixtures: the app on a real database (SQLite, and PostgreSQL when TEST_DATABASE_URL is set).

The schema comes from the migrations, as in production: they run once per test session (into a
SQLite template file that each test copies, and into the PostgreSQL schema, which each test
empties). PostgreSQL tests run in a schema of their own, so that two test runs on one server (a
developer's and CI's) cannot drop each other's tables.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid

import pytest
from hypothesis import HealthCheck, settings
from sqlalchemy import create_engine, text

from survey import create_app
from survey.domain.models import User
from survey.platform.extensions import db
from survey.platform.schema import VERSION_TABLE, upgrade_database

from .live import CHEAP_PASSWORD_HASH, chromium

# Hypothesis profiles. ``ci`` (the default) derandomizes every property so that a run of the suite is
# the same on every machine and every time: CI goes red on a change, never on a draw. ``fuzz``
# (benchmarks/fuzz.py sets ``HYPOTHESIS_PROFILE=fuzz``) draws twenty times as many cases at random, to
# look for what the fixed draws miss. Tests scale their own example counts by ``max_examples`` over
# ``DEFAULT_EXAMPLES``.
DEFAULT_EXAMPLES = 100
settings.register_profile("ci", max_examples=DEFAULT_EXAMPLES, derandomize=True, database=None, deadline=None)
settings.register_profile(
    "fuzz",
    max_examples=20 * DEFAULT_EXAMPLES,
    derandomize=False,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_terminal_summary(terminalreporter, config) -> None:
    """The order's seed again at the end of a run, where a failure is read (pytest-randomly prints it
    at the top too): the same seed runs the same order, and reseeds ``random`` and numpy's global
    generator per test as this run did (docs/testing.md)."""
    seed = config.getoption("randomly_seed", default=None)
    if isinstance(seed, int) and config.pluginmanager.has_plugin("randomly"):
        terminalreporter.write_sep("-", "test order")
        terminalreporter.write_line(
            f"random order, seed {seed}: run it again with --randomly-seed={seed} "
            f'(make test PYTEST_ARGS="--randomly-seed={seed}"); -p no:randomly runs in file order'
        )


PG_URL = os.environ.get("TEST_DATABASE_URL")
BACKENDS = ["sqlite"] + (["postgresql"] if PG_URL else [])


def _pg_url() -> str:
    from survey.platform.config import normalize_database_url

    return normalize_database_url(PG_URL or "")


def migrate(config: dict) -> None:
    """Run every migration on the database ``config`` names (the only way the schema is made)."""
    app = create_app(config)
    with app.app_context():
        upgrade_database()
        db.engine.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory):
    """A migrated, empty SQLite database that tests copy instead of migrating again."""
    path = tmp_path_factory.mktemp("schema") / "template.sqlite"
    migrate({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{path}", "SECRET_KEY": "test-secret"})
    return path


@pytest.fixture(scope="session")
def pg_schema():
    """A private, migrated PostgreSQL schema for this test session, dropped at the end."""
    if not PG_URL:
        pytest.skip("TEST_DATABASE_URL is not set")
    schema = f"test_{uuid.uuid4().hex[:10]}"
    engine = create_engine(_pg_url())
    with engine.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    migrate(
        {
            "SQLALCHEMY_DATABASE_URI": _pg_url(),
            "SQLALCHEMY_ENGINE_OPTIONS": {"connect_args": {"options": f"-csearch_path={schema}"}},
            "SECRET_KEY": "test-secret",
        }
    )
    yield schema
    with engine.begin() as conn:
        conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    engine.dispose()


def empty_pg_schema(schema: str) -> None:
    """Remove every row but the migration record, and restart the id sequences."""
    tables = ", ".join(f'"{schema}"."{t.name}"' for t in db.metadata.sorted_tables if t.name != VERSION_TABLE)
    engine = create_engine(_pg_url())
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
    engine.dispose()


def make_config(backend: str, tmp_path, request) -> dict:
    """Configuration for an app on a migrated database that holds no rows yet."""
    config = {
        "TESTING": True,
        "SECRET_KEY": "test-secret",
        "WTF_CSRF_ENABLED": False,
        # the limiter is process-wide; tests that sign in often would trip it (tested on its own)
        "RATELIMIT_ENABLED": False,
        "PASSWORD_HASH_METHOD": CHEAP_PASSWORD_HASH,
    }
    if backend == "sqlite":
        path = tmp_path / "test.sqlite"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        config["SQLALCHEMY_DATABASE_URI"] = f"sqlite:///{path}"
    else:
        schema = request.getfixturevalue("pg_schema")
        empty_pg_schema(schema)
        config["SQLALCHEMY_DATABASE_URI"] = _pg_url()
        config["SQLALCHEMY_ENGINE_OPTIONS"] = {"connect_args": {"options": f"-csearch_path={schema}"}}
    return config


@contextlib.contextmanager
def own_database(backend: str, tmp_path, name: str):
    """A database of its own, empty (a new SQLite file, or a new PostgreSQL database dropped at the
    end), for a server that runs in another process; yields its URL."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / f'{name}.sqlite'}"
        return
    database = f"survey_{name}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(_pg_url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{database}"'))
    try:
        yield _pg_url().rsplit("/", 1)[0] + f"/{database}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
        admin.dispose()


def limited_app(tmp_path, sqlite_template, **config):
    """An app on a migrated SQLite copy holding the small survey, with the rate limits on, and the
    process's counters cleared."""
    from survey.domain.specs import create_survey_from_spec
    from survey.platform.limits import limiter

    path = tmp_path / f"limited-{uuid.uuid4().hex[:6]}.sqlite"
    shutil.copyfile(sqlite_template, path)
    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{path}",
            "SECRET_KEY": "t",
            "RATELIMIT_ENABLED": True,
            "PASSWORD_HASH_METHOD": CHEAP_PASSWORD_HASH,
            **config,
        }
    )
    with app.app_context():
        create_survey_from_spec(db.session, SMALL_SPEC)
        db.session.commit()
        limiter.reset()
    return app


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium for one browser test module (tests/live.py says how it is launched)."""
    with chromium() as launched:
        yield launched


@pytest.fixture(params=BACKENDS)
def app(request, tmp_path):
    app = create_app(make_config(request.param, tmp_path, request))
    yield app
    with app.app_context():
        db.session.remove()
        db.engine.dispose()


@pytest.fixture
def csrf_app(tmp_path, request):
    """SQLite app with CSRF protection on, as in production."""
    config = make_config("sqlite", tmp_path, request)
    config["WTF_CSRF_ENABLED"] = True
    app = create_app(config)
    yield app
    with app.app_context():
        db.engine.dispose()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


@pytest.fixture
def user(app):
    with app.app_context():
        u = User(username="alice")
        u.set_password("correct horse battery")
        db.session.add(u)
        db.session.commit()
        return u.id


@pytest.fixture
def signed_in(client, user):
    response = client.post("/auth/login", data={"username": "alice", "password": "correct horse battery"})
    assert response.status_code == 302
    return client


SMALL_SPEC = {
    "title": "Small test survey",
    "slug": "small-test",
    "introduction": "For tests.",
    "questions": [
        {
            "key": "drugs",
            "kind": "yes_no",
            "text": "Have you used drugs?",
            "privacy": {"design": "coin_flip", "truth_probability": 0.5, "yes_probability": 0.5},
        },
        {"key": "mirror", "kind": "yes_no", "text": "Mirrored?", "privacy": {"design": "warner", "p": 0.75}},
        {
            "key": "often",
            "kind": "choice",
            "text": "How often?",
            "options": ["never", "sometimes", "often", "always"],
            "privacy": {"design": "grr", "epsilon": 1.0},
        },
        {"key": "age", "kind": "direct", "text": "Age group?", "options": ["young", "old"], "required": False},
    ],
}


@pytest.fixture
def small_survey(app, user):
    """SMALL_SPEC, open, owned by the ``user`` fixture (alice)."""
    from survey.domain.specs import create_survey_from_spec

    with app.app_context():
        survey = create_survey_from_spec(db.session, SMALL_SPEC, owner=db.session.get(User, user))
        db.session.commit()
        return survey.slug
