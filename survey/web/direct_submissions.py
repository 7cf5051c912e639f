"""The submission API's common case answered beneath Flask's request handling, everything else by Flask.

A respondent's JSON submission is the one request the site takes by the thousand a second, and for
it Flask's request context, URL matching, session, before- and after-request hooks and response
object cost more of a worker's CPU than validating and storing the answers: the app's gunicorn
workers reached 51% of the plain-SQL ceiling where the same server running only the write reached
98% (benchmarks/serving_alternatives.md). This WSGI layer, inside the proxy fix and before Flask,
takes a POST to ``/api/surveys/<slug>/responses`` or ``/api/v1/surveys/<slug>/responses`` and does
what the Flask path does for it, through the same functions, in the same order:

1. count it against ``SUBMISSION_RATE_LIMIT`` for its address (:mod:`survey.platform.limits`);
2. find the survey's form (:func:`survey.web.submitting.form_or_none`);
3. check the content type, the ``Origin`` and the body (:func:`survey.web.submitting.read_body`);
4. store it (:func:`survey.web.submitting.record`, one transaction, the fold started as usual);
5. answer 201 (or 200 for a resend) with the headers every page carries and ``no-store``.

Every other outcome is Flask's, so that it is said in one place and in the request's language: a
request this layer does not take (another method, a query string, an ``Authorization`` header, a
slug of other characters, a body without a length, in chunks or over ``MAX_CONTENT_LENGTH``, a
``SERVER_NAME`` or ``TRUSTED_HOSTS`` to check the host against) goes to Flask untouched; one it took
and could not store goes to Flask with its body, its count and what went wrong
(:class:`survey.web.submitting.Failure`), and the view answers that as if it had happened there: the
refusal (429, 404, 400, 409, 403: nothing was stored), or the exception raised again (503 saying
whether the answers may be stored, or 500). The rate limit is never counted twice.

The session cookie is neither read nor written here: a submission is stored without its sender's
session, and its answer sets no cookie. That is the one way the answers differ: Flask's reads the
session (Flask-Login's hooks do, on every request), so it says ``Vary: Cookie``, and for a
signed-in sender whose address or browser changed since signing in it rewrites the session cookie
(Flask-Login's session protection marks the session not fresh). Neither matters to an answer no
cache keeps and that depends on no cookie. tests/test_direct_submissions.py sends the same requests
down both paths and compares the answers and what was stored.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable
from typing import Any

from flask import Flask
from werkzeug.sansio.utils import get_current_url, get_host

from survey.platform.limits import COUNTED, limiter
from survey.platform.security import document_headers

from . import submitting

#: The two addresses of the submission API, with a slug of the characters a slug is made of; any
#: other slug (percent-encoded, say) is matched, decoded and checked by Flask.
PATH = re.compile(r"/api/(?:v1/)?surveys/([A-Za-z0-9_-]+)/responses")
#: The endpoint each address is counted under (survey.platform.limits.LIMITED).
ENDPOINTS = {False: "respond.submit_json", True: "api.submit"}

StartResponse = Callable[..., Any]


class DirectSubmissions:
    """WSGI middleware: submissions answered here when all goes well, everything else by ``flask``."""

    def __init__(self, app: Flask, flask: Callable[[dict[str, Any], StartResponse], Iterable[bytes]]) -> None:
        self.app = app
        self.flask = flask
        headers = (("Cache-Control", submitting.NOT_KEPT["Cache-Control"]), *document_headers(app))
        self.answers = {
            False: ("201 CREATED", _headers(submitting.STORED, headers), [submitting.STORED.encode()]),
            True: ("200 OK", _headers(submitting.ALREADY, headers), [submitting.ALREADY.encode()]),
        }

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        match = self._taken(environ)
        if match is None:
            return self.flask(environ, start_response)
        endpoint = ENDPOINTS[match.group(0).startswith("/api/v1/")]
        try:
            allowed = limiter.attempt_allowed(self.app, endpoint, environ.get("REMOTE_ADDR") or "unknown")
        except Exception:  # a store that cannot even be made: Flask counts, fails and answers as it does
            return self.flask(environ, start_response)
        environ[COUNTED] = allowed
        length = int(environ["CONTENT_LENGTH"])
        raw = _read(environ["wsgi.input"], length) if allowed else b""
        if allowed and len(raw) == length and _is_json(environ) and _same_origin(environ):
            recorded = self._record(environ, match.group(1), raw)
            if recorded is not None:
                self.app.logger.debug("submission stored")
                status, headers, body = self.answers[recorded.already]
                start_response(status, list(headers))
                return body
        if allowed:
            environ["wsgi.input"] = io.BytesIO(raw)  # what was read, for Flask to read again
        return self.flask(environ, start_response)

    def _record(self, environ: dict[str, Any], slug: str, raw: bytes) -> submitting.Recorded | None:
        """Store the submission; None when Flask is to answer (environ then says why, if it knows)."""
        with self.app.app_context() as context:
            try:
                form = submitting.form_or_none(slug)
                if form is None:
                    return None  # Flask's 404
                body = submitting.read_body(True, True, lambda: raw, _header_key(environ))
                return submitting.record(form, body.answers, body.invitation, body.key)
            except Exception as error:  # answered by Flask, as if raised in its view
                environ[submitting.FAILURE] = submitting.Failure(error, bool(context.g.get("database_reached")))
                return None

    def _taken(self, environ: dict[str, Any]) -> re.Match[str] | None:
        """The path's match when this request is one taken here, else None. The settings are read
        per request, as Flask reads them."""
        config = self.app.config
        if not config["DIRECT_SUBMISSIONS"] or config.get("SERVER_NAME") or config.get("TRUSTED_HOSTS"):
            return None  # (Flask checks the host against those)
        if environ.get("REQUEST_METHOD") != "POST" or environ.get("QUERY_STRING") or "HTTP_AUTHORIZATION" in environ:
            return None
        if "HTTP_TRANSFER_ENCODING" in environ:  # a body in chunks is Flask's to bound (survey.platform.bodies)
            return None
        length = environ.get("CONTENT_LENGTH") or ""
        if not (length.isascii() and length.isdigit() and len(length) < 12):
            return None
        limit = config.get("MAX_CONTENT_LENGTH")
        if limit is not None and int(length) > limit:
            return None
        return PATH.fullmatch(environ.get("PATH_INFO", ""))


def _read(stream: Any, length: int) -> bytes:
    """The body, or nothing when the client went away while sending it (the length then differs,
    and Flask answers the request as one whose body ended early: 400)."""
    try:
        return stream.read(length)
    except (OSError, ValueError):
        return b""


def _headers(body: str, headers: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    return (("Content-Type", "application/json"), ("Content-Length", str(len(body.encode()))), *headers)


def _is_json(environ: dict[str, Any]) -> bool:
    """Plainly JSON (``application/json``, perhaps with a charset); anything else Flask reads."""
    return environ.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower() == "application/json"


def _same_origin(environ: dict[str, Any]) -> bool:
    """No ``Origin``, or this host's as the Flask path compares it (``request.host_url``, which
    Werkzeug normalizes: a default port dropped, the name lowercased, an invalid name emptied); a
    request without a ``Host`` header Flask compares itself (its fallback is the server's name)."""
    origin = environ.get("HTTP_ORIGIN")
    if not origin:
        return True
    host = environ.get("HTTP_HOST")
    if host is None:
        return False
    scheme = environ["wsgi.url_scheme"]
    return origin.rstrip("/") == get_current_url(scheme, get_host(scheme, host)).rstrip("/")


def _header_key(environ: dict[str, Any]) -> str | None:
    return submitting.unquoted_key(environ.get("HTTP_IDEMPOTENCY_KEY"))


def init_app(app: Flask) -> None:
    """Take submissions directly while ``DIRECT_SUBMISSIONS`` is on (a default of
    survey.platform.config) and neither ``SERVER_NAME`` nor ``TRUSTED_HOSTS`` is set (Flask checks
    the host then); read per request."""
    from survey.platform import wrap_wsgi

    wrap_wsgi(app, lambda inner: DirectSubmissions(app, inner))
