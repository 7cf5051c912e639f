"""Many respondents in one browser: memoization is never shared between them (SECURITY.md, section 2).

Reports used to be memoized per browser in every survey, so on one device (a computer lab, a tablet
passed around a clinic) everyone with the same true answer sent the same report: the noise was
shared and the intervals far too narrow. Now a survey by invitation (each code admits one
submission) and a survey marked as answered on shared devices draw every report afresh and keep
nothing in the browser; on shared devices the page is also cleared for the next person. Ordinary
surveys by link keep the memoization section 2 describes.

What these tests prove, in Chromium driven by Playwright, with twenty respondents in ONE browser
context giving the same true answers:

- the reports follow the design's column. The page's randomness is injected (seeded words served
  by ``crypto.getRandomValues``), so the check is deterministic: every posted report must equal
  the inverse CDF of the very words served (an exact reference), and the twenty reports per
  question must pass an exact multinomial goodness-of-fit test at α = 0.001. A second run with
  the browser's own randomness checks that the submissions are not all identical; with these
  columns that happens by chance with probability 1.2e-10 (computed in the test);
- nothing is kept in the browser (no localStorage, sessionStorage or IndexedDB entry, the session
  cookie holds only the CSRF token, memo.js is not loaded), and each respondent has a submission
  key of their own;
- on shared devices, the back button and form restoration show nothing of an earlier respondent,
  and the thank-you page starts a clean page for the next person;
- a sending whose answer is lost (a dropped connection, a 503) keeps the page, says in plain words
  that sending again is safe, and the retry posts the very same body (same key, same reports);
  with an answer changed, only that answer is drawn again; a refusal shows the server's reason;
- an ordinary survey by link stays memoized: the same browser sends the same reports, HMAC-derived
  from its one secret.
"""

from __future__ import annotations

import itertools
import re
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pytest
from playwright.sync_api import expect
from scipy.stats import multinomial
from sqlalchemy import select

from survey.domain.models import Survey
from survey.domain.responses.codes import generate_codes
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db

from .live import live_site
from .pages import STORAGE_KEY, axe_violations, inverse_cdf, reference_report, session_cookie_payload, tick_answers

RESPONDENTS = 20
#: Significance of each question's goodness-of-fit test. The words are seeded, so the outcome is
#: fixed; a correct sampler fails it for a fraction α of seeds per question. The seed was set once.
ALPHA = 0.001
SEED = 20_260_417

QUESTIONS = [
    {
        "key": "coin",
        "kind": "yes_no",
        "text": "Coin flip?",
        "privacy": {"design": "coin_flip", "truth_probability": 0.5, "yes_probability": 0.5},
    },
    {
        "key": "five",
        "kind": "choice",
        "text": "GRR on five options?",
        "options": ["never", "once", "sometimes", "often", "always"],
        "privacy": {"design": "grr", "truth_probability": 0.5},
    },
    {
        "key": "forced",
        "kind": "choice",
        "text": "Forced response?",
        "options": ["a", "b", "c"],
        "privacy": {"design": "forced_response", "forced": [0.1, 0.15, 0.05]},
    },
    {"key": "group", "kind": "direct", "text": "Which group?", "options": ["x", "y", "z"]},
]
TRUTH = {"coin": 0, "five": 3, "forced": 1, "group": 2}
#: The same questions, the five-option one and the forced one open to "Prefer not to say".
DECLINING = [{**q, "decline": True} if q["key"] in ("five", "forced") else q for q in QUESTIONS]
SURVEYS = {
    # slug: (access, shared_devices)
    "lab-computer": ("link", True),
    "clinic-codes": ("invitation", False),
    "shared-codes": ("invitation", True),
    "own-device": ("link", False),
    "retry-shared": ("link", True),
    "retry-own": ("link", False),
    "closes-meanwhile": ("link", True),
    "lab-declining": ("link", True),
}


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    codes: dict[str, list[str]] = {}

    def setup(session):
        for slug, (access, shared) in SURVEYS.items():
            questions = DECLINING if slug == "lab-declining" else QUESTIONS
            survey = create_survey_from_spec(
                session, {"title": f"Survey {slug}", "slug": slug, "access": access, "questions": questions}
            )
            # set as an attribute, not through the spec, so that the same test runs (and fails) on a
            # version of the code that does not know the setting
            survey.shared_devices = shared
            if access == "invitation":
                session.flush()
                codes[slug] = generate_codes(session, survey, 2 * RESPONDENTS + 2)

    with live_site(tmp_path_factory.mktemp("shared"), "shared-device-tests", setup) as (app, base):
        yield app, base, codes


