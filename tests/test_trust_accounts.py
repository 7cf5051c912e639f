"""Accounts and roles reach only the person they were meant for (issue 20, part 1).

Each test here reproduces what an outside review did to the running app, and failed on the code
before the fix: a role offer taken over through another inviter's link, links that outlived their
maker, ordinary users making accounts unasked, links built from the request's Host header, a
survey title that lost an invitation, no bound on how much one account mails, the account page's
password check open to guessing, two administrators demoting each other into none, and a sharing
form that told who has an account, with look-alike usernames beside the real ones.

Real parts throughout: the app's own pages through the test client or a served app, a real SMTP
server (aiosmtpd, tests/smtp.py), SQLite and PostgreSQL (TEST_DATABASE_URL), and for the races
real concurrent requests released together by a barrier.
"""

from __future__ import annotations

import http.client
import logging
import re
import threading
import urllib.parse
from contextlib import contextmanager

import pytest
from sqlalchemy import event, func, select, update
from sqlalchemy.exc import IntegrityError

from survey import create_app
from survey.domain.accounts.quota import SLICES, SendLimit, TooMany, spend
from survey.domain.models import AccountLink, Membership, SendQuota, Survey, User
from survey.platform.extensions import db
from survey.platform.limits import limiter

from .accounts import make_admin, make_user, sign_in
from .databases import BACKENDS, limited_app, make_config, redis_limits
from .live import serve
from .servers import free_port
from .smtp import LINK, smtp_server
from .surveys import SMALL_SPEC, add_survey

PASSWORD = "correct horse battery"
NEW_PASSWORD = "a brand new password"


def allow_invitations(app, allowed: bool = True) -> None:
    """The administrators' setting that lets users who are not administrators invite people to make
    accounts. Before the fix there was no such setting and everyone could: then there is nothing to
    set, and the reproductions below run against that code as they are."""
    try:
        from survey.domain.accounts.site import set_members_invite_accounts
    except ImportError:
        return
    with app.app_context():
        set_members_invite_accounts(db.session, allowed)
        db.session.commit()


def share(client, who: str, role: str = "researcher", slug: str = "small-test"):
    return client.post(f"/surveys/{slug}/members", data={"username": who, "role": role})


def shown_links(response) -> list[str]:
    return [path_of(url) for url in LINK.findall(response.get_data(as_text=True))]


def path_of(url: str) -> str:
    return re.sub(r"^https?://[^/]+", "", url)


def make_account(client, link: str, username: str, password: str = NEW_PASSWORD):
    return client.post(link, data={"username": username, "password": password, "confirm": password})


def roles_of(app, username: str) -> set[tuple[str, str, bool]]:
    with app.app_context():
        user = db.session.scalar(select(User).where(User.username == username))
        return {(m.survey.slug, m.role, m.pending) for m in user.memberships} if user else set()


def link_rows(app) -> list[AccountLink]:
    with app.app_context():
        found = list(db.session.scalars(select(AccountLink).order_by(AccountLink.id)))
        db.session.expunge_all()
        return found


def text(response) -> str:
    return response.get_data(as_text=True)


# -- the invitation takeover ----------------------------------------------------------------------


@pytest.mark.parametrize("relay", ["no mail server", "a relay that refuses"])
def test_an_invitation_link_grants_its_own_offer_and_no_other(app, signed_in, small_survey, relay):
    """Mallory invites the address Alice invited to a draft of her own, sees the link (no mail server,
    or a relay that refuses the message), makes the account with it: she gets her own draft's role and
    nothing of Alice's survey, and Alice's invitee still makes their account with Alice's link."""
    allow_invitations(app)
    if relay != "no mail server":
        app.config.update({"MAIL_SERVER": "127.0.0.1", "MAIL_PORT": free_port(), "MAIL_TIMEOUT": 2})
    [alices_link] = shown_links(share(signed_in, "victim@example.org", role="organizer"))
    make_user(app, "mallory", PASSWORD)
    add_survey(app, {**SMALL_SPEC, "slug": "bait", "title": "Mallory's draft", "status": "draft"}, owner="mallory")
    mallory = sign_in(app, "mallory", PASSWORD)
    [mallorys_link] = shown_links(share(mallory, "victim@example.org", slug="bait"))

    taker = app.test_client()
    assert make_account(taker, mallorys_link, "victim").status_code == 303
    assert roles_of(app, "victim") == {("bait", "researcher", True)}  # her own draft's offer only
    assert taker.post("/surveys/small-test/accept").status_code == 404
    assert taker.get("/surveys/small-test/share").status_code == 404
    with app.app_context():  # and the account does not carry an address nobody proved to read
        assert db.session.scalar(select(User.email).where(User.username == "victim")) is None

    invitee = app.test_client()
    assert invitee.get(alices_link).status_code == 200  # the real invitee's link keeps working
    assert make_account(invitee, alices_link, "the-real-one").status_code == 303
    assert roles_of(app, "the-real-one") == {("small-test", "organizer", True)}
    assert invitee.post("/surveys/small-test/accept").status_code == 303
    assert invitee.get("/surveys/small-test/share").status_code == 200


