"""The survey builder over HTTP: drafts, questions, privacy per question, the budget, the preview API.

What these prove: a survey built in the browser goes through the spec's own validation (its messages
appear next to the input they are about, with status 400, and nothing is saved); the stored designs
and every number the preview and the budget panel show are the privacy core's; an opened survey's
texts can be corrected but nothing structural can change (409, stored design untouched); and only
the survey's organizers can reach any of it (everyone else gets 404, anonymous visitors the sign-in).
"""

from __future__ import annotations

import json
import math
import re
from html import unescape

import pytest
from sqlalchemy import select

from survey.domain.errors import DomainError, Frozen
from survey.domain.models import Membership, Survey, User
from survey.domain.surveys.kinds import builder_designs
from survey.domain.surveys.specs import create_survey_from_spec
from survey.domain.surveys.wording import deniability_sentence, describe_design
from survey.platform.extensions import db
from survey.privacy import (
    CoinFlip,
    GeneralizedRR,
    Warner,
    design_effect,
    margin_of_error,
    sample_size,
)
from survey.privacy.designs import DESIGNS, Design, Parameter

from .accounts import make_user, sign_in
from .builder import CHOICE, FormValues, add, control, field_error, new_draft, snapshot

YES_NO = {
    "kind": "yes_no",
    "text": "Have you ever cheated in an exam?",
    "required": "y",
    "design": "coin_flip",
    "set_by": "epsilon",
    "epsilon": repr(math.log(3)),
    "yes_probability": "0.5",
}
DIRECT = {"kind": "direct", "text": "Your age group?", "options": "under 30\n30 or over"}
WARNER = {
    "kind": "yes_no",
    "text": "Mirrored?",
    "required": "y",
    "design": "warner",
    "set_by": "truth_probability",
    "truth_probability": "0.8",
}
#: The builder's form for a number randomized by the hybrid design at ε = 1 on 0 .. 30.
RR_NUMBER = {
    "kind": "rr_number",
    "text": "How many drinks did you have last week?",
    "required": "y",
    "minimum": "0",
    "maximum": "30",
    "design": "hybrid",
    "set_by": "epsilon",
    "epsilon": "1",
}
ONE_SIDED = {
    **YES_NO,
    "text": "One-sided?",
    "set_by": "truth_probability",
    "truth_probability": "0.5",
    "yes_probability": "1",
}


# -- helpers -----------------------------------------------------------------------------------------


def invalid_fields(html: str) -> set[str]:
    return set(re.findall(r'<p class="field-error" id="([a-z_]+)-error">', html))


@pytest.fixture
def draft(app, signed_in) -> str:
    return new_draft(signed_in)


# -- creating a draft --------------------------------------------------------------------------------


def test_organizer_creates_a_draft_and_lands_on_its_build_page(app, signed_in):
    assert signed_in.get("/surveys/new").status_code == 200
    slug = new_draft(signed_in, "Exam habits")
    stored = snapshot(app, slug)
    assert stored["status"] == "draft" and stored["owner"] == "alice" and stored["questions"] == []
    assert (stored["title"], stored["introduction"], stored["closing_message"]) == ("Exam habits", "Hello.", "Bye.")
    page = signed_in.get(f"/surveys/{slug}/build").text
    assert "<h1>Exam habits</h1>" in page
    assert 'class="state state-draft">draft<' in page
    assert f'href="/surveys/{slug}/questions/new"' in page
    assert f'href="/surveys/{slug}/results"' in page
    assert f'href="/s/{slug}"' not in page  # a draft has no respondent page yet
    assert 'id="total-epsilon">0.00<' in page


def test_a_survey_needs_a_title_and_nothing_is_created_without_one(app, signed_in):
    response = signed_in.post("/surveys/new", data={"title": "  ", "introduction": "kept"})
    assert response.status_code == 400
    assert "non-empty" in field_error(response.text, "title")
    assert "kept" in response.text  # what was typed stays in the form
    with app.app_context():
        assert db.session.scalar(select(Survey)) is None


# -- questions ---------------------------------------------------------------------------------------


def test_each_kind_of_question_is_added_with_the_privacy_cores_design(app, signed_in, draft):
    for data in (YES_NO, CHOICE, DIRECT, WARNER):
        add(signed_in, draft, data)
    yes_no, choice, direct, warner = snapshot(app, draft)["questions"]
    assert [q["key"] for q in (yes_no, choice, direct, warner)] == ["q1", "q2", "q3", "q4"]

    assert yes_no["privacy"] == {"design": "coin_flip", **CoinFlip.from_epsilon(math.log(3)).parameters}
    assert yes_no["design"]["epsilon"] == pytest.approx(math.log(3), abs=1e-12)
    assert yes_no["required"] is True

    assert choice["options"] == ["never", "sometimes", "often", "always"]
    # set by its ε, a GRR design keeps that ε as set (the spec can hold it), with the matrix it implies
    assert choice["privacy"] == {"design": "grr", "epsilon": 1.0}
    assert choice["design"]["matrix"] == GeneralizedRR(4, epsilon=1).matrix.tolist()
    assert choice["design"]["epsilon"] == pytest.approx(1.0, abs=1e-12)

    assert direct["kind"] == "direct" and "privacy" not in direct and direct["options"] == ["under 30", "30 or over"]
    assert direct["required"] is False  # the box was not ticked

    assert warner["privacy"] == {"design": "warner", "p": 0.8}
    assert warner["design"]["matrix"] == Warner(0.8).matrix.tolist()

    page = signed_in.get(f"/surveys/{draft}/build").text
    total = math.log(3) + 1 + Warner(0.8).epsilon
    assert f'id="total-epsilon">{total:.2f}<' in page
    assert "1 question is asked directly" in page and "not protected" in page


INVALID_QUESTIONS = [
    ({**CHOICE, "epsilon": "0"}, "epsilon", "greater than 0"),
    ({**YES_NO, "epsilon": "-1"}, "epsilon", "greater than 0"),
    ({**YES_NO, "epsilon": "lots"}, "epsilon", "must be a number"),
    ({**YES_NO, "set_by": "truth_probability", "truth_probability": "1.5"}, "truth_probability", "at most 1"),
    (
        {**CHOICE, "set_by": "truth_probability", "truth_probability": "0.2"},
        "truth_probability",
        "above 1 divided by the number of options",
    ),
    ({**WARNER, "truth_probability": "0.5"}, "truth_probability", "other than 0.5"),
    ({**YES_NO, "set_by": "truth_probability", "truth_probability": "1"}, "truth_probability", "protects nothing"),
    ({**YES_NO, "yes_probability": "2"}, "yes_probability", "from 0 to 1"),
    ({**CHOICE, "options": "only one"}, "options", "2 to 50 options"),
    ({**CHOICE, "options": "same\nsame"}, "options", "distinct"),
    ({**CHOICE, "design": "coin_flip"}, "design", "must be one of"),
    ({**YES_NO, "text": "   "}, "text", "non-empty"),
    ({**YES_NO, "key": "Not A Key"}, "key", "lowercase letter"),
    ({**YES_NO, "key": "submission"}, "key", "reserved"),
    ({**YES_NO, "kind": "essay"}, "kind", "must be one of"),
]


