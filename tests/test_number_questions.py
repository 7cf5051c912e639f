"""Number questions: a whole number in a range the organizer sets, asked directly.

From the spec to the respondent's post, the tallies, the results page, the exports and the
regression, where a number enters as itself.
"""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from scipy import stats
from sqlalchemy import func, select

from survey.domain.errors import DomainError
from survey.domain.models import Answer, AnswerTally, Submission, Survey
from survey.domain.responses.tallies import number_results, rebuild_tallies, tally_mismatches
from survey.domain.results.analysis import compare, regression
from survey.domain.results.numbers import summarize
from survey.domain.surveys.specs import create_survey_from_spec, survey_to_spec
from survey.platform.extensions import db
from survey.privacy import CoinFlip, rr_logistic

from .surveys import add_survey

SPEC = {
    "title": "Ages",
    "slug": "ages",
    "questions": [
        {
            "key": "smoked",
            "kind": "yes_no",
            "text": "Smoked?",
            "privacy": {"design": "coin_flip", "truth_probability": 0.6, "yes_probability": 0.5},
        },
        {"key": "age", "kind": "number", "text": "How old are you?", "minimum": 16, "maximum": 99},
        {"key": "group", "kind": "direct", "text": "Group?", "options": ["a", "b"], "required": False},
    ],
}


@pytest.fixture
def ages(app, user):
    return add_survey(app, SPEC)


def _post(client, answers):
    return client.post("/api/surveys/ages/responses", json={"answers": answers})


def _survey():
    return db.session.scalar(select(Survey).where(Survey.slug == "ages"))


# -- the spec --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        ({"minimum": None}, "minimum", "needs a minimum and a maximum"),
        ({"maximum": 16}, "maximum", "must be above the minimum"),
        ({"maximum": 10}, "maximum", "must be above the minimum"),
        ({"minimum": 1.5}, "minimum", "whole number"),
        ({"maximum": True}, "maximum", "whole number"),
        ({"maximum": 10**10}, "maximum", "whole number"),
        ({"options": ["a", "b"]}, "options", "range (minimum and maximum), not options"),
        ({"privacy": {"design": "grr", "epsilon": 1}}, "privacy", "no privacy settings"),
    ],
)
def test_a_bad_number_question_is_refused_on_its_field(app, change, path, words):
    question = {**SPEC["questions"][1], **change}
    question = {k: v for k, v in question.items() if v is not None}
    with app.app_context(), pytest.raises(DomainError) as refused:
        create_survey_from_spec(db.session, {**SPEC, "questions": [question]})
    assert refused.value.path[-1] == path and words in refused.value.message


def test_only_a_number_question_has_a_range(app):
    question = {**SPEC["questions"][0], "minimum": 1}
    with app.app_context(), pytest.raises(DomainError) as refused:
        create_survey_from_spec(db.session, {**SPEC, "questions": [question]})
    assert refused.value.path[-1] == "minimum"


def test_the_spec_round_trips_the_range(app, ages):
    with app.app_context():
        spec = survey_to_spec(_survey())
    age = next(q for q in spec["questions"] if q["key"] == "age")
    assert (age["kind"], age["minimum"], age["maximum"]) == ("number", 16, 99) and "options" not in age


# -- answering -------------------------------------------------------------------------------------


def test_a_number_in_range_is_stored_as_itself(app, client, ages):
    assert _post(client, {"smoked": 1, "age": 42}).status_code == 201
    assert _post(client, {"smoked": 0, "age": "16"}).status_code == 201  # typed digits, as a form sends them
    with app.app_context():
        survey = _survey()
        age = next(q for q in survey.questions if q.key == "age")
        assert sorted(db.session.scalars(select(Answer.value).where(Answer.question_id == age.id))) == [16, 42]
        assert tally_mismatches(db.session, survey) == []


@pytest.mark.parametrize("bad", [15, 100, 4.5, "4.5", "forty", True, [42]])
def test_a_number_out_of_range_or_not_whole_is_a_400_and_writes_nothing(app, client, ages, bad):
    response = _post(client, {"smoked": 1, "age": bad})
    assert response.status_code == 400
    body = response.get_json()
    assert "whole number from 16 to 99" in body["error"] and body["path"] == ["answers", "age"]
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Submission)) == 0
        assert db.session.scalar(select(func.count()).select_from(AnswerTally)) == 0


def test_the_respondent_page_offers_a_number_input_with_its_range(client, ages):
    page = client.get("/s/ages").get_data(as_text=True)
    assert 'type="number" id="age-number" name="q_age" min="16"' in page and 'max="99"' in page
    assert "A whole number from 16 to 99" in page


# -- summarizing -----------------------------------------------------------------------------------


