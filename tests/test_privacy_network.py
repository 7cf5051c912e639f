"""No request the respondent's page makes carries the true answer to a randomized question.

A real browser (Playwright driving Debian's Chromium) answers two surveys that cover every design
(coin flip, Warner, unrelated question, GRR on yes/no and on five options, forced response, a
one-sided coin flip, a randomized number typed with decimals and sometimes outside its range) and a
direct question, one by open link and one by single-use invitation code.
Each submission comes from a new browser (by link: with a new secret, so its memoized reports are
fresh draws; by code: no memoization at all) with true answers picked at random, and every request
is captured: URL, headers and body. The tests then check that only the CSRF token, the invitation
code, the filling's submission key and the reported values ``q_<key>`` are posted; that nothing the
page sends names or carries a true answer, a typed number or the browser's secret; that each memoized report (by
link) is exactly the one the browser's secret gives (an HMAC reference computed here); that
the reports lie in each question's domain and, over all submissions, equal the truth only as often
as the matrix diagonal says (an exact test that an honest page fails with probability below 1e-10);
that the database holds exactly what was posted; and that no stored column and no request-log line
holds an invitation code.

The privacy page (``/s/<slug>/privacy``) is checked here too, over HTTP.
"""

from __future__ import annotations

import json
import logging
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pytest
from scipy.stats import binomtest
from sqlalchemy import MetaData, func, select

from survey.domain.models import DECLINED, Answer, HeldSubmission, Question, RespondentCode, Submission, Survey
from survey.domain.responses.codes import generate_codes
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db
from survey.web.respond.page import survey_page

from .live import live_site, log_lines
from .pages import STORAGE_KEY, reference_number_report, reference_report, tick_answers
from .surveys import EVERY_DESIGN_QUESTIONS, SMALL_SPEC, add_survey

SUBMISSIONS_PER_MODE = 30

QUESTIONS = EVERY_DESIGN_QUESTIONS

#: What the respondents type for the randomized number: decimals (so that no report code, a whole
#: number, can be mistaken for one), inside and outside the range (the browser clamps).
TYPED = ["4.75", "12.5", "29.125", "0.625", "31.5", "-2.25", "17.375"]
MODES = {"link": "network-link", "invitation": "network-codes"}


@dataclass
class Sent:
    """One submission: what the respondent answered and everything their browser sent."""

    mode: str
    truth: dict[str, int]
    #: randomized number question key → the number typed
    typed: dict[str, str]
    code: str | None
    secret: str | None
    #: Which note the page showed about repeats: "memo-on", "memo-off" or "keeps-nothing".
    note: str
    session_storage: int
    requests: list[dict] = field(default_factory=list)
    #: The thank-you page's responses: (resource type, status), in the order they came.
    thanks: list[tuple[str, int]] = field(default_factory=list)

    @property
    def posts(self) -> list[dict]:
        return [r for r in self.requests if r["method"] == "POST"]

    @property
    def posted(self) -> dict[str, str]:
        return dict(parse_qsl(self.posts[0]["post_data"], keep_blank_values=True))


@dataclass
class Run:
    app: object
    base: str
    sent: list[Sent]
    options: dict[str, int]  # question key → number of options
    matrices: dict[str, np.ndarray]  # randomized question key → its matrix
    numbers: dict[str, object]  # randomized number's key → its number mechanism
    log: list[str]
    unused_codes: list[str]


@pytest.fixture(scope="module")
def run(tmp_path_factory, browser):
    made: dict = {}

    def setup(session):
        for mode, slug in MODES.items():
            spec = {"title": f"Every design ({mode})", "slug": slug, "access": mode, "questions": QUESTIONS}
            survey = create_survey_from_spec(session, spec)
            if mode == "invitation":
                session.flush()
                made["codes"] = generate_codes(session, survey, SUBMISSIONS_PER_MODE + 5)
        survey = session.scalar(select(Survey).where(Survey.slug == MODES["link"]))
        made["options"] = {q.key: len(q.options) for q in survey.questions if q.kind_entry.has_options}
        made["matrices"] = {
            q.key: q.mechanism().matrix for q in survey.randomized_questions if q.kind_entry.has_options
        }
        made["numbers"] = {q.key: q.mechanism() for q in survey.questions if q.kind_entry.randomized_number}

    with live_site(tmp_path_factory.mktemp("network"), "network-tests", setup) as (app, base):
        codes, options = made["codes"], made["options"]
        picker = random.Random(20260)
        sent: list[Sent] = []
        # every line the request log writes while the browsers answer, as it would reach a log file
        with log_lines("werkzeug", logging.INFO) as lines:
            for mode, slug in MODES.items():
                for i in range(SUBMISSIONS_PER_MODE):
                    truth = {key: picker.randrange(k) for key, k in options.items()}
                    typed = {key: picker.choice(TYPED) for key in made["numbers"]}
                    code = codes[i] if mode == "invitation" else None
                    sent.append(submit(browser, base, slug, truth, typed, code, mode))
        yield Run(app, base, sent, options, made["matrices"], made["numbers"], lines, codes[SUBMISSIONS_PER_MODE:])