@pytest.fixture
def context(browser):
    context = browser.new_context()
    yield context
    context.close()


#: Serve the page's 2-word draws (SurveyRandomizer's uniform) from a queue; anything else, such as
#: the 16 bytes of a submission key, from the browser's own generator. Installed in the loaded page.
SEEDED = """words => {
  const real = Crypto.prototype.getRandomValues;
  const queue = words.slice();
  crypto.getRandomValues = function (array) {
    if (array instanceof Uint32Array && array.length === 2 && queue.length >= 2) {
      array[0] = queue.shift();
      array[1] = queue.shift();
      return array;
    }
    return real.call(crypto, array);
  };
}"""

NOTHING_ANSWERED = """() => ({
  checked: document.querySelectorAll("input[type=radio]:checked, input[type=checkbox]:checked").length,
  typed: Array.from(document.querySelectorAll("input[type=number]")).filter(i => i.value !== "").length,
  reported: Array.from(document.querySelectorAll("input[data-reported-for]")).filter(i => i.value !== "").length,
  key: (document.getElementById("submission-key") || {value: ""}).value,
})"""


def randomized_columns(page) -> list[tuple[str, list[list[float]]]]:
    """The page's randomized questions in page order, each with its matrix's columns."""
    return page.eval_on_selector_all(
        "fieldset[data-randomized][data-columns]",
        "els => els.map(e => [e.dataset.key, JSON.parse(e.dataset.columns)])",
    )


def send(page, truth: dict[str, int], words: list[int] | None = None) -> dict[str, str]:
    """Answer ``truth`` on the open survey page (with ``words`` as the page's randomness if given) and
    send it; the fields posted."""
    posts: list = []

    def on_request(request):
        if request.method == "POST":
            posts.append(request)

    if words is not None:
        page.evaluate(SEEDED, words)
    tick_answers(page, truth)
    page.on("request", on_request)
    with page.expect_navigation():
        page.click("#submit-button")
    page.remove_listener("request", on_request)
    expect(page.locator("h1")).to_have_text("Your answers were sent")
    assert len(posts) == 1
    return dict(parse_qsl(posts[0].post_data, keep_blank_values=True))


def exact_multinomial_p(counts: np.ndarray, column: np.ndarray) -> float:
    """P(a count vector at most as likely as ``counts``) under ``column``: the exact goodness-of-fit test."""
    n = int(counts.sum())
    k = len(column)
    observed = multinomial.pmf(counts, n, column)
    total = 0.0
    for cuts in itertools.combinations(range(n + k - 1), k - 1):  # every count vector summing to n
        bounds = (-1, *cuts, n + k - 1)
        x = [bounds[i + 1] - bounds[i] - 1 for i in range(k)]
        p = multinomial.pmf(x, n, column)
        if p <= observed * (1 + 1e-9):
            total += p
    return min(1.0, total)


def all_identical_probability(columns: dict[str, list[float]], n: int) -> float:
    """P(n independent submissions send identical reports for every question) = Π_q Σ_r p_q(r)^n."""
    return float(np.prod([np.sum(np.array(column) ** n) for column in columns.values()]))


def open_respondent_page(page, base: str, slug: str, codes: dict[str, list[str]], i: int) -> None:
    """Respondent ``i`` opens the survey: with their own code, or (shared devices, by link) through the
    previous respondent's thank-you page, as people at one device do."""
    if slug in codes:
        page.goto(f"{base}/s/{slug}?code={codes[slug][i]}")
    elif i == 0:
        page.goto(f"{base}/s/{slug}")
    else:
        with page.expect_navigation():
            page.click("#next-respondent")
    expect(page.locator("#submit-button")).to_be_enabled()


