"""A submission sent as JSON: what the respondent's API does, at both of its addresses.

``/api/surveys/<slug>/responses`` (the respond blueprint's, which the survey page's script posts to)
and ``/api/v1/surveys/<slug>/responses`` (the versioned API's) take the same body and answer the
same way, so the reading of the body lives here, once, beside the form cache and the call into
:func:`survey.domain.responses.submissions.record_submission` that the form post uses too.
"""

from __future__ import annotations

import json
from typing import Any

from flask import Response, abort, current_app, request

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


def forms() -> FormCache:
    """This process's published surveys' forms (see :class:`survey.domain.responses.submissions.SubmissionForm`)."""
    return current_app.extensions.setdefault("survey.submission_forms", {})


def form_or_404(slug: str) -> SubmissionForm:
    form = submission_form(db.session, slug, forms())
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
    value = request.headers.get("Idempotency-Key")
    if value is not None and len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    return value


def _refused(code: str, *path: str):
    return json_error(DomainError(code, path=path))


def submit_json(slug: str):
    """``{"answers": {"<question key>": <reported option code>, ...}}`` → 201, a resend of a stored
    submission → 200 "already received", or a 4xx problem saying why nothing was stored."""
    form = form_or_404(slug)
    if not request.is_json:
        return _refused("submission.not_json")
    origin = request.headers.get("Origin")
    if origin and origin.rstrip("/") != request.host_url.rstrip("/"):
        return _refused("submission.foreign_origin")
    try:
        body = parse_json(request.get_data(cache=False), "the body")
    except DomainError as error:
        return json_error(error)
    if not isinstance(body, dict) or "answers" not in body or not set(body) <= BODY_FIELDS:
        return _refused("submission.body_malformed")
    invitation = body.get("invitation")
    if invitation is not None and not isinstance(invitation, str):
        return _refused("submission.invitation_not_text", "invitation")
    key = body.get("submission_key", _idempotency_header())
    if key is not None and not isinstance(key, str):
        return _refused("submission.key_not_text", "submission_key")
    try:
        recorded = record(form, body["answers"], invitation, key)
    except DomainError as error:
        return json_error(error)
    if recorded.already:
        return Response(ALREADY, status=200, mimetype="application/json")
    current_app.logger.debug("submission stored")
    return Response(STORED, status=201, mimetype="application/json")
