"""The respondent's routes over HTTP: the page, the form post, the JSON API, and every way to get it wrong."""

import json
import re

import pytest
from sqlalchemy import func, select

from survey.domain.models import Answer, Submission, Survey
from survey.platform.extensions import db

GOOD = {"drugs": 1, "mirror": 0, "often": 3, "age": 1}


def rows(app) -> tuple[int, int]:
    with app.app_context():
        return (
            db.session.scalar(select(func.count()).select_from(Submission)),
            db.session.scalar(select(func.count()).select_from(Answer)),
        )


def post_json(client, body, slug="small-test", **kwargs):
    return client.post(f"/api/surveys/{slug}/responses", json=body, **kwargs)


def test_page_explains_each_question(client, small_survey):
    response = client.get("/s/small-test")
    assert response.status_code == 200
    html = response.get_data(as_text=True)
    assert "<fieldset" in html and "<legend>" in html
    # ε of each randomized question, the total, and the deniability bound in words
    words = " ".join(re.sub(r"<[^>]+>", "", html).split())
    assert "ε = 1.10" in words and "ε = 1.00" in words
    assert "ε = 3.20" in words  # ln 3 + ln 3 + 1
    # hidden by chance first, then the bound as odds: e^ε = 3 for ln 3 (the figures: tests/test_promises.py)
    assert "Hidden by chance: what is sent favours no answer more than 3 to 1." in words
    assert "Question 4 is not protected." in words and "Not protected" in words
    assert "This survey needs JavaScript" in html  # the noscript explanation
    # true answers have no name; only the reported fields (and direct answers) do
    names = set(re.findall(r'<input[^>]* name="([^"]+)"', html))
    assert names == {"csrf_token", "submission_key", "q_drugs", "q_mirror", "q_often", "q_age"}
    for key in ("drugs", "mirror", "often"):
        assert re.search(rf'<input type="hidden" name="q_{key}" value="" data-reported-for="{key}" disabled>', html)
    # the page carries the matrix columns the browser samples from
    columns = re.search(r'id="question-drugs"[^>]*data-columns="([^"]+)"', html).group(1)
    assert json.loads(columns.replace("&#34;", '"')) == [[0.75, 0.25], [0.25, 0.75]]
    assert "<script>" not in html and "onclick" not in html  # no inline scripts
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]


def test_json_submission_is_stored(app, client, small_survey):
    response = post_json(client, {"answers": GOOD})
    assert response.status_code == 201
    assert response.json["status"] == "stored"
    assert rows(app) == (1, 4)
    with app.app_context():
        stored = {a.question_id: a.value for a in db.session.scalars(select(Answer))}
        survey = db.session.scalar(select(Survey))
        assert {q.key: stored[q.id] for q in survey.questions} == GOOD


def test_optional_question_may_be_skipped(app, client, small_survey):
    answers = {k: v for k, v in GOOD.items() if k != "age"}
    assert post_json(client, {"answers": answers}).status_code == 201
    assert rows(app) == (1, 3)


@pytest.mark.parametrize(
    "body, status, message",
    [
        ({"answers": {**GOOD, "unknown": 1}}, 400, "unknown question 'unknown'"),
        ({"answers": {**GOOD, "drugs": 2}}, 400, "question 'drugs': 2 is not one of its option codes 0 to 1"),
        ({"answers": {**GOOD, "often": -1}}, 400, "question 'often': -1 is not one of its option codes"),
        ({"answers": {**GOOD, "often": 1.5}}, 400, "question 'often': the answer must be an option code"),
        ({"answers": {**GOOD, "drugs": True}}, 400, "not True"),
        ({"answers": {**GOOD, "drugs": [1]}}, 400, "must be an option code"),
        ({"answers": {**GOOD, "drugs": {"v": 1}}}, 400, "must be an option code"),
        ({"answers": {k: v for k, v in GOOD.items() if k != "mirror"}}, 400, "question 'mirror' is required"),
        ({"answers": {}}, 400, "is required"),
        ({"answers": [1, 0, 3]}, 400, "answers must be an object"),
        ({"answers": GOOD, "extra": 1}, 400, 'the field "answers"'),
        ({"responses": GOOD}, 400, 'the field "answers"'),
        ([GOOD], 400, 'the field "answers"'),
        ("yes", 400, 'the field "answers"'),
    ],
)
def test_malformed_json_is_refused_and_writes_nothing(app, client, small_survey, body, status, message):
    response = post_json(client, body)
    assert response.status_code == status
    assert message in response.json["error"]
    assert rows(app) == (0, 0)


