"""The compare and regression pages in a real browser (Playwright driving Debian's Chromium), on the
demo survey with 200 simulated respondents.

What these prove: neither page scrolls sideways on a phone (390 × 844), whatever it shows (a
breakdown, an association, a regression with its predictions); the regression page models the
outcome option the researcher picks, and says so in the URL it lands on; after relating two
sensitive questions, the answer a researcher chose is still chosen for the next comparison.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import expect

from survey.domain.surveys.demo import create_demo

from .live import live_site
from .pages import DEMO, new_page, sign_in

SLUG = "health-and-habits"
OVERFLOW = "document.scrollingElement.scrollWidth - window.innerWidth"


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    with live_site(
        tmp_path_factory.mktemp("analysis"), "analysis-browser-tests", lambda s: create_demo(s, respondents=200)
    ) as site:
        yield site


@pytest.fixture
def page(live_server, browser):
    _, base = live_server
    page = new_page(browser)
    sign_in(page, base, DEMO)
    yield page
    page.context.close()


def query_of(page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


@pytest.mark.parametrize(
    "path",
    [
        "compare",
        "compare?question=cannabis&by=age_group",
        "compare?question=sedatives&by=age_group&category=2",
        "compare?question=cannabis&by=cheating",
        "compare?question=cannabis&by=week",
        "regression",
        "regression?outcome=sedatives&covariates=age_group&category=1",
    ],
)
def test_the_analysis_pages_do_not_scroll_sideways_on_a_phone(live_server, page, path):
    _, base = live_server
    page.goto(f"{base}/surveys/{SLUG}/{path}")
    expect(page.locator("section.result")).to_be_visible()  # real data: a result is drawn
    assert page.evaluate("window.innerWidth") == 390
    assert page.evaluate(OVERFLOW) <= 0, page.evaluate(
        """[...document.querySelectorAll('body *')]
            .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
            .filter(e => !e.closest('.table-scroll'))
            .slice(0, 8).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))"""
    )
    assert page.csp_errors == []


def test_the_regression_page_models_the_option_the_researcher_picks(live_server, page):
    _, base = live_server
    page.goto(f"{base}/surveys/{SLUG}/regression")
    expect(page.locator("#category option:checked")).to_have_text("yes")  # the first outcome's default
    page.select_option("#outcome", "sedatives")
    # the answers offered follow the outcome before the form is sent (static/js/results/answer-options.js)
    expect(page.locator("#category option")).to_have_count(5)
    expect(page.locator("#category option:checked")).to_have_text("Never")
    with page.expect_navigation():
        page.click("button:has-text('Fit')")
    # another outcome was picked: its first listed option ("Never") is modelled first
    expect(page.locator("#fit-title")).to_contain_text("answering “Never”")
    expect(page.locator("#category")).to_have_value("0")
    page.select_option("#category", label="A few times a year")
    with page.expect_navigation():
        page.click("button:has-text('Fit')")
    expect(page.locator("#fit-title")).to_contain_text("answering “A few times a year”")
    assert query_of(page)["category"] == ["2"] and query_of(page)["outcome"] == ["sedatives"]
    expect(page.locator("#category")).to_have_value("2")
    # the downloads fit the same model
    json_link = page.locator("a:has-text('The fit (JSON)')").get_attribute("href")
    assert json_link is not None and parse_qs(urlsplit(json_link).query)["category"] == ["2"]
    fit = page.request.get(base + json_link).json()
    assert fit["outcome"] == "sedatives" and fit["category"] == "A few times a year"


def test_the_chosen_answer_survives_an_association(live_server, page):
    """Relate two sensitive questions, then compare by a group: still the share answering "yes"."""
    _, base = live_server
    page.goto(f"{base}/surveys/{SLUG}/compare?question=cannabis&by=age_group")
    expect(page.locator("#compare-title")).to_contain_text("share answering “yes”")
    expect(page.locator("#category option:checked")).to_have_text("yes")
    page.select_option("#by", "cheating")
    with page.expect_navigation():
        page.click("button:has-text('Compare')")
    expect(page.locator("#compare-title")).to_contain_text("and")
    expect(page.locator("#category option:checked")).to_have_text("yes")
    page.select_option("#by", "age_group")
    with page.expect_navigation():
        page.click("button:has-text('Compare')")
    expect(page.locator("#compare-title")).to_contain_text("share answering “yes”")
