"""What the respondent's pages say about privacy, over HTTP (issue 20, section 2).

- The privacy page of a survey by invitation shows nothing of its questions without a valid code:
  not their keys, texts or options, not how many there are, not their ε. It used to list them as
  "Question 1", ... with their keys in the markup. Proved by comparison: two invitation surveys
  with the same texts but different questions give byte-identical privacy pages, whatever code
  (none, unknown, foreign, used, revoked, malformed) is shown to them. With a valid code the page
  shows each question as the survey page does, and is kept by no cache.
- Each page says truthfully how reports are drawn: memoized per browser (a survey by link), fresh
  with nothing kept (single-use invitation codes), or fresh with nothing kept and the page cleared
  for the next person (a survey marked as answered on shared devices), and the survey page loads
  memo.js only where it memoizes.
- The shared-devices setting travels through the spec (import and export) and the builder.
"""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from survey.domain.errors import DomainError
from survey.domain.models import Survey, User
from survey.domain.responses.codes import generate_codes, revoke
from survey.domain.surveys.specs import create_survey_from_spec, survey_to_spec
from survey.platform.extensions import db
from survey.web.respond.page import survey_page

from .surveys import SMALL_SPEC

COMMON = {
    "title": "Staff wellbeing",
    "introduction": "About work.",
    "run_by": "Wellbeing Study",
    "contact": "study@example.org",
    "ethics_statement": "Approved (ref. EB-1).",
    "access": "invitation",
}
FEW = [
    {
        "key": "zebra_secret",
        "kind": "yes_no",
        "text": "Have you taken the zebra home?",
        "privacy": {"design": "coin_flip", "truth_probability": 0.5, "yes_probability": 0.5},
    },
    {"key": "walrus_count", "kind": "yes_no", "text": "Walrus question?", "privacy": {"design": "grr", "epsilon": 2}},
]
MANY = [
    *FEW,
    {
        "key": "okapi_level",
        "kind": "choice",
        "text": "How often do you feed the okapi?",
        "options": ["Narwhal-never", "Quokka-sometimes", "Axolotl-always"],
        "privacy": {"design": "forced_response", "forced": [0.1, 0.1, 0.1]},
    },
    {
        "key": "tapir_onesided",
        "kind": "yes_no",
        "text": "One-sided tapir?",
        "privacy": {"design": "coin_flip", "truth_probability": 0.6, "yes_probability": 1.0, "allow_one_sided": True},
    },
    {"key": "ibis_group", "kind": "direct", "text": "Your ibis group?", "options": ["Pelican", "Heron"]},
    {"key": "gecko_years", "kind": "number", "text": "Years with geckos?", "minimum": 0, "maximum": 60},
]
#: Every word of the two surveys' questions that must not reach a page without a valid code.
SECRETS = ["zebra", "walrus", "okapi", "narwhal", "quokka", "axolotl", "tapir", "ibis", "pelican", "heron", "gecko"]


def make(app, spec: dict, owner: int | None = None, **changes) -> tuple[str, list[str]]:
    """A survey from ``spec`` (with ``changes`` set on it) and, if it is by invitation, ten codes."""
    with app.app_context():
        survey = create_survey_from_spec(
            db.session, spec, owner=db.session.get(User, owner) if owner is not None else None
        )
        for name, value in changes.items():
            setattr(survey, name, value)
        db.session.flush()
        codes = generate_codes(db.session, survey, 10) if survey.access == "invitation" else []
        db.session.commit()
        return survey.slug, codes


def privacy_html(client, slug: str, code: str | None = None) -> str:
    response = client.get(f"/s/{slug}/privacy", query_string={"code": code} if code is not None else None)
    assert response.status_code == 200
    return response.get_data(as_text=True)


