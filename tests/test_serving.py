"""The production path: gunicorn with several workers, the health endpoint, configuration from the
environment, and logs that carry no respondent data."""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import stat
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import select, text

from survey import create_app
from survey.domain.models import Survey
from survey.domain.responses.mixing import held_count
from survey.domain.responses.tallies import survey_counts, tally_mismatches
from survey.platform.extensions import db
from survey.platform.limits import limiter
from survey.platform.schema import alembic_config

from .databases import BACKENDS, PG_URL, limited_app, own_database
from .live import serve
from .servers import AGENT, ROOT, gunicorn, request_json
from .surveys import GOOD

# -- health ----------------------------------------------------------------------------------------


def test_health_says_ok_without_setting_a_cookie(client):
    response = client.get("/health")
    assert response.status_code == 200
    assert response.json == {"status": "ok", "database": "ok", "schema": "current"}
    assert response.headers["Cache-Control"] == "no-store"
    assert "Set-Cookie" not in response.headers


def test_health_is_503_when_the_schema_needs_an_upgrade(tmp_path):
    app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'old.sqlite'}", "SECRET_KEY": "t"})
    with app.app_context():
        command.upgrade(alembic_config(), "0001")
    response = app.test_client().get("/health")
    assert response.status_code == 503
    assert response.json["schema"] == "needs upgrade"


@pytest.mark.parametrize(
    "url",
    ["sqlite:////nonexistent-directory/survey.sqlite", "postgresql+psycopg://postgres@127.0.0.1:1/nothing"],
)
def test_health_is_503_when_the_database_cannot_be_reached(url):
    app = create_app({"SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": "t"})
    response = app.test_client().get("/health")
    assert response.status_code == 503
    assert response.json == {"status": "unavailable", "database": "unreachable"}
    assert "nothing" not in response.get_data(as_text=True)  # no connection details leak


# -- configuration ---------------------------------------------------------------------------------