@pytest.mark.parametrize(
    "data, content_type, status, message",
    [
        (b'{"answers": {"drugs": 1, "drugs": 0, "mirror": 0, "often": 1}}', "application/json", 400, "appears twice"),
        (b'{"answers": {"drugs": 1,', "application/json", 400, "not valid JSON"),
        (b'{"answers": {"drugs": "\xff"}}', "application/json", 400, "not valid UTF-8"),
        (b"", "application/json", 400, "not valid JSON"),
        (b"answers=1", "application/x-www-form-urlencoded", 415, "Content-Type: application/json"),
        (b'{"answers": {}}', "text/plain", 415, "Content-Type: application/json"),
    ],
)
def test_malformed_bodies_are_refused(app, client, small_survey, data, content_type, status, message):
    response = client.post("/api/surveys/small-test/responses", data=data, content_type=content_type)
    assert response.status_code == status
    assert message in response.json["error"]
    assert rows(app) == (0, 0)


def test_oversized_body_is_refused(app, client, small_survey):
    padding = "x" * (200 * 1024)
    response = post_json(client, {"answers": {**GOOD, "pad": padding}})
    assert response.status_code == 413
    assert "too large" in response.json["error"]
    assert rows(app) == (0, 0)


def test_cross_site_origin_is_refused(app, client, small_survey):
    response = post_json(client, {"answers": GOOD}, headers={"Origin": "https://evil.example"})
    assert response.status_code == 403
    assert rows(app) == (0, 0)
    assert post_json(client, {"answers": GOOD}, headers={"Origin": "http://localhost"}).status_code == 201


def test_unknown_closed_and_draft_surveys(app, client, small_survey):
    assert post_json(client, {"answers": GOOD}, slug="nope").status_code == 404
    assert client.get("/s/nope").status_code == 404
    with app.app_context():
        survey = db.session.scalar(select(Survey))
        survey.status = "closed"
        db.session.commit()
    closed = post_json(client, {"answers": GOOD})
    assert closed.status_code == 409 and "closed" in closed.json["error"]
    page = client.get("/s/small-test")
    assert page.status_code == 200 and "This survey is closed" in page.get_data(as_text=True)
    form = client.post("/s/small-test", data={f"q_{k}": v for k, v in GOOD.items()})
    assert form.status_code == 409 and "closed" in form.get_data(as_text=True)
    with app.app_context():
        db.session.scalar(select(Survey)).status = "draft"
        db.session.commit()
    assert client.get("/s/small-test").status_code == 404
    assert rows(app) == (0, 0)


def _survey(app, **fields) -> str:
    from survey.domain.surveys.specs import create_survey_from_spec

    from .surveys import SMALL_SPEC

    with app.app_context():
        survey = create_survey_from_spec(db.session, {**SMALL_SPEC, **fields})
        db.session.commit()
        return survey.slug


