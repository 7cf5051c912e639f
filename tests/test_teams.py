"""Teams without a shell: invitations by link, the administrator's users page, password links, e-mail.

What these prove: where the administrators allow it (``allow_invitations``; tests/test_trust_accounts.py
covers the default, where they do not), an owner invites someone without an account by e-mail
address or by name; the link is e-mailed through a real SMTP server (aiosmtpd, started here) when
one is configured and shown once on the page when not (or when sending fails); whoever opens it
makes an account and finds the role waiting to be accepted; links work once, expire, die when
replaced or withdrawn, are stored only as hashes and are rate-limited; an administrator makes
accounts, disables and enables them (a disabled user is signed out at once and cannot sign in) and
sends password links; nobody else reaches any of it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re

import pytest
from sqlalchemy import select, update

from survey.domain.accounts.account_links import LIFETIMES, now
from survey.domain.models import AccountLink, LoginSession, Membership, Survey, User
from survey.platform.extensions import db

from .accounts import make_admin, make_user, sign_in
from .databases import limited_app
from .smtp import LINK, smtp_server

OWNER_PASSWORD = "correct horse battery"
NEW_PASSWORD = "a brand new password"


def shown_link(response) -> str:
    """The one link a page shows to copy (its path, for the test client)."""
    found = LINK.findall(response.get_data(as_text=True))
    assert len(found) == 1, response.get_data(as_text=True)[:3000]
    return path_of(found[0])


def path_of(url: str) -> str:
    return re.sub(r"^https?://[^/]+", "", url)


def invite(client, who: str, role: str = "researcher", slug: str = "small-test"):
    return client.post(f"/surveys/{slug}/members", data={"username": who, "role": role})


def make_account(client, link: str, username: str, password: str = NEW_PASSWORD):
    return client.post(link, data={"username": username, "password": password, "confirm": password})


def links(app) -> list[AccountLink]:
    with app.app_context():
        found = db.session.scalars(select(AccountLink).order_by(AccountLink.id)).all()
        db.session.expunge_all()
        return list(found)


def user_named(app, name: str) -> User | None:
    with app.app_context():
        user = db.session.scalar(select(User).where(User.username == name))
        db.session.expunge_all()
        return user


def allow_invitations(app, allowed: bool = True) -> None:
    """The administrators' setting: users who are not administrators may invite people to make accounts."""
    from survey.domain.accounts.site import set_members_invite_accounts

    with app.app_context():
        set_members_invite_accounts(db.session, allowed)
        db.session.commit()


# -- invitations from the sharing page -------------------------------------------------------------


def test_an_invitation_by_address_without_mail_shows_the_link_once_and_makes_an_account(app, signed_in, small_survey):
    allow_invitations(app)
    page = invite(signed_in, "Newcomer@Example.org")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "No mail server is set up" in text and "newcomer@example.org" in text
    link = shown_link(page)
    token = link.rsplit("=", 1)[1]
    [stored] = links(app)
    assert stored.purpose == "role_offer" and stored.email == "newcomer@example.org" and stored.role == "researcher"
    assert stored.token_hash == hashlib.sha256(token.encode()).hexdigest()  # only the hash is kept
    assert dt.timedelta(days=7) - dt.timedelta(minutes=1) < stored.expires_at - now() <= dt.timedelta(days=7)
    # the page lists the invitation (without its link: it is shown only once)
    share = signed_in.get("/surveys/small-test/share").get_data(as_text=True)
    assert "newcomer@example.org" in share and "invited, not yet accepted" in share and token not in share

    invitee = app.test_client()
    form = invitee.get(link)
    assert form.status_code == 200 and "Cache-Control" in form.headers and "no-store" in form.headers["Cache-Control"]
    assert 'value="newcomer"' in form.get_data(as_text=True)  # the suggested username
    assert "Small test survey" in form.get_data(as_text=True)
    done = make_account(invitee, link, "newcomer")
    assert done.status_code == 303 and done.headers["Location"].endswith("/#invitations")
    start = invitee.get("/").get_data(as_text=True)
    assert "Signed in as newcomer" in start and "Accept the role offered to you" in start
    assert "Small test survey" in start and "invites you as a researcher" in start
    with app.app_context():
        user = db.session.scalar(select(User).where(User.username == "newcomer"))
        # the link was shown to alice, not mailed: nothing proves whoever used it reads that mailbox
        assert user.email is None and not user.is_admin
        [membership] = user.memberships
        assert membership.pending and membership.role == "researcher"  # an offer, to be accepted
    assert invitee.get("/surveys/small-test/results").status_code == 404  # nothing before accepting
    assert invitee.post("/surveys/small-test/accept").status_code == 303
    assert invitee.get("/surveys/small-test/results").status_code == 200
    # the link worked once
    assert invitee.get(link).status_code == 404
    assert make_account(app.test_client(), link, "someone-else").status_code == 404
    assert user_named(app, "someone-else") is None


