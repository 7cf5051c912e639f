"""The demo survey in Arabic, on a phone (390 × 844), in Chromium (docs/translations.md).

- The browser asks for Arabic (its locale): the page is ``<html lang="ar" dir="rtl">``, its own
  sentences are Arabic, the layout mirrors without a horizontal scroll (with every "See how" panel
  open too), and axe-core finds no serious or critical violation; so for the privacy and thank-you
  pages.
- The same in Spanish, the other shipped language (left to right): the survey page with every panel
  open, the privacy page and the thank-you page after a whole submission fit a phone and are clean
  for axe.
- The sentences respond.js shows come translated (a required question left unanswered).
- The language switch: before any answer it takes the respondent to the same page in Spanish; once
  an answer is given it changes the page's language in place (switch.js), from Spanish to Arabic and
  back, keeping every answer, an opened panel and a question marked unanswered, asking the server
  for nothing but the page in that language; the form then sends in the language chosen. A page it
  cannot carry over without touching an input changes nothing and says so.
"""

from __future__ import annotations

import json
import os
import re
from urllib.parse import parse_qsl, urlsplit

import pytest
from playwright.sync_api import expect

from survey.domain.surveys.demo import create_demo

from .live import PHONE, live_site
from .pages import axe_violations

DEMO = "/s/health-and-habits"
#: A folder to save screenshots of the Arabic pages in, for a person to look at (unset: none).
SCREENSHOTS = os.environ.get("LANGUAGE_SCREENSHOTS", "")


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    def setup(session):
        create_demo(session, respondents=20)

    with live_site(tmp_path_factory.mktemp("languages"), "language-tests", setup) as site:
        yield site


@pytest.fixture
def context(browser):
    # locale: the Accept-Language the page is asked with; bypass_csp only so that axe can be injected
    context = browser.new_context(viewport=PHONE, locale="ar", bypass_csp=True)
    yield context
    context.close()


def no_horizontal_scroll(page) -> bool:
    return page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")


def check_page_in(page, language: str, direction: str) -> None:
    expect(page.locator("html")).to_have_attribute("lang", language)
    expect(page.locator("html")).to_have_attribute("dir", direction)
    assert no_horizontal_scroll(page)
    violations = axe_violations(page)
    assert not violations, json.dumps(violations, indent=1)[:3000]


def check_arabic_page(page) -> None:
    check_page_in(page, "ar", "rtl")


def test_the_demo_survey_in_arabic_mirrors_fits_a_phone_and_is_clean_for_axe(live_server, context):
    _, base = live_server
    page = context.new_page()
    page.goto(base + DEMO)
    expect(page.locator("#submit-button")).to_have_text("أرسل إجاباتي")
    expect(page.locator("#privacy-heading")).to_have_text("كيف تُحمى إجاباتك")
    # the derived words of each question (wording.py) are Arabic too
    expect(page.locator("[data-claim=deniability]").first).to_contain_text("بأكثر من")
    # the text starts on the right: the heading's right edge is the main column's
    main, heading = page.locator("main").bounding_box(), page.locator("h1").bounding_box()
    assert abs((main["x"] + main["width"]) - (heading["x"] + heading["width"])) < 40
    check_arabic_page(page)
    if SCREENSHOTS:
        page.screenshot(path=SCREENSHOTS + "/survey-ar.png", full_page=True)
    for summary in page.locator("details.protection > summary").all():
        summary.click()
    assert no_horizontal_scroll(page)

    # a required question left unanswered: respond.js says so in Arabic
    page.click("#submit-button")
    expect(page.locator("#form-status")).to_contain_text("أدناه")
    expect(page.locator("#form-status")).not_to_contain_text("required")

    page.goto(base + DEMO + "/privacy")
    expect(page.locator("#answer-heading")).to_have_text("هل يستطيع أحد معرفة إجاباتك؟")
    if SCREENSHOTS:
        page.screenshot(path=SCREENSHOTS + "/privacy-ar.png")
    for part in page.locator("details.privacy-part > summary").all():
        part.click()
    check_arabic_page(page)


