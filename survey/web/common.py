"""What more than one blueprint needs: domain errors onto forms and into JSON, and shared template
helpers. Blueprints import from here, never from one another.

A :class:`~survey.domain.errors.DomainError` says where it belongs by its ``path``; a form maps paths
to its inputs with a small table (:class:`FormErrors`), and a JSON error carries the path as is. No
message is ever read to find its place.

When the database cannot be used (down, restarting, unreachable), every request is answered 503
with ``Retry-After`` and a sentence that says only what is known (:func:`_database_unavailable`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

from flask import Flask, Response, current_app, flash, g, jsonify, redirect, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext
from flask_login import current_user
from sqlalchemy import select

from survey.domain.accounts.api_tokens import Grant
from survey.domain.accounts.sharing import SurveyAccess, role_offers_for, survey_access
from survey.domain.errors import DomainError, Path
from survey.domain.messages import message, template
from survey.domain.models import Membership, Survey, User
from survey.platform.connections import UNAVAILABLE, current_outage, is_unavailable
from survey.platform.extensions import db
from survey.platform.security import MESSAGES as PAGE_MESSAGES
from survey.platform.security import PROBLEM_JSON, error_response, wants_json

#: In a path pattern, matches any one key or index.
ANY = "*"


def _matches(pattern: tuple[Any, ...], path: Path) -> bool:
    return len(pattern) <= len(path) and all(p == ANY or p == x for p, x in zip(pattern, path, strict=False))


def field_for_path(path: Path, table: Mapping[tuple[Any, ...], str | None]) -> str | None:
    """The input ``path`` belongs to: the value of the longest pattern in ``table`` that starts the
    path (``ANY`` matching any element), or None (the form as a whole)."""
    best: tuple[Any, ...] | None = None
    for pattern in table:
        if _matches(pattern, path) and (best is None or len(pattern) > len(best)):
            best = pattern
    return table[best] if best is not None else None


class FormErrors:
    """For a Flask-WTF form: put a domain error next to the input its path maps to.

    ``error_paths`` maps path patterns to input names; by default a path whose first element is an
    input of the form goes to that input, and anything else to ``default_field`` (or the form as a
    whole when that is None). Subclasses extend the table, or compute it (:meth:`paths`)."""

    error_paths: ClassVar[dict[tuple[Any, ...], str | None]] = {}
    default_field: ClassVar[str | None] = None

    def paths(self) -> dict[tuple[Any, ...], str | None]:
        return self.error_paths

    def field_for(self, path: Path) -> str | None:
        table = self.paths()
        if any(_matches(pattern, path) for pattern in table):
            return field_for_path(path, table)
        if path and isinstance(path[0], str) and path[0] in self._fields:  # type: ignore[attr-defined]
            return path[0]
        return self.default_field

    def message_for(self, error: DomainError, field: str | None) -> str:
        """The words shown next to ``field``: the message without its place (the input is the place)."""
        return localized(error) if field else localized(error, placed=True)

    def add_error(self, name: str | None, message: str) -> None:
        field = self._fields.get(name) if name else None  # type: ignore[attr-defined]
        if field is None:
            self.form_errors.append(message)  # type: ignore[attr-defined]
        else:
            field.errors = [*field.errors, message]

    def add_domain_error(self, error: DomainError) -> None:
        field = self.field_for(error.path)
        self.add_error(field, self.message_for(error, field))

    @property
    def has_errors(self) -> bool:
        return bool(self.form_errors) or any(f.errors for f in self)  # type: ignore[attr-defined]


T = TypeVar("T")


def survey_at(slug: str) -> Survey | None:
    """The survey at ``slug``, read once per request: a respondent's page is given a language from
    its survey's (survey.web.languages) before its view reads the same survey, where a second SELECT
    by slug would only find the same object in the session. Kept with the request it was read for,
    so that requests sharing one app context (a test's) each read it afresh.

    For requests that read a survey, not those that make or delete one: a slug found empty stays
    empty for the rest of the request, and a survey deleted after it was read here is not noticed
    (it would fail as deleted where a new SELECT would have found none)."""
    current = request._get_current_object()  # type: ignore[attr-defined]
    kept = g.get("surveys_at")
    if kept is None or kept[0] is not current:
        kept = g.surveys_at = (current, {})
    if slug not in kept[1]:
        kept[1][slug] = db.session.scalar(select(Survey).where(Survey.slug == slug))
    return kept[1][slug]


def see_other(endpoint: str, message: str | None = None, *, anchor: str | None = None, **values: Any) -> Response:
    """After a post that changed something: say what was done (flashed), and send the browser on with
    a 303, so that reloading the next page does not post again."""
    if message:
        flash(message)
    return redirect(url_for(endpoint, _anchor=anchor, **values), code=303)


def commit_or_refuse(
    change: Callable[[], T],
    *,
    done: Callable[[T], ResponseReturnValue],
    refused: Callable[[int, DomainError | None], ResponseReturnValue],
    form: Any = None,
) -> ResponseReturnValue:
    """The one shape of every form post that changes something, in one transaction.

    Check ``form`` (when given: its inputs and CSRF token); run ``change``, the domain call; on a
    :class:`DomainError` roll back everything it did, put the error on the form's input its path
    names (a :class:`FormErrors` form; other views place it themselves in ``refused``) and answer
    ``refused(status, error)`` (the page again, with its status); otherwise commit and answer
    ``done(result)`` (usually :func:`see_other`). A form that does not validate is
    ``refused(400, None)``. Errors other than DomainError propagate, and the request's teardown rolls
    back.
    """
    if form is not None and not form.validate():
        return refused(400, None)
    try:
        result = change()
    except DomainError as error:
        db.session.rollback()
        if isinstance(form, FormErrors):
            form.add_domain_error(error)
        return refused(error.status, error)
    db.session.commit()
    return done(result)


def say(code: str, /, **params: Any) -> str:
    """The sentence of catalog entry ``code`` (an error code or a phrase) in the request's language,
    filled with ``params``."""
    return gettext(template(code)).format(**params)


def localized(error: DomainError, *, placed: bool = False) -> str:
    """``error``'s sentence in the request's language (its template through gettext, then filled
    with its params); with ``placed``, after the place in words as ``str(error)`` puts it."""
    text = say(error.code, **error.params)
    return say("place.before_sentence", where=error.where, message=text) if placed and error.where else text


def json_error(error: DomainError) -> tuple[Response, int]:
    """The error as an RFC 9457 problem (``application/problem+json``): ``type``, ``title``,
    ``status``, ``detail``, and ``code``, ``params``, ``path`` and ``error`` (the sentence, as before
    the problem members), with the error's status."""
    response = jsonify(error.to_json(detail=localized(error, placed=True)))
    response.mimetype = PROBLEM_JSON
    return response, error.status


def _domain_error(error: DomainError):
    """A DomainError no view caught: its status and message, as a page or JSON. A 404 says only what
    any 404 says, so that it leaks nothing about what exists."""
    if error.status == 404:
        return error_response(404, PAGE_MESSAGES[404])
    if wants_json():
        return json_error(error)
    return error_response(error.status, localized(error, placed=True))


#: The endpoints that store a respondent's answers.
SUBMISSIONS = frozenset({"respond.submit_form", "respond.submit_json", "api.submit"})
#: What a 503 asks clients to wait before trying again.
RETRY_AFTER_SECONDS = 30

# What a request that met an unusable database says. Whether anything was stored is known only when
# the request never got a connection (survey.platform.connections notes when it did): a connection
# lost during a statement, or during its commit, may have stored it.
# The sentences themselves are in the catalog (survey/domain/messages.py); these are their English.
ANSWERS_NOT_STORED = message("service.answers_not_stored")
ANSWERS_MAYBE_STORED = message("service.answers_maybe_stored")
CHANGE_NOT_MADE = message("service.change_not_made")
CHANGE_MAYBE_MADE = message("service.change_maybe_made")
PAGE_UNAVAILABLE = message("service.page_unavailable")


def outage_message() -> str:
    """The code of the sentence for this request: what it was doing, and whether anything of it may
    be stored."""
    reached = bool(g.get("database_reached"))
    if request.endpoint in SUBMISSIONS and request.method == "POST":
        return "service.answers_maybe_stored" if reached else "service.answers_not_stored"
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return "service.page_unavailable"
    return "service.change_maybe_made" if reached else "service.change_not_made"


def _database_unavailable(error: Exception) -> Response:
    """503, ``Retry-After``, the sentence for this request; one log line per outage (not per request).
    An error that is not an outage (a wrong statement on SQLite) goes on to be a 500, logged whole."""
    if not is_unavailable(error):
        raise error
    current_outage().failed(error)
    g.database_unavailable = True  # the response hooks must not touch the database again
    code = outage_message()
    message = say(code)
    if wants_json():
        response = json_error(DomainError(code))[0]
    else:
        # Its own page, rendered without the context processors: the site's layout and Flask-Login's
        # processor would ask the database who is signed in.
        page = current_app.jinja_env.get_template("unavailable.html").render(message=message)
        response = Response(page, mimetype="text/html")
    response.status_code = 503
    response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response.headers["Cache-Control"] = "no-store"
    return response


#: The attributes :func:`takes_token` sets on a view, which survey.web.auth.bearer reads: the scopes,
#: and the methods a token may use there.
TOKEN_SCOPES = "token_scopes"
TOKEN_METHODS = "token_methods"
#: What a token does unless a view says otherwise: read.
READ_METHODS = frozenset({"GET", "HEAD"})


def takes_token(*scopes: str, methods: frozenset[str] = READ_METHODS) -> Callable[[T], T]:
    """Mark a view as one a personal API token may call with any of ``scopes`` (the bearer hook,
    survey.web.auth.bearer, checks them before the view runs; the view then checks the user's role
    as for a browser). No scopes: a public view, where a token is neither needed nor read.
    ``methods``: those a token may use there, reading unless the view says so (an upload's POST)."""

    def mark(view: T) -> T:
        setattr(view, TOKEN_SCOPES, frozenset(scopes))
        setattr(view, TOKEN_METHODS, frozenset(methods))
        return view

    return mark


def current_grant() -> Grant | None:
    """The grant of this request's API token, if it came with one that was accepted (set by
    survey.web.auth.bearer): who the token acts for, its scope and the surveys it is limited to."""
    return g.get("api_grant")


def me() -> User:
    """The signed-in user (the object itself, not Flask-Login's proxy)."""
    return current_user._get_current_object()  # type: ignore[attr-defined]


def _manage_access(survey: Survey) -> SurveyAccess:
    """The signed-in user's role on ``survey``, what it lets them do, and the survey's state in words."""
    return survey_access(current_user if current_user.is_authenticated else None, survey)


def _pending_role_offers() -> list[Membership]:
    """Roles offered to the signed-in user and not yet accepted, for their start page."""
    if not current_user.is_authenticated:
        return []
    return role_offers_for(db.session, me())


def init_app(app: Flask) -> None:
    """The error handler and the template helpers every blueprint's pages may use (``localized``:
    a domain error's sentence in the request's language)."""
    app.register_error_handler(DomainError, _domain_error)
    for error in UNAVAILABLE:
        app.register_error_handler(error, _database_unavailable)
    app.add_template_global(_manage_access, "manage_access")
    app.add_template_global(_pending_role_offers, "pending_role_offers")
    app.add_template_global(localized, "localized")