def submit(
    browser, base: str, slug: str, truth: dict[str, int], typed: dict[str, str], code: str | None, mode: str
) -> Sent:
    """A new browser opens the survey, ticks ``truth``, sends it; every request it made is kept."""
    context = browser.new_context()
    page = context.new_page()
    captured: list = []
    context.on("request", lambda request: captured.append(request))
    thanks: list = []
    context.on("response", lambda r: thanks.append(r) if r.url.split("?")[0] == f"{base}/s/{slug}/thanks" else None)
    page.goto(f"{base}/s/{slug}" + (f"?code={code}" if code else ""))
    # exactly one note about repeats is visible (the script picks memo-on or memo-off); wait for it
    note = page.locator("#memo-on, #memo-off, #keeps-nothing").locator("visible=true")
    note.wait_for()
    note = note.get_attribute("id")
    tick_answers(page, truth)
    for key, number in typed.items():
        page.fill(f"#{key}-number", number)
    with page.expect_navigation():
        page.click("#submit-button")
    assert page.url == f"{base}/s/{slug}/thanks", page.text_content("main")
    secret = page.evaluate(f"localStorage.getItem({STORAGE_KEY!r})")
    session_storage = page.evaluate("sessionStorage.length")
    requests = [
        {"url": r.url, "method": r.method, "headers": r.all_headers(), "post_data": r.post_data or ""} for r in captured
    ]
    answered = [(r.request.resource_type, r.status) for r in thanks]
    context.close()
    return Sent(mode, truth, typed, code, secret, note, session_storage, requests, answered)


def test_the_pages_fetch_of_its_redirect_is_answered_with_nothing(run):
    """The page follows its post's 303 with fetch() only to learn that the answers arrived: that
    request is answered 204, no content (nothing is made for it), and the page then opens the
    thank-you page itself, which shows what was sent."""
    for s in run.sent:
        assert s.thanks == [("fetch", 204), ("document", 200)]


def carried(request: dict) -> str:
    """Everything a request carries, as text: URL, every header name and value, the body."""
    headers = "\n".join(f"{name}: {value}" for name, value in request["headers"].items())
    return "\n".join([request["url"], headers, request["post_data"]])


def test_each_browser_memoized_with_a_secret_of_its_own(run):
    """By link, each browser memoizes with its own secret; by code (one submission per code) nothing
    is memoized and nothing kept (SECURITY.md, section 2)."""
    assert len(run.sent) == 2 * SUBMISSIONS_PER_MODE
    by_link = [s for s in run.sent if s.mode == "link"]
    assert all(s.note == "memo-on" for s in by_link)  # 127.0.0.1 is a secure context: memoization is on
    secrets = [s.secret for s in by_link]
    assert all(re.fullmatch(r"[0-9a-f]{64}", secret) for secret in secrets)
    assert len(set(secrets)) == len(secrets)
    by_code = [s for s in run.sent if s.mode == "invitation"]
    assert all(s.note == "keeps-nothing" and s.secret is None for s in by_code)
    assert all(s.session_storage == 0 for s in run.sent)


def test_no_request_carries_a_true_answer_or_the_secret(run):
    for s in run.sent:
        assert s.requests, "nothing was captured"
        for request in s.requests:
            assert request["url"].startswith(run.base + "/"), f"a request left the site: {request['url']}"
            text = carried(request)
            assert "truth" not in text.lower(), text
            assert s.secret is None or s.secret not in text.lower()
            assert STORAGE_KEY not in text
            # a typed number leaves the browser nowhere: not in the address, not in a header other than
            # the cookie (a random session token), not in any posted value but the random CSRF token
            for number in s.typed.values():
                assert number not in request["url"]
                assert not any(number in v for h, v in request["headers"].items() if h != "cookie"), request
                posted = parse_qsl(request["post_data"], keep_blank_values=True)
                assert not any(number in value for name, value in posted if name != "csrf_token"), posted


