"""The floor of a submission through our server: a bare WSGI callable that does only what the write
itself needs (read the body, parse its JSON, the app's one statement with its parameters, answer 201),
without Flask, its hooks, the validation of the answers, the pool or the session.

Served by gunicorn with the production settings (survey.platform.gunicorn_conf) in
benchmarks/serving_alternatives.py, beside the app itself: the two differ only in the Python run per
request, so their gap is what the app's request handling costs, and this arm's gap to the plain-SQL
ceiling is what the server and the statement cost. Not a way to take submissions: it checks nothing.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import sys
import threading
from pathlib import Path

import psycopg
from sqlalchemy import create_engine
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.scale import SLUG
from survey.domain.responses.pending import fold_all
from survey.domain.responses.writes import Feeds, postgresql_submission, submission_params
from survey.platform.config import normalize_database_url

URL = os.environ["DATABASE_URL"].replace("postgresql+psycopg://", "postgresql://")
with psycopg.connect(URL) as _conn:
    SURVEY_ID = _conn.execute("SELECT id FROM surveys WHERE slug = %s", (SLUG,)).fetchone()[0]
    QUESTIONS = dict(_conn.execute("SELECT key, id FROM questions WHERE survey_id = %s", (SURVEY_ID,)).fetchall())
STATEMENT = postgresql_submission(False)
#: every question of the benchmark's survey is randomized
FEEDS = {qid: Feeds(randomized=True, paired=True) for qid in QUESTIONS.values()}
_local = threading.local()
_folder: threading.Thread | None = None
_lock = threading.Lock()


def _fold_forever() -> None:
    """The app's fold (survey.domain.responses.pending.fold_all), every W seconds."""
    every = float(os.environ.get("WEB_CONCURRENCY") or 1)
    engine = create_engine(normalize_database_url(os.environ["DATABASE_URL"]), poolclass=NullPool)
    with Session(engine) as session:
        while True:
            threading.Event().wait(every)
            fold_all(session)


def _start_folding() -> None:
    """In the worker (after gunicorn's fork), once."""
    global _folder
    with _lock:
        if _folder is None:
            _folder = threading.Thread(target=_fold_forever, daemon=True)
            _folder.start()


def app(environ, start_response):
    if environ["REQUEST_METHOD"] != "POST":  # the benchmarks' wait for /health
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return [b"ok"]
    _start_folding()
    conn = getattr(_local, "conn", None)
    if conn is None:  # one connection per thread, kept
        conn = _local.conn = psycopg.connect(URL, autocommit=True)
    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    answers = json.loads(body)["answers"]
    params = submission_params(
        {QUESTIONS[key]: int(value) for key, value in answers.items()},
        FEEDS,
        "postgresql",
        survey_id=SURVEY_ID,
        slug=SLUG,
        access="link",
        day=dt.date.today(),
        shard=random.randrange(16),
    )
    conn.execute(STATEMENT.sql, STATEMENT.params(params)).fetchone()
    out = b'{"stored": true}'
    start_response("201 CREATED", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))])
    return [out]