def test_invalid_question_shows_the_error_next_to_its_field_and_saves_nothing(app, signed_in, draft):
    for data, field, message in INVALID_QUESTIONS:
        html = add(signed_in, draft, data, status=400).text
        assert message in field_error(html, field, "kind-0" if field == "kind" else None), (field, message)
        assert invalid_fields(html) == {field}, (field, message)
        assert 'id="error-summary"' in html
        assert not data["text"].strip() or data["text"] in unescape(html)  # what was typed stays in the form
    assert snapshot(app, draft)["questions"] == []


def test_an_invalid_form_still_shows_the_preview_of_what_is_valid(signed_in, draft):
    """Without JavaScript the server renders the preview for the submitted values."""
    html = add(signed_in, draft, {**YES_NO, "text": ""}, status=400).text
    assert "at most 75% sure" in unescape(html)
    assert "±6.2 percentage points" in html
    html = add(signed_in, draft, {**CHOICE, "epsilon": "0"}, status=400).text
    assert re.search(
        r'<p class="field-error" data-preview="error" id="preview-error">ε \(epsilon\) must be a number greater than 0',
        html,
    )


def test_editing_a_draft_question_changes_it_in_place(app, signed_in, draft):
    add(signed_in, draft, YES_NO)
    add(signed_in, draft, DIRECT)
    url = f"/surveys/{draft}/questions/q1/edit"
    shown = FormValues.of(signed_in, url)
    assert shown["set_by"] == "truth_probability" and float(shown["truth_probability"]) == pytest.approx(0.5)
    assert shown["design"] == "coin_flip" and shown["kind"] == "yes_no"

    unchanged = snapshot(app, draft)
    assert signed_in.post(url, data=shown).status_code == 303
    assert snapshot(app, draft) == unchanged  # an unchanged form changes nothing, to the last bit

    response = signed_in.post(url, data={**YES_NO, "text": "Cheated, ever?", "epsilon": "2"})
    assert response.status_code == 303
    q1 = snapshot(app, draft)["questions"][0]
    assert q1["text"] == "Cheated, ever?" and q1["design"]["epsilon"] == pytest.approx(2.0)

    # a yes/no question becomes a choice, then a direct one, then yes/no again: rows change in place
    assert signed_in.post(url, data={**CHOICE, "text": "Now a choice"}).status_code == 303
    assert snapshot(app, draft)["questions"][0]["options"] == ["never", "sometimes", "often", "always"]
    assert signed_in.post(url, data={**DIRECT, "text": "Now direct"}).status_code == 303
    q1 = snapshot(app, draft)["questions"][0]
    assert q1["kind"] == "direct" and "design" not in q1 and q1["key"] == "q1"
    assert signed_in.post(url, data={**WARNER, "key": "renamed"}).status_code == 303
    questions = snapshot(app, draft)["questions"]
    assert [q["key"] for q in questions] == ["renamed", "q2"]
    assert questions[0]["privacy"] == {"design": "warner", "p": 0.8} and questions[0]["codes"] == [0, 1]

    response = signed_in.post(f"/surveys/{draft}/questions/renamed/edit", data={**WARNER, "key": "q2"})
    assert response.status_code == 400 and "used by" in field_error(response.text, "key")


def test_an_imported_forced_response_design_is_shown_as_stored_and_kept_to_the_last_bit(app, signed_in, user):
    """Forced response is edited in the builder like any design: shown by its forcing probabilities,
    unchanged by a text edit, replaced by choosing another design."""
    spec = {
        "title": "Imported",
        "slug": "imported",
        "status": "draft",
        "questions": [
            {
                "key": "fr",
                "kind": "choice",
                "text": "Which?",
                "options": ["a", "b", "c"],
                "privacy": {"design": "forced_response", "forced": [0.1, 0.15, 0.05]},
            }
        ],
    }
    with app.app_context():
        create_survey_from_spec(db.session, spec, owner=db.session.get(User, user))
        db.session.commit()
    before = snapshot(app, "imported")["questions"][0]
    url = "/surveys/imported/questions/fr/edit"
    shown = FormValues.of(signed_in, url)
    assert (shown["design"], shown["set_by"], shown["forced"]) == ("forced_response", "forced", "0.1, 0.15, 0.05")
    assert signed_in.post(url, data={**shown, "text": "Which one?"}).status_code == 303
    after = snapshot(app, "imported")["questions"][0]
    assert after["text"] == "Which one?" and after["design"] == before["design"]
    assert signed_in.post(url, data={**shown, "design": "grr", "set_by": "epsilon", "epsilon": "1"}).status_code == 303
    assert snapshot(app, "imported")["questions"][0]["design"]["name"] == "grr"


def test_questions_are_reordered_and_deleted(app, signed_in, draft):
    for text in ("first", "second", "third"):
        add(signed_in, draft, {**YES_NO, "text": text})

    def order() -> list[str]:
        questions = snapshot(app, draft)["questions"]
        assert [q["position"] for q in questions] == list(range(len(questions)))
        return [q["text"] for q in questions]

    move = f"/surveys/{draft}/questions/{{}}/move"
    assert signed_in.post(move.format("q3"), data={"direction": "up"}).status_code == 303
    assert order() == ["first", "third", "second"]
    assert signed_in.post(move.format("q1"), data={"direction": "up"}).status_code == 303  # already first
    assert signed_in.post(move.format("q1"), data={"direction": "down"}).status_code == 303
    assert order() == ["third", "first", "second"]
    assert signed_in.post(move.format("q1"), data={"direction": "sideways"}).status_code == 400
    assert order() == ["third", "first", "second"]

    assert signed_in.post(f"/surveys/{draft}/questions/q1/delete").status_code == 303
    assert order() == ["third", "second"]
    assert signed_in.post(f"/surveys/{draft}/questions/q1/delete").status_code == 404
    page = signed_in.get(f"/surveys/{draft}/build").text
    assert page.index("third") < page.index("second")


