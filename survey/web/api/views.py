"""The views of /api/v1 (see the package's docstring; docs/api.md for people, the OpenAPI
description for machines).

Who may read: a request with a token has been authenticated by survey.web.auth.bearer before the
view runs (its scope checked against the one the view declares with :func:`takes_token`, its survey
limit against the slug); a request without one may come from a signed-in browser. Either way the
view then asks the user's role on the survey now (``survey_for``: 404 when there is none, the same
answer as for a survey that does not exist). Anonymous: 401 ``api.unauthenticated``.

Errors are raised, not returned: a :class:`DomainError` reaches the app's handler
(survey.web.common), which answers any request under /api/ with its problem JSON.
"""

from __future__ import annotations

import json
import re
from typing import Any

from flask import Response, current_app, jsonify, render_template, request, send_file, stream_with_context, url_for
from flask_babel import force_locale
from flask_login import current_user
from markupsafe import Markup, escape

from survey.domain.accounts.access import allowed, role_of, survey_for, visible_surveys
from survey.domain.errors import DomainError, Forbidden
from survey.domain.languages import LANGUAGES
from survey.domain.models import Survey, User
from survey.domain.responses.imports import MAX_BYTES, format_of, import_responses
from survey.domain.responses.tallies import submission_count
from survey.domain.results.analysis import compare, regression
from survey.domain.results.codebooks import codebook_in
from survey.domain.results.documents import anytime_document, live_document
from survey.domain.results.exports import estimates_document, microdata_csv
from survey.domain.results.labelled import labelled_file
from survey.domain.surveys.content_translations import FIRST
from survey.domain.surveys.specs import survey_to_spec
from survey.platform import folding
from survey.platform.extensions import csrf, db

from .. import submitting
from ..common import current_grant, me, takes_token
from . import bp
from .description import LABELLED_TYPES, description, operations

#: A `code span` in the description's texts (CommonMark's, which OpenAPI's descriptions are written in).
CODE_SPAN = re.compile(r"`([^`<>]+)`")
#: What each scope lets a token do on a survey, in the role rules' words (survey.domain.accounts.access).
NEED_OF_SCOPE = {"results": "results", "manage": "edit"}


@bp.after_request
def _no_store(response: Response) -> Response:
    """Results and specs are for their readers only: no browser or proxy keeps a copy. (The
    description is public and the same for all, but small: it is not worth a rule of its own.)"""
    response.headers["Cache-Control"] = "private, no-store"
    if response.status_code == 401:  # RFC 6750: a 401 says how to authenticate
        response.headers.setdefault("WWW-Authenticate", 'Bearer realm="api"')
    return response


@bp.app_template_filter("code_spans")
def _code_spans(text: str | None) -> Markup:
    """The description's `code` spans (its only markup) as <code>, everything else escaped."""
    return Markup(CODE_SPAN.sub(r"<code>\1</code>", str(escape(text or ""))))


def _user() -> User:
    """The token's user or the signed-in user; 401 (with ``WWW-Authenticate``) for anyone else."""
    if not current_user.is_authenticated:
        raise DomainError("api.unauthenticated")
    return me()


def _readable(slug: str, need: str = "results") -> Survey:
    """The survey ``slug`` if this request's user has ``need`` on it now; 404 otherwise."""
    return survey_for(db.session, _user(), slug, need)