def test_an_account_gets_the_invited_address_only_through_a_mailed_link(app):
    """The address on an account is where offers and password links go: it is given only by a link
    that reached that mailbox, and never taken from an account that proved it first."""
    make_admin(app, "root")
    root = sign_in(app, "root", PASSWORD)
    add_survey(app, {**SMALL_SPEC, "slug": "first", "title": "First"}, owner="root")
    add_survey(app, {**SMALL_SPEC, "slug": "second", "title": "Second"}, owner="root")
    with smtp_server() as mailbox:
        app.config.update(mailbox.config())
        share(root, "carol@example.org", slug="first")
        mailed = path_of(mailbox.link())
        share(root, "carol@example.org", slug="second")
        second = path_of(mailbox.link())
    assert make_account(app.test_client(), mailed, "carol").status_code == 303
    with app.app_context():
        assert db.session.scalar(select(User.email).where(User.username == "carol")) == "carol@example.org"
    # a second account made through the other mailed link cannot take the address from the first
    assert make_account(app.test_client(), second, "carol2").status_code == 303
    with app.app_context():
        assert db.session.scalar(select(User.email).where(User.username == "carol2")) is None


# -- links die with their maker's rights; who may make accounts -----------------------------------


def test_links_stop_working_when_their_maker_is_disabled(app, user, small_survey):
    make_admin(app, "root")
    make_admin(app, "helper")
    allow_invitations(app)
    alice = sign_in(app, "alice", PASSWORD)
    [invitation] = shown_links(share(alice, "newcomer@example.org"))
    helper = sign_in(app, "helper", PASSWORD)
    carol = make_user(app, "carol", PASSWORD)
    [reset] = shown_links(helper.post("/admin/users/password-link", data={"user_id": carol}))
    root = sign_in(app, "root", PASSWORD)
    with app.app_context():
        alice_id = db.session.scalar(select(User.id).where(User.username == "alice"))
        helper_id = db.session.scalar(select(User.id).where(User.username == "helper"))
    for who in (alice_id, helper_id):
        assert root.post("/admin/users/disable", data={"user_id": who}).status_code == 303
    client = app.test_client()
    assert client.get(invitation).status_code == 404
    assert make_account(client, invitation, "newcomer").status_code == 404
    assert client.get(reset).status_code == 404
    # enabling them again does not bring their links back
    for who in (alice_id, helper_id):
        assert root.post("/admin/users/enable", data={"user_id": who}).status_code == 303
    assert client.get(invitation).status_code == 404 and client.get(reset).status_code == 404


def test_a_link_dies_with_its_makers_role(app, user, small_survey):
    """A co-organizer's invitation ends when they are removed from the survey."""
    bob = make_user(app, "bob")
    allow_invitations(app)
    with app.app_context():
        survey = db.session.scalar(select(Survey))
        survey.memberships.append(Membership(user_id=bob, role="organizer"))
        db.session.commit()
    bob_client = sign_in(app, "bob")
    [invitation] = shown_links(share(bob_client, "newcomer@example.org"))
    alice = sign_in(app, "alice", PASSWORD)
    assert app.test_client().get(invitation).status_code == 200
    assert alice.post("/surveys/small-test/members/remove", data={"user_id": str(bob)}).status_code == 303
    assert app.test_client().get(invitation).status_code == 404
    assert "newcomer@example.org" not in text(alice.get("/surveys/small-test/share"))


