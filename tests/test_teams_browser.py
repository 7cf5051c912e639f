"""Teams without a shell, in a real browser (Playwright driving Debian's Chromium).

What these prove: an owner on a desktop invites someone by e-mail address from the sharing page;
the invitation goes out through a real SMTP server started here (aiosmtpd), whose captured message
carries the link; the invitee opens it on a phone, makes an account with the suggested username,
accepts the role on their start page and reaches the results. Without a mail server the link is
shown with a Copy button that copies it. The users page, the link pages and the dead-link page run
under the site's CSP and axe-core finds no serious or critical violation on any of them.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from survey.domain.models import User
from survey.domain.surveys.specs import create_survey_from_spec

from .live import PHONE, live_site
from .pages import axe_violations, new_page, sign_in
from .smtp import smtp_server
from .surveys import SMALL_SPEC

OWNER = ("olivia", "organizer password 1")
DESKTOP = {"width": 1280, "height": 900}
NEW_PASSWORD = "my own password 1"


@pytest.fixture(scope="module")
def mailbox():
    with smtp_server() as box:
        yield box


@pytest.fixture(scope="module")
def live_server(tmp_path_factory, mailbox):
    def setup(session):
        owner = User(username=OWNER[0], is_admin=True)
        owner.set_password(OWNER[1])
        session.add(owner)
        session.flush()
        create_survey_from_spec(session, SMALL_SPEC, owner=owner)

    with live_site(tmp_path_factory.mktemp("teams"), "teams-browser-tests", setup, **mailbox.config()) as site:
        yield site


def invite(page, base: str, who: str, role: str = "researcher") -> None:
    page.goto(f"{base}/surveys/small-test/share#people")
    page.fill("#username", who)
    page.locator(f"input[name=role][value={role}]").check()
    with page.expect_navigation():
        page.locator("#people form.stack button[type=submit]").click()


def no_inline_code(page) -> None:
    assert page.evaluate("document.querySelectorAll('script:not([src]), style, [style]').length") == 0


def test_an_invitation_is_mailed_and_accepted_through_its_link(live_server, mailbox, browser):
    _, base = live_server
    owner = new_page(browser, DESKTOP)
    sign_in(owner, base, OWNER)
    before = len(mailbox.messages)
    invite(owner, base, "newcomer@example.org")
    expect(owner.locator("#new-invitation")).to_contain_text("The link was e-mailed to newcomer@example.org")
    expect(owner.locator("#new-invitation input")).to_have_count(0)  # the link is in the e-mail only
    expect(owner.locator("table.people")).to_contain_text("invited, not yet accepted")
    no_inline_code(owner)

    # the e-mail, as the local SMTP server received it
    assert len(mailbox.messages) == before + 1
    message = mailbox.messages[-1]
    assert message["To"] == "newcomer@example.org" and "olivia invites you" in message["Subject"]
    link = mailbox.link()
    assert link.startswith(f"{base}/auth/link?token=")

    # the invitee, on a phone, opens the link
    invitee = new_page(browser)
    invitee.goto(link)
    expect(invitee.locator("h1")).to_have_text("Make your account")
    expect(invitee.locator("main")).to_contain_text("olivia invites you to work on the survey “Small test survey”")
    expect(invitee.locator("#username")).to_have_value("newcomer")
    invitee.fill("#password", NEW_PASSWORD)
    invitee.fill("#confirm", "not the same one")
    with invitee.expect_navigation():
        invitee.click("text=Make my account")
    expect(invitee.locator("#confirm-error")).to_have_text("The two do not match.")
    expect(invitee.locator("#username")).to_have_value("newcomer")
    invitee.fill("#password", NEW_PASSWORD)
    invitee.fill("#confirm", NEW_PASSWORD)
    with invitee.expect_navigation():
        invitee.click("text=Make my account")
    expect(invitee.locator(".flash")).to_contain_text("Welcome, newcomer")
    expect(invitee.locator(".site-header")).to_contain_text("Signed in as newcomer")
    offer = invitee.locator("#invitations li", has_text="Small test survey")
    expect(offer).to_contain_text("invites you as a researcher")
    with invitee.expect_navigation():
        offer.get_by_role("button", name="Accept").click()
    expect(invitee.locator(".flash")).to_contain_text("You now work on “Small test survey”")
    row = invitee.locator("table.survey-list tr", has_text="Small test survey")
    expect(row).to_contain_text("researcher")
    with invitee.expect_navigation():
        row.get_by_role("link", name="Results of Small test survey").click()
    expect(invitee.locator("h1")).to_contain_text("Small test survey")
    no_inline_code(invitee)
    assert not invitee.csp_errors and not owner.csp_errors  # type: ignore[attr-defined]

    # the link worked once; the owner sees a researcher who accepted
    invitee.goto(link)
    expect(invitee.locator("h1")).to_have_text("This link does not work")
    owner.goto(f"{base}/surveys/small-test/share#people")
    member = owner.locator("table.people tr", has_text="newcomer")
    expect(member).to_contain_text("researcher")
    expect(member).not_to_contain_text("not yet accepted")
    invitee.context.close()
    owner.context.close()


def test_without_a_mail_server_the_link_is_shown_with_a_copy_button(live_server, browser):
    app, base = live_server
    saved = app.config["MAIL_SERVER"]
    app.config["MAIL_SERVER"] = None
    try:
        page = new_page(browser, DESKTOP)
        page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
        sign_in(page, base, OWNER)
        invite(page, base, "Robin Smith", role="organizer")
        box = page.locator("#new-invitation")
        expect(box).to_contain_text("give it to Robin Smith yourself")
        url = page.locator("#new-invitation-url").input_value()
        assert url.startswith(f"{base}/auth/link?token=")
        copy = box.get_by_role("button", name="Copy the link")
        expect(copy).to_be_visible()
        copy.click()
        expect(page.locator("#new-invitation-status")).to_have_text("Copied.")
        assert page.evaluate("navigator.clipboard.readText()") == url
        no_inline_code(page)
        assert not page.csp_errors  # type: ignore[attr-defined]
        page.context.close()
    finally:
        app.config["MAIL_SERVER"] = saved


def test_every_page_added_has_no_serious_accessibility_violations(live_server, browser):
    app, base = live_server
    saved = app.config["MAIL_SERVER"]
    app.config["MAIL_SERVER"] = None  # so that the pages show links to copy, and the links are at hand
    checked: list[str] = []

    def check(page, what: str) -> None:
        violations = axe_violations(page)
        assert not violations, what + ": " + json.dumps(violations, indent=1)[:3000]
        checked.append(what)

    try:
        for viewport in (PHONE, DESKTOP):
            admin = new_page(browser, viewport, bypass_csp=True)  # bypass: only so that axe can be injected
            sign_in(admin, base, OWNER)
            admin.goto(f"{base}/admin/users")
            expect(admin.locator("h1")).to_have_text("Users")
            check(admin, "users page")
            name = f"pat{viewport['width']}"
            admin.fill("#username", name)
            admin.fill("#email", f"{name}@example.org")
            with admin.expect_navigation():
                admin.click("text=Create the account")
            expect(admin.locator("#new-link")).to_contain_text(f"send it to {name}@example.org yourself")
            check(admin, "users page with a link to copy")
            setup_link = admin.locator("#new-link-url").input_value()
            admin.fill("#username", "two words")
            with admin.expect_navigation():
                admin.click("text=Create the account")
            expect(admin.locator("#username-error")).to_contain_text("letters and digits")
            check(admin, "users page with a refused account")
            assert admin.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), viewport

            invite(admin, base, f"guest{viewport['width']}@example.org")
            check(admin, "sharing page with an invitation to copy")
            invitation_link = admin.locator("#new-invitation-url").input_value()

            visitor = new_page(browser, viewport, bypass_csp=True)
            visitor.goto(invitation_link)
            check(visitor, "invitation page")
            visitor.click("text=Make my account")
            expect(visitor.locator("#password-error")).to_be_visible()
            check(visitor, "invitation page with errors")
            visitor.goto(setup_link)
            expect(visitor.locator("h1")).to_have_text("Choose your password")
            check(visitor, "first password page")
            visitor.fill("#password", NEW_PASSWORD)
            visitor.fill("#confirm", NEW_PASSWORD)
            with visitor.expect_navigation():
                visitor.click("text=Save the password")
            expect(visitor.locator(".site-header")).to_contain_text(f"Signed in as {name}")
            visitor.goto(setup_link)
            expect(visitor.locator("h1")).to_have_text("This link does not work")
            check(visitor, "dead link page")
            assert visitor.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), viewport
            visitor.context.close()
            admin.context.close()
    finally:
        app.config["MAIL_SERVER"] = saved
    assert len(checked) == 16
