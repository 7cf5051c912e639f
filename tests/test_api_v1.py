"""/api/v1 (survey.web.api): who may read what, one error shape, and the same numbers as the pages.

The access-control matrix runs over every route of the blueprint, taken from the URL map (a route
added later is in it without anyone listing it): anonymous, a refused token, a token of each scope
and a signed-in browser, for each role a user can have on the survey.
"""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from survey.domain.accounts.access import NEEDS
from survey.domain.accounts.api_tokens import PREFIX
from survey.domain.models import API_SCOPES, Membership, Submission, Survey, User
from survey.platform.extensions import db
from survey.web.api.description import description
from survey.web.auth.bearer import scope_for

from .accounts import assert_problem, get, make_token, make_user, sign_in
from .databases import limited_app
from .surveys import GOOD, SMALL_SPEC, SUBMISSIONS, add_survey, submit_answers

SLUG = "small-test"
#: Query strings that make each analysis mean something on the small survey.
QUERIES = {
    "api.anytime_test": "?question=drugs&threshold=0.1",
    "api.comparison": "?question=drugs&by=age",
    "api.logistic_regression": "?outcome=drugs&covariates=age",
}
#: The endpoints that are public: no token is read, nobody needs to sign in.
PUBLIC = {"api.openapi", "api.docs", "api.submit"}
ROLES = ["owner", "organizer", "researcher", "pending researcher", "none"]


def v1_routes(app) -> list[tuple[str, str, frozenset[str]]]:
    """Every (endpoint, path, scopes) of /api/v1 that takes a token, filled for the small survey."""
    found = []
    for rule in app.url_map.iter_rules():
        if not rule.endpoint.startswith("api.") or rule.endpoint == "api.imports":
            continue  # the one upload (POST): tests/test_imports.py
        scopes = scope_for(rule.endpoint, "GET", app.view_functions[rule.endpoint])
        if rule.endpoint in PUBLIC:
            assert scopes == frozenset() or "GET" not in rule.methods, rule.endpoint
            continue
        assert scopes, f"{rule.endpoint} takes no token and is not listed as public"
        path = rule.build({k: SLUG for k in rule.arguments})[1] + QUERIES.get(rule.endpoint, "")
        found.append((rule.endpoint, path, scopes))
    assert len(found) >= 11
    return sorted(found)


def need_of(endpoint: str, scope: str | None) -> str:
    """What a role must allow for the survey to be reached: editing for the spec (and for a
    ``manage`` token's list), reading results otherwise."""
    return "edit" if endpoint == "api.spec" or scope == "manage" else "results"


def give_role(app, username: str, role: str) -> None:
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == SLUG))
        user = db.session.scalar(select(User).where(User.username == username))
        if role == "owner":
            survey.owner_id = user.id
        elif role != "none":
            pending = role.startswith("pending")
            survey.memberships.append(Membership(user_id=user.id, role=role.split()[-1], pending=pending))
        db.session.commit()


@pytest.fixture
def answered(app, client, small_survey):
    submit_answers(client, SLUG, SUBMISSIONS)
    return SLUG


def expect(response, endpoint: str, role: str, need: str, where: str) -> None:
    """200 with the survey (listed, for the list) when ``role`` allows ``need``; else a 404 that
    names nothing (or a list without the survey)."""
    allowed = role.split()[0] in NEEDS[need] and not role.startswith("pending")
    if endpoint == "api.surveys":
        assert response.status_code == 200, where
        assert (SLUG in [s["slug"] for s in response.json["surveys"]]) == allowed, where
    elif allowed:
        assert response.status_code == 200, (where, response.get_data(as_text=True)[:300])
    else:
        assert_problem(response, 404, "http.404")
        assert SLUG not in response.get_data(as_text=True), where


@pytest.mark.parametrize("role", ROLES)
def test_access_matrix_over_every_v1_route(app, answered, role):
    make_user(app, "bob")
    give_role(app, "bob", role)
    tokens = {scope: make_token(app, "bob", scope) for scope in API_SCOPES}
    client = app.test_client()
    browser = sign_in(app, "bob")
    for endpoint, path, scopes in v1_routes(app):
        where = f"{path} ({endpoint}) as {role}"
        anonymous = get(client, path)
        assert_problem(anonymous, 401, "api.unauthenticated")
        assert anonymous.headers["WWW-Authenticate"].startswith("Bearer"), where
        assert_problem(get(client, path, PREFIX + "x" * 43), 401, "token.unknown")
        for scope, token in tokens.items():
            response = get(client, path, token)
            if scope in scopes:
                expect(response, endpoint, role, need_of(endpoint, scope), f"{where} with a {scope} token")
            else:
                assert_problem(response, 403, "token.scope")
        expect(get(browser, path), endpoint, role, need_of(endpoint, None), f"{where} signed in")