def test_an_invitation_by_name_suggests_a_username_and_refuses_a_taken_one_without_spending_the_link(
    app, signed_in, small_survey
):
    make_user(app, "maria.rossi")
    allow_invitations(app)
    page = invite(signed_in, "Maria Rossi", role="organizer")  # a name, not the username "maria.rossi"
    assert "no e-mail address to send it to" in page.get_data(as_text=True)
    link = shown_link(page)
    invitee = app.test_client()
    assert 'value="maria.rossi"' in invitee.get(link).get_data(as_text=True)
    taken = make_account(invitee, link, "Maria.Rossi")
    assert taken.status_code == 400 and "is taken" in taken.get_data(as_text=True)
    bad = make_account(invitee, link, "maria rossi!")
    assert bad.status_code == 400 and "letters and digits" in bad.get_data(as_text=True)
    mismatch = invitee.post(link, data={"username": "maria", "password": NEW_PASSWORD, "confirm": "other one!"})
    assert mismatch.status_code == 400 and "The two do not match" in mismatch.get_data(as_text=True)
    short = make_account(invitee, link, "maria", password="short")
    assert short.status_code == 400 and "Use 8 to 200 characters" in short.get_data(as_text=True)
    assert user_named(app, "maria") is None and not links(app)[0].used
    assert make_account(invitee, link, "maria").status_code == 303
    with app.app_context():
        user = db.session.scalar(select(User).where(User.username == "maria"))
        assert user.email is None and [(m.role, m.pending) for m in user.memberships] == [("organizer", True)]


def test_an_existing_user_is_offered_the_role_by_address_and_told_by_mail(app, signed_in, small_survey):
    with app.app_context():
        bob = User(username="bob", email="bob@example.org")
        bob.set_password(OWNER_PASSWORD)
        db.session.add(bob)
        db.session.commit()
    with smtp_server() as mailbox:
        app.config.update(mailbox.config())
        response = invite(signed_in, "BOB@example.org")
        assert response.status_code == 303
        message = signed_in.get(response.headers["Location"]).get_data(as_text=True)
        assert (
            "bob@example.org is invited as a researcher" in message and "An e-mail went to bob@example.org" in message
        )
        assert ">bob<" not in message  # the username behind the address is not shown
        [mail] = mailbox.messages
        assert mail["To"] == "bob@example.org" and "Small test survey" in mail["Subject"]
        assert "sign in: the offer waits on your start page" in mailbox.body() and not LINK.search(mailbox.body())
    [invitation] = links(app)  # the offer, naming bob's account; nothing is bob's until he accepts
    assert invitation.email == "bob@example.org" and invitation.user_id is not None
    bob_client = sign_in(app, "bob", OWNER_PASSWORD)
    assert "Small test survey" in bob_client.get("/").get_data(as_text=True)
    assert bob_client.post("/surveys/small-test/accept").status_code == 303
    with app.app_context():
        [membership] = db.session.scalars(select(Membership)).all()
        assert not membership.pending and membership.user.username == "bob"