def test_only_the_token_the_code_and_reported_values_are_posted(run):
    expected_fields = {"csrf_token", "submission_key"} | {f"q_{q['key']}" for q in QUESTIONS}
    keys = [s.posted["submission_key"] for s in run.sent]
    assert all(re.fullmatch(r"[0-9a-f]{32}", key) for key in keys) and len(set(keys)) == len(keys)
    for s in run.sent:
        assert len(s.posts) == 1
        post = s.posts[0]
        slug = MODES[s.mode]
        assert post["url"] == f"{run.base}/s/{slug}"
        assert post["headers"]["content-type"] == "application/x-www-form-urlencoded"
        pairs = parse_qsl(post["post_data"], keep_blank_values=True)
        names = [name for name, _ in pairs]
        assert len(names) == len(set(names)), f"a field was sent twice: {names}"
        if s.mode == "invitation":
            assert set(names) == expected_fields | {"invitation"}
            assert s.posted["invitation"] == s.code
        else:
            assert set(names) == expected_fields
        for key, k in run.options.items():
            value = s.posted[f"q_{key}"]
            assert value.isdigit() and 0 <= int(value) < k, f"{key}: {value!r} is outside its options"
        for key, mechanism in run.numbers.items():  # a code of its mechanism's grid, never the number typed
            value = s.posted[f"q_{key}"]
            assert re.fullmatch(r"-?[0-9]+", value) and mechanism.reports.contains(int(value)), (key, value)
        assert int(s.posted["q_direct"]) == s.truth["direct"]  # asked directly: sent as given
        # the only query string the page ever sends is the invitation code it was opened with
        for request in s.requests:
            query = urlsplit(request["url"]).query
            opened_with = s.mode == "invitation" and request["url"] == f"{run.base}/s/{slug}?code={s.code}"
            assert not query or opened_with, request["url"]
            assert request["method"] == "GET" or request is post


def test_each_report_is_the_one_the_browsers_secret_gives(run):
    """By link, every report, of every question and browser, is the HMAC reference's for that
    browser's secret.

    The secrets are fresh, but given them each report is fixed: a page that sent a true answer, a
    draw of its own or another question's report fails here on any run (that reports so made follow
    each column is tests/test_browser.py's ``test_memoized_reports_follow_each_matrix_column``). By
    code nothing is memoized: each report is a fresh draw (tests/test_shared_devices_browser.py
    checks those against a seeded reference).
    """
    by_link = [s for s in run.sent if s.mode == "link"]
    assert len(by_link) == SUBMISSIONS_PER_MODE
    for s in by_link:
        assert s.note == "memo-on"
        slug = MODES[s.mode]
        for key, matrix in run.matrices.items():
            expected = reference_report(s.secret, slug, key, s.truth[key], matrix[:, s.truth[key]].tolist())
            assert int(s.posted[f"q_{key}"]) == expected, f"{key}: {s.posted[f'q_{key}']} is not the memoized report"
        for key, mechanism in run.numbers.items():
            expected = reference_number_report(s.secret, slug, key, float(s.typed[key]), mechanism)
            assert int(s.posted[f"q_{key}"]) == expected, f"{key}: {s.posted[f'q_{key}']} is not the memoized code"


#: The chance that test_reports_equal_the_truth_only_as_often_as_the_design_says fails on an honest page:
#: each question's exact test gets a seventh of it (a union bound). See tests/test_browser.py's FALSE_ALARM.
FALSE_ALARM = 1e-10


def poisson_binomial_p_value(successes: int, probabilities: list[float]) -> float:
    """The exact two-sided p-value of ``successes`` among independent trials with these chances: the
    total probability of every count no likelier than the one seen (the rule scipy's binomtest uses).
    Under the hypothesis it is at most a with probability at most a."""
    pmf = np.array([1.0])
    for p in probabilities:
        pmf = np.convolve(pmf, [1 - p, p])
    return float(min(1.0, pmf[pmf <= pmf[successes] * (1 + 1e-7)].sum()))