def test_the_scopes_each_route_takes(app):
    """``results`` reads results and exports; ``manage`` lists and reads specs; ``imports`` uploads
    responses collected elsewhere (POST, and nothing else)."""
    scopes = {endpoint: scopes for endpoint, _, scopes in v1_routes(app)}
    assert scopes.pop("api.surveys") == {"results", "manage"}
    assert scopes.pop("api.spec") == {"manage"}
    assert set(scopes.values()) == {frozenset({"results"})}
    assert not any("imports" in s for _, _, s in v1_routes(app))
    upload = app.view_functions["api.imports"]
    assert scope_for("api.imports", "POST", upload) == {"imports"}
    assert scope_for("api.imports", "GET", upload) is None


def test_a_token_limited_to_some_surveys_lists_and_reaches_only_those(app, client, user, small_survey):
    add_survey(app, {**SMALL_SPEC, "slug": "second-survey", "title": "Second"}, owner="alice")
    limited = make_token(app, "alice", slugs=["second-survey"])
    listed = get(client, "/api/v1/surveys", limited).json["surveys"]
    assert [s["slug"] for s in listed] == ["second-survey"]
    assert listed[0]["role"] == "owner" and listed[0]["links"]["spec"] == "/api/v1/surveys/second-survey/spec"
    assert get(client, "/api/v1/surveys/second-survey/estimates", limited).status_code == 200
    assert_problem(get(client, "/api/v1/surveys/small-test/estimates", limited), 404, "http.404")
    everything = make_token(app, "alice")
    assert {s["slug"] for s in get(client, "/api/v1/surveys", everything).json["surveys"]} == {SLUG, "second-survey"}


def test_a_role_removed_is_a_right_removed(app, client, answered, bob):
    give_role(app, "bob", "researcher")
    token = make_token(app, "bob")
    assert get(client, "/api/v1/surveys/small-test/estimates", token).status_code == 200
    with app.app_context():
        db.session.execute(Membership.__table__.delete())
        db.session.commit()
    assert get(client, "/api/v1/surveys/small-test/estimates", token).status_code == 404
    assert get(client, "/api/v1/surveys", token).json == {"surveys": []}


# -- the same numbers as the pages -----------------------------------------------------------------

#: Each v1 address and the older address of the results pages that must answer the same.
SAME_AS = [
    ("/api/v1/surveys/small-test/estimates", "/api/surveys/small-test/estimates"),
    ("/api/v1/surveys/small-test/live", "/api/surveys/small-test/live"),
    (
        "/api/v1/surveys/small-test/anytime-test?question=often&threshold=0.2&category=2&alternative=less",
        "/api/surveys/small-test/anytime-test?question=often&threshold=0.2&category=2&alternative=less",
    ),
    (
        "/api/v1/surveys/small-test/compare?question=drugs&by=age",
        "/api/surveys/small-test/compare?question=drugs&by=age",
    ),
    (
        "/api/v1/surveys/small-test/compare?question=drugs&by=mirror",
        "/api/surveys/small-test/compare?question=drugs&by=mirror",
    ),
    (
        "/api/v1/surveys/small-test/compare?question=drugs&by=week",
        "/api/surveys/small-test/compare?question=drugs&by=week",
    ),
    (
        "/api/v1/surveys/small-test/regression?outcome=drugs&covariates=age",
        "/api/surveys/small-test/regression?outcome=drugs&covariates=age",
    ),
    ("/api/v1/surveys/small-test/codebook", "/surveys/small-test/codebook.json"),
    ("/api/v1/surveys/small-test/responses.csv", "/surveys/small-test/responses.csv"),
    ("/api/v1/surveys/small-test/spec", "/surveys/small-test/spec.json"),
]


