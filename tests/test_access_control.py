"""Every route of the app, taken from its URL map, against people who may not use it.

The routes are enumerated at run time, so a route added later is checked without anyone
remembering to list it: it is either on an allow-list below (public, or for any signed-in user), or
it must send an anonymous visitor to sign in (401 under /api/) and answer 404 to a signed-in user
without rights to the survey in its URL, for every method it accepts. A second set of tests posts
design-changing data to every organizer route of an open survey and checks that no design,
option or question list moved.
"""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, update

from survey.domain.models import Membership, Question, RespondentCode, Survey
from survey.platform.extensions import db

from .accounts import make_user, sign_in

#: Open to anyone: the respondent's pages and API, sign-in and "forgot password", invitation and password links (their
#: token is the right), the start page, static files.
PUBLIC = {
    "static",
    "health.health",
    "auth.login",
    "auth.link",
    "auth.forgot_password",
    "results.index",
    "respond.show",
    "respond.submit_form",
    "respond.thanks",
    "respond.privacy",
    "respond.submit_json",
    "api.submit",
    "api.openapi",
    "api.docs",
}
#: Routes that take a bearer token only (an upload of a study's responses): a signed-in browser gets
#: 401 whatever its rights, before the survey is looked up, so the refusal says nothing of it.
TOKEN_ONLY = {"api.imports"}
#: For any signed-in user, because they concern no particular survey.
ANY_SIGNED_IN = {
    "auth.logout",
    "organize.new_survey",
    "organize.import_spec",
    "auth.account",
    "auth.create_api_token",
    "auth.revoke_api_token",
    "organize.preview",
    "api.surveys",
}
#: URL arguments the tests know how to fill with real values.
KNOWN_ARGUMENTS = {"slug", "key"}
IGNORED_METHODS = {"HEAD", "OPTIONS"}
QUESTION_KEY = "often"

#: Form data that would change a question's design, options, kind, key, place or requirement,
#: under every name the builder and the management forms use, plus texts (which may change).
DESIGN_CHANGES = [
    {"kind": "choice", "options": "a\nb\nc", "design": "grr", "set_by": "epsilon", "epsilon": "3"},
    {"design": "grr", "set_by": "truth_probability", "truth_probability": "0.9"},
    {"design": "coin_flip", "set_by": "truth_probability", "truth_probability": "0.9", "yes_probability": "0.2"},
    {"design": "warner", "set_by": "epsilon", "epsilon": "0.5"},
    {"options": "never\nsometimes\noften\nalways\nevery day"},
    {"options": "Never\nSometimes\nOften\nAlways"},
    {"kind": "direct", "options": "yes\nno"},
    {"kind": "yes_no", "design": "coin_flip", "allow_one_sided": "y", "yes_probability": "1", "epsilon": "1"},
    {"required": ""},
    {"key": "renamed"},
    {"direction": "up"},
    {"direction": "down"},
    {"text": "Corrected text?", "help_text": "Corrected help."},
]


#: Query strings that routes need to mean anything (a test needs a question and a threshold).
QUERIES = {
    "results.anytime_api": "?question=drugs&threshold=0.1",
    "api.anytime_test": "?question=drugs&threshold=0.1",
    "api.comparison": "?question=drugs&by=age",
    "api.logistic_regression": "?outcome=drugs&covariates=age",
}


def fill(rule, slug: str) -> str:
    values = {"slug": slug, "key": QUESTION_KEY}
    return rule.build({k: values[k] for k in rule.arguments})[1] + QUERIES.get(rule.endpoint, "")


def rules(app, predicate=lambda rule: True):
    """Every (rule, method) of the app that is not public, with its arguments checked as known."""
    found = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint in PUBLIC:
            continue
        unknown = set(rule.arguments) - KNOWN_ARGUMENTS
        assert not unknown, f"{rule.endpoint} {rule.rule}: teach this test real values for {sorted(unknown)}"
        if predicate(rule):
            found.extend((rule, method) for method in sorted(rule.methods - IGNORED_METHODS))
    assert found
    return found


def survey_specific(rule) -> bool:
    return "slug" in rule.arguments


def state(app, slug: str = "small-test") -> tuple:
    """Everything a refused request must leave as it was."""
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        return (
            survey.status,
            survey.access,
            survey.opens_on,
            survey.closes_on,
            survey.title,
            survey.epsilon_cap,
            sorted((m.user_id, m.role) for m in survey.memberships),
            db.session.scalar(select(func.count()).select_from(RespondentCode)),
            db.session.scalar(select(func.count()).select_from(Survey)),
            structure(survey, texts=True),
        )


def structure(survey: Survey, *, texts: bool = False) -> list[tuple]:
    """Questions in order with keys, kinds, requirement, options and the stored design rows."""
    out = []
    for q in survey.questions:
        d = q.design
        design = None if d is None else (d.id, d.mechanism_name, d.parameters, d.matrix, d.epsilon)
        item = (q.id, q.position, q.key, q.kind, q.required, [(o.id, o.code, o.label) for o in q.options], design)
        out.append((*item, q.text, q.help_text) if texts else item)
    return out


def set_status(app, status: str, slug: str = "small-test") -> None:
    with app.app_context():
        db.session.execute(update(Survey).where(Survey.slug == slug).values(status=status))
        db.session.commit()


def test_the_allow_lists_name_real_endpoints(app):
    endpoints = {rule.endpoint for rule in app.url_map.iter_rules()}
    assert endpoints >= PUBLIC and endpoints >= ANY_SIGNED_IN


