"""Security headers and error pages that say what went wrong in words a person can read."""

from __future__ import annotations

from http import HTTPStatus

from flask import Flask, Response, abort, current_app, g, jsonify, render_template, request
from flask_babel import gettext
from flask_login import current_user
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException

from survey.domain.messages import N_, message
from survey.domain.validation import text_problem
from survey.platform.connections import UNAVAILABLE, is_unavailable

#: Endpoints that parse their own (larger) bodies; reading request.form early would apply the
#: app-wide size limit to them. (An upload of responses is read strictly by
#: survey.domain.responses.imports: a NUL or a lone surrogate in it is no code, label, number or day,
#: so it refuses the row and nothing is written; the translations' texts are each checked by
#: survey.domain.validation.text, which refuses a NUL or a lone surrogate the same way.)
OWN_BODY_PARSING = {"organize.import_spec", "organize.import_responses", "api.imports", "organize.save_translations"}

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "object-src 'none'",
    ]
)

MESSAGES = {
    400: N_("The request could not be understood."),
    403: N_("You are not allowed to do that."),
    404: N_("There is nothing here."),
    405: N_("That method is not allowed here."),
    409: N_("That conflicts with the current state."),
    413: N_("The request is too large: a survey submission is never this big."),
    415: N_("Send JSON with the header Content-Type: application/json."),
    429: N_("Too many attempts from your connection: wait a minute, then try again. Nothing was changed."),
}
#: A form sent without its CSRF token, or with an expired one (``reason``: Flask-WTF's words).
FORM_EXPIRED = N_("The form expired or was not sent from this site ({reason}). Reload the page and try again.")
SOMETHING_WRONG = N_("Something went wrong.")


def wants_json() -> bool:
    """Errors as problem JSON: under /api/, and for every request with a bearer token (a script's,
    even when it asks for a CSV file)."""
    return request.path.startswith("/api/") or is_bearer_request()


def is_bearer_request() -> bool:
    """Whether the request carries ``Authorization: Bearer ...`` (survey.web.auth.bearer)."""
    return request.headers.get("Authorization", "")[:7].lower() == "bearer "


#: The media type of an RFC 9457 problem, the shape of every JSON error.
PROBLEM_JSON = "application/problem+json"


def problem_response(status: int, message: str) -> Response:
    """An error that is only its status (a 404, a 405, a refused CSRF token) as an RFC 9457 problem:
    ``type`` "about:blank", the code ``http.<status>``, and ``error`` (the sentence, as before the
    problem members). A domain error carries its own code (survey.web.common.json_error)."""
    response = jsonify(
        type="about:blank",
        title=HTTPStatus(status).phrase,
        status=status,
        detail=message,
        code=f"http.{status}",
        params={},
        path=[],
        error=message,
    )
    response.mimetype = PROBLEM_JSON
    response.status_code = status
    return response


def error_response(status: int, message: str) -> tuple[Response | str, int]:
    if wants_json():
        return problem_response(status, message), status
    # A refusal (4xx) comes before any change, or after one that was rolled back; an unexpected
    # error (5xx) may come after a commit, so the page says nothing was changed only when it knows.
    unchanged = status < 500 or request.method in ("GET", "HEAD", "OPTIONS")
    # The page in the request's language: one of MESSAGES is translated here; a sentence that already
    # is (a domain error's, survey.web.common.localized) has no entry and is shown as it came.
    return render_template("error.html", status=status, message=gettext(message), unchanged=unchanged), status


def signed_in() -> bool:
    """Whether the request comes from a signed-in user, without loading anyone (or touching the
    session) for a request that carries no session cookie, such as the submission API's."""
    user = g.get("_login_user")
    if user is None:
        names = (
            current_app.config["SESSION_COOKIE_NAME"],
            current_app.config.get("REMEMBER_COOKIE_NAME", "remember_token"),
        )
        if not any(name in request.cookies for name in names):
            return False
        user = current_user
    return bool(user.is_authenticated)