def test_only_administrators_invite_new_accounts_unless_they_allow_everyone(app, small_survey, user):
    alice = sign_in(app, "alice", PASSWORD)
    refused = share(alice, "newcomer@example.org")
    assert refused.status_code == 303 and not shown_links(refused)  # the offer waits for an account; no link
    assert "newcomer@example.org is invited" in text(alice.get(refused.headers["Location"]))
    make_admin(app, "root")
    root = sign_in(app, "root", PASSWORD)
    page = text(root.get("/admin/users"))
    assert 'id="settings"' in page and 'name="members_invite_accounts"' in page
    assert "may not invite people without an account" in page
    assert root.post("/admin/settings", data={"members_invite_accounts": "y"}).status_code == 303
    assert "may also invite people without an account" in text(root.get("/admin/users"))
    [link] = shown_links(share(alice, "newcomer@example.org"))
    assert app.test_client().get(link).status_code == 200

    # turned off again: alice's link no longer makes an account (it still lets an account take the role)
    assert root.post("/admin/settings", data={}).status_code == 303
    client = app.test_client()
    page = client.get(link)
    assert page.status_code == 200 and "Accept the invitation" in text(page) and 'name="password"' not in text(page)
    refused = make_account(client, link, "newcomer")
    assert refused.status_code == 403 and "made by its administrators" in text(refused)
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(User).where(User.username == "newcomer")) == 0
    carol = make_user(app, "carol", PASSWORD)
    carol_client = sign_in(app, "carol", PASSWORD)
    assert "Accept the role as carol" in text(carol_client.get(link))
    assert carol_client.post(link, data={"take": "1"}).status_code == 303
    assert roles_of(app, "carol") == {("small-test", "researcher", False)}
    assert carol  # an id

    # an administrator always may, and the setting is theirs alone
    assert (
        len(
            shown_links(
                share(root, "another@example.org", slug=add_survey(app, {**SMALL_SPEC, "slug": "roots"}, "root"))
            )
        )
        == 1
    )
    assert alice.post("/admin/settings", data={"members_invite_accounts": "y"}).status_code == 404


# -- links from the configured public address -----------------------------------------------------


def from_elsewhere(client, path: str, data: dict):
    """A post whose Host header names another site, with the signed-in session of ``client`` (whose
    cookie jar would keep it for localhost)."""
    cookie = client.get_cookie("session").value
    bare = client.application.test_client(use_cookies=False)
    return bare.post(path, data=data, headers={"Host": "attacker.example", "Cookie": f"session={cookie}"})


def test_links_are_built_from_the_public_url_never_from_the_host_header(app):
    make_admin(app, "root")
    add_survey(app, {**SMALL_SPEC, "slug": "roots"}, owner="root")
    root = sign_in(app, "root", PASSWORD)
    app.config["PUBLIC_URL"] = "https://surveys.example.org"
    with smtp_server() as mailbox:
        app.config.update(mailbox.config())
        response = from_elsewhere(root, "/surveys/roots/members", {"username": "x@example.org", "role": "researcher"})
        assert response.status_code in (200, 303)
        assert mailbox.link().startswith("https://surveys.example.org/auth/link?token=")
        carol = make_user(app, "carol", PASSWORD)
        with app.app_context():
            db.session.execute(update(User).where(User.id == carol).values(email="carol@example.org"))
            db.session.commit()
        from_elsewhere(root, "/admin/users/password-link", {"user_id": carol})
        assert mailbox.link().startswith("https://surveys.example.org/auth/link?token=")
    app.config.update({"MAIL_SERVER": None})
    page = from_elsewhere(root, "/surveys/roots/members", {"username": "y@example.org", "role": "researcher"})
    assert LINK.findall(text(page))[0].startswith("https://surveys.example.org/auth/link?token=")
    assert not re.search(r"attacker\.example/auth", text(page))


def test_without_a_public_url_development_links_to_127_0_0_1_and_production_makes_none(app):
    make_admin(app, "root")
    add_survey(app, {**SMALL_SPEC, "slug": "roots"}, owner="root")
    root = sign_in(app, "root", PASSWORD)
    page = from_elsewhere(root, "/surveys/roots/members", {"username": "a@example.org", "role": "researcher"})
    [url] = LINK.findall(text(page))
    assert url.startswith("http://127.0.0.1:") and "attacker" not in url
    before = len(link_rows(app))
    app.config["PUBLIC_URL_REQUIRED"] = True  # what SURVEY_ENV=production sets
    refused = share(root, "b@example.org", slug="roots")
    assert refused.status_code == 503 and "PUBLIC_URL" in text(refused) and not LINK.search(text(refused))
    assert len(link_rows(app)) == before  # nothing was saved