def assert_nothing_kept(page, context) -> None:
    assert page.evaluate("localStorage.length") == 0
    assert page.evaluate("sessionStorage.length") == 0
    assert page.evaluate("indexedDB.databases().then(dbs => dbs.length)") == 0
    for cookie in context.cookies():
        assert cookie["name"] == "session"
        assert set(session_cookie_payload(cookie["value"])) <= {"csrf_token", "_fresh"}


def posted_reports(posts: list[dict[str, str]], key: str) -> list[int]:
    return [int(p[f"q_{key}"]) for p in posts]


@pytest.mark.parametrize("slug", ["lab-computer", "clinic-codes", "shared-codes"])
def test_twenty_respondents_in_one_browser_send_reports_as_the_column_says(live_server, context, slug):
    """Seeded: each report is exactly the inverse CDF of the words served, and the twenty follow the column."""
    _, base, codes = live_server
    page = context.new_page()
    rng = np.random.default_rng([SEED, list(SURVEYS).index(slug)])
    posts = []
    for i in range(RESPONDENTS):
        open_respondent_page(page, base, slug, codes, i)
        columns = randomized_columns(page)
        assert page.evaluate("typeof SurveyMemo") == "undefined"  # nothing to memoize with
        expect(page.locator("#keeps-nothing")).to_be_visible()
        words = [int(w) for w in rng.integers(0, 2**32, size=2 * len(columns), dtype=np.uint64)]
        posted = send(page, TRUTH, words)
        for j, (key, cols) in enumerate(columns):
            expected = inverse_cdf(cols[TRUTH[key]], words[2 * j], words[2 * j + 1])
            assert int(posted[f"q_{key}"]) == expected, f"respondent {i}, {key}: not a fresh draw from the words served"
        posts.append(posted)
        assert_nothing_kept(page, context)

    assert posted_reports(posts, "group") == [TRUTH["group"]] * RESPONDENTS  # asked directly: sent as given
    keys = [p["submission_key"] for p in posts]
    assert all(re.fullmatch(r"[0-9a-f]{32}", key) for key in keys) and len(set(keys)) == RESPONDENTS
    for key, cols in columns:
        column = np.array(cols[TRUTH[key]])
        counts = np.bincount(posted_reports(posts, key), minlength=len(column))
        assert counts[column == 0].sum() == 0, f"{key}: a report the design cannot send"
        p = exact_multinomial_p(counts, column)
        assert p > ALPHA, f"{key}: reports {counts.tolist()} for column {column.tolist()} (exact p = {p:.1e})"
    assert len({tuple(p[f"q_{key}"] for key, _ in columns) for p in posts}) > 1, "every respondent sent the same"


@pytest.mark.parametrize("slug", ["lab-computer", "clinic-codes"])
def test_with_the_browsers_own_randomness_the_reports_differ(live_server, context, slug):
    """Unseeded: twenty respondents' submissions are not all the same (by chance: 1.2e-10)."""
    _, base, codes = live_server
    page = context.new_page()
    codes = {s: c[RESPONDENTS:] for s, c in codes.items()}  # codes the seeded test left unused
    posts = []
    for i in range(RESPONDENTS):
        open_respondent_page(page, base, slug, codes, i)
        columns = dict(randomized_columns(page))
        posts.append(send(page, TRUTH))
    chance = all_identical_probability({k: c[TRUTH[k]] for k, c in columns.items()}, RESPONDENTS)
    assert chance < 2e-10  # 1.2e-10 for these columns
    reports = {tuple(p[f"q_{k}"] for k in columns) for p in posts}
    assert len(reports) > 1, f"all {RESPONDENTS} respondents sent {reports}"
    assert_nothing_kept(page, context)


