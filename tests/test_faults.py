"""Under faults a respondent is told the truth, and nothing is counted twice.

The database cases run on a PostgreSQL server of the test's own (:mod:`tests.private_postgres`),
which they crash: SIGKILL of the postmaster during submissions, and an immediate shutdown between
them. Never the shared server. What must hold:

- while the database is down every request is answered 503 with ``Retry-After`` and a sentence
  that says only what is known (a submission that never reached the database "was not stored"; one
  whose connection was lost during its statement "may not have been received");
- the outage is logged once per worker when it starts and once when it ends, never a traceback
  per request (13 MB in 90 s before);
- once the database is back, no request fails (each worker's first one did, 4 of 16);
- every submission acknowledged with 201 is stored, whole, and counted.

The auto-close races run on the test suite's own databases (SQLite, and PostgreSQL when
``TEST_DATABASE_URL`` is set): a precise survey is closed exactly once however many submissions
race to close it, and a close decided before an organizer's reopen is never written after it.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import re
import shutil
import threading
import time
import uuid
from collections import Counter

import pytest
from flask import Flask
from markupsafe import escape
from sqlalchemy import func, select, text, update
from sqlalchemy.orm import Session

from survey import create_app
from survey.domain.errors import Conflict
from survey.domain.models import Answer, Submission, Survey, User
from survey.domain.responses.tallies import tally_mismatches
from survey.domain.results import live
from survey.domain.results.live import close_if_precise, live_status
from survey.domain.surveys import lifecycle
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db
from survey.platform.schema import upgrade_database
from survey.web.common import (
    ANSWERS_MAYBE_STORED,
    ANSWERS_NOT_STORED,
    CHANGE_NOT_MADE,
    PAGE_UNAVAILABLE,
    RETRY_AFTER_SECONDS,
)

from .live import CHEAP_PASSWORD_HASH, serve
from .private_postgres import PrivatePostgres
from .servers import gunicorn
from .surveys import GOOD, LIVE_SPEC, SMALL_SPEC

PATH = "/api/surveys/small-test/responses"
UNAVAILABLE_LINE = "database unavailable ("
AVAILABLE_LINE = "database available again after"
PASSWORD = "correct horse battery"
#: Bounds for waiting on a condition on a loaded machine (never a fixed sleep).
DEADLINE = 60.0


@pytest.fixture(scope="module")
def pg(private_pg: PrivatePostgres) -> PrivatePostgres:
    """This module's own PostgreSQL server (conftest's ``private_pg``): started once, crashed and
    restarted by the tests."""
    return private_pg


@pytest.fixture
def pg_database(pg: PrivatePostgres):
    """A new database on the private server, its URL; the server is running again afterwards."""
    name = f"faults_{uuid.uuid4().hex[:8]}"
    with pg.connect() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield pg.database_url(name)
    if not pg.accepts_connections():
        pg.start()
    with pg.connect() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def request(port: int, method: str, path: str, body: dict | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, None if body is None else json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def wait_until(condition, what: str, deadline: float = DEADLINE) -> None:
    end = time.monotonic() + deadline
    while not condition():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.02)


def stored_and_whole(url: str) -> int:
    """How many submissions the database holds, after checking that each is whole and counted."""
    app = create_app({"SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": "t"})
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == "small-test"))
        count = db.session.scalar(select(func.count()).select_from(Submission).where(Submission.survey_id == survey.id))
        answers = db.session.scalars(select(func.count()).select_from(Answer).group_by(Answer.submission_id)).all()
        assert set(answers) <= {len(GOOD)}, "a submission was stored in part"
        assert tally_mismatches(db.session, survey) == []
        db.engine.dispose()
    return count


def shows(page: str | bytes, message: str) -> bool:
    """Whether an HTML page shows ``message`` (as the template escapes it)."""
    return str(escape(message)) in (page.decode() if isinstance(page, bytes) else page)


def legacy(document: dict) -> dict:
    """The members a JSON error had before it became an RFC 9457 problem (which keeps them)."""
    return {name: document[name] for name in ("error", "status", "path")}


def last_traceback(log_text: str) -> str:
    """The server's last logged traceback, to say why a request failed when one did."""
    start = log_text.rfind("Traceback (most recent call last)")
    return log_text[max(0, start - 400) : start + 6000] if start >= 0 else "(no traceback in the server's log)"


def outage_lines(log_text: str) -> tuple[int, int]:
    return log_text.count(UNAVAILABLE_LINE), log_text.count(AVAILABLE_LINE)


# -- a crash under load, served by gunicorn --------------------------------------------------------


