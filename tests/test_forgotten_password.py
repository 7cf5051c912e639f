""" "Forgot password?" on the sign-in page: a reset link mailed to the address on the account.

What these prove: the link reaches the account's address through a real SMTP server (aiosmtpd,
tests/smtp.py), points at PUBLIC_URL whatever Host the request named, sets the password once and is
dead after; the answer is the same, word for word, whether the account exists, has no address, is
disabled or is unknown, and the request itself runs no database statement at all (the lookup and
the mail happen after the response: survey.platform.background), so its time cannot tell either;
disabled users get nothing and their link dies; the link dies when the password changes; one
account is mailed at most once in five minutes; the asks count against LOGIN_RATE_LIMIT together
with sign-in attempts. SQLite and PostgreSQL alike.
"""

from __future__ import annotations

import re
import threading

import pytest
from sqlalchemy import event, select, update

from survey.domain.models import AccountLink, User
from survey.platform.background import settle
from survey.platform.extensions import db
from survey.web.auth.views import FORGOT_ANSWER

from .accounts import PASSWORD, make_admin, make_user, sign_in
from .databases import limited_app
from .servers import free_port
from .smtp import smtp_server

NEW_PASSWORD = "a brand new password"
PUBLIC = "https://surveys.example.org"


@pytest.fixture
def mailbox(app):
    with smtp_server() as box:
        app.config.update({**box.config(), "PUBLIC_URL": PUBLIC})
        yield box


@pytest.fixture
def accounts(app):
    """dora (an address), nemo (no address), dis (an address, disabled), and an administrator."""
    make_admin(app, "root", "root@example.org")
    make_user(app, "dora", email="dora@example.org")
    make_user(app, "nemo")
    make_user(app, "dis", email="dis@example.org", disabled=True)


def ask(app, who: str, host: str = "localhost"):
    """ "Forgot password?" for ``who``, from a browser with no cookies, then wait until the work done
    after the response is done."""
    response = app.test_client().post("/auth/forgot", data={"who": who}, headers={"Host": host})
    assert settle(10)
    return response


def path_of(url: str) -> str:
    return url.removeprefix(PUBLIC)


def live_links(app, username: str) -> int:
    with app.app_context():
        user = db.session.scalar(select(User).where(User.username == username))
        return len(list(db.session.scalars(select(AccountLink).where(AccountLink.user_id == user.id))))


def test_the_link_reaches_the_accounts_address_at_the_public_url_and_works_once(app, accounts, mailbox):
    login = app.test_client().get("/auth/login").get_data(as_text=True)
    assert 'href="/auth/forgot">Forgot password?</a>' in login
    response = ask(app, "dora", host="attacker.example")
    assert response.status_code == 303 and response.headers["Location"] == "/auth/login"
    assert len(mailbox.messages) == 1
    assert mailbox.envelopes[0][1] == ["dora@example.org"] and "dora" in mailbox.body()
    link = mailbox.link()
    assert link.startswith(f"{PUBLIC}/auth/link?token=") and "attacker" not in mailbox.body()
    client = app.test_client()
    assert "Choose a new password" in client.get(path_of(link)).get_data(as_text=True)
    done = client.post(path_of(link), data={"password": NEW_PASSWORD, "confirm": NEW_PASSWORD})
    assert done.status_code == 303
    assert client.get(path_of(link)).status_code == 404  # used: dead
    assert app.test_client().post("/auth/login", data={"username": "dora", "password": PASSWORD}).status_code == 401
    sign_in(app, "dora", NEW_PASSWORD)
    # by the address too, in any case
    ask(app, "Dora@Example.org")
    assert len(mailbox.messages) == 2 and mailbox.envelopes[1][1] == ["dora@example.org"]


def test_the_answer_is_the_same_and_the_request_reads_nothing_whether_or_not_the_account_exists(app, accounts, mailbox):
    """The same redirect and the same words for every name; on the request's own thread not one SQL
    statement runs (the lookup happens after the response), so its time does not depend on the name."""
    with app.app_context():
        engine = db.engine
    on_request_thread: list[str] = []
    request_thread = threading.current_thread()

    def record(conn, cursor, statement, parameters, context, executemany):
        if threading.current_thread() is request_thread:
            on_request_thread.append(statement)

    answers = []
    event.listen(engine, "before_cursor_execute", record)
    try:
        for who in ("dora", "nobody", "nemo", "dis", "dora@example.org", "nobody@example.org"):
            client = app.test_client()
            response = client.post("/auth/forgot", data={"who": who})
            answers.append((response.status_code, response.headers["Location"], _flashed(client)))
            assert settle(10)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert on_request_thread == []
    assert len(set(answers)) == 1 and answers[0] == (303, "/auth/login", FORGOT_ANSWER)
    # and the login page shows it
    client = app.test_client()
    client.post("/auth/forgot", data={"who": "nobody"})
    assert FORGOT_ANSWER.split(".")[0] in client.get("/auth/login").get_data(as_text=True)
    # only dora was mailed (once: a second ask within five minutes mails nothing), and nothing
    # was written for the others
    assert [e[1] for e in mailbox.envelopes] == [["dora@example.org"]]
    assert live_links(app, "nemo") == live_links(app, "dis") == 0 and live_links(app, "dora") == 1