def test_with_a_mail_server_the_invitation_is_mailed_and_not_shown(app, signed_in, small_survey):
    allow_invitations(app)
    with smtp_server() as mailbox:
        app.config.update(mailbox.config())
        page = invite(signed_in, "newcomer@example.org", role="organizer")
        text = page.get_data(as_text=True)
        assert page.status_code == 200 and "The link was e-mailed to" in text
        assert not LINK.search(text)  # the link itself is in the e-mail only
        [mail] = mailbox.messages
        assert mailbox.envelopes == [("surveys@example.org", ["newcomer@example.org"])]
        assert mail["From"] == "surveys@example.org" and "alice invites you" in mail["Subject"]
        assert "as a co-organizer" in mailbox.body() and "works once, for 7 days" in mailbox.body()
        link = path_of(mailbox.link())
    assert make_account(app.test_client(), link, "newcomer").status_code == 303
    # the link reached the address by e-mail only: the account made with it gets the address
    assert user_named(app, "newcomer").email == "newcomer@example.org"


def test_when_sending_fails_the_page_says_so_and_shows_the_link(app, signed_in, small_survey):
    from .smtp import free_port

    allow_invitations(app)
    app.config.update({"MAIL_SERVER": "127.0.0.1", "MAIL_PORT": free_port(), "MAIL_TIMEOUT": 2})  # nobody listens
    page = invite(signed_in, "newcomer@example.org")
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and "could not be sent" in text and "ConnectionRefusedError" in text
    assert make_account(app.test_client(), shown_link(page), "newcomer").status_code == 303


def test_inviting_again_replaces_the_link_and_withdrawing_kills_it(app, signed_in, small_survey):
    allow_invitations(app)
    first = shown_link(invite(signed_in, "newcomer@example.org"))
    second = shown_link(invite(signed_in, "NEWCOMER@example.org", role="organizer"))
    client = app.test_client()
    assert client.get(first).status_code == 404 and client.get(second).status_code == 200
    [live] = links(app)
    assert live.role == "organizer"
    gone = signed_in.post("/surveys/small-test/account-invitations/withdraw", data={"link_id": live.id})
    assert gone.status_code == 303
    assert client.get(second).status_code == 404 and not links(app)
    again = signed_in.post("/surveys/small-test/account-invitations/withdraw", data={"link_id": live.id})
    assert again.status_code == 404


def test_an_expired_link_is_dead_and_says_so(app, signed_in, small_survey):
    allow_invitations(app)
    link = shown_link(invite(signed_in, "late@example.org"))
    with app.app_context():
        db.session.execute(update(AccountLink).values(expires_at=now() - dt.timedelta(seconds=1)))
        db.session.commit()
    page = app.test_client().get(link)
    assert page.status_code == 404 and "does not work" in page.get_data(as_text=True)
    assert make_account(app.test_client(), link, "late").status_code == 404 and user_named(app, "late") is None
    assert "late@example.org" not in signed_in.get("/surveys/small-test/share").get_data(as_text=True)


def test_an_account_takes_up_only_the_invitation_it_was_made_with(app, signed_in, small_survey):
    from .surveys import SMALL_SPEC, add_survey

    allow_invitations(app)
    other = add_survey(app, {**SMALL_SPEC, "slug": "second", "title": "Second survey"})
    second = shown_link(invite(signed_in, "newcomer@example.org", slug=other))
    link = shown_link(invite(signed_in, "newcomer@example.org", role="organizer"))
    invitee = app.test_client()
    assert make_account(invitee, link, "newcomer").status_code == 303
    with app.app_context():
        user = db.session.scalar(select(User).where(User.username == "newcomer"))
        offered = sorted((m.survey.slug, m.role, m.pending) for m in user.memberships)
    assert offered == [("small-test", "organizer", True)]  # the other invitation stays with its own link
    # ... which the new account takes up with its own link
    assert "Accept the role as newcomer" in invitee.get(second).get_data(as_text=True)
    assert invitee.post(second, data={"take": "1"}).status_code == 303
    with app.app_context():
        user = db.session.scalar(select(User).where(User.username == "newcomer"))
        offered = sorted((m.survey.slug, m.role, m.pending) for m in user.memberships)
    assert offered == [("second", "researcher", False), ("small-test", "organizer", True)]
    assert all(link.used for link in links(app))