def test_the_back_button_and_form_restoration_show_nothing_of_the_previous_person(live_server, context):
    """Three people at one computer: every page the history can reach holds no answer and no key."""
    _, base, codes = live_server
    page = context.new_page()
    keys = []
    for i in range(3):
        open_respondent_page(page, base, "lab-computer", codes, i)
        assert page.evaluate(NOTHING_ANSWERED) == {"checked": 0, "typed": 0, "reported": 0, "key": ""}
        keys.append(send(page, TRUTH)["submission_key"])
        expect(page.locator("#cleared-note")).to_be_visible()
    assert len(set(keys)) == 3
    # walk back through the whole history: only thank-you pages (and the blank start), never a filled form
    entries = page.evaluate("history.length")
    assert entries >= 3  # three thank-you pages (and the blank start, where the browser keeps it)
    for step in range(entries - 1):
        page.go_back(wait_until="load")
        assert page.evaluate(NOTHING_ANSWERED) == {"checked": 0, "typed": 0, "reported": 0, "key": ""}, (step, page.url)
        assert page.locator("#survey-form").count() == 0, f"a survey page is in the history: {page.url}"


def test_a_person_who_leaves_without_sending_can_clear_the_page(live_server, context):
    _, base, _ = live_server
    page = context.new_page()
    page.goto(f"{base}/s/lab-computer")
    tick_answers(page, TRUTH)
    page.click("#clear-answers")
    assert page.evaluate(NOTHING_ANSWERED) == {"checked": 0, "typed": 0, "reported": 0, "key": ""}


@pytest.mark.parametrize("slug", ["retry-shared", "retry-own"])
def test_a_lost_answer_keeps_the_page_and_a_retry_sends_the_same_body(live_server, context, slug):
    """Stored but the connection dropped, then a 503: the page stays, says sending again is safe, and
    every retry posts the same bytes (same key, same reports) until one is answered."""
    _, base, _ = live_server
    page = context.new_page()
    page.goto(f"{base}/s/{slug}")
    bodies: list[str] = []
    outcomes = iter(["stored, connection dropped", "503", "through"])

    def handle(route):
        if route.request.method != "POST":
            route.continue_()
            return
        bodies.append(route.request.post_data)
        outcome = next(outcomes)
        if outcome == "stored, connection dropped":
            route.fetch(max_redirects=0)  # the server stores it ...
            route.abort("connectionreset")  # ... and the answer never comes back
        elif outcome == "503":
            route.fulfill(status=503, headers={"Retry-After": "5"}, body="<h1>Down for a moment</h1>")
        else:
            route.continue_()

    page.route(f"{base}/s/{slug}", handle)
    tick_answers(page, TRUTH)
    page.click("#submit-button")
    status = page.locator("#form-status")
    expect(status).to_contain_text("Sending again is safe")
    expect(status).to_contain_text("will not be counted twice")
    expect(page.locator("#submit-button")).to_have_text("Send again")
    assert page.evaluate(NOTHING_ANSWERED)["checked"] == len(TRUTH)  # the answers are still on the page
    page.click("#submit-button")
    expect(status).to_contain_text("The server had a problem (error 503)")
    expect(status).to_contain_text("Sending again is safe")
    with page.expect_navigation():
        page.click("#submit-button")
    expect(page.locator("h1")).to_have_text("Your answers were sent")
    assert urlsplit(page.url).path == f"/s/{slug}/thanks"
    assert len(bodies) == 3 and bodies[0] == bodies[1] == bodies[2]
    key = dict(parse_qsl(bodies[0]))["submission_key"]
    assert re.fullmatch(r"[0-9a-f]{32}", key)
    # the next filling (going back on one's own device, or the next person) has a key of its own
    page.unroute(f"{base}/s/{slug}")
    if slug == "retry-own":
        page.go_back()
    else:
        with page.expect_navigation():
            page.click("#next-respondent")
    assert send(page, TRUTH)["submission_key"] != key