def test_v1_answers_what_the_results_pages_read(app, answered):
    browser = sign_in(app, "alice")
    for new, old in SAME_AS:
        fresh, before = get(browser, new), get(browser, old)
        assert fresh.status_code == before.status_code == 200, new
        if fresh.mimetype == "application/json":
            assert fresh.json == before.json, new
        else:
            assert fresh.get_data() == before.get_data(), new
    estimates = get(browser, "/api/v1/surveys/small-test/estimates").json
    assert estimates["survey"]["submissions"] == len(SUBMISSIONS)
    sav = get(browser, "/api/v1/surveys/small-test/responses.sav")
    assert sav.mimetype == "application/x-spss-sav" and sav.get_data()[:4] == b"$FL2"
    dta = get(browser, "/api/v1/surveys/small-test/responses.dta")
    assert dta.mimetype == "application/x-stata-dta" and dta.get_data()[:11] == b"<stata_dta>"


# -- one error shape ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "code", "path"),
    [
        ("compare?question=nothing&by=age", "analysis.unknown_question", ["question"]),
        ("compare?question=drugs&by=drugs", "comparison.same_question", ["by"]),
        ("compare?by=age", "analysis.key_required", ["question"]),
        ("regression?outcome=drugs", "regression.no_covariates", ["covariates"]),
        ("anytime-test?question=drugs&threshold=2", "live.threshold_out_of_range", ["threshold"]),
        ("anytime-test?question=age&threshold=0.5", "live.not_randomized", ["question"]),
        ("anytime-test?question=drugs&threshold=0.5&alternative=sideways", "live.alternative_unknown", ["alternative"]),
    ],
)
def test_a_refused_choice_is_a_problem_with_its_code_and_path(app, client, answered, query, code, path):
    response = get(client, f"/api/v1/surveys/small-test/{query}", make_token(app, "alice"))
    assert_problem(response, 400, code)
    body = response.json
    assert body["path"] == path and body["type"] == f"urn:survey:error:{code}" and body["title"] == "Bad Request"
    assert body["detail"] and body["params"] is not None


def test_an_analysis_before_anyone_answered_is_a_409_problem(app, client, small_survey, user):
    response = get(client, "/api/v1/surveys/small-test/compare?question=drugs&by=age", make_token(app, "alice"))
    assert_problem(response, 409, "analysis.no_answers")


# -- the respondent's submission -----------------------------------------------------------------------


def test_the_submission_is_public_stores_once_and_says_why_not(app, client, small_survey):
    url = "/api/v1/surveys/small-test/responses"
    body = {"answers": GOOD, "submission_key": "k" * 22}
    # a token is not read here: not even a refused one stops a respondent
    stored = client.post(url, json=body, headers={"Authorization": "Bearer nonsense"})
    assert stored.status_code == 201 and stored.json["status"] == "stored"
    again = client.post(url, json=body)
    assert again.status_code == 200 and again.json["status"] == "already received"
    refused = client.post(url, json={"answers": {**GOOD, "drugs": 7}})
    assert_problem(refused, 400, "answer.option_code_out_of_range")
    assert refused.json["path"] == ["answers", "drugs"]
    assert_problem(client.post(url, data="answers", content_type="text/plain"), 415, "submission.not_json")
    assert_problem(client.post("/api/v1/surveys/no-such/responses", json=body), 404, "http.404")
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Submission)) == 1


def test_the_submission_is_rate_limited_as_the_pages_one(tmp_path, sqlite_template):
    app = limited_app(tmp_path, sqlite_template, SUBMISSION_RATE_LIMIT="2 per minute")
    client = app.test_client()
    statuses = [
        client.post("/api/v1/surveys/small-test/responses", json={"answers": GOOD}).status_code for _ in range(3)
    ]
    assert statuses == [201, 201, 429]


# -- the description, for people ---------------------------------------------------------------------


def test_the_reference_page_shows_every_operation_without_a_script(app, client):
    response = client.get("/api/v1/docs")
    assert response.status_code == 200 and response.mimetype == "text/html"
    page = response.get_data(as_text=True)
    assert "<script" not in page  # the CSP would refuse one anyway: the page is drawn on the server
    for path, methods in description("http://x")["paths"].items():
        for operation in methods.values():
            assert f'id="{operation["operationId"]}"' in page and path in page
    assert "application/problem+json" in page and "<code>manage</code>" in page
    assert "(<code>token.scope</code>)" in page and "`" not in page  # the code spans are drawn, not shown