def test_infinite_epsilon_needs_the_explicit_one_sided_checkbox(app, signed_in, draft):
    response = add(signed_in, draft, ONE_SIDED, status=400)
    message = field_error(response.text, "allow_one_sided")
    assert "ε = ∞" in message and "reveal the true answer" in message and "Allow one-sided protection" in message
    assert "some reports reveal the true answer" in unescape(response.text)  # the checkbox's own warning
    assert snapshot(app, draft)["questions"] == []

    add(signed_in, draft, {**ONE_SIDED, "allow_one_sided": "y"})
    (question,) = snapshot(app, draft)["questions"]
    assert question["design"]["epsilon"] is None and question["privacy"]["allow_one_sided"] is True
    page = unescape(signed_in.get(f"/surveys/{draft}/build").text)
    assert 'id="total-epsilon">∞<' in page and "one-sided protection" in page


# -- the budget panel --------------------------------------------------------------------------------


def test_planning_form_sets_cap_and_figures_and_the_panel_follows(app, signed_in, draft):
    add(signed_in, draft, YES_NO)
    add(signed_in, draft, CHOICE)
    add(signed_in, draft, DIRECT)
    planning = f"/surveys/{draft}/planning"
    response = signed_in.post(
        planning, data={"epsilon_cap": "1.5", "expected_respondents": "400", "target_margin": "0.03"}
    )
    assert response.status_code == 303
    stored = snapshot(app, draft)
    assert (stored["epsilon_cap"], stored["expected_respondents"], stored["target_margin"]) == (1.5, 400, 0.03)

    page = unescape(signed_in.get(f"/surveys/{draft}/build").text)
    assert f'id="total-epsilon">{math.log(3) + 1:.2f}<' in page
    assert "Over the cap of 1.50" in page
    coin, grr = CoinFlip(0.5, 0.5), GeneralizedRR(4, epsilon=1)
    flat = " ".join(page.split())
    for mechanism in (coin, grr):
        row = (
            f"<td>±{100 * margin_of_error(mechanism, 400):.1f} pts</td> "
            f"<td>{sample_size(mechanism, 0.03):,}</td> "
            f"<td>{design_effect(mechanism):.1f}×</td>"
        )
        assert row in flat
    assert "at 400 respondents" in flat and "a margin of ±3.0 percentage points" in flat

    data = {"epsilon_cap": "5", "expected_respondents": "400", "target_margin": "0.03"}
    assert signed_in.post(planning, data=data).status_code == 303
    assert "Within the cap of 5.00" in signed_in.get(f"/surveys/{draft}/build").text
    signed_in.post(planning, data={"epsilon_cap": "", "expected_respondents": "400", "target_margin": "0.03"})
    assert snapshot(app, draft)["epsilon_cap"] is None
    assert "No cap on the total ε is set" in signed_in.get(f"/surveys/{draft}/build").text


INVALID_PLANNING = [
    ({"epsilon_cap": "-1"}, "epsilon_cap", "greater than 0"),
    ({"epsilon_cap": "none"}, "epsilon_cap", "greater than 0"),
    ({"expected_respondents": "many"}, "expected_respondents", "whole number"),
    ({"expected_respondents": "0"}, "expected_respondents", "whole number"),
    ({"target_margin": "5"}, "target_margin", "between 0 and 1"),
]


def test_invalid_planning_figures_are_refused_next_to_their_field(app, signed_in, draft):
    before = snapshot(app, draft)
    for data, field, message in INVALID_PLANNING:
        form = {"epsilon_cap": "2", "expected_respondents": "500", "target_margin": "0.04", **data}
        response = signed_in.post(f"/surveys/{draft}/planning", data=form)
        assert response.status_code == 400, data
        assert message in field_error(response.text, field), data
    assert snapshot(app, draft) == before


def test_survey_texts_are_saved_and_a_title_is_required(app, signed_in, draft):
    url = f"/surveys/{draft}/details"
    data = {"title": "New title", "introduction": "New intro", "closing_message": "Thanks!"}
    assert signed_in.post(url, data=data).status_code == 303
    stored = snapshot(app, draft)
    assert (stored["title"], stored["introduction"], stored["closing_message"]) == tuple(data.values())
    response = signed_in.post(url, data={**data, "title": ""})
    assert response.status_code == 400 and "non-empty" in field_error(response.text, "title")
    assert snapshot(app, draft)["title"] == "New title"


WHO_IS_ASKING = {
    "run_by": "Student Health Study, University of Example",
    "contact": "study@example.org",
    "ethics_statement": "Approved by the Example Ethics Board (ref. EB-2026-014).\nTaking part is voluntary.",
}


def test_who_is_asking_is_set_on_a_new_survey_and_corrected_on_the_build_page(app, signed_in):
    response = signed_in.post("/surveys/new", data={"title": "Exam habits", **WHO_IS_ASKING})
    assert response.status_code == 303
    slug = response.location.split("/")[2]
    assert {name: snapshot(app, slug)[name] for name in WHO_IS_ASKING} == WHO_IS_ASKING
    page = signed_in.get(f"/surveys/{slug}/build").text
    assert 'value="study@example.org"' in control(page, "contact")
    assert "Who is asking" in page and "EB-2026-014" in page

    url = f"/surveys/{slug}/details"
    texts = {"title": "Exam habits", **WHO_IS_ASKING, "contact": "+44 20 7946 0000"}
    assert signed_in.post(url, data=texts).status_code == 303
    assert snapshot(app, slug)["contact"] == "+44 20 7946 0000"
    before = snapshot(app, slug)
    response = signed_in.post(url, data={**texts, "contact": "x" * 301, "run_by": "Someone else"})
    assert response.status_code == 400
    assert "longer than 300 characters" in field_error(response.text, "contact")
    assert "Someone else" in control(response.text, "run_by")  # what was typed stays in the form
    assert snapshot(app, slug) == before  # nothing was saved


def test_who_is_asking_can_be_corrected_after_publishing(app, signed_in, small_survey):
    data = {"title": "Small test survey", **WHO_IS_ASKING}
    assert signed_in.post(f"/surveys/{small_survey}/details", data=data).status_code == 303
    stored = snapshot(app, small_survey)
    assert stored["status"] == "open" and stored["ethics_statement"] == WHO_IS_ASKING["ethics_statement"]


# -- the preview API ---------------------------------------------------------------------------------