def test_production_warns_without_a_public_url_and_refuses_a_malformed_one(monkeypatch, caplog):
    from survey.platform.config import check_public_url, from_environment, production_settings

    with caplog.at_level(logging.WARNING, logger="survey.platform.config"):
        values = production_settings({"SECRET_KEY": "long and random"})
    assert values["PUBLIC_URL_REQUIRED"] is True and "PUBLIC_URL is not set" in caplog.text
    monkeypatch.setenv("PUBLIC_URL", "https://surveys.example.org/")
    assert from_environment()["PUBLIC_URL"] == "https://surveys.example.org/"
    assert check_public_url("https://surveys.example.org/") == "https://surveys.example.org"
    assert check_public_url("http://127.0.0.1:8000/surveys") == "http://127.0.0.1:8000/surveys"
    for bad in ("surveys.example.org", "ftp://x.org", "https://x.org/?next=evil", "https:///nohost"):
        with pytest.raises(RuntimeError, match="PUBLIC_URL"):
            check_public_url(bad)


# -- mail: a title with a newline, a message that cannot be written, a budget per account ---------


def test_a_newline_in_a_survey_title_does_not_lose_the_invitation(app, small_survey, user):
    make_admin(app, "root")
    root = sign_in(app, "root", PASSWORD)
    add_survey(app, {**SMALL_SPEC, "slug": "lined"}, owner="root")
    with app.app_context():
        db.session.execute(
            update(Survey).where(Survey.slug == "lined").values(title="Drugs\r\nBcc: all@example.org\u2028and more")
        )
        db.session.commit()
    with smtp_server() as mailbox:
        app.config.update(mailbox.config())
        page = share(root, "newcomer@example.org", slug="lined")
        assert page.status_code == 200 and "The link was e-mailed to" in text(page)
        [message] = mailbox.messages
        assert message["Subject"] == "root invites you to work on “Drugs Bcc: all@example.org and more”"
        assert message["Bcc"] is None and mailbox.envelopes[0][1] == ["newcomer@example.org"]
        link = path_of(mailbox.link())
    assert make_account(app.test_client(), link, "newcomer").status_code == 303


def test_a_message_that_cannot_be_written_saves_nothing_and_one_that_cannot_be_sent_shows_the_link(app):
    make_admin(app, "root")
    add_survey(app, {**SMALL_SPEC, "slug": "roots"}, owner="root")
    root = sign_in(app, "root", PASSWORD)
    with smtp_server() as mailbox:
        # a sender no e-mail can carry (a lone surrogate): the message cannot be written at all
        app.config.update({**mailbox.config(), "MAIL_FROM": "surveys\ud800@example.org"})
        refused = share(root, "newcomer@example.org", slug="roots")
        assert refused.status_code == 400 and "nothing was saved" in text(refused)
        assert link_rows(app) == [] and mailbox.messages == []
    app.config.update({"MAIL_SERVER": "127.0.0.1", "MAIL_PORT": free_port(), "MAIL_TIMEOUT": 2, "MAIL_FROM": None})
    page = share(root, "newcomer@example.org", slug="roots")  # nobody listens there: the link is shown instead
    assert page.status_code == 200 and "could not be sent" in text(page)
    [link] = shown_links(page)
    assert make_account(app.test_client(), link, "newcomer").status_code == 303


def test_mail_headers_are_one_line_whatever_they_quote():
    from survey.platform.mail import compose, one_line

    for character in "\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\x00\x07":
        assert one_line(f"a{character}b") == "a b"
        message = compose({"MAIL_FROM": f"S{character}<s@example.org>"}, "x@example.org", f"T{character}itle", "body")
        assert "\n" not in message["Subject"] and message["Subject"] == "T itle"


@pytest.fixture(params=BACKENDS)
def two_workers(request, tmp_path):
    """Two apps on one database, each with its own engine and connections, served on two ports: two
    worker processes as far as anything kept in a process is concerned. Yields (apps, ports)."""
    config = {
        **make_config(request.param, tmp_path, request),
        "RATELIMIT_ENABLED": True,
        **redis_limits(),  # one count for both, as for two worker processes
        "LOGIN_RATE_LIMIT": "1000 per minute",
        "INVITATION_RATE_LIMIT": "3 per hour",
    }
    apps = [create_app(dict(config)), create_app(dict(config))]
    with apps[0].app_context():
        alice = User(username="alice", is_admin=True)
        alice.set_password(PASSWORD)
        db.session.add(alice)
        db.session.flush()
        from survey.domain.surveys.specs import create_survey_from_spec

        create_survey_from_spec(db.session, SMALL_SPEC, owner=alice)
        db.session.commit()
    limiter.reset()
    with serve(apps[0]) as first, serve(apps[1]) as second:
        yield apps, (first, second)
    for each in apps:
        with each.app_context():
            db.session.remove()
            db.engine.dispose()
    limiter.reset()


