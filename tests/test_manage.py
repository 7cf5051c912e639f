"""Running a survey over HTTP: lifecycle, dates, duplicating, the spec round trip, sharing, the account,
and invitation codes (one code, one submission; the stored rows cannot be lined up with the codes).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import re

import numpy as np
import pytest
from flask_wtf import FlaskForm
from sqlalchemy import func, inspect, select

from survey.domain.models import (
    HeldSubmission,
    Membership,
    Question,
    RespondentCode,
    Submission,
    Survey,
    User,
    today,
)
from survey.domain.surveys.specs import survey_to_spec
from survey.platform.extensions import db

from .accounts import PASSWORD, make_user, sign_in
from .databases import statements
from .surveys import FORM, GOOD, SMALL_SPEC, add_survey, count, make_codes, stored, survey_row, text

# -- helpers ---------------------------------------------------------------------------------------


def designs_of(app, slug: str) -> list[tuple]:
    """Each question's structure and design, in order: what must survive a copy or a round trip."""
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        out = []
        for q in survey.questions:
            d = q.design
            design = None if d is None else (d.mechanism_name, d.parameters, d.matrix, d.epsilon)
            out.append((q.key, q.kind, q.text, q.required, q.labels, design))
        return out


def assert_same_designs(slug: str, other: str, app) -> None:
    """Same questions, options, design names and parameters; the same matrix and ε up to rounding.

    A design given by ε is stored with the truth probability it implies, so re-creating it can move
    the last bit of a matrix entry; the privacy core itself calls matrices within 1e-12 the same.
    """
    mine, theirs = designs_of(app, slug), designs_of(app, other)
    assert [q[:5] for q in mine] == [q[:5] for q in theirs]
    for a, b in zip(mine, theirs, strict=True):
        assert (a[5] is None) == (b[5] is None)
        if a[5] is not None:
            assert a[5][:2] == b[5][:2]
            assert np.allclose(a[5][2], b[5][2], rtol=0, atol=1e-12)
            assert (a[5][3] is None and b[5][3] is None) or a[5][3] == pytest.approx(b[5][3], abs=1e-12)


def draft_spec(**changes) -> dict:
    return {**SMALL_SPEC, "slug": "draft-test", "title": "Draft test", "status": "draft", **changes}


# -- the management page and the lifecycle ---------------------------------------------------------


def test_management_page_has_every_section(signed_in, small_survey):
    response = signed_in.get(f"/surveys/{small_survey}/share")
    assert response.status_code == 200
    page = text(response)
    for anchor in ("state", "address", "dates", "access", "invitations", "people", "spec"):
        assert f'id="{anchor}"' in page
    # closing is confirmed on a page of its own first (a link here, the post there)
    assert 'href="/surveys/small-test/close"' in page and "/surveys/small-test/publish" not in page
    assert 'action="/surveys/small-test/duplicate"' in page
    assert 'href="/surveys/small-test/spec.json"' in page and 'href="/surveys/small-test/results"' in page
    # every input has a label; the page needs no inline script or style
    ids = set(re.findall(r'<input[^>]*\sid="([^"]+)"', page))
    labelled = set(re.findall(r'<label for="([^"]+)"', page))
    assert ids and ids <= labelled
    assert not re.search(r"<script(?![^>]*\ssrc=)", page) and not re.search(r"\sstyle=", page)
    assert len(re.findall(r'\sid="([^"]+)"', page)) == len(set(re.findall(r'\sid="([^"]+)"', page)))