def test_the_exact_test_is_the_binomial_one_when_every_chance_is_equal():
    for successes, n, p in ((45, 60, 0.75), (60, 60, 0.8176), (20, 60, 0.6), (0, 30, 0.1), (3, 30, 0.1)):
        assert poisson_binomial_p_value(successes, [p] * n) == pytest.approx(binomtest(successes, n, p).pvalue)


def test_reports_equal_the_truth_only_as_often_as_the_design_says(run):
    """Per randomized question, over all submissions: how many reports equal the true answer.

    Given the true answers used, a report equals the truth with probability Q[t, t], so the number
    of matches has the Poisson-binomial distribution of those chances; the test is exact, at level
    FALSE_ALARM / 7 per question, so an honest page fails it with probability at most FALSE_ALARM
    (1e-10) per run. (Before: a binomial test at p > 1e-5 per question, and "not every report is the
    truth", which an honest page fails with probability ∏ Q[t, t], 5.6e-6 for the GRR yes/no
    question; a page sending the truth is now caught by the reference check above on every run.)
    """
    n = len(run.sent)
    alpha = FALSE_ALARM / len(run.matrices)
    for key, matrix in run.matrices.items():
        truths = [s.truth[key] for s in run.sent]
        reports = [int(s.posted[f"q_{key}"]) for s in run.sent]
        matches = sum(t == r for t, r in zip(truths, reports, strict=True))
        chances = [float(matrix[t, t]) for t in truths]
        p = poisson_binomial_p_value(matches, chances)
        assert p > alpha, f"{key}: {matches}/{n} reports were the truth, expected {np.mean(chances):.3f} (p = {p:.1e})"
        for t, r in zip(truths, reports, strict=True):
            assert matrix[r, t] > 0, f"{key}: reported {r} for true answer {t}, which the design cannot do"


def sorted_items(answers: dict[str, str]) -> list[tuple[str, str]]:
    return sorted(answers.items())


def test_the_database_holds_exactly_what_was_posted(run):
    with run.app.app_context():
        for mode, slug in MODES.items():
            survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
            keys = {q.id: q.key for q in survey.questions}
            submissions = db.session.scalars(
                select(Submission).where(Submission.survey_id == survey.id).order_by(Submission.id)
            ).all()
            stored = []
            for submission in submissions:
                answers = db.session.scalars(select(Answer).where(Answer.submission_id == submission.id))
                stored.append({f"q_{keys[a.question_id]}": str(a.value) for a in answers})
            posted = [
                {name: value for name, value in s.posted.items() if name.startswith("q_")}
                for s in run.sent
                if s.mode == mode
            ]
            if mode == "invitation":
                # coded submissions are released in batches, each in a random order (survey/domain/responses/mixing.py):
                # the same submissions, in no order that follows the codes'
                assert db.session.scalar(select(func.count()).select_from(HeldSubmission)) == 0
                assert sorted(map(sorted_items, stored)) == sorted(map(sorted_items, posted))
            else:
                assert stored == posted
        # a submission is its survey and a date; an invitation is its code and whether it was used (or revoked)
        # import_id: set only on rows a researcher imported (their own upload), null on every web submission
        assert {c.key for c in Submission.__table__.columns} == {"id", "survey_id", "submitted_on", "import_id"}
        assert all(s.import_id is None for s in db.session.scalars(select(Submission)))
        assert {c.key for c in Answer.__table__.columns} == {"id", "submission_id", "question_id", "value"}
        assert {c.key for c in RespondentCode.__table__.columns} == {"id", "survey_id", "code", "used", "revoked"}


def test_invitation_codes_are_used_up_and_stored_nowhere_else(run):
    used = [s.code for s in run.sent if s.code]
    assert len(used) == SUBMISSIONS_PER_MODE
    with run.app.app_context():
        rows = dict(db.session.execute(select(RespondentCode.code, RespondentCode.used)).all())
        assert all(rows[code] for code in used)
        assert not any(rows[code] for code in run.unused_codes)
        tables = MetaData()
        tables.reflect(db.engine)  # every table the database has, whether or not a model maps it
        assert {"submissions", "answers", "invitations"} <= set(tables.tables)
        found = []
        for table in tables.sorted_tables:
            for row in db.session.execute(table.select()).mappings():
                for column, value in row.items():
                    if table.name == "invitations" and column == "code":
                        continue  # where the codes live, and only there
                    text = value if isinstance(value, str) else json.dumps(value, default=str)
                    found += [(table.name, column) for code in used + run.unused_codes if code in text]
        assert not found, f"invitation codes found in {sorted(set(found))}"


