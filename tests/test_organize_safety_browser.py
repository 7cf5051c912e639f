"""Organizers without surprises, in a real browser (Playwright driving Debian's Chromium), on a desktop
and a phone screen: the draft preview, the confirmations before publishing, closing and deleting,
the copy button, a code typed by a respondent; and axe-core finds no serious or critical violation
on any page these touch. Every page runs under the site's CSP: no inline script anywhere.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect
from sqlalchemy import func, select

from survey.domain.models import HeldSubmission, Question, Submission, Survey, User
from survey.domain.responses.codes import generate_codes, shown
from survey.domain.surveys.specs import create_survey_from_spec
from survey.platform.extensions import db

from .live import PHONE, live_site
from .pages import axe_violations, new_page, sign_in
from .surveys import SMALL_SPEC

OWNER = ("owen", "owner password 1")
DESKTOP = {"width": 1280, "height": 800}
VIEWPORTS = [pytest.param(DESKTOP, id="desktop"), pytest.param(PHONE, id="phone")]


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    def setup(session):
        user = User(username=OWNER[0])
        user.set_password(OWNER[1])
        session.add(user)

    with live_site(tmp_path_factory.mktemp("organize-safety"), "organize-safety-tests", setup) as site:
        yield site


def add_survey(app, slug: str, status: str, access: str = "link") -> str:
    with app.app_context():
        owner = db.session.scalar(select(User).where(User.username == OWNER[0]))
        spec = {**SMALL_SPEC, "slug": slug, "title": f"Survey {slug}", "status": status, "access": access}
        create_survey_from_spec(db.session, spec, owner=owner)
        db.session.commit()
    return slug


def no_horizontal_scroll(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"{page.url} is {width}px wide"


def submissions_of(app, slug: str | None = None) -> int:
    """How many submissions the survey ``slug`` holds (every survey's, without one), those held for
    release in a batch (surveys by invitation, survey/domain/responses/mixing.py) included."""
    total = 0
    for table in (Submission, HeldSubmission):
        query = select(func.count()).select_from(table)
        if slug is not None:
            query = query.join(Survey, Survey.id == table.survey_id).where(Survey.slug == slug)
        with app.app_context():
            total += db.session.scalar(query)
    return total


def status_of(app, slug: str) -> str | None:
    with app.app_context():
        return db.session.scalar(select(Survey.status).where(Survey.slug == slug))


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_an_organizer_previews_the_draft_then_publishes_it_after_confirming(live_server, browser, viewport):
    app, base = live_server
    slug = add_survey(app, f"preview-{viewport['width']}", "draft")
    # the module's tests share one server: count what this test stores, not what the others did
    stored_before = submissions_of(app)
    page = new_page(browser, viewport)
    sign_in(page, base, OWNER)
    page.goto(f"{base}/surveys/{slug}/build")
    page.click("#preview-link")
    expect(page.locator("#preview-banner")).to_be_visible()
    expect(page.locator("#preview-banner")).to_contain_text("nothing can be sent")
    expect(page.locator("legend").first).to_contain_text("Have you used drugs?")
    # the answers can be tried (the page's script runs, as for a respondent), but never sent
    page.click("label[for='drugs-0']")
    expect(page.locator("#drugs-0")).to_be_checked()
    page.click("label[for='often-1']")
    page.click("label[for='often-2']")
    expect(page.locator("#often-1")).not_to_be_checked()  # one answer per question, as respondents get
    expect(page.locator("#submit-button")).to_be_disabled()
    expect(page.locator("#submit-note")).to_contain_text("sending is turned off")
    no_horizontal_scroll(page)
    assert submissions_of(app, slug) == 0 and submissions_of(app) == stored_before  # nothing stored anywhere

    # publishing asks first, with what freezes
    page.goto(f"{base}/surveys/{slug}/share")
    page.click("#publish-link")
    expect(page.locator("#what-freezes")).to_contain_text("can no longer change")
    expect(page.locator("table.frozen-designs tbody tr")).to_have_count(len(SMALL_SPEC["questions"]))
    assert status_of(app, slug) == "draft"
    no_horizontal_scroll(page)
    page.click("#cancel-link")  # not yet
    expect(page).to_have_url(f"{base}/surveys/{slug}/build")
    assert status_of(app, slug) == "draft"
    page.goto(f"{base}/surveys/{slug}/publish")
    with page.expect_navigation():
        page.click("#confirm-button")
    expect(page.locator(".flash")).to_contain_text("Published")
    assert status_of(app, slug) == "open"
    assert not page.csp_errors, page.csp_errors
    page.context.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_deleting_a_question_and_closing_are_confirmed(live_server, browser, viewport):
    app, base = live_server
    draft = add_survey(app, f"confirm-draft-{viewport['width']}", "draft")
    open_survey = add_survey(app, f"confirm-open-{viewport['width']}", "open")
    page = new_page(browser, viewport)
    sign_in(page, base, OWNER)

    page.goto(f"{base}/surveys/{draft}/build")
    page.click("#item-mirror >> text=Delete…")
    expect(page.locator("#confirm-heading")).to_contain_text("Mirrored?")
    page.click("#cancel-link")
    expect(page.locator(".question-item")).to_have_count(4)  # cancelled: nothing gone
    page.click("#item-mirror >> text=Delete…")
    with page.expect_navigation():
        page.click("#confirm-button")
    expect(page.locator(".question-item")).to_have_count(3)
    with app.app_context():
        keys = db.session.scalars(select(Question.key).join(Survey).where(Survey.slug == draft)).all()
    assert "mirror" not in keys

    page.goto(f"{base}/surveys/{open_survey}/share")
    page.click("#close-link")
    expect(page.locator("#confirm-points")).to_contain_text("You can reopen it later")
    assert status_of(app, open_survey) == "open"
    with page.expect_navigation():
        page.click("#confirm-button")
    assert status_of(app, open_survey) == "closed"
    no_horizontal_scroll(page)
    assert not page.csp_errors, page.csp_errors
    page.context.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_the_link_is_copied_with_one_press(live_server, browser, viewport):
    app, base = live_server
    slug = add_survey(app, f"copy-{viewport['width']}", "open")
    page = new_page(browser, viewport, permissions=["clipboard-read", "clipboard-write"])
    sign_in(page, base, OWNER)
    page.goto(f"{base}/surveys/{slug}/share")
    button = page.locator("button[data-copy='survey-link']")
    expect(button).to_be_visible()  # shown by the page's script (hidden without it)
    button.click()
    expect(page.locator("[data-copy-status='survey-link']")).to_contain_text("Link copied")
    assert page.evaluate("navigator.clipboard.readText()") == f"{base}/s/{slug}"
    no_horizontal_scroll(page)
    page.context.close()


def test_the_address_is_checked_while_typing(live_server, browser):
    app, base = live_server
    add_survey(app, "already-taken", "draft")
    slug = add_survey(app, "choosing", "draft")
    page = new_page(browser, PHONE)
    sign_in(page, base, OWNER)
    page.goto(f"{base}/surveys/{slug}/share#address")
    page.fill("#slug", "already-taken")
    expect(page.locator("#slug-check")).to_have_text("This address is taken. Choose another one.")
    expect(page.locator("#slug")).to_have_attribute("aria-invalid", "true")
    page.fill("#slug", "chosen-address")
    expect(page.locator("#slug-check")).to_contain_text("This address is free")
    with page.expect_navigation():
        page.click("#address-form button[type=submit]")
    expect(page.locator("#survey-link")).to_have_value(f"{base}/s/chosen-address")
    page.context.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_respondent_types_the_code_printed_on_a_paper_invitation(live_server, browser, viewport):
    app, base = live_server
    slug = add_survey(app, f"paper-{viewport['width']}", "open", access="invitation")
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == slug))
        code = generate_codes(db.session, survey, 1)[0]
        db.session.commit()
    page = new_page(browser, viewport)
    page.goto(f"{base}/s/{slug}")
    expect(page.locator("#code")).to_be_visible()
    page.fill("#code", "WRONG-CODE")
    with page.expect_navigation():
        page.click("#code-form button[type=submit]")
    expect(page.locator(".alert")).to_contain_text("not known")
    expect(page.locator("#code")).to_have_attribute("aria-invalid", "true")
    page.fill("#code", shown(code).lower())  # as printed, typed in lower case
    with page.expect_navigation():
        page.click("#code-form button[type=submit]")
    page.click("label[for='drugs-1']")
    page.click("label[for='mirror-0']")
    page.click("label[for='often-3']")
    with page.expect_navigation():
        page.click("#submit-button")
    expect(page.locator("h1")).to_contain_text("Your answers were sent")
    assert submissions_of(app, slug) == 1
    no_horizontal_scroll(page)
    assert not page.csp_errors, page.csp_errors
    page.context.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_every_touched_page_has_no_serious_accessibility_violation(live_server, browser, viewport):
    app, base = live_server
    width = viewport["width"]
    draft = add_survey(app, f"axe-draft-{width}", "draft")
    closed = add_survey(app, f"axe-closed-{width}", "closed", access="invitation")
    with app.app_context():
        survey = db.session.scalar(select(Survey).where(Survey.slug == closed))
        generate_codes(db.session, survey, 3)
        db.session.commit()
    page = new_page(browser, viewport, bypass_csp=True)  # only so that axe itself can be injected
    sign_in(page, base, OWNER)
    paths = [
        f"/surveys/{draft}/build",
        f"/surveys/{draft}/share",
        f"/surveys/{draft}/publish",
        f"/surveys/{draft}/delete",
        f"/surveys/{draft}/questions/drugs/delete",
        f"/s/{draft}/preview",
        f"/s/{draft}/privacy",
        f"/surveys/{closed}/share",
        f"/surveys/{closed}/archive",
        f"/surveys/{closed}/invitations/print",
        f"/surveys/{closed}/invitations/revoke-unused",
        "/?archived=1",
        "/",
    ]
    for path in paths:
        assert page.goto(base + path).status == 200, path
        violations = axe_violations(page)
        assert not violations, (path, json.dumps(violations, indent=1)[:3000])
    # the builder's refused ε, marked on its field by the live preview
    page.goto(f"{base}/surveys/{draft}/questions/new")
    page.fill("#epsilon", "0")
    expect(page.locator("#preview-error")).to_contain_text("ε (epsilon) must be a number greater than 0")
    expect(page.locator("#epsilon")).to_have_attribute("aria-invalid", "true")
    violations = axe_violations(page)
    assert not violations, json.dumps(violations, indent=1)[:3000]
    # the respondent's code box, as a respondent sees it
    respondent = new_page(browser, viewport, bypass_csp=True)
    page.context.close()
    with app.app_context():
        db.session.execute(Survey.__table__.update().where(Survey.slug == closed).values(status="open"))
        db.session.commit()
    respondent.goto(f"{base}/s/{closed}")
    expect(respondent.locator("#code")).to_be_visible()
    violations = axe_violations(respondent)
    assert not violations, json.dumps(violations, indent=1)[:3000]
    respondent.context.close()