def test_a_refused_post_builds_only_what_the_page_shows(app, signed_in, small_survey, monkeypatch):
    """The management page is read once per section and builds a form only for an input it shows. A
    refused post re-renders it. Measured on the small open survey with no codes: the page was 12
    statements and built 7 forms, a refused post 14 statements (its own form and 6 blank ones), and
    every member of the team cost one more statement (15 and 17 with four members). Now no list of
    codes is read when there are none, the address form of a published survey is not built, a
    team is read with its users in one statement, and the rest only as the template reaches it: 11
    statements, with a team or without, and a refused post adds only the two rows its rollback
    expired (the survey and the signed-in user)."""
    built: list[str] = []
    original = FlaskForm.__init__

    def counted(self, *args, **kwargs):
        built.append(type(self).__name__)
        original(self, *args, **kwargs)

    monkeypatch.setattr(FlaskForm, "__init__", counted)
    refused_dates = {"opens_on": "2030-05-02", "closes_on": "2030-05-01"}

    def measure() -> tuple[list[str], list[str]]:
        with statements(app) as shown:
            assert signed_in.get(f"/surveys/{small_survey}/share").status_code == 200
        with statements(app) as refused:
            response = signed_in.post(f"/surveys/{small_survey}/dates", data=refused_dates)
        assert response.status_code == 400
        assert "The closing date must not be before the opening date." in text(response)
        return shown, refused

    shown, refused = measure()
    page_forms = ["AccessForm", "AddMemberForm", "AutoCloseForm", "CodesForm", "DatesForm", "ImportResponsesForm"]
    assert sorted(built) == sorted(page_forms * 2)  # the page's blank forms; the refused one and the other blanks
    assert len(shown) <= 11, shown
    assert len(refused) <= len(shown) + 2, refused
    assert not [s for s in refused if "invitations.code" in s]  # no codes: their list is not read

    team = [make_user(app, f"member{i}") for i in range(4)]
    with app.app_context():
        survey = db.session.get(Survey, survey_row(app, small_survey).id)
        for i, user_id in enumerate(team):
            survey.memberships.append(Membership(user_id=user_id, role="researcher", pending=i == 3))
        db.session.commit()
    with_team, refused_with_team = measure()
    assert len(with_team) == len(shown), with_team
    assert len(refused_with_team) == len(refused), refused_with_team


def test_close_reopen_and_refused_transitions(app, signed_in, client, small_survey):
    assert signed_in.post("/surveys/small-test/close").status_code == 303
    assert survey_row(app, small_survey).status == "closed"
    # a closed survey says so and stores nothing
    page = text(client.get("/s/small-test"))
    assert "This survey is closed" in page
    assert client.post("/s/small-test", data=FORM).status_code == 409
    assert client.post("/api/surveys/small-test/responses", json={"answers": GOOD}).status_code == 409
    assert stored(app) == (0, 0)

    refused = signed_in.post("/surveys/small-test/close")
    assert refused.status_code == 409
    assert "Only an open survey can be closed; this survey is closed." in text(refused)
    assert 'role="alert"' in text(refused)
    assert signed_in.post("/surveys/small-test/publish").status_code == 409

    assert signed_in.post("/surveys/small-test/reopen").status_code == 303
    assert survey_row(app, small_survey).status == "open"
    assert signed_in.post("/surveys/small-test/reopen").status_code == 409
    assert client.post("/api/surveys/small-test/responses", json={"answers": GOOD}).status_code == 201


def test_publish_a_draft(app, signed_in):
    slug = add_survey(app, draft_spec())
    assert signed_in.get(f"/s/{slug}").status_code == 404  # a draft has no respondent page
    response = signed_in.post(f"/surveys/{slug}/publish")
    assert response.status_code == 303 and response.headers["Location"].endswith(f"/surveys/{slug}/share#state")
    assert survey_row(app, slug).status == "open"
    assert "frozen" in text(signed_in.get(f"/surveys/{slug}/share"))
    assert signed_in.get(f"/s/{slug}").status_code == 200


def test_publish_refused_without_questions(app, signed_in):
    slug = add_survey(app, draft_spec(questions=[]))
    response = signed_in.post(f"/surveys/{slug}/publish")
    assert response.status_code == 409
    assert "Add at least one question before publishing." in text(response)
    assert survey_row(app, slug).status == "draft"


def test_publish_refused_over_the_epsilon_cap(app, signed_in):
    slug = add_survey(app, draft_spec(epsilon_cap=2.0))  # total ε = ln 3 + ln 3 + 1 ≈ 3.20
    response = signed_in.post(f"/surveys/{slug}/publish")
    assert response.status_code == 409
    assert "total ε is 3.20, above its cap of 2.00" in text(response)
    assert survey_row(app, slug).status == "draft"


