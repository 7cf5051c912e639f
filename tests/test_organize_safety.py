"""Organizers without surprises, over HTTP: a preview before publishing, confirmations before what
cannot be undone, drafts deleted and closed surveys archived by their owner, invitation codes listed,
revoked, printed and typed, a chosen address, plain builder messages, and ε exported as it was set.
"""

from __future__ import annotations

import json
import math
import re
from html import unescape

import pytest
from sqlalchemy import func, select

from survey.domain.models import Answer, HeldSubmission, Membership, Question, RespondentCode, Submission, Survey
from survey.platform.extensions import db

from .accounts import make_user, sign_in
from .surveys import FORM, GOOD, SMALL_SPEC, add_survey, make_codes, survey_row, text

DRAFT = {**SMALL_SPEC, "slug": "the-draft", "title": "The draft", "status": "draft"}


@pytest.fixture
def anonymous(app):
    """A browser of its own, signed in as nobody (``signed_in`` is the ``client`` fixture itself)."""
    return app.test_client()


def status_of(app, slug: str) -> str | None:
    with app.app_context():
        return db.session.scalar(select(Survey.status).where(Survey.slug == slug))


def co_organizer(app, slug: str, name: str = "bob"):
    """A client signed in as an accepted co-organizer of ``slug``."""
    user_id = make_user(app, name)
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        survey.memberships.append(Membership(user_id=user_id, role="organizer"))
        db.session.commit()
    return sign_in(app, name)


# -- the draft preview -----------------------------------------------------------------------------


def test_organizers_preview_a_draft_as_respondents_will_see_it_and_nothing_can_be_sent(app, signed_in, anonymous):
    add_survey(app, DRAFT)
    assert anonymous.get("/s/the-draft").status_code == 404  # respondents still cannot see a draft
    response = signed_in.get("/s/the-draft/preview")
    assert response.status_code == 200 and "no-store" in response.headers["Cache-Control"]
    page = text(response)
    assert 'id="preview-banner"' in page and "nothing can be sent from a preview" in page
    for q in SMALL_SPEC["questions"]:
        assert q["text"] in unescape(page)  # every question, as the respondent page shows it
    form = re.search(r"<form[^>]*id=\"survey-form\"[^>]*>", page).group(0)
    assert "data-preview" in form and "method=" not in form and "action=" not in form
    assert re.search(r'<button[^>]*id="submit-button"[^>]*disabled', page)
    # the privacy page it links to is there for the draft's organizers too, marked as a preview
    privacy = signed_in.get("/s/the-draft/privacy")
    assert privacy.status_code == 200 and 'id="preview-banner"' in text(privacy)
    # whose "back" links lead to the preview, not to the draft's respondent page (a 404)
    assert 'href="/s/the-draft/preview" class="back-link"' in text(privacy)
    assert 'href="/s/the-draft" class="back-link"' not in text(privacy)
    assert anonymous.get("/s/the-draft/privacy").status_code == 404
    # and a post to the draft stores nothing
    assert anonymous.post("/s/the-draft", data=FORM).status_code == 404
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Submission)) == 0


def test_the_preview_is_for_the_surveys_organizers_only(app, signed_in, anonymous):
    add_survey(app, DRAFT)
    assert anonymous.get("/s/the-draft/preview").status_code == 302  # to sign in
    make_user(app, "mallory")
    assert sign_in(app, "mallory").get("/s/the-draft/preview").status_code == 404
    researcher = make_user(app, "rita")
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == "the-draft"))
        survey.memberships.append(Membership(user_id=researcher, role="researcher"))
        db.session.commit()
    assert sign_in(app, "rita").get("/s/the-draft/preview").status_code == 404
    assert co_organizer(app, "the-draft").get("/s/the-draft/preview").status_code == 200


