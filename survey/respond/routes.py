from __future__ import annotations

import json
from typing import Any

from flask import Response, abort, current_app, jsonify, redirect, render_template, request, url_for
from sqlalchemy import select

from ..extensions import csrf, db
from ..invitations import InvitationError, check_code, normalize
from ..models import Survey, today
from ..submissions import FormCache, SubmissionError, SubmissionForm, record_submission, submission_form
from . import bp
from .page import option_label, survey_page

FIELD_PREFIX = "q_"
#: The answer to every stored submission, encoded once (it runs once per respondent).
STORED = json.dumps({"status": "stored", "message": "Thank you: your randomized answers were stored."})


def _survey_or_404(slug: str) -> Survey:
    survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
    if survey is None or survey.status == "draft":
        abort(404)
    return survey


@bp.app_template_filter("option_label")
def _option_label(label: str) -> str:
    return option_label(label)


def _render_form(survey: Survey, error: str | None = None, status: int = 200, invitation: str = ""):
    accepting, reason = survey.accepting_on(today())
    if not accepting:
        status = 409 if request.method == "POST" else 200
        return render_template("respond/closed.html", survey=survey, reason=reason), status
    page = survey_page(survey)
    return render_template("respond/survey.html", page=page, error=error, invitation=invitation), status


@bp.get("/s/<slug>")
def show(slug: str):
    survey = _survey_or_404(slug)
    code = request.args.get("code", "")
    if survey.access == "invitation" and survey.accepting_on(today())[0]:
        try:
            check_code(db.session, survey.id, code)
        except InvitationError as error:
            return render_template("respond/invitation.html", survey=survey, message=error.message), error.status
    return _render_form(survey, invitation=normalize(code) if survey.access == "invitation" else "")


def _forms() -> FormCache:
    """This process's published surveys' forms (see :class:`survey.submissions.SubmissionForm`)."""
    return current_app.extensions.setdefault("survey.submission_forms", {})


def _form_or_404(slug: str) -> SubmissionForm:
    form = submission_form(db.session, slug, _forms())
    if form is None:
        abort(404)
    return form


@bp.post("/s/<slug>")
def submit_form(slug: str):
    """The form post: reported values only, in fields ``q_<question key>``."""
    form = _form_or_404(slug)
    answers: dict[str, Any] = {}
    invitation = request.form.get("invitation", "")
    for name in request.form:
        if name in ("csrf_token", "invitation"):
            continue
        values = request.form.getlist(name)
        if not name.startswith(FIELD_PREFIX):
            return _render_form(_survey_or_404(slug), f"Unexpected field {name!r}. Nothing was stored.", 400)
        if len(values) > 1:
            return _render_form(
                _survey_or_404(slug),
                f"Question {name[len(FIELD_PREFIX) :]!r} was answered twice. Nothing was stored.",
                400,
            )
        answers[name[len(FIELD_PREFIX) :]] = values[0]
    try:
        record_submission(db.session, form, answers, invitation=invitation, cache=_forms())
    except SubmissionError as error:
        survey = _survey_or_404(slug)  # only now: the page is shown again, with the reason
        if survey.access == "invitation" and error.status == 403:
            return render_template("respond/invitation.html", survey=survey, message=error.message), 403
        return _render_form(survey, f"{error.message} Nothing was stored.", error.status, invitation=invitation)
    return redirect(url_for("respond.thanks", slug=slug), code=303)


@bp.get("/s/<slug>/thanks")
def thanks(slug: str):
    return render_template("respond/thanks.html", survey=_survey_or_404(slug))


@bp.get("/s/<slug>/privacy")
def privacy(slug: str):
    """What is and is not protected, in plain words. A survey by invitation keeps its question texts
    for invitees: here its questions are named by number only, and no invitation code is asked for."""
    survey = _survey_or_404(slug)
    return render_template("respond/privacy.html", page=survey_page(survey), show_texts=survey.access == "link")


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise SubmissionError(f"the key {key!r} appears twice in the JSON body")
        seen[key] = value
    return seen


def _api_error(message: str, status: int):
    return jsonify(error=message, status=status), status


@bp.post("/api/surveys/<slug>/responses")
@csrf.exempt  # no cookie is involved; JSON with this content type cannot be sent cross-site without CORS
def submit_json(slug: str):
    """``{"answers": {"<question key>": <reported option code>, ...}}`` → 201, or a 4xx saying why."""
    form = _form_or_404(slug)
    if not request.is_json:
        return _api_error("send the answers as JSON with Content-Type: application/json", 415)
    origin = request.headers.get("Origin")
    if origin and origin.rstrip("/") != request.host_url.rstrip("/"):
        return _api_error("submissions are accepted from this site's own pages only", 403)
    raw = request.get_data(cache=False)
    try:
        body = json.loads(raw.decode("utf-8"), object_pairs_hook=_reject_duplicate_keys)
    except UnicodeDecodeError:
        return _api_error("the body is not valid UTF-8", 400)
    except json.JSONDecodeError as error:
        return _api_error(f"the body is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}", 400)
    except RecursionError:
        return _api_error("the body is nested far deeper than any submission", 400)
    except SubmissionError as error:  # a key given twice (before ValueError: it is one)
        return _api_error(error.message, 400)
    except ValueError:  # an integer of thousands of digits: Python refuses to convert it
        return _api_error("the body holds a number far too long to be an option code", 400)
    if not isinstance(body, dict) or "answers" not in body or not set(body) <= {"answers", "invitation"}:
        return _api_error('the body must be an object with the field "answers" (and "invitation" if needed)', 400)
    invitation = body.get("invitation")
    if invitation is not None and not isinstance(invitation, str):
        return _api_error('"invitation" must be the invitation code as text', 400)
    try:
        record_submission(db.session, form, body["answers"], invitation=invitation, cache=_forms())
    except SubmissionError as error:
        return _api_error(error.message, error.status)
    current_app.logger.debug("submission stored")
    return Response(STORED, status=201, mimetype="application/json")
