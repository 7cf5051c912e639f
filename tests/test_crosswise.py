"""The non-randomized response designs (Yu, Tian & Tang 2008): crosswise and triangular.

The crosswise model is Warner's matrix with p the unrelated question's "yes" rate; the triangular model
is one-sided (a circle can only come from a true "no"). Neither draws anything at random: the report
code is the respondent's answer to the combined question, "same" / the triangle being code 0 (the
"yes" row the estimator reads), "different" / the circle code 1.
"""

from __future__ import annotations

import math
from urllib.parse import parse_qsl

import numpy as np
import pytest
from markupsafe import escape
from sqlalchemy import select

from survey.domain.errors import DomainError
from survey.domain.models import Answer, Survey
from survey.domain.surveys.kinds import builder_designs
from survey.domain.surveys.specs import create_survey_from_spec, survey_to_spec
from survey.domain.surveys.wording import COMBINED_OPTIONS, deniability_line, describe_design
from survey.platform.extensions import db
from survey.privacy import Crosswise, Triangular, Warner, estimate
from survey.privacy.designs import DESIGNS
from survey.privacy.mechanisms import ParameterError, mechanism_from_dict
from survey.privacy.unrelated_items import ITEM_LIST, ITEMS

from .builder import add, new_draft
from .live import live_site
from .pages import tick_answers
from .surveys import add_survey, submit_answers

QUESTION = "Is your mother's birthday in January, February or March?"


@pytest.mark.parametrize("p", [0.1, 0.2466, 0.3, 0.7, 0.9])
def test_crosswise_is_warners_matrix_with_the_unrelated_rate(p):
    mechanism = DESIGNS["crosswise"].mechanism({"unrelated_yes_rate": p, "unrelated_question": QUESTION})
    assert isinstance(mechanism, Crosswise)
    np.testing.assert_array_equal(mechanism.matrix, Warner(p).matrix)
    # P("same" | yes) = p, P("same" | no) = 1 - p; "same" is code 0
    assert mechanism.matrix[0].tolist() == pytest.approx([p, 1 - p])
    assert mechanism.epsilon == pytest.approx(abs(math.log(p / (1 - p))))
    assert not mechanism.one_sided
    assert mechanism.parameters == {"unrelated_yes_rate": p, "unrelated_question": QUESTION}


def test_crosswise_refuses_a_rate_of_one_half_and_rates_outside_0_1():
    for bad in (0.5, 0.0, 1.0, -0.1, 1.1, "x"):
        with pytest.raises(ParameterError) as caught:
            Crosswise(bad, QUESTION)
        assert caught.value.parameter == "unrelated_yes_rate"


@pytest.mark.parametrize("p", [0.1, 0.2466, 0.3])
def test_triangular_is_one_sided(p):
    mechanism = DESIGNS["triangular"].mechanism({"unrelated_yes_rate": p, "unrelated_question": QUESTION})
    assert isinstance(mechanism, Triangular)
    # rows: triangle (code 0), circle (code 1); columns: true yes, true no
    np.testing.assert_allclose(mechanism.matrix, [[1.0, p], [0.0, 1.0 - p]])
    assert math.isinf(mechanism.epsilon) and mechanism.one_sided
    for bad in (0.0, 1.0):
        with pytest.raises(ParameterError):
            Triangular(bad, QUESTION)


def test_the_report_codes_are_the_rows_the_estimator_reads():
    """With true share θ of "yes": P(same) = pθ + (1 − p)(1 − θ) and P(triangle) = θ + p(1 − θ); the
    estimate of counts at exactly those shares gives θ back."""
    theta, p, n = 0.2, 0.25, 100_000
    same = p * theta + (1 - p) * (1 - theta)
    result = estimate(Crosswise(p, QUESTION), [round(n * same), n - round(n * same)])
    assert result.unbiased[0] == pytest.approx(theta, abs=1e-4)
    triangle = theta + p * (1 - theta)
    result = estimate(Triangular(p, QUESTION), [round(n * triangle), n - round(n * triangle)])
    assert result.unbiased[0] == pytest.approx(theta, abs=1e-4)


def test_nothing_is_drawn_in_the_page():
    for mechanism in (Crosswise(0.25, QUESTION), Triangular(0.25, QUESTION)):
        assert mechanism.sampler() == {"sampler": "combined"}
    assert DESIGNS["crosswise"].combined and DESIGNS["triangular"].combined
    assert not any(d.combined for d in DESIGNS.values() if d.id not in ("crosswise", "triangular"))


