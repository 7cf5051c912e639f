"""Two hosts, one database, one Redis: what must hold once, holds once, whichever host is asked.

Two gunicorn servers (two workers each, as production runs them: survey.platform.wsgi, production
settings) on separate ports share one PostgreSQL database of their own and one Redis prefix, with one
SECRET_KEY, as docs/deploy.md says to run several hosts behind a proxy. Each test is a visitor with
an address of its own (X-Forwarded-For, read through ``TRUSTED_PROXIES=1`` as behind a proxy), so the
per-address limits of one test never meet another's, in whatever order they run.
"""

from __future__ import annotations

import http.client
import json
import threading
import uuid
from pathlib import Path

import pytest

from survey import create_app
from survey.domain.models import User
from survey.domain.responses.codes import generate_codes
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db
from survey.platform.schema import upgrade_database

from .accounts import PASSWORD
from .databases import PG_URL, REDIS_PREFIX, REDIS_URL, delete_redis_keys, own_database
from .live import CHEAP_PASSWORD_HASH
from .servers import Visitor, race, start_gunicorn
from .surveys import GOOD, SMALL_SPEC

pytestmark = pytest.mark.postgresql  # a PostgreSQL database of its own (tests/databases.py, own_database)

#: The sign-in limit on both hosts: per address, so one count across them must stop the eleventh.
LOGIN_LIMIT = 10
#: Open surveys for the tests that close one, so that each test closes its own.
CLOSABLE = ("close-race",)


@pytest.fixture(scope="module")
def hosts(tmp_path_factory) -> tuple[int, int]:
    """Two gunicorn hosts on one migrated PostgreSQL database and one Redis prefix; yields their ports."""
    if not PG_URL:
        pytest.skip("TEST_DATABASE_URL is not set")
    folder: Path = tmp_path_factory.mktemp("hosts")
    prefix = f"{REDIS_PREFIX}:hosts-{uuid.uuid4().hex[:6]}"
    with own_database("postgresql", folder, "hosts") as url:
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
            for slug in CLOSABLE:
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
        }
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
