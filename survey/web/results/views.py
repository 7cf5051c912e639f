"""Results for signed-in users: the estimates page, its chart, and the four downloads.

Every number shown or downloaded comes from :func:`survey.domain.responses.tallies.survey_results` (the running
tallies, then :func:`survey.privacy.estimate`); these views only choose how to present it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Response, current_app, jsonify, render_template, request, send_file, stream_with_context
from flask_babel import force_locale
from flask_login import current_user, login_required

from survey.domain.accounts.access import survey_for, visible_surveys
from survey.domain.errors import DomainError
from survey.domain.languages import LANGUAGES
from survey.domain.models import Question, Survey
from survey.domain.responses.mixing import held_count
from survey.domain.responses.tallies import (
    QuestionResult,
    number_results,
    submission_count,
    survey_counts,
    survey_results,
)
from survey.domain.results.analysis import (
    MAX_COVARIATES,
    WEEK,
    Comparison,
    Regression,
    comparable,
    compare,
    covariates_of,
    regression,
    too_large_to_pair,
)
from survey.domain.results.codebooks import codebook_in
from survey.domain.results.coding import parse_category, researcher_code, researcher_options
from survey.domain.results.documents import anytime_document, live_document
from survey.domain.results.exports import LEVEL, estimates_csv, estimates_document, microdata_csv
from survey.domain.results.kept import digest, kept
from survey.domain.results.labelled import labelled_file
from survey.domain.results.live import ALTERNATIVES, LiveQuestion, anytime, live_status, timelines
from survey.domain.results.number_analysis import NumberComparison, NumberRegression, compare_number, number_regression
from survey.domain.results.rscript import r_script
from survey.domain.results.split_ballots import SplitBallot, split_ballot_by, split_ballots
from survey.domain.surveys.budget import stored_total_epsilon, survey_epsilons
from survey.domain.surveys.content_translations import FIRST, languages_of
from survey.domain.surveys.kinds import NAMES as KIND_NAMES
from survey.domain.surveys.kinds import REGISTRY
from survey.domain.surveys.outline import option_counts, question_list, with_options
from survey.domain.surveys.wording import epsilon_text
from survey.platform.extensions import db
from survey.privacy.designs import design_name
from survey.privacy.estimation import FLOOR_FACTOR

from ..common import json_error, localized, say
from . import bp
from .chart import Chart, TimelineChart, estimate_chart, timeline_chart

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


bp.add_app_template_filter(researcher_options, "researcher_options")


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
        epsilons = survey_epsilons(db.session, surveys)
        rows = [SurveyRow(s, submission_count(db.session, s), epsilon_text(epsilons[s.id])) for s in surveys]
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
    #: The live (anytime-valid) intervals, their chart over time, and a test a researcher asked for.
    live: LiveQuestion | None = None
    timeline: TimelineChart | None = None
    test: dict[str, Any] | None = None


def _parameter_text(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_parameter_text(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


#: A fixed interval wider than this on either side means the numbers say little yet (the page says so).
WIDE_HALF_WIDTH = 0.25


def _section(result: QuestionResult) -> QuestionSection:
    data = result.to_dict(LEVEL)
    if result.estimate is not None:
        low, high = result.estimate.ci(LEVEL)
        data["widest_half_width"] = float(((high - low) / 2).max())
    chart = estimate_chart(data) if result.estimate is not None else None
    section = QuestionSection(result, data, chart)
    design = result.question.design
    if design is not None:
        section.design_name = design_name(design.mechanism_name)
        section.parameters = [(name, _parameter_text(v)) for name, v in design.parameters.items()]
        section.epsilon = epsilon_text(result.mechanism.epsilon)
        section.one_sided = math.isinf(result.mechanism.epsilon)
    return section


#: A results page shows the questions in order until their options (a number question counts as one)
#: would pass this many, or this many questions: a survey of 200 questions of 50 options is 20 pages
#: of 10, each a few hundred kilobytes, rather than one page of 34 MB that took 12 s to make
#: (``benchmarks/worst_case.md``). Most surveys fit on one page.
PAGE_OPTIONS = 500
PAGE_QUESTIONS = 25
#: A design matrix is shown as a table up to this many options (a 50 × 50 table is 2,500 numbers
#: nobody reads on a page; the codebook has every matrix).
MATRIX_SHOWN = 12


def result_pages(survey: Survey) -> list[list[Question]]:
    """The survey's questions cut into pages (see :data:`PAGE_OPTIONS`), in order; at least one page."""
    pages: list[list[Question]] = [[]]
    weight = 0
    for q in survey.questions:
        size = 1 if q.is_number else len(q.options)
        if pages[-1] and (weight + size > PAGE_OPTIONS or len(pages[-1]) >= PAGE_QUESTIONS):
            pages.append([])
            weight = 0
        pages[-1].append(q)
        weight += size
    return pages


