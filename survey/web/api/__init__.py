"""The versioned API, /api/v1: one blueprint for everything a script reads (surveys, estimates,
live intervals, analyses, exports) and the respondent's submission, with one error shape (RFC 9457
problems with stable codes and the field's path) and its OpenAPI 3.1 description
(:mod:`survey.web.api.description`), served at /api/v1/openapi.json and as a page at /api/v1/docs.

Every view calls the domain function the results pages call (their numbers are the same); this
blueprint adds only who may read what: a personal API token (survey.web.auth.bearer, with the
scopes each view declares through :func:`survey.web.common.takes_token`) or a signed-in browser,
and then the user's current role on the survey.
"""

from flask import Blueprint

bp = Blueprint("api", __name__, url_prefix="/api/v1")

from . import views  # noqa: E402, F401