def _flashed(client) -> str:
    with client.session_transaction() as session:
        return " ".join(text for _, text in session.get("_flashes", []))


def test_a_disabled_user_gets_nothing_and_their_link_dies(app, accounts, mailbox):
    ask(app, "dis")
    assert mailbox.messages == []
    ask(app, "dora")
    link = path_of(mailbox.link())
    with app.app_context():
        db.session.execute(update(User).where(User.username == "dora").values(disabled=True))
        db.session.commit()
    assert app.test_client().get(link).status_code == 404


def test_the_link_dies_when_the_password_changes(app, accounts, mailbox):
    ask(app, "dora")
    link = path_of(mailbox.link())
    dora = sign_in(app, "dora")
    changed = dora.post(
        "/account", data={"current_password": PASSWORD, "new_password": NEW_PASSWORD, "confirm": NEW_PASSWORD}
    )
    assert changed.status_code in (200, 303)
    stale = app.test_client().post(link, data={"password": "the attackers one", "confirm": "the attackers one"})
    assert stale.status_code == 404
    sign_in(app, "dora", NEW_PASSWORD)


def test_an_administrators_reset_link_dies_when_a_forgotten_password_link_is_used(app, accounts, mailbox):
    root = sign_in(app, "root")
    with app.app_context():
        dora = db.session.scalar(select(User.id).where(User.username == "dora"))
    root.post("/admin/users/password-link", data={"user_id": dora})
    admins = path_of(mailbox.link())
    # an hour is the same lifetime for both; asking replaces the administrator's link
    ask(app, "dora")
    assert app.test_client().get(admins).status_code == 404
    mine = path_of(mailbox.link())
    assert app.test_client().post(mine, data={"password": NEW_PASSWORD, "confirm": NEW_PASSWORD}).status_code == 303


def test_one_account_is_mailed_at_most_once_in_five_minutes(app, accounts, mailbox):
    ask(app, "dora")
    first = mailbox.link()
    ask(app, "dora@example.org")
    assert len(mailbox.messages) == 1
    with app.app_context():  # five minutes later
        db.session.execute(update(AccountLink).values(expires_at=AccountLink.expires_at - _minutes(5)))
        db.session.commit()
    ask(app, "dora")
    assert len(mailbox.messages) == 2
    assert app.test_client().get(path_of(first)).status_code == 404  # replaced by the newer one
    assert app.test_client().get(path_of(mailbox.link())).status_code == 200


def _minutes(n: int):
    import datetime as dt

    return dt.timedelta(minutes=n)


def test_a_link_that_could_not_be_sent_is_not_kept(app, accounts):
    app.config.update({"MAIL_SERVER": "127.0.0.1", "MAIL_PORT": free_port(), "PUBLIC_URL": PUBLIC})
    assert ask(app, "dora").status_code == 303
    assert live_links(app, "dora") == 0


def test_without_a_mail_server_the_page_says_to_ask_an_administrator(app, accounts):
    page = app.test_client().get("/auth/forgot")
    assert page.status_code == 200 and "administrator" in page.get_data(as_text=True)
    assert 'name="who"' not in page.get_data(as_text=True)
    assert ask(app, "dora").status_code == 200 and live_links(app, "dora") == 0
    app.config.update({"MAIL_SERVER": "127.0.0.1", "PUBLIC_URL_REQUIRED": True})  # production, no PUBLIC_URL
    page = app.test_client().get("/auth/forgot").get_data(as_text=True)
    assert "administrator" in page and 'name="who"' not in page


def test_an_empty_ask_is_a_400_that_says_what_to_give(app, mailbox):
    response = app.test_client().post("/auth/forgot", data={"who": "  "})
    assert response.status_code == 400 and "Give your username or your e-mail address" in response.get_data(
        as_text=True
    )


def test_asking_is_rate_limited_with_sign_in_attempts(tmp_path, sqlite_template):
    app = limited_app(tmp_path, sqlite_template, LOGIN_RATE_LIMIT="3 per minute", WTF_CSRF_ENABLED=False)
    client = app.test_client()
    asks = [client.post("/auth/forgot", data={"who": f"someone {i}"}).status_code for i in range(3)]
    assert asks == [200, 200, 200]  # no mail server: the page says to ask an administrator
    assert client.post("/auth/login", data={"username": "x", "password": "y"}).status_code == 429
    assert client.post("/auth/forgot", data={"who": "again"}).status_code == 429
    assert client.get("/auth/forgot").status_code == 200  # reading the form is no attempt
    assert settle(10)
    with app.app_context():
        db.engine.dispose()


def test_the_mail_says_who_asked_and_how_long_the_link_lives(app, accounts, mailbox):
    ask(app, "dora")
    body = mailbox.body()
    assert re.search(r"for 1 hour, until \d{4}-\d\d-\d\d \d\d:\d\d UTC", body)
    assert "asked on the sign-in page" in body and mailbox.messages[0]["To"] == "dora@example.org"