def test_dates_before_opening_and_after_closing(app, signed_in, client, small_survey):
    tomorrow = today() + dt.timedelta(days=1)
    response = signed_in.post("/surveys/small-test/dates", data={"opens_on": tomorrow.isoformat(), "closes_on": ""})
    assert response.status_code == 303
    assert survey_row(app, small_survey).opens_on == tomorrow
    assert f"open from {tomorrow.isoformat()}" in text(signed_in.get("/"))
    assert f"This survey opens on {tomorrow.isoformat()}." in text(client.get("/s/small-test"))
    assert client.post("/s/small-test", data=FORM).status_code == 409
    api = client.post("/api/surveys/small-test/responses", json={"answers": GOOD})
    assert api.status_code == 409 and "opens on" in api.json["error"]
    assert stored(app) == (0, 0)

    yesterday = today() - dt.timedelta(days=1)
    response = signed_in.post("/surveys/small-test/dates", data={"opens_on": "", "closes_on": yesterday.isoformat()})
    assert response.status_code == 303
    assert f"closed on {yesterday.isoformat()}" in text(client.get("/s/small-test"))
    assert client.post("/s/small-test", data=FORM).status_code == 409
    assert client.post("/api/surveys/small-test/responses", json={"answers": GOOD}).status_code == 409
    assert stored(app) == (0, 0)

    # cleared dates: the survey accepts answers again
    assert signed_in.post("/surveys/small-test/dates", data={"opens_on": "", "closes_on": ""}).status_code == 303
    assert client.post("/api/surveys/small-test/responses", json={"answers": GOOD}).status_code == 201


@pytest.mark.parametrize(
    "data, message",
    [
        (
            {"opens_on": "2030-05-02", "closes_on": "2030-05-01"},
            "The closing date must not be before the opening date.",
        ),
        ({"opens_on": "next tuesday", "closes_on": ""}, "Not a valid date value."),
    ],
)
def test_bad_dates_are_shown_next_to_the_field(app, signed_in, small_survey, data, message):
    response = signed_in.post("/surveys/small-test/dates", data=data)
    assert response.status_code == 400
    page = text(response)
    field = "closes_on" if "closing" in message else "opens_on"
    assert f'<p class="field-error" id="{field}-error">{message}</p>' in page
    assert re.search(rf'<input[^>]*aria-describedby="{field}-error"[^>]*id="{field}"', page)
    row = survey_row(app, small_survey)
    assert row.opens_on is None and row.closes_on is None


def test_duplicate_is_a_draft_with_the_same_designs(app, signed_in, bob):
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == add_survey(app, {**SMALL_SPEC})))
        survey.memberships.append(Membership(user_id=bob, role="organizer"))
        db.session.commit()
    # bob, a co-organizer, duplicates alice's survey: he owns the copy, alice is invited to it
    response = sign_in(app, "bob").post("/surveys/small-test/duplicate")
    assert response.status_code == 303
    with app.app_context():
        copy = db.session.scalar(select(Survey).where(Survey.slug != "small-test"))
        slug = copy.slug
        assert copy.status == "draft" and copy.title == "Small test survey (copy)"
        assert copy.owner.username == "bob"
        assert {(m.user.username, m.role, m.pending) for m in copy.memberships} == {("alice", "organizer", True)}
        original, duplicate = (
            {q.key: q.mechanism() for q in s.questions if q.is_randomized}
            for s in (db.session.scalar(select(Survey).where(Survey.slug == "small-test")), copy)
        )
        for key, mechanism in original.items():
            assert duplicate[key].design == mechanism.design
            assert duplicate[key].parameters == mechanism.parameters
            assert duplicate[key].matrix.tolist() == mechanism.matrix.tolist()
            assert duplicate[key].epsilon == mechanism.epsilon
    assert slug in response.headers["Location"]
    assert_same_designs(slug, "small-test", app)
    assert survey_row(app, "small-test").status == "open"


# -- the spec round trip ---------------------------------------------------------------------------


