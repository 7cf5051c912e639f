"""Personal API tokens (survey.domain.accounts.api_tokens, survey.web.auth.bearer).

A token is made on the account page, shown once and stored as a hash; a request with
``Authorization: Bearer`` on the researcher's read endpoints acts as its user for that request only,
within its scope and surveys and the user's role of the moment; a bad token is a 401 problem; the
token is rate-limited and never logged.
"""

from __future__ import annotations

import datetime as dt
import http.client
import logging
import re

import pytest
from sqlalchemy import select, text, update

from survey.domain.accounts.api_tokens import PREFIX, authenticate, create_token
from survey.domain.accounts.users import set_disabled
from survey.domain.errors import DomainError
from survey.domain.models import API_SCOPES, ApiToken, Membership, Survey, User, today
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform import gunicorn_conf
from survey.platform.extensions import db
from survey.platform.schema import upgrade_database
from survey.web.auth.bearer import scope_for

from .accounts import PASSWORD, assert_problem, bearer, get, make_admin, make_token, make_user, sign_in
from .databases import limited_app
from .live import log_lines, serve
from .surveys import GOOD, SMALL_SPEC, add_survey

QUESTION_KEY = "often"
#: Query strings that routes need to mean anything.
QUERIES = {"results.anytime_api": "?question=drugs&threshold=0.1"}


def token_rows(app) -> list[ApiToken]:
    with app.app_context():
        rows = list(db.session.scalars(select(ApiToken)))
        db.session.expunge_all()
        return rows


def bearer_routes(app) -> list[tuple[str, str]]:
    """Every (endpoint, path) that takes a token, filled for the small survey."""
    found = []
    for rule in app.url_map.iter_rules():
        if scope_for(rule.endpoint, "GET"):
            values = {"slug": "small-test", "key": QUESTION_KEY}
            path = rule.build({k: values[k] for k in rule.arguments})[1] + QUERIES.get(rule.endpoint, "")
            found.append((rule.endpoint, path))
    assert len(found) >= 10
    return sorted(found)


def estimates(client, token: str, slug: str = "small-test"):
    return client.get(f"/api/surveys/{slug}/estimates", headers=bearer(token))


# -- made once, stored hashed ------------------------------------------------------------------------


def test_a_token_made_on_the_account_page_is_shown_once_and_stored_as_a_hash(app, signed_in, small_survey):
    response = signed_in.post("/account/tokens", data={"name": "laptop R", "scope": "results", "days": "30"})
    assert response.status_code == 200
    assert "no-store" in response.headers["Cache-Control"]
    page = response.get_data(as_text=True)
    shown = re.findall(r"<code class=\"token\" data-token>([^<]+)</code>", page)
    assert len(shown) == 1 and shown[0].startswith(PREFIX) and len(shown[0]) > 40
    token = shown[0]
    assert "Set-Cookie" not in response.headers or token not in response.headers["Set-Cookie"]
    # the list shows it with its name, and never the token again
    listing = signed_in.get("/account").get_data(as_text=True)
    assert "laptop R" in listing and token not in listing and "never" in listing
    # no column of any row holds the token, nor any large piece of it
    (row,) = token_rows(app)
    with app.app_context():
        stored = db.session.execute(text("SELECT * FROM api_tokens")).one()
    assert token not in " ".join(map(str, stored)) and token[len(PREFIX) :][:16] not in " ".join(map(str, stored))
    assert row.token_hash != token and len(row.token_hash) == 64
    assert (row.name, row.scope, row.restricted, row.revoked) == ("laptop R", "results", False, False)
    assert row.expires_on == today() + dt.timedelta(days=30)
    assert estimates(app.test_client(), token).status_code == 200


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"name": "", "scope": "results", "days": "30"}, "name"),
        ({"name": "x", "scope": "everything", "days": "30"}, "scope"),
        ({"name": "x", "scope": "results", "days": "3650"}, "days"),
    ],
)
def test_the_form_refuses_a_bad_token_and_makes_none(app, signed_in, small_survey, data, field):
    response = signed_in.post("/account/tokens", data=data)
    assert response.status_code == 400
    assert PREFIX not in response.get_data(as_text=True)
    assert token_rows(app) == []


def test_the_domain_refuses_bad_values_with_stable_codes(app, user, small_survey):
    with app.app_context():
        alice = db.session.get(User, user)
        for args, code in [
            (("", "results", 30), "text.required"),
            (("x" * 81, "results", 30), "text.too_long"),
            (("x", "admin", 30), "token.scope_unknown"),
            (("x", "results", 0), "token.expiry_out_of_range"),
            (("x", "results", 366), "token.expiry_out_of_range"),
        ]:
            with pytest.raises(DomainError) as refused:
                create_token(db.session, alice, *args)
            assert refused.value.code == code