def preview(client, status: int = 200, **params):
    response = client.get("/api/privacy/preview", query_string=params)
    assert response.status_code == status, response.json
    return response.json


def test_preview_reports_the_privacy_cores_numbers(signed_in):
    seed = CoinFlip(0.5, 0.5)
    data = preview(signed_in, design="coin_flip", epsilon=repr(math.log(3)), yes_probability="0.5", n=1000)
    assert data["ok"] is True
    assert data["truth_probability"] == pytest.approx(0.5, abs=1e-12)
    assert data["derived"]["name"] == "truth_probability" and data["derived"]["value"] == pytest.approx(0.5)
    assert data["epsilon"] == pytest.approx(math.log(3)) and data["epsilon_infinite"] is False
    assert "at most 75%" in data["deniability"] and data["deniability"] == deniability_sentence(seed)
    assert data["description"] == describe_design(seed)
    assert round(data["margin_of_error"], 3) == 0.062
    assert data["margin_of_error"] == pytest.approx(margin_of_error(seed, 1000), rel=1e-12)
    assert data["respondents_needed"] == sample_size(seed, 0.05)
    assert data["design_effect"] == pytest.approx(design_effect(seed)) == pytest.approx(4.0)
    assert data["one_sided_warning"] is None

    grr = preview(signed_in, design="grr", k=4, epsilon=1, n=400, margin=0.03)
    assert round(grr["truth_probability"], 5) == 0.47537
    assert grr["epsilon"] == pytest.approx(1.0)
    mechanism = GeneralizedRR(4, epsilon=1)
    assert grr["margin_of_error"] == pytest.approx(margin_of_error(mechanism, 400))
    assert grr["respondents_needed"] == sample_size(mechanism, 0.03)

    warner = preview(signed_in, design="warner", truth_probability="0.75")
    assert warner["derived"] == {
        "name": "epsilon",
        "value": pytest.approx(math.log(3)),
        "text": "(from the truth probability 0.75)",  # ε itself is shown beside it, not twice
        "input": "1.09861",
    }
    yes_no_grr = preview(signed_in, design="grr", kind="yes_no", epsilon="1")
    assert "“yes”" in yes_no_grr["deniability"]


def test_preview_of_a_one_sided_design_warns_and_says_whether_it_is_allowed(signed_in):
    params = {"design": "coin_flip", "truth_probability": "0.5", "yes_probability": "1"}
    data = preview(signed_in, **params)
    assert data["epsilon"] is None and data["epsilon_infinite"] is True and data["epsilon_text"] == "∞"
    assert data["one_sided"] is True and data["one_sided_allowed"] is False
    assert "reveal the answer" in data["one_sided_warning"]
    assert preview(signed_in, **params, allow_one_sided="1")["one_sided_allowed"] is True


def _core_error(build) -> str:
    with pytest.raises(ValueError) as caught:
        build()
    return str(caught.value)


PREVIEW_ERRORS = [
    ({"design": "nonesuch", "epsilon": "1"}, "design", None),
    ({"design": "laplace", "kind": "choice", "k": "3", "epsilon": "1"}, "design", None),
    ({"design": "grr", "kind": "rr_number", "minimum": "0", "maximum": "30", "epsilon": "1"}, "design", None),
    # a randomized number: its range (the spec's rule) and its ε (at most NUMBER_EPSILON_MAX)
    ({"design": "laplace", "epsilon": "1"}, "minimum", None),
    ({"design": "hybrid", "minimum": "0", "maximum": "0", "epsilon": "1"}, "maximum", None),
    ({"design": "hybrid", "minimum": "zero", "maximum": "30", "epsilon": "1"}, "minimum", None),
    ({"design": "duchi", "minimum": "0", "maximum": "30", "epsilon": "25"}, "epsilon", None),
    ({"design": "piecewise", "minimum": "0", "maximum": "30", "epsilon": "0"}, "epsilon", None),
    ({"design": "hybrid", "minimum": "0", "maximum": "30"}, "epsilon", None),
    ({"design": "coin_flip", "kind": "choice", "k": "3", "epsilon": "1"}, "design", None),
    ({"design": "grr", "k": "4", "epsilon": "0"}, "epsilon", _core_error(lambda: GeneralizedRR(4, epsilon=0.0))),
    ({"design": "coin_flip", "epsilon": "abc"}, "epsilon", _core_error(lambda: CoinFlip.from_epsilon("abc"))),
    ({"design": "coin_flip", "epsilon": "-2"}, "epsilon", _core_error(lambda: CoinFlip.from_epsilon(-2.0))),
    (
        {"design": "coin_flip", "truth_probability": "1.5"},
        "truth_probability",
        _core_error(lambda: CoinFlip(1.5, 0.5)),
    ),
    (
        {"design": "coin_flip", "epsilon": "1", "yes_probability": "7"},
        "yes_probability",
        _core_error(lambda: CoinFlip.from_epsilon(1.0, 7.0)),
    ),
    ({"design": "warner", "truth_probability": "0.5"}, "truth_probability", _core_error(lambda: Warner(0.5))),
    ({"design": "grr", "k": "4", "truth_probability": "1"}, "truth_probability", None),
    ({"design": "grr", "k": "4", "epsilon": "1", "truth_probability": "0.5"}, "epsilon", None),
    ({"design": "grr", "k": "4"}, "epsilon", None),
    ({"design": "grr", "k": "1", "epsilon": "1"}, "k", None),
    ({"design": "grr", "k": "two", "epsilon": "1"}, "k", None),
    ({"design": "grr", "k": "4", "epsilon": "1", "n": "0"}, "n", None),
    ({"design": "grr", "k": "4", "epsilon": "1", "n": "inf"}, "n", None),
    ({"design": "grr", "k": "4", "epsilon": "1", "margin": "2"}, "margin", None),
]


def test_preview_refuses_invalid_input_with_the_field_and_the_cores_message(signed_in):
    for params, field, message in PREVIEW_ERRORS:
        data = preview(signed_in, status=400, **params)
        assert data["ok"] is False and data["field"] == field and data["error"], params
        assert message is None or data["error"] == message, params


# -- one rule, wherever the input arrives: the drift bugs the house issue found ----------------------


def _warner_question(p: float) -> dict:
    return {"key": "w", "kind": "yes_no", "text": "Mirrored?", "privacy": {"design": "warner", "p": p}}