def test_an_invitation_only_survey_is_previewed_without_a_code(app, signed_in, anonymous, small_survey):
    signed_in.post("/surveys/small-test/access", data={"access": "invitation"})
    assert "Invitation code" in text(anonymous.get("/s/small-test"))
    page = text(signed_in.get("/s/small-test/preview"))
    assert "Have you used drugs?" in page and 'name="invitation"' not in page


# -- confirmations ---------------------------------------------------------------------------------


def test_publishing_is_confirmed_with_a_summary_of_what_freezes(app, signed_in):
    add_survey(app, DRAFT)
    share = text(signed_in.get("/surveys/the-draft/share"))
    assert 'href="/surveys/the-draft/publish"' in share and 'action="/surveys/the-draft/publish' not in share
    page = unescape(text(signed_in.get("/surveys/the-draft/publish")))
    assert status_of(app, "the-draft") == "draft"  # looking at the page changes nothing
    assert "What freezes" in page and "http://localhost/s/the-draft" in page
    for q in SMALL_SPEC["questions"]:
        assert q["text"] in page
    assert "Coin flip" in page and "Warner" in page and "asked directly, not protected" in page
    assert re.search(r'<button[^>]*id="confirm-button"(?![^>]*disabled)', page)
    assert signed_in.post("/surveys/the-draft/publish").status_code == 303
    assert status_of(app, "the-draft") == "open"


def test_the_publish_page_says_what_stops_it_and_its_button_is_off(app, signed_in):
    add_survey(app, {**DRAFT, "questions": []})
    page = text(signed_in.get("/surveys/the-draft/publish"))
    assert "Add at least one question before publishing." in page
    assert re.search(r'<button[^>]*id="confirm-button"[^>]*disabled', page)


def test_closing_is_confirmed_and_can_be_undone_by_reopening(app, signed_in, small_survey):
    page = text(signed_in.get("/surveys/small-test/close"))
    assert survey_row(app, small_survey).status == "open"
    assert "Close this survey?" in page and "You can reopen it later" in page
    assert 'action="/surveys/small-test/close"' in page and 'name="csrf_token"' in page
    assert signed_in.post("/surveys/small-test/close").status_code == 303
    assert survey_row(app, small_survey).status == "closed"
    assert signed_in.post("/surveys/small-test/reopen").status_code == 303
    assert survey_row(app, small_survey).status == "open"


def test_deleting_a_question_is_confirmed_first(app, signed_in):
    add_survey(app, DRAFT)
    build = text(signed_in.get("/surveys/the-draft/build"))
    assert 'href="/surveys/the-draft/questions/mirror/delete"' in build
    assert 'action="/surveys/the-draft/questions/mirror/delete"' not in build  # no one-click delete
    page = unescape(text(signed_in.get("/surveys/the-draft/questions/mirror/delete")))
    assert "Delete question 2, “Mirrored?”?" in page and "cannot be undone" in page
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Question)) == 4
    assert signed_in.post("/surveys/the-draft/questions/mirror/delete").status_code == 303
    with app.app_context():
        assert sorted(db.session.scalars(select(Question.key))) == ["age", "drugs", "often"]


def test_confirmation_posts_need_their_csrf_token(csrf_app):
    make_user(csrf_app, "alice", "correct horse battery")
    add_survey(csrf_app, SMALL_SPEC)
    add_survey(csrf_app, DRAFT)
    client = csrf_app.test_client()
    page = text(client.get("/auth/login"))
    token = re.search(r'name="csrf_token"[^>]* value="([^"]+)"', page).group(1)
    login = {"username": "alice", "password": "correct horse battery", "csrf_token": token}
    assert client.post("/auth/login", data=login).status_code == 302
    for path in (
        "/surveys/small-test/close",
        "/surveys/the-draft/delete",
        "/surveys/the-draft/publish",
        "/surveys/the-draft/questions/drugs/delete",
        "/surveys/small-test/invitations/revoke-unused",
    ):
        assert client.post(path).status_code == 400, path
    with csrf_app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Survey)) == 2
        assert db.session.scalar(select(Survey.status).where(Survey.slug == "small-test")) == "open"
    # the confirmation page's own form carries the token that makes its post work
    page = text(client.get("/surveys/small-test/close"))
    token = re.search(r'name="csrf_token"[^>]* value="([^"]+)"', page).group(1)
    assert client.post("/surveys/small-test/close", data={"csrf_token": token}).status_code == 303