def test_only_surveys_the_user_can_see_may_be_chosen(app, signed_in, small_survey, bob):
    other = add_survey(app, {**SMALL_SPEC, "slug": "bobs-survey", "title": "Bob's"}, owner="bob")
    with app.app_context():
        other_id = db.session.scalar(select(Survey.id).where(Survey.slug == other))
    page = signed_in.get("/account").get_data(as_text=True)
    assert "Small test survey" in page and "Bob&#39;s" not in page
    response = signed_in.post(
        "/account/tokens", data={"name": "x", "scope": "results", "days": "30", "surveys": [str(other_id)]}
    )
    assert response.status_code == 400
    assert "choose among the surveys you can see" in response.get_data(as_text=True)
    assert token_rows(app) == []


def test_last_use_is_recorded_as_a_day(app, client, user, small_survey):
    token = make_token(app, "alice")
    assert token_rows(app)[0].last_used_on is None
    assert estimates(client, token).status_code == 200
    assert token_rows(app)[0].last_used_on == today()
    with app.app_context():
        db.session.execute(update(ApiToken).values(last_used_on=today() - dt.timedelta(days=3)))
        db.session.commit()
    assert estimates(client, token).status_code == 200
    assert token_rows(app)[0].last_used_on == today()


# -- refused tokens ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("", "token.unknown"),
        ("nonsense", "token.unknown"),
        (PREFIX + "A" * 43, "token.unknown"),
        (PREFIX + "A" * 500, "token.unknown"),
    ],
)
def test_an_unknown_token_is_a_401_problem(client, user, small_survey, value, code):
    response = client.get("/api/surveys/small-test/estimates", headers={"Authorization": f"Bearer {value}"})
    assert_problem(response, 401, code)
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_an_expired_token_is_refused(app, client, user, small_survey):
    token = make_token(app, "alice", days=1)
    assert estimates(client, token).status_code == 200
    with app.app_context():
        db.session.execute(update(ApiToken).values(expires_on=today()))
        db.session.commit()
    assert estimates(client, token).status_code == 200  # its last day is still its own
    with app.app_context():
        db.session.execute(update(ApiToken).values(expires_on=today() - dt.timedelta(days=1)))
        db.session.commit()
    assert_problem(estimates(client, token), 401, "token.expired")


def test_a_revoked_token_is_refused_and_only_its_owner_may_revoke_it(app, client, user, small_survey, bob):
    token = make_token(app, "alice")
    (row,) = token_rows(app)
    # someone else cannot revoke it (404, as if there were no such token)
    assert sign_in(app, "bob").post("/account/tokens/revoke", data={"token_id": row.id}).status_code == 404
    assert estimates(client, token).status_code == 200
    alice = sign_in(app, "alice")
    response = alice.post("/account/tokens/revoke", data={"token_id": row.id})
    assert response.status_code == 303
    assert_problem(estimates(client, token), 401, "token.revoked")
    assert "revoked" in alice.get("/account").get_data(as_text=True)


def test_a_disabled_users_tokens_die_and_stay_dead_when_enabled_again(app, client, user, small_survey):
    admin = make_admin(app, "root")
    token = make_token(app, "alice")
    assert estimates(client, token).status_code == 200
    with app.app_context():
        db.session.execute(update(User).where(User.id == user).values(disabled=True))
        db.session.commit()
    assert_problem(estimates(client, token), 401, "token.user_disabled")  # even before the revocation
    with app.app_context():
        db.session.execute(update(User).where(User.id == user).values(disabled=False))
        actor = db.session.get(User, admin)
        set_disabled(db.session, actor, user, True)
        db.session.commit()
        set_disabled(db.session, actor, user, False)
        db.session.commit()
    assert_problem(estimates(client, token), 401, "token.revoked")


def test_a_deleted_users_tokens_go_with_it(app, user, small_survey):
    make_token(app, "alice")
    with app.app_context():
        db.session.execute(update(Survey).values(owner_id=None))
        db.session.delete(db.session.get(User, user))
        db.session.commit()
    assert token_rows(app) == []


def test_authenticate_gives_the_user_and_the_limits(app, user, small_survey):
    token = make_token(app, "alice", slugs=["small-test"])
    with app.app_context():
        grant = authenticate(db.session, token)
        survey = db.session.scalar(select(Survey))
        assert grant.user.id == user and grant.scope == "results" and grant.survey_ids == {survey.id}
        assert grant.reaches(survey)
        db.session.rollback()


# -- what a token reaches ----------------------------------------------------------------------------