def test_the_preview_refuses_warner_with_p_0_as_saving_does_same_message_same_path(app, signed_in, draft):
    """Warner with p = 0 always sends the opposite answer: every report reveals the truth. Saving
    refused it; the preview showed it with a one-sided warning. Both refuse it now, alike."""
    with app.app_context():
        with pytest.raises(DomainError) as saving:
            create_survey_from_spec(db.session, {"title": "T", "questions": [_warner_question(0.0)]})
        db.session.rollback()
    assert saving.value.path == ("questions", 0, "privacy")
    data = preview(signed_in, status=400, design="warner", truth_probability="0")
    assert data["ok"] is False and data["status"] == 400
    assert data["error"] == saving.value.message and data["path"] == ["privacy"] == list(saving.value.path[2:])
    assert data["field"] == "truth_probability"
    # the builder's own form refuses it next to the same input, with the same words
    html = add(signed_in, draft, {**WARNER, "truth_probability": "0"}, status=400).text
    assert field_error(html, "truth_probability") == saving.value.message
    assert snapshot(app, draft)["questions"] == []


@pytest.mark.parametrize("field", ["text", "help_text"])
def test_a_5000_character_text_is_refused_on_an_open_survey_as_on_a_draft(app, signed_in, small_survey, draft, field):
    """Correcting an open survey's texts skipped the 2,000-character limit a draft (and a spec) has."""
    long = "x" * 5000
    before = snapshot(app, small_survey)
    response = signed_in.post(f"/surveys/{small_survey}/questions/drugs/edit", data={field: long})
    assert response.status_code == 400
    assert "longer than 2000 characters" in field_error(response.text, field)
    assert snapshot(app, small_survey) == before
    html = add(signed_in, draft, {**YES_NO, field: long}, status=400).text
    assert "longer than 2000 characters" in field_error(html, field)
    assert snapshot(app, draft)["questions"] == []


def offered(html: str) -> tuple[set[str], dict[str, list[str]]]:
    """The designs of the question form's select, and which of them its script offers per kind."""
    select_html = re.search(r'<select[^>]*id="design"[^>]*>(.*?)</select>', html, re.S).group(1)
    by_kind = re.search(r'data-designs-by-kind="([^"]*)"', html).group(1)
    return set(re.findall(r'value="([a-z_]+)"', select_html)), json.loads(unescape(by_kind))


def spec_accepts(app, kind: str, design: Design) -> bool:
    labels = ["yes", "no"] if kind == "yes_no" else ["a", "b", "c"]
    others = {p.name: "Is it?" if p.text else p.default if p.default is not None else 0.3 for p in design.others}
    # a non-randomized design is set by its unrelated question's rate (its ε follows from it)
    set_by, level = (design.level.name, design.level.default) if design.combined else ("epsilon", 1.0)
    question = {
        "key": "q",
        "kind": kind,
        "text": "?",
        "privacy": design.from_level(set_by, level, others, len(labels)),
    }
    if design.combined and math.isinf(design.mechanism(question["privacy"], labels).epsilon):
        question["privacy"]["allow_one_sided"] = True
    if kind == "rr_number":
        question["minimum"], question["maximum"] = 0, 30
    elif kind != "yes_no":
        question["options"] = labels
    with app.app_context():
        try:
            create_survey_from_spec(db.session, {"title": "T", "questions": [question]})
        except DomainError:
            return False
        finally:
            db.session.rollback()
    return True


def test_the_builder_offers_every_design_the_spec_accepts_for_each_kind(app, signed_in, draft):
    """The builder offered coin flip, Warner and GRR only, although the spec also accepted forced
    response and the unrelated question. Now both read the registry."""
    designs, by_kind = offered(signed_in.get(f"/surveys/{draft}/questions/new").text)
    # every design serving a kind the builder offers: the randomized number's designs of numbers too
    # (a design the form cannot make yet says so in the registry: in_builder=False)
    assert designs == set(builder_designs()) == {d.id for d in DESIGNS.values() if d.in_builder}
    for kind in ("yes_no", "choice", "rr_number"):
        accepted = [d.id for d in DESIGNS.values() if d.in_builder and spec_accepts(app, kind, d)]
        assert by_kind[kind] == accepted, kind
    assert by_kind["rr_number"] == [d.id for d in DESIGNS.values() if d.numbers]
    assert set(by_kind["yes_no"]) | set(by_kind["choice"]) | set(by_kind["rr_number"]) == set(builder_designs())


def _form_for(design: Design, kind: str) -> dict:
    base = {"yes_no": YES_NO, "rr_number": RR_NUMBER}.get(kind, CHOICE)
    data = {**base, "design": design.id, "set_by": "epsilon", "epsilon": "1.5"}
    data["text"] = f"{design.id} on {kind}?"
    for p in design.others:
        data[p.field] = "Is it?" if p.text else "0.3" if p.default is None else str(p.default)
    if design.combined:  # set by its unrelated question's rate, ε following from it
        data.update(set_by=design.level.field, epsilon="")
        data[design.level.field] = repr(design.level.default)
        if design.id == "triangular":
            data["allow_one_sided"] = "y"
    return data


@pytest.mark.parametrize("kind", ["yes_no", "choice", "rr_number"])
def test_every_design_a_kind_is_offered_is_saved_through_the_builder(app, signed_in, draft, kind):
    for design in builder_designs().values():
        if kind in design.kinds:
            add(signed_in, draft, _form_for(design, kind))
    stored = snapshot(app, draft)["questions"]
    assert [q["design"]["name"] for q in stored] == [d.id for d in builder_designs().values() if kind in d.kinds]
    epsilons = {q["design"]["name"]: q["design"]["epsilon"] for q in stored}
    assert all(
        epsilons[d.id] == pytest.approx(1.5) for d in builder_designs().values() if d.id in epsilons and not d.combined
    )
    if kind == "yes_no":  # the non-randomized designs: ε of the preset's rate (crosswise), ∞ (triangular)
        p = DESIGNS["crosswise"].level.default
        assert epsilons["crosswise"] == pytest.approx(abs(math.log(p / (1 - p)))) and epsilons["triangular"] is None


def test_every_design_is_edited_by_its_own_inputs_and_saving_it_unchanged_changes_nothing(app, signed_in, draft):
    for design in builder_designs().values():
        add(signed_in, draft, _form_for(design, design.kinds[-1]))
    before = snapshot(app, draft)
    for question in before["questions"]:
        url = f"/surveys/{draft}/questions/{question['key']}/edit"
        shown = FormValues.of(signed_in, url)
        design = DESIGNS[question["design"]["name"]]
        set_by = "epsilon" if "epsilon" in question["privacy"] else design.level.field  # as it was set
        assert shown["design"] == design.id and shown["set_by"] == set_by
        assert signed_in.post(url, data=shown).status_code == 303
    assert snapshot(app, draft) == before