# -- deleting drafts and archiving -----------------------------------------------------------------


def test_the_owner_deletes_a_draft_after_confirming(app, signed_in):
    add_survey(app, DRAFT)
    share = text(signed_in.get("/surveys/the-draft/share"))
    assert 'href="/surveys/the-draft/delete"' in share
    page = text(signed_in.get("/surveys/the-draft/delete"))
    assert "cannot be undone" in page and status_of(app, "the-draft") == "draft"
    response = signed_in.post("/surveys/the-draft/delete")
    assert response.status_code == 303 and response.headers["Location"] == "/"
    assert status_of(app, "the-draft") is None
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Question)) == 0


def test_only_drafts_are_deleted_and_only_by_their_owner(app, signed_in, small_survey):
    add_survey(app, DRAFT)
    refused = signed_in.post("/surveys/small-test/delete")
    assert refused.status_code == 409 and "Only a draft can be deleted" in text(refused)
    bob = co_organizer(app, "the-draft")
    assert 'href="/surveys/the-draft/delete"' not in text(bob.get("/surveys/the-draft/share"))
    assert bob.get("/surveys/the-draft/delete").status_code == 403
    refused = bob.post("/surveys/the-draft/delete")
    assert refused.status_code == 403 and "Only the survey's owner can delete it." in unescape(text(refused))
    assert status_of(app, "the-draft") == "draft" and status_of(app, "small-test") == "open"


def test_an_archived_survey_leaves_the_list_keeps_its_results_and_accepts_nothing(
    app, signed_in, anonymous, small_survey
):
    assert anonymous.post("/s/small-test", data=FORM).status_code == 303
    refused = signed_in.post("/surveys/small-test/archive")
    assert refused.status_code == 409 and "Close it first" in text(refused)
    signed_in.post("/surveys/small-test/close")
    assert "Archive this survey?" in text(signed_in.get("/surveys/small-test/archive"))
    assert signed_in.post("/surveys/small-test/archive").status_code == 303
    assert status_of(app, "small-test") == "archived"

    assert "Small test survey" not in text(signed_in.get("/"))
    archive = text(signed_in.get("/?archived=1"))
    assert "Archived surveys" in archive and "Small test survey" in archive
    results = signed_in.get("/surveys/small-test/results")
    assert results.status_code == 200 and "Small test survey" in text(results)
    assert signed_in.get("/api/surveys/small-test/estimates").get_json()["survey"]["submissions"] == 1
    # respondents are told it is closed, and nothing they send is stored
    assert "no longer accepts answers" in text(anonymous.get("/s/small-test"))
    assert anonymous.post("/s/small-test", data=FORM).status_code == 409
    assert anonymous.post("/api/surveys/small-test/responses", json={"answers": GOOD}).status_code == 409
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Submission)) == 1
        assert db.session.scalar(select(func.count()).select_from(Answer)) == len(GOOD)
    # it cannot be reopened as it is; restoring brings it back, closed
    assert signed_in.post("/surveys/small-test/reopen").status_code == 409
    assert signed_in.post("/surveys/small-test/unarchive").status_code == 303
    assert status_of(app, "small-test") == "closed" and "Small test survey" in text(signed_in.get("/"))


def test_only_the_owner_archives(app, signed_in, small_survey):
    signed_in.post("/surveys/small-test/close")
    bob = co_organizer(app, "small-test")
    assert bob.post("/surveys/small-test/archive").status_code == 403
    assert status_of(app, "small-test") == "closed"


# -- invitation codes ------------------------------------------------------------------------------