def session_cookie(app, name: str) -> str:
    client = sign_in(app, name, PASSWORD)
    return client.get_cookie("session").value


def fire(requests: list[tuple[int, str, str, str]], timeout: float = 30) -> list[int]:
    """POST each ``(port, path, body, cookie)`` at once (connected first, then released together by a
    barrier); the status of each."""
    barrier = threading.Barrier(len(requests))
    results: list[int | BaseException | None] = [None] * len(requests)

    def post(i: int, port: int, path: str, body: str, cookie: str) -> None:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
            conn.connect()
            barrier.wait(timeout=timeout)
            conn.request(
                "POST",
                path,
                body=body,
                headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"session={cookie}"},
            )
            response = conn.getresponse()
            response.read()
            results[i] = response.status
            conn.close()
        except BaseException as error:  # reported by the test, not lost in a thread
            results[i] = error

    threads = [threading.Thread(target=post, args=(i, *r)) for i, r in enumerate(requests)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout + 10)
    for result in results:
        if not isinstance(result, int):
            raise AssertionError(f"a request did not finish: {result!r}")
    return results  # type: ignore[return-value]


def test_an_account_sends_only_so_many_invitations_an_hour_whichever_worker_serves_it(two_workers):
    apps, ports = two_workers
    cookie = session_cookie(apps[0], "alice")
    bodies = [urllib.parse.urlencode({"username": f"person{i}@example.org", "role": "researcher"}) for i in range(8)]
    statuses = fire([(ports[i % 2], "/surveys/small-test/members", body, cookie) for i, body in enumerate(bodies)])
    assert sorted(statuses) == [200] * 3 + [429] * 5, statuses
    assert len(link_rows(apps[1])) == 3  # the refused ones saved nothing
    # the answer says why, and the next window is a new budget (the count is the database's)
    refused = apps[1].test_client()
    refused.set_cookie("session", cookie)
    page = refused.post("/surveys/small-test/members", data={"username": "late@example.org", "role": "researcher"})
    assert page.status_code == 429 and "3 per hour" in text(page) and "nothing was sent or saved" in text(page)
    with apps[0].app_context():
        db.session.execute(update(SendQuota).values(window_number=SendQuota.window_number - SLICES - 1))
        db.session.commit()
    assert (
        refused.post(
            "/surveys/small-test/members", data={"username": "late@example.org", "role": "researcher"}
        ).status_code
        == 200
    )


