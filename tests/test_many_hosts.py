"""Two hosts, one database, one Redis: what must hold once, holds once, whichever host is asked.

Two gunicorn servers (two workers each, as production runs them: survey.platform.wsgi, production
settings) on separate ports share one PostgreSQL database of their own and one Redis prefix, with one
SECRET_KEY, as docs/deploy.md says to run several hosts behind a proxy. Each test is a visitor with
an address of its own (X-Forwarded-For, read through ``TRUSTED_PROXIES=1`` as behind a proxy), so the
per-address limits of one test never meet another's, in whatever order they run.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import func, select, text

from survey import create_app
from survey.domain.models import Submission, Survey, User
from survey.domain.responses.codes import generate_codes
from survey.domain.responses.tallies import submission_count, tally_mismatches
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db
from survey.platform.schema import upgrade_database

from .accounts import PASSWORD
from .databases import PG_URL, REDIS_PREFIX, REDIS_URL, delete_redis_keys, own_database
from .live import CHEAP_PASSWORD_HASH
from .servers import Visitor, race, request_json, start_gunicorn, start_pgbouncer
from .surveys import GOOD, SMALL_SPEC

pytestmark = pytest.mark.postgresql  # a PostgreSQL database of its own (tests/databases.py, own_database)

#: The sign-in limit on both hosts: per address, so one count across them must stop the eleventh.
LOGIN_LIMIT = 10
#: Open surveys for the tests that close one, so that each test closes its own.
CLOSABLE = ("close-race",)
#: The survey both hosts' submissions go to, whose tallies are checked against a recount.
COUNTED = "counted"
#: The survey whose question is edited past the app while both hosts keep its page's questions.
EDITED = "edited"
#: What the researcher's test sends to the small survey first: "drugs" depending on "age", every
#: option of both seen, so that the regression has something to fit.
ANALYSED = [{"drugs": int(i % 3 == 0) ^ (i % 2), "mirror": i % 2, "often": i % 4, "age": i % 2} for i in range(24)]


@pytest.fixture(scope="module", params=["direct", "pgbouncer"])
def hosts(request, tmp_path_factory) -> Iterator[tuple[int, int, Path]]:
    """Two gunicorn hosts on one migrated PostgreSQL database and one Redis prefix; yields their ports
    and a folder holding the database's own URL (``database_url``) and the survey's codes.

    ``pgbouncer``: the hosts reach the database through PgBouncer in transaction mode, three server
    connections for both hosts' sixty, set up as docs/deploy.md says (``DATABASE_TRANSACTION_POOLING``,
    JIT off on the database); every test then also holds behind the pooler."""
    if not PG_URL:
        pytest.skip("TEST_DATABASE_URL is not set")
    folder: Path = tmp_path_factory.mktemp("hosts")
    prefix = f"{REDIS_PREFIX}:hosts-{uuid.uuid4().hex[:6]}"
    with own_database("postgresql", folder, "hosts") as url, contextlib.ExitStack() as pooler:
        (folder / "database_url").write_text(url)
        # migrations run once, here, before either host starts (docs/deploy.md)
        app = create_app(
            {"SQLALCHEMY_DATABASE_URI": url, "SECRET_KEY": "setup", "PASSWORD_HASH_METHOD": CHEAP_PASSWORD_HASH}
        )
        with app.app_context():
            upgrade_database()
            alice = User(username="alice", is_admin=True)
            alice.set_password(PASSWORD)
            db.session.add(alice)
            db.session.flush()
            create_survey_from_spec(db.session, SMALL_SPEC, owner=alice)
            for slug in (*CLOSABLE, COUNTED, EDITED):
                create_survey_from_spec(db.session, {**SMALL_SPEC, "slug": slug}, owner=alice)
            coded = create_survey_from_spec(db.session, {**SMALL_SPEC, "slug": "coded", "access": "invitation"})
            db.session.flush()
            (folder / "codes.json").write_text(json.dumps(generate_codes(db.session, coded, 5)))
            db.session.commit()
            db.engine.dispose()
        settings = {
            "WEB_CONCURRENCY": "2",
            "WEB_THREADS": "4",
            "TRUSTED_PROXIES": "1",
            "RATELIMIT_STORAGE_URL": REDIS_URL,
            "RATELIMIT_KEY_PREFIX": prefix,
            "LOGIN_RATE_LIMIT": f"{LOGIN_LIMIT} per hour",  # an hour: the test never straddles a window
            "SUBMISSION_RATE_LIMIT": "100000 per minute",
            "FOLD_SECONDS": "0.2",  # folds run often, between and during the tests' submissions
        }
        if request.param == "pgbouncer":
            with app.app_context():
                database = db.engine.url.database
                with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
                    connection.execute(text(f'ALTER DATABASE "{database}" SET jit = off'))
                db.engine.dispose()
            url = pooler.enter_context(start_pgbouncer(url, folder / "pgbouncer.log", pool_size=3))
            settings["DATABASE_TRANSACTION_POOLING"] = "1"
        try:
            with (
                start_gunicorn(url, folder / "a.log", **settings) as a,
                start_gunicorn(url, folder / "b.log", **settings) as b,
            ):
                yield a, b, folder
        finally:
            delete_redis_keys(prefix)


def address() -> str:
    """An address of the documentation range no other test uses."""
    octets = uuid.uuid4().bytes
    return f"198.51.{octets[0]}.{octets[1]}"


def signed_in(a: int, b: int) -> Visitor:
    """alice, signed in with a form fetched from host A and posted to host B."""
    visitor = Visitor(address())
    token = visitor.form_token(a, "/auth/login")
    status, page = visitor.post(b, "/auth/login", {"username": "alice", "password": PASSWORD, "csrf_token": token})
    assert status == 302, page[:500]
    return visitor


def test_wrong_passwords_on_both_hosts_draw_on_one_limit(hosts):
    a, b, _ = hosts
    visitor = Visitor(address())
    token = visitor.form_token(a, "/auth/login")
    wrong = {"username": "alice", "password": "not the password", "csrf_token": token}
    statuses = [visitor.post((a, b)[i % 2], "/auth/login", wrong)[0] for i in range(16)]
    # ten checked in all (five on each host), then both refuse: with a count per worker, 2 hosts × 2
    # workers would have checked up to forty
    assert statuses == [401] * LOGIN_LIMIT + [429] * 6, statuses
    right = {**wrong, "password": PASSWORD}
    assert visitor.post(a, "/auth/login", right)[0] == 429
    assert visitor.post(b, "/auth/login", right)[0] == 429
    # another address has its own budget, on either host
    other = Visitor(address())
    token = other.form_token(b, "/auth/login")
    assert other.post(a, "/auth/login", {**right, "csrf_token": token})[0] == 302


def test_a_session_and_a_form_from_one_host_work_on_the_other(hosts):
    a, b, _ = hosts
    visitor = signed_in(a, b)  # the sign-in form came from A and was posted to B
    for port in (a, b):
        status, page = visitor.get(port, "/surveys/small-test/share")
        assert status == 200 and "small-test" in page, (port, status)
    # a form fetched from B is accepted by A, and the reverse: one SECRET_KEY signs both
    for source, target in ((b, a), (a, b)):
        token = visitor.form_token(source, "/account")
        status, page = visitor.post(
            target, "/account/tokens", {"name": f"from {source}", "scope": "results", "days": "30", "csrf_token": token}
        )
        assert status == 200 and f"from {source}" in page, (status, page[:500])
    # and without the token, neither host takes the post
    for port in (a, b):
        assert visitor.post(port, "/account/tokens", {"name": "no token"})[0] == 400


def test_an_invitation_code_is_used_once_across_hosts(hosts):
    a, b, folder = hosts
    code = json.loads((folder / "codes.json").read_text())[0]
    body = json.dumps({"answers": GOOD, "invitation": code})

    def submit(port: int):
        def call(ready: threading.Barrier) -> tuple[int, str]:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            try:
                conn.connect()
                ready.wait(timeout=60)
                conn.request("POST", "/api/surveys/coded/responses", body, {"Content-Type": "application/json"})
                response = conn.getresponse()
                return response.status, response.read().decode()
            finally:
                conn.close()

        return call

    statuses = race([submit((a, b)[i % 2]) for i in range(8)])
    assert sorted(statuses).count(201) == 1, statuses
    assert all(status in (201, 403, 409) for status in statuses), statuses


def test_a_survey_closes_once_across_hosts(hosts):
    a, b, _ = hosts
    visitor = signed_in(a, b)
    token = visitor.form_token(a, f"/surveys/{CLOSABLE[0]}/close")
    statuses = race(
        [
            lambda ready, port=port: visitor.post(
                port, f"/surveys/{CLOSABLE[0]}/close", {"csrf_token": token}, ready=ready
            )
            for port in (a, b, a, b)
        ]
    )
    assert sorted(statuses) == [303, 409, 409, 409], statuses
    body = json.dumps({"answers": GOOD})
    for port in (a, b):  # neither host's cached form still takes answers
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", f"/api/surveys/{CLOSABLE[0]}/responses", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        conn.close()
        assert response.status == 409, response.status


def test_submissions_to_both_hosts_are_each_counted_once_while_they_fold(hosts):
    """Eight clients, half on each host, send forty submissions each, the JSON body and the page's form
    post, while both hosts fold the tallies every 0.2 s: every acknowledged submission is stored once
    and every tally equals a recount (behind the pooler too, where the hosts' sixty connections take
    turns on three)."""
    a, b, folder = hosts
    rng = np.random.default_rng(11)
    sizes = {"drugs": 2, "mirror": 2, "often": 4, "age": 2}
    bodies = [{key: int(rng.integers(k)) for key, k in sizes.items()} for _ in range(320)]
    statuses: list[int] = []
    failures: list[BaseException] = []
    lock = threading.Lock()

    def client(number: int) -> None:
        try:
            send(number)
        except BaseException as error:  # reported below, not lost in a thread
            with lock:
                failures.append(error)

    def send(number: int) -> None:
        port = (a, b)[number % 2]
        visitor = Visitor(address())
        token = visitor.form_token(port, f"/s/{COUNTED}")
        for i in range(40):
            answers = bodies[number * 40 + i]
            if i % 4 == 3:  # the page's form post: its session and CSRF token came from the other host
                fields = {f"q_{key}": str(value) for key, value in answers.items()}
                fields |= {"csrf_token": token, "submission_key": f"{number:02d}{i:04d}{uuid.uuid4().hex[:16]}"}
                status = visitor.post((b, a)[number % 2], f"/s/{COUNTED}", fields)[0]
                status = 201 if status == 303 else status
            else:
                status = request_json(port, "POST", f"/api/surveys/{COUNTED}/responses", {"answers": answers})[0]
            with lock:
                statuses.append(status)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a client still waits after two minutes"
    assert failures == []
    assert len(statuses) == 320 and set(statuses) == {201}, sorted(set(statuses))

    app = create_app({"SQLALCHEMY_DATABASE_URI": (folder / "database_url").read_text(), "SECRET_KEY": "check"})
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == COUNTED))
        assert submission_count(db.session, survey) == 320
        assert (
            db.session.scalar(select(func.count()).select_from(Submission).where(Submission.survey_id == survey.id))
            == 320
        )
        assert tally_mismatches(db.session, survey) == []
        db.engine.dispose()


def test_a_researcher_reads_results_and_downloads_the_answers_on_either_host(hosts):
    """The results page, the estimates, a regression (whose join changes planner settings for its
    transaction only) and the streamed CSV, each from the host the sign-in did not use, over answers
    sent to both."""
    a, b, folder = hosts
    for i, answers in enumerate(ANALYSED):  # (no other test sends answers to the small survey)
        assert request_json((a, b)[i % 2], "POST", "/api/surveys/small-test/responses", {"answers": answers})[0] == 201
    visitor = signed_in(a, b)
    status, page = visitor.get(a, "/surveys/small-test/results")
    assert status == 200 and "small-test" in page, (status, page[:300])
    status, estimates = visitor.get(b, "/api/v1/surveys/small-test/estimates")
    assert status == 200, estimates[:300]
    status, fitted = visitor.get(a, "/api/v1/surveys/small-test/regression?outcome=drugs&covariates=age")
    assert status == 200 and json.loads(fitted)["converged"], fitted[:300]
    status, csv_text = visitor.get(b, "/api/v1/surveys/small-test/responses.csv")
    assert status == 200, csv_text[:300]
    rows = csv_text.strip().splitlines()
    app = create_app({"SQLALCHEMY_DATABASE_URI": (folder / "database_url").read_text(), "SECRET_KEY": "check"})
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == "small-test"))
        count = submission_count(db.session, survey)
        db.engine.dispose()
    assert count == len(ANALYSED)
    assert len(rows) - 1 == count and json.loads(estimates)["survey"]["submissions"] == count


def test_a_question_edited_past_the_app_shows_on_both_hosts_next_pages(hosts):
    """Each worker keeps the questions' HTML of the pages it made, keyed on their content
    (survey.web.respond.fragments): an edit made in the database alone, after the workers that
    answered sixteen requests kept copies, shows on every page either host makes next, whichever
    worker makes it; nothing is told to forget anything."""
    a, b, folder = hosts
    visitor = Visitor(address())
    pages = [visitor.get((a, b)[i % 2], f"/s/{EDITED}") for i in range(16)]
    assert all(status == 200 and "Have you used drugs?" in page for status, page in pages)
    app = create_app({"SQLALCHEMY_DATABASE_URI": (folder / "database_url").read_text(), "SECRET_KEY": "check"})
    with app.app_context():
        survey_id = db.session.scalar(select(Survey.id).where(Survey.slug == EDITED))
        db.session.execute(
            text(
                "UPDATE questions SET text = 'Have you ever taken a banned substance?'"
                " WHERE survey_id = :s AND key = 'drugs'"
            ),
            {"s": survey_id},
        )
        db.session.commit()
        db.engine.dispose()
    pages = [visitor.get((a, b)[i % 2], f"/s/{EDITED}") for i in range(16)]
    assert all(status == 200 for status, _ in pages)
    assert all(
        "Have you ever taken a banned substance?" in page and "Have you used drugs?" not in page for _, page in pages
    )
