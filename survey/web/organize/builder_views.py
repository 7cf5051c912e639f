"""Survey and question editor, budget panel, and the privacy preview API.

Views stay thin: they read a form, call one domain function of :mod:`survey.domain.surveys.builder` (or
:func:`survey.domain.surveys.specs.create_survey_from_spec` for a new survey) and render. Every rule about what a
question or a design may be lives in the spec code those functions call, so the builder accepts
exactly what an imported spec would. Every page needs the "edit" right on its survey; anyone else
gets a 404, as if the survey did not exist.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from flask import abort, jsonify, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_login import current_user, login_required

from survey.domain.accounts.access import survey_for
from survey.domain.errors import DomainError, Frozen
from survey.domain.models import Question, Survey
from survey.domain.surveys import builder
from survey.domain.surveys.budget import question_planning, survey_budget
from survey.domain.surveys.kinds import LISTED, REGISTRY, builder_blocks, builder_designs, builder_kinds
from survey.domain.surveys.kinds import NAMES as KIND_NAMES
from survey.domain.surveys.outline import first_labels, option_counts, question_list
from survey.domain.surveys.preview import count_text, error_json, points_text, preview, target_units_text, times_text
from survey.domain.surveys.specs import create_survey_from_spec
from survey.domain.surveys.wording import epsilon_text
from survey.platform.extensions import db
from survey.privacy.designs import design_name, kinds_served
from survey.privacy.unrelated_items import ITEM_LIST

from ..common import PROBLEM_JSON, commit_or_refuse, json_error, localized, me, see_other
from . import bp
from .builder_forms import (
    MoveForm,
    PlanningForm,
    QuestionForm,
    SurveyDetailsForm,
    input_attributes,
    level_designs,
    set_by_designs,
)

#: How many options of each question the build page names (each question's page shows them all).
OPTIONS_SHOWN = 12
#: How the builder's templates write numbers (passed to them, not registered as app-wide filters).
FORMATS = SimpleNamespace(
    eps=epsilon_text, points=points_text, count=count_text, times=times_text, target_units=target_units_text
)


def _editable(slug: str) -> Survey:
    """The survey if the signed-in user may build it; 404 otherwise (a NotFound from the domain)."""
    return survey_for(db.session, current_user, slug, "edit")


def _question_or_404(survey: Survey, key: str) -> Question:
    question = builder.question_by_key(survey, key)
    if question is None:
        abort(404)
    return question


def _to_build(survey: Survey, message: str):
    return see_other("organize.build", message, slug=survey.slug)


# -- new survey and the build page -------------------------------------------------------------------


@bp.route("/surveys/new", methods=["GET", "POST"])
@login_required
def new_survey():
    """A draft with its texts only; questions are added on the build page."""
    form = SurveyDetailsForm(formdata=request.form if request.method == "POST" else None)
    if request.method == "GET":
        return render_template("organize/new.html", form=form)
    return commit_or_refuse(
        lambda: create_survey_from_spec(db.session, {**form.spec(), "status": "draft", "questions": []}, owner=me()),
        form=form,
        done=lambda survey: _to_build(survey, "Draft created. Add its questions below."),
        refused=lambda status, _: (render_template("organize/new.html", form=form), status),
    )


def _render_build(
    survey: Survey,
    *,
    details_form: SurveyDetailsForm | None = None,
    planning_form: PlanningForm | None = None,
    alert: str | None = None,
    status: int = 200,
):
    questions = question_list(db.session, survey, designs=True)
    counts = option_counts(db.session, survey)
    return (
        render_template(
            "organize/build.html",
            survey=survey,
            budget=survey_budget(db.session, survey, questions, counts),
            questions=questions,
            option_count=counts,
            labels_shown=first_labels(db.session, survey, OPTIONS_SHOWN),
            options_shown=OPTIONS_SHOWN,
            details_form=details_form or SurveyDetailsForm.for_survey(survey),
            planning_form=planning_form or PlanningForm.for_survey(survey),
            kind_names=KIND_NAMES,
            kinds=REGISTRY,
            design_name=design_name,
            alert=alert,
            fmt=FORMATS,
        ),
        status,
    )


@bp.get("/surveys/<slug>/build")
@login_required
def build(slug: str):
    """The survey's texts, its questions, and its privacy budget, always in view."""
    return _render_build(_editable(slug))


