"""The request's catalog found once (survey.platform.request_translations), and the same words as
Flask-Babel's own gettext in every case Flask-Babel handles: the request's language, a language
forced for a while (nested, or left by an exception), a refresh after which the language is chosen
again, the templates' every gettext form, an app context without a request, and no context at all."""

from __future__ import annotations

from collections.abc import Iterator

import flask_babel
import pytest
from flask import Flask
from flask_babel import force_locale, get_translations, refresh

from survey import create_app
from survey.platform import request_translations
from survey.platform.request_translations import gettext, translations

SENTENCE = "Nothing was changed."
IN = {"en": "Nothing was changed.", "es": "No se cambió nada."}
#: A plural the Spanish catalog translates, as respond/survey.html writes it.
PLURAL = (
    "{% trans count=count %}<strong>Yes, for the {{ count }} question asked directly</strong> (marked “Not"
    " protected”): that answer is sent exactly as you give it.{% pluralize %}<strong>Yes, for the {{ count }}"
    " questions asked directly</strong> (marked “Not protected”): those answers are sent exactly as you give"
    " them.{% endtrans %}"
)


@pytest.fixture
def app() -> Iterator[Flask]:
    """The app with no database of use: nothing here reads one."""
    yield create_app({"TESTING": True, "SECRET_KEY": "t", "SQLALCHEMY_DATABASE_URI": "sqlite://"})


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
    babel = app.extensions["babel"]
    with app.test_request_context("/"):
        babel.locale_selector = lambda: "es"
        for _ in range(50):
            assert gettext(SENTENCE) == flask_babel.gettext(SENTENCE) == IN["es"]
        assert lookups.count("es") <= 2  # the first call finds the context empty, the second keeps it
        with force_locale("en"):
            assert gettext(SENTENCE) == flask_babel.gettext(SENTENCE) == IN["en"]
            with force_locale("es"):
                assert gettext(SENTENCE) == IN["es"]
            assert gettext(SENTENCE) == IN["en"]
        with pytest.raises(RuntimeError), force_locale("en"):
            assert gettext(SENTENCE) == IN["en"]
            raise RuntimeError
        assert gettext(SENTENCE) == IN["es"]  # the request's language again, once the forcing ends
        babel.locale_selector = lambda: "en"  # asked again only after a refresh
        assert gettext(SENTENCE) == IN["es"]
        refresh()
        assert gettext(SENTENCE) == flask_babel.gettext(SENTENCE) == IN["en"]
        assert translations() is get_translations()


def test_variables_go_in_as_with_flask_babel(app):
    with app.test_request_context("/"):
        assert gettext("%(n)s of %(m)s", n=1, m=2) == flask_babel.gettext("%(n)s of %(m)s", n=1, m=2) == "1 of 2"


def test_without_a_request_the_words_are_flask_babels(app):
    assert gettext(SENTENCE) == flask_babel.gettext(SENTENCE) == SENTENCE  # no context at all
    with app.app_context():  # a command, or a mail sent after the response
        app.extensions["babel"].locale_selector = lambda: "es"
        for _ in range(2):
            assert gettext(SENTENCE) == flask_babel.gettext(SENTENCE) == IN["es"]


def test_every_gettext_form_of_the_templates_renders_as_with_flask_babels_callables(app, lookups):
    source = (
        "{{ _('Nothing was changed.') }}|{{ _('%(n)s of %(m)s', n='<b>', m=2) }}|"
        "{% trans %}Nothing was changed.{% endtrans %}|"
        "{% for count in (1, 3) %}" + PLURAL + "|{% endfor %}"
        "{{ ngettext('%(num)s day', '%(num)s days', 2) }}|{{ pgettext('menu', 'Nothing was changed.') }}|"
        "{{ npgettext('menu', '%(num)s day', '%(num)s days', 1) }}"
    )
    with app.test_request_context("/"):
        app.extensions["babel"].locale_selector = lambda: "es"
        ours = app.jinja_env.from_string(source).render()
        assert lookups and IN["es"] in ours and "&lt;b&gt; of 2" in ours
        assert "preguntas hechas directamente" in ours  # the plural, translated
        app.jinja_env.install_gettext_callables(  # Flask-Babel's own, as Babel.init_app installs them
            gettext=lambda s: get_translations().ugettext(s),
            ngettext=lambda s, p, n: get_translations().ungettext(s, p, n),
            newstyle=True,
            pgettext=lambda c, s: get_translations().upgettext(c, s),
            npgettext=lambda c, s, p, n: get_translations().unpgettext(c, s, p, n),
        )
        assert app.jinja_env.from_string(source).render() == ours
