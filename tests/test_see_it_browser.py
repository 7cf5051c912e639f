"""Seeing the coin land: "See how" tries the randomizer on a made-up answer, and the thank-you page
shows what was sent (SECURITY.md, section 2; the issue "Every respondent", part 3).

A respondent cannot watch their browser randomize, so the page lets them try it and shows the
outcome. What these tests prove, in Chromium driven by Playwright, on surveys covering every design
(the questions of tests/test_privacy_network.py):

- trying sends nothing: with every request of the browser watched from the moment the page has
  loaded, pressing "Randomize" many times on every randomized question (options and numbers, by
  button and by Enter) makes no request at all, writes nothing to any storage, touches no true
  answer, and each try is exactly the draw the page's own randomizer makes from that made-up
  answer's column with the words crypto.getRandomValues served (seeded, compared with the inverse
  CDF computed here);
- after sending, the thank-you page shows, for each randomized question, the very report that was
  posted (the body the browser sent, captured), and nothing of an answer asked directly; it is shown
  once (the session that carried it no longer holds it, and a reload shows no list);
- on a survey answered on shared devices, nothing is left: no storage, a session cookie with only
  its CSRF token, and no page the back button reaches shows the earlier person's list;
- the pages stay free of serious accessibility violations with the panels open.
"""

from __future__ import annotations

import json
import random
import re
from urllib.parse import parse_qsl

import pytest
from playwright.sync_api import expect
from sqlalchemy import func, select

from survey.domain.models import Answer, Submission, Survey
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db

from .live import PHONE, live_site
from .pages import axe_violations, inverse_cdf, session_cookie_payload, tick_answers
from .surveys import EVERY_DESIGN_QUESTIONS as QUESTIONS

#: by link (memoized), and on shared devices
SURVEYS = {"see-it": False, "see-it-shared": True}
SEED = 20_261_128
TRIES = 12

#: Serve the page's 2-word draws (SurveyRandomizer's uniform) from a queue, and count them.
SEEDED = """words => {
  const real = Crypto.prototype.getRandomValues;
  const queue = words.slice();
  window.__served = 0;
  crypto.getRandomValues = function (array) {
    if (array instanceof Uint32Array && array.length === 2 && queue.length >= 2) {
      array[0] = queue.shift();
      array[1] = queue.shift();
      window.__served += 1;
      return array;
    }
    return real.call(crypto, array);
  };
}"""


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    made = {}

    def setup(session):
        for slug, shared in SURVEYS.items():
            survey = create_survey_from_spec(session, {"title": f"Survey {slug}", "slug": slug, "questions": QUESTIONS})
            survey.shared_devices = shared
        session.flush()
        survey = session.scalar(select(Survey).where(Survey.slug == "see-it"))
        made["options"] = {q.key: [o.label for o in q.options] for q in survey.questions if q.kind_entry.has_options}
        made["drawn"] = {q.key for q in survey.randomized_questions}
        made["numbers"] = {q.key: q.mechanism() for q in survey.questions if q.kind_entry.randomized_number}

    with live_site(tmp_path_factory.mktemp("see-it"), "see-it-tests", setup) as (app, base):
        yield app, base, made


@pytest.fixture
def context(browser):
    context = browser.new_context(viewport=PHONE, bypass_csp=True)  # bypass: only so that axe can be injected
    yield context
    context.close()


def drawn_columns(page) -> dict[str, list[list[float]]]:
    return dict(
        page.eval_on_selector_all(
            "fieldset[data-randomized][data-columns]",
            "els => els.map(e => [e.dataset.key, JSON.parse(e.dataset.columns)])",
        )
    )


def label_of(label: str) -> str:
    return label[:1].upper() + label[1:]