def _page_index(pages: list[list[Question]], asked: str | None) -> int:
    """The page asked for (``?page=``, from 1), else the one holding the question a test is about."""
    try:
        return min(max(int(request.args.get("page", "")), 1), len(pages)) - 1
    except ValueError:
        pass
    for i, page in enumerate(pages):
        if any(q.key == asked for q in page):
            return i
    return 0


@bp.get("/surveys/<slug>/results")
@login_required
def survey(slug: str):
    """Per question: counts, consistent and unbiased estimates with 95% intervals, ε, a chart; a page
    of questions at a time (:func:`result_pages`), with every question's live state above."""
    survey = _survey_or_404(slug)
    counts = survey_counts(db.session, survey)
    pages = result_pages(survey)
    asked = request.args.get("test")
    index = _page_index(pages, asked)
    shown = pages[index]
    results = survey_results(db.session, survey, counts, shown)
    sections = [_section(r) for r in results]
    live = live_status(db.session, survey, counts)
    by_key = live.by_key()
    answered = [
        s.result.question for s in sections if by_key.get(s.result.question.key) and by_key[s.result.question.key].n > 0
    ]
    days = timelines(db.session, answered)
    for section in sections:
        q = section.result.question
        section.live = by_key.get(q.key)
        if q.id in days:
            data = days[q.id].to_dict()
            # the drawing is a function of the numbers and the text alone: kept while they are the same
            key = digest(["timeline chart", q.text, json.dumps(data, sort_keys=True)])
            section.timeline = kept(key, lambda data=data, text=q.text: timeline_chart(data, text))
        if asked == q.key:
            section.test = _page_test(survey, q)
    return render_template(
        "results/survey.html",
        survey=survey,
        codebook_languages=languages_of(survey),
        language_names=LANGUAGES,
        live=live,
        alternatives=ALTERNATIVES,
        wide=WIDE_HALF_WIDTH,
        submissions=counts.submissions,
        held=held_count(db.session, survey.id) if survey.access == "invitation" else 0,
        batch=current_app.config["ANONYMITY_BATCH"],
        total_epsilon=epsilon_text(stored_total_epsilon(survey)),
        sections=sections,
        numbers=number_results(db.session, survey, counts, shown),
        level=LEVEL,
        kind_names=KIND_NAMES,
        kinds=REGISTRY,
        interval_names=INTERVAL_NAMES,
        floor_level=1 - FLOOR_FACTOR * (1 - LEVEL),
        pages=pages,
        page=index + 1,
        page_of={q.key: i + 1 for i, page in enumerate(pages) for q in page},
        matrix_shown=MATRIX_SHOWN,
        ballots=_split_ballots(survey, counts) if index == 0 else [],
        design_name=design_name,
        **(_ballot_breakdown(survey) if index == 0 else {}),
    )


def _split_ballots(survey: Survey, counts: Any) -> list[SplitBallot]:
    """The survey's split ballots, analysed from their arms' tallies (the first page of results shows them)."""
    arms = [q for q in survey.questions if q.arm_group is not None]
    if not arms:
        return []
    return split_ballots(arms, survey_results(db.session, survey, counts, arms), LEVEL)


def _ballot_breakdown(survey: Survey) -> dict[str, Any]:
    """What the split ballots' "break down by" forms offer (direct questions with options, outside any
    ballot) and, for ``?ballot=<name>&by=<key>``, that ballot's analyses per group of that question."""
    if not any(q.arm_group is not None for q in survey.questions):
        return {}
    offered = [q for q in survey.questions if not q.is_randomized and q.kind_entry.has_options and not q.arm_group]
    found: dict[str, Any] = {"ballot_by_options": offered}
    name, key = request.args.get("ballot"), request.args.get("by")
    by = next((q for q in offered if q.key == key), None)
    if name and by is not None:
        found["ballot_by"] = (name, by, split_ballot_by(db.session, survey.questions, name, by, LEVEL))
    return found


#: The media types of the labelled microdata (as IANA and the formats' makers name them).
LABELLED_TYPES = {"sav": "application/x-spss-sav", "dta": "application/x-stata-dta"}