class FakeMirror(Warner):
    """A design the registry does not ship: Warner under another name and parameter."""

    design = "fake_mirror"

    @property
    def parameters(self) -> dict:
        return {"q": self.p}


FAKE = Design(
    id="fake_mirror",
    name="Fake mirror",
    summary="A test's own design.",
    kinds=("yes_no",),
    level=Parameter("q", "Mirror probability", "The chance of the statement.", input="mirror_probability"),
    others=(),
    build=lambda privacy, labels: FakeMirror(privacy.get("q")),
    solve=lambda eps, others, k: Warner.from_epsilon(eps).p,
)


def test_a_new_registry_entry_is_offered_and_saved_by_the_builder_as_it_is(app, signed_in, draft, monkeypatch):
    monkeypatch.setitem(DESIGNS, FAKE.id, FAKE)
    page = signed_in.get(f"/surveys/{draft}/questions/new").text
    designs, by_kind = offered(page)
    assert FAKE.id in designs and FAKE.id in by_kind["yes_no"] and FAKE.id not in by_kind["choice"]
    assert 'id="mirror-probability-block"' in page and 'data-designs="fake_mirror"' in page
    assert preview(signed_in, design=FAKE.id, mirror_probability="0.8")["design_name"] == "Fake mirror"
    add(signed_in, draft, {**YES_NO, "design": FAKE.id, "set_by": "mirror_probability", "mirror_probability": "0.8"})
    (question,) = snapshot(app, draft)["questions"]
    assert question["privacy"] == {"design": FAKE.id, "q": 0.8}


def test_a_submission_refused_by_the_api_says_where_by_its_path(client, small_survey):
    response = client.post("/api/surveys/small-test/responses", json={"answers": {"drugs": 1, "nope": 0}})
    assert response.status_code == 400
    assert response.json["path"] == ["answers", "nope"] and response.json["status"] == 400
    assert "unknown question 'nope'" in response.json["error"]


# -- an opened survey --------------------------------------------------------------------------------


def test_an_open_surveys_texts_can_be_corrected(app, signed_in, small_survey):
    before = snapshot(app, small_survey)
    url = f"/surveys/{small_survey}/questions/drugs/edit"
    page = signed_in.get(url).text
    assert 'id="frozen-note"' in page
    assert "disabled" in control(page, "epsilon") and "disabled" in control(page, "kind-0")
    assert "disabled" not in control(page, "text")

    # what a browser sends: the disabled inputs are left out
    response = signed_in.post(url, data={"text": "Have you ever used drugs?", "help_text": "Any drug."})
    assert response.status_code == 303
    after = snapshot(app, small_survey)
    assert after["questions"][0]["text"] == "Have you ever used drugs?"
    assert after["questions"][0]["help_text"] == "Any drug."
    assert after["questions"][0]["design"] == before["questions"][0]["design"]

    # every input posted as shown (disabled ones included) is no change either
    for key in ("drugs", "mirror", "often", "age"):
        shown = FormValues.of(signed_in, f"/surveys/{small_survey}/questions/{key}/edit")
        assert signed_in.post(f"/surveys/{small_survey}/questions/{key}/edit", data=shown).status_code == 303
    assert snapshot(app, small_survey) == after

    response = signed_in.post(url, data={"text": ""})
    assert response.status_code == 400 and "non-empty" in field_error(response.text, "text")
    data = {"title": "Renamed", "introduction": "", "closing_message": ""}
    assert signed_in.post(f"/surveys/{small_survey}/details", data=data).status_code == 303
    assert snapshot(app, small_survey)["title"] == "Renamed"


STRUCTURAL_CHANGES = [
    ("post", "questions/drugs/edit", {"kind": "direct", "options": "yes\nno"}),
    ("post", "questions/often/edit", {"options": "never\nsometimes\noften"}),
    ("post", "questions/often/edit", {"options": "never\nrarely\noften\nalways"}),
    ("post", "questions/drugs/edit", {"set_by": "epsilon", "epsilon": "2"}),
    ("post", "questions/drugs/edit", {"yes_probability": "0.4"}),
    ("post", "questions/mirror/edit", {"truth_probability": "0.9"}),
    ("post", "questions/drugs/edit", {"key": "drugs2"}),
    ("post", "questions/drugs/delete", {}),
    ("post", "questions/mirror/move", {"direction": "up"}),
    ("post", "questions/new", YES_NO),
    ("get", "questions/new", None),
]


def test_an_open_survey_refuses_every_structural_change(app, signed_in, small_survey):
    before = snapshot(app, small_survey)
    for method, path, data in STRUCTURAL_CHANGES:
        url = f"/surveys/{small_survey}/{path}"
        response = signed_in.post(url, data=data) if method == "post" else signed_in.get(url)
        assert response.status_code == 409, (method, path, data)
        assert Frozen().message in unescape(response.text)
        assert snapshot(app, small_survey) == before, (method, path, data)


def test_the_build_page_of_an_open_survey_says_designs_are_frozen(signed_in, small_survey):
    page = signed_in.get(f"/surveys/{small_survey}/build").text
    assert 'id="frozen-note"' in page and "duplicate the survey" in page
    assert "/delete" not in page and "/move" not in page and "/questions/new" not in page
    assert f'href="/s/{small_survey}"' in page and 'class="state state-open">open<' in page
    assert "Correct texts" in page


# -- rights ------------------------------------------------------------------------------------------

ROUTES = [
    ("get", "build"),
    ("post", "details"),
    ("post", "planning"),
    ("get", "questions/new"),
    ("post", "questions/new"),
    ("get", "questions/drugs/edit"),
    ("post", "questions/drugs/edit"),
    ("post", "questions/drugs/delete"),
    ("post", "questions/drugs/move"),
]


def _request(client, method: str, slug: str, path: str):
    url = f"/surveys/{slug}/{path}"
    data = {"title": "x", "direction": "up", **YES_NO}
    return client.post(url, data=data) if method == "post" else client.get(url)


@pytest.mark.parametrize("role", [None, "researcher"])
def test_users_without_the_edit_right_get_404_everywhere(app, client, small_survey, bob, role):
    if role:
        with app.app_context():
            survey = db.session.scalar(select(Survey).where(Survey.slug == small_survey))
            db.session.add(Membership(survey=survey, user_id=bob, role=role))
            db.session.commit()
    before = snapshot(app, small_survey)
    sign_in(client, "bob")
    for method, path in ROUTES:
        assert _request(client, method, small_survey, path).status_code == 404, (method, path)
    assert client.get(f"/surveys/{small_survey}/results").status_code == (200 if role else 404)
    assert snapshot(app, small_survey) == before


