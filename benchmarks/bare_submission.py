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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.scale import SLUG
from survey.domain.responses.pending import BATCH
from survey.domain.responses.writes import (
    Feeds,
    postgresql_fold,
    postgresql_submission,
    submission_params,
)

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
    every = float(os.environ.get("WEB_CONCURRENCY") or 1)
    fold = postgresql_fold()
    with psycopg.connect(URL, autocommit=False) as conn:
        conn.execute("SET jit = off")
        while True:
            threading.Event().wait(every)
            while True:
                with conn.transaction():
                    params = fold.params({"batch": BATCH, "shard": random.randrange(16)})
                    (taken,) = conn.execute(fold.sql, params).fetchone()
                if taken < BATCH:
                    break


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