def _download(body: Any, filename: str, mimetype: str) -> Response:
    response = Response(body, mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# -- the description -------------------------------------------------------------------------------


@bp.get("/openapi.json")
@takes_token()
def openapi():
    """The OpenAPI 3.1 description of this API (public: it says what exists, not what is in it)."""
    return jsonify(description(request.host_url.rstrip("/") + bp.url_prefix))


@bp.get("/docs")
@takes_token()
def docs():
    """The description as a page for people, drawn on the server (no script: the CSP allows none)."""
    document = description(request.host_url.rstrip("/") + bp.url_prefix)
    return render_template("api/reference.html", api=document, operations=operations(document))


# -- surveys ---------------------------------------------------------------------------------------


@bp.get("/surveys")
@takes_token("results", "manage")
def surveys():
    """The surveys this request may reach: the user's (owned or with an accepted role), archived ones
    too, within the token's surveys; with a ``manage`` token only those the user may edit."""
    user = _user()
    grant = current_grant()
    need = NEED_OF_SCOPE[grant.scope] if grant is not None else "results"
    rows = [*visible_surveys(db.session, user), *visible_surveys(db.session, user, archived=True)]
    items = [_survey_item(s, user) for s in rows if allowed(user, s, need) and (grant is None or grant.reaches(s))]
    return jsonify({"surveys": items})


def _survey_item(survey: Survey, user: User) -> dict[str, Any]:
    links = {
        "estimates": url_for("api.estimates", slug=survey.slug),
        "live": url_for("api.live", slug=survey.slug),
        "microdata": url_for("api.responses_csv", slug=survey.slug),
        "codebook": url_for("api.codebook_json", slug=survey.slug),
    }
    if allowed(user, survey, "edit"):
        links["spec"] = url_for("api.spec", slug=survey.slug)
    return {
        "slug": survey.slug,
        "title": survey.title,
        "status": survey.status,
        "role": role_of(user, survey),
        "submissions": submission_count(db.session, survey),
        "links": links,
    }


@bp.get("/surveys/<slug>/spec")
@takes_token("manage")
def spec(slug: str):
    """The JSON spec that re-creates the survey (its organizers only, as on the management page)."""
    survey = _readable(slug, "edit")
    body = json.dumps(survey_to_spec(survey), ensure_ascii=False)
    return Response(body, mimetype="application/json")


# -- results ---------------------------------------------------------------------------------------


@bp.get("/surveys/<slug>/estimates")
@takes_token("results")
def estimates(slug: str):
    """Every question's counts, estimates and 95% intervals, and the survey's total ε."""
    return jsonify(estimates_document(db.session, _readable(slug)))


@bp.get("/surveys/<slug>/live")
@takes_token("results")
def live(slug: str):
    """The live (anytime-valid) intervals, their timelines, and the stopping rule's state."""
    return jsonify(live_document(db.session, _readable(slug)))


@bp.get("/surveys/<slug>/anytime-test")
@takes_token("results")
def anytime_test(slug: str):
    """The anytime-valid test of one share against a threshold."""
    survey = _readable(slug)
    args = request.args
    document = anytime_document(
        db.session, survey, args.get("question"), args.get("threshold"), args.get("alternative"), args.get("category")
    )
    return jsonify(document)


@bp.get("/surveys/<slug>/compare")
@takes_token("results")
def comparison(slug: str):
    """One sensitive question by a direct question, by week, or against another sensitive question."""
    survey = _readable(slug)
    args = request.args
    return jsonify(compare(db.session, survey, args.get("question"), args.get("by"), args.get("category")).to_dict())


@bp.get("/surveys/<slug>/regression")
@takes_token("results")
def logistic_regression(slug: str):
    """A logistic regression of one sensitive answer on questions asked directly."""
    survey = _readable(slug)
    args = request.args
    fitted = regression(db.session, survey, args.get("outcome"), args.getlist("covariates"), args.get("category"))
    return jsonify(fitted.to_dict())


# -- exports ---------------------------------------------------------------------------------------


@bp.get("/surveys/<slug>/responses.csv")
@takes_token("results")
def responses_csv(slug: str):
    """The randomized microdata, one row per submission, streamed."""
    survey = _readable(slug)
    return _download(stream_with_context(microdata_csv(db.session, survey)), f"{survey.slug}-responses.csv", "text/csv")


def _labelled(slug: str, file_format: str) -> Response:
    survey = _readable(slug)
    return send_file(
        labelled_file(db.session, survey, file_format),
        mimetype=LABELLED_TYPES[file_format],
        as_attachment=True,
        download_name=f"{survey.slug}-responses.{file_format}",
    )


@bp.get("/surveys/<slug>/responses.sav")
@takes_token("results")
def responses_sav(slug: str):
    """The microdata for SPSS, with the questions' texts and the options' labels."""
    return _labelled(slug, "sav")


@bp.get("/surveys/<slug>/responses.dta")
@takes_token("results")
def responses_dta(slug: str):
    """The microdata for Stata, with the questions' texts and the options' labels."""
    return _labelled(slug, "dta")


@bp.get("/surveys/<slug>/codebook")
@takes_token("results")
def codebook_json(slug: str):
    """Everything needed to analyse the microdata: columns, options, design matrices, total ε; in the
    survey's first language, or in ``?language=`` one of its others (the same codes)."""
    survey = _readable(slug)
    language = request.args.get("language") or FIRST
    with force_locale(language if language in LANGUAGES else FIRST):  # yes and no are the app's words
        return jsonify(codebook_in(survey, language))


# -- the respondent's submission -------------------------------------------------------------------


@bp.post("/surveys/<slug>/responses")
@csrf.exempt  # no cookie is involved; JSON with this content type cannot be sent cross-site without CORS
@takes_token()
def submit(slug: str):
    """A respondent's randomized answers (public, as the survey page's own submission)."""
    return submitting.submit_json(slug)


# -- responses collected elsewhere -----------------------------------------------------------------


@bp.post("/surveys/<slug>/imports")
@csrf.exempt  # a token only (refused below without one): no cookie is read, so no cross-site request
@takes_token("imports", methods=frozenset({"POST"}))
def imports(slug: str):
    """Responses collected elsewhere (paper, telephone, another tool), as CSV or JSON in the
    microdata export's shape (survey.domain.responses.imports): by the survey's owner or organizers
    with an ``imports`` token. 201 with what was added; 200 when the same rows came before (nothing
    added); 400 listing every row and column at fault (nothing written)."""
    if current_grant() is None:
        raise DomainError("api.unauthenticated")
    request.max_content_length = MAX_BYTES  # the app's limit fits a submission; nothing read the body yet
    request.max_form_memory_size = MAX_BYTES
    user = _user()
    survey = _readable(slug, "results")
    if not allowed(user, survey, "edit"):
        raise Forbidden("import.not_organizer")
    upload = request.files.get("file")
    if upload is not None:
        data, file_format = upload.read(), format_of(upload.filename, upload.mimetype)
    else:
        data, file_format = request.get_data(), format_of(None, request.mimetype)
    dry_run = request.args.get("dry_run", "").lower() in ("1", "true", "yes")
    try:
        result = import_responses(db.session, survey, data, file_format, user=user, dry_run=dry_run)
        db.session.commit()
    except Exception:
        db.session.rollback()
        raise
    if not (result.already or result.dry_run):
        folding.fold_after_import(current_app._get_current_object())  # type: ignore[attr-defined]
    status = 201 if not (result.already or result.dry_run) else 200
    return jsonify(result.to_dict()), status