def test_a_token_reaches_only_its_surveys(app, client, user, small_survey):
    add_survey(app, {**SMALL_SPEC, "slug": "second-survey"}, owner="alice")
    token = make_token(app, "alice", slugs=["second-survey"])
    assert estimates(client, token, "second-survey").status_code == 200
    response = estimates(client, token, "small-test")
    assert_problem(response, 404, "http.404")
    assert "small-test" not in response.get_data(as_text=True)
    assert get(client, "/surveys/small-test/responses.csv", token).status_code == 404
    # a restricted token whose surveys are all deleted reaches none, not all
    with app.app_context():
        db.session.delete(db.session.scalar(select(Survey).where(Survey.slug == "second-survey")))
        db.session.commit()
    assert token_rows(app)[0].restricted
    assert estimates(client, token, "small-test").status_code == 404


def test_a_role_removed_is_a_right_removed(app, client, small_survey, bob):
    with app.app_context():
        survey = db.session.scalar(select(Survey))
        survey.memberships.append(Membership(user_id=bob, role="researcher"))
        db.session.commit()
    token = make_token(app, "bob")
    assert estimates(client, token).status_code == 200
    with app.app_context():
        db.session.execute(Membership.__table__.delete())
        db.session.commit()
    assert estimates(client, token).status_code == 404


def test_a_token_never_reaches_pages_forms_or_changes(app, client, user, small_survey):
    token = make_token(app, "alice")
    for method, path in [
        ("GET", "/"),
        ("GET", "/surveys/small-test/results"),
        ("GET", "/account"),
        ("POST", "/account/tokens"),
        ("GET", "/surveys/small-test/manage"),
        ("POST", "/surveys/small-test/close"),
    ]:
        response = client.open(path, method=method, headers=bearer(token), data={"name": "x", "scope": "results"})
        assert_problem(response, 401, "token.not_here")
    assert len(token_rows(app)) == 1
    with app.app_context():
        assert db.session.scalar(select(Survey.status)) == "open"


def test_a_bearer_request_makes_no_session_and_ignores_the_cookie(app, small_survey, user, bob):
    token = make_token(app, "bob")  # bob has no role on alice's survey
    alice = sign_in(app, "alice")
    assert alice.get("/api/surveys/small-test/estimates").status_code == 200
    # with bob's token, alice's cookie does not count: bob it is
    assert alice.get("/api/surveys/small-test/estimates", headers=bearer(token)).status_code == 404
    fresh = app.test_client()
    response = fresh.get("/api/surveys/small-test/estimates", headers=bearer(make_token(app, "alice")))
    assert response.status_code == 200
    assert "Set-Cookie" not in response.headers
    assert fresh.get_cookie("session") is None
    assert fresh.get("/api/surveys/small-test/estimates").status_code == 401  # nothing carried over


# -- the access-control matrix -----------------------------------------------------------------------


def test_every_results_endpoint_is_a_page_or_takes_a_token(app):
    """A new endpoint of the results blueprint takes a results token unless it is listed as a page."""
    endpoints = {rule.endpoint for rule in app.url_map.iter_rules() if rule.endpoint.startswith("results.")}
    assert {e for e, _ in bearer_routes(app)} == {e for e in endpoints if scope_for(e, "GET")}
    for endpoint in endpoints:
        assert scope_for(endpoint, "POST") is None
    assert {e for e in endpoints if not scope_for(e, "GET")} == {
        "results.index",
        "results.survey",
        "results.compare_page",
        "results.regression_page",
    }


ROLES = ["owner", "organizer", "researcher", "pending researcher", "none"]


@pytest.mark.parametrize("role", ROLES)
def test_access_matrix_over_the_bearer_routes(app, client, small_survey, role):
    """For every bearer route: anonymous and bad tokens are 401, a token of another scope 403, and a
    results token answers as its user's role does (200, or 409 for an analysis before any answer;
    404 without a role)."""
    make_user(app, "bob")
    with app.app_context():
        survey = db.session.scalar(select(Survey))
        bob = db.session.scalar(select(User).where(User.username == "bob"))
        if role == "owner":
            survey.owner_id = bob.id
        elif role != "none":
            survey.memberships.append(
                Membership(user_id=bob.id, role=role.split()[-1], pending=role.startswith("pending"))
            )
        db.session.commit()
    tokens = {scope: make_token(app, "bob", scope) for scope in API_SCOPES}
    for endpoint, path in bearer_routes(app):
        where = f"{path} ({endpoint}) as {role}"
        anonymous = get(client, path)
        assert anonymous.status_code == (401 if path.startswith("/api/") else 302), where
        assert_problem(get(client, path, PREFIX + "x" * 43), 401, "token.unknown")
        for scope in ("manage", "imports"):
            assert_problem(get(client, path, tokens[scope]), 403, "token.scope")
        response = get(client, path, tokens["results"])
        if role in ("owner", "organizer", "researcher"):
            assert response.status_code in (200, 409), where
        else:
            assert response.status_code == 404, where
            assert "small-test" not in response.get_data(as_text=True), where


