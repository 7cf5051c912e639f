"""Surveys from a spec: the one creation path, its validation, and the CLI commands around it."""

import copy
import json
import math
import re

import numpy as np
import pytest
from sqlalchemy import func, select

from survey.domain.errors import DomainError
from survey.domain.models import Answer, Design, Question, Submission, Survey, User
from survey.domain.surveys.specs import create_survey_from_spec, survey_to_spec
from survey.platform.extensions import db
from survey.privacy import CoinFlip, GeneralizedRR, Warner

from .surveys import SMALL_SPEC


def _count(model) -> int:
    return db.session.scalar(select(func.count()).select_from(model))


def test_spec_creates_questions_options_and_frozen_designs(app):
    with app.app_context():
        survey = create_survey_from_spec(db.session, SMALL_SPEC)
        db.session.commit()
        assert survey.slug == "small-test" and survey.status == "open"
        kinds = [q.kind for q in survey.questions]
        assert kinds == ["yes_no", "yes_no", "choice", "direct"]
        drugs, mirror, often, age = survey.questions
        assert drugs.mechanism() == CoinFlip(0.5, 0.5)
        assert mirror.mechanism() == Warner(0.75)
        assert often.mechanism() == GeneralizedRR(["never", "sometimes", "often", "always"], epsilon=1.0)
        assert age.design is None and age.mechanism() is None and not age.required
        assert drugs.design.epsilon == pytest.approx(math.log(3))
        np.testing.assert_allclose(drugs.design.matrix, [[0.75, 0.25], [0.25, 0.75]])


def test_round_trip_through_spec(app):
    with app.app_context():
        survey = create_survey_from_spec(db.session, SMALL_SPEC)
        db.session.commit()
        again = create_survey_from_spec(db.session, survey_to_spec(survey))
        db.session.commit()
        assert [q.mechanism() for q in again.questions] == [q.mechanism() for q in survey.questions]
        assert [q.labels for q in again.questions] == [q.labels for q in survey.questions]


WHO_IS_ASKING = {
    "run_by": "Student Health Study",
    "contact": "study@example.org",
    "ethics_statement": "Approved by the Example Ethics Board (ref. EB-2026-014).\nTaking part is voluntary.",
}


def test_who_is_asking_travels_through_the_spec_both_ways(app):
    with app.app_context():
        survey = create_survey_from_spec(db.session, {**SMALL_SPEC, **WHO_IS_ASKING})
        db.session.commit()
        assert (survey.run_by, survey.contact, survey.ethics_statement) == tuple(WHO_IS_ASKING.values())
        exported = survey_to_spec(survey)
        assert {name: exported[name] for name in WHO_IS_ASKING} == WHO_IS_ASKING
        again = create_survey_from_spec(db.session, exported)
        assert survey_to_spec(again) == exported
        plain = create_survey_from_spec(db.session, {**SMALL_SPEC, "slug": "no-who"})  # all three are optional
        assert {name: survey_to_spec(plain)[name] for name in WHO_IS_ASKING} == dict.fromkeys(WHO_IS_ASKING, "")


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("run_by", "x" * 201, "is longer than 200 characters"),
        ("contact", "x" * 301, "is longer than 300 characters"),
        ("ethics_statement", "x" * 10_001, "is longer than 10000 characters"),
        ("contact", 5, "must be a text"),
        ("ethics_statement", "a\x00b", "NUL"),
    ],
)
def test_who_is_asking_is_checked_like_every_text(app, field, value, message):
    with app.app_context():
        with pytest.raises(DomainError, match=message) as refused:
            create_survey_from_spec(db.session, {**SMALL_SPEC, field: value})
        assert refused.value.path == (field,)
        assert _count(Survey) == 0


def _with(path, value):
    spec = copy.deepcopy(SMALL_SPEC)
    target = spec
    for step in path[:-1]:
        target = target[step]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return spec