def _spend_at(app, moments: list[float], limit: SendLimit) -> list[bool]:
    """Spend one unit of alice's quota at each moment (seconds since the epoch), each in a transaction
    of its own; whether each was taken."""
    taken = []
    with app.app_context():
        alice = db.session.scalar(select(User).where(User.username == "alice"))
        for moment in moments:
            try:
                spend(db.session, alice, limit, now=moment)
                db.session.commit()
                taken.append(True)
            except TooMany:
                db.session.rollback()
                taken.append(False)
    return taken


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_span_of_an_hour_holds_more_than_the_send_quota_across_the_turn_of_the_hour(backend, tmp_path, request):
    """Fixed hours let 3 units at 10:59:59 and 3 more at 11:00:00 through (6 within a second, against a
    limit of 3 an hour). In slices of five minutes, a unit counts while its slice is one of the thirteen
    that end with the current one: those taken at 10:59:59 (slice 10:55–11:00) until 12:00:00."""
    app = create_app(make_config(backend, tmp_path, request))
    make_user(app, "alice", PASSWORD)
    limit = SendLimit(3, 3600)
    eleven = 1_800_000_000 // 3600 * 3600 + 11 * 3600  # 11:00:00 of some day
    assert _spend_at(app, [eleven - 1] * 4, limit) == [True, True, True, False]
    assert _spend_at(app, [eleven, eleven + 1, eleven + 1800, eleven + 3598], limit) == [False] * 4
    # a unit spent at 10:59:59 counts while its five-minute slice (10:55–11:00) is one of the thirteen
    # that end with the current one: until 12:00:00, when 10:55 drops out
    assert _spend_at(app, [eleven + 3599.999, eleven + 3600], limit) == [False, True]
    # over four hours of attempts 97 s apart, no span of an hour holds more than 3 taken units
    moments = [eleven + 3600 + i * 97.0 for i in range(150)]
    taken = [m for m, ok in zip(moments, _spend_at(app, moments, limit), strict=True) if ok]
    assert max(sum(1 for t in taken if start <= t < start + 3600) for start in taken) <= 3
    # and it is not stingier than its promise: a unit counts for 65 minutes at most
    assert len(taken) >= 3 * int((moments[-1] - moments[0]) // 3900)
    with app.app_context():
        rows = db.session.scalars(select(SendQuota.window_number)).all()
        assert len(rows) <= SLICES + 1  # old slices are deleted as units are taken
        db.engine.dispose()


# -- the account page's password check ------------------------------------------------------------


def test_the_current_password_check_is_rate_limited_like_sign_in(tmp_path, sqlite_template):
    app = limited_app(tmp_path, sqlite_template, LOGIN_RATE_LIMIT="4 per minute", WTF_CSRF_ENABLED=False)
    make_user(app, "alice", PASSWORD)
    client = sign_in(app, "alice", PASSWORD)  # one sign-in attempt: the budget is shared
    guesses = [
        client.post(
            "/account", data={"current_password": f"guess {i}", "new_password": NEW_PASSWORD, "confirm": NEW_PASSWORD}
        ).status_code
        for i in range(4)
    ]
    assert guesses == [400, 400, 400, 429]
    assert client.get("/account").status_code == 200  # reading the page is no guess
    with app.app_context():
        db.engine.dispose()


# -- always an administrator ------------------------------------------------------------------------


@contextmanager
def both_inside_the_window(app, seconds: float = 3.0):
    """Hold each request that is about to write a user's row until a second one gets there too (or
    ``seconds`` pass): two changes that each counted two administrators then both write. A guard that
    serializes them keeps the second one from getting there while the first waits; the first then
    goes on alone when the time is up."""
    gate = threading.Barrier(2)

    def hold(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("UPDATE USERS SET"):
            try:
                gate.wait(timeout=seconds)
            except threading.BrokenBarrierError:
                pass

    with app.app_context():
        engine = db.engine
    event.listen(engine, "before_cursor_execute", hold)
    try:
        yield
    finally:
        event.remove(engine, "before_cursor_execute", hold)


@pytest.fixture(params=BACKENDS)
def live_admins(request, tmp_path):
    app = create_app(make_config(request.param, tmp_path, request))
    with app.app_context():
        for name in ("ann", "ben"):
            user = User(username=name, is_admin=True)
            user.set_password(PASSWORD)
            db.session.add(user)
        db.session.commit()
        ids = dict(db.session.execute(select(User.username, User.id)).all())
    with serve(app) as port:
        yield app, port, ids
    with app.app_context():
        db.session.remove()
        db.engine.dispose()


@pytest.mark.parametrize(
    "ann_does, ben_does",
    [("remove-admin", "remove-admin"), ("disable", "disable"), ("remove-admin", "disable")],
)
def test_two_administrators_taking_each_other_away_at_once_leave_one(live_admins, ann_does, ben_does):
    app, port, ids = live_admins
    cookies = {name: session_cookie(app, name) for name in ("ann", "ben")}
    with both_inside_the_window(app):
        statuses = fire(
            [
                (port, f"/admin/users/{ann_does}", f"user_id={ids['ben']}", cookies["ann"]),
                (port, f"/admin/users/{ben_does}", f"user_id={ids['ann']}", cookies["ben"]),
            ]
        )
    with app.app_context():
        left = db.session.scalars(select(User.username).where(User.is_admin.is_(True), User.disabled.is_(False))).all()
    assert len(left) == 1, (statuses, left)
    # one change went through; the other was refused: its maker was no longer an administrator by
    # the time it could count (404, or signed out: 302), or the count left none (409)
    assert sorted(statuses) in ([302, 303], [303, 404], [303, 409]), statuses


# -- the sharing form tells nothing about who has an account ---------------------------------------


def _normalized(page: str, who: str) -> str:
    page = page.replace(who, "WHO")
    page = re.sub(r"token=[A-Za-z0-9_-]+", "token=T", page)
    page = re.sub(r'name="(csrf_token|link_id)" value="[^"]*"', r'name="\1" value="X"', page)
    return re.sub(r"\d{4}-\d\d-\d\d( \d\d:\d\d)?", "DATE", page)


def _answer(app, client, who: str) -> tuple:
    """Share the survey with ``who``: the answer, the page it leads to, how many invitations it made;
    then withdraw them all, so that the next answer starts from the same page."""
    before = len(link_rows(app))
    response = share(client, who)
    after = text(client.get(response.headers["Location"])) if response.status_code == 303 else ""
    rows = link_rows(app)
    for row in rows[before:]:
        withdrawn = client.post("/surveys/small-test/account-invitations/withdraw", data={"link_id": row.id})
        client.get(withdrawn.headers["Location"])  # and its message shown
    return response.status_code, _normalized(text(response), who), _normalized(after, who), len(rows) - before


@pytest.mark.parametrize(
    "invites_accounts, mail, typed",
    [
        (False, False, "username"),
        (False, True, "address"),
        (False, False, "address"),
        (True, False, "address"),
        (True, True, "username"),
    ],
)
def test_the_sharing_form_answers_the_same_whether_or_not_an_account_exists(
    app, signed_in, small_survey, invites_accounts, mail, typed
):
    with app.app_context():
        bob = User(username="bobby", email="bobby@example.org")
        bob.set_password(PASSWORD)
        db.session.add(bob)
        db.session.commit()
    allow_invitations(app, invites_accounts)
    existing, absent = ("bobby", "nobody") if typed == "username" else ("bobby@example.org", "nobody@example.org")
    with smtp_server() as mailbox:
        if mail:
            app.config.update(mailbox.config())
        first = _answer(app, signed_in, existing)
        second = _answer(app, signed_in, absent)
        if mail and typed == "address":
            assert [m["To"] for m in mailbox.messages] == [existing, absent]  # each address is told, alike
    assert first == second
    # and listed alike while they wait
    share(signed_in, existing)
    share(signed_in, absent)
    people = re.search(
        r'<table class="data people">.*?</table>', text(signed_in.get("/surveys/small-test/share")), re.S
    )
    rows = re.findall(r"<tr>.*?</tr>", people.group(0), re.S)[2:]  # after the heading and the owner
    assert len(rows) == 2 and _normalized(rows[0], existing) == _normalized(rows[1], absent)
    assert ">bobby<" not in people.group(0) or typed == "username"  # an address never shows the username


def test_a_declined_offer_looks_like_one_to_nobody_and_answers_reach_only_the_account(app, signed_in, small_survey):
    with app.app_context():
        bob = User(username="bobby")
        bob.set_password(PASSWORD)
        db.session.add(bob)
        db.session.commit()
    share(signed_in, "bobby")
    share(signed_in, "nobody")
    carol = make_user(app, "carol", PASSWORD)
    assert carol
    carol_client = sign_in(app, "carol", PASSWORD)
    assert carol_client.post("/surveys/small-test/accept").status_code == 404  # only the account named
    bob_client = sign_in(app, "bobby", PASSWORD)
    assert "Small test survey" in text(bob_client.get("/"))
    declined = bob_client.post("/surveys/small-test/decline")
    assert declined.status_code == 303 and "You declined" in text(bob_client.get(declined.headers["Location"]))
    assert "Small test survey" not in text(bob_client.get("/"))
    assert bob_client.post("/surveys/small-test/accept").status_code == 404
    page = text(signed_in.get("/surveys/small-test/share"))
    rows = re.findall(r"<tr>.*?</tr>", re.search(r'<table class="data people">.*?</table>', page, re.S).group(0), re.S)
    assert len(rows) == 4 and _normalized(rows[2], "bobby") == _normalized(rows[3], "nobody")  # heading, owner


# -- look-alike usernames --------------------------------------------------------------------------


LOOK_ALIKES = ["d\u0435mo", "DEMO", "\uff44\uff45\uff4d\uff4f", "dem0", "derno", "de\u200bmo", "demo\u3164"]


@pytest.mark.parametrize("name", LOOK_ALIKES)
def test_a_username_that_looks_like_another_is_refused_everywhere_accounts_are_made(app, small_survey, name, runner):
    make_user(app, "demo", PASSWORD)
    make_admin(app, "root")
    root = sign_in(app, "root", PASSWORD)
    made = root.post("/admin/users", data={"username": name})
    assert made.status_code == 400
    assert "looks too much like" in text(made) or "letters and digits" in text(made)
    [link] = shown_links(share(root, "new@example.org", slug=add_survey(app, {**SMALL_SPEC, "slug": "roots"}, "root")))
    refused = make_account(app.test_client(), link, name)
    assert refused.status_code == 400
    cli = runner.invoke(args=["create-user", name, "--password", PASSWORD])
    assert cli.exit_code != 0
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(User)) == 3  # alice, demo, root


def test_different_names_are_still_welcome_and_the_database_holds_the_rule(app, user):
    make_admin(app, "root")
    root = sign_in(app, "root", PASSWORD)
    for name in ("dema", "demos", "d.emo", "Ωmega", "josé"):
        assert root.post("/admin/users", data={"username": name}).status_code == 200, name
    with app.app_context():  # two racing requests cannot both store look-alikes: the key is unique
        db.session.add(User(username="d\u0435mos", password_hash="!"))
        with pytest.raises(IntegrityError):
            db.session.commit()
        db.session.rollback()


def test_the_skeleton_follows_unicodes_table():
    from survey.domain.accounts.confusable_table import PROTOTYPES, UNICODE_VERSION
    from survey.domain.accounts.usernames import has_invisible, skeleton, username_key

    assert UNICODE_VERSION == "17.0.0"
    table = dict(line.split(" ", 1) for line in PROTOTYPES.strip().split("\n"))
    assert table["0435"] == "0065" and table["0031"] == "006C" and table["006D"] == "0072 006E"
    assert len(table) == 6565
    # every prototype is its own skeleton (UTS #39: the mapping is idempotent)
    for target in set(table.values()):
        prototype = "".join(chr(int(c, 16)) for c in target.split())
        assert skeleton(prototype) == skeleton(skeleton(prototype))
    assert username_key("pa\u0443pa\u04cf") == username_key("paypal")
    assert has_invisible("a\u200db") and has_invisible("\u3164") and not has_invisible("josé")


def test_existing_look_alikes_keep_working_after_the_upgrade(tmp_path):
    """The migration gives each user the key; of two look-alikes made before, the older keeps it."""
    from alembic import command

    from survey.platform.schema import alembic_config

    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'old.sqlite'}",
            "SECRET_KEY": "t",
            "TESTING": True,
            "RATELIMIT_ENABLED": False,
        }
    )
    with app.app_context():
        command.upgrade(alembic_config(), "0004")
        for name in ("demo", "d\u0435mo", "other"):
            db.session.execute(
                db.text("INSERT INTO users (username, password_hash, created_on) VALUES (:n, '!', '2026-01-01')"),
                {"n": name},
            )
        db.session.commit()
        command.upgrade(alembic_config(), "head")
        keys = dict(db.session.execute(db.text("SELECT username, username_key FROM users")).all())
        db.session.remove()
        db.engine.dispose()
    assert keys["demo"] is not None and keys["other"] is not None and keys["d\u0435mo"] is None


