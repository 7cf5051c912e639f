"""Fixtures: the app on a real database (SQLite, and PostgreSQL when TEST_DATABASE_URL is set), the
browser, and the markers every test gets from what it uses.

The schema comes from the migrations, as in production: they run once per test session (into a
SQLite template file that each test copies, and into the PostgreSQL schema, which each test
empties). PostgreSQL tests run in a schema of their own, so that two test runs on one server (a
developer's and CI's) cannot drop each other's tables.

Only fixtures and hooks live here. What a test imports (specs, helpers, servers) lives in the helper
modules beside it (tests/databases.py, surveys.py, accounts.py, builder.py, servers.py, pages.py,
live.py, smtp.py, private_postgres.py, worst.py); a test module never imports from another test
module or from this file (tests/test_layout.py holds that). docs/testing.md lists them.
"""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import create_engine, text

from survey import create_app
from survey.domain.models import User
from survey.platform.extensions import db

from . import hypothesis_profiles
from .accounts import make_user
from .databases import BACKENDS, PG_URL, delete_redis_keys, make_config, migrate, pg_url
from .live import chromium
from .private_postgres import private_postgres
from .surveys import SMALL_SPEC
from .timing import SLOW

hypothesis_profiles.load()

#: A test that uses one of these fixtures (itself or through another fixture) drives Chromium.
BROWSER_FIXTURES = {"browser"}
#: A test that uses one of these fixtures needs a PostgreSQL server: the shared one of
#: TEST_DATABASE_URL, or one of its own (``private_pg``: initdb and postgres on this machine).
POSTGRESQL_FIXTURES = {"pg_schema", "private_pg"}


def pytest_collection_modifyitems(config, items) -> None:
    """Mark each test by what it uses, so that nobody has to remember to (docs/testing.md, "Running
    the suite in parts"): ``browser`` if it uses the browser, ``postgresql`` if it uses a PostgreSQL
    fixture or is the ``postgresql`` case of a test parametrized over :data:`BACKENDS`, ``slow`` if
    tests/timing.py measured it slow."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
        callspec = getattr(item, "callspec", None)
        params = callspec.params.values() if callspec is not None else ()
        on_postgresql = any(isinstance(value, str) and value == "postgresql" for value in params)
        if used & POSTGRESQL_FIXTURES or on_postgresql:
            item.add_marker(pytest.mark.postgresql)
        name = f"{item.path.name}::{getattr(item, 'originalname', item.name)}"
        if name in SLOW:
            item.add_marker(pytest.mark.slow)


def pytest_sessionfinish(session, exitstatus) -> None:
    """Delete the rate-limit counters this session wrote to the tests' Redis (its prefix only), if it
    wrote any."""
    try:
        delete_redis_keys()
    except Exception:  # no Redis, so no keys of ours to delete (the tests that count there said so)
        pass


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
    engine = create_engine(pg_url())
    with engine.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    migrate(
        {
            "SQLALCHEMY_DATABASE_URI": pg_url(),
            "SQLALCHEMY_ENGINE_OPTIONS": {"connect_args": {"options": f"-csearch_path={schema}"}},
            "SECRET_KEY": "test-secret",
        }
    )
    yield schema
    with engine.begin() as conn:
        conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    engine.dispose()


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium for one browser test module (tests/live.py says how it is launched)."""
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def private_pg():
    """A PostgreSQL server of the module's own (tests/private_postgres.py), for tests that crash and
    restart it; never the shared server."""
    with private_postgres() as server:
        yield server


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
    return make_user(app, "alice")


@pytest.fixture
def bob(app, user):
    """A second user, made after alice (the ``user`` fixture); password :data:`tests.accounts.PASSWORD`."""
    return make_user(app, "bob")


@pytest.fixture
def carol(app, user):
    """A third user, made after alice; password :data:`tests.accounts.PASSWORD`."""
    return make_user(app, "carol")


@pytest.fixture
def signed_in(client, user):
    response = client.post("/auth/login", data={"username": "alice", "password": "correct horse battery"})
    assert response.status_code == 302
    return client


@pytest.fixture
def small_survey(app, user):
    """SMALL_SPEC, open, owned by the ``user`` fixture (alice)."""
    from survey.domain.surveys.specs import create_survey_from_spec

    with app.app_context():
        survey = create_survey_from_spec(db.session, SMALL_SPEC, owner=db.session.get(User, user))
        db.session.commit()
        return survey.slug


@pytest.fixture
def demo(app):
    """The demo survey (survey.domain.surveys.demo) with five simulated respondents; its slug."""
    from survey.domain.surveys.demo import create_demo

    with app.app_context():
        slug = create_demo(db.session, respondents=5).slug
        db.session.commit()
    return slug