@pytest.mark.parametrize(
    "spec, message",
    [
        ([], "must be a JSON object"),
        (_with(["title"], ""), "survey, field 'title'"),
        (_with(["questions"], []), "survey, field 'questions'"),
        (_with(["colour"], "red"), "survey: unknown field 'colour'"),
        (_with(["slug"], "Bad Slug!"), "field 'slug'"),
        (_with(["questions", 0, "kind"], "essay"), "question 1 \\('drugs'\\), field 'kind'"),
        (_with(["questions", 0, "text"], "  "), "question 1 \\('drugs'\\), field 'text'"),
        (_with(["questions", 0, "privacy"], KeyError), "question 1 \\('drugs'\\), field 'privacy'"),
        (
            _with(["questions", 0, "privacy", "truth_probability"], 1.5),
            "question 1 \\('drugs'\\), field 'privacy.truth_probability'.*between 0 and 1",
        ),
        (_with(["questions", 0, "privacy", "yes_probability"], "half"), "privacy.yes_probability': must be a number"),
        (_with(["questions", 0, "privacy", "yes_probability"], KeyError), "privacy.yes_probability': is missing"),
        (_with(["questions", 1, "privacy", "p"], 0.5), "question 2 \\('mirror'\\), field 'privacy.p'.*differ from 1/2"),
        (_with(["questions", 2, "privacy", "epsilon"], 0), "question 3 \\('often'\\), field 'privacy.epsilon'"),
        (_with(["questions", 2, "privacy"], {"design": "grr"}), "exactly one of 'epsilon' and 'truth_probability'"),
        (_with(["questions", 2, "privacy", "design"], "warner"), "privacy.design': must be one of grr"),
        (_with(["questions", 2, "options"], ["only one"]), "question 3 \\('often'\\), field 'options'"),
        (_with(["questions", 2, "options"], ["a", "a", "b", "c"]), "options must be distinct"),
        (_with(["questions", 3, "privacy"], {"design": "grr", "epsilon": 1}), "direct question is asked plainly"),
        (_with(["questions", 3, "key"], "drugs"), "question 4 \\('drugs'\\), field 'key'.*earlier question"),
        (_with(["questions", 3, "key"], "Age Group"), "field 'key'"),
        (_with(["questions", 3, "key"], "age\n"), "field 'key'"),
        (_with(["slug"], "small-test\n"), "field 'slug'"),
        (_with(["questions", 3, "key"], "submitted_on"), "reserved for a column of the microdata"),
        (_with(["questions", 0, "required"], "yes"), "field 'required'"),
        (
            _with(["questions", 0, "privacy", "yes_probability"], 1.0),
            "ε = ∞.*allow_one_sided",
        ),
        (
            _with(["questions", 0, "privacy", "truth_probability"], 1.0),
            "protects nothing.*direct",
        ),
    ],
)
def test_bad_specs_are_refused_whole_and_name_the_field(app, spec, message):
    with app.app_context():
        with pytest.raises(DomainError, match=message):
            create_survey_from_spec(db.session, spec)
        db.session.rollback()
        assert _count(Survey) == _count(Question) == _count(Design) == 0


def test_one_sided_design_needs_explicit_consent(app):
    spec = _with(["questions", 0, "privacy", "yes_probability"], 1.0)
    spec["questions"][0]["privacy"]["allow_one_sided"] = True
    with app.app_context():
        survey = create_survey_from_spec(db.session, spec)
        db.session.commit()
        assert survey.questions[0].design.epsilon is None
        assert math.isinf(survey.questions[0].mechanism().epsilon)


def test_slug_taken_and_generated(app):
    with app.app_context():
        create_survey_from_spec(db.session, SMALL_SPEC)
        db.session.commit()
        with pytest.raises(DomainError, match="already taken"):
            create_survey_from_spec(db.session, SMALL_SPEC)
        db.session.rollback()
        spec = dict(SMALL_SPEC, title="Drugs & Work: 2026!")
        del spec["slug"]
        survey = create_survey_from_spec(db.session, spec)
        assert survey.slug == "drugs-work-2026"  # the title itself, while it is free
        db.session.commit()
        again = create_survey_from_spec(db.session, spec)
        assert re.fullmatch(r"drugs-work-2026-[0-9a-f]{6}", again.slug)  # taken: a random suffix


def test_import_survey_command(app, runner, tmp_path):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(SMALL_SPEC), encoding="utf-8")
    result = runner.invoke(args=["import-survey", str(path)])
    assert result.exit_code == 0, result.output
    assert "/s/small-test" in result.output and "/surveys/small-test/results" in result.output
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_with(["questions", 2, "privacy", "epsilon"], -1)), encoding="utf-8")
    result = runner.invoke(args=["import-survey", str(bad)])
    assert result.exit_code != 0
    assert "question 3 ('often'), field 'privacy.epsilon'" in result.output
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    result = runner.invoke(args=["import-survey", str(broken)])
    assert result.exit_code != 0 and "not valid JSON" in result.output
    with app.app_context():
        assert _count(Survey) == 1


