"""Results for signed-in users: the estimates page, its chart, and the four downloads.

Every number shown or downloaded comes from :func:`survey.domain.tallies.survey_results` (the running
tallies, then :func:`survey.privacy.estimate`); these views only choose how to present it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from flask import Response, jsonify, render_template, stream_with_context
from flask_login import current_user, login_required

from survey.domain.access import survey_for, visible_surveys
from survey.domain.exports import LEVEL, codebook, estimates_csv, estimates_document, microdata_csv
from survey.domain.models import Survey
from survey.domain.tallies import (
    QuestionResult,
    results_total_epsilon,
    submission_count,
    survey_counts,
    survey_results,
)
from survey.domain.wording import epsilon_text
from survey.platform.extensions import db
from survey.privacy.designs import design_name
from survey.privacy.estimation import FLOOR_FACTOR

from . import bp
from .chart import Chart, estimate_chart

KIND_NAMES = {"yes_no": "yes / no", "choice": "choice", "direct": "direct"}
INTERVAL_NAMES = {
    "wilson-floor-mapped": "Wilson, mapped",
    "clopper-pearson-mapped": "exact, mapped",
    "clopper-pearson-projected": "exact, projected",
    "profile-likelihood": "profile likelihood",
    "delta-wald": "delta method",
}


@bp.after_request
def _no_store(response: Response) -> Response:
    """Results are for signed-in eyes only: no browser or proxy should keep a copy."""
    response.headers.setdefault("Cache-Control", "private, no-store")
    return response


@bp.app_template_filter("share")
def _share(value: float) -> str:
    """A share as a percentage with one decimal (estimates can be negative: the sign is kept)."""
    return f"{100 * value:.1f}%"


@bp.app_template_filter("points")
def _points(value: float) -> str:
    """A standard error in percentage points."""
    return f"{100 * value:.1f}"


def _survey_or_404(slug: str) -> Survey:
    """The survey if the signed-in user may see its results; 404 otherwise, as if it did not exist."""
    return survey_for(db.session, current_user, slug, "results")


def _download(body: Any, filename: str, mimetype: str) -> Response:
    response = Response(body, mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# -- pages -----------------------------------------------------------------------------------------


@dataclass
class SurveyRow:
    """One line of the survey list, counted and summed before rendering so the template only formats."""

    survey: Survey
    submissions: int
    epsilon: str


@bp.get("/")
def index():
    """Signed in: every survey with its submissions and total ε. Anonymous: what this tool is."""
    rows = []
    if current_user.is_authenticated:
        surveys = visible_surveys(db.session, current_user)
        rows = [SurveyRow(s, submission_count(db.session, s), epsilon_text(s.total_epsilon())) for s in surveys]
    return render_template("results/index.html", rows=rows)


@dataclass
class QuestionSection:
    """One question as the results page shows it: the numbers plus the words around them."""

    result: QuestionResult
    data: dict[str, Any]
    chart: Chart | None
    design_name: str = ""
    parameters: list[tuple[str, str]] = field(default_factory=list)
    epsilon: str = ""
    one_sided: bool = False


def _parameter_text(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_parameter_text(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _section(result: QuestionResult) -> QuestionSection:
    data = result.to_dict(LEVEL)
    chart = estimate_chart(data) if result.estimate is not None else None
    section = QuestionSection(result, data, chart)
    design = result.question.design
    if design is not None:
        section.design_name = design_name(design.mechanism_name)
        section.parameters = [(name, _parameter_text(v)) for name, v in design.parameters.items()]
        section.epsilon = epsilon_text(result.mechanism.epsilon)
        section.one_sided = math.isinf(result.mechanism.epsilon)
    return section


@bp.get("/surveys/<slug>/results")
@login_required
def survey(slug: str):
    """Per question: counts, consistent and unbiased estimates with 95% intervals, ε, a chart."""
    survey = _survey_or_404(slug)
    counts = survey_counts(db.session, survey)
    results = survey_results(db.session, survey, counts)
    sections = [_section(r) for r in results]
    return render_template(
        "results/survey.html",
        survey=survey,
        submissions=counts.submissions,
        total_epsilon=epsilon_text(results_total_epsilon(results)),
        sections=sections,
        level=LEVEL,
        kind_names=KIND_NAMES,
        interval_names=INTERVAL_NAMES,
        floor_level=1 - FLOOR_FACTOR * (1 - LEVEL),
    )


# -- downloads -------------------------------------------------------------------------------------


@bp.get("/surveys/<slug>/estimates.csv")
@login_required
def estimates_file(slug: str):
    survey = _survey_or_404(slug)
    return _download(estimates_csv(db.session, survey), f"{survey.slug}-estimates.csv", "text/csv")


@bp.get("/api/surveys/<slug>/estimates")
def estimates_api(slug: str):
    """The estimates as JSON. A machine client gets a JSON 401, not a redirect to a sign-in form."""
    if not current_user.is_authenticated:
        return jsonify(error="Sign in to see results.", status=401), 401
    return jsonify(estimates_document(db.session, _survey_or_404(slug)))


@bp.get("/surveys/<slug>/responses.csv")
@login_required
def responses_file(slug: str):
    """The randomized microdata, streamed: memory stays flat however many submissions there are."""
    survey = _survey_or_404(slug)
    chunks = stream_with_context(microdata_csv(db.session, survey))
    return _download(chunks, f"{survey.slug}-responses.csv", "text/csv")


@bp.get("/surveys/<slug>/codebook.json")
@login_required
def codebook_file(slug: str):
    survey = _survey_or_404(slug)
    response = jsonify(codebook(survey))
    response.headers["Content-Disposition"] = f'attachment; filename="{survey.slug}-codebook.json"'
    return response