def _page_test(survey: Survey, question: Question) -> dict[str, Any]:
    """The anytime test the page's form asked for (a threshold typed in percent), or its error."""
    typed = (request.args.get("threshold") or "").strip().rstrip("%").strip()
    asked = {
        "threshold": typed,
        "alternative": request.args.get("alternative", "greater"),
        "category": request.args.get("category", ""),
    }
    try:
        share = float(typed) / 100 if typed else None
    except ValueError:
        share = None
    if share is None:
        return {**asked, "error": say("live.threshold_not_percent")}
    try:
        result = anytime(db.session, survey, question.key, share, asked["alternative"], asked["category"] or None)
    except DomainError as e:
        if e.code == "live.threshold_out_of_range":  # the page asks for a percentage, not a share
            return {**asked, "error": say("live.threshold_percent_out_of_range", **e.params)}
        message = localized(e)
        return {**asked, "error": message[:1].upper() + message[1:] + "."}
    return {**asked, "result": result.to_dict(), "share": share}


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
        return json_error(DomainError("auth.results_sign_in"))
    survey = _survey_or_404(slug)
    response = jsonify(estimates_document(db.session, survey))
    if request.args.get("download"):  # the page's link downloads it, as it does every other file
        response.headers["Content-Disposition"] = f'attachment; filename="{survey.slug}-estimates.json"'
    return response


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
    """The codebook, in the survey's first language or in ``?language=`` one of its others."""
    survey = _survey_or_404(slug)
    language = request.args.get("language") or FIRST
    with force_locale(language if language in LANGUAGES else FIRST):  # yes and no are the app's words
        document = codebook_in(survey, language)
    suffix = "" if language == FIRST else f"-{language}"
    response = jsonify(document)
    response.headers["Content-Disposition"] = f'attachment; filename="{survey.slug}-codebook{suffix}.json"'
    return response


def _labelled_download(slug: str, file_format: str) -> Response:
    """The microdata for SPSS or Stata, with the questions' texts and the options' labels."""
    survey = _survey_or_404(slug)
    handle = labelled_file(db.session, survey, file_format)
    return send_file(
        handle,
        mimetype=LABELLED_TYPES[file_format],
        as_attachment=True,
        download_name=f"{survey.slug}-responses.{file_format}",
    )


@bp.get("/surveys/<slug>/responses.sav")
@login_required
def spss_responses_file(slug: str):
    return _labelled_download(slug, "sav")


@bp.get("/surveys/<slug>/responses.dta")
@login_required
def stata_responses_file(slug: str):
    return _labelled_download(slug, "dta")


@bp.get("/surveys/<slug>/estimates.R")
@login_required
def r_script_file(slug: str):
    """The survey's R script: base R that redoes the estimates from responses.csv."""
    survey = _survey_or_404(slug)
    return _download(r_script(survey), f"{survey.slug}-estimates.R", "text/plain")


@bp.get("/api/surveys/<slug>/live")
def live_api(slug: str):
    """Every randomized question's live intervals, its timeline, and the stopping rule's state; every
    number question's live interval for its mean (:func:`survey.domain.results.documents.live_document`)."""
    if not current_user.is_authenticated:
        return json_error(DomainError("auth.results_sign_in"))
    return jsonify(live_document(db.session, _survey_or_404(slug)))


@bp.get("/api/surveys/<slug>/anytime-test")
def anytime_api(slug: str):
    """The anytime-valid test of one share against a threshold: ``question``, ``threshold`` (a share
    0..1), ``alternative`` (greater, less, two-sided) and ``category`` (the exports' code)."""
    if not current_user.is_authenticated:
        return json_error(DomainError("auth.results_sign_in"))
    survey = _survey_or_404(slug)
    args = request.args
    try:
        document = anytime_document(
            db.session,
            survey,
            args.get("question"),
            args.get("threshold"),
            args.get("alternative"),
            args.get("category"),
        )
    except DomainError as e:
        return json_error(e)
    return jsonify(document)


# -- comparisons -----------------------------------------------------------------------------------


def _comparison_choice(survey: Survey) -> tuple[str | None, str, str | None]:
    """``question``, ``by`` and ``category`` from the query string; what is not given starts from
    the first randomized question, by the first question asked directly (or by week)."""
    randomized, direct = comparable(db.session, survey)
    question = request.args.get("question") or (randomized[0].key if randomized else None)
    by = request.args.get("by") or (direct[0].key if direct else WEEK)
    return question, by, request.args.get("category")


