"""Requests with a personal API token: ``Authorization: Bearer rrs_...``.

One hook for the whole app (:func:`init_app`), so that no view changes: a request with a bearer
token is authenticated as the token's user for that request only, before its view runs, and the
view then checks rights as it does for a browser (``survey_for``: the user's role now, 404 when
there is none). What the hook adds is what the token limits:

- where a token is taken at all (:func:`scope_for`): the researcher's read endpoints of the results
  blueprint (its JSON and its exports; not its HTML pages), with GET, for scope ``results``, and
  the views of /api/v1 (survey.web.api) with the scopes each declares. Any other address answers
  a bearer request 401 ``token.not_here``: a token never reaches a page, a form or a change. The
  public addresses of /api/v1 (the respondent's submission, the description) do not read a token.
  A request with a token is never also signed in by its cookie: the session cookie is not read,
  none is made, and no CSRF exemption is needed (every endpoint a token reaches is a GET, but the
  upload of responses collected elsewhere, a POST that takes a token and nothing else);
- its scope (403 ``token.scope``) and its surveys (404, as for a survey that is not one's own);
- its rate: ``API_TOKEN_RATE_LIMIT`` per token, and refused tokens on ``TOKEN_RATE_LIMIT`` per
  address (survey.platform.limits); 429 past either.

A refused token is 401 problem JSON with its stable code (survey.domain.accounts.api_tokens) and
``WWW-Authenticate: Bearer error="invalid_token"`` (RFC 6750). The token itself is never logged,
stored or echoed: it travels in a header, which the request log does not write (survey.platform.logs),
and only its digest is looked up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask, Response, abort, current_app, g, request
from sqlalchemy import select

from survey.domain.accounts.api_tokens import authenticate
from survey.domain.errors import DomainError, NotFound
from survey.domain.models import Survey
from survey.platform.extensions import db
from survey.platform.limits import limiter
from survey.platform.security import is_bearer_request

from ..common import READ_METHODS, TOKEN_METHODS, TOKEN_SCOPES, json_error

#: The results blueprint's HTML pages: for browsers only, never for a token.
RESULTS_PAGES = frozenset({"results.index", "results.survey", "results.compare_page", "results.regression_page"})


def scope_for(endpoint: str | None, method: str, view: Callable[..., Any] | None = None) -> frozenset[str] | None:
    """The scopes a token may have at ``endpoint`` (whose view function is ``view``), or None where
    no token is taken.

    Every endpoint of the results blueprint but its pages (its JSON and its downloads, including
    those added later), read with GET, takes a ``results`` token. A view marked with
    :func:`survey.web.common.takes_token` (the /api/v1 blueprint's) takes its scopes with GET (or the
    methods it names: the upload of responses, with POST); one
    marked with no scope is public, and answers an empty set: the token is not read at all."""
    if endpoint and endpoint.startswith("results.") and endpoint not in RESULTS_PAGES and method in READ_METHODS:
        return frozenset({"results"})
    scopes: frozenset[str] | None = getattr(view, TOKEN_SCOPES, None)
    if scopes is not None and (not scopes or method in getattr(view, TOKEN_METHODS, READ_METHODS)):
        return scopes
    return None


def _refused(error: DomainError) -> Response:
    response, status = json_error(error)
    response.status_code = status
    if status == 401:
        response.headers["WWW-Authenticate"] = f'Bearer error="invalid_token", error_description="{error.code}"'
    return response


def _bearer() -> Response | None:
    if not is_bearer_request():
        return None
    view = current_app.view_functions.get(request.endpoint) if request.endpoint else None
    scopes = scope_for(request.endpoint, request.method, view)
    if scopes is None:
        return _refused(DomainError("token.not_here"))
    if not scopes:  # a public address (the respondent's submission): the token is not read
        return None
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    address = request.remote_addr or "unknown"
    if not limiter.bearer_guesses_left(app, address):
        abort(429)
    credential = request.headers["Authorization"][7:].strip()
    try:
        grant = authenticate(db.session, credential)
    except DomainError as error:
        db.session.rollback()
        limiter.bearer_refused(app, address)
        return _refused(error)
    if not limiter.token_allowed(app, grant.token_id):
        db.session.rollback()
        abort(429)
    if db.session.dirty:  # the day of last use changed (once a day per token; nothing else is written)
        db.session.commit()
    try:
        grant.require_scope(*sorted(scopes))
        slug = (request.view_args or {}).get("slug")
        if grant.survey_ids is not None and slug is not None:
            survey_id = db.session.scalar(select(Survey.id).where(Survey.slug == slug))
            if survey_id not in grant.survey_ids:
                raise NotFound("page.nothing_here")
    except DomainError as error:
        if error.status == 404:  # what any 404 says, so that a slug leaks nothing
            abort(404)
        return _refused(error)
    # The token's user for this request only: Flask-Login reads g._login_user before the session
    # cookie, and nothing here calls login_user, so no cookie is set.
    g._login_user = grant.user
    g.api_grant = grant
    return None


def init_app(app: Flask) -> None:
    app.before_request(_bearer)
