"""The OpenAPI description of /api/v1 is true: valid OpenAPI 3.1, the blueprint's routes and nothing
else, and honoured by the running app for requests generated from it.

``schemathesis`` draws requests for every operation from the description (property-based, through
Hypothesis: a bounded number of examples, derandomized so that a run is the same run every time)
and sends each to a live server, anonymously and with a token of each scope, at a survey that does
not exist and at a real one with answers. Every answer must be no 5xx, have a status the operation
lists, the media type it lists for that status, and a body its schema accepts. Requests drawn in
its negative mode (values the description forbids) must still get no 5xx and only listed statuses.
"""

from __future__ import annotations

import json
import urllib.request

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from openapi_spec_validator import validate
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from survey.domain.accounts.api_tokens import create_token
from survey.domain.models import API_SCOPES, User
from survey.domain.surveys.specs import create_survey_from_spec
from survey.web.api.description import description

from .live import live_site
from .surveys import SMALL_SPEC, SUBMISSIONS

#: Examples drawn per operation and mode: small, so that the suite stays quick (each example is
#: sent several times: at the real survey anonymously and with each token, and as drawn with a
#: ``results`` token).
MAX_EXAMPLES = 6
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
NEGATIVE_CHECKS = [not_a_server_error, status_code_conformance]
SLUG = "small-test"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A live site with the small survey answered, and a token of its owner's for each scope."""
    tokens: dict[str, str] = {}

    def setup(session):
        alice = User(username="alice", password_hash="!")
        session.add(alice)
        session.flush()
        create_survey_from_spec(session, SMALL_SPEC, owner=alice)
        for scope in API_SCOPES:
            tokens[scope] = create_token(session, alice, scope, scope, 7)[1]

    folder = tmp_path_factory.mktemp("openapi")
    with live_site(folder, "openapi-secret", setup, RATELIMIT_ENABLED=False) as (_app, base):
        for answers in SUBMISSIONS:
            body = json.dumps({"answers": answers}).encode()
            url = f"{base}/api/v1/surveys/{SLUG}/responses"
            with urllib.request.urlopen(urllib.request.Request(url, body, {"Content-Type": "application/json"})) as r:
                assert r.status == 201
        yield base, tokens


def test_the_description_is_valid_openapi_3_1():
    document = description("https://surveys.example.org/api/v1")
    assert document["openapi"] == "3.1.0"
    validate(document)


def test_the_description_lists_every_route_of_the_blueprint_and_nothing_else(app):
    described = {
        (method.upper(), path) for path, methods in description("http://x")["paths"].items() for method in methods
    }
    routes = {
        (method, rule.rule.removeprefix("/api/v1").replace("<slug>", "{slug}"))
        for rule in app.url_map.iter_rules()
        if rule.endpoint.startswith("api.")
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }
    assert described == routes
    ids = [op["operationId"] for methods in description("http://x")["paths"].values() for op in methods.values()]
    assert len(ids) == len(set(ids))


def test_the_served_description_names_this_site(site):
    base, _ = site
    with urllib.request.urlopen(f"{base}/api/v1/openapi.json") as response:
        served = json.loads(response.read())
    assert served["servers"] == [{"url": f"{base}/api/v1"}]
    assert served == description(f"{base}/api/v1")


def _callers(tokens: dict[str, str]) -> list[dict[str, str]]:
    """The headers of each kind of caller: anonymous, then a token of each scope."""
    return [{}, *({"Authorization": f"Bearer {token}"} for token in tokens.values())]


def _run(operation, mode: GenerationMode, base: str, tokens: dict[str, str], checks) -> int:
    """Send ``MAX_EXAMPLES`` drawn cases of ``operation``, checking each answer: at the real survey
    from every caller, and as drawn (a survey that does not exist) with a ``results`` token; returns
    how many requests were sent."""
    sent = []
    results = {"Authorization": f"Bearer {tokens['results']}"}

    @settings(
        max_examples=MAX_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case):
        drawn = dict(case.path_parameters or {})
        calls = [(drawn, headers) for headers in _callers(tokens)]
        if "slug" in drawn:
            calls = [({**drawn, "slug": SLUG}, headers) for headers in _callers(tokens)] + [(drawn, results)]
        for path_parameters, headers in calls:
            case.path_parameters = path_parameters
            case.call_and_validate(base_url=f"{base}/api/v1", headers=headers, checks=checks)
            sent.append(1)

    check()
    return len(sent)


def _served(base: str):
    """The description the live site serves, loaded by schemathesis."""
    with urllib.request.urlopen(f"{base}/api/v1/openapi.json") as response:
        return schemathesis.openapi.from_dict(json.loads(response.read()))


def _operations(base: str):
    schema = _served(base)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == sum(len(m) for m in description(base)["paths"].values())
    return operations


def test_generated_requests_get_answers_the_description_promises(site):
    base, tokens = site
    sent = sum(_run(op, GenerationMode.POSITIVE, base, tokens, CHECKS) for op in _operations(base))
    assert sent >= 14 * len(_callers(tokens))  # every operation was called, by every caller


def test_requests_the_description_forbids_get_no_server_error(site):
    base, tokens = site
    for operation in _operations(base):
        if operation.query or operation.body or operation.path_parameters:  # something to break
            _run(operation, GenerationMode.NEGATIVE, base, tokens, NEGATIVE_CHECKS)


def test_known_good_requests_match_their_schemas(site):
    """The drawn keys are almost never the survey's: these requests reach every document whole."""
    base, tokens = site
    schema = _served(base)
    good = {
        ("GET", "/surveys/{slug}/anytime-test"): {"question": "often", "threshold": 0.2, "category": 2},
        ("GET", "/surveys/{slug}/compare"): {"question": "drugs", "by": "age"},
        ("GET", "/surveys/{slug}/regression"): {"outcome": "drugs", "covariates": ["age"]},
    }
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.method.upper() != "GET":
            continue
        query = good.get((operation.method.upper(), operation.path), {})
        parameters = {"slug": SLUG} if operation.path_parameters else {}
        for scope, token in tokens.items():
            case = operation.Case(path_parameters=parameters, query=query)
            response = case.call_and_validate(
                base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {token}"}, checks=CHECKS
            )
            scopes = {s for need in operation.definition.raw.get("security", []) for s in need.get("token", [])}
            assert response.status_code == (200 if scope in scopes or not scopes else 403), (operation.path, scope)
    compare = schema["/surveys/{slug}/compare"]["GET"].Case(
        path_parameters={"slug": SLUG}, query={"question": "drugs", "by": "mirror"}
    )
    association = compare.call_and_validate(
        base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {tokens['results']}"}, checks=CHECKS
    )
    assert "cells" in association.json()