def test_codes_are_listed_on_the_page_used_or_not(app, signed_in, anonymous, small_survey):
    codes = [row["code"] for row in make_codes(signed_in, 3)]
    anonymous.post("/api/surveys/small-test/responses", json={"answers": GOOD, "invitation": codes[1]})
    page = text(signed_in.get("/surveys/small-test/share"))
    rows = re.findall(r'<tr class="code-(\w+)">\s*<th scope="row"><code>([A-Z0-9-]+)</code>', page)
    assert [(state, code.replace("-", "")) for state, code in rows] == [
        ("unused", codes[0]),
        ("used", codes[1]),
        ("unused", codes[2]),
    ]
    assert all(len(code) == 14 and code[4] == code[9] == "-" for _, code in rows)  # groups of four
    # revoking is offered for the unused codes only
    assert f"/invitations/revoke?code={codes[0]}" in page and f"/invitations/revoke?code={codes[1]}" not in page


def test_a_revoked_code_admits_nobody_and_says_why(app, signed_in, anonymous, small_survey):
    codes = [row["code"] for row in make_codes(signed_in, 2)]
    confirm = text(signed_in.get(f"/surveys/small-test/invitations/revoke?code={codes[0]}"))
    assert "Revoke the code" in confirm and f'value="{codes[0]}"' in confirm
    assert signed_in.post("/surveys/small-test/invitations/revoke", data={"code": codes[0]}).status_code == 303
    refused = anonymous.get(f"/s/small-test?code={codes[0]}")
    assert refused.status_code == 403 and "withdrawn" in text(refused) and "Have you used drugs?" not in text(refused)
    api = anonymous.post("/api/surveys/small-test/responses", json={"answers": GOOD, "invitation": codes[0]})
    assert api.status_code == 403 and "withdrawn" in api.get_json()["error"]
    # a used code cannot be revoked (it admits nothing more anyway), nor one revoked already
    anonymous.post("/api/surveys/small-test/responses", json={"answers": GOOD, "invitation": codes[1]})
    for code, words in ((codes[1], "has been used"), (codes[0], "revoked already")):
        response = signed_in.post("/surveys/small-test/invitations/revoke", data={"code": code})
        assert response.status_code == 409 and words in text(response)
    page = text(signed_in.get("/surveys/small-test/share"))
    assert "<dt>Used</dt><dd>1</dd>" in page and "<dt>Revoked</dt><dd>1</dd>" in page
    assert "<dt>Unused</dt><dd>0</dd>" in page
    with app.app_context():  # held for release in a batch (survey/domain/responses/mixing.py)
        assert db.session.scalar(select(func.count()).select_from(HeldSubmission)) == 1
        assert db.session.scalar(select(func.count()).select_from(Submission)) == 0


def test_revoking_every_unused_code_at_once(app, signed_in, small_survey):
    codes = [row["code"] for row in make_codes(signed_in, 4)]
    assert "Revoke all 4 unused codes?" in text(signed_in.get("/surveys/small-test/invitations/revoke-unused"))
    assert signed_in.post("/surveys/small-test/invitations/revoke-unused").status_code == 303
    with app.app_context():
        rows = db.session.execute(select(RespondentCode.code, RespondentCode.used, RespondentCode.revoked)).all()
    assert sorted(rows) == sorted((code, True, True) for code in codes)


def test_a_code_of_another_survey_cannot_be_revoked_from_this_one(app, signed_in, small_survey):
    add_survey(app, DRAFT)
    code = make_codes(signed_in, 1)[0]["code"]
    response = signed_in.post("/surveys/the-draft/invitations/revoke", data={"code": code})
    assert response.status_code == 404
    with app.app_context():
        assert db.session.scalar(select(RespondentCode.revoked)) is False


def test_unused_codes_are_printed_as_cards(app, signed_in, anonymous, small_survey):
    codes = [row["code"] for row in make_codes(signed_in, 3)]
    anonymous.post("/api/surveys/small-test/responses", json={"answers": GOOD, "invitation": codes[0]})
    response = signed_in.get("/surveys/small-test/invitations/print")
    assert response.status_code == 200 and "no-store" in response.headers["Cache-Control"]
    cards = re.findall(r'<p class="card-code">([A-Z0-9-]+)</p>', text(response))
    assert [c.replace("-", "") for c in cards] == codes[1:]
    assert "http://localhost/s/small-test" in text(response)