def test_the_summary_equals_numpy_and_scipy_on_the_answers_themselves(app):
    counts = {20: 2, 30: 1, 40: 1, 17: 3, 99: 1}
    answers = np.repeat(list(counts), list(counts.values())).astype(float)
    with app.app_context():
        question = create_survey_from_spec(db.session, SPEC).questions[1]
        m = summarize(question, counts)
    assert m.n == answers.size and m.mean == pytest.approx(answers.mean(), abs=1e-12)
    assert m.standard_deviation == pytest.approx(answers.std(ddof=1), abs=1e-12)
    low, high = stats.t.interval(0.95, answers.size - 1, loc=answers.mean(), scale=stats.sem(answers))
    assert (m.ci_low, m.ci_high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    assert [m.lower_quartile, m.median, m.upper_quartile] == list(np.percentile(answers, [25, 50, 75]))
    assert (m.minimum, m.maximum) == (17, 99)
    # check values: 8 answers summing to 260
    assert m.mean == 32.5 and m.median == 20.0


def test_one_answer_has_a_mean_but_no_interval(app):
    with app.app_context():
        m = summarize(create_survey_from_spec(db.session, SPEC).questions[1], {30: 1})
    assert (m.n, m.mean, m.standard_deviation, m.ci_low, m.median) == (1, 30.0, None, None, 30.0)


def test_recount_checks_and_rebuilds_number_tallies(app, client, ages):
    for age in (30, 30, 45):
        assert _post(client, {"smoked": 1, "age": age}).status_code == 201
    with app.app_context():
        survey = _survey()
        age = next(q for q in survey.questions if q.key == "age")
        tally = db.session.scalars(select(AnswerTally).where(AnswerTally.question_id == age.id)).first()
        tally.count += 5
        db.session.commit()
        assert any("'age'" in problem for problem in tally_mismatches(db.session, survey))
        rebuild_tallies(db.session, survey)
        db.session.commit()
        assert tally_mismatches(db.session, survey) == []
        assert number_results(db.session, survey)[0].n == 3


# -- results, exports, analysis --------------------------------------------------------------------


def test_results_and_exports_carry_the_numbers(signed_in, ages):
    for age in (20, 30, 40, 50):
        assert _post(signed_in, {"smoked": 0, "age": age}).status_code == 201
    page = signed_in.get("/surveys/ages/results").get_data(as_text=True)
    assert "number, from 16 to 99" in page and "<td>35.00</td>" in page
    document = signed_in.get("/api/surveys/ages/estimates").get_json()
    age = next(q for q in document["questions"] if q["key"] == "age")
    assert [q["key"] for q in document["questions"]] == ["smoked", "age", "group"]
    assert age["summary"]["mean"] == 35.0 and age["range"] == {"minimum": 16, "maximum": 99}
    rows = list(csv.DictReader(io.StringIO(signed_in.get("/surveys/ages/estimates.csv").get_data(as_text=True))))
    mean_row = next(r for r in rows if r["question_key"] == "age")
    assert (mean_row["option_label"], float(mean_row["unbiased"]), mean_row["interval_method"]) == ("mean", 35.0, "t")
    micro = list(csv.DictReader(io.StringIO(signed_in.get("/surveys/ages/responses.csv").get_data(as_text=True))))
    assert [r["age"] for r in micro] == ["20", "30", "40", "50"]
    book = signed_in.get("/surveys/ages/codebook.json").get_json()
    assert next(q for q in book["questions"] if q["key"] == "age")["range"] == {"minimum": 16, "maximum": 99}


def test_a_number_is_no_breakdown_but_enters_a_regression_as_itself(app, client, ages):
    rng = np.random.default_rng(3)
    design = CoinFlip(0.6, 0.5)
    rows = []
    for _ in range(300):
        age = int(rng.integers(16, 100))
        truth = int(rng.random() < 1 / (1 + np.exp(-(-2 + 0.04 * age))))  # 1 = smoked
        reported = int(design.randomize(np.array([1 - truth]), rng)[0])  # stored code 0 is "yes"
        rows.append((age, reported))
        assert _post(client, {"smoked": reported, "age": age}).status_code == 201
    with app.app_context():
        survey = _survey()
        with pytest.raises(DomainError) as refused:
            compare(db.session, survey, "smoked", "age")
        assert refused.value.path == ("by",) and "regression" in refused.value.message
        fit = regression(db.session, survey, "smoked", ["age"]).fit
    # the same model fitted on the respondents one by one, without the database
    X = np.array([[age] for age, _ in rows], dtype=float)
    reports = np.array([int(reported == 0) for _, reported in rows])
    direct = rr_logistic(design, X, reports, category=0, names=["age"])
    np.testing.assert_allclose(fit.params, direct.params, rtol=1e-6, atol=1e-8)
    assert fit.names[-1] == "age"
