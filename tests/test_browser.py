"""The respondent's page in a real browser (Playwright driving Debian's Chromium).

What these prove: a person can fill and send the demo survey; no request the page makes carries a
true answer; the values posted for randomized questions really are random draws; the page's own
randomizer samples each design's matrix columns (chi-square); without JavaScript nothing can be
sent; and axe-core finds no serious or critical accessibility violation.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from urllib.parse import parse_qsl

import numpy as np
import pytest
from playwright.sync_api import sync_playwright
from scipy.stats import chisquare
from sqlalchemy import select
from werkzeug.serving import make_server

from survey import create_app
from survey.demo import create_demo
from survey.extensions import db
from survey.models import Answer, Submission, Survey
from survey.specs import create_survey_from_spec

ROOT = Path(__file__).resolve().parents[1]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-gpu",
]

MORE_DESIGNS = {
    "title": "More designs",
    "slug": "more-designs",
    "questions": [
        {
            "key": "forced",
            "kind": "choice",
            "text": "Which one?",
            "options": ["a", "b", "c"],
            "privacy": {"design": "forced_response", "forced": [0.1, 0.15, 0.05]},
        },
        {
            "key": "unrelated",
            "kind": "yes_no",
            "text": "Unrelated-question design?",
            "privacy": {"design": "unrelated_question", "sensitive_probability": 0.6, "unrelated_yes_rate": 0.3},
        },
        {
            "key": "onesided",
            "kind": "yes_no",
            "text": "One-sided?",
            "privacy": {
                "design": "coin_flip",
                "truth_probability": 0.6,
                "yes_probability": 1.0,
                "allow_one_sided": True,
            },
        },
    ],
}


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    path = tmp_path_factory.mktemp("live") / "live.sqlite"
    app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{path}", "SECRET_KEY": "browser-tests"})
    with app.app_context():
        db.create_all()
        create_demo(db.session, respondents=200)
        create_survey_from_spec(db.session, MORE_DESIGNS)
        db.session.commit()
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield app, f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    with app.app_context():
        db.engine.dispose()


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 390, "height": 844})  # a phone
    page = context.new_page()
    yield page
    context.close()


def watch(page) -> list:
    requests: list = []
    page.on("request", lambda request: requests.append(request))
    return requests


def answer_demo(page, truth: dict[str, int]) -> None:
    """Answer like a person: click the labels, keyboard for one question."""
    for key, code in truth.items():
        if key == "cheating":
            page.focus(f"#{key}-0")
            page.keyboard.press(" ")  # select "yes" with the keyboard
            if code == 1:
                page.keyboard.press("ArrowDown")
        else:
            page.click(f"label[for='{key}-{code}']")


TRUTH = {"cannabis": 0, "cheating": 1, "drink_driving": 0, "harassment": 0, "sedatives": 4, "age_group": 2}


def test_person_fills_and_sends_the_demo_survey(live_server, page):
    app, base = live_server
    requests = watch(page)
    page.goto(f"{base}/s/health-and-habits")
    assert page.is_enabled("#submit-button")
    answer_demo(page, TRUTH)
    assert page.is_checked("#cheating-1") and not page.is_checked("#cheating-0")
    with page.expect_navigation():
        page.click("#submit-button")
    assert "Thank you" in page.text_content("h1")

    posts = [r for r in requests if r.method == "POST"]
    assert len(posts) == 1
    fields = parse_qsl(posts[0].post_data, keep_blank_values=True)
    names = [name for name, _ in fields]
    assert sorted(names) == sorted(["csrf_token"] + [f"q_{k}" for k in TRUTH])
    for request in requests:
        carried = (request.url or "") + (request.post_data or "")
        assert "truth" not in carried
    posted = {name[2:]: int(value) for name, value in fields if name.startswith("q_")}
    assert posted["age_group"] == TRUTH["age_group"]  # the direct question is sent as given
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == "health-and-habits"))
        last = db.session.scalar(select(Submission).order_by(Submission.id.desc()))
        stored = {
            a.question_id: a.value for a in db.session.scalars(select(Answer).where(Answer.submission_id == last.id))
        }
        assert {q.key: stored[q.id] for q in survey.questions} == posted
        for q in survey.questions:
            assert 0 <= posted[q.key] < len(q.options)


def test_posted_values_are_random_draws_not_the_truth(live_server, page):
    """Forty submissions of the same true answers: the reported values vary as the matrices say."""
    _, base = live_server
    requests = watch(page)
    for _ in range(40):
        page.goto(f"{base}/s/health-and-habits")
        answer_demo(page, TRUTH)
        with page.expect_navigation():
            page.click("#submit-button")
    posts = [dict(parse_qsl(r.post_data)) for r in requests if r.method == "POST"]
    assert len(posts) == 40
    for key in ("cannabis", "cheating", "drink_driving", "harassment", "sedatives"):
        values = [int(p[f"q_{key}"]) for p in posts]
        assert len(set(values)) > 1, f"{key}: every submission posted {values[0]}"
        assert not all(v == TRUTH[key] for v in values)
    assert {p["q_age_group"] for p in posts} == {"2"}
    # cannabis: coin flip, P(report yes | yes) = 3/4; 40 draws put it well inside (0.45, 0.95)
    share = np.mean([p["q_cannabis"] == "0" for p in posts])
    assert 0.45 < share < 0.95


@pytest.mark.parametrize("slug", ["health-and-habits", "more-designs"])
def test_page_randomizer_follows_each_matrix_column(live_server, page, slug):
    app, base = live_server
    page.goto(f"{base}/s/{slug}")
    columns = page.eval_on_selector_all(
        "fieldset[data-randomized]", "els => els.map(e => [e.dataset.key, JSON.parse(e.dataset.columns)])"
    )
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        matrices = {q.key: q.mechanism().matrix for q in survey.randomized_questions}
    assert {key for key, _ in columns} == set(matrices)
    draws = 20_000
    for key, cols in columns:
        matrix = matrices[key]
        np.testing.assert_allclose(np.array(cols).T, matrix, atol=1e-15)  # the page carries the stored matrix
        for true, column in enumerate(cols):
            counts = np.array(page.evaluate("([c, n]) => SurveyRandomizer.sampleCounts(c, n)", [column, draws]))
            expected = matrix[:, true] * draws
            possible = expected > 0
            assert counts[~possible].sum() == 0, f"{key}: drew a value the design cannot report"
            if possible.sum() == 1:
                continue  # a one-sided design's protected answer: the only possible report, checked above
            p = chisquare(counts[possible], expected[possible]).pvalue
            assert p > 1e-4, f"{key}, true answer {true}: chi-square p = {p:.2e}, counts {counts}"


def test_uniform_uses_53_bits_from_the_injected_source(page, live_server):
    _, base = live_server
    page.goto(f"{base}/s/health-and-habits")
    top = page.evaluate("SurveyRandomizer.uniform(n => new Uint32Array([0xffffffff, 0xffffffff]))")
    bottom = page.evaluate("SurveyRandomizer.uniform(n => new Uint32Array([0, 0]))")
    assert bottom == 0.0 and top == (2**53 - 1) / 2**53
    # with u just under 0.75 the seed design reports "yes", at 0.75 it reports "no"
    assert page.evaluate("SurveyRandomizer.sample([0.75, 0.25], n => new Uint32Array([0xbfffffff, 0xffffffff]))") == 0
    assert page.evaluate("SurveyRandomizer.sample([0.75, 0.25], n => new Uint32Array([0xc0000000, 0]))") == 1
    uses_crypto = page.evaluate(
        """() => { let calls = 0; const real = crypto.getRandomValues.bind(crypto);
        crypto.getRandomValues = a => { calls++; return real(a); };
        SurveyRandomizer.sample([0.5, 0.5]); return calls; }"""
    )
    assert uses_crypto == 1


def test_required_questions_are_checked_before_anything_is_sent(live_server, page):
    _, base = live_server
    requests = watch(page)
    page.goto(f"{base}/s/health-and-habits")
    page.click("label[for='cannabis-1']")
    page.click("#submit-button")
    assert "required questions have no answer yet" in page.text_content("#form-status")
    assert page.is_visible("#error-cheating") and not page.is_visible("#error-cannabis")
    assert page.evaluate("document.activeElement.id") == "cheating-0"
    assert not [r for r in requests if r.method == "POST"]


def test_without_javascript_nothing_can_be_sent(live_server, browser):
    _, base = live_server
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{base}/s/health-and-habits")
    assert page.is_visible("#needs-javascript")
    assert "needs JavaScript" in page.text_content("#needs-javascript")
    assert page.is_disabled("#submit-button")
    page.click("label[for='cannabis-0']")
    assert page.eval_on_selector("#cannabis-0", "e => e.name") == ""  # a true answer has no name to send
    context.close()


def axe_violations(page) -> list[dict]:
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [v for v in result["violations"] if v["impact"] in ("serious", "critical")]


@pytest.mark.parametrize("slug", ["health-and-habits", "more-designs"])
def test_respondent_page_has_no_serious_accessibility_violations(live_server, browser, slug):
    _, base = live_server
    context = browser.new_context(bypass_csp=True)  # only so that axe itself can be injected
    page = context.new_page()
    page.goto(f"{base}/s/{slug}")
    violations = axe_violations(page)
    assert not violations, json.dumps(violations, indent=1)[:3000]
    page.click("#submit-button")  # the error state must be accessible too
    violations = axe_violations(page)
    assert not violations, json.dumps(violations, indent=1)[:3000]
    context.close()