def test_a_crash_during_submissions_is_answered_503_logged_once_and_loses_nothing(pg, pg_database, tmp_path):
    with contextlib.contextmanager(gunicorn)(pg_database, tmp_path) as (port, _, log):
        phase = ["before"]
        seen: dict[str, Counter] = {"before": Counter(), "outage": Counter(), "after": Counter()}
        acknowledged, maybe_stored = Counter(), Counter()
        wrong: list[str] = []
        stop = threading.Event()

        def submit() -> None:
            while not stop.is_set():
                now = phase[0]
                status, headers, body = request(port, "POST", PATH, {"answers": GOOD})
                seen[now][("json", status)] += 1
                if status == 201:
                    acknowledged[now] += 1
                elif status == 503:
                    document = json.loads(body)
                    if document["error"] == ANSWERS_MAYBE_STORED:
                        maybe_stored[now] += 1
                    elif legacy(document) != {"error": ANSWERS_NOT_STORED, "status": 503, "path": []}:
                        wrong.append(f"JSON 503: {document}")
                    if headers.get("retry-after") != str(RETRY_AFTER_SECONDS):
                        wrong.append(f"Retry-After: {headers.get('retry-after')}")
                else:
                    wrong.append(f"{now}: JSON {status} {body[:200]!r}")
                if now == "outage":
                    time.sleep(0.01)  # refusals are fast: leave the machine some room

        def read_page() -> None:
            while not stop.is_set():
                now = phase[0]
                status, headers, body = request(port, "GET", "/s/small-test")
                seen[now][("page", status)] += 1
                if status == 503:
                    if not shows(body, PAGE_UNAVAILABLE) or "no-store" not in headers.get("cache-control", ""):
                        wrong.append(f"page 503: {body[:300]!r}")
                elif status != 200:
                    wrong.append(f"{now}: page {status} {body[:200]!r}")
                if now == "outage":
                    time.sleep(0.02)

        threads = [threading.Thread(target=submit) for _ in range(3)] + [threading.Thread(target=read_page)]
        for t in threads:
            t.start()
        try:
            wait_until(lambda: acknowledged["before"] >= 30, "submissions before the crash")
            phase[0] = "outage"
            pg.crash("kill")
            wait_until(
                lambda: seen["outage"][("json", 503)] >= 40 and seen["outage"][("page", 503)] >= 5,
                "refusals during the outage",
            )
            pg.start()
            phase[0] = "after"
            wait_until(lambda: acknowledged["after"] >= 30, "submissions after the restart")
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=DEADLINE)
        assert not wrong, (wrong[:5], last_traceback(log.read_text()))

        # Each worker that logged the outage logs its end at its next request: keep asking until
        # both have (every one of these requests must succeed too).
        def recovered() -> bool:
            assert request(port, "POST", PATH, {"answers": GOOD})[0] == 201
            acknowledged["after"] += 1
            assert request(port, "GET", "/health")[0] == 200
            down, up = outage_lines(log.read_text())
            return down == up

        wait_until(recovered, "every worker to log that the database is back")
        text_of_log = log.read_text()

    down, up = outage_lines(text_of_log)
    assert down == up
    assert 1 <= down <= 2, f"{down} outage lines from two workers"  # once per worker, not per request
    assert "Traceback" not in text_of_log, last_traceback(text_of_log)
    assert not re.search(r"^(GET|POST) \S+ 500 ", text_of_log, re.MULTILINE)
    # every acknowledged submission is stored, whole and counted; only those told "may" can add to them
    stored = stored_and_whole(pg_database)
    ok = sum(acknowledged.values())
    assert ok <= stored <= ok + sum(maybe_stored.values())


def test_the_first_requests_after_a_database_restart_all_succeed(pg, pg_database, tmp_path):
    """Every pooled connection is dead after a restart; none may reach a request. The submissions
    take the driver's cursor straight from the pool (engine.raw_connection()), the pages the ORM."""
    with contextlib.contextmanager(gunicorn)(pg_database, tmp_path) as (port, _, log):
        for _ in range(6):  # several connections in each worker's pool
            threads = [threading.Thread(target=request, args=(port, "POST", PATH, {"answers": GOOD})) for _ in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=DEADLINE)
        pg.crash("immediate")
        pg.start()
        firsts = []
        for i in range(16):
            method, path, body = [("POST", PATH, {"answers": GOOD}), ("GET", "/s/small-test", None)][i % 2]
            firsts.append(request(port, method, path, body)[0])
        firsts.append(request(port, "GET", "/health")[0])
        assert firsts == [201, 200] * 8 + [200]
        assert UNAVAILABLE_LINE not in log.read_text()
    assert stored_and_whole(pg_database) == 36 + 8