def test_the_request_log_keeps_no_address_no_time_and_no_invitation_code(run):
    """survey/platform/logs.py drops the address, the time and the query string (where a code travels)."""
    assert any("POST /s/network-codes " in line for line in run.log), "the request log was not captured"
    assert any("GET /s/network-codes " in line for line in run.log)  # the coded link, logged without its code
    codes = [s.code for s in run.sent if s.code]
    for line in run.log:
        assert "127.0.0.1" not in line and not re.search(r"\d\d:\d\d:\d\d", line), line
        assert "code=" not in line and not any(code in line for code in codes), line


# ---- the privacy page, over HTTP ----


def test_privacy_page_says_what_is_and_is_not_protected(app, client):
    slug = add_survey(app, SMALL_SPEC, owner=None)
    response = client.get(f"/s/{slug}/privacy")
    assert response.status_code == 200
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    html = response.get_data(as_text=True)
    with app.app_context():
        page = survey_page(db.session.scalar(select(Survey).where(Survey.slug == slug)))
        sentence = page.total_deniability
        total = page.total_epsilon
        per_question = [(q.question.text, q.epsilon) for q in page.randomized]
    words = " ".join(re.sub(r"<[^>]+>", "", html).split())
    assert f"ε = {total}" in words and sentence in words
    for text, epsilon in per_question:
        assert text in words and f"ε = {epsilon}" in words
    assert "Age group?" in html and "Asked directly" in html  # the direct question, named as not protected
    for words in (
        "If you answer more than once",
        "another browser or another device",
        "clearing this site",
        "IP address",
        "time of day",
        "open to anyone with its link",
        "What this page cannot promise",
    ):
        assert words in html, words
    assert "<script" not in html and "style=" not in html and "<style" not in html


def test_privacy_page_of_a_survey_by_invitation_names_none_of_its_questions_without_a_code(app, client):
    """It used to name them by number ("Question 1") with their keys in its markup; now it shows nothing of
    them without a valid code (tests/test_respondent_privacy.py tries every channel)."""
    slug = add_survey(app, SMALL_SPEC, access="invitation", owner=None)
    html = client.get(f"/s/{slug}/privacy").get_data(as_text=True)  # no code is needed to read it
    assert "Question 1" not in html and "data-question" not in html
    for q in SMALL_SPEC["questions"]:
        assert q["text"] not in html and f'"{q["key"]}"' not in html
    assert "nothing links the code to your answers" in html and "marked as used" in html


def test_privacy_page_follows_the_survey_page_404_rules(app, client):
    assert client.get("/s/no-such-survey/privacy").status_code == 404
    draft = add_survey(app, {**SMALL_SPEC, "slug": "a-draft", "status": "draft"}, owner=None)
    assert client.get(f"/s/{draft}/privacy").status_code == 404
    closed = add_survey(app, {**SMALL_SPEC, "slug": "a-closed-one", "status": "closed"}, owner=None)
    assert client.get(f"/s/{closed}/privacy").status_code == 200


def test_every_respondent_page_links_to_the_privacy_page(app, client):
    link = add_survey(app, SMALL_SPEC, owner=None)
    by_code = add_survey(app, {**SMALL_SPEC, "slug": "by-code"}, access="invitation", owner=None)
    closed = add_survey(app, {**SMALL_SPEC, "slug": "closed-one", "status": "closed"}, owner=None)
    pages = [
        f"/s/{link}",
        f"/s/{link}/thanks",
        f"/s/{by_code}",  # the "this survey is by invitation" page
        f"/s/{by_code}?code=WRONGCODE",
        f"/s/{closed}",
    ]
    for path in pages:
        slug = path.split("/")[2].split("?")[0]
        html = client.get(path).get_data(as_text=True)
        assert f'href="/s/{slug}/privacy"' in html, path


# -- declining: what a declined question sends ----------------------------------------------------