def test_spec_export_import_round_trip(app, signed_in, small_survey):
    exported = signed_in.get("/surveys/small-test/spec.json")
    assert exported.status_code == 200
    assert exported.headers["Content-Disposition"] == 'attachment; filename="small-test-spec.json"'
    assert "no-store" in exported.headers["Cache-Control"]
    spec = json.loads(exported.data)
    assert "slug" not in spec and "status" not in spec

    response = signed_in.post(
        "/surveys/import", data={"file": (io.BytesIO(exported.data), "spec.json")}, content_type="multipart/form-data"
    )
    assert response.status_code == 303
    with app.app_context():
        imported = db.session.scalar(select(Survey).where(Survey.slug != "small-test"))
        assert imported.status == "draft" and imported.owner.username == "alice"
        slug = imported.slug
        original = db.session.scalar(select(Survey).where(Survey.slug == "small-test"))
        assert survey_to_spec(imported) == survey_to_spec(original)
    assert slug in response.headers["Location"]
    assert_same_designs(slug, "small-test", app)


def test_pasted_spec_is_imported_as_a_draft_whatever_it_says(app, signed_in):
    spec = {**SMALL_SPEC, "slug": "pasted", "status": "open"}
    response = signed_in.post("/surveys/import", data={"text": json.dumps(spec)})
    assert response.status_code == 303
    assert survey_row(app, "pasted").status == "draft"
    assert "/pasted/" in response.headers["Location"]
    assert "was imported as a draft" in text(signed_in.get("/surveys/pasted/share"))  # the flash message


def test_a_spec_larger_than_a_submission_can_be_imported(app, signed_in):
    questions = [
        {"key": f"q{i}", "kind": "direct", "text": f"Question {i}?", "options": ["a", "b"], "help_text": "x" * 1500}
        for i in range(100)
    ]
    body = json.dumps({"title": "Big", "slug": "big-spec", "questions": questions}).encode()
    assert len(body) > app.config["MAX_CONTENT_LENGTH"]
    response = signed_in.post(
        "/surveys/import", data={"file": (io.BytesIO(body), "big.json")}, content_type="multipart/form-data"
    )
    assert response.status_code == 303
    assert len(designs_of(app, "big-spec")) == 100


BAD_SPECS = [
    ("{not json", "the spec is not valid JSON: Expecting property name enclosed in double quotes at line 1, column 2"),
    ("[1, 2]", "the spec must be a JSON object with a title and questions"),
    ('{"title": "T", "title": "U"}', "the key 'title' appears twice"),
    (json.dumps({**SMALL_SPEC, "colour": "red"}), "survey: unknown field 'colour'"),
    (json.dumps({"questions": []}), "survey, field 'title': must be a non-empty text"),
    (
        json.dumps({"title": "T", "questions": [{"key": "a", "kind": "yes_no", "text": "?"}]}),
        "question 1 ('a'), field 'privacy': a yes_no question is randomized and needs privacy settings",
    ),
    (
        json.dumps(
            {
                "title": "T",
                "questions": [
                    {"key": "a", "kind": "yes_no", "text": "?", "privacy": {"design": "warner", "p": 1.0}},
                ],
            }
        ),
        "question 1 ('a'), field 'privacy'",
    ),
    (
        json.dumps(
            {
                "title": "T",
                "questions": [
                    {"key": "a", "kind": "choice", "text": "?", "options": ["x", "x"], "privacy": {"design": "grr"}},
                ],
            }
        ),
        "question 1 ('a'), field 'options': options must be distinct",
    ),
    (json.dumps({**SMALL_SPEC}), "survey, field 'slug': 'small-test' is already taken"),
]


@pytest.mark.parametrize("document, message", BAD_SPECS)
@pytest.mark.parametrize("how", ["text", "file"])
def test_import_refuses_bad_specs_and_creates_nothing(app, signed_in, small_survey, document, message, how):
    if how == "text":
        response = signed_in.post("/surveys/import", data={"text": document})
    else:
        data = {"file": (io.BytesIO(document.encode()), "spec.json")}
        response = signed_in.post("/surveys/import", data=data, content_type="multipart/form-data")
    assert response.status_code == 400
    page = text(response)
    error = re.search(rf'<p class="field-error" id="{how}-error">(.*?)</p>', page, re.S)
    assert error, page
    from markupsafe import Markup

    assert message in Markup(error.group(1)).unescape()
    assert re.search(rf'aria-describedby="[^"]*{how}-error"', page)
    assert count(app, Survey) == 1 and count(app, Question) == len(SMALL_SPEC["questions"])


