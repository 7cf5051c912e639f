"""The production path: gunicorn with several workers, the health endpoint, configuration from the
environment, and logs that carry no respondent data."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
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
from survey.domain.invitations import generate_codes
from survey.domain.models import Survey
from survey.domain.specs import create_survey_from_spec
from survey.domain.tallies import survey_counts, tally_mismatches
from survey.platform.extensions import db
from survey.platform.limits import limiter
from survey.platform.schema import alembic_config, upgrade_database

from .conftest import BACKENDS, SMALL_SPEC, limited_app, own_database
from .test_durability import ANSWERS, free_port

ROOT = Path(__file__).resolve().parents[1]
GUNICORN = Path(sys.executable).parent / "gunicorn"
AGENT = "Marker-Agent/1.0 (respondent phone)"


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


def test_trusted_proxies_make_rate_limits_count_the_forwarded_address(tmp_path, sqlite_template):
    def app_with(proxies: int):
        app = limited_app(tmp_path, sqlite_template, SUBMISSION_RATE_LIMIT="2 per minute", TRUSTED_PROXIES=proxies)
        return app.test_client()

    def statuses(client, address: str) -> list[int]:
        headers = {"X-Forwarded-For": address}
        return [
            client.post("/api/surveys/small-test/responses", json={"answers": ANSWERS}, headers=headers).status_code
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
        yield from _gunicorn(url, tmp_path)


def _gunicorn(url: str, tmp_path):
    """Migrate ``url``, add a link survey and a coded one, run gunicorn on it until closed."""
    app = create_app({"SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": "t"})
    with app.app_context():
        upgrade_database()
        create_survey_from_spec(db.session, SMALL_SPEC)
        survey = create_survey_from_spec(db.session, {**SMALL_SPEC, "slug": "coded", "access": "invitation"})
        db.session.flush()
        generate_codes(db.session, survey, 20)
        db.session.commit()
        db.engine.dispose()
    port = free_port()
    log = tmp_path / "gunicorn.log"
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "SECRET_KEY": "serving-test-" + "x" * 40,
        "BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": "2",
        "SUBMISSION_RATE_LIMIT": "100000 per minute",
    }
    env.pop("SURVEY_ENV", None)  # the entry point's own default: production
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(GUNICORN), "-c", "python:survey.platform.gunicorn_conf", "survey.platform.wsgi:app"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                status, _ = request_json(port, "GET", "/health")
                if status == 200:
                    break
            except OSError:
                pass
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "gunicorn did not become healthy"
            time.sleep(0.2)
        yield port, url, log
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


def request_json(port: int, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"Content-Type": "application/json", "User-Agent": AGENT}
        conn.request(method, path, None if body is None else json.dumps(body), headers)
        response = conn.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw.startswith(b"{") else {}
    finally:
        conn.close()


def test_gunicorn_workers_store_every_acknowledged_submission_and_log_nothing_identifying(served):
    port, url, log = served
    statuses = Counter()
    lock = threading.Lock()

    def load(worker: int) -> None:
        for _ in range(40):
            status, _ = request_json(port, "POST", "/api/surveys/small-test/responses", {"answers": ANSWERS})
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
    body = {"answers": ANSWERS, "invitation": code}
    assert request_json(port, "POST", "/api/surveys/coded/responses", body)[0] == 201
    assert request_json(port, "POST", "/api/surveys/coded/responses", body)[0] == 403

    with app.app_context():
        for slug, expected in (("small-test", 160), ("coded", 1)):
            survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
            assert survey_counts(db.session, survey).submissions == expected
            assert tally_mismatches(db.session, survey) == []
        db.engine.dispose()

    time.sleep(0.5)  # let the workers flush their log lines
    lines = log.read_text().splitlines()
    access = [line for line in lines if "/api/surveys/" in line or line.startswith("GET /s/")]
    assert len(access) >= 163, "\n".join(lines[-20:])
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
    app = limited_app(tmp_path, sqlite_template, SUBMISSION_RATE_LIMIT="150 per minute")
    client = app.test_client()
    started = []
    monkeypatch.setattr(threading.Thread, "start", lambda self: started.append(self))
    statuses = Counter(
        client.post("/api/surveys/small-test/responses", json={"answers": ANSWERS}).status_code for _ in range(160)
    )
    assert statuses == {201: 150, 429: 10}  # the limit still holds
    assert started == []
    with app.app_context():
        limiter.reset()


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
    storage._next_sweep = 0.0  # a second has passed since the last sweep
    storage.incr("192.0.2.1", 60)  # the next hit sweeps what has expired: the address is forgotten
    assert "198.51.100.9" not in storage.storage and "198.51.100.9" not in storage.expirations