def _signed_in_or_unknown() -> bool:
    """:func:`signed_in`, or True when the database cannot say (the safe answer for caching)."""
    try:
        return signed_in()
    except UNAVAILABLE:
        return True


#: The headers every response carries unless its view set its own. A tuple of pairs, so that they
#: are added to the response in one ``extend`` after one pass over its headers: one ``setdefault``
#: each scanned the whole header list five or six times per response (19% of the app's CPU on a
#: submission, measured by profiling gunicorn under load; benchmarks/scale_ingest.md).
SECURITY_HEADERS: tuple[tuple[str, str], ...] = (
    ("Content-Security-Policy", CONTENT_SECURITY_POLICY),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
    ("Permissions-Policy", "camera=(), microphone=(), geolocation=()"),
)


#: A static file's: a script or a stylesheet is no document, so a policy for documents (what may run
#: in it, who may frame it, what its links send) says nothing there; ``nosniff`` does (a script or a
#: stylesheet is used only if its media type says it is one). Five headers fewer on each of the
#: respondent page's files: 1.7 KB of a first visit's 11 KB (tests/test_assets.py).
STATIC_HEADERS: tuple[tuple[str, str], ...] = (("X-Content-Type-Options", "nosniff"),)


def add_missing_headers(response: Response, defaults: tuple[tuple[str, str], ...]) -> None:
    """Add each of ``defaults`` that the response does not carry yet, in one pass over its headers
    and one ``extend`` (what ``setdefault`` per header did, without a scan per header)."""
    present = {name.lower() for name, _ in response.headers.items()}
    missing = [(name, value) for name, value in defaults if name.lower() not in present]
    if missing:
        response.headers.extend(missing)


def _transport(app: Flask) -> tuple[tuple[str, str], ...]:
    hsts = app.config.get("STRICT_TRANSPORT_SECURITY")
    # production only (survey.platform.config.production_settings)
    return (("Strict-Transport-Security", hsts),) if hsts else ()


def document_headers(app: Flask) -> tuple[tuple[str, str], ...]:
    """The security headers of every answer but a static file's, in ``app`` (HSTS where configured)."""
    return (*SECURITY_HEADERS, *_transport(app))


def init_app(app: Flask) -> None:
    documents, files = document_headers(app), (*STATIC_HEADERS, *_transport(app))

    @app.after_request
    def headers(response: Response) -> Response:
        if request.endpoint == "static":
            add_missing_headers(response, files)
            return response
        add_missing_headers(response, documents)
        if g.get("database_unavailable") or _signed_in_or_unknown():
            # Pages for signed-in users hold results, codes and team names: no browser or shared
            # cache keeps a copy for the next person at this computer or behind this proxy.
            response.headers["Cache-Control"] = "private, no-store"
        return response

    @app.before_request
    def refuse_what_is_not_text():
        """A NUL or a lone surrogate in the path, the query or a form field never reaches the database."""
        values = [request.path, *request.args.keys(), *request.args.values()]
        form_types = ("application/x-www-form-urlencoded", "multipart/form-data")
        if request.mimetype in form_types and request.endpoint not in OWN_BODY_PARSING:
            values += [*request.form.keys(), *request.form.values()]
        for value in values:
            problem = text_problem(value)
            if problem:
                abort(400, description=f"The request {message(problem)}. Nothing was changed.")

    @app.errorhandler(CSRFError)
    def csrf_error(error: CSRFError):
        return error_response(400, gettext(FORM_EXPIRED).format(reason=error.description))

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException):
        original = getattr(error, "original_exception", None)
        if isinstance(original, UNAVAILABLE) and is_unavailable(original):
            # The database went away while an error page was being made (a 404's page asks which
            # languages its survey has): the outage's own handler answers, 503, as anywhere else.
            return current_app.handle_user_exception(original)
        status = error.code or 500
        message = MESSAGES.get(status, error.description or SOMETHING_WRONG)
        if status == 400 and error.description and "browser (or proxy)" not in error.description:
            message = error.description
        return error_response(status, message)