def test_respondent_links_shown_to_organizers_use_the_public_url_not_the_host_header(tmp_path, request):
    """The survey's address and each code's link on the management pages come from PUBLIC_URL when it
    is set, whatever Host the request named."""
    from survey.domain.responses.codes import generate_codes
    from survey.domain.surveys.specs import create_survey_from_spec

    config = make_config("sqlite", tmp_path, request) | {"PUBLIC_URL": "https://surveys.example.org"}
    app = create_app(config)
    with app.app_context():
        owner = User(username="owner")
        owner.set_password("correct horse battery")
        db.session.add(owner)
        db.session.flush()
        survey = create_survey_from_spec(db.session, {**SMALL_SPEC, "access": "invitation"}, owner=owner)
        db.session.flush()
        generate_codes(db.session, survey, 1)
        db.session.commit()
    client = app.test_client()
    evil = {"Host": "evil.example.com"}  # the cookie jar keeps the session for the host it came from
    client.post("/auth/login", data={"username": "owner", "password": "correct horse battery"}, headers=evil)
    share = client.get("/surveys/small-test/share", headers=evil).get_data(as_text=True)
    assert "https://surveys.example.org/s/small-test" in share and "evil.example.com" not in share
    links = client.get("/surveys/small-test/invitations.csv", headers=evil).get_data(as_text=True)
    assert "https://surveys.example.org/s/small-test?code=" in links and "evil.example.com" not in links