def test_only_people_who_may_share_can_invite(app, small_survey):
    make_user(app, "mallory")
    response = invite(sign_in(app, "mallory"), "newcomer@example.org")
    assert response.status_code == 404 and not links(app)


def test_a_signed_in_user_who_opens_an_invitation_is_warned_and_switched(app, signed_in, small_survey):
    allow_invitations(app)
    link = shown_link(invite(signed_in, "newcomer@example.org"))
    page = signed_in.get(link).get_data(as_text=True)
    assert "You are signed in as alice" in page
    assert make_account(signed_in, link, "newcomer").status_code == 303
    assert "Signed in as newcomer" in signed_in.get("/").get_data(as_text=True)
    with app.app_context():  # alice's session on this browser ended on the server too
        alice = db.session.scalar(select(User).where(User.username == "alice"))
        assert db.session.scalars(select(LoginSession).where(LoginSession.user_id == alice.id)).all() == []


# -- the administrator's users page ----------------------------------------------------------------


def test_an_administrator_makes_an_account_whose_owner_sets_the_password(app, small_survey):
    make_admin(app, "root")
    admin = sign_in(app, "root", OWNER_PASSWORD)
    assert "/admin/users" in admin.get("/").get_data(as_text=True)  # the Users link in the header
    page = admin.post("/admin/users", data={"username": "carol", "email": "Carol@Example.org"})
    assert page.status_code == 200 and "No mail server is set up" in page.get_data(as_text=True)
    link = shown_link(page)
    carol = user_named(app, "carol")
    assert carol.email == "carol@example.org" and not carol.has_password and not carol.is_admin
    [stored] = links(app)
    assert stored.purpose == "setup" and stored.expires_at - now() > dt.timedelta(days=6)
    # no password works before the link is used
    failed = app.test_client().post("/auth/login", data={"username": "carol", "password": "!"})
    assert failed.status_code in (400, 401)
    owner = app.test_client()
    form = owner.get(link).get_data(as_text=True)
    assert "Choose your password" in form and "carol" in form
    assert owner.post(link, data={"password": NEW_PASSWORD, "confirm": NEW_PASSWORD}).status_code == 303
    assert "Signed in as carol" in owner.get("/").get_data(as_text=True)
    assert owner.get(link).status_code == 404
    sign_in(app, "carol", NEW_PASSWORD)


@pytest.mark.parametrize(
    "data, message",
    [
        ({"username": "alice"}, "is taken"),
        ({"username": "ALICE"}, "is taken"),
        ({"username": "two words"}, "letters and digits"),
        ({"username": ""}, "Give a username."),
        ({"username": "dan", "email": "not-an-address"}, "This is not an e-mail address"),
        ({"username": "dan", "email": "root@example.org"}, "Another user has the address"),
    ],
)
def test_refused_accounts_are_explained_and_nothing_is_made(app, user, data, message):
    make_admin(app, "root", email="root@example.org")
    response = sign_in(app, "root", OWNER_PASSWORD).post("/admin/users", data=data)
    assert response.status_code == 400 and message in response.get_data(as_text=True)
    assert 'aria-invalid="true"' in response.get_data(as_text=True)
    assert user_named(app, "dan") is None and not links(app)


def test_a_disabled_user_is_signed_out_at_once_and_cannot_sign_in_until_enabled(app, user, small_survey):
    make_admin(app, "root")
    admin = sign_in(app, "root", OWNER_PASSWORD)
    alice = sign_in(app, "alice", OWNER_PASSWORD)
    reset = shown_link(admin.post("/admin/users/password-link", data={"user_id": user}))
    assert admin.post("/admin/users/disable", data={"user_id": user}).status_code == 303
    assert alice.get("/surveys/small-test/share").status_code == 302  # her session ended
    refused = app.test_client().post("/auth/login", data={"username": "alice", "password": OWNER_PASSWORD})
    assert refused.status_code == 403 and "disabled" in refused.get_data(as_text=True)
    assert app.test_client().get(reset).status_code == 404  # and her password link died
    wrong = app.test_client().post("/auth/login", data={"username": "alice", "password": "not hers at all"})
    assert wrong.status_code == 401 and "disabled" not in wrong.get_data(as_text=True)  # only with the password
    assert "disabled" in admin.get("/admin/users").get_data(as_text=True)
    assert admin.post("/admin/users/enable", data={"user_id": user}).status_code == 303
    sign_in(app, "alice", OWNER_PASSWORD)
    with app.app_context():  # nothing of hers was deleted
        assert db.session.scalar(select(Survey)).owner_id == user