def test_a_co_organizer_may_build(app, client, small_survey, bob):
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == small_survey))
        db.session.add(Membership(survey=survey, user_id=bob, role="organizer"))
        db.session.commit()
    sign_in(client, "bob")
    assert client.get(f"/surveys/{small_survey}/build").status_code == 200


def test_anonymous_visitors_are_sent_to_sign_in_and_the_api_answers_401(client, small_survey):
    for method, path in ROUTES:
        response = _request(client, method, small_survey, path)
        assert response.status_code == 302 and response.location.startswith("/auth/login"), (method, path)
    for method in ("get", "post"):
        response = getattr(client, method)("/surveys/new", data={"title": "x"})
        assert response.status_code == 302 and response.location.startswith("/auth/login")
    response = client.get("/api/privacy/preview", query_string={"design": "grr", "k": 4, "epsilon": 1})
    assert response.status_code == 401 and response.is_json and response.json["ok"] is False


def test_builder_forms_need_a_csrf_token(csrf_app):
    make_user(csrf_app, "carol", "a long enough password")
    client = csrf_app.test_client()

    def token(url: str) -> str:
        return re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', client.get(url).text).group(1)

    login = {"username": "carol", "password": "a long enough password", "csrf_token": token("/auth/login")}
    assert client.post("/auth/login", data=login).status_code == 302
    assert client.post("/surveys/new", data={"title": "No token"}).status_code == 400
    response = client.post("/surveys/new", data={"title": "With token", "csrf_token": token("/surveys/new")})
    assert response.status_code == 303
    build = client.get(response.location).text
    assert build.count('name="csrf_token"') >= 3  # sign-out, texts, planning (and every button form)
    slug = response.location.split("/")[2]
    assert client.post(f"/surveys/{slug}/questions/new", data=YES_NO).status_code == 400
    with csrf_app.app_context():
        assert db.session.scalar(select(Survey).where(Survey.slug == slug)).questions == []


NUMBER = {"kind": "number", "text": "How old are you?", "required": "y", "minimum": "16", "maximum": "99"}


def test_a_number_question_is_added_with_its_range_and_a_bad_range_is_shown_on_its_field(app, signed_in, draft):
    for data, field, message in [
        ({**NUMBER, "maximum": "16"}, "maximum", "above the minimum"),
        ({**NUMBER, "minimum": "sixteen"}, "minimum", "whole number"),
        ({**NUMBER, "maximum": "99.5"}, "maximum", "whole number"),
    ]:
        html = add(signed_in, draft, data, status=400).text
        assert message in field_error(html, field), (field, message)
        assert invalid_fields(html) == {field}
    assert snapshot(app, draft)["questions"] == []
    add(signed_in, draft, NUMBER)
    (question,) = snapshot(app, draft)["questions"]
    assert (question["kind"], question["minimum"], question["maximum"]) == ("number", 16, 99)
    assert "options" not in question and "privacy" not in question
    # the edit form shows the stored range, and saving it unchanged changes nothing
    shown = signed_in.get(f"/surveys/{draft}/questions/q1/edit").text
    assert 'value="16"' in control(shown, "minimum") and 'value="99"' in control(shown, "maximum")
    assert signed_in.post(f"/surveys/{draft}/questions/q1/edit", data=NUMBER).status_code == 303
    assert snapshot(app, draft)["questions"] == [question]


# -- a randomized number -----------------------------------------------------------------------------


def _stored_survey(app, slug: str):
    return db.session.scalar(select(Survey).where(Survey.slug == slug))


def test_a_randomized_number_is_built_through_the_form_edited_and_kept(app, signed_in, draft):
    """The kind's range and privacy blocks are on the form; saving goes through the spec's
    question_from_spec (the same stored design as the spec gives), and saving the edit form
    unchanged changes nothing, nor does an ε changed on the draft leave anything stale."""
    page = signed_in.get(f"/surveys/{draft}/questions/new").text
    assert 'value="rr_number"' in page
    for block in ("range-block", "privacy-block"):
        shown_for = re.search(rf'data-show-for-kind="([^"]*)" id="{block}"', page)
        assert shown_for and "rr_number" in shown_for.group(1).split(), block
    add(signed_in, draft, {**RR_NUMBER, "epsilon": "1.25"})
    (question,) = snapshot(app, draft)["questions"]
    assert (question["kind"], question["minimum"], question["maximum"]) == ("rr_number", 0, 30)
    assert question["privacy"] == {"design": "hybrid", "epsilon": 1.25}
    assert question["design"]["name"] == "hybrid" and question["design"]["epsilon"] == 1.25
    assert "options" not in question and question["codes"] == []
    with app.app_context():
        spec = create_survey_from_spec(
            db.session,
            {
                "title": "T",
                "questions": [
                    {
                        "key": "q1",
                        "kind": "rr_number",
                        "text": "?",
                        "minimum": 0,
                        "maximum": 30,
                        "privacy": {"design": "hybrid", "epsilon": 1.25},
                    }
                ],
            },
        )
        from_spec = spec.questions[0].design
        assert (from_spec.mechanism_name, from_spec.parameters, from_spec.epsilon) == (
            "hybrid",
            question["design"]["parameters"],
            1.25,
        )
        db.session.rollback()
    url = f"/surveys/{draft}/questions/q1/edit"
    shown = FormValues.of(signed_in, url)
    assert (shown["kind"], shown["design"], shown["minimum"], shown["maximum"]) == ("rr_number", "hybrid", "0", "30")
    assert float(shown["epsilon"]) == 1.25
    assert signed_in.post(url, data=shown).status_code == 303
    assert snapshot(app, draft)["questions"] == [question]
    assert (
        signed_in.post(url, data={**shown, "design": "laplace", "epsilon": "0.5", "maximum": "60"}).status_code == 303
    )
    (changed,) = snapshot(app, draft)["questions"]
    assert changed["privacy"] == {"design": "laplace", "epsilon": 0.5} and changed["maximum"] == 60