@pytest.mark.parametrize(
    "data, upload, field, message",
    [
        ({}, None, "file", "Choose a spec file, or paste a spec below."),
        ({"text": "   "}, None, "file", "Choose a spec file, or paste a spec below."),
        ({"text": "{}"}, b"{}", "text", "Give a file or paste a spec, not both."),
        ({}, b"\xff\xfe{", "file", "the spec is not valid UTF-8 text"),
    ],
)
def test_import_needs_exactly_one_readable_document(app, signed_in, data, upload, field, message):
    if upload is not None:
        data = {**data, "file": (io.BytesIO(upload), "a.json")}
    response = signed_in.post("/surveys/import", data=data, content_type="multipart/form-data")
    assert response.status_code == 400
    assert re.search(rf'id="{field}-error">[^<]*{re.escape(message)}', text(response))
    assert count(app, Survey) == 0


def test_import_checks_the_csrf_token(csrf_app):
    make_user(csrf_app, "alice")
    client = csrf_app.test_client()
    token = re.search(r'name="csrf_token"[^>]* value="([^"]+)"', text(client.get("/auth/login"))).group(1)
    login = {"csrf_token": token, "username": "alice", "password": PASSWORD}
    assert client.post("/auth/login", data=login).status_code == 302
    spec = json.dumps({**SMALL_SPEC, "slug": "with-token"})
    refused = client.post("/surveys/import", data={"text": spec})
    assert refused.status_code == 400 and "form expired" in text(refused)
    with csrf_app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Survey)) == 0
    token = re.search(r'name="csrf_token"[^>]* value="([^"]+)"', text(client.get("/surveys/import"))).group(1)
    assert client.post("/surveys/import", data={"text": spec, "csrf_token": token}).status_code == 303


# -- sharing ---------------------------------------------------------------------------------------


def test_sharing_with_a_researcher_and_a_co_organizer(app, signed_in, small_survey, bob, carol):
    bob_client = sign_in(app, "bob")
    assert bob_client.get("/surveys/small-test/results").status_code == 404

    response = signed_in.post("/surveys/small-test/members", data={"username": "bob", "role": "researcher"})
    assert response.status_code == 303
    assert bob_client.get("/surveys/small-test/results").status_code == 404  # an offer, until bob accepts it
    assert bob_client.post("/surveys/small-test/accept").status_code == 303
    assert bob_client.get("/surveys/small-test/results").status_code == 200
    assert bob_client.get("/surveys/small-test/responses.csv").status_code == 200
    for path in ("/surveys/small-test/share", "/surveys/small-test/spec.json", "/surveys/small-test/invitations.csv"):
        assert bob_client.get(path).status_code == 404
    assert bob_client.post("/surveys/small-test/close").status_code == 404
    assert survey_row(app, small_survey).status == "open"
    index = text(bob_client.get("/"))
    assert 'href="/surveys/small-test/results"' in index and 'href="/surveys/small-test/share"' not in index
    assert "<td>researcher</td>" in index

    # the same form changes the role; a co-organizer manages and shares, but cannot remove the owner
    signed_in.post("/surveys/small-test/members", data={"username": "bob", "role": "organizer"})
    assert bob_client.get("/surveys/small-test/share").status_code == 200
    assert (
        bob_client.post("/surveys/small-test/members", data={"username": "carol", "role": "researcher"}).status_code
        == 303
    )
    assert sign_in(app, "carol").post("/surveys/small-test/accept").status_code == 303
    refused = bob_client.post(
        "/surveys/small-test/members/remove", data={"user_id": str(survey_row(app, small_survey).owner_id)}
    )
    assert refused.status_code == 400 and "The owner of a survey cannot be removed from it." in text(refused)
    with app.app_context():
        roles = {(m.user.username, m.role) for m in db.session.scalars(select(Membership))}
    assert roles == {("bob", "organizer"), ("carol", "researcher")}

    page = text(signed_in.get("/surveys/small-test/share"))
    assert re.search(r"<th scope=\"row\">alice</th><td>owner</td>", page)
    assert re.search(r"<th scope=\"row\">bob</th>\s*<td>co-organizer</td>", page)

    # the owner removes carol; bob leaves on his own
    assert signed_in.post("/surveys/small-test/members/remove", data={"user_id": str(carol)}).status_code == 303
    assert sign_in(app, "carol").get("/surveys/small-test/results").status_code == 404
    left = bob_client.post("/surveys/small-test/members/remove", data={"user_id": str(bob)})
    assert left.status_code == 303 and left.headers["Location"] == "/"
    assert bob_client.get("/surveys/small-test/results").status_code == 404
    assert count(app, Membership) == 0