def test_the_demo_survey_in_spanish_fits_a_phone_and_is_clean_for_axe_from_first_page_to_thanks(live_server, browser):
    _, base = live_server
    context = browser.new_context(viewport=PHONE, locale="es", bypass_csp=True)
    try:
        page = context.new_page()
        page.goto(base + DEMO)
        expect(page.locator("#submit-button")).to_have_text("Enviar mis respuestas")
        for summary in page.locator("details.protection > summary").all():
            summary.click()
        check_page_in(page, "es", "ltr")

        page.goto(base + DEMO + "/privacy")
        expect(page.locator("#answer-heading")).to_have_text("¿Puede alguien averiguar sus respuestas?")
        for part in page.locator("details.privacy-part > summary").all():
            part.click()
        check_page_in(page, "es", "ltr")

        page.goto(base + DEMO)
        for chosen in ("cannabis-1", "sedatives-3", "age_group-2", "cheating-0", "drink_driving-0", "harassment-0"):
            page.click(f"label[for='{chosen}']")
        page.fill("#weekly_drinks-number", "3")
        page.fill("#drinks_last_week-number", "4.5")
        with page.expect_navigation():
            page.click("#submit-button")
        assert urlsplit(page.url).path == DEMO + "/thanks"
        check_page_in(page, "es", "ltr")
    finally:
        context.close()


def test_the_switch_changes_the_language_before_answering_and_never_loses_answers(live_server, context):
    _, base = live_server
    page = context.new_page()
    page.goto(base + DEMO)
    switch = page.locator("#language-switch")
    expect(switch).to_be_visible()
    expect(switch.locator("a[aria-current]")).to_have_text("العربية")
    with page.expect_navigation():
        switch.get_by_role("link", name="Español").click()
    expect(page.locator("html")).to_have_attribute("dir", "ltr")
    expect(page.locator("html")).to_have_attribute("lang", "es")
    expect(page.locator("#submit-button")).to_have_text("Enviar mis respuestas")
    assert [c["value"] for c in context.cookies() if c["name"] == "lang"] == ["es"]

    # answered (and one required question left out): the switch now changes the page in place
    page.click("label[for='cannabis-1']")
    page.click("label[for='sedatives-3']")
    page.click("label[for='age_group-2']")
    page.fill("#weekly_drinks-number", "3")
    page.fill("#drinks_last_week-number", "4.5")
    page.locator("fieldset[data-key=cheating] details.protection > summary").click()
    page.click("#submit-button")
    expect(page.locator("#form-status")).to_contain_text("marcada")  # Spanish, from respond.js
    expect(page.locator("fieldset[data-key=cheating]")).to_have_class(re.compile("missing"))
    page.evaluate("() => { window.sameDocument = true; }")  # gone if the page were loaded again
    seen = []
    page.on("request", lambda r: seen.append((r.method, r.url, r.post_data or "")))
    switch.get_by_role("link", name="العربية").click()
    expect(page.locator("html")).to_have_attribute("lang", "ar")
    expect(page.locator("html")).to_have_attribute("dir", "rtl")
    expect(page.locator("#submit-button")).to_have_text("أرسل إجاباتي")
    expect(page.locator("#privacy-heading")).to_have_text("كيف تُحمى إجاباتك")
    expect(switch.locator("a[aria-current]")).to_have_text("العربية")
    assert page.evaluate("() => window.sameDocument") is True
    assert page.url.endswith("?lang=ar")
    assert [c["value"] for c in context.cookies() if c["name"] == "lang"] == ["ar"]
    # everything the respondent did is where it was
    for chosen in ("cannabis-1", "sedatives-3", "age_group-2"):
        expect(page.locator("#" + chosen)).to_be_checked()
    expect(page.locator("#weekly_drinks-number")).to_have_value("3")
    expect(page.locator("#drinks_last_week-number")).to_have_value("4.5")
    expect(page.locator("fieldset[data-key=cheating] details.protection")).to_have_attribute("open", "")
    expect(page.locator("fieldset[data-key=cheating]")).to_have_class(re.compile("missing"))
    # the switch asked for the page in Arabic (and its script), and sent nothing else
    assert [m for m, _, _ in seen] == ["GET"] * len(seen)
    paths = [urlsplit(u).path for _, u, _ in seen]
    assert all(p == DEMO or re.fullmatch(r"/static/js/respond/switch\.\w+\.js", p) for p in paths), seen
    assert [urlsplit(u).query for _, u, _ in seen if urlsplit(u).path == DEMO] == ["lang=ar"]
    # nothing of the answers in storage (memo.js keeps its secret there, and only that)
    stored = page.evaluate("() => JSON.stringify([Object.entries(localStorage), Object.entries(sessionStorage)])")
    assert "cannabis" not in stored and "weekly_drinks" not in stored

    # back to Spanish (the script is loaded now), and the page sends in it
    seen.clear()
    switch.get_by_role("link", name="Español").click()
    expect(page.locator("html")).to_have_attribute("dir", "ltr")
    expect(page.locator("#submit-button")).to_have_text("Enviar mis respuestas")
    expect(page.locator("#weekly_drinks-number")).to_have_value("3")
    assert [urlsplit(u).query for _, u, _ in seen] == ["lang=es"]
    page.click("label[for='cheating-0']")
    page.click("label[for='drink_driving-0']")
    page.click("label[for='harassment-0']")
    with page.expect_navigation():
        page.click("#submit-button")
    assert urlsplit(page.url).path == DEMO + "/thanks"
    expect(page.locator("html")).to_have_attribute("lang", "es")
    posted = dict(parse_qsl(next(d for m, _, d in seen if m == "POST"), keep_blank_values=True))
    assert posted["q_weekly_drinks"] == "3" and posted["q_age_group"] == "2"
    assert "lang" not in posted and "4.5" not in posted.values()  # a randomized number goes as its report

    # the cookie (the language's code only) keeps Spanish on the next pages, Arabic browser or not
    page.goto(base + DEMO + "/privacy")
    expect(page.locator("html")).to_have_attribute("lang", "es")
    expect(page.locator("#answer-heading")).to_have_text("¿Puede alguien averiguar sus respuestas?")


