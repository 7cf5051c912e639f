"""Declining a sensitive question: an explicit "prefer not to say", sent as a marker, counted apart.

A question whose spec says ``"decline": true`` (randomized questions only) accepts the marker
``"declined"`` in place of a report. It is stored as a declined answer, counted per question, and
kept out of every estimate, pair and day tally, microdata cell and regression: those are about the
respondents who answered. A marker on a question that does not allow it is refused and writes nothing.
"""

from __future__ import annotations

import csv
import io
import re

import pytest
from sqlalchemy import func, select

from survey.domain.errors import DomainError
from survey.domain.models import DECLINED, Answer, DayTally, PairTally, Survey
from survey.domain.responses.pending import fold_all
from survey.domain.responses.tallies import survey_counts, survey_results, tally_mismatches
from survey.domain.results.exports import codebook, estimates_csv, estimates_document, microdata_csv
from survey.domain.surveys.specs import create_survey_from_spec, survey_to_spec
from survey.platform.extensions import db

from .surveys import add_survey, stored, text

SPEC = {
    "title": "Declining",
    "slug": "declining",
    "questions": [
        {
            "key": "drugs",
            "kind": "yes_no",
            "text": "Have you used drugs?",
            "decline": True,
            "privacy": {"design": "warner", "p": 0.75},
        },
        {"key": "mirror", "kind": "yes_no", "text": "Mirrored?", "privacy": {"design": "warner", "p": 0.75}},
        {
            "key": "drinks",
            "kind": "rr_number",
            "text": "How many drinks last week?",
            "minimum": 0,
            "maximum": 30,
            "decline": True,
            "required": False,
            "privacy": {"design": "hybrid", "epsilon": 1},
        },
        {"key": "age", "kind": "direct", "text": "Age group?", "options": ["young", "old"], "required": False},
    ],
}


def _survey() -> Survey:
    return db.session.scalar(select(Survey).where(Survey.slug == "declining"))


def _post(client, answers: dict):
    return client.post("/api/surveys/declining/responses", json={"answers": answers})


def test_a_spec_lets_a_randomized_question_be_declined_and_exports_it(app, user):
    with app.app_context():
        survey = create_survey_from_spec(db.session, SPEC)
        again = survey_to_spec(survey)["questions"]
        assert [q.get("decline", False) for q in again] == [True, False, True, False]
        assert [q.decline for q in survey.questions] == [True, False, True, False]


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (
            {"key": "age", "kind": "direct", "text": "Age?", "options": ["a", "b"], "decline": True},
            "spec.decline_not_randomized",
        ),
        (
            {"key": "n", "kind": "number", "text": "N?", "minimum": 0, "maximum": 9, "decline": True},
            "spec.decline_not_randomized",
        ),
        ({**SPEC["questions"][0], "decline": "yes"}, "spec.not_boolean"),
    ],
)
def test_only_a_randomized_question_may_be_declined(app, user, change, code):
    with app.app_context(), pytest.raises(DomainError) as refused:
        create_survey_from_spec(db.session, {**SPEC, "questions": [change]})
    assert refused.value.code == code and refused.value.path[-1] == "decline"