def test_trying_the_randomizer_sends_nothing_keeps_nothing_and_draws_as_the_page_would(live_server, context):
    _, base, made = live_server
    page = context.new_page()
    page.goto(f"{base}/s/see-it", wait_until="load")
    expect(page.locator("#submit-button")).to_be_enabled()
    requests: list = []
    context.on("request", lambda request: requests.append(request.url))
    columns = drawn_columns(page)
    assert columns and set(columns) | set(made["numbers"]) == made["drawn"]
    rng = random.Random(SEED)
    for key, cols in columns.items():
        panel = page.locator(f"#try-{key}")
        expect(panel).to_be_hidden()  # out of the way until asked for
        page.click(f"#question-{key} details.protection > summary")
        expect(panel).to_be_visible()
        labels = [label_of(label) for label in made["options"][key]]
        for made_up in range(len(cols)):
            page.select_option(f"#try-answer-{key}", str(made_up))
            words = [rng.getrandbits(32) for _ in range(2 * TRIES)]
            page.evaluate(SEEDED, words)
            seen = []
            for i in range(TRIES):
                page.click(f"#try-{key} [data-try-button]")
                expected = labels[inverse_cdf(cols[made_up], words[2 * i], words[2 * i + 1])]
                expect(page.locator(f"#try-{key} [data-try-out]")).to_have_text(f"“{expected}”")
                seen.append(expected)
            assert page.evaluate("window.__served") == TRIES  # one draw per try, each from crypto
            tally = page.text_content(f"#try-{key} [data-try-tally]")
            assert tally == ", ".join(f"“{label}” {seen.count(label)}" for label in labels), tally
    for key in made["numbers"]:
        page.click(f"#question-{key} details.protection > summary")
        page.fill(f"#try-answer-{key}", "12.5")
        for _ in range(TRIES):
            page.click(f"#try-{key} [data-try-button]")
        page.press(f"#try-answer-{key}", "Enter")  # tries again; never sends the survey
        shown = float(page.text_content(f"#try-{key} [data-try-out]"))
        mechanism = made["numbers"][key]
        lowest, highest = (float(mechanism.value_of(c)) for c in (mechanism.reports.low, mechanism.reports.high))
        assert lowest - 0.05 <= shown <= highest + 0.05
        assert page.text_content(f"#try-{key} [data-try-tally]") == str(TRIES + 1)
        assert page.text_content(f"#try-{key} [data-try-recent]").split(", ")[0] == page.text_content(
            f"#try-{key} [data-try-out]"
        )
    # nothing was sent: the one request is for the "Try it" script, fetched when the first panel opened
    assert [re.sub(r"\.[0-9a-f]{10}\.js$", ".js", url) for url in requests] == [f"{base}/static/js/respond/try.js"], (
        requests
    )
    assert page.url == f"{base}/s/see-it"
    assert page.evaluate("localStorage.length + sessionStorage.length") == 0
    assert page.evaluate("document.querySelectorAll('input[type=radio]:checked').length") == 0
    assert page.evaluate("Array.from(document.querySelectorAll('input[data-reported-for]')).every(i => i.disabled)")
    violations = axe_violations(page)
    assert not violations, json.dumps(violations, indent=1)[:3000]


def send(page, truth: dict[str, int], typed: dict[str, str]) -> dict[str, str]:
    """Answer and send on the open survey page; the fields posted."""
    posts: list = []
    page.on("request", lambda request: posts.append(request) if request.method == "POST" else None)
    tick_answers(page, truth)
    for key, number in typed.items():
        page.fill(f"#{key}-number", number)
    with page.expect_navigation():
        page.click("#submit-button")
    expect(page.locator("h1")).to_have_text("Your answers were sent")
    assert len(posts) == 1
    return dict(parse_qsl(posts[0].post_data, keep_blank_values=True))


def shown_reports(page) -> dict[str, str]:
    return dict(page.eval_on_selector_all("[data-sent]", "els => els.map(e => [e.dataset.sent, e.textContent])"))


def expected_shown(made, posted: dict[str, str]) -> dict[str, str]:
    """What the thank-you page must show for the posted reports, worked out here: an option's label,
    or a number's value (one decimal at most)."""
    shown = {}
    for key in made["drawn"]:
        code = int(posted[f"q_{key}"])
        if key in made["numbers"]:
            value = round(float(made["numbers"][key].value_of(code)), 1)
            shown[key] = f"{value:g}".replace("-0", "0") if value == 0 else f"{value:g}"
        else:
            shown[key] = label_of(made["options"][key][code])
    return shown