# -- what a respondent is told ---------------------------------------------------------------------


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def count(self, words: str) -> int:
        return sum(words in r.getMessage() for r in self.records)


@pytest.fixture
def captured():
    """The app's log from here on. The outage the log tracks is the app's own, so an earlier test's
    app, left with its database gone, has no line in it: the lines counted are this test's own."""
    capture = Capture()
    logger = logging.getLogger("survey")
    logger.addHandler(capture)
    yield capture
    logger.removeHandler(capture)


def app_on(database: str, application_name: str, username: str) -> Flask:
    """An app on ``database`` (its connections named ``application_name``, so that a test can find
    them in pg_stat_activity), migrated, holding SMALL_SPEC's survey and the user ``username``."""
    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": database,
            "SQLALCHEMY_ENGINE_OPTIONS": {"connect_args": {"application_name": application_name}},
            "SECRET_KEY": "t",
            "WTF_CSRF_ENABLED": False,
            "RATELIMIT_ENABLED": False,
            "PASSWORD_HASH_METHOD": CHEAP_PASSWORD_HASH,
        }
    )
    with app.app_context():
        upgrade_database()
        create_survey_from_spec(db.session, SMALL_SPEC)
        user = User(username=username)
        user.set_password(PASSWORD)
        db.session.add(user)
        db.session.commit()
    return app


def lose_connection_while_waiting(pg: PrivatePostgres, database: str, table: str, application_name: str, send):
    """``send()`` in a thread while ``table`` is locked, its connection terminated once it waits for
    the lock (the lock then released); what ``send`` returned."""
    waiting = (
        f"SELECT pid FROM pg_stat_activity WHERE application_name = '{application_name}' AND wait_event_type = 'Lock'"
    )
    with pg.connect(database.rsplit("/", 1)[1]) as locker:
        locker.execute("BEGIN")
        locker.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        outcome = {}
        sender = threading.Thread(target=lambda: outcome.update(r=send()))
        sender.start()
        wait_until(lambda: locker.execute(waiting).fetchone() is not None, f"a statement to wait for {table}")
        locker.execute(f"SELECT pg_terminate_backend(pid) FROM ({waiting}) AS w")
        locker.execute("ROLLBACK")
        sender.join(timeout=DEADLINE)
    return outcome["r"]


def test_a_respondent_is_told_what_is_known_and_the_outage_is_logged_once(pg, pg_database, captured):
    app = app_on(pg_database, "survey-faults", "alice")
    client, organizer = app.test_client(), app.test_client()
    assert client.post(PATH, json={"answers": GOOD}).status_code == 201
    assert organizer.post("/auth/login", data={"username": "alice", "password": PASSWORD}).status_code == 302
    assert organizer.get("/").status_code == 200

    # 1. The connection is lost while the submission's statement runs: it may have been stored.
    response = lose_connection_while_waiting(
        pg, pg_database, "surveys", "survey-faults", lambda: client.post(PATH, json={"answers": GOOD})
    )
    assert response.status_code == 503
    assert legacy(response.get_json()) == {"error": ANSWERS_MAYBE_STORED, "status": 503, "path": []}
    assert response.get_json()["code"] == "service.answers_maybe_stored"
    assert response.headers["Retry-After"] == str(RETRY_AFTER_SECONDS)
    assert captured.count(UNAVAILABLE_LINE) == 1
    assert client.post(PATH, json={"answers": GOOD}).status_code == 201  # a new connection, at once
    assert captured.count(AVAILABLE_LINE) == 1

    # 2. The database is down: nothing reaches it, and every kind of request says so in its words.
    pg.crash("kill")
    for _ in range(3):
        response = client.post(PATH, json={"answers": GOOD})
        assert response.status_code == 503
        assert legacy(response.get_json()) == {"error": ANSWERS_NOT_STORED, "status": 503, "path": []}
        assert response.get_json()["code"] == "service.answers_not_stored"
        assert response.headers["Retry-After"] == str(RETRY_AFTER_SECONDS)
    form = client.post("/s/small-test", data={f"q_{k}": v for k, v in GOOD.items()})
    assert form.status_code == 503 and form.headers["Retry-After"] == str(RETRY_AFTER_SECONDS)
    assert shows(form.get_data(), ANSWERS_NOT_STORED)
    page = client.get("/s/small-test")
    assert page.status_code == 503 and shows(page.get_data(), PAGE_UNAVAILABLE)
    assert "no-store" in page.headers["Cache-Control"]
    signed_in_page = organizer.get("/")  # the layout would ask the database who is signed in
    assert signed_in_page.status_code == 503 and shows(signed_in_page.get_data(), PAGE_UNAVAILABLE)
    change = app.test_client().post("/auth/login", data={"username": "alice", "password": "x"})
    assert change.status_code == 503 and shows(change.get_data(), CHANGE_NOT_MADE)
    health = client.get("/health")
    assert health.status_code == 503 and health.get_json()["database"] == "unreachable"
    assert captured.count(UNAVAILABLE_LINE) == 2  # one for this outage, whatever the number of requests
    assert not any(r.exc_info for r in captured.records), "a traceback was logged"

    # 3. Back: the first request works, and says so once.
    pg.start()
    assert client.post(PATH, json={"answers": GOOD}).status_code == 201
    assert client.get("/s/small-test").status_code == 200
    assert captured.count(AVAILABLE_LINE) == 2
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Submission)) == 3  # 1, then 2 and 3 above
        db.session.remove()
        db.engine.dispose()


