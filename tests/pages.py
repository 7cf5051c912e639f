"""Driving the app's pages in Chromium (Playwright): a fresh page, signing in through the form, the
accessibility check, and the references the respondent's page is held to.

Every browser test module builds on these, so that a change to how the tests open a page or sign in
is made once. The browser itself and the live server are in tests/live.py.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import struct
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

from .live import PHONE

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

ROOT = Path(__file__).resolve().parents[1]
#: axe-core, installed by npm (``make test`` runs ``npm install``).
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
#: The demo's researcher (``flask demo``, survey/domain/surveys/demo.py).
DEMO = ("demo", "demo-password")
#: Where static/js/respond/memo.js keeps the browser's secret (localStorage).
STORAGE_KEY = "private-survey.secret"


def new_page(browser: Browser, viewport: dict = PHONE, **options) -> Page:
    """A fresh context (its own cookies) on a screen of ``viewport`` (a phone's by default), whose
    page records what the Content Security Policy blocks in ``page.csp_errors``."""
    context = browser.new_context(viewport=viewport, **options)
    page = context.new_page()
    page.csp_errors = []  # type: ignore[attr-defined]
    page.on(
        "console",
        lambda m: page.csp_errors.append(m.text) if "Content Security Policy" in m.text else None,  # type: ignore[attr-defined]
    )
    return page


def sign_in(page: Page, base: str, who: tuple[str, str]) -> None:
    """Sign ``who`` (name, password) in through the login form, as a person would."""
    page.goto(f"{base}/auth/login")
    page.fill("#username", who[0])
    page.fill("#password", who[1])
    with page.expect_navigation():
        page.click("button[type=submit]")


def axe_violations(page: Page) -> list[dict]:
    """axe-core's serious and critical violations on the page as it is (the page's context must
    bypass the CSP, only so that axe itself can be injected)."""
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [v for v in result["violations"] if v["impact"] in ("serious", "critical")]


def tick_answers(page: Page, truth: dict[str, int]) -> None:
    """Tick the answers ``truth`` (question key → option code) on the open survey page at once."""
    page.evaluate(
        "t => Object.entries(t).forEach(([k, c]) => { document.getElementById(k + '-' + c).checked = true; })", truth
    )


def inverse_cdf(column: list[float], high: int, low: int) -> int:
    """The report SurveyRandomizer.sample draws from two 32-bit words (its 53-bit uniform, then the CDF)."""
    u = ((high >> 5) * 2**26 + (low >> 6)) / 2**53
    cumulative = 0.0
    for reported, p in enumerate(column):
        cumulative += p
        if u < cumulative:
            return reported
    return max(r for r, p in enumerate(column) if p > 0)


def reference_report(secret_hex: str, slug: str, key: str, true_code: int, column: list[float]) -> int:
    """What static/js/respond/memo.js must send, computed independently: HMAC-SHA256 of the slug, key
    and true answer under the browser's secret → a 53-bit uniform → the inverse of the column's CDF."""
    mac = hmac.new(bytes.fromhex(secret_hex), f"{slug}\n{key}\n{true_code}".encode(), hashlib.sha256).digest()
    return inverse_cdf(column, *struct.unpack(">II", mac[:8]))


def js_number_text(x: float) -> str:
    """How JavaScript's String() writes ``x`` (for the numbers these tests type: shortest round trip,
    no ".0" on a whole number)."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def reference_number_report(secret_hex: str, slug: str, key: str, x: float, mechanism) -> int:
    """What static/js/respond/memo.js must send for a randomized number, computed independently:
    HMAC-SHA256 of the slug, key and the true number clamped to the range under the browser's secret
    → its eight 32-bit words, two per 53-bit uniform → the mechanism's draw and rounding to its grid
    (survey.privacy.numeric, which numbers.js follows operation for operation)."""
    clamped = min(max(float(x), mechanism.low), mechanism.high)
    text = f"{slug}\n{key}\n{js_number_text(clamped)}"
    mac = hmac.new(bytes.fromhex(secret_hex), text.encode(), hashlib.sha256).digest()
    words = struct.unpack(">8I", mac)
    u = [((words[2 * i] >> 5) * 2**26 + (words[2 * i + 1] >> 6)) / 2**53 for i in range(4)]
    t = mechanism.normalize(clamped)
    y = mechanism.draw(t, u[: mechanism.uniforms])
    return int(mechanism.to_code(y, u[mechanism.uniforms]))


def session_cookie_payload(value: str) -> dict:
    """Flask's session cookie: signed, not encrypted; its first part is (maybe compressed) JSON."""
    compressed = value.startswith(".")
    data = value.lstrip(".").split(".")[0]
    raw = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
    return json.loads(zlib.decompress(raw) if compressed else raw)
