"""The respondent's page sent small and its files cached forever: compressed pages, static files
under content-hashed names (survey/platform/assets.py, survey/platform/compression.py).

What these prove: a first visit to the demo survey's page (the page and every file it names)
transfers at most 15 KB with brotli (what browsers offer over HTTPS), and at most 16 KB with gzip
alone (:data:`GZIP_ONLY_LIMIT` says why); each file it names is sent under the hash
of its content with ``Cache-Control: public, max-age=31536000, immutable``, and decompresses to the
file (minified); a name with no hash or an old hash is never cached for a year; a file that changes
gets a new name; an organizer's pages are never compressed (BREACH); and in a real browser a repeat
visit makes one request, the page's, with the Content-Security-Policy blocking nothing.
"""

from __future__ import annotations

import gzip
import re

import brotli
import pytest
from flask import Flask

from survey.domain.surveys.demo import create_demo
from survey.platform import assets
from survey.platform.assets import FOREVER, Assets

from .live import live_site
from .pages import new_page

#: What Chromium sends over HTTPS, and a client that takes gzip alone.
BROWSER = {"Accept-Encoding": "gzip, deflate, br, zstd"}
GZIP_ONLY = {"Accept-Encoding": "gzip"}
#: The issue's bound on a first visit, met with brotli, which every current browser offers over HTTPS.
FIRST_VISIT_LIMIT = 15 * 1024
#: A client that offers gzip only (old browsers, some proxies) gets a little more: since the pages
#: speak three languages (the switch, and respond.js's sentences sent translated with the page) and
#: the switch keeps the answers (its script, switch.js, comes only when used) the gzip-only visit is
#: 16,363 bytes (14,625 with brotli; the templates' indentation, no longer sent, paid for the switch).
#: Held here so that it cannot grow unnoticed.
GZIP_ONLY_LIMIT = 16 * 1024


def static_urls(html: str, lazy: bool = False) -> list[str]:
    """The static files a page loads; with ``lazy``, also those its scripts load later (data-src)."""
    attribute = r"(?:data-src|src|href)" if lazy else r"(?<![-\w])(?:src|href)"
    return re.findall(attribute + r'="(/static/[^"]+)"', html)


def transferred(response) -> int:
    """The bytes a response puts on the wire: its status line, headers and (encoded) body."""
    head = f"HTTP/1.1 {response.status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in response.headers.items())
    return len(head.encode()) + 2 + len(response.get_data())


def decoded(response) -> bytes:
    body = response.get_data()
    encoding = response.headers.get("Content-Encoding")
    if encoding == "br":
        return brotli.decompress(body)
    if encoding == "gzip":
        return gzip.decompress(body)
    assert encoding is None
    return body


@pytest.mark.parametrize("accept", [BROWSER, GZIP_ONLY], ids=["brotli", "gzip"])
def test_a_first_visit_to_the_respondents_page_transfers_at_most_15_kb(client, demo, accept):
    page = client.get(f"/s/{demo}", headers=accept)
    assert page.status_code == 200 and page.headers["Content-Encoding"] == ("br" if accept is BROWSER else "gzip")
    assert "Accept-Encoding" in page.headers["Vary"]
    html = decoded(page).decode()
    assert "<form" in html and html.rstrip().endswith("</html>")
    urls = static_urls(html)
    # the demo has every kind of question: its page names the stylesheet and every script of the page
    # (the randomizer, numbers, the memo and the page's own; "Try it" comes when a panel is opened)
    names = {re.sub(r"\.[0-9a-f]{10}(?=\.)", "", u.rsplit("/", 1)[1]) for u in urls}
    assert names == {"site.css", "randomizer.js", "numbers.js", "memo.js", "respond.js"}, names
    assert re.search(r'id="try-script" hidden data-src="/static/js/respond/try\.[0-9a-f]{10}\.js"', html)
    total = transferred(page)
    for url in urls:
        response = client.get(url, headers=accept)
        assert response.status_code == 200
        total += transferred(response)
    assert total <= (FIRST_VISIT_LIMIT if accept is BROWSER else GZIP_ONLY_LIMIT), f"{total} bytes"
    plain = len(html.encode()) + sum(len(client.get(u).get_data()) for u in urls)
    assert plain > 3 * total  # (for the record: what the same visit was before, uncompressed)