def test_the_page_goes_where_the_servers_answer_to_a_resend_leads(live_server, context):
    """A resend of a stored submission is answered with the thank-you page marked "already received"
    (``?again=1``): the page follows the server's redirect to that very address."""
    _, base, _ = live_server
    page = context.new_page()
    page.goto(f"{base}/s/retry-own")

    def handle(route):
        if route.request.method == "POST":
            route.fulfill(status=303, headers={"Location": f"{base}/s/retry-own/thanks?again=1"})
        else:
            route.continue_()

    page.route(f"{base}/s/retry-own", handle)
    tick_answers(page, TRUTH)
    with page.expect_navigation():
        page.click("#submit-button")
    assert page.url == f"{base}/s/retry-own/thanks?again=1"


def test_a_retry_with_a_changed_answer_draws_again_for_that_answer_only(live_server, context):
    """Within one filling each true answer is drawn once: a retry never sends a second, independent
    draw of an answer that did not change (the first may have arrived), and keeps the key."""
    _, base, _ = live_server
    page = context.new_page()
    page.goto(f"{base}/s/retry-shared")
    bodies: list[dict[str, str]] = []

    def handle(route):
        if route.request.method != "POST":
            route.continue_()
            return
        bodies.append(dict(parse_qsl(route.request.post_data)))
        if len(bodies) == 1:
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route(f"{base}/s/retry-shared", handle)
    tick_answers(page, TRUTH)
    page.click("#submit-button")
    expect(page.locator("#form-status")).to_contain_text("Sending again is safe")
    tick_answers(page, {"five": 1, "group": 0})  # two answers changed, one of them randomized
    with page.expect_navigation():
        page.click("#submit-button")
    first, retry = bodies
    assert retry["submission_key"] == first["submission_key"]
    assert (retry["q_coin"], retry["q_forced"]) == (first["q_coin"], first["q_forced"])
    assert retry["q_group"] == "0"


def test_a_key_already_in_the_page_is_the_one_sent_and_anything_else_is_replaced(live_server, context):
    """The server renders its key back into the page when it shows the form again after a refusal."""
    _, base, _ = live_server
    page = context.new_page()
    given = "0123456789abcdef" * 2
    for value, kept in ((given, True), ("not-a-key", False)):
        page.goto(f"{base}/s/own-device")
        page.evaluate("v => { document.getElementById('submission-key').value = v; }", value)
        sent = send(page, TRUTH)["submission_key"]
        assert (sent == value) is kept and re.fullmatch(r"[0-9a-f]{32}", sent)


def test_a_refusal_shows_the_servers_reason_and_keeps_the_page(live_server, context):
    app, base, _ = live_server
    page = context.new_page()
    page.goto(f"{base}/s/closes-meanwhile")
    tick_answers(page, TRUTH)
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == "closes-meanwhile"))
        survey.status = "closed"
        db.session.commit()
    page.click("#submit-button")
    expect(page.locator("#form-status")).to_contain_text("This survey is closed and no longer accepts answers.")
    expect(page.locator("#form-status")).to_contain_text("Nothing was sent or stored.")
    assert page.url == f"{base}/s/closes-meanwhile"
    assert page.evaluate(NOTHING_ANSWERED)["checked"] == len(TRUTH)


def test_an_ordinary_survey_by_link_stays_memoized(live_server, context):
    """SECURITY.md section 2 as before: one browser, one secret, the same reports every time."""
    _, base, _ = live_server
    page = context.new_page()
    posts = []
    for _ in range(5):
        page.goto(f"{base}/s/own-device")
        expect(page.locator("#memo-on")).to_be_visible()
        expect(page.locator("#keeps-nothing")).to_have_count(0)
        posts.append(send(page, TRUTH))
        assert page.locator("#next-respondent").count() == 0
    secret = page.evaluate(f"localStorage.getItem({STORAGE_KEY!r})")
    assert re.fullmatch(r"[0-9a-f]{64}", secret)
    page.goto(f"{base}/s/own-device")
    for key, cols in randomized_columns(page):
        expected = reference_report(secret, "own-device", key, TRUTH[key], cols[TRUTH[key]])
        assert posted_reports(posts, key) == [expected] * 5, key
    assert len({p["submission_key"] for p in posts}) == 5  # five fillings, five keys