def test_a_switch_that_cannot_keep_the_answers_changes_nothing_and_says_so(live_server, context):
    """Where the page in the other language differs in a part that holds an input (here: made so by
    the test, on its way back from the server: the first question's fieldset is a div), the page
    changes nothing, keeps the answers and says why, in its own language."""
    _, base = live_server
    page = context.new_page()
    page.goto(base + DEMO + "?lang=es")
    page.click("label[for='cannabis-1']")

    def a_question_changed_shape(route):
        response = route.fetch()
        route.fulfill(response=response, body=response.text().replace("<fieldset", "<div", 1))

    page.route("**/s/health-and-habits?lang=ar", a_question_changed_shape)
    page.locator("#language-switch").get_by_role("link", name="العربية").click()
    expect(page.locator("#form-status")).to_contain_text("sin perder sus respuestas")
    expect(page.locator("html")).to_have_attribute("lang", "es")
    expect(page.locator("#submit-button")).to_have_text("Enviar mis respuestas")
    expect(page.locator("#cannabis-1")).to_be_checked()
    assert urlsplit(page.url).query == "lang=es"


def test_a_sending_in_doubt_stays_in_doubt_across_the_switch_and_is_sent_again_byte_for_byte(live_server, context):
    """An attempt that got no answer may have been stored: after the switch the page still says so,
    in the new language, and sending again posts the very same body (same key, same reports), which
    the server stores once."""
    _, base = live_server
    page = context.new_page()
    page.goto(base + DEMO + "?lang=es")
    for answer in ("cannabis-1", "cheating-0", "drink_driving-0", "harassment-1", "sedatives-0", "age_group-1"):
        page.click(f"label[for='{answer}']")
    bodies = []

    def server_error(route):
        bodies.append(route.request.post_data)
        route.fulfill(status=500, body="")

    page.route(
        "**/s/health-and-habits",
        lambda route: server_error(route) if route.request.method == "POST" else route.continue_(),
    )
    page.click("#submit-button")
    expect(page.locator("#submit-button")).to_have_text("Enviar de nuevo")
    page.unroute("**/s/health-and-habits")
    page.locator("#language-switch").get_by_role("link", name="العربية").click()
    expect(page.locator("html")).to_have_attribute("lang", "ar")
    expect(page.locator("#submit-button")).to_have_text("أعد الإرسال")
    expect(page.locator("#form-status")).to_contain_text("500")
    expect(page.locator("#form-status")).not_to_contain_text("servidor")
    with page.expect_request(lambda r: r.method == "POST") as sent, page.expect_navigation():
        page.click("#submit-button")
    assert sent.value.post_data == bodies[0]
    assert urlsplit(page.url).path == DEMO + "/thanks"
