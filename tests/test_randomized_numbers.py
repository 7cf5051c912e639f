"""Randomized numbers: a sensitive number in a range, randomized in the respondent's browser by a
design of numbers (survey/privacy/numeric.py) and sent as a report code.

From the spec to the respondent's post, the tallies (one per code), the results page and its
estimate (the mechanism's mean and interval on the tallies), and the exports (the report in the
question's units).
"""

from __future__ import annotations

import html
import json
import re

import pytest
from sqlalchemy import func, select

from survey.domain.errors import DomainError
from survey.domain.models import Answer, AnswerTally, Submission, Survey
from survey.domain.responses.tallies import rebuild_tallies, tally_mismatches
from survey.domain.surveys.specs import create_survey_from_spec, survey_to_spec
from survey.platform.extensions import db
from survey.privacy.numeric import GRID_STEPS, HybridNumber, LaplaceNumber

from .surveys import add_survey

DRINKS = {
    "key": "drinks",
    "kind": "rr_number",
    "text": "How many drinks did you have last week?",
    "minimum": 0,
    "maximum": 30,
    "privacy": {"design": "hybrid", "epsilon": 1},
}
SPEC = {
    "title": "Drinks",
    "slug": "drinks",
    "questions": [
        {
            "key": "smoked",
            "kind": "yes_no",
            "text": "Smoked?",
            "privacy": {"design": "coin_flip", "truth_probability": 0.6, "yes_probability": 0.5},
        },
        DRINKS,
        {"key": "age", "kind": "number", "text": "How old are you?", "minimum": 16, "maximum": 99, "required": False},
    ],
}


@pytest.fixture
def drinks(app, user):
    return add_survey(app, SPEC)


def _post(client, answers):
    return client.post("/api/surveys/drinks/responses", json={"answers": answers})


def _survey():
    return db.session.scalar(select(Survey).where(Survey.slug == "drinks"))


def _question(key="drinks"):
    return next(q for q in _survey().questions if q.key == key)


# -- the spec --------------------------------------------------------------------------------------


@pytest.mark.parametrize("design", ["hybrid", "duchi", "piecewise", "laplace"])
def test_the_spec_round_trips_the_range_and_the_privacy(app, design):
    question = {**DRINKS, "privacy": {"design": design, "epsilon": 1.5}}
    with app.app_context():
        survey = create_survey_from_spec(db.session, {**SPEC, "questions": [question]})
        db.session.commit()
        stored = survey.questions[0]
        assert (stored.design.mechanism_name, stored.design.epsilon, stored.design.matrix) == (design, 1.5, [])
        mechanism = stored.mechanism()
        assert (mechanism.design, mechanism.epsilon, mechanism.low, mechanism.high) == (design, 1.5, 0, 30)
        assert survey.total_epsilon() == pytest.approx(1.5)
        again = survey_to_spec(survey)["questions"][0]
    assert again == {**question, "required": True, "privacy": {"design": design, "epsilon": 1.5}}
    with app.app_context():
        copy = create_survey_from_spec(db.session, {**SPEC, "slug": "copy", "questions": [again]})
        assert survey_to_spec(copy)["questions"][0] == again


@pytest.mark.parametrize(
    ("change", "path", "code"),
    [
        ({"minimum": None}, ("minimum",), "spec.range_missing"),
        ({"maximum": None}, ("maximum",), "spec.range_missing"),
        ({"maximum": 0}, ("maximum",), "spec.range_reversed"),
        ({"privacy": None}, ("privacy",), "spec.privacy_missing"),
        ({"privacy": {"design": "grr", "epsilon": 1}}, ("privacy", "design"), "spec.design_unknown"),
        ({"privacy": {"design": "gaussian", "epsilon": 1}}, ("privacy", "design"), "spec.design_unknown"),
        ({"privacy": {"design": "hybrid"}}, ("privacy", "epsilon"), "spec.parameter_missing"),
        ({"privacy": {"design": "hybrid", "epsilon": 0}}, ("privacy", "epsilon"), "design.invalid"),
        ({"privacy": {"design": "hybrid", "epsilon": -1}}, ("privacy", "epsilon"), "design.invalid"),
        ({"privacy": {"design": "laplace", "epsilon": 21}}, ("privacy", "epsilon"), "design.invalid"),
        ({"privacy": {"design": "hybrid", "epsilon": "1"}}, ("privacy", "epsilon"), "spec.not_number"),
        ({"privacy": {"design": "hybrid", "epsilon": 1, "p": 0.5}}, ("privacy", "p"), "spec.unknown_field"),
        ({"options": ["a", "b"]}, ("options",), "spec.number_has_no_options"),
    ],
)
def test_a_bad_randomized_number_is_refused_on_its_field(app, change, path, code):
    question = {k: v for k, v in {**DRINKS, **change}.items() if v is not None}
    with app.app_context(), pytest.raises(DomainError) as refused:
        create_survey_from_spec(db.session, {**SPEC, "questions": [question]})
    assert refused.value.code == code and refused.value.path == ("questions", 0, *path), refused.value
    assert "question 1 ('drinks')" in str(refused.value)


