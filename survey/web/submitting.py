"""A submission sent as JSON: what the respondent's API does, at both of its addresses.

``/api/surveys/<slug>/responses`` (the respond blueprint's) and ``/api/v1/surveys/<slug>/responses``
(the versioned API's) take the same body and answer the same way, so the reading of the body lives
here, once, beside the form cache and the call into
:func:`survey.domain.responses.submissions.record_submission` that the form post uses too. (The
survey page's script sends the form post, ``POST /s/<slug>``: its CSRF token, and the reports the
thank-you page shows, travel with the session cookie. The JSON API is for programs: apps, kiosks,
scripts.) Its common case is answered before Flask's request handling, through the functions here
(:mod:`survey.web.direct_submissions`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import Response, abort, current_app, g, request

from survey.domain.errors import DomainError
from survey.domain.responses.receipts import ALREADY_RECEIVED_MESSAGE
from survey.domain.responses.submissions import FormCache, Recorded, SubmissionForm, record_submission, submission_form
from survey.domain.validation import parse_json
from survey.platform import folding
from survey.platform.extensions import db

from .common import json_error

#: The answer to every stored submission, encoded once (it runs once per respondent).
STORED = json.dumps({"status": "stored", "message": "Thank you: your randomized answers were stored."})
ALREADY = json.dumps({"status": "already received", "message": ALREADY_RECEIVED_MESSAGE})
#: What a JSON submission may carry.
BODY_FIELDS = frozenset({"answers", "invitation", "submission_key"})
#: Every answer to a submission: no cache keeps it, whoever sent it (signed in or not, whichever of
#: the two paths answered; the versioned API says the same of all its answers).
NOT_KEPT = {"Cache-Control": "private, no-store"}
#: The WSGI environment's key under which survey.web.direct_submissions hands a :class:`Failure` on.
FAILURE = "survey.submission.failure"


def forms() -> FormCache:
    """This process's published surveys' forms (see :class:`survey.domain.responses.submissions.SubmissionForm`)."""
    return current_app.extensions.setdefault("survey.submission_forms", {})


def form_or_none(slug: str) -> SubmissionForm | None:
    """The published survey ``slug``'s form, from this process's cache after the first time."""
    return submission_form(db.session, slug, forms())


def form_or_404(slug: str) -> SubmissionForm:
    form = form_or_none(slug)
    if form is None:
        abort(404)
    return form


def record(form: SubmissionForm, answers: Any, invitation: str | None, key: str | None) -> Recorded:
    """Store one submission (one transaction), or raise the DomainError that says why not."""
    recorded = record_submission(
        db.session,
        form,
        answers,
        invitation=invitation,
        cache=forms(),
        key=key,
        batch=current_app.config["ANONYMITY_BATCH"],
        engine=db.engine,
    )
    folding.fold_soon(current_app._get_current_object())  # type: ignore[attr-defined]
    return recorded


def _idempotency_header() -> str | None:
    """The ``Idempotency-Key`` header's value, unquoted (the IETF draft sends it as a quoted string)."""
    return unquoted_key(request.headers.get("Idempotency-Key"))


def unquoted_key(value: str | None) -> str | None:
    if value is not None and len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    return value


@dataclass(frozen=True)
class Body:
    """A submission's body, read and checked: what :func:`record` takes."""

    answers: Any
    invitation: str | None
    key: str | None


def read_body(is_json: bool, same_origin: bool, raw: Callable[[], bytes], header_key: str | None) -> Body:
    """The checks of a JSON submission before anything is stored, in the order they are answered:
    its content type, its ``Origin``, then the body itself (read by ``raw`` only after the first
    two); raises the DomainError that says why it cannot be stored. Both paths call this
    (:func:`submit_json`, and :mod:`survey.web.direct_submissions` outside Flask's request)."""
    if not is_json:
        raise DomainError("submission.not_json")
    if not same_origin:
        raise DomainError("submission.foreign_origin")
    body = parse_json(raw(), "the body")
    if not isinstance(body, dict) or "answers" not in body or not set(body) <= BODY_FIELDS:
        raise DomainError("submission.body_malformed")
    invitation = body.get("invitation")
    if invitation is not None and not isinstance(invitation, str):
        raise DomainError("submission.invitation_not_text", path=("invitation",))
    key = body.get("submission_key", header_key)
    if key is not None and not isinstance(key, str):
        raise DomainError("submission.key_not_text", path=("submission_key",))
    return Body(body["answers"], invitation, key)


def answered(recorded: Recorded) -> Response:
    """201 for a submission stored now, 200 for a resend of one stored before."""
    if recorded.already:
        return Response(ALREADY, status=200, headers=NOT_KEPT, mimetype="application/json")
    return Response(STORED, status=201, headers=NOT_KEPT, mimetype="application/json")


@dataclass(frozen=True)
class Failure:
    """What went wrong with a submission taken outside Flask's request (survey.web.direct_submissions),
    handed to :func:`submit_json` to be answered as if it had happened there: a DomainError is the
    refusal it says; any other exception is raised again, and ``reached`` says whether the database
    was reached before it (so that a 503 says whether the answers may have been stored)."""

    error: BaseException
    reached: bool = False


def submit_json(slug: str):
    """``{"answers": {"<question key>": <reported option code>, ...}}`` → 201, a resend of a stored
    submission → 200 "already received", or a 4xx problem saying why nothing was stored."""
    failure = request.environ.pop(FAILURE, None)
    if failure is not None:
        if isinstance(failure.error, DomainError):
            return json_error(failure.error)
        if failure.reached:
            g.database_reached = True
        raise failure.error
    form = form_or_404(slug)
    origin = request.headers.get("Origin")
    try:
        body = read_body(
            request.is_json,
            not origin or origin.rstrip("/") == request.host_url.rstrip("/"),
            lambda: request.get_data(cache=False),
            _idempotency_header(),
        )
        recorded = record(form, body.answers, body.invitation, body.key)
    except DomainError as error:
        return json_error(error)
    current_app.logger.debug("submission stored")
    return answered(recorded)
