"""The request's catalog found once (survey.platform.request_translations), and the same words as
Flask-Babel's own gettext in every case Flask-Babel handles: the request's language, a language
forced for a while, a refresh, and no request at all."""

from __future__ import annotations

import flask_babel
import pytest
from flask_babel import force_locale, refresh

from survey.platform import request_translations
from survey.platform.request_translations import gettext, translations

SENTENCE = "Nothing was changed."
IN = {"en": "Nothing was changed.", "es": "No se cambió nada."}


@pytest.fixture
def lookups(monkeypatch) -> list[str]:
    """Each time Flask-Babel's own lookup is asked, the locale it was asked in."""
    asked: list[str] = []
    original = request_translations.get_translations

    def counted():
        asked.append(str(flask_babel.get_locale()))
        return original()

    monkeypatch.setattr(request_translations, "get_translations", counted)
    return asked


def test_the_catalog_is_looked_up_once_per_language_and_gives_flask_babels_words(app, lookups):
    with app.test_request_context("/s/anything", headers={"Accept-Language": "es"}):
        app.extensions["babel"].locale_selector = lambda: "es"
        for _ in range(50):
            assert gettext(SENTENCE) == flask_babel.gettext(SENTENCE) == IN["es"]
        assert lookups.count("es") <= 2  # the first call finds the context empty, the second keeps it
        with force_locale("en"):
            assert gettext(SENTENCE) == flask_babel.gettext(SENTENCE) == IN["en"]
        assert gettext(SENTENCE) == IN["es"]  # the request's language again, once the forcing ends
        refresh()
        assert gettext(SENTENCE) == IN["es"]
        assert translations() is flask_babel.get_translations()
    assert lookups.count("en") >= 1


def test_variables_go_in_as_with_flask_babel(app):
    with app.test_request_context("/"):
        assert gettext("%(n)s of %(m)s", n=1, m=2) == flask_babel.gettext("%(n)s of %(m)s", n=1, m=2) == "1 of 2"


def test_outside_a_request_it_is_flask_babels_lookup(app):
    with app.app_context():
        assert gettext(SENTENCE) == flask_babel.gettext(SENTENCE) == SENTENCE


def test_the_templates_translate_through_it(app, lookups):
    with app.test_request_context("/"):
        app.extensions["babel"].locale_selector = lambda: "es"
        template = app.jinja_env.from_string(
            "{{ _('Nothing was changed.') }}{% trans %}Nothing was changed.{% endtrans %}"
        )
        assert template.render() == IN["es"] * 2
    assert lookups