@pytest.mark.parametrize(
    "who, data, field, message",
    [
        ("alice", {"username": "nobody@", "role": "researcher"}, "username", "This is not an e-mail address"),
        ("alice", {"username": "!!!", "role": "researcher"}, "username", "with letters or digits"),
        ("alice", {"username": "alice", "role": "organizer"}, "username", "alice owns this survey"),
        ("alice", {"username": "", "role": "researcher"}, "username", "Give a username, an e-mail address or a name."),
        ("alice", {"username": "carol", "role": "owner"}, "role", "Not a valid choice."),
        ("bob", {"username": "bob", "role": "researcher"}, "username", "You cannot change your own role"),
    ],
)
def test_refused_member_changes_are_explained(app, small_survey, bob, carol, who, data, field, message):
    with app.app_context():
        survey = db.session.scalar(select(Survey))
        survey.memberships.append(Membership(user_id=bob, role="organizer"))
        db.session.commit()
    response = sign_in(app, who).post("/surveys/small-test/members", data=data)
    assert response.status_code == 400
    assert re.search(rf'id="{field}-error">[^<]*{re.escape(message)}', text(response)), text(response)
    with app.app_context():
        assert {(m.user_id, m.role) for m in db.session.scalars(select(Membership))} == {(bob, "organizer")}


def test_removing_a_non_member_is_refused(app, signed_in, small_survey, bob):
    response = signed_in.post("/surveys/small-test/members/remove", data={"user_id": str(bob)})
    assert response.status_code == 404 and "not a member" in text(response)
    assert signed_in.post("/surveys/small-test/members/remove", data={"user_id": "x"}).status_code == 400


# -- the account -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, field, message",
    [
        ({"current_password": "wrong", "new_password": "new password 1", "confirm": "new password 1"},
         "current_password", "This is not your current password."),
        ({"current_password": PASSWORD, "new_password": "short", "confirm": "short"},
         "new_password", "Use 8 to 200 characters."),
        ({"current_password": PASSWORD, "new_password": "new password 1", "confirm": "new password 2"},
         "confirm", "The two do not match."),
        ({"current_password": PASSWORD, "new_password": PASSWORD, "confirm": PASSWORD},
         "new_password", "The new password is the same as the current one."),
    ],
)  # fmt: skip
def test_password_change_errors_are_next_to_the_field(app, signed_in, data, field, message):
    response = signed_in.post("/account", data=data)
    assert response.status_code == 400
    page = text(response)
    assert f'<p class="field-error" id="{field}-error">{message}</p>' in page
    assert re.search(rf'<input[^>]*aria-describedby="[^"]*{field}-error"[^>]*aria-invalid="true"', page) or re.search(
        rf'<input[^>]*aria-invalid="true"[^>]*aria-describedby="[^"]*{field}-error"', page
    )
    sign_in(app, "alice")  # the old password still works