def test_a_stored_design_is_rebuilt_from_its_dict():
    for mechanism in (Crosswise(0.3, QUESTION), Triangular(0.3, QUESTION)):
        again = mechanism_from_dict(mechanism.to_dict())
        assert type(again) is type(mechanism) and again == mechanism
        assert again.parameters == mechanism.parameters


def test_the_presets_state_their_derivations():
    assert ITEMS["mother_birthday_jan_mar"].rate == pytest.approx(0.2466, abs=1e-4)
    assert ITEMS["mother_birthday_jan_apr"].rate == 120 / 365
    assert ITEMS["phone_last_digit_0_2"].rate == 0.3
    for item in ITEM_LIST:
        assert 0 < item.rate < 1 and item.rate != 0.5
        assert item.text.endswith("?") and item.source
        Crosswise(item.rate, item.text)
        Triangular(item.rate, item.text)
    assert DESIGNS["crosswise"].level.default == ITEM_LIST[0].rate


def test_words_for_respondents():
    words = describe_design(Crosswise(90 / 365, QUESTION))
    assert "same or different" in words and "25%" in words and "browser" not in words
    words = describe_design(Triangular(0.3, QUESTION))
    assert "circle" in words and "30%" in words
    assert "only a “yes” is protected" in deniability_line(Triangular(0.3, QUESTION))


def _spec(privacy: dict) -> dict:
    return {
        "title": "NRR",
        "questions": [{"key": "q", "kind": "yes_no", "text": "Did you cheat on the exam?", "privacy": privacy}],
    }


@pytest.mark.parametrize("design", ["crosswise", "triangular"])
def test_the_spec_round_trips(app, design):
    privacy = {"design": design, "unrelated_yes_rate": 0.3, "unrelated_question": QUESTION}
    if design == "triangular":
        privacy["allow_one_sided"] = True
    with app.app_context():
        survey = create_survey_from_spec(db.session, _spec(privacy))
        db.session.commit()
        exported = survey_to_spec(survey)
        assert exported["questions"][0]["privacy"] == privacy
        stored = survey.questions[0].design
        mechanism = stored.mechanism()
        assert mechanism.design == design and mechanism.parameters["unrelated_question"] == QUESTION
        again = create_survey_from_spec(db.session, exported)
        db.session.commit()
        assert again.questions[0].mechanism() == survey.questions[0].mechanism()
        assert survey_to_spec(again)["questions"] == exported["questions"]


def test_the_spec_refuses_what_the_designs_cannot_take(app):
    cases = [
        ({"design": "triangular", "unrelated_yes_rate": 0.3, "unrelated_question": QUESTION}, "spec.one_sided"),
        ({"design": "crosswise", "unrelated_yes_rate": 0.5, "unrelated_question": QUESTION}, "design.invalid"),
        ({"design": "crosswise", "unrelated_yes_rate": 0.3, "unrelated_question": 3}, "spec.not_text"),
        ({"design": "crosswise", "unrelated_yes_rate": 0.3, "unrelated_question": "  "}, "spec.not_text"),
        ({"design": "crosswise", "unrelated_yes_rate": 0.3}, "spec.parameter_missing"),
        ({"design": "crosswise", "epsilon": 1.0, "unrelated_question": QUESTION}, "spec.unknown_field"),
    ]
    with app.app_context():
        for privacy, code in cases:
            with pytest.raises(DomainError) as caught:
                create_survey_from_spec(db.session, _spec(privacy))
            assert caught.value.code == code, (privacy, caught.value)
            db.session.rollback()


def test_they_cannot_be_set_by_epsilon_and_the_builder_offers_them():
    for design in ("crosswise", "triangular"):
        with pytest.raises(ParameterError) as caught:
            DESIGNS[design].from_level("epsilon", 1.0, {"unrelated_question": QUESTION}, 2)
        assert caught.value.parameter == "epsilon"
        assert design in builder_designs()


# -- the respondent's page ----------------------------------------------------------------------------