def test_a_design_of_numbers_serves_no_question_with_options(app):
    question = {**SPEC["questions"][0], "privacy": {"design": "hybrid", "epsilon": 1}}
    with app.app_context(), pytest.raises(DomainError) as refused:
        create_survey_from_spec(db.session, {**SPEC, "questions": [question]})
    assert refused.value.code == "spec.design_unknown"


# -- answering -------------------------------------------------------------------------------------


def test_a_report_code_is_stored_and_tallied_by_code(app, client, drinks):
    for code in (0, 1000, 1000, GRID_STEPS, "17"):
        assert _post(client, {"smoked": 1, "drinks": code}).status_code == 201
    with app.app_context():
        survey, question = _survey(), _question()
        assert sorted(db.session.scalars(select(Answer.value).where(Answer.question_id == question.id))) == [
            0,
            17,
            1000,
            1000,
            GRID_STEPS,
        ]
        counts = dict(
            db.session.execute(
                select(AnswerTally.value, func.sum(AnswerTally.count))
                .where(AnswerTally.question_id == question.id)
                .group_by(AnswerTally.value)
            ).all()
        )
        assert counts == {0: 1, 17: 1, 1000: 2, GRID_STEPS: 1}
        assert tally_mismatches(db.session, survey) == []


@pytest.mark.parametrize("bad", [-1, GRID_STEPS + 1, 12.5, "12.5", "many", True, [3], None])
def test_a_report_outside_the_domain_is_a_400_and_writes_nothing(app, client, drinks, bad):
    response = _post(client, {"smoked": 1, "drinks": bad})
    assert response.status_code == 400
    body = response.get_json()
    assert body["path"] == ["answers", "drinks"] and body["code"].startswith("answer.")
    assert "drinks" in body["error"]
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Submission)) == 0
        assert db.session.scalar(select(func.count()).select_from(AnswerTally)) == 0


def test_the_domain_is_the_mechanisms_not_the_range(app, client, user):
    """A Laplace report can fall far outside the range: its codes run beyond the grid's ends."""
    question = {**DRINKS, "privacy": {"design": "laplace", "epsilon": 1}}
    add_survey(app, {**SPEC, "questions": [question]})
    domain = LaplaceNumber(1.0).reports
    for code in (-5000, GRID_STEPS + 5000, domain.low, domain.high):
        assert _post(client, {"drinks": code}).status_code == 201
    assert _post(client, {"drinks": domain.high + 1}).status_code == 400


def test_recount_checks_and_rebuilds_report_tallies(app, client, drinks):
    for code in (3, 3, 1999):
        assert _post(client, {"smoked": 0, "drinks": code}).status_code == 201
    with app.app_context():
        survey, question = _survey(), _question()
        tally = db.session.scalars(select(AnswerTally).where(AnswerTally.question_id == question.id)).first()
        tally.count += 5
        db.session.commit()
        assert any("'drinks'" in problem for problem in tally_mismatches(db.session, survey))
        rebuild_tallies(db.session, survey)
        db.session.commit()
        assert tally_mismatches(db.session, survey) == []


def test_the_mechanism_rebuilt_from_the_row_is_the_one_the_spec_made(app, drinks):
    with app.app_context():
        assert _question().mechanism() == HybridNumber(1.0, 0, 30)


# -- the respondent's page -------------------------------------------------------------------------


def test_the_page_carries_the_sampler_and_a_number_input_that_is_never_sent(app, client, drinks):
    page = client.get("/s/drinks").get_data(as_text=True)
    fieldset = re.search(r'<fieldset class="question" id="question-drinks"[^>]*>', page).group(0)
    with app.app_context():
        sampler = _question().mechanism().sampler()
    assert 'data-sampler="hybrid"' in fieldset and "data-randomized" in fieldset and "data-number" in fieldset
    carried = {name: html.unescape(value) for name, value in re.findall(r'data-([a-z_]+)="([^"]*)"', fieldset)}
    assert {name: json.loads(carried[name]) for name in sampler if name != "sampler"} == {
        name: value for name, value in sampler.items() if name != "sampler"
    }
    number_input = re.search(r'<input type="number" id="drinks-number"[^>]*>', page).group(0)
    # the typed number has no name and belongs to the form that is never sent; only the code is posted
    assert "name=" not in number_input and 'form="true-answers"' in number_input
    assert 'min="0"' in number_input and 'max="30"' in number_input and 'step="any"' in number_input
    assert 'name="q_drinks"' in page and 'data-reported-for="drinks"' in page
    assert "/static/js/respond/numbers.js" in page


def test_a_survey_without_randomized_numbers_does_not_load_their_sampler(app, client, user):
    add_survey(app, {**SPEC, "slug": "plain", "questions": [SPEC["questions"][0]]})
    assert "/static/js/respond/numbers.js" not in client.get("/s/plain").get_data(as_text=True)