# -- rate limits -------------------------------------------------------------------------------------


def test_a_token_is_rate_limited_per_token_and_bad_tokens_per_address(tmp_path, sqlite_template):
    app = limited_app(tmp_path, sqlite_template, API_TOKEN_RATE_LIMIT="3 per minute", TOKEN_RATE_LIMIT="2 per minute")
    make_user(app, "alice")
    with app.app_context():
        db.session.execute(update(Survey).values(owner_id=db.session.scalar(select(User.id))))
        db.session.commit()
    first, second = make_token(app, "alice"), make_token(app, "alice")
    client = app.test_client()
    assert [estimates(client, first).status_code for _ in range(4)] == [200, 200, 200, 429]
    assert_problem(client.get("/surveys/small-test/estimates.csv", headers=bearer(first)), 429, "http.429")
    assert estimates(client, second).status_code == 200  # counted per token
    assert [estimates(client, PREFIX + "x" * 43).status_code for _ in range(3)] == [401, 401, 429]
    # past the refusals' budget an address tries no token at all (a 429 tells nothing of the token) ...
    assert estimates(client, second).status_code == 429
    # ... while another address goes on
    elsewhere = app.test_client()
    elsewhere.environ_base["REMOTE_ADDR"] = "192.0.2.7"
    assert estimates(elsewhere, second).status_code == 200


# -- never logged ------------------------------------------------------------------------------------


def test_the_token_never_appears_in_the_logs(tmp_path):
    app = create_logged_app(tmp_path)
    token = make_token(app, "alice")
    revoked = make_token(app, "alice")
    with app.app_context():
        db.session.execute(update(ApiToken).where(ApiToken.id == 2).values(revoked=True))
        db.session.commit()
    logging.getLogger("werkzeug").setLevel(logging.DEBUG)
    with log_lines("", logging.DEBUG) as lines, serve(app) as port:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        for value, status in [(token, 200), (revoked, 401), (token + "x", 401)]:
            for path in (
                "/api/surveys/small-test/estimates",
                "/api/v1/surveys/small-test/estimates",
                "/api/v1/surveys/small-test/responses.csv",
                "/api/v1/surveys",
                "/surveys/small-test/responses.csv",
                "/account",
            ):
                conn.request("GET", path, headers=bearer(value))
                response = conn.getresponse()
                body = response.read().decode()
                assert value not in body
                if path.endswith("estimates"):
                    assert response.status == status, body
            # the one writing route (imports): refused for this token's scope, logged, no token in it
            conn.request(
                "POST",
                "/api/v1/surveys/small-test/imports",
                body=b"[]",
                headers={**bearer(value), "Content-Type": "application/json"},
            )
            response = conn.getresponse()
            assert response.status in (401, 403) and value not in response.read().decode()
        conn.close()
    logged = "\n".join(lines)
    # the requests were logged ...
    assert "/api/surveys/small-test/estimates" in logged and "/api/v1/surveys/small-test/estimates" in logged
    assert "/api/v1/surveys/small-test/imports" in logged
    for value in (token, revoked):
        assert value not in logged and value[len(PREFIX) :][:12] not in logged  # ... without the token
    # and gunicorn's access log, in production, writes no request header (``%({name}i)s``)
    assert "}i" not in gunicorn_conf.access_log_format and "%(a)s" not in gunicorn_conf.access_log_format


def create_logged_app(tmp_path):
    from survey import create_app

    app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'logs.sqlite'}", "RATELIMIT_ENABLED": False})
    with app.app_context():
        upgrade_database()
        db.session.add(User(username="alice", password_hash="!"))
        db.session.flush()
        create_survey_from_spec(db.session, SMALL_SPEC, owner=db.session.scalar(select(User)))
        db.session.commit()
    assert GOOD  # the survey is the small one the other tests answer
    return app


def test_the_token_forms_need_a_csrf_token(csrf_app):
    make_user(csrf_app, "alice")
    client = csrf_app.test_client()
    page = client.get("/auth/login").get_data(as_text=True)
    login_token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    signed = client.post("/auth/login", data={"username": "alice", "password": PASSWORD, "csrf_token": login_token})
    assert signed.status_code == 302
    data = {"name": "x", "scope": "results", "days": "30"}
    assert client.post("/account/tokens", data=data).status_code == 400
    assert token_rows(csrf_app) == []
    account = client.get("/account").get_data(as_text=True)
    form_token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', account).group(1)
    response = client.post("/account/tokens", data={**data, "csrf_token": form_token})
    assert response.status_code == 200 and PREFIX in response.get_data(as_text=True)
    (row,) = token_rows(csrf_app)
    assert client.post("/account/tokens/revoke", data={"token_id": row.id}).status_code == 400
    assert not token_rows(csrf_app)[0].revoked