def test_password_change(app, signed_in):
    page = text(signed_in.get("/account"))
    assert 'autocomplete="current-password"' in page and 'autocomplete="new-password"' in page
    data = {"current_password": PASSWORD, "new_password": "a brand new one", "confirm": "a brand new one"}
    response = signed_in.post("/account", data=data)
    assert response.status_code == 303
    assert app.test_client().post("/auth/login", data={"username": "alice", "password": PASSWORD}).status_code == 401
    sign_in(app, "alice", "a brand new one")


# -- invitations -----------------------------------------------------------------------------------


def test_codes_are_generated_and_downloaded_as_links(app, signed_in, small_survey):
    rows = make_codes(signed_in, 5)
    assert len(rows) == 5 and len({r["code"] for r in rows}) == 5
    for row in rows:
        assert list(row) == ["code", "link", "used", "revoked"]
        assert row["link"] == f"http://localhost/s/small-test?code={row['code']}"
        assert row["used"] == "no" and row["revoked"] == "no"
    response = signed_in.get("/surveys/small-test/invitations.csv")
    assert response.headers["Content-Disposition"] == 'attachment; filename="small-test-invitations.csv"'
    assert response.mimetype == "text/csv" and "no-store" in response.headers["Cache-Control"]
    page = text(signed_in.get("/surveys/small-test/share"))
    assert "<dt>Codes</dt><dd>5</dd>" in page and "<dt>Unused</dt><dd>5</dd>" in page
    assert survey_row(app, small_survey).access == "invitation"


@pytest.mark.parametrize("count_field", ["0", "10001", "many", ""])
def test_code_count_is_checked(app, signed_in, small_survey, count_field):
    response = signed_in.post("/surveys/small-test/invitations", data={"count": count_field})
    assert response.status_code == 400 and 'id="count-error"' in text(response)
    assert count(app, RespondentCode) == 0


def test_access_mode_is_checked(app, signed_in, small_survey):
    assert signed_in.post("/surveys/small-test/access", data={"access": "everyone"}).status_code == 400
    assert survey_row(app, small_survey).access == "link"


def test_a_code_admits_one_form_submission(app, signed_in, client, small_survey):
    code = make_codes(signed_in, 1)[0]["code"]
    page = text(client.get(f"/s/small-test?code={code}"))
    assert f'name="invitation" value="{code}"' in page
    assert client.post("/s/small-test", data={**FORM, "invitation": code}).status_code == 303
    assert stored(app) == (1, 4)

    again = client.post("/s/small-test", data={**FORM, "invitation": code})
    assert (
        again.status_code == 403 and "already been used" in text(again) and "Nothing was sent or stored" in text(again)
    )
    used_page = client.get(f"/s/small-test?code={code}")
    assert used_page.status_code == 403 and "already been used" in text(used_page)
    assert stored(app) == (1, 4)
    assert make_codes(signed_in, 1)[0]["used"] == "yes"  # the oldest code comes first


def test_a_code_admits_one_api_submission(app, signed_in, client, small_survey):
    code = make_codes(signed_in, 1)[0]["code"]
    ok = client.post("/api/surveys/small-test/responses", json={"answers": GOOD, "invitation": code.lower()})
    assert ok.status_code == 201
    again = client.post("/api/surveys/small-test/responses", json={"answers": GOOD, "invitation": code})
    assert again.status_code == 403 and "already been used" in again.json["error"]
    assert stored(app) == (1, 4)


def test_unknown_foreign_and_missing_codes_get_a_clear_page(app, signed_in, client, small_survey):
    make_codes(signed_in, 1)
    other = add_survey(app, {**SMALL_SPEC, "slug": "other-survey"})
    foreign = make_codes(signed_in, 1, slug=other)[0]["code"]
    cases = [
        ("ZZZZZZZZZZZZ", "This invitation code is not known."),
        (foreign, "This invitation code is for a different survey."),
        ("", "This survey is by invitation only"),
    ]
    for code, message in cases:
        page = client.get(f"/s/small-test?code={code}")
        assert page.status_code == 403 and message in text(page) and 'role="alert"' in text(page)
        form = client.post("/s/small-test", data={**FORM, "invitation": code})
        assert form.status_code == 403 and message in text(form)
        api = client.post("/api/surveys/small-test/responses", json={"answers": GOOD, "invitation": code})
        assert api.status_code == 403 and message in api.json["error"]
    assert stored(app) == (0, 0)
    with app.app_context():
        assert not any(db.session.scalars(select(RespondentCode.used)))