def test_a_randomized_numbers_bad_range_or_epsilon_is_shown_on_its_field(app, signed_in, draft):
    for data, field, message in [
        ({**RR_NUMBER, "maximum": "0"}, "maximum", "above the minimum"),
        ({**RR_NUMBER, "minimum": "none"}, "minimum", "a number from"),  # decimal ends are fine
        ({**RR_NUMBER, "epsilon": "25"}, "epsilon", "at most 20"),
        ({**RR_NUMBER, "epsilon": "0"}, "epsilon", "greater than 0"),
        ({**RR_NUMBER, "epsilon": ""}, "epsilon", "Type ε"),
        ({**RR_NUMBER, "design": "grr"}, "design", "hybrid, duchi, piecewise, laplace"),
    ]:
        html = add(signed_in, draft, data, status=400).text
        assert message in unescape(field_error(html, field)), (field, message)
        assert invalid_fields(html) == {field}, (field, invalid_fields(html))
    assert snapshot(app, draft)["questions"] == []


def test_an_opened_surveys_randomized_number_refuses_design_changes(app, signed_in, draft):
    add(signed_in, draft, RR_NUMBER)
    url = f"/surveys/{draft}/questions/q1/edit"
    shown = FormValues.of(signed_in, url)
    with app.app_context():
        _stored_survey(app, draft).status = "open"
        db.session.commit()
    before = snapshot(app, draft)
    frozen_page = signed_in.get(url)
    assert frozen_page.status_code == 200 and 'id="frozen-note"' in frozen_page.text
    assert "disabled" in control(frozen_page.text, "epsilon") and "disabled" in control(frozen_page.text, "maximum")
    for change in ({"design": "duchi"}, {"epsilon": "2"}, {"minimum": "1"}, {"maximum": "31"}):
        response = signed_in.post(url, data={**shown, **change})
        assert response.status_code == 409, change
        assert Frozen().message in unescape(response.text)
        assert snapshot(app, draft) == before, change
    corrected = signed_in.post(url, data={"text": "Drinks last week?"})
    assert corrected.status_code == 303
    (question,) = snapshot(app, draft)["questions"]
    assert question["text"] == "Drinks last week?" and question["design"] == before["questions"][0]["design"]


@pytest.mark.parametrize("design", ["hybrid", "duchi", "piecewise", "laplace"])
def test_the_preview_of_a_randomized_number_gives_number_margins_figures(signed_in, design):
    from survey.privacy.designs import NUMBER_EPSILON_MAX
    from survey.privacy.number_planning import number_margin

    data = preview(signed_in, design=design, kind="rr_number", minimum="-10", maximum="50", epsilon="1.5", n="800")
    mechanism = DESIGNS[design].mechanism({"epsilon": 1.5}, bounds=(-10, 50))
    planned = number_margin(800, -10, 50, mechanism=mechanism)
    direct = number_margin(800, -10, 50)
    assert data["ok"] is True and data["result"] == "numbers" and data["design"] == design
    assert data["epsilon"] == 1.5 and data["epsilon_text"] == "1.50" and data["n"] == 800
    assert data["margin_in_units"] == pytest.approx(planned, rel=1e-12)
    assert data["direct_margin_in_units"] == pytest.approx(direct, rel=1e-12)
    assert data["design_effect"] == pytest.approx((planned / direct) ** 2, rel=1e-12)
    assert data["margin_text"] == f"±{planned:.2f}" and data["direct_margin_text"] == f"±{direct:.2f}"
    assert planned > direct
    # the answers needed for the target margin (5 points by default) as a share of the range: ±3.00
    needed, direct_needed = data["respondents_needed"], data["direct_respondents_needed"]
    assert data["target_in_units"] == pytest.approx(3.0)
    at = lambda n: number_margin(n, -10, 50, mechanism=mechanism)  # noqa: E731
    assert at(needed) <= 3.0 < at(needed - 1)
    assert number_margin(direct_needed, -10, 50) <= 3.0 < number_margin(direct_needed - 1, -10, 50)
    assert needed > direct_needed
    assert data["respondents_needed_text"] == f"{needed:,} (for ±3.00, 5% of its range)"
    wider = preview(
        signed_in, design=design, kind="rr_number", minimum="-10", maximum="50", epsilon="1.5", margin="0.1"
    )
    assert wider["target_in_units"] == pytest.approx(6.0) and wider["respondents_needed"] < needed
    assert data["deniability"] == deniability_sentence(mechanism) and "at most 82%" in data["deniability"]
    assert data["description"] == describe_design(mechanism)
    top = preview(signed_in, design=design, kind="rr_number", minimum="0", maximum="1", epsilon=str(NUMBER_EPSILON_MAX))
    assert top["ok"] is True


def test_a_randomized_number_planned_past_a_billion_answers_still_gets_its_figures(signed_in):
    """A small ε and the smallest target margin: the search stops at 2^30 answers and the 1/√n law
    gives the rest (number_sample_size), rather than an error page."""
    from survey.privacy.number_planning import number_margin

    data = preview(
        signed_in, design="hybrid", kind="rr_number", minimum="0", maximum="100", epsilon="0.05", margin="0.001"
    )
    assert data["ok"] is True and data["respondents_needed"] > 2**30
    mechanism = DESIGNS["hybrid"].mechanism({"epsilon": 0.05}, bounds=(0, 100))
    # the law holds that far out: the planned half-width at the figure is the target, to 1e-6
    assert number_margin(data["respondents_needed"], 0, 100, mechanism=mechanism) == pytest.approx(0.1, rel=1e-6)
    assert data["respondents_needed_text"].startswith(f"{data['respondents_needed']:,} (for ±0.10, 0.1% of its range")


def test_the_question_page_of_a_randomized_number_shows_its_preview_without_javascript(signed_in, draft):
    from survey.domain.surveys.planning import DEFAULT_RESPONDENTS
    from survey.privacy.number_planning import number_margin, number_sample_size

    add(signed_in, draft, RR_NUMBER)
    page = signed_in.get(f"/surveys/{draft}/questions/q1/edit").text
    mechanism = DESIGNS["hybrid"].mechanism({"epsilon": 1}, bounds=(0, 30))
    planned = number_margin(DEFAULT_RESPONDENTS, 0, 30, mechanism=mechanism)
    numbers = re.search(r'<div data-for-result="numbers"( hidden)?>(.*?)</div>', page, re.S)
    assert numbers and numbers.group(1) is None and f"±{planned:.2f}" in numbers.group(2)
    needed = number_sample_size(1.5, 0, 30, mechanism=mechanism)  # 5% of the range 0 to 30
    assert f"{needed:,} (for ±1.50, 5% of its range)" in numbers.group(2)
    assert re.search(r'<div data-for-result="shares" hidden>', page)
    assert re.search(r'id="set-by-block"', page)