def test_a_respondent_types_the_code_from_a_paper_invitation(app, signed_in, anonymous, small_survey):
    code = make_codes(signed_in, 1)[0]["code"]
    page = text(anonymous.get("/s/small-test"))
    assert page.count('id="code-form"') == 1 and 'name="code"' in page and "Have you used drugs?" not in page
    typed = f"{code[:4].lower()} {code[4:8]}-{code[8:]}"  # as a person might type it
    response = anonymous.get("/s/small-test", query_string={"code": typed})
    assert response.status_code == 200 and "Have you used drugs?" in text(response)
    assert f'name="invitation" value="{code}"' in text(response)
    wrong = anonymous.get("/s/small-test", query_string={"code": "NOPE"})
    assert wrong.status_code == 403 and 'value="NOPE"' in text(wrong) and 'aria-invalid="true"' in text(wrong)


# -- the address ----------------------------------------------------------------------------------


def test_a_draft_gets_its_title_as_address_and_the_organizer_chooses_another(app, signed_in):
    response = signed_in.post("/surveys/new", data={"title": "Night shifts"})
    assert response.headers["Location"] == "/surveys/night-shifts/build"
    page = text(signed_in.get("/surveys/night-shifts/share"))
    assert 'value="http://localhost/s/night-shifts"' in page and 'data-copy="survey-link"' in page
    check = signed_in.get("/surveys/night-shifts/address/check", query_string={"slug": "nurses-2026"}).get_json()
    assert check["available"] is True and "http://localhost/s/nurses-2026" in check["message"]
    response = signed_in.post("/surveys/night-shifts/address", data={"slug": "nurses-2026"})
    assert response.status_code == 303 and survey_row(app, "nurses-2026").title == "Night shifts"
    bad = signed_in.post("/surveys/nurses-2026/address", data={"slug": "No Spaces!"})
    assert bad.status_code == 400 and 'aria-invalid="true"' in text(bad) and "lowercase letters" in text(bad)


def test_a_taken_address_is_said_to_be_taken_and_nothing_more(app, signed_in):
    make_user(app, "bob")
    add_survey(app, {**DRAFT, "slug": "bobs-secret-draft", "title": "Bob's secret"}, owner="bob")
    add_survey(app, {**DRAFT, "slug": "mine"})
    check = signed_in.get("/surveys/mine/address/check", query_string={"slug": "bobs-secret-draft"}).get_json()
    assert check == {
        "slug": "bobs-secret-draft",
        "available": False,
        "message": "This address is taken. Choose another one.",
    }
    response = signed_in.post("/surveys/mine/address", data={"slug": "bobs-secret-draft"})
    assert response.status_code == 400 and "This address is taken." in text(response)
    assert "Bob" not in text(response) and "draft" not in check["message"]
    assert survey_row(app, "mine").title == "The draft"
    # one's own current address is free for one's own survey
    assert signed_in.get("/surveys/mine/address/check", query_string={"slug": "mine"}).get_json()["available"]


def test_a_published_surveys_address_stays(app, signed_in, small_survey):
    response = signed_in.post("/surveys/small-test/address", data={"slug": "another"})
    assert response.status_code == 409 and survey_row(app, small_survey).slug == "small-test"


# -- builder messages and the spec's ε ------------------------------------------------------------


BUILDER = {"kind": "yes_no", "text": "Q?", "design": "coin_flip", "set_by": "epsilon", "yes_probability": "0.5"}