PAGE_SPEC = {
    "title": "Exam",
    "slug": "nrr-page",
    "questions": [
        {
            "key": "cross",
            "kind": "yes_no",
            "text": "Did you cheat on the exam?",
            "privacy": {"design": "crosswise", "unrelated_yes_rate": 90 / 365, "unrelated_question": QUESTION},
        },
        {
            "key": "tri",
            "kind": "yes_no",
            "text": "Did you copy an essay?",
            "privacy": {
                "design": "triangular",
                "unrelated_yes_rate": 0.3,
                "unrelated_question": "Is the last digit of your phone number 0, 1 or 2?",
                "allow_one_sided": True,
            },
        },
    ],
}


def _fieldset(html: str, key: str) -> str:
    start = html.index(f'id="question-{key}"')
    return html[start : html.index("</fieldset>", start)]


def test_the_page_asks_the_combined_question_and_draws_nothing(app, client):
    slug = add_survey(app, PAGE_SPEC)
    html = client.get(f"/s/{slug}").get_data(as_text=True)
    for key, design in (("cross", "crosswise"), ("tri", "triangular")):
        fieldset = _fieldset(html, key)
        # not randomized in the page: no sampler, no true-answer form, the answer itself is posted
        assert "data-randomized" not in fieldset and "data-sampler" not in fieldset
        assert "data-true-answer" not in fieldset and "data-reported-for" not in fieldset
        for code, label in enumerate(COMBINED_OPTIONS[design]):
            assert f'name="q_{key}" value="{code}"' in fieldset
            assert escape(label) in fieldset
        assert f'aria-describedby="about-{key} instruction-{key}"' in fieldset
    assert escape(QUESTION) in _fieldset(html, "cross") and "same or different" in _fieldset(html, "cross")
    assert "circle only if both answers are “no”" in _fieldset(html, "tri")
    summary = html[
        html.index('id="randomization-explained"') : html.index("</p>", html.index('id="randomization-explained"'))
    ]
    assert "randomizes" not in summary and "No question in this survey is randomized" not in summary
    assert "Questions 1 and 2 are" in summary and "nothing is drawn at random" in summary
    # nothing random is drawn, so the page promises nothing about repeating random answers
    assert 'id="memo-on"' not in html and "new random answers" not in html


def test_the_privacy_page_says_nothing_is_drawn_for_them(app, client, user):
    slug = add_survey(app, PAGE_SPEC)
    signed = client.post("/auth/login", data={"username": "alice", "password": "correct horse battery"})
    assert signed.status_code == 302
    html = client.get(f"/s/{slug}/privacy").get_data(as_text=True)
    assert "your browser <strong>randomizes" not in html
    assert "asked together with an unrelated question" in html and html.count("Combined question") == 2


def test_a_posted_combined_answer_is_stored_as_the_report_code(app, client):
    slug = add_survey(app, PAGE_SPEC)
    submit_answers(client, slug, [{"cross": 0, "tri": 1}, {"cross": 1, "tri": 0}])
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        by_key = {q.id: q.key for q in survey.questions}
        stored = sorted((by_key[a.question_id], a.value) for a in db.session.scalars(select(Answer)))
    assert stored == [("cross", 0), ("cross", 1), ("tri", 0), ("tri", 1)]


def test_only_the_combined_answer_is_posted(tmp_path_factory, browser):
    """A real browser answers the combined questions: every request it makes is captured, and the one
    POST carries the CSRF token, the submission key and exactly the ticked combined answers (the
    report codes the estimator's rows expect), which the database then holds."""
    ticked = {"cross": 0, "tri": 1}
    with live_site(tmp_path_factory.mktemp("nrr"), "nrr-tests", lambda s: create_survey_from_spec(s, PAGE_SPEC)) as (
        app,
        base,
    ):
        context = browser.new_context()
        page = context.new_page()
        captured: list = []
        context.on("request", lambda request: captured.append(request))
        page.goto(f"{base}/s/nrr-page")
        page.wait_for_function("!document.getElementById('submit-button').disabled")
        tick_answers(page, ticked)
        with page.expect_navigation():
            page.click("#submit-button")
        assert page.url == f"{base}/s/nrr-page/thanks", page.text_content("main")
        posts = [r for r in captured if r.method == "POST"]
        context.close()
        assert len(posts) == 1
        posted = dict(parse_qsl(posts[0].post_data, keep_blank_values=True))
        assert set(posted) == {"csrf_token", "submission_key", "q_cross", "q_tri"}
        assert {k: posted[f"q_{k}"] for k in ticked} == {k: str(v) for k, v in ticked.items()}
        with app.app_context():
            survey = db.session.scalar(select(Survey).where(Survey.slug == "nrr-page"))
            rows = {q.key: q.mechanism().matrix for q in survey.questions}
            by_key = {q.id: q.key for q in survey.questions}
            stored = {by_key[a.question_id]: a.value for a in db.session.scalars(select(Answer))}
        assert stored == ticked
        # "same" (code 0) is the row P(same | yes) = p; the circle (code 1) the row a true "yes" never gives
        assert rows["cross"][0].tolist() == pytest.approx([90 / 365, 275 / 365])
        assert rows["tri"][1].tolist() == pytest.approx([0.0, 0.7])