@pytest.mark.parametrize("slug", list(SURVEYS))
def test_the_thank_you_page_shows_what_was_sent_once(live_server, context, slug):
    _, base, made = live_server
    page = context.new_page()
    rng = random.Random(f"{SEED}-{slug}")
    truth = {key: rng.randrange(len(labels)) for key, labels in made["options"].items()}
    typed = {key: "7" for key in made["numbers"]}
    page.goto(f"{base}/s/{slug}")
    expect(page.locator("#submit-button")).to_be_enabled()
    posted = send(page, truth, typed)
    sent = page.locator("#what-was-sent")
    expect(sent).to_be_visible()
    sent.locator("summary").click()
    assert shown_reports(page) == expected_shown(made, posted)
    direct = [q["key"] for q in QUESTIONS if "privacy" not in q]
    assert direct and all(page.locator(f"#sent-{key}").count() == 0 for key in direct)
    for cookie in context.cookies():
        assert "sent" not in session_cookie_payload(cookie["value"])  # carried once, then gone
    violations = axe_violations(page)
    assert not violations, json.dumps(violations, indent=1)[:3000]
    page.reload()
    expect(page.locator("h1")).to_have_text("Your answers were sent")
    assert page.locator("#what-was-sent").count() == 0  # shown once
    if not SURVEYS[slug]:
        return
    # a shared device: nothing is left, and the back button shows the next person nothing of it
    assert page.evaluate("localStorage.length + sessionStorage.length") == 0
    for cookie in context.cookies():
        assert set(session_cookie_payload(cookie["value"])) <= {"csrf_token", "_fresh"}
    with page.expect_navigation():
        page.click("#next-respondent")
    posted_again = send(page, truth, typed)
    assert shown_reports(page) == expected_shown(made, posted_again)
    with page.expect_navigation():
        page.click("#next-respondent")
    for _ in range(page.evaluate("history.length") - 1):
        page.go_back(wait_until="load")
        assert page.locator("#what-was-sent").count() == 0, page.url
        assert page.locator("[data-sent]").count() == 0, page.url


def test_every_report_shown_after_sending_is_what_the_server_stored(live_server, context):
    """The list is the server's: the reports it stored for that submission, in the same order."""
    app, base, made = live_server
    page = context.new_page()
    page.goto(f"{base}/s/see-it")
    expect(page.locator("#submit-button")).to_be_enabled()
    truth = {key: 0 for key in made["options"]}
    posted = send(page, truth, {key: "3" for key in made["numbers"]})
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == "see-it"))
        keys = {q.id: q.key for q in survey.questions}
        last = db.session.scalar(select(func.max(Submission.id)).where(Submission.survey_id == survey.id))
        answers = db.session.scalars(select(Answer).where(Answer.submission_id == last))
        stored = {keys[a.question_id]: a.value for a in answers}
    assert {key: int(posted[f"q_{key}"]) for key in made["drawn"]} == {key: stored[key] for key in made["drawn"]}
    assert shown_reports(page) == expected_shown(made, {f"q_{k}": str(v) for k, v in stored.items()})


def test_the_privacy_pages_first_phone_screen_answers_can_anyone_find_out(live_server, context):
    """At 390 × 844 the question and its answer, for every kind of question on the page, are on the
    first screen; the rest is under headings that open, and clean for axe when they are open."""
    _, base, _ = live_server
    page = context.new_page()
    page.goto(f"{base}/s/see-it/privacy")
    expect(page.locator("#answer-heading")).to_have_text("Can anyone find out your answers?")
    for paragraph in page.locator("#first-answer p").all():
        expect(paragraph).to_be_in_viewport(ratio=1)
    expect(page.locator("#first-answer")).to_contain_text("not for certain")
    expect(page.locator("#first-answer")).to_contain_text("asked directly")
    expect(page.locator("#see-it")).to_contain_text("See how")
    parts = page.locator("details.privacy-part")
    assert parts.count() >= 5
    for part in parts.all():
        expect(part.locator("p, ul, ol").first).to_be_hidden()
        part.locator("summary").click()
        expect(part.locator("p, ul, ol").first).to_be_visible()
    assert "developer tools" not in page.text_content("main")
    violations = axe_violations(page)
    assert not violations, json.dumps(violations, indent=1)[:3000]