def test_declines_are_counted_apart_and_estimates_are_about_those_who_answered(app, client, user):
    add_survey(app, SPEC)
    for i in range(30):
        answers = {"drugs": "declined" if i % 3 == 0 else i % 2, "mirror": (i // 2) % 2, "age": i % 2}
        answers["drinks"] = "declined" if i % 5 == 0 else i % 7
        assert _post(client, answers).status_code == 201
    with app.app_context():
        survey = _survey()
        ids = {q.key: q.id for q in survey.questions}
        counts = survey_counts(db.session, survey)
        assert counts.submissions == 30
        assert counts.declined == {ids["drugs"]: 10, ids["drinks"]: 6}
        assert int(counts.by_question[ids["drugs"]].sum()) == 20  # reports only
        assert sum(counts.numbers[ids["drinks"]].values()) == 24
        assert tally_mismatches(db.session, survey) == []  # the declaration and the recount agree

        # a decline feeds its answer tally alone: no pair and no day cell holds it (the pairs once folded)
        assert fold_all(db.session) == 30

        def cells(table, *where) -> int:
            return db.session.scalar(select(func.coalesce(func.sum(table.count), 0)).where(*where))

        drugs = ids["drugs"]
        assert (
            cells(PairTally, PairTally.question_id == drugs) + cells(PairTally, PairTally.other_id == drugs) == 20 * 2
        )
        assert cells(PairTally, PairTally.value == DECLINED) == cells(PairTally, PairTally.other_value == DECLINED) == 0
        assert cells(DayTally, DayTally.question_id == drugs) == 20
        assert cells(DayTally, DayTally.value == DECLINED) == 0
        assert db.session.scalar(select(func.count()).where(Answer.value == DECLINED)) == 16

        results = {r.question.key: r for r in survey_results(db.session, survey, counts)}
        assert (results["drugs"].n, results["drugs"].declined) == (20, 10)
        assert (results["mirror"].n, results["mirror"].declined) == (30, None)

        document = estimates_document(db.session, survey)
        declined = {q["key"]: (q["n"], q["declined"]) for q in document["questions"]}
        assert declined == {"drugs": (20, 10), "mirror": (30, None), "drinks": (24, 6), "age": (30, None)}
        assert "about those who answered" in document["declined"]

        rows = list(csv.DictReader(io.StringIO(estimates_csv(db.session, survey))))
        assert {r["question_key"]: r["declined"] for r in rows} == {
            "drugs": "10",
            "mirror": "",
            "drinks": "6",
            "age": "",
        }

        book = codebook(survey)
        assert [q["decline"] for q in book["questions"]] == [True, False, True, False]
        assert "empty cell" in book["declined"]

        micro = list(csv.DictReader(io.StringIO("".join(microdata_csv(db.session, survey)))))
        assert len(micro) == 30
        assert [r["drugs"] == "" for r in micro] == [i % 3 == 0 for i in range(30)]
        assert [r["drinks"] == "" for r in micro] == [i % 5 == 0 for i in range(30)]


def test_the_results_page_says_how_many_declined(app, signed_in):
    add_survey(app, SPEC)
    for i in range(6):
        answers = {"drugs": "declined" if i < 2 else i % 2, "mirror": 1, "drinks": "declined" if i < 3 else 4}
        assert _post(signed_in, answers).status_code == 201
    page = text(signed_in.get("/surveys/declining/results"))
    assert 'id="declined-drugs">2 chose' in page and 'id="declined-drinks">3 chose' in page
    assert 'id="declined-mirror"' not in page
    assert "about those who answered" in page


@pytest.mark.parametrize("key", ["mirror", "age"])
def test_a_decline_where_the_question_does_not_allow_it_is_refused_and_writes_nothing(app, client, user, key):
    add_survey(app, SPEC)
    before = stored(app)
    response = _post(client, {"drugs": 1, "mirror": 0, key: "declined"})
    assert response.status_code == 400 and response.mimetype == "application/problem+json"
    problem = response.get_json()
    assert problem["code"] == "answer.decline_not_allowed" and problem["path"] == ["answers", key]
    assert f"question '{key}' cannot be declined" in problem["detail"]
    form = client.post("/s/declining", data={"q_drugs": "1", "q_mirror": "0", f"q_{key}": "declined"})
    assert form.status_code == 400 and f"question &#39;{key}&#39; cannot be declined" in text(form)
    assert stored(app) == before


def test_the_respondent_page_offers_prefer_not_to_say_only_where_allowed_and_says_it_is_not_hidden(app, client, user):
    add_survey(app, SPEC)
    page = text(client.get("/s/declining"))
    assert 'id="drugs-decline"' in page and 'id="drinks-decline"' in page
    assert 'id="mirror-decline"' not in page and 'id="age-decline"' not in page
    assert "Declining is not hidden: the survey learns that you chose not to answer this question." in page


def test_a_declined_submission_by_invitation_is_held_and_released_like_any_other(app, client, user):
    from survey.domain.responses.codes import generate_codes
    from survey.domain.responses.mixing import release
    from survey.domain.responses.submissions import record_submission, submission_form

    add_survey(app, SPEC, access="invitation")
    with app.app_context():
        survey = _survey()
        codes = generate_codes(db.session, survey, 4)
        db.session.commit()
        form = submission_form(db.session, "declining")
        for i, code in enumerate(codes):
            answers = {"drugs": "declined" if i % 2 else 1, "mirror": 0, "drinks": "declined"}
            record_submission(db.session, form, answers, invitation=code, batch=100)
        release(db.session, survey.id, form.feeds, 1)
        db.session.commit()
        counts = survey_counts(db.session, survey)
        ids = {q.key: q.id for q in survey.questions}
        assert counts.submissions == 4 and counts.declined == {ids["drugs"]: 2, ids["drinks"]: 4}
        assert tally_mismatches(db.session, survey) == []


def test_the_builder_sets_and_shows_decline_on_a_randomized_question_only(app, signed_in):
    from .builder import CHOICE, add, new_draft

    slug = new_draft(signed_in)
    add(signed_in, slug, {**CHOICE, "key": "often", "decline": "y"})
    add(signed_in, slug, {**CHOICE, "key": "plain"})
    add(signed_in, slug, {"kind": "direct", "text": "Group?", "options": "a\nb", "key": "group", "decline": "y"})
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        assert {q.key: q.decline for q in survey.questions} == {"often": True, "plain": False, "group": False}
    page = text(signed_in.get(f"/surveys/{slug}/build"))
    assert page.count("May be declined") == 1
    edit = text(signed_in.get(f"/surveys/{slug}/questions/often/edit"))
    box = re.search(r'<input[^>]*id="decline"[^>]*>', edit).group(0)
    assert " checked " in box
    edit_plain = text(signed_in.get(f"/surveys/{slug}/questions/plain/edit"))
    assert " checked " not in re.search(r'<input[^>]*id="decline"[^>]*>', edit_plain).group(0)


def test_an_import_carries_declines_where_the_question_allows_them(app, user):
    from survey.domain.responses.imports import ImportRefused, import_responses

    with app.app_context():
        survey = create_survey_from_spec(db.session, SPEC)
        db.session.commit()
        day = "2026-11-01"
        rows = f"submitted_on,drugs,mirror\n{day},declined,1\n{day},Declined,0\n{day},1,0\n"
        import_responses(db.session, survey, rows, "csv")
        db.session.commit()
        [drugs] = [r for r in survey_results(db.session, survey) if r.question.key == "drugs"]
        assert (drugs.declined, drugs.n) == (2, 1)
        assert tally_mismatches(db.session, survey) == []
        # a question that may not be declined refuses the marker, naming row and column
        with pytest.raises(ImportRefused) as caught:
            import_responses(db.session, survey, f"submitted_on,drugs,mirror\n{day},1,declined\n", "csv")
        db.session.rollback()
        [problem] = caught.value.problems
        assert (problem.row, problem.column, problem.code) == (1, "mirror", "answer.decline_not_allowed")
