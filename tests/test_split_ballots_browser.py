"""A split ballot in a real browser: the page assigns each respondent one arm, shows that arm's
procedure, and posts the report to that arm alone.

Chromium (Playwright) opens the split-ballot survey of tests/test_split_ballots.py in fresh browsers.
Each must show exactly one arm of each ballot, the arm its own secret gives (HMAC of slug, ballot and
"arm" → a 53-bit uniform → the shares' CDF, computed here independently of memo.js), the same arm
after a reload (no one can shop for the way they are asked), and the procedure of that arm only
(a randomized arm its "Randomized" line, the direct arm "Not protected"). Once answered, the one post
carries the CSRF token, the submission key and one reported value per assigned arm, nothing of an
arm not shown, and no true answer; the database then holds exactly those answers.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest
from sqlalchemy import select

from survey.domain.models import Answer, Question
from survey.domain.surveys.demo import ensure_demo_user
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db

from .live import live_site
from .pages import DEMO, STORAGE_KEY, axe_violations, new_page, reference_report, sign_in
from .surveys import SPLIT_SPEC as SPEC

BROWSERS = 8
BALLOTS = {"drugs": ["drugs_direct", "drugs_rr"], "cheating": ["cheat_a", "cheat_b"]}
SHARES = {"drugs": [0.5, 0.5], "cheating": [0.4, 0.6]}


def _setup(session) -> None:
    create_survey_from_spec(session, SPEC, owner=ensure_demo_user(session))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    with live_site(tmp_path_factory.mktemp("split"), "split-tests", _setup) as (app, base):
        yield app, base


def _shown(page) -> dict[str, str]:
    """The arm each ballot shows (fieldset visible and enabled), after checking the others are neither."""
    shown = {}
    for ballot, keys in BALLOTS.items():
        visible = [k for k in keys if page.locator(f"#question-{k}").is_visible()]
        assert len(visible) == 1, (ballot, visible)
        enabled = page.evaluate("keys => keys.filter(k => !document.getElementById('question-' + k).disabled)", keys)
        assert enabled == visible
        shown[ballot] = visible[0]
    return shown


def test_each_browser_gets_one_arm_per_ballot_and_posts_only_that_arm(browser, site):
    app, base = site
    posted_answers: list[dict[str, str]] = []
    assigned: list[dict[str, str]] = []
    for _ in range(BROWSERS):
        context = browser.new_context()
        page = context.new_page()
        posts: list = []
        context.on("request", lambda r, posts=posts: posts.append(r) if r.method == "POST" else None)
        page.goto(f"{base}/s/split")
        page.locator("#submit-button:enabled").wait_for()
        shown = _shown(page)
        secret = page.evaluate(f"localStorage.getItem({STORAGE_KEY!r})")
        for ballot, keys in BALLOTS.items():
            expected = keys[reference_report(secret, "split", ballot, "arm", SHARES[ballot])]
            assert shown[ballot] == expected
        # the arm's own procedure, and only its own, is on the screen
        if shown["drugs"] == "drugs_rr":
            assert page.locator('[data-claim="deniability"][data-question="drugs_rr"]').is_visible()
        else:
            assert page.locator('[data-claim="not-protected"][data-question="drugs_direct"]').is_visible()
        page.reload()
        page.locator("#submit-button:enabled").wait_for()
        assert _shown(page) == shown  # memoized: a reload cannot draw another arm

        for key in shown.values():
            page.locator(f"#question-{key} input[type=radio]").first.check()
        with page.expect_navigation():
            page.click("#submit-button")
        assert page.url == f"{base}/s/split/thanks"
        [post] = posts
        fields = dict(parse_qsl(post.post_data, keep_blank_values=True))
        assert set(fields) == {"csrf_token", "submission_key"} | {f"q_{k}" for k in shown.values()}
        assert "truth" not in post.post_data
        posted_answers.append({k: fields[f"q_{k}"] for k in shown.values()})
        assigned.append(shown)
        context.close()

    # the database holds exactly what was posted, one arm per ballot per submission
    with app.app_context():
        keys = {q.id: q.key for q in db.session.scalars(select(Question))}
        stored = sorted(sorted((keys[a.question_id], str(a.value)) for a in answers) for answers in _by_submission())
    wanted = sorted(sorted(one.items()) for one in posted_answers)
    assert stored == wanted


def _by_submission() -> list[list[Answer]]:
    rows = db.session.scalars(select(Answer).order_by(Answer.submission_id)).all()
    grouped: dict[int, list[Answer]] = {}
    for a in rows:
        grouped.setdefault(a.submission_id, []).append(a)
    return list(grouped.values())


def test_the_results_page_of_split_ballots_fits_a_phone(browser, site):
    """After the respondents above: the split ballots' tables scroll inside their regions, the page
    does not scroll sideways at 390 px, and axe-core finds nothing serious."""
    _app, base = site
    page = new_page(browser, bypass_csp=True)
    sign_in(page, base, DEMO)
    page.goto(f"{base}/surveys/split/results?ballot=drugs&by=age#split-drugs")
    assert page.locator("#split-ballots").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert axe_violations(page) == []
    page.context.close()