#: Questions that may be declined, of every way a page answers them: a matrix drawn in the browser, a
#: randomized number, a combined question (crosswise: nothing drawn); and one that may not be.
DECLINING_QUESTIONS = [
    {**QUESTIONS[1], "decline": True},  # warner
    {**next(q for q in QUESTIONS if q["key"] == "drinks"), "decline": True},
    {
        "key": "cross",
        "kind": "yes_no",
        "text": "Did you cheat on the exam?",
        "decline": True,
        "privacy": {
            "design": "crosswise",
            "unrelated_yes_rate": 0.25,
            "unrelated_question": "Is your mother's birthday in January, February or March?",
        },
    },
    QUESTIONS[0],  # coin: may not be declined
]
DECLINABLE = ["warner", "drinks", "cross"]
DECLINING_ROUNDS = 8


def test_a_declined_question_posts_only_the_marker(tmp_path, browser):
    """Each browser declines a seeded choice of the questions that allow it (ticking an answer first,
    then "Prefer not to say", which clears it) and answers the rest: a declined question posts
    exactly ``declined``, nothing drawn and nothing of the answer ticked before; the others post
    reports; the database holds a decline for each declined question and nothing else of it."""

    def setup(session):
        for mode, slug in (("link", "declining-link"), ("invitation", "declining-codes")):
            spec = {"title": f"Declining ({mode})", "slug": slug, "access": mode, "questions": DECLINING_QUESTIONS}
            survey = create_survey_from_spec(session, spec)
            if mode == "invitation":
                session.flush()
                made["codes"] = generate_codes(session, survey, DECLINING_ROUNDS)

    made: dict = {}
    picker = random.Random(4711)
    posted: list[tuple[str, set[str], dict[str, str]]] = []
    with live_site(tmp_path, "declining-tests", setup) as (app, base):
        for i in range(2 * DECLINING_ROUNDS):
            slug, code = ("declining-link", None) if i % 2 == 0 else ("declining-codes", made["codes"][i // 2])
            declined = {key for key in DECLINABLE if picker.random() < 0.5}
            context = browser.new_context()
            page = context.new_page()
            captured: list = []
            context.on("request", lambda request, captured=captured: captured.append(request))
            page.goto(f"{base}/s/{slug}" + (f"?code={code}" if code else ""))
            page.locator("#submit-button:not([disabled])").wait_for()
            page.check("#coin-1")
            for key in ("warner", "cross"):
                page.check(f"#{key}-1")  # an answer first: declining must clear it
            page.fill("#drinks-number", "12.5")
            for key in declined:
                page.check(f"#{key}-decline")
            for key in declined - {"drinks"}:
                assert not page.is_checked(f"#{key}-1")
            if "drinks" in declined:
                assert page.input_value("#drinks-number") == ""
            with page.expect_navigation():
                page.click("#submit-button")
            assert page.url == f"{base}/s/{slug}/thanks", page.text_content("main")
            posts = [r.post_data or "" for r in captured if r.method == "POST"]
            context.close()
            assert len(posts) == 1
            pairs = parse_qsl(posts[0], keep_blank_values=True)
            names = [name for name, _ in pairs]
            assert len(names) == len(set(names)), names
            posted.append((slug, declined, dict(pairs)))
        with app.app_context():
            rows = db.session.execute(
                select(Question.key, Answer.value).join(Answer, Answer.question_id == Question.id)
            ).all()
            held = db.session.scalars(select(HeldSubmission.answers)).all()
            ids = {q.id: q.key for q in db.session.scalars(select(Question))}
    assert {slug for slug, _, _ in posted} == {"declining-link", "declining-codes"}
    assert any(declined for _, declined, _ in posted) and any(set(DECLINABLE) - d for _, d, _ in posted)
    for _slug, declined, fields in posted:
        for key in DECLINABLE:
            value = fields[f"q_{key}"]
            if key in declined:
                assert value == "declined", (key, value)
            else:
                assert re.fullmatch(r"-?[0-9]+", value), (key, value)
        assert re.fullmatch(r"[01]", fields["q_coin"])
        assert "12.5" not in "&".join(f"{n}={v}" for n, v in fields.items() if n != "csrf_token")
    stored_values = [(key, value) for key, value in rows] + [(ids[q], v) for answers in held for q, v in answers]
    declines = Counter(key for key, value in stored_values if value == DECLINED)
    assert declines == Counter(key for _, declined, _ in posted for key in declined)
    assert not any(key == "coin" and value == DECLINED for key, value in stored_values)