def test_without_a_valid_code_the_privacy_page_shows_nothing_of_the_questions(app, client):
    few, few_codes = make(app, {**COMMON, "slug": "survey-one", "questions": FEW})
    many, many_codes = make(app, {**COMMON, "slug": "survey-two", "questions": MANY})
    # a used code (its submission stored through the API) and a revoked one
    answers = {"zebra_secret": 0, "walrus_count": 1}
    stored = client.post(f"/api/surveys/{few}/responses", json={"answers": answers, "invitation": few_codes[0]})
    assert stored.status_code == 201
    with app.app_context():
        revoke(db.session, db.session.scalar(select(Survey).where(Survey.slug == few)), few_codes[1])
        db.session.commit()

    def pages(slug: str, foreign: str, used: str, revoked: str) -> list[str]:
        shown = [None, "", "NOPE-NOPE-NOPE", foreign, used, revoked, "x" * 500, "'\"><script>"]
        return [privacy_html(client, slug, code).replace(slug, "SLUG") for code in shown]

    seen = pages(few, many_codes[2], few_codes[0], few_codes[1]) + pages(many, few_codes[2], few_codes[0], few_codes[1])
    assert len(set(seen)) == 1, "the page differs with the survey's questions or with the code shown"
    html = seen[0]
    lowered = html.lower()
    for word in SECRETS:
        assert word not in lowered, word
    assert "data-question" not in html and "Question 1" not in html and "question-privacy" not in html
    assert not re.search(r"ε\s*=", html)  # no per-question or total privacy loss
    assert "nothing links the code to your answers" in html  # what holds for every invitee is said
    assert "To answer, use the personal link from your invitation." in html


def test_with_a_valid_code_it_shows_each_question_and_is_kept_by_no_cache(app, client):
    slug, codes = make(app, {**COMMON, "slug": "survey-three", "questions": MANY})
    code = codes[3]
    typed = f"{code[:4]}-{code[4:8]}-{code[8:]}".lower()  # as printed on paper, typed in lower case
    response = client.get(f"/s/{slug}/privacy", query_string={"code": typed})
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "private, no-store"
    html = response.get_data(as_text=True)
    words = " ".join(re.sub(r"<[^>]+>", "", html).split())
    with app.app_context():
        page = survey_page(db.session.scalar(select(Survey).where(Survey.slug == slug)))
        for view in page.questions:
            assert view.question.text in html
            assert f'data-question="{view.key}"' in html
            if view.randomized:
                assert f"ε = {view.epsilon}" in words
        assert f"ε = {page.total_epsilon}" in words
    assert f'href="/s/{slug}?code={code}"' in html  # back to the survey, with the code
    # the survey page opened with that code links here with it
    survey_html = client.get(f"/s/{slug}", query_string={"code": code}).get_data(as_text=True)
    assert f'href="/s/{slug}/privacy?code={code}"' in survey_html


def test_its_organizers_see_the_questions_marked_as_a_preview_and_nobody_else(app, client, signed_in, user):
    slug, _ = make(app, {**COMMON, "slug": "survey-four", "questions": MANY}, owner=user)
    html = privacy_html(signed_in, slug)
    assert "Have you taken the zebra home?" in html and 'id="preview-banner"' in html and "preview-note" in html
    other = app.test_client()
    with app.app_context():
        stranger = User(username="bob")
        stranger.set_password("another horse battery")
        db.session.add(stranger)
        db.session.commit()
    assert other.post("/auth/login", data={"username": "bob", "password": "another horse battery"}).status_code == 302
    assert "zebra" not in privacy_html(other, slug).lower()


def test_a_survey_by_link_still_shows_its_questions_to_anyone(app, client):
    slug, _ = make(app, SMALL_SPEC)
    html = privacy_html(client, slug)
    for q in SMALL_SPEC["questions"]:
        assert q["text"] in html
    assert privacy_html(client, slug, "ANY-CODE-AT-ALL") == html


#: (access, shared devices) → the regime the pages must name.
REGIMES = [
    ("link", False, "memoized"),
    ("invitation", False, "single-use"),
    ("link", True, "shared"),
    ("invitation", True, "shared"),
]


