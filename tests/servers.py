"""Talking to a served app over real HTTP, and serving one with gunicorn as production does.

The in-process server (``serve``, ``live_site``) is in tests/live.py; this module holds what the tests
of durability, serving, tallies and faults share on top: a free port, a JSON post to the submission
API, and gunicorn on a migrated database (``start_gunicorn``, the bare server; ``gunicorn``, on the small
survey).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from flask import Flask

from survey import create_app
from survey.domain.responses.codes import generate_codes
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db
from survey.platform.schema import upgrade_database

from .databases import delete_redis_keys, make_config, redis_limits
from .live import serve
from .surveys import SMALL_SPEC

ROOT = Path(__file__).resolve().parents[1]
GUNICORN = Path(sys.executable).parent / "gunicorn"
#: The small survey's submission API.
SUBMIT_PATH = "/api/surveys/small-test/responses"
#: A User-Agent that the logs must never show (tests/test_serving.py).
AGENT = "Marker-Agent/1.0 (respondent phone)"


def free_port() -> int:
    """A port free on 127.0.0.1 a moment ago (for a server in another process, which binds it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port: int, body: dict, timeout: float = 5.0) -> tuple[int, dict]:
    """POST ``body`` as JSON to the small survey's submission API; returns the status and JSON body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", SUBMIT_PATH, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


def request_json(port: int, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    """One request with a JSON body (if any) and :data:`AGENT`; returns the status and JSON body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"Content-Type": "application/json", "User-Agent": AGENT}
        conn.request(method, path, None if body is None else json.dumps(body), headers)
        response = conn.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw.startswith(b"{") else {}
    finally:
        conn.close()


def served_small_survey(request, tmp_path: Path, **changes) -> Iterator[tuple[Flask, int]]:
    """An app on the test's database (``request.param``: a backend of ``BACKENDS``) holding the small
    survey with ``changes``, served in this process on 127.0.0.1 (tests/live.py's ``serve``).

    A fixture's body (``yield from served_small_survey(...)``); yields the app and its port, then
    closes the app's sessions and engine.
    """
    app = create_app(make_config(request.param, tmp_path, request))
    with app.app_context():
        create_survey_from_spec(db.session, {**SMALL_SPEC, **changes})
        db.session.commit()
    with serve(app) as port:
        yield app, port
    with app.app_context():
        db.session.remove()
        db.engine.dispose()


def gunicorn(url: str, tmp_path: Path) -> Iterator[tuple[int, str, Path]]:
    """Migrate ``url``, add a link survey and a coded one, run gunicorn on it until closed.

    A generator (a fixture's body: ``yield from gunicorn(...)``, or wrapped in
    ``contextlib.contextmanager``); yields the port, the URL and the log file.
    """
    app = create_app({"SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": "t"})
    with app.app_context():
        upgrade_database()
        create_survey_from_spec(db.session, SMALL_SPEC)
        survey = create_survey_from_spec(db.session, {**SMALL_SPEC, "slug": "coded", "access": "invitation"})
        db.session.flush()
        generate_codes(db.session, survey, 20)
        db.session.commit()
        db.engine.dispose()
    log = tmp_path / "gunicorn.log"
    with start_gunicorn(url, log, WEB_CONCURRENCY="2", SUBMISSION_RATE_LIMIT="100000 per minute") as port:
        yield port, url, log


@contextlib.contextmanager
def start_gunicorn(url: str, log: Path, *, kill: bool = False, **settings: str) -> Iterator[int]:
    """Run gunicorn as production does (survey.platform.gunicorn_conf, survey.platform.wsgi:app) on the
    migrated database ``url``, its output in ``log``, until the block ends; yields its port once
    ``/health`` answers 200.

    ``settings`` are added to its environment (``WEB_CONCURRENCY="3"``, ...). Its rate limits count in
    the tests' Redis under a prefix of its own, deleted at the end, unless ``settings`` name a store
    (hosts that must share counters name one prefix). At the end the master is sent SIGTERM and
    waited for; with ``kill``, the master and its workers (a process group of their own) are sent
    SIGKILL, mid-request or not.
    """
    port = free_port()
    own_store = redis_limits(f"gunicorn-{port}")
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "SECRET_KEY": "gunicorn-test-" + "x" * 40,
        "BIND": f"127.0.0.1:{port}",
        **own_store,
        **settings,
    }
    env.pop("SURVEY_ENV", None)  # the entry point's own default: production
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(GUNICORN), "-c", "python:survey.platform.gunicorn_conf", "survey.platform.wsgi:app"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=kill,
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
        yield port
    finally:
        if kill:
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        delete_redis_keys(own_store["RATELIMIT_KEY_PREFIX"])