# -- the builder ---------------------------------------------------------------------------------------

YES_NO_FORM = {"kind": "yes_no", "text": "Did you cheat on the exam?", "required": "y"}


def test_the_preview_describes_them_through_warners_machinery(signed_in):
    rate = repr(90 / 365)
    query = {"design": "crosswise", "kind": "yes_no", "unrelated_rate": rate, "unrelated_question": QUESTION}
    shown = signed_in.get("/api/privacy/preview", query_string=query).json
    assert shown["ok"], shown
    assert shown["epsilon"] == pytest.approx(math.log(275 / 90))
    warner = signed_in.get(
        "/api/privacy/preview", query_string={"design": "warner", "kind": "yes_no", "truth_probability": rate}
    ).json
    # the same matrix: the same planned margin and respondents needed
    assert (
        shown["margin_text"] == warner["margin_text"]
        and shown["respondents_needed_text"] == warner["respondents_needed_text"]
    )
    assert "same or different" in shown["description"]
    query.update(design="triangular", unrelated_rate="0.3")
    shown = signed_in.get("/api/privacy/preview", query_string=query).json
    assert shown["one_sided"]
    blank = signed_in.get("/api/privacy/preview", query_string={**query, "unrelated_question": " "})
    assert blank.status_code == 400 and blank.json["field"] == "unrelated_question"
    half = signed_in.get("/api/privacy/preview", query_string={**query, "design": "crosswise", "unrelated_rate": "0.5"})
    assert half.status_code == 400 and half.json["field"] == "unrelated_rate"


def test_the_builder_offers_the_presets_and_saves_a_typed_unrelated_question(app, signed_in):
    slug = new_draft(signed_in)
    page = signed_in.get(f"/surveys/{slug}/questions/new").text
    for item in ITEM_LIST:
        assert f'value="{item.id}"' in page and f'data-rate="{item.rate}"' in page
        assert escape(item.source) in page
    assert 'id="unrelated-preset-block"' in page and 'data-designs="crosswise triangular"' in page
    # the ε choice is not offered for them: their ε follows from the rate
    typed = "Is the last digit of your phone number 0, 1 or 2?"
    add(
        signed_in,
        slug,
        {
            **YES_NO_FORM,
            "design": "crosswise",
            "set_by": "epsilon",
            "epsilon": "2",
            "unrelated_rate": "0.3",
            "unrelated_question": typed,
        },
    )
    data = {
        **YES_NO_FORM,
        "text": "Copied?",
        "design": "triangular",
        "unrelated_rate": "0.3",
        "unrelated_question": typed,
    }
    refused = add(signed_in, slug, data, status=400)
    assert "one-sided" in refused.text
    add(signed_in, slug, {**data, "allow_one_sided": "y"})
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        privacy = [q["privacy"] for q in survey_to_spec(survey)["questions"]]
    assert privacy == [
        {"design": "crosswise", "unrelated_yes_rate": 0.3, "unrelated_question": typed},
        {"design": "triangular", "unrelated_yes_rate": 0.3, "unrelated_question": typed, "allow_one_sided": True},
    ]


def test_the_labelled_files_name_a_combined_questions_reports_by_its_answers(app):
    """A researcher's codes are yes = 1, no = 0 (survey/domain/results/coding.py); a crosswise report
    of 1 is then "same" (the "yes" row), and the SPSS/Stata value labels say so."""
    from survey.domain.results.labelled import _labels

    add_survey(app, PAGE_SPEC)
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == "nrr-page"))
        _, value_labels = _labels(survey)
    assert value_labels["cross"] == {1: COMBINED_OPTIONS["crosswise"][0], 0: COMBINED_OPTIONS["crosswise"][1]}
    assert value_labels["tri"] == {1: COMBINED_OPTIONS["triangular"][0], 0: COMBINED_OPTIONS["triangular"][1]}
