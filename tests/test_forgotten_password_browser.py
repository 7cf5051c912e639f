""" "Forgot password?" in a real browser (Playwright driving Debian's Chromium), on a phone.

What this proves: someone locked out follows "Forgot password?" from the sign-in page, gives their
username, is told the same sentence anyone is told, finds the link in the message a real SMTP
server (aiosmtpd, tests/smtp.py) received, chooses a new password through it and is signed in; the
pages run under the site's CSP, do not scroll sideways, and axe-core finds no serious or critical
violation on the forgot page.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from survey.domain.models import User
from survey.platform.background import settle

from .live import live_site
from .pages import axe_violations, new_page
from .smtp import smtp_server

LOCKED_OUT = ("lou", "the password lou forgot")
NEW_PASSWORD = "lou remembers this one"


@pytest.fixture(scope="module")
def mailbox():
    with smtp_server() as box:
        yield box


@pytest.fixture(scope="module")
def live_server(tmp_path_factory, mailbox):
    def setup(session):
        user = User(username=LOCKED_OUT[0], email="lou@example.org")
        user.set_password(LOCKED_OUT[1])
        session.add(user)

    with live_site(tmp_path_factory.mktemp("forgot"), "forgot-browser-tests", setup, **mailbox.config()) as site:
        yield site


def test_someone_locked_out_chooses_a_new_password_through_the_mailed_link(live_server, mailbox, browser):
    _, base = live_server
    page = new_page(browser)
    page.goto(f"{base}/auth/login")
    with page.expect_navigation():
        page.click("text=Forgot password?")
    assert page.evaluate("document.scrollingElement.scrollWidth <= window.innerWidth")
    page.fill("#who", LOCKED_OUT[0])
    with page.expect_navigation():
        page.click("button:has-text('Send me a link')")
    expect(page.locator(".flash")).to_contain_text("a link to choose a new password is on its way")
    assert settle(10)
    assert mailbox.envelopes[-1][1] == ["lou@example.org"]
    page.goto(mailbox.link())
    page.fill("#password", NEW_PASSWORD)
    page.fill("#confirm", NEW_PASSWORD)
    with page.expect_navigation():
        page.click("button:has-text('Save the password')")
    expect(page.locator(".flash")).to_contain_text("Your password was changed")
    assert page.csp_errors == []
    page.context.close()


def test_the_forgot_page_has_no_serious_accessibility_violation(live_server, browser):
    _, base = live_server
    page = new_page(browser, bypass_csp=True)  # bypass: only so that axe can be injected
    page.goto(f"{base}/auth/forgot")
    violations = axe_violations(page)
    assert not violations, json.dumps(violations, indent=1)[:3000]
    page.context.close()