def test_codes_and_submissions_cannot_be_lined_up(app, signed_in, client, small_survey):
    """Neither row refers to the other, and the code row has no time to match a submission's by."""
    code = make_codes(signed_in, 1)[0]["code"]
    client.post("/api/surveys/small-test/responses", json={"answers": GOOD, "invitation": code})
    assert {c.name for c in RespondentCode.__table__.columns} == {"id", "survey_id", "code", "used", "revoked"}
    assert not any(isinstance(c.type, (db.Date, db.DateTime, db.Time)) for c in RespondentCode.__table__.columns)
    # import_id: the researcher's upload of responses collected elsewhere (NULL for a web submission)
    assert {c.name for c in Submission.__table__.columns} == {"id", "survey_id", "submitted_on", "import_id"}
    assert {fk.column.table.name for fk in Submission.__table__.foreign_keys} == {"surveys", "imports"}
    assert {fk.column.table.name for fk in RespondentCode.__table__.foreign_keys} == {"surveys"}
    with app.app_context():  # and so it is in the database itself, not only in the models
        inspector = inspect(db.engine)
        for table in ("invitations", "submissions", "answers"):
            for fk in inspector.get_foreign_keys(table):
                assert {fk["referred_table"], table} != {"invitations", "submissions"}
                assert fk["referred_table"] != "invitations"
        assert {c["name"] for c in inspector.get_columns("invitations")} == {
            "id",
            "survey_id",
            "code",
            "used",
            "revoked",
        }
        # the coded submission is held (nothing in it names the code), then released in a batch
        assert {c["name"] for c in inspector.get_columns("held_submissions")} == {
            "id",
            "survey_id",
            "held_on",
            "answers",
        }
        assert {fk["referred_table"] for fk in inspector.get_foreign_keys("held_submissions")} == {"surveys"}
        held = db.session.scalar(select(HeldSubmission))
        assert held.held_on == today()


# -- the survey list -------------------------------------------------------------------------------


def test_survey_list_shows_state_responses_epsilon_role_and_links(app, signed_in, client, small_survey, bob):
    draft = add_survey(app, draft_spec())
    shared = add_survey(app, {**SMALL_SPEC, "slug": "bobs-survey", "title": "Survey of Bob"}, owner="bob")
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == shared))
        survey.memberships.append(
            Membership(user_id=db.session.scalar(select(User.id).where(User.username == "alice")), role="researcher")
        )
        db.session.commit()
    client.post("/api/surveys/small-test/responses", json={"answers": GOOD})
    page = text(signed_in.get("/"))

    def row(title: str) -> str:
        return re.search(rf'<th scope="row">{re.escape(title)}</th>(.*?)</tr>', page, re.S).group(1)

    cells = re.findall(r"<td[^>]*>(.*?)</td>", row("Small test survey"), re.S)
    assert cells[:4] == ["open", "1", "3.20", "owner"]
    assert 'href="/surveys/small-test/share"' in cells[4] and 'href="/surveys/small-test/results"' in cells[4]
    assert re.findall(r"<td[^>]*>(.*?)</td>", row("Draft test"), re.S)[:4] == ["draft", "0", "3.20", "owner"]
    assert f'href="/s/{draft}"' not in page
    bobs = row("Survey of Bob")
    assert "<td>researcher</td>" in bobs and "/share" not in bobs and f'href="/surveys/{shared}/results"' in bobs
    assert 'href="/surveys/import"' in page and 'href="/account"' in page
    if "organize.new_survey" in app.view_functions:
        assert 'href="/surveys/new"' in page
    if "organize.build" in app.view_functions:
        assert 'href="/surveys/small-test/build"' in page and f'href="/surveys/{shared}/build"' not in page


def test_survey_list_for_a_user_with_no_surveys(app, small_survey, bob):
    page = text(sign_in(app, "bob").get("/"))
    assert "Small test survey" not in page and "You have no surveys yet" in page