def test_an_administrator_cannot_lock_themselves_out(app):
    root = make_admin(app, "root")
    admin = sign_in(app, "root", OWNER_PASSWORD)
    for action in ("disable", "remove-admin"):
        response = admin.post(f"/admin/users/{action}", data={"user_id": root})
        assert response.status_code == 409, action
        assert "your own" in response.get_data(as_text=True)
    me = user_named(app, "root")
    assert me.is_admin and not me.disabled
    assert admin.post("/admin/users/disable", data={"user_id": 999}).status_code == 404


def test_administrators_are_named_and_unnamed_by_administrators(app, user):
    make_admin(app, "root")
    admin = sign_in(app, "root", OWNER_PASSWORD)
    alice = sign_in(app, "alice", OWNER_PASSWORD)
    assert alice.get("/admin/users").status_code == 404
    assert admin.post("/admin/users/make-admin", data={"user_id": user}).status_code == 303
    assert alice.get("/admin/users").status_code == 200
    assert admin.post("/admin/users/remove-admin", data={"user_id": user}).status_code == 303
    assert alice.get("/admin/users").status_code == 404


def test_a_reset_link_lasts_an_hour_changes_the_password_and_ends_every_session(app, user):
    make_admin(app, "root")
    admin = sign_in(app, "root", OWNER_PASSWORD)
    elsewhere = sign_in(app, "alice", OWNER_PASSWORD)
    first = shown_link(admin.post("/admin/users/password-link", data={"user_id": user}))
    page = admin.post("/admin/users/password-link", data={"user_id": user})
    link = shown_link(page)
    assert "for 1 hour" in page.get_data(as_text=True)
    [stored] = links(app)  # the second link replaced the first
    assert stored.purpose == "reset" and stored.expires_at - now() <= LIFETIMES["reset"]
    assert app.test_client().get(first).status_code == 404
    assert elsewhere.get("/account").status_code == 200  # the password holds until the link is used
    client = app.test_client()
    assert client.post(link, data={"password": NEW_PASSWORD, "confirm": NEW_PASSWORD}).status_code == 303
    assert elsewhere.get("/account").status_code == 302  # signed out everywhere else
    assert client.get("/account").status_code == 200  # and in here
    old = app.test_client().post("/auth/login", data={"username": "alice", "password": OWNER_PASSWORD})
    assert old.status_code == 401
    sign_in(app, "alice", NEW_PASSWORD)


def test_a_password_link_is_mailed_to_a_user_with_an_address(app):
    make_admin(app, "root")
    admin = sign_in(app, "root", OWNER_PASSWORD)
    with smtp_server() as mailbox:
        app.config.update(mailbox.config())
        page = admin.post("/admin/users", data={"username": "erin", "email": "erin@example.org"})
        text = page.get_data(as_text=True)
        assert "The link was e-mailed to" in text and not LINK.search(text)
        assert "made an account for you" in mailbox.body() and "erin" in mailbox.body()
        link = path_of(mailbox.link())
    client = app.test_client()
    assert client.post(link, data={"password": NEW_PASSWORD, "confirm": NEW_PASSWORD}).status_code == 303


# -- limits, the CLI, settings ---------------------------------------------------------------------


def test_link_pages_are_rate_limited_per_address_for_every_method(tmp_path, sqlite_template):
    app = limited_app(tmp_path, sqlite_template, TOKEN_RATE_LIMIT="3 per minute", WTF_CSRF_ENABLED=False)
    client = app.test_client()
    statuses = [client.get(f"/auth/link?token=guess-{i}").status_code for i in range(3)]
    assert statuses == [404, 404, 404]
    assert client.get("/auth/link?token=guess-4").status_code == 429
    assert client.post("/auth/link?token=guess-5", data={"password": "x"}).status_code == 429
    with app.app_context():
        db.engine.dispose()


