from __future__ import annotations

from typing import Any

from flask import Response, abort, g, redirect, render_template, request, session, url_for
from flask_babel import get_locale
from flask_login import current_user, login_required

from survey.domain.accounts.access import allowed, survey_for
from survey.domain.errors import DomainError, Forbidden
from survey.domain.models import DECLINED_MARKER, Survey, refusal_on, today
from survey.domain.responses.codes import check_code, normalize
from survey.domain.responses.submissions import SubmissionForm
from survey.domain.surveys.content_translations import TranslatedSurvey, in_language, stored_texts
from survey.platform.extensions import csrf, db
from survey.privacy.designs import DESIGNS

from .. import submitting
from ..common import localized, say, survey_at
from . import bp
from .fragments import question_html
from .page import contact_href, option_label, sent_views, survey_page

FIELD_PREFIX = "q_"
#: Form fields that are not answers.
NOT_ANSWERS = ("csrf_token", "invitation", "submission_key")
#: The session's entry that carries what was sent for the randomized questions from the form post to
#: the thank-you page, once (see :func:`_remember_sent`).
SENT = "sent"


def _survey_or_404(slug: str) -> Survey:
    survey = survey_at(slug)
    if survey is None or survey.status == "draft":
        abort(404)
    return survey


def _read(survey: Survey) -> Survey | TranslatedSurvey:
    """The survey as the page shows it: its texts in the page's language, which is one of the survey's
    (survey.web.languages offers no other)."""
    language = str(get_locale() or "en")
    return in_language(survey, language, stored_texts(db.session, survey, language))


bp.add_app_template_global(question_html, "question_html")


@bp.app_template_filter("option_label")
def _option_label(label: str) -> str:
    return option_label(label)


@bp.app_template_filter("contact_href")
def _contact_href(contact: str) -> str | None:
    return contact_href(contact)


def _render_form(
    survey: Survey, error: str | None = None, status: int = 200, invitation: str = "", submission_key: str = ""
):
    """The survey page, or why it cannot be shown: closed (409 to a post), or by invitation without a
    usable code (403). Every response that shows the questions is made here, after both checks, so
    a survey by invitation shows its questions to holders of a valid code only, whatever went wrong."""
    refusal = refusal_on(survey.status, survey.opens_on, survey.closes_on, today())
    if refusal is not None:
        status = 409 if request.method == "POST" else 200
        return render_template("respond/closed.html", survey=_read(survey), reason=localized(refusal)), status
    if survey.access == "invitation":
        try:
            check_code(db.session, survey.id, invitation)
        except Forbidden as refusal:
            return _invitation_page(survey, refusal, typed=invitation)
        invitation = normalize(invitation)
    else:
        invitation = ""
    page = survey_page(_read(survey))
    return (
        render_template(
            "respond/survey.html", page=page, error=error, invitation=invitation, submission_key=submission_key
        ),
        status,
    )


def _invitation_page(survey: Survey, refusal: Forbidden, typed: str | None = ""):
    """Why a survey by invitation does not show its questions, and a box to type the code printed on
    a paper invitation (it is checked like a code that came in the link)."""
    return (
        render_template("respond/invitation.html", survey=_read(survey), message=refusal.message, typed=typed or ""),
        refusal.status,
    )


@bp.after_request
def _no_store_with_a_code(response: Response) -> Response:
    """A page that carries an invitation code (in its URL, or in the hidden field of a form post that
    sent one) is kept by no cache. The form is not parsed here: a view marks that it saw a code."""
    if request.args.get("code") or g.get("carries_code"):
        response.headers["Cache-Control"] = "private, no-store"
    return response


@bp.get("/s/<slug>")
def show(slug: str):
    if SENT in session:  # a new filling: nothing of an earlier one's reports stays in the cookie
        session.pop(SENT)
    return _render_form(_survey_or_404(slug), invitation=request.args.get("code", ""))


def _remember_sent(form: SubmissionForm, answers: dict[str, Any]) -> None:
    """Keep, for the thank-you page, the reports just stored for the questions whose report the
    browser drew (never an answer asked directly, nor a combined question's answer, both of which
    are the respondent's own).

    Why here and in the session: the thank-you page should show what was sent *as the server
    received it*, and nothing may be left in a shared device's browser. The true answer never
    reached the server, so it cannot be here. The page that drew the reports forgets them when it
    goes (and on a shared device it is cleared and leaves the history), the receipt of a
    submission refers to no submission (so that a key cannot lead to answers), and any storage in
    the browser would outlive the page. The session cookie carries the reports, which the server
    has stored anyway, for the one request between the post and the thank-you page, which takes
    them out (:func:`_take_sent`), as does opening the survey page again."""
    reports = {}
    for field in form.fields:
        design = DESIGNS.get(field.design or "")
        if design is not None and not design.combined and field.key in answers:
            if answers[field.key] == DECLINED_MARKER:
                continue  # declined: no report was drawn, so there is none to show
            reports[field.key] = int(answers[field.key])
    session[SENT] = {"survey": form.slug, "reports": reports}


def _take_sent(slug: str) -> dict[str, int]:
    """The reports :func:`_remember_sent` kept for this survey, taken out of the session when the
    thank-you page is opened as a page. The respondent's page follows the post's redirect with
    fetch() before it goes there (to learn whether the answers had already arrived): that request
    (``Sec-Fetch-Dest: empty``) is answered before this is called, and any other that is not a
    document leaves them for the page itself. A browser that sends no ``Sec-Fetch-Dest`` (plain
    http on a non-local host) has them taken by the fetch, and its thank-you page shows no list."""
    if request.headers.get("Sec-Fetch-Dest", "document") != "document":
        return {}
    if SENT not in session:
        return {}
    sent = session.pop(SENT)
    if not isinstance(sent, dict) or sent.get("survey") != slug:
        return {}
    return {str(k): int(v) for k, v in sent.get("reports", {}).items()}