def test_on_sqlite_a_wrong_statement_is_a_500_and_a_missing_database_a_503(tmp_path, sqlite_template, captured):
    """SQLite raises OperationalError for a misspelt table as for a database it cannot open: the
    first is a bug, answered 500 and logged with its traceback; only the second is an outage."""
    path = tmp_path / "wrong.sqlite"
    shutil.copyfile(sqlite_template, path)
    app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{path}", "SECRET_KEY": "t", "RATELIMIT_ENABLED": False})
    with app.app_context():
        create_survey_from_spec(db.session, SMALL_SPEC)
        db.session.execute(text("DROP TABLE answers"))
        db.session.commit()
    response = app.test_client().post(PATH, json={"answers": GOOD})
    assert response.status_code == 500
    assert captured.count(UNAVAILABLE_LINE) == 0
    assert any(r.exc_info and "no such table" in str(r.exc_info[1]) for r in captured.records)
    with app.app_context():
        db.engine.dispose()

    gone = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'missing' / 'x.sqlite'}", "SECRET_KEY": "t"})
    page = gone.test_client().get("/s/small-test")
    assert page.status_code == 503 and shows(page.get_data(), PAGE_UNAVAILABLE)
    assert captured.count(UNAVAILABLE_LINE) == 1


# -- auto-close races ------------------------------------------------------------------------------


CLOSE_LOG = {
    "sqlite": [
        "CREATE TABLE close_log (n INTEGER PRIMARY KEY AUTOINCREMENT, survey_id INTEGER, was TEXT)",
        "CREATE TRIGGER close_logged AFTER UPDATE OF status ON surveys WHEN NEW.status = 'closed' "
        "BEGIN INSERT INTO close_log (survey_id, was) VALUES (NEW.id, OLD.status); END",
    ],
    "postgresql": [
        "CREATE TABLE close_log (n serial PRIMARY KEY, survey_id integer, was text)",
        "CREATE FUNCTION log_close() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN INSERT INTO close_log (survey_id, was) VALUES (NEW.id, OLD.status); RETURN NEW; END $$",
        "CREATE TRIGGER close_logged AFTER UPDATE OF status ON surveys FOR EACH ROW "
        "WHEN (NEW.status = 'closed') EXECUTE FUNCTION log_close()",
    ],
}
DROP_CLOSE_LOG = {
    "sqlite": ["DROP TRIGGER close_logged", "DROP TABLE close_log"],
    "postgresql": ["DROP TRIGGER close_logged ON surveys", "DROP FUNCTION log_close()", "DROP TABLE close_log"],
}


@pytest.fixture
def precise(app, user):
    """LIVE_SPEC's survey answered until every randomized question is precise enough, then set to
    close by itself (written directly, so nothing has closed it yet); every UPDATE that writes
    status 'closed' into a survey is logged by a trigger in ``close_log``. Yields the survey's id."""
    with app.app_context():
        survey = create_survey_from_spec(db.session, LIVE_SPEC, owner=db.session.get(User, user))
        db.session.commit()
        survey_id = survey.id
    client = app.test_client()
    for i in range(120):  # the live half-width is 0.245 after 100, below the target of 0.25
        answer = {"answers": {"smoked": i % 2, "group": i % 2}}
        assert client.post("/api/surveys/live/responses", json=answer).status_code == 201
    with app.app_context():
        assert live_status(db.session, db.session.get(Survey, survey_id)).all_reached
        db.session.execute(update(Survey).where(Survey.id == survey_id).values(auto_close=True))
        dialect = db.engine.dialect.name
        for statement in CLOSE_LOG[dialect]:
            db.session.execute(text(statement))
        db.session.commit()
    yield survey_id
    with app.app_context():
        db.session.rollback()
        for statement in DROP_CLOSE_LOG[dialect]:
            db.session.execute(text(statement))
        db.session.commit()


