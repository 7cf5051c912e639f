"""Talking to a served app over real HTTP, and serving one with gunicorn as production does.

The in-process server (``serve``, ``live_site``) is in tests/live.py; this module holds what the tests
of durability, serving, tallies and faults share on top: a free port, a JSON post to the submission
API, and gunicorn on a migrated database (``start_gunicorn``, the bare server; ``gunicorn``, on the small
survey), and a :class:`Visitor` that goes from host to host with its cookies (``race`` sends requests
together).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
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


#: Debian's PgBouncer (package pgbouncer; `make test` installs it when it is missing).
PGBOUNCER = "/usr/sbin/pgbouncer"


@contextlib.contextmanager
def start_pgbouncer(database_url: str, log: Path, pool_size: int = 3) -> Iterator[str]:
    """PgBouncer in transaction mode in front of the PostgreSQL database ``database_url`` names, lending
    each database at most ``pool_size`` server connections, until the block ends; yields the URL of
    that database through it.

    Its settings are docs/deploy.md's (``pool_mode = transaction``) with a small pool, so that clients
    take turns on few server connections and anything left on one meets another client; a PgBouncer
    that could keep prepared statements itself (1.21 and newer, on by default from 1.24) is told not
    to, so that the tests meet what a pooler that cannot does. It logs in as the URL's user with no
    password (``auth_type = any``: the tests' server trusts local connections). PgBouncer refuses to
    run as root: started as root, it becomes ``postgres`` (``-u``), and its file is in a directory of
    that user's."""
    import pwd
    import shutil
    import tempfile

    assert Path(PGBOUNCER).exists(), f"{PGBOUNCER} is missing: `make pgbouncer` installs Debian's (make test does)"
    version = subprocess.run([PGBOUNCER, "--version"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"PgBouncer (\d+)\.(\d+)", version)
    assert found, version
    target = urllib.parse.urlsplit(database_url.replace("postgresql+psycopg://", "postgresql://"))
    user = target.username or "postgres"
    port = free_port()
    folder = Path(tempfile.mkdtemp(prefix="pgbouncer-"))
    process = None
    try:
        ini = folder / "pgbouncer.ini"
        ini.write_text(
            "[databases]\n"
            f"* = host={target.hostname} port={target.port or 5432} user={user}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
            "auth_type = any\npool_mode = transaction\n"
            f"default_pool_size = {pool_size}\nmax_client_conn = 1000\n"
            + ("max_prepared_statements = 0\n" if (int(found[1]), int(found[2])) >= (1, 21) else "")
        )
        command = [PGBOUNCER, str(ini)]
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(folder, owner.pw_uid, owner.pw_gid)
            os.chown(ini, owner.pw_uid, owner.pw_gid)
            command[1:1] = ["-u", "postgres"]
        with log.open("w") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                # (the port is ours only if PgBouncer still runs: it exits when it cannot bind)
                assert process.poll() is None, log.read_text()
                break
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "PgBouncer did not listen"
            time.sleep(0.05)
        yield urllib.parse.urlunsplit(target._replace(netloc=f"{user}@127.0.0.1:{port}"))
    finally:
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)


class Visitor:
    """One browser over real HTTP, to any of several hosts: it keeps the cookies each answer sets and
    sends them to whichever host it asks next (as a browser does behind a load balancer), and says it
    comes from ``address`` in X-Forwarded-For (read by hosts started with ``TRUSTED_PROXIES="1"``),
    so that each test is its own address to the rate limits."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.cookies: dict[str, str] = {}
        self.lock = threading.Lock()

    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        with self.lock:
            cookie = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
        return {"X-Forwarded-For": self.address, **({"Cookie": cookie} if cookie else {}), **(extra or {})}

    def keep(self, response: http.client.HTTPResponse) -> None:
        with self.lock:
            for header in response.headers.get_all("Set-Cookie") or []:
                name, _, rest = header.partition("=")
                value = rest.split(";", 1)[0]
                if value and "max-age=0" not in header.lower():
                    self.cookies[name.strip()] = value
                else:
                    self.cookies.pop(name.strip(), None)

    def send(self, port: int, method: str, path: str, body: str | None = None, *, ready=None) -> tuple[int, str]:
        """One request; its status and text. ``ready`` (a barrier) is waited on once connected, so
        that racing requests are sent together."""
        extra = {"Content-Type": "application/x-www-form-urlencoded"} if body is not None else None
        headers = self.headers(extra)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            conn.connect()
            if ready is not None:
                ready.wait(timeout=60)
            conn.request(method, path, body, headers)
            response = conn.getresponse()
            text = response.read().decode("utf-8", "replace")
            self.keep(response)
            return response.status, text
        finally:
            conn.close()

    def get(self, port: int, path: str) -> tuple[int, str]:
        return self.send(port, "GET", path)

    def post(self, port: int, path: str, fields: dict[str, str], **options) -> tuple[int, str]:
        return self.send(port, "POST", path, urllib.parse.urlencode(fields), **options)

    def form_token(self, port: int, path: str) -> str:
        """The CSRF token of the form at ``path`` on the host at ``port``."""
        status, page = self.get(port, path)
        assert status == 200, (status, page[:300])
        found = re.search(r'name="csrf_token"[^>]*? value="([^"]+)"', page)
        assert found, page[:300]
        return found.group(1)


def race(calls: list[Callable[..., tuple[int, str]]]) -> list[int]:
    """Run each ``call(ready=barrier)`` in a thread of its own, connected first and then sent together;
    the status of each, in order."""
    barrier = threading.Barrier(len(calls))
    results: list[object] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            results[i] = calls[i](ready=barrier)[0]
        except BaseException as error:  # reported below, not lost in a thread
            results[i] = error
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert all(isinstance(result, int) for result in results), results
    return results  # type: ignore[return-value]
