"""Results for signed-in users: the estimates page, its chart, and the four downloads.

Every number shown or downloaded comes from :func:`survey.domain.tallies.survey_results` (the running
tallies, then :func:`survey.privacy.estimate`); these views only choose how to present it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Response, jsonify, render_template, request, stream_with_context
from flask_login import current_user, login_required

from survey.domain.access import survey_for, visible_surveys
from survey.domain.analysis import WEEK, Comparison, Regression, comparable, compare, regression
from survey.domain.errors import DomainError
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
    archived = request.args.get("archived") == "1"
    if current_user.is_authenticated:
        surveys = visible_surveys(db.session, current_user, archived=archived)
        rows = [SurveyRow(s, submission_count(db.session, s), epsilon_text(s.total_epsilon())) for s in surveys]
    return render_template("results/index.html", rows=rows, archived=archived)


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


# -- comparisons -----------------------------------------------------------------------------------


def _comparison_choice(survey: Survey) -> tuple[str | None, str, str | None]:
    """``question``, ``by`` and ``category`` from the query string; what is not given starts from
    the first randomized question, by the first question asked directly (or by week)."""
    randomized, direct = comparable(survey)
    question = request.args.get("question") or (randomized[0].key if randomized else None)
    by = request.args.get("by") or (direct[0].key if direct else WEEK)
    return question, by, request.args.get("category")


def _comparison(survey: Survey) -> Comparison:
    """The comparison the query string asks for; a :class:`DomainError` (400 for a bad choice, 409
    before anyone answered) when there is none."""
    return compare(db.session, survey, *_comparison_choice(survey))


def _group_chart(comparison: Comparison) -> Chart:
    """The breakdown as the results chart draws a question: one bar per group, with its interval."""
    data = comparison.to_dict()
    bars = [
        {"label": f"{g['label']} (n = {g['n']})", "proportion": g["share"], "ci_low": g["ci_low"]}
        | {"ci_high": g["ci_high"]}
        for g in data["groups"]
        if g["share"] is not None
    ]
    question = {"key": "compare", "text": f"{data['question_text']}: {data['category']}", "n": data["total"]["n"]}
    return estimate_chart({**question, "categories": bars})


@bp.get("/surveys/<slug>/compare")
@login_required
def compare_page(slug: str):
    """One sensitive question by a direct question, by week, or against another sensitive question."""
    survey = _survey_or_404(slug)
    randomized, direct = comparable(survey)
    question, by, category = _comparison_choice(survey)
    chosen = next((q for q in randomized if q.key == question), None)
    if chosen is not None and category not in [str(o.code) for o in chosen.options]:
        category = None  # another question was picked: start from its first option
    result: Comparison | None = None
    error: DomainError | None = None
    status = 200
    if randomized:
        try:
            result = compare(db.session, survey, question, by, category)
        except DomainError as e:
            error, status = e, (200 if e.status == 409 else e.status)
    return (
        render_template(
            "results/compare.html",
            survey=survey,
            randomized=randomized,
            others=[q for q in randomized if q.key != question],
            direct=direct,
            question=chosen,
            by=by,
            category=None if result is None or result.kind != "breakdown" else result.result.category,
            result=result,
            data=None if result is None else result.to_dict(),
            chart=None if result is None or result.kind != "breakdown" else _group_chart(result),
            error=error,
            query={"question": question, "by": by, **({"category": category} if category else {})},
            week=WEEK,
        ),
        status,
    )


def _analysis_csv(slug: str, make: Callable[[Survey], Comparison | Regression], name: Callable[[Any], str]):
    """An analysis as a CSV download; a refused choice as plain text with its status."""
    survey = _survey_or_404(slug)
    try:
        analysis = make(survey)
    except DomainError as e:
        return Response(e.message + "\n", status=e.status, mimetype="text/plain")
    return _download(analysis.csv(), f"{survey.slug}-{name(analysis)}.csv", "text/csv")


def _analysis_json(slug: str, make: Callable[[Survey], Comparison | Regression]):
    """An analysis as JSON; errors as ``{"error", "status", "path"}``, and a JSON 401, not a redirect."""
    if not current_user.is_authenticated:
        return jsonify(error="Sign in to see results.", status=401), 401
    survey = _survey_or_404(slug)
    try:
        return jsonify(make(survey).to_dict())
    except DomainError as e:
        return jsonify(e.to_json()), e.status


@bp.get("/surveys/<slug>/compare.csv")
@login_required
def compare_file(slug: str):
    return _analysis_csv(slug, _comparison, lambda c: f"{c.question.key}-by-{c.by.key if c.by else WEEK}")


@bp.get("/api/surveys/<slug>/compare")
def compare_api(slug: str):
    return _analysis_json(slug, _comparison)


# -- regression ------------------------------------------------------------------------------------


def _regression_choice(survey: Survey) -> tuple[str | None, list[str]]:
    """``outcome`` and ``covariates`` from the query string; without an outcome, the first
    randomized question on every question asked directly."""
    randomized, direct = comparable(survey)
    if "outcome" not in request.args:
        return (randomized[0].key if randomized else None), [q.key for q in direct]
    return request.args.get("outcome"), request.args.getlist("covariates")


def _regression(survey: Survey) -> Regression:
    return regression(db.session, survey, *_regression_choice(survey), request.args.get("category"))


@bp.get("/surveys/<slug>/regression")
@login_required
def regression_page(slug: str):
    """What predicts a sensitive answer: a logistic regression on questions asked directly."""
    survey = _survey_or_404(slug)
    randomized, direct = comparable(survey)
    outcome, chosen = _regression_choice(survey)
    result: Regression | None = None
    error: DomainError | None = None
    status = 200
    if randomized and direct:
        try:
            result = regression(db.session, survey, outcome, chosen, request.args.get("category"))
        except DomainError as e:
            error, status = e, (200 if e.status == 409 else e.status)
    query = {"outcome": outcome, "covariates": chosen}
    return (
        render_template(
            "results/regression.html",
            survey=survey,
            randomized=randomized,
            direct=direct,
            outcome=outcome,
            chosen=chosen,
            result=result,
            data=None if result is None else result.to_dict(),
            error=error,
            query=query,
        ),
        status,
    )


@bp.get("/surveys/<slug>/regression.csv")
@login_required
def regression_file(slug: str):
    return _analysis_csv(slug, _regression, lambda fitted: f"{fitted.outcome.key}-regression")


@bp.get("/api/surveys/<slug>/regression")
def regression_api(slug: str):
    return _analysis_json(slug, _regression)