def closes(survey_id: int) -> list[str]:
    """What the survey's status was before each UPDATE that wrote 'closed' into it, in order."""
    return list(db.session.scalars(text("SELECT was FROM close_log WHERE survey_id = :s ORDER BY n"), {"s": survey_id}))


def test_racing_submissions_close_a_precise_survey_exactly_once(app, precise):
    """Each of these submissions finds the survey precise enough and set to close by itself; they
    are sent at the same moment, through a real server, one thread each."""
    racers = 8
    barrier = threading.Barrier(racers)
    statuses: list[int] = []
    with serve(app) as port:

        def send() -> None:
            barrier.wait(timeout=DEADLINE)
            statuses.append(
                request(port, "POST", "/api/surveys/live/responses", {"answers": {"smoked": 1, "group": 0}})[0]
            )

        threads = [threading.Thread(target=send) for _ in range(racers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=DEADLINE)
    assert len(statuses) == racers and set(statuses) <= {201, 409} and 201 in statuses, statuses
    with app.app_context():
        assert closes(precise) == ["open"]  # written once, by whichever came first
        assert db.session.get(Survey, precise).status == "closed"


def test_a_reopen_between_the_decision_to_close_and_its_write_stands(app, precise, monkeypatch):
    """The organizer closes and reopens (which switches closing by itself off) while a worker is
    deciding to close the survey; the worker's close must not be written after the reopen."""
    decide = live.live_status

    def organizer_acts_meanwhile(session, survey, counts=None):
        decision = decide(session, survey, counts)
        with Session(db.engine) as other:
            theirs = other.get(Survey, survey.id)
            lifecycle.close(theirs)
            other.commit()
            lifecycle.reopen(theirs)
            other.commit()
        return decision

    monkeypatch.setattr(live, "live_status", organizer_acts_meanwhile)
    with app.app_context():
        assert close_if_precise(db.session, precise) is False
        db.session.expire_all()
        survey = db.session.get(Survey, precise)
        assert (survey.status, survey.auto_close) == ("open", False)
        assert closes(precise) == ["open"]  # the organizer's close only


def test_a_close_on_a_stale_survey_is_refused_not_written_again(app, precise):
    """Two organizers (or workers) hold the same open survey; the second close finds it closed."""
    with app.app_context():
        with Session(db.engine) as first, Session(db.engine) as second:
            mine, theirs = first.get(Survey, precise), second.get(Survey, precise)
            assert mine.status == theirs.status == "open"
            lifecycle.close(mine)
            first.commit()
            with pytest.raises(Conflict, match="this survey is closed"):
                lifecycle.close(theirs)
            second.rollback()
        assert closes(precise) == ["open"]


def test_a_connection_lost_while_choosing_the_page_language_is_an_outage_not_a_500(pg, pg_database, captured):
    """The respondent's page chooses its language with a query of its own (the survey's languages),
    made halfway through the view, or while an error page is made. A connection lost during that
    query used to be passed over: the view went on with a session whose transaction had gone with
    the connection, and its next statement raised "Can't reconnect until invalid transaction is
    rolled back", a 500 (a crash under load met it now and then). It is the outage, met in another
    statement: 503, in the view and in an error page alike."""
    app = app_on(pg_database, "survey-language", "bob")
    respondent, stranger = app.test_client(), app.test_client()
    signed_in = stranger.post("/auth/login", data={"username": "bob", "password": PASSWORD})
    assert signed_in.status_code == 302
    assert respondent.get("/s/small-test").status_code == 200
    assert stranger.get("/s/small-test/preview").status_code == 404  # not an organizer of it

    for client, path in ((respondent, "/s/small-test"), (stranger, "/s/small-test/preview")):
        # only the languages' query reads survey_translations
        page = lose_connection_while_waiting(
            pg, pg_database, "survey_translations", "survey-language", lambda c=client, p=path: c.get(p)
        )
        assert page.status_code == 503, (path, page.get_data(as_text=True)[:300])
        assert shows(page.get_data(), PAGE_UNAVAILABLE) and page.headers["Retry-After"] == str(RETRY_AFTER_SECONDS)
        assert client.get(path).status_code in (200, 404)  # and the next request is served as before
    assert respondent.get("/s/small-test").status_code == 200
    assert captured.count(AVAILABLE_LINE) == 2  # each loss was an outage, ended by the next request
    with app.app_context():
        db.session.remove()
        db.engine.dispose()