@bp.post("/surveys/<slug>/details")
@login_required
def details(slug: str):
    """Title, introduction, closing message, who is asking, and whether the survey is answered on
    shared devices: none of them touches a design, so they can be changed in any state."""
    survey = _editable(slug)
    form = SurveyDetailsForm(formdata=request.form)
    return commit_or_refuse(
        lambda: builder.update_details(survey, **form.spec()),
        form=form,
        done=lambda _: _to_build(survey, "Survey texts and settings saved."),
        refused=lambda status, _: _render_build(survey, details_form=form, status=status),
    )


@bp.post("/surveys/<slug>/planning")
@login_required
def planning(slug: str):
    """Cap on the total ε, expected respondents and target margin (the budget panel's figures)."""
    survey = _editable(slug)
    form = PlanningForm(formdata=request.form)
    return commit_or_refuse(
        lambda: builder.update_planning(survey, form.fields()),
        form=form,
        done=lambda _: _to_build(survey, "Planning figures saved."),
        refused=lambda status, _: _render_build(survey, planning_form=form, status=status),
    )


# -- questions ---------------------------------------------------------------------------------------


def _form_preview(form: QuestionForm, survey: Survey, question: Question | None) -> dict[str, Any] | None:
    """The preview the page shows before any script runs (and the only one without JavaScript)."""
    kind = form.chosen_kind
    if kind is None or not kind.randomized:
        return None
    n, margin = survey.expected_respondents, survey.target_margin
    params = form.preview_params(n, margin)
    try:
        return preview(params)
    except DomainError as error:
        return error_json(error, params)


def frozen_form(survey: Survey) -> bool:
    return not survey.is_draft


def _render_question(
    survey: Survey, question: Question | None, form: QuestionForm, *, alert: str | None = None, status: int = 200
):
    total = survey.total_epsilon()
    offered = builder_designs()
    shown = _form_preview(form, survey, question)
    if shown and shown["ok"] and shown["derived"]["input"]:
        # Show the parameter that follows in its own (read-only with JavaScript) input as well.
        form[shown["derived"]["name"]].data = shown["derived"]["input"]
    elif shown and not shown["ok"] and not frozen_form(survey):
        form.clear_derived()  # it followed from a value that is refused now
        if shown["field"] in form._fields and not form[shown["field"]].errors:
            form.add_error(shown["field"], shown["message"])  # marked invalid, with the preview's words
    return (
        render_template(
            "organize/question.html",
            survey=survey,
            question=question,
            form=form,
            preview=shown,
            frozen=not survey.is_draft,
            total_epsilon=epsilon_text(total),
            designs_by_kind={
                k: [i for i in ids if i in offered] for k, ids in kinds_served().items() if REGISTRY[k].in_builder
            },
            builder_kinds=builder_kinds(),
            show_for=builder_blocks(),
            set_by_designs=set_by_designs(),
            combined_designs=[d.id for d in offered.values() if d.combined],
            unrelated_items=ITEM_LIST,
            level_designs=level_designs(),
            input_attributes=input_attributes,
            alert=alert,
            fmt=FORMATS,
        ),
        status,
    )


def _save_question(survey: Survey, question: Question | None, form: QuestionForm):
    """Build the spec from the form and hand it to the builder; errors go back next to their inputs,
    except that a frozen design is said once, above the form."""
    if not form.validate():
        return _render_question(survey, question, form, status=400)

    def save() -> None:
        raw = form.to_raw(default_key=question.key if question is not None else None)
        if question is None:
            builder.add_question(survey, raw)
        else:
            builder.update_question(survey, question, raw)

    def refused(status: int, error: DomainError | None) -> ResponseReturnValue:
        if isinstance(error, Frozen):
            return _render_question(survey, question, form, alert=localized(error), status=status)
        if error is not None:
            form.add_domain_error(error)
        return _render_question(survey, question, form, status=status)

    return commit_or_refuse(
        save,
        done=lambda _: _to_build(survey, "Question added." if question is None else "Question saved."),
        refused=refused,
    )


@bp.route("/surveys/<slug>/questions/new", methods=["GET", "POST"])
@login_required
def add_question(slug: str):
    """A new question for a draft; an opened survey's question list is frozen (409)."""
    survey = _editable(slug)
    if not survey.is_draft:
        return _render_build(survey, alert=localized(Frozen()), status=409)
    if request.method == "POST":
        return _save_question(survey, None, QuestionForm.for_question(None, request.form))
    return _render_question(survey, None, QuestionForm.for_question(None))


