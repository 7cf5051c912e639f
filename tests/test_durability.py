"""Nothing is lost: a server killed mid-load, and a survey closed while submissions arrive.

The kill test runs the real app (``flask run``) as a separate process on a real database, lets a
bounded load generator post submissions on loopback, sends SIGKILL, and then checks from the
database that every submission acknowledged with 201 is stored, none is stored in part, and the
estimates equal a recount of the stored rows.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import create_engine, func, select, text

from survey import create_app
from survey.domain.models import Answer, Question, Submission, Survey
from survey.domain.responses.tallies import question_mechanism, survey_results
from survey.domain.surveys.lifecycle import close
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db
from survey.platform.schema import upgrade_database
from survey.privacy import estimate

from .databases import BACKENDS, make_config, own_database, pg_url
from .live import serve
from .servers import free_port, post, served_small_survey
from .surveys import GOOD, SMALL_SPEC

ROOT = Path(__file__).resolve().parents[1]
THREADS = 4


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    """A fresh database (a SQLite file, or a PostgreSQL database of its own) with the small survey."""
    with own_database(request.param, tmp_path, "kill") as url:
        app = create_app({"SQLALCHEMY_DATABASE_URI": url, "RATELIMIT_ENABLED": False})
        with app.app_context():
            upgrade_database()
            create_survey_from_spec(db.session, SMALL_SPEC)
            db.session.commit()
            db.engine.dispose()
        yield url


def start_server(url: str, port: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "SECRET_KEY": "durability-test",
        "SURVEY_ENV": "development",
        "SUBMISSION_RATE_LIMIT": "1000000 per minute",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "flask", "--app", "survey", "run", "--port", str(port), "--no-reload"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", "/s/small-test")
            if conn.getresponse().status == 200:
                return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the server did not start")


def stored(url: str) -> tuple[int, Counter, dict]:
    """Submissions, answers per submission, and the estimates the app computes (GROUP BY)."""
    app = create_app({"SQLALCHEMY_DATABASE_URI": url, "RATELIMIT_ENABLED": False})
    with app.app_context():
        submissions = db.session.scalar(select(func.count()).select_from(Submission))
        per_submission = Counter(
            n for (n,) in db.session.execute(select(func.count()).select_from(Answer).group_by(Answer.submission_id))
        )
        survey = db.session.scalar(select(Survey))
        results = {r.question.key: (r.counts.tolist(), r.estimate) for r in survey_results(db.session, survey)}
        # a recount from the stored rows, one by one, without GROUP BY
        recount = {q.key: np.zeros(len(q.options), dtype=int) for q in survey.questions}
        keys = {q.id: q.key for q in survey.questions}
        for question_id, value in db.session.execute(select(Answer.question_id, Answer.value)):
            recount[keys[question_id]][value] += 1
        for q in survey.questions:
            counts, est = results[q.key]
            assert counts == recount[q.key].tolist()
            if est is not None:
                again = estimate(question_mechanism(q), recount[q.key])
                np.testing.assert_array_equal(est.proportions, again.proportions)
                np.testing.assert_array_equal(est.ci()[0], again.ci()[0])
        if url.startswith("sqlite"):
            assert db.session.execute(text("PRAGMA integrity_check")).scalar() == "ok"
        db.engine.dispose()
    return submissions, per_submission, results


def test_sigkill_under_load_loses_no_acknowledged_submission(database_url):
    port = free_port()
    server = start_server(database_url, port)
    acknowledged = Counter()
    unknown = Counter()  # requests whose fate the client cannot know (the connection died)
    stop = threading.Event()
    deadline = time.monotonic() + 8  # bounded in time ...

    def load(worker: int) -> None:
        for _ in range(1000):  # ... and in count
            if stop.is_set() or time.monotonic() > deadline:
                return
            try:
                status, _ = post(port, {"answers": GOOD})
            except (OSError, http.client.HTTPException, json.JSONDecodeError):
                unknown[worker] += 1
                if stop.is_set():
                    return
                continue
            if status == 201:
                acknowledged[worker] += 1

    threads = [threading.Thread(target=load, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    while sum(acknowledged.values()) < 60 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(server.pid, signal.SIGKILL)
    stop.set()
    server.wait(timeout=10)
    for t in threads:
        t.join(timeout=10)

    ok, lost_track = sum(acknowledged.values()), sum(unknown.values())
    assert ok >= 60, "the load never got going"
    submissions, per_submission, _ = stored(database_url)
    assert ok <= submissions <= ok + lost_track  # every 201 is stored; nothing appears from nowhere
    assert set(per_submission) == {len(GOOD)}, f"partly stored submissions: {per_submission}"
    assert sum(per_submission.values()) == submissions

    # the database comes back and takes new submissions
    port = free_port()
    server = start_server(database_url, port)
    try:
        status, body = post(port, {"answers": GOOD})
        assert status == 201, body
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert stored(database_url)[0] == submissions + 1


@pytest.fixture(params=BACKENDS)
def live(request, tmp_path):
    yield from served_small_survey(request, tmp_path)


def test_closing_while_submissions_arrive(live):
    """Each submission is either stored and counted, or refused as closed: nothing in between."""
    app, port = live
    outcomes: list[tuple[int, dict]] = []
    lock = threading.Lock()
    closed_at = threading.Event()

    def load() -> None:
        for _ in range(300):
            result = post(port, {"answers": GOOD})
            with lock:
                outcomes.append(result)
            if closed_at.is_set() and result[0] == 409:
                return

    threads = [threading.Thread(target=load) for _ in range(THREADS)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(outcomes) < 40:
        assert time.monotonic() < deadline, f"only {len(outcomes)} submissions answered in 60 s"
        assert any(t.is_alive() for t in threads), "the load stopped before 40 submissions"
        time.sleep(0.01)
    with app.app_context():
        close(db.session.scalar(select(Survey)))
        db.session.commit()
    closed_at.set()
    for t in threads:
        t.join(timeout=30)

    statuses = Counter(status for status, _ in outcomes)
    assert set(statuses) <= {201, 409}, statuses
    assert statuses[409] >= THREADS  # every client saw the survey close
    for status, body in outcomes:
        if status == 409:
            assert "closed" in body["error"]
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Submission)) == statuses[201]
        per_question = db.session.execute(select(Question.key, func.count()).join(Answer).group_by(Question.key))
        assert dict(per_question.all()) == {key: statuses[201] for key in GOOD}


@pytest.mark.postgresql
def test_a_lost_database_connection_is_replaced_before_a_request_meets_it(request, tmp_path):
    """The database drops the app's connections (a restart, a failover): each dead connection is
    found when it leaves the pool (the server's goodbye is waiting on it) and replaced, so no request
    fails, and nothing is stored in part. (A crash and restart of a whole server: test_faults.py.)"""
    if "postgresql" not in BACKENDS:
        pytest.skip("TEST_DATABASE_URL is not set")
    config = make_config("postgresql", tmp_path, request)
    config["SQLALCHEMY_ENGINE_OPTIONS"]["connect_args"]["application_name"] = "survey-lost-connection"
    config["TESTING"] = False  # errors are answered as in production, not raised into the server
    app = create_app(config)
    with app.app_context():
        create_survey_from_spec(db.session, SMALL_SPEC)
        db.session.commit()
        db.engine.dispose()
    admin = create_engine(pg_url(), isolation_level="AUTOCOMMIT")
    try:
        with serve(app) as port:
            assert [post(port, {"answers": GOOD})[0] for _ in range(5)] == [201] * 5
            with admin.connect() as conn:
                killed = conn.execute(
                    text(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                        " WHERE application_name = 'survey-lost-connection'"
                    )
                ).scalar()
            assert killed >= 1
            # pg_terminate_backend only signals: wait until the backends have gone (their goodbye
            # sent), as after a real restart, or a request could meet one still dying
            deadline = time.monotonic() + 30
            with admin.connect() as conn:
                while conn.execute(
                    text("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'survey-lost-connection'")
                ).scalar():
                    assert time.monotonic() < deadline, "the terminated backends did not exit"
                    time.sleep(0.05)
            statuses = [post(port, {"answers": GOOD})[0] for _ in range(10)]
        assert statuses == [201] * 10
        with app.app_context():
            survey = db.session.scalar(select(Survey))
            stored = db.session.scalar(select(func.count()).select_from(Submission))
            assert stored == 5 + statuses.count(201)
            per_submission = db.session.execute(
                select(func.count()).select_from(Answer).group_by(Answer.submission_id)
            ).scalars()
            assert set(per_submission) == {len(GOOD)}
            from survey.domain.responses.tallies import tally_mismatches

            assert tally_mismatches(db.session, survey) == []
    finally:
        admin.dispose()
        with app.app_context():
            db.session.remove()
            db.engine.dispose()
