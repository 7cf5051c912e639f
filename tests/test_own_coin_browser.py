"""Randomized by the respondent's own coins, in a real browser: the page draws nothing, and posts the
answers as they were ticked (what the coins told the respondent to answer), under the instruction."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest

from survey.domain.surveys.specs import create_survey_from_spec

from .live import live_site
from .surveys import OWN_COIN_SPEC as SPEC


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    with live_site(tmp_path_factory.mktemp("coins"), "coin-tests", lambda s: create_survey_from_spec(s, SPEC)) as (
        app,
        base,
    ):
        yield app, base


@pytest.mark.parametrize("ticked", [{"cheated": 0, "mood": 2}, {"cheated": 1, "mood": 0}])
def test_the_answer_ticked_is_the_report_sent(browser, site, ticked):
    _app, base = site
    context = browser.new_context()
    page = context.new_page()
    posts: list = []
    context.on("request", lambda r: posts.append(r) if r.method == "POST" else None)
    page.goto(f"{base}/s/by-hand")
    page.locator("#submit-button:enabled").wait_for()
    instruction = page.locator('[data-claim="instruction"][data-question="cheated"]')
    assert instruction.is_visible()
    assert instruction.text_content().startswith("Toss two coins")
    for key, code in ticked.items():
        page.check(f"#{key}-{code}")
    with page.expect_navigation():
        page.click("#submit-button")
    assert page.url == f"{base}/s/by-hand/thanks"
    [post] = posts
    fields = dict(parse_qsl(post.post_data, keep_blank_values=True))
    assert set(fields) == {"csrf_token", "submission_key", "q_cheated", "q_mood"}
    assert {k: int(fields[f"q_{k}"]) for k in ticked} == ticked
    context.close()