def wsgi_import(env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "SURVEY_ENV", "DATABASE_URL")}
    return subprocess.run(
        [sys.executable, "-c", "import survey.platform.wsgi"],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_production_entry_point_refuses_to_start_without_a_secret_key(tmp_path):
    database = {"DATABASE_URL": f"sqlite:///{tmp_path / 'x.sqlite'}"}
    refused = wsgi_import(database)
    assert refused.returncode != 0
    assert "SURVEY_ENV=production needs SECRET_KEY" in refused.stderr
    assert wsgi_import({**database, "SECRET_KEY": "a" * 64}).returncode == 0
    assert wsgi_import({**database, "SURVEY_ENV": "development"}).returncode == 0


def test_development_signs_with_a_random_key_made_once_in_instance(tmp_path, monkeypatch):
    """Not the public ``dev-only-change-me``: a key of this installation's own, 0600, kept across
    restarts; production still refuses to start without SECRET_KEY, whatever the file holds."""
    from flask import Flask

    from survey.platform.config import DEV_SECRET, load

    for name in ("SECRET_KEY", "SURVEY_ENV"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABASE_URL", "sqlite://")

    def key_of(instance: Path) -> str:
        app = Flask("survey", instance_path=str(instance), instance_relative_config=True)
        load(app)
        return app.config["SECRET_KEY"]

    first = key_of(tmp_path / "a")
    assert first != DEV_SECRET and re.fullmatch(r"[0-9a-f]{64}", first)
    key_file = tmp_path / "a" / "secret_key"
    assert key_file.read_text().strip() == first
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert key_of(tmp_path / "a") == first  # the next start signs with the same key
    assert key_of(tmp_path / "b") != first  # another installation, another key
    from survey.platform.secret_key import instance_secret_key

    keys: list[str] = []
    starts = [threading.Thread(target=lambda: keys.append(instance_secret_key(tmp_path / "c"))) for _ in range(8)]
    for t in starts:
        t.start()
    for t in starts:
        t.join(timeout=30)
    assert len(keys) == 8 and len(set(keys)) == 1  # processes starting at once agree on one key
    assert sorted(path.name for path in (tmp_path / "c").iterdir()) == ["secret_key"]
    monkeypatch.setenv("SURVEY_ENV", "production")
    with pytest.raises(RuntimeError, match="needs SECRET_KEY"):
        key_of(tmp_path / "a")
    # an app built for a test without a key gets a random one and writes nothing
    app = create_app({"SQLALCHEMY_DATABASE_URI": "sqlite://"})
    assert app.config["SECRET_KEY"] not in (None, DEV_SECRET, first)


def test_trusted_proxies_make_rate_limits_count_the_forwarded_address(tmp_path, sqlite_template):
    def app_with(proxies: int):
        app = limited_app(tmp_path, sqlite_template, SUBMISSION_RATE_LIMIT="2 per minute", TRUSTED_PROXIES=proxies)
        return app.test_client()

    def statuses(client, address: str) -> list[int]:
        headers = {"X-Forwarded-For": address}
        return [
            client.post("/api/surveys/small-test/responses", json={"answers": GOOD}, headers=headers).status_code
            for _ in range(3)
        ]

    behind_proxy = app_with(1)
    assert statuses(behind_proxy, "203.0.113.7") == [201, 201, 429]
    assert statuses(behind_proxy, "198.51.100.9") == [201, 201, 429]  # another respondent, own limit
    direct = app_with(0)  # without trusted proxies the header is anyone's to forge: ignored
    assert statuses(direct, "203.0.113.7") == [201, 201, 429]
    assert statuses(direct, "198.51.100.9") == [429, 429, 429]
    with create_app({"SECRET_KEY": "t", "SQLALCHEMY_DATABASE_URI": "sqlite://"}).app_context():
        limiter.reset()


# -- gunicorn --------------------------------------------------------------------------------------


@pytest.fixture(params=BACKENDS)
def served(request, tmp_path):
    """gunicorn (survey.platform.gunicorn_conf, two workers) on a migrated database of its own; yields
    (port, database url, log path)."""
    with own_database(request.param, tmp_path, "served") as url:
        yield from gunicorn(url, tmp_path)


@pytest.fixture
def served_on_sqlite(tmp_path):
    """:func:`served` on SQLite only, for what does not depend on the database."""
    with own_database("sqlite", tmp_path, "served") as url:
        yield from gunicorn(url, tmp_path)


def test_gunicorn_workers_store_every_acknowledged_submission_and_log_nothing_identifying(served):
    port, url, log = served
    statuses = Counter()
    lock = threading.Lock()

    def load(worker: int) -> None:
        for _ in range(40):
            status, _ = request_json(port, "POST", "/api/surveys/small-test/responses", {"answers": GOOD})
            with lock:
                statuses[status] += 1

    threads = [threading.Thread(target=load, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert statuses == {201: 160}

    # a coded submission: the code travels in the page's query string and in the body
    app = create_app({"SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": "t"})
    with app.app_context():
        code = db.session.scalar(text("SELECT code FROM invitations LIMIT 1"))
    assert request_json(port, "GET", f"/s/coded?code={code}")[0] == 200
    body = {"answers": GOOD, "invitation": code}
    assert request_json(port, "POST", "/api/surveys/coded/responses", body)[0] == 201
    assert request_json(port, "POST", "/api/surveys/coded/responses", body)[0] == 403

    with app.app_context():
        for slug, expected in (("small-test", 160), ("coded", 1)):
            survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
            # a coded submission is held until its batch is released (survey/domain/responses/mixing.py)
            counted = survey_counts(db.session, survey).submissions + held_count(db.session, survey.id)
            assert counted == expected
            assert tally_mismatches(db.session, survey) == []
        db.engine.dispose()

    # A worker writes its access line after the response has gone out: wait for all of them.
    deadline = time.monotonic() + 60
    while True:
        lines = log.read_text().splitlines()
        access = [line for line in lines if "/api/surveys/" in line or line.startswith("GET /s/")]
        if len(access) >= 163:
            break
        assert time.monotonic() < deadline, "\n".join(lines[-20:])
        time.sleep(0.05)
    assert any(line.startswith("POST /api/surveys/small-test/responses 201 ") for line in access)
    assert any(line.startswith("GET /s/coded 200 ") for line in access)
    everything = "\n".join(lines)
    assert code not in everything
    assert "127.0.0.1" not in "\n".join(access)
    assert AGENT not in everything and "Marker-Agent" not in everything
    for line in access:
        assert not re.search(r"\d{1,2}:\d{2}:\d{2}", line), line  # no time of day
        assert "?" not in line, line  # no query strings


def test_rate_limit_counters_start_no_thread_per_request(tmp_path, sqlite_template, monkeypatch):
    """limits' stock memory storage started a timer thread after nearly every request."""
    app = limited_app(tmp_path, sqlite_template, SUBMISSION_RATE_LIMIT="150 per minute", RATELIMIT_STORAGE_URL=None)
    client = app.test_client()
    started = []
    monkeypatch.setattr(threading.Thread, "start", lambda self: started.append(self))
    statuses = Counter(
        client.post("/api/surveys/small-test/responses", json={"answers": GOOD}).status_code for _ in range(160)
    )
    assert statuses == {201: 150, 429: 10}  # the limit still holds
    assert started == []
    limiter.reset(app)


def test_swept_memory_storage_counts_expires_and_forgets_without_threads(monkeypatch):
    from limits.storage import MemoryStorage

    from survey.platform.limits import SweptMemoryStorage

    def thread_starts(storage_class) -> tuple[int, object]:
        storage = storage_class("x://")
        time.sleep(0.05)  # the stock storage's first timer has run out
        started = []
        with monkeypatch.context() as patch:
            patch.setattr(threading.Thread, "start", lambda self: started.append(self))
            for _ in range(10):
                storage.incr("203.0.113.7", 60)
                time.sleep(0.015)
        return len(started), storage

    stock, _ = thread_starts(MemoryStorage)
    assert stock >= 5  # why this storage exists
    ours, storage = thread_starts(SweptMemoryStorage)
    assert ours == 0 and storage.get("203.0.113.7") == 10
    storage.incr("198.51.100.9", 0.01)
    time.sleep(0.05)
    assert storage.get("198.51.100.9") == 0  # its window has passed
    storage.next_sweep = 0.0  # a second has passed since the last sweep
    storage.incr("192.0.2.1", 60)  # the next hit sweeps what has expired: the address is forgotten
    assert "198.51.100.9" not in storage.counts and "198.51.100.9" not in storage.expiries
    assert storage.incr("198.51.100.9", 60) == 1  # a new window starts from nothing


# -- slow clients ----------------------------------------------------------------------------------

#: Four times the two workers of the served app: under sync workers, four slow clients held all four
#: workers of a host (each until the 30 s timeout, then the next) and a respondent waited 41 s.
SLOW_CLIENTS = 8


def test_slow_clients_do_not_keep_a_respondent_waiting(served_on_sqlite):
    """Clients that connect and send nothing, send their headers a line at a time, or their body a
    byte at a time, hold no worker: a respondent's requests are answered meanwhile, promptly (well
    under the 30 s worker timeout that each slow client used to hold a sync worker for)."""
    port, _, _ = served_on_sqlite
    stop = threading.Event()
    connections: list[socket.socket] = []
    started = threading.Semaphore(0)

    def slow(kind: str) -> None:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
            connections.append(conn)
            try:
                if kind == "head":
                    conn.sendall(b"GET /s/small-test HTTP/1.1\r\nHost: survey\r\n")
                elif kind == "body":
                    conn.sendall(
                        b"POST /api/surveys/small-test/responses HTTP/1.1\r\nHost: survey\r\n"
                        b"Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n{"
                    )
                started.release()
                while not stop.wait(0.5):
                    if kind == "head":
                        conn.sendall(b"X-Slowly: 1\r\n")
                    elif kind == "body":
                        conn.sendall(b" ")
            except OSError:
                if not stop.is_set():
                    raise

    kinds = ["head", "body", "idle", "head", "body", "idle", "head", "body"][:SLOW_CLIENTS]
    threads = [threading.Thread(target=slow, args=(kind,), daemon=True) for kind in kinds]
    for t in threads:
        t.start()
    try:
        for _ in threads:
            assert started.acquire(timeout=30)
        answered = []
        for method, path, body, expected in (
            ("GET", "/s/small-test", None, 200),
            ("POST", "/api/surveys/small-test/responses", {"answers": GOOD}, 201),
            ("GET", "/health", None, 200),
        ):
            begun = time.monotonic()
            status, _ = request_json(port, method, path, body)
            answered.append((path, status, round(time.monotonic() - begun, 2)))
            assert status == expected, answered
        assert all(seconds < 10 for _, _, seconds in answered), answered
        assert all(t.is_alive() for t in threads), "a slow client was cut off before the test ended"
    finally:
        stop.set()
        for conn in connections:
            conn.close()
        for t in threads:
            t.join(timeout=10)


# -- request bodies --------------------------------------------------------------------------------

LIMIT = 64 * 1024  # MAX_CONTENT_LENGTH


def _post(port: int, path: str, body: bytes, content_type: str, chunked: bool) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        if chunked:
            pieces = iter([body[i : i + 8192] for i in range(0, len(body), 8192)])
            conn.request("POST", path, pieces, {"Content-Type": content_type}, encode_chunked=True)
        else:
            conn.request("POST", path, body, {"Content-Type": content_type})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_a_body_over_the_limit_is_refused_whatever_its_framing(served_on_sqlite):
    """A valid submission followed by 200 KB of spaces was refused (413) with a Content-Length and
    stored (201) when sent chunked: the body was cut at 64 KiB and parsed. Under gunicorn and
    under Werkzeug's development server alike, a chunked body over the limit is now refused too,
    and one of exactly the limit is still taken."""
    gunicorn_port, url, _ = served_on_sqlite
    submission = json.dumps({"answers": GOOD}).encode()
    oversized = submission + b" " * 200_000
    exactly = submission + b" " * (LIMIT - len(submission))
    form = "&".join(f"q_{key}={value}" for key, value in GOOD.items()).encode()
    app = create_app({"SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": "t", "RATELIMIT_ENABLED": False})
    stored = 0
    with serve(app) as development_port:
        for port in (gunicorn_port, development_port):
            for chunked in (False, True):
                api = "/api/surveys/small-test/responses"
                assert _post(port, api, oversized, "application/json", chunked) == 413
                assert _post(port, api, exactly, "application/json", chunked) == 201
                stored += 1
            form_type = "application/x-www-form-urlencoded"
            assert _post(port, "/s/small-test", form + b"&" * 200_000, form_type, chunked=True) == 413
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == "small-test"))
        assert survey_counts(db.session, survey).submissions == stored
        db.engine.dispose()


def test_gunicorn_opens_no_shared_control_socket_unless_given_a_path(monkeypatch):
    """gunicorn 25.1+ would open its control socket at one path per user, which a second master on
    the machine takes over (and removes when it stops): off, unless CONTROL_SOCKET names a path."""
    import importlib

    from gunicorn.config import Config

    import survey.platform.gunicorn_conf as conf

    def settings() -> dict:
        module = importlib.reload(conf)
        return {
            name: getattr(module, name)
            for name in ("control_socket_disable", "control_socket")
            if hasattr(module, name)
        }

    monkeypatch.delenv("CONTROL_SOCKET", raising=False)
    assert settings() == {"control_socket_disable": True}
    monkeypatch.setenv("CONTROL_SOCKET", "/run/survey-a/gunicorn.ctl")
    assert settings() == {"control_socket_disable": False, "control_socket": "/run/survey-a/gunicorn.ctl"}
    assert {"control_socket_disable", "control_socket"} <= set(Config().settings)  # names gunicorn reads
    monkeypatch.delenv("CONTROL_SOCKET")
    importlib.reload(conf)


# -- the database pool and the session cookie ------------------------------------------------------


def test_a_worker_keeps_its_postgresql_connections_instead_of_opening_one_per_busy_request(tmp_path, monkeypatch):
    """15 kept and none opened beyond them (SQLAlchemy's default keeps 5 and opens up to 10 more, each
    closed as soon as it is returned: a new connection per request under load); DATABASE_POOL_SIZE
    and instance/config.py change it; SQLite keeps SQLAlchemy's own."""
    from flask import Flask

    from survey.platform.config import load

    monkeypatch.delenv("SURVEY_ENV", raising=False)
    monkeypatch.delenv("DATABASE_POOL_SIZE", raising=False)
    monkeypatch.setenv("SECRET_KEY", "k" * 64)

    def options(url: str, instance: str = "", **env: str) -> dict | None:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        folder = tmp_path / f"instance{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        (folder / "config.py").write_text(instance)
        monkeypatch.setenv("DATABASE_URL", url)
        app = Flask("survey", instance_path=str(folder), instance_relative_config=True)
        load(app)
        return app.config.get("SQLALCHEMY_ENGINE_OPTIONS")

    postgresql = "postgresql://survey@db.internal/survey"
    assert options(postgresql) == {"pool_size": 15, "max_overflow": 0}
    assert options(postgresql, DATABASE_POOL_SIZE="4") == {"pool_size": 4, "max_overflow": 0}
    for wrong in ("0", "many"):
        with pytest.raises(RuntimeError, match="DATABASE_POOL_SIZE must be a whole number above 0"):
            options(postgresql, DATABASE_POOL_SIZE=wrong)
    monkeypatch.delenv("DATABASE_POOL_SIZE")
    chosen = 'SQLALCHEMY_ENGINE_OPTIONS = {"pool_size": 3, "max_overflow": 5}\n'
    assert options(postgresql, chosen) == {"pool_size": 3, "max_overflow": 5}
    assert options(f"sqlite:///{tmp_path / 'x.sqlite'}") is None


@pytest.mark.skipif(not PG_URL, reason="the pool of a PostgreSQL app: TEST_DATABASE_URL is not set")
def test_concurrent_submissions_to_one_worker_open_no_connection_after_the_first_ones(tmp_path, monkeypatch):
    """Eight requests at the database at once, as gunicorn's threads make them: every connection the
    worker opens stays open for the next (before: each beyond the fifth was closed on its return, so
    a busy worker opened a connection per request), and submissions from eight threads close none."""
    import sqlalchemy

    from survey.domain.surveys.specs import create_survey_from_spec

    from .surveys import SMALL_SPEC

    with own_database("postgresql", tmp_path, "pool") as url:
        monkeypatch.setenv("DATABASE_URL", url)
        monkeypatch.setenv("SECRET_KEY", "k" * 64)
        monkeypatch.setenv("SUBMISSION_RATE_LIMIT", "100000 per minute")
        monkeypatch.delenv("SURVEY_ENV", raising=False)
        monkeypatch.delenv("DATABASE_POOL_SIZE", raising=False)
        app = create_app()
        with app.app_context():
            from survey.platform.schema import upgrade_database

            upgrade_database()
            create_survey_from_spec(db.session, SMALL_SPEC)
            db.session.commit()
            engine = db.engine
        opened: list[int] = []
        closed: list[int] = []
        sqlalchemy.event.listen(engine, "connect", lambda *args: opened.append(1))
        sqlalchemy.event.listen(engine.pool, "close", lambda *args: closed.append(1))
        try:
            held = [engine.raw_connection() for _ in range(8)]
            for connection in held:
                connection.close()
            assert engine.pool.checkedin() >= 8 and closed == []  # all eight kept for the next requests

            start = threading.Barrier(8)
            statuses: list[int] = []

            def submit() -> None:
                client = app.test_client()
                start.wait(timeout=30)
                for _ in range(25):
                    response = client.post("/api/surveys/small-test/responses", json={"answers": GOOD})
                    statuses.append(response.status_code)

            threads = [threading.Thread(target=submit) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
            assert statuses == [201] * 200
            assert closed == [] and len(opened) <= 15, (len(opened), len(closed))
        finally:
            engine.dispose()


def test_the_session_cookie_reads_and_writes_as_flasks_own_and_its_signer_is_made_once(tmp_path):
    from flask import request
    from flask.sessions import SecureCookieSessionInterface

    from survey.platform.session_cookie import CachedSignerSessionInterface

    app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'x.sqlite'}", "SECRET_KEY": "old" * 20})
    assert isinstance(app.session_interface, CachedSignerSessionInterface)
    ours, flasks = app.session_interface, SecureCookieSessionInterface()
    with app.test_request_context():
        made = ours.get_signing_serializer(app)
        assert ours.get_signing_serializer(app) is made  # once per key, not per request
        cookie = flasks.get_signing_serializer(app).dumps({"language": "es"})
        assert made.loads(cookie) == {"language": "es"}
        assert flasks.get_signing_serializer(app).loads(made.dumps({"n": 1})) == {"n": 1}
    with app.test_request_context(headers={"Cookie": f"session={cookie}"}):
        assert dict(ours.open_session(app, request)) == {"language": "es"}
    # a new key makes a new signer; the old cookie is refused unless the old key is a fallback
    app.config["SECRET_KEY"] = app.secret_key = "new" * 20
    with app.test_request_context(headers={"Cookie": f"session={cookie}"}):
        assert ours.get_signing_serializer(app) is not made
        assert dict(ours.open_session(app, request)) == {}
        app.config["SECRET_KEY_FALLBACKS"] = ["old" * 20]
        assert dict(ours.open_session(app, request)) == {"language": "es"}
    # a request without a cookie gets an empty session, as from Flask's own interface
    with app.test_request_context():
        empty = ours.open_session(app, request)
        assert dict(empty) == {} and type(empty) is type(flasks.open_session(app, request))