@bp.route("/surveys/<slug>/questions/<key>/edit", methods=["GET", "POST"])
@login_required
def edit_question(slug: str, key: str):
    """Edit a draft's question; on an opened survey only its texts can be corrected."""
    survey = _editable(slug)
    question = _question_or_404(survey, key)
    if request.method == "GET":
        return _render_question(survey, question, QuestionForm.for_question(question))
    if survey.is_draft:
        form = QuestionForm.for_question(question, request.form)
    else:
        form = QuestionForm.frozen(question, request.form)
    return _save_question(survey, question, form)


@bp.route("/surveys/<slug>/questions/<key>/delete", methods=["GET", "POST"])
@login_required
def delete_question(slug: str, key: str):
    """GET: what deleting the question loses, and the button that does it; POST: delete it."""
    survey = _editable(slug)
    question = _question_or_404(survey, key)
    if request.method == "GET":
        if not survey.is_draft:
            return _render_build(survey, alert=localized(Frozen()), status=409)
        options = ", its options" if question.kind_entry.options == LISTED else ""
        points = [
            f"Its text{options} and its privacy settings are deleted. This cannot be undone.",
            "The draft has no answers yet, so no answers are lost.",
        ]
        if question.design is not None:
            points.append("The survey's total ε goes down by this question's ε.")
        return render_template(
            "organize/confirm.html",
            survey=survey,
            title=f"Delete question {question.position + 1}, “{question.text[:80]}”?",
            action=url_for("organize.delete_question", slug=slug, key=key),
            button="Delete the question",
            points=points,
            danger=True,
            fields={},
            cancel=url_for("organize.build", slug=slug, _anchor=f"item-{key}"),
        )
    return commit_or_refuse(  # its only field is the CSRF token, which CSRFProtect has checked before this runs
        lambda: builder.delete_question(survey, question),
        done=lambda _: _to_build(survey, "Question deleted."),
        refused=lambda status, error: _render_build(survey, alert=localized(error) if error else None, status=status),
    )


@bp.post("/surveys/<slug>/questions/<key>/move")
@login_required
def move_question(slug: str, key: str):
    survey = _editable(slug)
    question = _question_or_404(survey, key)
    form = MoveForm(formdata=request.form)
    offsets = {"up": -1, "down": 1}
    if not form.validate() or form.direction.data not in offsets:
        return _render_build(survey, alert="Move a question “up” or “down”.", status=400)
    return commit_or_refuse(
        lambda: builder.move_question(survey, question, offsets[form.direction.data]),
        done=lambda _: _to_build(survey, "Question moved."),
        refused=lambda status, error: _render_build(survey, alert=localized(error) if error else None, status=status),
    )


@bp.get("/api/surveys/<slug>/questions/<key>/planning", endpoint="question_planning")
def question_planning_api(slug: str, key: str):
    """One randomized question's planning figures, for a row of the budget panel the build page left
    to be filled in (it computes only so many figures itself): one design's cost at most."""
    if not current_user.is_authenticated:
        return json_error(DomainError("auth.planning_sign_in"))
    survey = _editable(slug)
    question = _question_or_404(survey, key)
    try:
        figures = question_planning(survey, question)
    except DomainError as error:
        return json_error(error)
    return jsonify(
        key=question.key,
        **figures,
        text={
            "margin": f"±{100 * figures['margin_of_error']:.1f} pts",
            "needed": FORMATS.count(figures["respondents_needed"]),
            "effect": FORMATS.times(figures["design_effect"]),
        },
    )


# -- the privacy preview -----------------------------------------------------------------------------


@bp.get("/api/privacy/preview", endpoint="preview")
def privacy_preview():
    """What a privacy setting means, as JSON, for the builder's live preview.

    A machine client gets a JSON 401 rather than a redirect to the sign-in form, as the results
    API does.
    """
    if not current_user.is_authenticated:
        response, status = json_error(DomainError("auth.preview_sign_in"))
        response.set_data(json.dumps({"ok": False, **response.get_json()}))
        return response, status
    try:
        response = jsonify(preview(request.args))
    except DomainError as error:
        response = jsonify(error_json(error, request.args, detail=localized(error, placed=True)))
        response.mimetype = PROBLEM_JSON
        response.status_code = error.status
    response.headers["Cache-Control"] = "private, no-store"
    return response
