"""A survey with its organizer's Arabic texts, answered in Arabic on a phone (390 × 844), in Chromium.

- The browser asks for Arabic (its locale) and the survey has it: the page is ``<html lang="ar"
  dir="rtl">`` with the organizer's Arabic title, questions and options (yes and no in the app's
  Arabic), laid out right to left without a horizontal scroll, clean for axe-core; the switch offers
  the survey's two languages, not Spanish, which it lacks.
- Answered and sent: the form's body carries the reported answers, the CSRF token and the submission
  key, and no language; the thank-you page goes on in Arabic, naming the questions in Arabic.
- The organizer's translations page (each English text beside its Arabic input, written right to
  left) is clean for axe-core, and a text typed there reaches the respondent's preview.
"""

from __future__ import annotations

import json
import os
from urllib.parse import parse_qsl

import pytest
from playwright.sync_api import expect
from sqlalchemy import func, select

from survey.domain.models import Answer, Submission, User
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db

from .live import PHONE, live_site
from .pages import axe_violations, new_page, sign_in
from .surveys import SMALL_SPEC, SMALL_TRANSLATIONS

SLUG = "arabic-content"
DRAFT = "arabic-draft"
ORGANIZER = ("olga", "a long enough password")
#: A folder to save a screenshot of the Arabic page in, for a person to look at (unset: none).
SCREENSHOTS = os.environ.get("LANGUAGE_SCREENSHOTS", "")


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    def setup(session):
        spec = {**SMALL_SPEC, "slug": SLUG, "translations": {"ar": SMALL_TRANSLATIONS["ar"]}}
        create_survey_from_spec(session, spec)
        organizer = User(username=ORGANIZER[0])
        organizer.set_password(ORGANIZER[1])
        session.add(organizer)
        draft = {**SMALL_SPEC, "slug": DRAFT, "status": "draft", "translations": {"ar": {"title": "مسودة"}}}
        create_survey_from_spec(session, draft, owner=organizer)

    with live_site(tmp_path_factory.mktemp("content-languages"), "content-language-tests", setup) as site:
        yield site


@pytest.fixture
def page(browser):
    # locale: the Accept-Language the page is asked with; bypass_csp only so that axe can be injected
    context = browser.new_context(viewport=PHONE, locale="ar", bypass_csp=True)
    yield context.new_page()
    context.close()


def no_horizontal_scroll(page) -> bool:
    return page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")


def test_a_survey_answered_in_arabic_with_its_organizers_arabic_texts(live_server, page):
    app, base = live_server
    requests: list = []
    page.on("request", lambda request: requests.append(request))
    page.goto(f"{base}/s/{SLUG}")
    expect(page.locator("html")).to_have_attribute("lang", "ar")
    expect(page.locator("html")).to_have_attribute("dir", "rtl")
    expect(page.locator("h1")).to_have_text("استطلاع تجريبي")
    expect(page.locator("p.introduction")).to_have_text("للاختبارات.")
    expect(page.locator("#question-often legend")).to_contain_text("كم مرة؟")
    expect(page.locator("label[for='often-0']")).to_have_text("أبدًا")
    expect(page.locator("label[for='drugs-0']")).to_have_text("نعم")  # the app's word for yes
    expect(page.locator("label[for='drugs-1']")).to_have_text("لا")
    assert "How often?" not in page.content() and "Small test survey" not in page.content()
    # right to left: the heading and a question's first option start at the main column's right edge
    main = page.locator("main").bounding_box()
    for selector in ("h1", "label[for='often-0']"):
        box = page.locator(selector).bounding_box()
        assert abs((main["x"] + main["width"]) - (box["x"] + box["width"])) < 60, selector
    assert no_horizontal_scroll(page)
    if SCREENSHOTS:
        page.screenshot(path=SCREENSHOTS + "/content-ar.png", full_page=True)
    violations = axe_violations(page)
    assert not violations, json.dumps(violations, indent=1)[:3000]
    # the survey's languages, and no other
    switch = page.locator("#language-switch a")
    expect(switch).to_have_text(["English", "العربية"])

    page.click("label[for='drugs-0']")
    page.click("label[for='mirror-1']")
    page.click("label[for='often-2']")
    page.click("label[for='age-1']")
    with page.expect_navigation():
        page.click("#submit-button")
    expect(page.locator("html")).to_have_attribute("dir", "rtl")
    expect(page.locator("h1")).to_have_text("أُرسلت إجاباتك")
    expect(page.locator(".sent-question").first).to_contain_text("هل تعاطيت المخدرات؟")

    posts = [r for r in requests if r.method == "POST"]
    assert len(posts) == 1
    fields = parse_qsl(posts[0].post_data, keep_blank_values=True)
    assert sorted(name for name, _ in fields) == [
        "csrf_token",
        "q_age",
        "q_drugs",
        "q_mirror",
        "q_often",
        "submission_key",
    ]
    # no language in the body, in a name or a value
    assert not [(name, value) for name, value in fields if "lang" in name or value in ("ar", "en", "es")]
    assert "lang" not in posts[0].url
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Submission)) == 1
        assert db.session.scalar(select(func.count()).select_from(Answer)) == 4


def test_the_organizers_translations_page_is_clean_for_axe_and_its_texts_reach_the_preview(live_server, browser):
    _, base = live_server
    page = new_page(browser, {"width": 1280, "height": 900}, bypass_csp=True)
    sign_in(page, base, ORGANIZER)
    page.goto(f"{base}/surveys/{DRAFT}/build")
    with page.expect_navigation():
        page.click("#translations-link")
    expect(page.locator("h1")).to_have_text("Translations")
    expect(page.locator("#t-ar-title")).to_have_value("مسودة")
    expect(page.locator("#t-ar-title")).to_have_attribute("dir", "rtl")
    expect(page.locator("#missing-count")).to_contain_text("11 texts still to translate")
    violations = axe_violations(page)
    assert not violations, json.dumps(violations, indent=1)[:3000]
    page.fill("#t-ar-q\\:often\\:text", "كم مرة؟")
    with page.expect_navigation():
        page.click("#save-translations")
    expect(page.locator(".flash")).to_contain_text("Translations saved.")
    expect(page.locator("#missing-count")).to_contain_text("10 texts still to translate")
    page.goto(f"{base}/s/{DRAFT}/preview?lang=ar")
    expect(page.locator("html")).to_have_attribute("dir", "rtl")
    expect(page.locator("h1")).to_have_text("مسودة")
    expect(page.locator("#question-often legend")).to_contain_text("كم مرة؟")
    page.context.close()