def test_the_new_states_are_accessible_and_run_under_the_content_security_policy(live_server, browser):
    """The shared-device page (after a lost answer too), its thank-you page, and a privacy page seen without a code."""
    _, base, _ = live_server
    context = browser.new_context(bypass_csp=True)  # only so that axe itself can be injected
    page = context.new_page()
    blocked: list[str] = []
    page.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)

    def check() -> None:
        # (axe, once injected, is the one inline script a page may then hold)
        inline = "document.querySelectorAll('style, [style]').length + (typeof axe === 'undefined' ? "
        inline += "document.querySelectorAll('script:not([src])').length : 0)"
        assert page.evaluate(inline) == 0
        violations = axe_violations(page)
        assert not violations, violations

    page.route(
        f"{base}/s/lab-computer", lambda r: r.abort("connectionreset") if r.request.method == "POST" else r.continue_()
    )
    page.goto(f"{base}/s/lab-computer")
    check()
    tick_answers(page, TRUTH)
    page.click("#submit-button")
    expect(page.locator("#form-status")).to_contain_text("Sending again is safe")
    check()
    page.unroute(f"{base}/s/lab-computer")
    with page.expect_navigation():
        page.click("#submit-button")
    expect(page.locator("#next-respondent")).to_be_visible()
    check()
    page.goto(f"{base}/s/clinic-codes/privacy")
    page.click("#questions-part > summary")  # under a heading to open
    expect(page.locator("#questions-for-invitees")).to_be_visible()
    check()
    assert not blocked, blocked
    context.close()


def test_twenty_people_at_one_device_each_draw_afresh_and_find_nothing_of_the_one_before(live_server, context):
    """Twenty respondents, one after the other in ONE browser context, on a shared-device survey where
    some decline a question: each finds an empty page (no answer ticked, no decline, no key, nothing
    kept in the browser), each report is a fresh draw from the words served to that respondent (a
    declined question draws nothing and posts only the marker), and at the end no page the back
    button reaches holds a filled form."""
    _, base, codes = live_server
    page = context.new_page()
    rng = np.random.default_rng([SEED, 99])
    empty = {"checked": 0, "typed": 0, "reported": 0, "key": ""}
    posts = []
    for i in range(RESPONDENTS):
        open_respondent_page(page, base, "lab-declining", codes, i)
        assert page.evaluate(NOTHING_ANSWERED) == empty, f"respondent {i} found the page filled"
        assert_nothing_kept(page, context)
        declines = {"five"} if i % 4 == 0 else {"forced"} if i % 4 == 1 else set()
        columns = [(key, cols) for key, cols in randomized_columns(page) if key not in declines]
        words = [int(w) for w in rng.integers(0, 2**32, size=2 * len(columns), dtype=np.uint64)]
        page.evaluate(SEEDED, words)
        for key in declines:
            page.check(f"#{key}-decline")
        posted = send(page, {k: v for k, v in TRUTH.items() if k not in declines})
        for key in declines:
            assert posted[f"q_{key}"] == "declined", (i, key)
        for j, (key, cols) in enumerate(columns):
            expected = inverse_cdf(cols[TRUTH[key]], words[2 * j], words[2 * j + 1])
            assert int(posted[f"q_{key}"]) == expected, f"respondent {i}, {key}: not a fresh draw from the words served"
        posts.append(posted)
        expect(page.locator("#cleared-note")).to_be_visible()
        assert_nothing_kept(page, context)
    assert len({p["submission_key"] for p in posts}) == RESPONDENTS
    assert len({tuple(p[f"q_{k}"] for k in ("coin", "five", "forced")) for p in posts}) > 1
    entries = page.evaluate("history.length")
    assert entries >= RESPONDENTS
    for step in range(entries - 1):
        page.go_back(wait_until="load")
        assert page.evaluate(NOTHING_ANSWERED) == empty, (step, page.url)
        assert page.locator("#survey-form").count() == 0, f"a survey page is in the history: {page.url}"