def _comparison(survey: Survey) -> Comparison | NumberComparison:
    """The comparison the query string asks for; a :class:`DomainError` (400 for a bad choice, 409
    before anyone answered) when there is none. A randomized number's is its mean by group."""
    asked = _asked_number(survey, "question")
    if asked is not None:
        return compare_number(db.session, survey, asked.key, request.args.get("by"))
    return compare(db.session, survey, *_comparison_choice(survey))


def _randomized_numbers(survey: Survey) -> list[Question]:
    """The survey's randomized numbers, in survey order: compared by group and regressed linearly."""
    return [q for q in question_list(db.session, survey) if q.kind_entry.randomized_number]


def _asked_number(survey: Survey, name: str) -> Question | None:
    """The randomized number the query string's ``name`` names; without one, the first randomized
    number where the survey has no randomized question with options to start from."""
    numbers = _randomized_numbers(survey)
    asked = request.args.get(name)
    if asked is None and numbers and not comparable(db.session, survey)[0]:
        return numbers[0]
    return next((q for q in numbers if q.key == asked), None)


def _number_comparison_page(survey: Survey, question: Question):
    """A randomized number's mean in each group of a question asked directly."""
    randomized, direct = comparable(db.session, survey)
    by = request.args.get("by") or (direct[0].key if direct else None)
    result: NumberComparison | None = None
    error: DomainError | None = None
    status = 200
    if direct:
        try:
            result = compare_number(db.session, survey, question.key, by)
        except DomainError as e:
            error, status = e, (200 if e.status == 409 else e.status)
    return (
        render_template(
            "results/compare_number.html",
            survey=survey,
            numbers=_randomized_numbers(survey),
            randomized=randomized,
            direct=direct,
            question=question,
            by=by,
            result=result,
            data=None if result is None else result.to_dict(),
            error=error,
            query={"question": question.key, "by": by},
        ),
        status,
    )


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


def _chosen_category(question: Question | None, category: str | None) -> int | None:
    """The researcher's code of the option whose share is asked for: ``category`` when it is one of
    ``question``'s, else the option the analysis takes by default (its first listed: yes, for a
    yes/no question), so that the form's select never falls back on whichever option comes first."""
    codes = [] if question is None else [o["code"] for o in researcher_options(question)]
    if question is None or not codes:  # no question, or one without options (a number)
        return None
    if category is not None and category.isdigit() and int(category) in codes:
        return int(category)
    return researcher_code(question, parse_category(question, None))


#: How many options, over every question, the analysis pages carry for their answer select to follow
#: the question picked (static/js/results/answer-options.js). Past it they carry the chosen
#: question's only (the server does the same on the next page): 200 questions of 50 long options made
#: an 8 MB page.
OPTIONS_CARRIED = 1000


def _options_by_question(survey: Survey, questions: list[Question], chosen: str | None) -> dict[str, dict[str, Any]]:
    """Each question's options in the researcher's codes and the one chosen by default, for the
    page's select of an answer, read in one query for all; only ``chosen``'s when there are more
    than :data:`OPTIONS_CARRIED` in all."""
    counts = option_counts(db.session, survey)
    if sum(counts.get(q.id, 0) for q in questions) > OPTIONS_CARRIED:
        questions = [q for q in questions if q.key == chosen]
    with_options(db.session, questions)
    return {q.key: {"options": researcher_options(q), "default": _chosen_category(q, None)} for q in questions}


@bp.get("/surveys/<slug>/compare")
@login_required
def compare_page(slug: str):
    """One sensitive question by a direct question, by week, or against another sensitive question."""
    survey = _survey_or_404(slug)
    number = _asked_number(survey, "question")
    if number is not None:
        return _number_comparison_page(survey, number)
    randomized, direct = comparable(db.session, survey)
    question, by, category = _comparison_choice(survey)
    chosen = next((q for q in randomized if q.key == question), None)
    if chosen is not None and category not in [str(o["code"]) for o in researcher_options(chosen)]:
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
            too_large=set() if chosen is None else too_large_to_pair(db.session, survey, chosen),
            direct=direct,
            question=chosen,
            by=by,
            category_options=[] if chosen is None else researcher_options(chosen),
            options_by_question=_options_by_question(survey, randomized, question),
            # the answer chosen stays chosen while another sensitive question is related to this
            # one (an association has no answer of its own), so the next breakdown shows it again
            category=_chosen_category(chosen, category),
            result=result,
            data=None if result is None else result.to_dict(),
            chart=None if result is None or result.analysis != "breakdown" else _group_chart(result),
            error=error,
            query={"question": question, "by": by, **({"category": category} if category else {})},
            week=WEEK,
            numbers=_randomized_numbers(survey),
        ),
        status,
    )