@pytest.mark.parametrize(("access", "shared", "regime"), REGIMES)
def test_each_page_says_truthfully_how_reports_are_drawn(app, client, access, shared, regime):
    slug, codes = make(app, {**SMALL_SPEC, "access": access}, shared_devices=shared)
    code = codes[0] if codes else None
    query = {"code": code} if code else None
    survey, privacy, thanks = (
        " ".join(client.get(path, query_string=query).get_data(as_text=True).split())  # spaces as a reader sees them
        for path in (f"/s/{slug}", f"/s/{slug}/privacy", f"/s/{slug}/thanks")
    )
    form = re.search(r'<form method="post"[^>]*id="survey-form"[^>]*>', survey).group(0)
    assert f'data-regime="{regime}"' in form
    # the contract with the server: one key per filling, in this hidden field (respond.js fills it)
    assert re.search(r'<input type="hidden" name="submission_key" id="submission-key" value="">', survey)
    assert f'id="repeat" data-regime="{regime}"' in privacy

    memo_script = re.search(r"js/respond/memo(\.[0-9a-f]{10})?\.js", survey) is not None
    if regime == "memoized":
        assert memo_script and 'id="memo-on"' in survey and 'id="keeps-nothing"' not in survey
        assert "keeps one random secret for this site" in privacy
        assert "On your device: the random secret described above" in privacy
        assert 'id="next-respondent"' not in thanks
        return
    assert not memo_script and 'id="memo-on"' not in survey and 'id="memo-off"' not in survey
    assert f'id="keeps-nothing" class="muted" data-regime="{regime}"' in survey
    for claim in ("random secret", "browser's secret", "secret your browser keeps"):
        assert claim not in privacy, claim
    assert "keeps nothing for this survey" in privacy
    assert "On your device: nothing from this survey" in privacy
    if regime == "single-use":
        assert "you cannot answer twice with it" in privacy
        assert 'id="next-respondent"' not in thanks and 'id="clear-answers"' not in survey
        assert 'autocomplete="off"' not in form
        return
    assert "answered on shared devices" in survey and "cleared for the next person" in survey
    assert "answered on shared devices" in privacy and "cleared for the next person" in privacy
    assert 'autocomplete="off"' in form and '<form id="true-answers" hidden autocomplete="off">' in survey
    assert 'id="clear-answers"' in survey
    assert f'href="/s/{slug}" id="next-respondent"' in thanks and 'id="cleared-note"' in thanks


def test_a_key_the_server_passes_back_is_rendered_into_the_page(app):
    """The contract with the server's form post: after a refusal it renders the page again with the
    filling's ``submission_key``, which goes into the hidden field the page's script sends."""
    from flask import render_template

    slug, _ = make(app, SMALL_SPEC)
    with app.test_request_context(f"/s/{slug}"):
        page = survey_page(db.session.scalar(select(Survey).where(Survey.slug == slug)))
        html = render_template("respond/survey.html", page=page, invitation="", submission_key="ab" * 16)
    assert f'<input type="hidden" name="submission_key" id="submission-key" value="{"ab" * 16}">' in html


def test_shared_devices_travels_through_the_spec_and_is_refused_unless_true_or_false(app):
    with app.app_context():
        survey = create_survey_from_spec(db.session, {**SMALL_SPEC, "shared_devices": True})
        db.session.flush()
        assert survey.shared_devices is True
        exported = survey_to_spec(survey)
        assert exported["shared_devices"] is True
        again = create_survey_from_spec(db.session, {**exported, "slug": "copy-of-it"})
        assert again.shared_devices is True and survey_to_spec(again) == exported
        plain = create_survey_from_spec(db.session, {**SMALL_SPEC, "slug": "plain-one"})
        db.session.flush()
        assert plain.shared_devices is False and survey_to_spec(plain)["shared_devices"] is False
        with pytest.raises(DomainError) as refused:
            create_survey_from_spec(db.session, {**SMALL_SPEC, "slug": "bad-one", "shared_devices": "yes"})
        assert refused.value.path == ("shared_devices",) and "true or false" in refused.value.message


def test_the_builder_sets_shared_devices_in_any_state(app, signed_in, small_survey):
    def stored() -> bool:
        with app.app_context():
            return db.session.scalar(select(Survey.shared_devices).where(Survey.slug == small_survey))

    texts = {"title": "Small test survey", "introduction": "For tests."}
    assert signed_in.post(f"/surveys/{small_survey}/details", data={**texts, "shared_devices": "y"}).status_code == 303
    assert stored() is True  # the survey is open: the setting is not part of its frozen design
    page = signed_in.get(f"/surveys/{small_survey}/build").get_data(as_text=True)
    box = re.search(r'<input[^>]*id="shared_devices"[^>]*>', page).group(0)
    assert "checked" in box
    assert signed_in.post(f"/surveys/{small_survey}/details", data=texts).status_code == 303  # unticked
    assert stored() is False