@bp.post("/s/<slug>")
def submit_form(slug: str):
    """The form post: reported values only, in fields ``q_<question key>``, and the page's
    ``submission_key`` (a resend of a stored submission is received once)."""
    form = submitting.form_or_404(slug)
    answers: dict[str, Any] = {}
    invitation = request.form.get("invitation", "")
    key = request.form.get("submission_key", "")
    g.carries_code = bool(invitation)
    for name in request.form:
        if name in NOT_ANSWERS:
            continue
        values = request.form.getlist(name)
        # The page shown again with the reason checks first that this respondent may see it.
        if not name.startswith(FIELD_PREFIX):
            message = say("submission.nothing_stored", message=say("submission.unexpected_field", name=name))
            return _render_form(_survey_or_404(slug), message, 400, invitation=invitation, submission_key=key)
        if len(values) > 1:
            twice = say("submission.answered_twice", key=name[len(FIELD_PREFIX) :])
            message = say("submission.nothing_stored", message=twice)
            return _render_form(_survey_or_404(slug), message, 400, invitation=invitation, submission_key=key)
        answers[name[len(FIELD_PREFIX) :]] = values[0]
    try:
        recorded = submitting.record(form, answers, invitation, key)
    except DomainError as error:
        if SENT in session:
            session.pop(SENT)
        survey = _survey_or_404(slug)  # only now: the page is shown again, with the reason
        if survey.access == "invitation" and isinstance(error, Forbidden):
            return _invitation_page(survey, error)
        return _render_form(
            survey,
            say("submission.nothing_stored", message=localized(error)),
            error.status,
            invitation=invitation,
            submission_key=key,
        )
    _remember_sent(form, answers)
    return redirect(url_for("respond.thanks", slug=slug, again=1 if recorded.already else None), code=303)


@bp.get("/s/<slug>/thanks")
def thanks(slug: str):
    """Thanks; ``again=1`` when a resend found its answers already received (stored once). Right
    after sending, it also shows what was sent for each randomized question (:func:`_take_sent`);
    that page is then kept by no cache (the back button must not show it to the next person at a
    shared device).

    The respondent's page follows its post's redirect here with fetch() (``Sec-Fetch-Dest: empty``)
    and reads only the status and the address reached, to learn that the answers arrived and
    whether they had before; then it opens the page. That request gets 204 and nothing is made for
    it: the page rendered for nobody to read cost 7% of a browser submission's CPU
    (benchmarks/browser_submission.md). The survey is still looked up, so an unknown slug is a 404."""
    survey = _survey_or_404(slug)
    if request.headers.get("Sec-Fetch-Dest") == "empty":
        return Response(status=204, headers={"Cache-Control": "private, no-store", "Vary": "Sec-Fetch-Dest"})
    reports = _take_sent(slug)
    shown = _read(survey)
    sent = sent_views(survey_page(shown), reports) if reports else []
    again = request.args.get("again") == "1"
    response = Response(render_template("respond/thanks.html", survey=shown, already_received=again, sent=sent))
    response.vary.add("Sec-Fetch-Dest")  # what is sent depends on it: a cache must not answer one with the other
    if sent:
        response.headers["Cache-Control"] = "private, no-store"
    return response


@bp.get("/s/<slug>/preview")
@login_required
def preview(slug: str):
    """The respondent page exactly as respondents see it, for the survey's owner and co-organizers
    (anyone else: 404), in any state and whatever the access: a draft before it is published, an
    invitation-only survey without a code. Marked as a preview; nothing can be sent from it (the form
    has no action, its button stays off, and a draft accepts no post anyway)."""
    survey = survey_for(db.session, current_user, slug, "edit")
    response = Response(
        render_template("respond/survey.html", page=survey_page(_read(survey)), invitation="", preview=True)
    )
    response.headers["Cache-Control"] = "private, no-store"
    return response


def _usable_code(survey: Survey, typed: str) -> str:
    """``typed`` normalized if it is a code that would admit a submission to ``survey`` now; "" otherwise."""
    if survey.access != "invitation" or not typed:
        return ""
    try:
        check_code(db.session, survey.id, typed)
    except Forbidden:
        return ""
    return normalize(typed)


@bp.get("/s/<slug>/privacy")
def privacy(slug: str):
    """What is and is not protected, in plain words, for the way this survey draws its reports.

    A survey by invitation shows its questions to holders of a valid code only, and so does this
    page: without one it explains the protection in general and names nothing of the questions (no
    key, text, option, number of questions or ε); with the code the survey page links here with, it
    shows each question as the survey page does. The survey's organizers see the whole page, marked
    as a preview (a draft's too)."""
    survey = survey_at(slug)
    if survey is None:
        abort(404)
    code = _usable_code(survey, request.args.get("code", ""))
    hidden = survey.is_draft or (survey.access == "invitation" and not code)
    preview = hidden and allowed(current_user, survey, "edit")
    if survey.is_draft and not preview:
        abort(404)
    return render_template(
        "respond/privacy.html",
        page=survey_page(_read(survey)),
        show_questions=not hidden or preview,
        code=code,
        preview=preview,
    )


@bp.post("/api/surveys/<slug>/responses")
@csrf.exempt  # no cookie is involved; JSON with this content type cannot be sent cross-site without CORS
def submit_json(slug: str):
    """``{"answers": {"<question key>": <reported option code>, ...}}`` → 201, or a 4xx saying why
    (:func:`survey.web.submitting.submit_json`, which /api/v1 answers with too)."""
    return submitting.submit_json(slug)