def _words(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", "", html).split())


def test_who_is_asking_is_shown_on_the_survey_privacy_and_thank_you_pages(app, client):
    slug = _survey(
        app,
        run_by="Health <b>Study</b>",
        contact="+44 (0)20 7946 0000",
        ethics_statement="Approved by the Example Ethics Board (EB-14).\nTaking part is voluntary.",
    )
    for path in (f"/s/{slug}", f"/s/{slug}/privacy", f"/s/{slug}/thanks"):
        html = client.get(path).get_data(as_text=True)
        assert "Health &lt;b&gt;Study&lt;/b&gt;" in html, path  # the organizer's words, as text
        assert '<a href="tel:+442079460000">+44 (0)20 7946 0000</a>' in html, path
        assert "Approved by the Example Ethics Board (EB-14).\nTaking part is voluntary." in html, path
    survey_page = client.get(f"/s/{slug}").get_data(as_text=True)
    assert 'href="#consent"' in survey_page  # the statement in full sits by the button that sends


@pytest.mark.parametrize("state", ["closed", "not yet open", "by invitation"])
def test_who_is_asking_is_shown_where_a_survey_refuses_too(app, client, state):
    """A respondent turned away (closed, not yet open, no code) can still see who asks and reach them."""
    import datetime as dt

    slug = _survey(app, run_by="Health Study", contact="study@example.org", ethics_statement="Voluntary.")
    with app.app_context():
        survey = db.session.scalar(select(Survey).filter_by(slug=slug))
        if state == "closed":
            survey.status = "closed"
        elif state == "not yet open":
            survey.opens_on = dt.date.today() + dt.timedelta(days=3)
        else:
            survey.access = "invitation"
        db.session.commit()
    html = client.get(f"/s/{slug}").get_data(as_text=True)
    assert 'name="answers' not in html and "<fieldset" not in html  # refused: no questions shown
    assert '<strong id="run-by">Health Study</strong>' in html
    assert '<a href="mailto:study@example.org">study@example.org</a>' in html
    assert f'href="/s/{slug}/privacy#who-is-asking" id="ethics-link"' in html


def test_the_demo_introduction_counts_its_own_questions_in_each_language():
    from survey.domain.surveys.demo import DEMO_SPEC, count_in_words

    count = len(DEMO_SPEC["questions"])
    assert DEMO_SPEC["introduction"].split()[0].lower() == count_in_words(count) != str(count)
    for language in ("es", "ar"):
        first = DEMO_SPEC["translations"][language]["introduction"].split()[0].lower()
        assert first == count_in_words(count, language) != str(count), language
    # the words themselves, against a count written out here
    assert [count_in_words(8, lang) for lang in ("en", "es", "ar")] == ["eight", "ocho", "ثمانية"]
    assert count_in_words(13) == "13" and count_in_words(2, "ar") == "2"


@pytest.mark.parametrize(
    "contact, link",
    [
        ("study@example.org", '<a href="mailto:study@example.org">'),
        ("https://example.org/study", '<a href="https://example.org/study">'),
        ("javascript:alert(1)", None),
        ("Dr. Example, room 4", None),
    ],
)
def test_a_contact_is_a_link_only_when_it_is_an_address(app, client, contact, link):
    slug = _survey(app, contact=contact)
    html = client.get(f"/s/{slug}").get_data(as_text=True)
    contact_html = re.search(r'<span id="contact">(.*?)</span>', html).group(1)
    if link:
        assert contact_html.startswith(link)
    else:
        assert "<a" not in contact_html and "javascript:" not in re.sub(r"<[^>]+>", "", html.split("<main")[0])


def test_a_survey_that_says_nothing_of_who_asks_shows_no_empty_block(client, small_survey):
    for path in ("/s/small-test", "/s/small-test/privacy", "/s/small-test/thanks"):
        html = client.get(path).get_data(as_text=True)
        assert 'id="who-is-asking"' not in html and "Run by" not in html, path


@pytest.mark.parametrize("closing", ["Thank you.", "Thanks!", ""])
def test_the_thank_you_page_thanks_once(app, client, closing):
    slug = _survey(app, closing_message=closing)
    html = client.get(f"/s/{slug}/thanks").get_data(as_text=True)
    main = _words(html.split("<main", 1)[1])
    assert re.search(r"<h1>Your answers were sent</h1>", html)
    assert len(re.findall(r"\bthank", main, re.IGNORECASE)) == 1, main


def test_the_privacy_page_links_back_to_the_survey_at_its_top_and_its_foot(client, small_survey):
    html = client.get("/s/small-test/privacy").get_data(as_text=True)
    assert html.count('<a href="/s/small-test" class="back-link">Back to the survey</a>') == 2


def test_a_direct_question_is_called_not_protected_once_above_and_by_its_badge(client, small_survey):
    words = _words(client.get("/s/small-test").get_data(as_text=True))
    assert words.count("Asked directly") == 0 and words.count("Question 4 is not protected.") == 1
    assert words.count("Not protected Sent as you answer it.") == 1


def test_form_post_stores_and_thanks(app, client, small_survey):
    response = client.post("/s/small-test", data={f"q_{k}": str(v) for k, v in GOOD.items()})
    assert response.status_code == 303
    assert response.headers["Location"].endswith("/s/small-test/thanks")
    thanks = client.get("/s/small-test/thanks")
    assert thanks.status_code == 200 and "Thank you" in thanks.get_data(as_text=True)
    assert rows(app) == (1, 4)


@pytest.mark.parametrize(
    "data, message",
    [
        ({"q_drugs": "1", "q_mirror": "0", "q_often": "9"}, "9 is not one of its option codes"),
        ({"q_drugs": "1", "q_mirror": "0"}, "question &#39;often&#39; is required"),
        ({"q_drugs": "yes", "q_mirror": "0", "q_often": "1"}, "must be an option code"),
        ({"q_drugs": "1", "q_mirror": "0", "q_often": "1", "truth-drugs": "0"}, "Unexpected field"),
        ({"q_drugs": ["1", "0"], "q_mirror": "0", "q_often": "1"}, "answered twice"),
        ({"q_drugs": "1", "q_mirror": "0", "q_often": "1", "q_zzz": "1"}, "unknown question"),
    ],
)
def test_malformed_form_posts_show_the_problem_and_write_nothing(app, client, small_survey, data, message):
    response = client.post("/s/small-test", data=data)
    assert response.status_code == 400
    html = response.get_data(as_text=True)
    assert message in html and "Nothing was stored" in html
    assert 'role="alert"' in html
    assert rows(app) == (0, 0)


def test_form_post_needs_csrf_token(csrf_app):
    from survey.domain.surveys.specs import create_survey_from_spec

    from .surveys import SMALL_SPEC

    with csrf_app.app_context():
        create_survey_from_spec(db.session, SMALL_SPEC)
        db.session.commit()
    client = csrf_app.test_client()
    response = client.post("/s/small-test", data={f"q_{k}": str(v) for k, v in GOOD.items()})
    assert response.status_code == 400 and "Reload the page" in response.get_data(as_text=True)
    page = client.get("/s/small-test").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    ok = client.post("/s/small-test", data={"csrf_token": token, **{f"q_{k}": str(v) for k, v in GOOD.items()}})
    assert ok.status_code == 303
    # the JSON API needs no cookie and no token, but only same-origin or origin-less requests
    assert client.post("/api/surveys/small-test/responses", json={"answers": GOOD}).status_code == 201


def test_submission_row_holds_nothing_identifying(app, client, small_survey):
    post_json(client, {"answers": GOOD}, headers={"User-Agent": "Secret-Agent/1.0", "X-Forwarded-For": "203.0.113.9"})
    with app.app_context():
        columns = {c.name for c in Submission.__table__.columns}
        # import_id: the researcher's own upload of responses collected elsewhere (SECURITY.md §3)
        assert columns == {"id", "survey_id", "submitted_on", "import_id"}
        assert {c.name for c in Answer.__table__.columns} == {"id", "submission_id", "question_id", "value"}
        stored = db.session.scalar(select(Submission))
        assert type(stored.submitted_on).__name__ == "date"
        assert stored.import_id is None  # a web submission belongs to no upload


def test_request_log_carries_no_client_address(caplog):
    import logging

    from survey.platform.logs import DropClientAddress

    record = logging.LogRecord(
        "werkzeug",
        logging.INFO,
        __file__,
        1,
        '%s - - [%s] "%s" %s -',
        ("203.0.113.9", "22/Nov/2026 10:01:02", "POST /s/small-test HTTP/1.1", 303),
        None,
    )
    DropClientAddress().filter(record)
    assert record.getMessage() == '"POST /s/small-test HTTP/1.1" 303 -'


def test_a_respondent_page_reads_its_survey_once(app, client, small_survey):
    """The page's language is chosen among its survey's (survey.web.languages) before the view reads
    the same survey: one SELECT of it serves both (survey.web.common.survey_at), on the survey page,
    its privacy page and its thank-you page; and a second request reads it afresh."""
    from sqlalchemy import event

    with app.app_context():
        engine = db.engine
    seen: list[str] = []

    def log(conn, cursor, statement, *args) -> None:
        seen.append(statement)

    paths = [f"/s/{small_survey}", f"/s/{small_survey}/privacy", f"/s/{small_survey}/thanks"]
    event.listen(engine, "before_cursor_execute", log)
    try:
        # (inside one app context, as some tests hold one, the requests share its ``g`` and session)
        with app.app_context():
            for path in paths * 2:
                seen.clear()
                assert client.get(path).status_code == 200
                surveys = [s for s in seen if re.search(r"FROM surveys\b", s) and "JOIN" not in s]
                assert len(surveys) == 1, (path, surveys)
    finally:
        event.remove(engine, "before_cursor_execute", log)