def test_public_routes_are_the_respondent_sign_in_start_health_and_static(app):
    """A new public route must be added to PUBLIC on purpose, not by forgetting a check. The API's
    public routes are its description and the respondent's submission."""
    public = {rule.endpoint for rule in app.url_map.iter_rules() if rule.endpoint in PUBLIC}
    assert {e.split(".")[0] for e in public} <= {"static", "auth", "results", "respond", "health", "api"}
    assert {e for e in public if e.startswith("api.")} == {"api.submit", "api.openapi", "api.docs"}


def test_anonymous_users_are_sent_to_sign_in_everywhere_else(app, client, small_survey):
    before = state(app)
    for rule, method in rules(app):
        path = fill(rule, small_survey)
        response = client.open(path, method=method, data=DESIGN_CHANGES[0])
        where = f"{method} {path} ({rule.endpoint})"
        if path.startswith("/api/"):
            assert response.status_code == 401, where
            assert response.is_json and response.json["status"] == 401, where
        else:
            assert response.status_code == 302, where
            assert response.headers["Location"].startswith("/auth/login"), where
    assert state(app) == before


@pytest.mark.parametrize("status", ["draft", "open", "closed"])
def test_signed_in_users_without_rights_get_404_for_every_survey_route(app, small_survey, status):
    make_user(app, "mallory")
    set_status(app, status)
    client = sign_in(app, "mallory")
    before = state(app)
    for rule, method in rules(app):
        path = fill(rule, small_survey)
        where = f"{method} {path} ({rule.endpoint})"
        if not survey_specific(rule):
            if rule.endpoint.startswith("admin."):  # administrators only: 404 to anyone else
                for data in (None, {"user_id": "1", "username": "eve", "is_admin": "y"}):
                    assert client.open(path, method=method, data=data).status_code == 404, where
                continue
            assert rule.endpoint in ANY_SIGNED_IN, f"{where}: not survey-specific and not on ANY_SIGNED_IN"
            continue
        for data in (None, DESIGN_CHANGES[0]):
            response = client.open(path, method=method, data=data)
            assert response.status_code == (401 if rule.endpoint in TOKEN_ONLY else 404), where
            assert "small-test" not in response.get_data(as_text=True), where
    assert state(app) == before


def test_the_same_routes_work_for_the_owner(app, signed_in, small_survey):
    """The 404s above come from rights, not from URLs filled with wrong values."""
    for rule, method in rules(app, survey_specific):
        if method == "GET":
            path = fill(rule, small_survey)
            assert signed_in.get(path).status_code in (200, 409), f"GET {path}"  # 409: an open survey's question list


def test_a_researcher_sees_results_and_nothing_to_manage(app, small_survey):
    bob = make_user(app, "bob")
    with app.app_context():
        survey = db.session.scalar(select(Survey))
        survey.memberships.append(Membership(user_id=bob, role="researcher"))
        db.session.commit()
    client = sign_in(app, "bob")
    before = state(app)
    for rule, method in rules(app, survey_specific):
        path = fill(rule, small_survey)
        where = f"{method} {path} ({rule.endpoint})"
        if rule.endpoint in TOKEN_ONLY:
            assert client.open(path, method=method).status_code == 401, where
        elif rule.endpoint.startswith("results.") or (rule.endpoint.startswith("api.") and rule.endpoint != "api.spec"):
            # 409: a comparison or a regression before anyone answered
            assert method == "GET" and client.get(path).status_code in (200, 409), where
        else:
            # the organizers' preview of the respondent page is theirs too
            organizers = rule.endpoint.startswith("organize.") or rule.endpoint in ("respond.preview", "api.spec")
            assert organizers, f"{where}: which role may use this?"
            for data in (None, DESIGN_CHANGES[0]):
                assert client.open(path, method=method, data=data).status_code == 404, where
    assert state(app) == before


# -- a frozen design cannot be changed by any route ------------------------------------------------


def frozen_structure(app) -> list[tuple]:
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == "small-test"))
        return structure(survey)


def keys(app) -> list[str]:
    with app.app_context():
        return list(db.session.scalars(select(Question.key).join(Survey).where(Survey.slug == "small-test")))


@pytest.mark.parametrize("status", ["open", "closed"])
def test_no_route_changes_a_frozen_design(app, signed_in, small_survey, status):
    before = frozen_structure(app)
    question_keys = keys(app)
    posted = 0
    for rule, method in rules(app, survey_specific):
        if method != "POST":
            continue
        for key in question_keys if "key" in rule.arguments else [None]:
            path = rule.build({"slug": small_survey, "key": key} if key else {"slug": small_survey})[1]
            for change in [*DESIGN_CHANGES, {k: v for c in DESIGN_CHANGES for k, v in c.items()}]:
                set_status(app, status)  # publish, reopen and close move it; every post meets a frozen survey
                response = signed_in.post(path, data={"text": "Corrected?", **change})
                posted += 1
                assert response.status_code < 500, f"POST {path} {change}"
                assert frozen_structure(app) == before, f"POST {path} {change} changed a frozen design"
    assert posted > 0


def test_texts_of_an_open_survey_can_still_be_corrected(app, signed_in, small_survey):
    """The other half of freezing: corrections stay possible (where the builder offers them)."""
    if "organize.edit_question" not in app.view_functions:
        pytest.skip("the builder is not there yet")
    before = frozen_structure(app)
    response = signed_in.post(f"/surveys/{small_survey}/questions/often/edit", data={"text": "How often, really?"})
    assert response.status_code == 303
    with app.app_context():
        question = db.session.scalar(select(Question).where(Question.key == "often"))
        assert question.text == "How often, really?"
    assert frozen_structure(app) == before