def _analysis_csv(slug: str, make: Callable[[Survey], Any], name: Callable[[Any], str]):
    """An analysis as a CSV download; a refused choice as plain text with its status."""
    survey = _survey_or_404(slug)
    try:
        analysis = make(survey)
    except DomainError as e:
        return Response(localized(e) + "\n", status=e.status, mimetype="text/plain")
    return _download(analysis.csv(), f"{survey.slug}-{name(analysis)}.csv", "text/csv")


def _analysis_json(slug: str, make: Callable[[Survey], Any]):
    """An analysis as JSON; errors as ``{"error", "status", "path"}``, and a JSON 401, not a redirect."""
    if not current_user.is_authenticated:
        return json_error(DomainError("auth.results_sign_in"))
    survey = _survey_or_404(slug)
    try:
        return jsonify(make(survey).to_dict())
    except DomainError as e:
        return json_error(e)


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
    randomized, _ = comparable(db.session, survey)
    direct = covariates_of(db.session, survey)
    if "outcome" not in request.args:
        return (randomized[0].key if randomized else None), [q.key for q in direct][:MAX_COVARIATES]
    return request.args.get("outcome"), request.args.getlist("covariates")


def _regression(survey: Survey) -> Regression | NumberRegression:
    number = _asked_number(survey, "outcome")
    if number is not None:
        return number_regression(db.session, survey, number.key, _number_covariates(survey))
    return regression(db.session, survey, *_regression_choice(survey), request.args.get("category"))


def _number_covariates(survey: Survey) -> list[str]:
    """The covariates the query string chose; without an outcome chosen, every question asked directly."""
    if "outcome" not in request.args:
        return [q.key for q in covariates_of(db.session, survey)][:MAX_COVARIATES]
    return request.args.getlist("covariates")


def _number_regression_page(survey: Survey, outcome: Question):
    """A randomized number as the outcome of a linear regression on questions asked directly."""
    direct = covariates_of(db.session, survey)
    chosen = _number_covariates(survey)
    result: NumberRegression | None = None
    error: DomainError | None = None
    status = 200
    if direct:
        try:
            result = number_regression(db.session, survey, outcome.key, chosen)
        except DomainError as e:
            error, status = e, (200 if e.status == 409 else e.status)
    return (
        render_template(
            "results/regression_number.html",
            survey=survey,
            numbers=_randomized_numbers(survey),
            randomized=comparable(db.session, survey)[0],
            direct=direct,
            outcome=outcome,
            chosen=chosen,
            result=result,
            data=None if result is None else result.to_dict(),
            error=error,
            query={"outcome": outcome.key, "covariates": chosen},
        ),
        status,
    )


@bp.get("/surveys/<slug>/regression")
@login_required
def regression_page(slug: str):
    """What predicts a sensitive answer: a logistic regression on questions asked directly."""
    survey = _survey_or_404(slug)
    number = _asked_number(survey, "outcome")
    if number is not None:
        return _number_regression_page(survey, number)
    randomized, _ = comparable(db.session, survey)
    direct = covariates_of(db.session, survey)
    outcome, chosen = _regression_choice(survey)
    outcome_question = next((q for q in randomized if q.key == outcome), None)
    # another outcome was picked with the option of the one before: start from its first option
    category = _chosen_category(outcome_question, request.args.get("category"))
    result: Regression | None = None
    error: DomainError | None = None
    status = 200
    if randomized and direct:
        try:
            result = regression(db.session, survey, outcome, chosen, category)
        except DomainError as e:
            error, status = e, (200 if e.status == 409 else e.status)
    query = {"outcome": outcome, "covariates": chosen, **({"category": category} if category is not None else {})}
    return (
        render_template(
            "results/regression.html",
            survey=survey,
            randomized=randomized,
            direct=direct,
            outcome=outcome,
            category=category,
            category_options=_options_by_question(survey, randomized, outcome),
            chosen=chosen,
            result=result,
            data=None if result is None else result.to_dict(),
            error=error,
            query=query,
            numbers=_randomized_numbers(survey),
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