def test_demo_command_creates_simulated_respondents(app, runner):
    result = runner.invoke(args=["demo", "--respondents", "400"])
    assert result.exit_code == 0, result.output
    assert "/s/health-and-habits" in result.output and "demo-password" in result.output
    assert "/surveys/asking-honestly/results" in result.output  # the split ballots' demo beside it
    with app.app_context():
        assert _count(Submission) == 2 * 400
        survey = db.session.scalar(select(Survey).where(Survey.slug == "health-and-habits"))
        assert survey.is_simulated and len(survey.randomized_questions) == 6  # a randomized number among them
        assert any(q.kind == "choice" and 4 <= len(q.options) <= 6 for q in survey.questions)
        # every respondent of the health survey answers each question; of the split ballots, one arm of each
        assert _count(Answer) == 400 * len(survey.questions) + 400 * 2
    again = runner.invoke(args=["demo", "--if-empty"])
    assert "already has surveys" in again.output


def test_demo_reports_are_randomized_by_the_stored_mechanism(app):
    """At 20,000 respondents the reported yes-share matches Q·truth, not the truth itself."""
    from survey.domain.responses.tallies import survey_counts
    from survey.domain.surveys.demo import create_demo

    with app.app_context():
        survey = create_demo(db.session, 20_000)
        counts = survey_counts(db.session, survey).by_question
        cannabis = survey.questions[0]
        expected = cannabis.mechanism().matrix @ cannabis.simulated_truth
        observed = counts[cannabis.id] / counts[cannabis.id].sum()
        assert observed[0] == pytest.approx(expected[0], abs=0.015)
        assert abs(observed[0] - cannabis.simulated_truth[0]) > 0.1


def test_create_user_command(app, runner):
    result = runner.invoke(args=["create-user", "bob", "--password", "s3cret-enough"])
    assert result.exit_code == 0, result.output
    with app.app_context():
        user = db.session.scalar(select(User).where(User.username == "bob"))
        assert user.password_hash.startswith(("scrypt:", "pbkdf2:")) and "s3cret" not in user.password_hash
        assert user.check_password("s3cret-enough")
    assert runner.invoke(args=["create-user", "bob", "--password", "another-one"]).exit_code != 0
    assert runner.invoke(args=["create-user", "carol", "--password", "short"]).exit_code != 0


def test_real_submission_after_the_demo_gets_a_fresh_id(app, client):
    """On PostgreSQL the demo's bulk insert must leave the id sequence where a new row can follow."""
    from survey.domain.surveys.demo import create_demo

    with app.app_context():
        create_demo(db.session, 50)
        db.session.commit()
    answers = {"cannabis": 0, "cheating": 1, "drink_driving": 1, "harassment": 0, "sedatives": 2, "age_group": 0}
    response = client.post("/api/surveys/health-and-habits/responses", json={"answers": answers})
    assert response.status_code == 201, response.json
    with app.app_context():
        assert _count(Submission) == 51


def test_reserved_keys_match_the_microdata_columns():
    from survey.domain.results.exports import MICRODATA_FIXED_COLUMNS
    from survey.domain.surveys.specs import RESERVED_KEYS

    assert set(MICRODATA_FIXED_COLUMNS) == RESERVED_KEYS


def test_designs_that_reveal_every_answer_are_refused(app):
    spec = _with(["questions", 1, "privacy", "p"], 0.0)  # Warner p = 0 always sends the opposite
    spec["questions"][1]["privacy"]["allow_one_sided"] = True
    with app.app_context(), pytest.raises(DomainError, match="protects nothing"):
        create_survey_from_spec(db.session, spec)


@pytest.mark.parametrize("f, safe, exposed", [(1.0, "yes", "no"), (0.0, "no", "yes")])
def test_one_sided_wording_names_the_exposed_answer(f, safe, exposed):
    from survey.domain.surveys.wording import deniability_sentence

    sentence = deniability_sentence(CoinFlip(0.5, f))
    assert f"only a “{safe}” is protected" in sentence and f"true “{exposed}”" in sentence