def field_message(html: str, field: str) -> str:
    match = re.search(rf'<p class="field-error" id="{field}-error">(.*?)</p>', html, re.S)
    return unescape(match.group(1)) if match else ""


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        (
            {"epsilon": "0"},
            "epsilon",
            "ε (epsilon) must be a number greater than 0, for example 1 (smaller is more private, larger is more "
            "precise).",
        ),
        ({"epsilon": ""}, "epsilon", "Type ε (epsilon): a number greater than 0, for example 1"),
        ({"epsilon": "lots"}, "epsilon", "ε (epsilon) must be a number greater than 0"),
        (
            {"set_by": "truth_probability", "truth_probability": "1.5", "epsilon": ""},
            "truth_probability",
            "The truth probability must be a number above 0 and at most 1, for example 0.5.",
        ),
    ],
)
def test_builder_messages_are_plain_words_on_the_right_field(app, signed_in, data, field, message):
    add_survey(app, DRAFT)
    html = text(signed_in.post("/surveys/the-draft/questions/new", data={**BUILDER, **data}))
    assert field_message(html, field).startswith(message)
    assert re.search(rf'<input[^>]*aria-invalid="true"[^>]*id="{field}"|<input[^>]*id="{field}"[^>]*aria-invalid', html)
    for developer_words in ("got 0.0", "give exactly one", "finite number", "truth_probability must"):
        assert developer_words not in unescape(html)


def test_a_refused_epsilon_empties_the_stale_truth_probability(app, signed_in):
    add_survey(app, DRAFT)
    html = text(
        signed_in.post(
            "/surveys/the-draft/questions/new", data={**BUILDER, "epsilon": "abc", "truth_probability": "0.85"}
        )
    )
    assert re.search(r'<input[^>]*id="truth_probability"[^>]*value=""', html)


def test_a_level_set_by_the_truth_probability_says_what_epsilon_follows_from(signed_in):
    data = signed_in.get(
        "/api/privacy/preview",
        query_string={"design": "coin_flip", "set_by": "truth_probability", "truth_probability": "0.85"},
    ).get_json()
    assert data["epsilon_text"] == f"{math.log(1 + 0.85 / (0.15 * 0.5)):.2f}"
    assert data["derived"]["text"] == "(from the truth probability 0.85)"
    refused = signed_in.get("/api/privacy/preview", query_string={"design": "grr", "set_by": "epsilon", "epsilon": ""})
    body = refused.get_json()
    assert refused.status_code == 400 and body["field"] == "epsilon"
    assert body["message"].startswith("Type ε (epsilon)") and "exactly one" not in body["message"]


def test_a_design_set_by_epsilon_is_exported_with_that_epsilon(app, signed_in):
    spec = {
        "title": "Exported",
        "slug": "exported",
        "questions": [
            {
                "key": "q",
                "kind": "choice",
                "text": "Which?",
                "options": ["a", "b", "c"],
                "privacy": {"design": "grr", "epsilon": 1.5},
            }
        ],
    }
    add_survey(app, spec)
    exported = json.loads(signed_in.get("/surveys/exported/spec.json").data)
    assert exported["questions"][0]["privacy"] == {"design": "grr", "epsilon": 1.5}
    # the edit form shows it as set, and saving it unchanged changes nothing
    edit = text(signed_in.get("/surveys/exported/questions/q/edit"))
    assert re.search(r'id="epsilon"[^>]*value="1.5"', edit)
    assert re.search(r'<input[^>]*checked[^>]*value="epsilon"|<input[^>]*value="epsilon"[^>]*checked', edit)
    # and the builder stores a GRR set by ε the same way
    add_survey(app, {**DRAFT, "slug": "built", "questions": []})
    response = signed_in.post(
        "/surveys/built/questions/new",
        data={
            "kind": "choice",
            "text": "Which?",
            "options": "a\nb\nc",
            "design": "grr",
            "set_by": "epsilon",
            "epsilon": "1.5",
        },
    )
    assert response.status_code == 303
    exported = json.loads(signed_in.get("/surveys/built/spec.json").data)
    assert exported["questions"][0]["privacy"] == {"design": "grr", "epsilon": 1.5}