def test_the_first_administrator_comes_from_one_command(app, runner):
    made = runner.invoke(args=["create-user", "root", "--password", OWNER_PASSWORD, "--admin", "--email", "R@x.org"])
    assert made.exit_code == 0 and "Administrator 'root' created" in made.output
    root = user_named(app, "root")
    assert root.is_admin and root.email == "r@x.org"
    assert runner.invoke(args=["create-user", "bob", "--password", OWNER_PASSWORD]).exit_code == 0
    assert not user_named(app, "bob").is_admin
    assert runner.invoke(args=["make-admin", "bob"]).exit_code == 0 and user_named(app, "bob").is_admin
    assert runner.invoke(args=["make-admin", "nobody"]).exit_code != 0
    bad = runner.invoke(args=["create-user", "two words", "--password", OWNER_PASSWORD])
    assert bad.exit_code != 0 and user_named(app, "two words") is None


def test_the_demo_user_is_an_administrator(app):
    from survey.domain.surveys.demo import DEMO_USER, ensure_demo_user

    with app.app_context():
        ensure_demo_user(db.session)
        db.session.commit()
    assert user_named(app, DEMO_USER).is_admin


def test_mail_settings_come_from_the_environment(monkeypatch):
    from survey.platform.config import from_environment

    for key, value in {
        "MAIL_SERVER": "smtp.example.org",
        "MAIL_PORT": "587",
        "MAIL_USE_TLS": "true",
        "MAIL_USERNAME": "surveys",
        "MAIL_PASSWORD": "secret",
        "MAIL_FROM": "Surveys <surveys@example.org>",
    }.items():
        monkeypatch.setenv(key, value)
    values = from_environment()
    assert values["MAIL_SERVER"] == "smtp.example.org" and values["MAIL_PORT"] == 587
    assert values["MAIL_USE_TLS"] is True and values["MAIL_USERNAME"] == "surveys"
    assert values["MAIL_FROM"] == "Surveys <surveys@example.org>"
    monkeypatch.setenv("MAIL_USE_TLS", "maybe")
    with pytest.raises(RuntimeError, match="MAIL_USE_TLS"):
        from_environment()


def test_the_token_of_a_link_is_never_logged():
    """It travels in the query string, which the request logs drop (survey.platform.logs; gunicorn
    logs %(U)s, the path without its query)."""
    from survey.platform.logs import scrub

    line = '127.0.0.1 - - [01/Mar/2026 10:00:00] "POST /auth/link?token=SECRET-token_123 HTTP/1.1" 303 -'
    assert "SECRET" not in scrub(line) and "/auth/link" in scrub(line)


def test_an_account_waiting_for_its_password_costs_the_same_hashing_as_any_wrong_password(
    app, client, user, monkeypatch
):
    """Its stored hash is no hash at all; checking a password against it must not be quicker than
    against a real one, or the time would tell which accounts wait for a password."""
    import werkzeug.security

    with app.app_context():
        db.session.add(User(username="waiting", password_hash="!"))
        db.session.commit()
    calls: list[str] = []
    real = werkzeug.security._hash_internal

    def counting(method: str, salt: str, password: str):
        calls.append(method)
        return real(method, salt, password)

    client.post("/auth/login", data={"username": "nobody-warm-up", "password": "x" * 12})
    monkeypatch.setattr(werkzeug.security, "_hash_internal", counting)
    assert client.post("/auth/login", data={"username": "alice", "password": "wrong password"}).status_code == 401
    wrong_password = list(calls)
    calls.clear()
    for attempt in ("wrong password", "!", ""):
        response = client.post("/auth/login", data={"username": "waiting", "password": attempt})
        assert response.status_code in (400, 401)
    assert calls == wrong_password * 2  # the empty password is refused by the form before any check