def test_static_files_are_named_by_their_content_and_cached_forever(app, client, demo):
    html = client.get(f"/s/{demo}").get_data(as_text=True)
    folder = app.static_folder
    for url in static_urls(html, lazy=True):
        name = re.fullmatch(r"/static/(.+)\.([0-9a-f]{10})(\.\w+)", url)
        assert name, url
        stored = open(f"{folder}/{name[1]}{name[3]}", "rb").read()
        assert assets.hashlib.sha256(stored).hexdigest()[:10] == name[2]
        response = client.get(url, headers=BROWSER)
        assert response.headers["Cache-Control"] == FOREVER
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        mimetype = response.mimetype
        assert decoded(response) == assets.minified(stored, mimetype)
        assert len(decoded(response)) < len(stored)  # comments and white space gone
        # a name without the hash, or with another, is the current file revalidated, never kept a year
        for other in (f"/static/{name[1]}{name[3]}", f"/static/{name[1]}.0123456789{name[3]}"):
            response = client.get(other)
            assert response.status_code == 200 and response.get_data() == stored
            assert "immutable" not in response.headers.get("Cache-Control", "")
            response.close()
    assert client.get("/static/js/nothing.0123456789.js").status_code == 404
    assert client.get("/static/../survey/__init__.0123456789.py").status_code == 404


def test_a_changed_file_gets_a_new_name_and_its_old_name_is_not_served_as_the_new(tmp_path):
    (tmp_path / "js").mkdir()
    script = tmp_path / "js" / "a.js"
    script.write_text("/* first */\nvar a = 1;\n")
    files = Assets(str(tmp_path))
    first = files.hashed_name("js/a.js")
    assert re.fullmatch(r"js/a\.[0-9a-f]{10}\.js", first)
    assert files.current(first)[1].body == b"var a=1;"
    script.write_text("/* second, longer */\nvar a = 2;\n")
    second = files.hashed_name("js/a.js")
    assert second != first and files.current(second)[1].body == b"var a=2;"
    assert files.current(first) is None  # the old name is no longer the file's
    assert files.hashed_name("js/missing.js") == "js/missing.js"
    assert files.current("js/../../etc/passwd.0123456789.js") is None


def test_an_organizers_pages_are_never_compressed(signed_in, small_survey, demo):
    """A compressed page whose size an attacker can watch while choosing part of its text leaks a
    secret on it, guess by guess (BREACH): pages for signed-in users are sent as they are."""
    for path in ("/", "/surveys/small-test/results", f"/s/{demo}"):
        response = signed_in.get(path, headers=BROWSER, follow_redirects=True)
        assert response.status_code == 200 and len(response.get_data()) > 1024
        assert "Content-Encoding" not in response.headers, path


def test_a_repeat_visit_makes_one_request_and_the_policy_blocks_nothing(browser, tmp_path):
    def setup(session):
        create_demo(session, respondents=5)

    with live_site(tmp_path, "assets-test", setup) as (app, base):
        with app.app_context():
            from survey.platform.extensions import db

            slug = db.session.scalar(db.select(db.metadata.tables["surveys"].c.slug))
        page = new_page(browser)
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(f"{base}/s/{slug}")
        first = page.evaluate(
            "() => [performance.getEntriesByType('navigation')[0].transferSize,"
            " ...performance.getEntriesByType('resource').map(e => e.transferSize)]"
        )
        assert len(first) == 6 and all(size > 0 for size in first)
        assert sum(first) <= FIRST_VISIT_LIMIT, first
        page.goto("about:blank")
        requests.clear()
        page.goto(f"{base}/s/{slug}")  # a repeat visit, as following the link again
        resources = page.evaluate("() => performance.getEntriesByType('resource').map(e => [e.name, e.transferSize])")
        assert len(resources) == 5
        assert [size for _, size in resources] == [0] * 5, resources  # every file from the cache
        assert [url for url in requests if "/static/" not in url] == [f"{base}/s/{slug}"]
        # the page works: its scripts ran (the send button is enabled only by them)
        assert page.locator("form button[type=submit]").first.is_enabled()
        assert page.csp_errors == []  # type: ignore[attr-defined]
        page.context.close()


def test_an_app_without_a_static_folder_starts(tmp_path):
    app = Flask("bare", static_folder=None)
    assets.init_app(app)
    assert "assets" not in app.extensions
