"""Templates are sent without their indentation (survey/platform/templates.py), and show the same.

What these prove: every page of the demo survey a respondent sees, and an organizer's pages, render
to the same HTML with and without the indentation once white space is collapsed (what a browser
shows); the respondent's survey page is at least a tenth smaller; no template holds a ``<pre>``
or a ``<textarea>`` whose content is the template's own text (where white space shows as typed).
"""

from __future__ import annotations

import re

from jinja2 import FileSystemLoader

from survey import ROOT
from survey.platform.templates import IndentationFreeLoader

from .accounts import sign_in

TEMPLATES = ROOT / "templates"
PAGES = ["/s/{slug}", "/s/{slug}/privacy", "/s/{slug}/thanks", "/s/{slug}?lang=ar", "/s/no-such-survey"]


def collapsed(html: str) -> str:
    """The HTML as a browser reads it where white space collapses, the CSRF token left out (a token
    is made per session)."""
    html = re.sub(r'(name="csrf_token" value=")[^"]*', r"\1", html)
    return re.sub(r"\s+", " ", html)


def test_the_app_loads_its_templates_without_indentation(app):
    assert isinstance(app.jinja_loader, IndentationFreeLoader)
    with app.app_context():
        source = app.jinja_env.loader.get_source(app.jinja_env, "respond/survey.html")[0]
        original = (TEMPLATES / "respond/survey.html").read_text()
    assert re.search(r"\n[ \t]+\S", original) and not re.search(r"\n[ \t]+", source)


def test_pages_show_the_same_with_and_without_indentation(app, demo, user):
    paths = [p.format(slug=demo) for p in PAGES]
    without = {path: app.test_client().get(path).get_data(as_text=True) for path in paths}
    organizer = app.test_client()
    sign_in(organizer, "alice")
    organizer_pages = ["/", "/surveys/new", "/auth/account"]
    without.update({path: organizer.get(path).get_data(as_text=True) for path in organizer_pages})

    app.jinja_loader = FileSystemLoader(TEMPLATES)
    app.jinja_env.cache.clear()
    indented = {path: app.test_client().get(path).get_data(as_text=True) for path in paths}
    indented.update({path: organizer.get(path).get_data(as_text=True) for path in organizer_pages})

    for path, html in without.items():
        assert collapsed(html) == collapsed(indented[path]), path
    survey_page = paths[0]
    assert len(without[survey_page]) < 0.9 * len(indented[survey_page])


def test_no_template_shows_its_own_white_space():
    for path in TEMPLATES.rglob("*.html"):
        source = path.read_text()
        assert "<pre" not in source, path
        for content in re.findall(r"<textarea[^>]*>(.*?)</textarea>", source, re.S):
            assert "\n" not in content, path
