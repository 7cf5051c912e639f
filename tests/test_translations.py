"""The respondent's pages in every language (docs/translations.md).

- Every sentence a respondent can be shown (survey.platform.translations.respondent_catalog: taken
  from the respondent's templates, what base.html and error.html show them, the respondent's words,
  the error pages and the error catalog's entries a respondent can meet) has a translation in each
  language, with every plural form and the same placeholders as the English; and the committed
  messages.mo says what its messages.po says. The checker itself is shown to catch a missing
  sentence, a missing plural form and a changed placeholder.
- The survey, privacy, thank-you, closed and invitation pages come in the browser's language
  (Accept-Language) among English, Spanish and Arabic, or the one picked with the switch (?lang=,
  then the cookie ``lang``, which holds the code and nothing else), with ``<html lang dir>``; the
  organizer's pages stay English; and nothing about the language is stored with the answers. (The
  survey here has Spanish and Arabic texts: a survey is offered in its own languages only, which
  tests/test_content_translations.py checks.)
"""

from __future__ import annotations

import re

import pytest
from babel.messages.catalog import Catalog
from babel.messages.mofile import read_mo
from sqlalchemy import inspect, select

from survey.domain.models import Survey
from survey.platform.extensions import db
from survey.platform.translations import LANGUAGES, SOURCE_LANGUAGE, po_path, read_catalog, respondent_catalog

from .surveys import FORM, SMALL_SPEC, SMALL_TRANSLATIONS, add_survey, stored, text

TRANSLATED = [language for language in LANGUAGES if language != SOURCE_LANGUAGE]
#: %(name)s (Jinja, gettext) and {name}, {name!r}, {name:,} (str.format, the domain's templates).
PLACEHOLDER = re.compile(r"%\((\w+)\)s|\{(\w+)(?:![rsa])?(?::[^}]*)?\}")
#: What a plural's count is called (Jinja's {% trans count=... %}; ngettext's num).
COUNTS = {"count", "num"}


def placeholders(text: str) -> set[str]:
    return {a or b for a, b in PLACEHOLDER.findall(text)}


def problems(template: Catalog, translated: Catalog) -> list[str]:
    """What is wrong with ``translated`` against ``template``: each sentence missing, fuzzy or empty,
    a plural without all the language's forms, and a translation whose placeholders differ."""
    found = []
    for message in template:
        if not message.id:
            continue
        key = message.id[0] if isinstance(message.id, tuple) else message.id
        mine = translated.get(message.id)
        if mine is None or mine.fuzzy:
            found.append(f"not translated: {key!r}")
            continue
        if isinstance(message.id, tuple):
            forms = mine.string if isinstance(mine.string, tuple) else (mine.string,)
            english = placeholders(message.id[0]) | placeholders(message.id[1])
            if len(forms) != translated.num_plurals or not all(forms):
                found.append(f"plural forms missing ({len(forms)} of {translated.num_plurals}): {key!r}")
            for form in forms:
                # a form may leave the count out ("one question"); every other placeholder stays
                if not (english - COUNTS) <= placeholders(form) <= english:
                    found.append(f"placeholders differ in {form!r} for {key!r}")
        elif not mine.string:
            found.append(f"empty: {key!r}")
        elif placeholders(mine.string) != placeholders(message.id):
            found.append(f"placeholders differ in {mine.string!r} for {key!r}")
    return found


@pytest.fixture(scope="module")
def template() -> Catalog:
    return respondent_catalog()


def test_the_respondent_catalog_holds_the_respondent_sentences(template):
    """The extraction finds the sentences of each source: the templates (with their plurals), the
    respondent's words, the error pages and the respondent's error codes."""
    ids = {m.id if isinstance(m.id, str) else m.id[0] for m in template if m.id}
    assert len(ids) > 150
    for sentence in (
        "Send my answers",  # survey.html
        "Can anyone find out your answers?",  # privacy.html
        "Your answers were sent",  # thanks.html
        "Invitation code",  # invitation.html
        "Go to the start page",  # error.html
        "Skip to content",  # base.html
        "Hidden by chance: what is sent favours no answer more than {odds} to 1.",  # wording.py
        "There is nothing here.",  # security.py
        "This invitation code has already been used: each code admits one set of answers.",  # a code
        "One required question has no answer yet; it is marked below.",  # a plural
    ):
        assert sentence in ids, sentence
    assert "Sign out" not in ids  # the organizer's words are not asked of the translators (yet)


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_respondent_sentence_is_translated(template, language):
    assert problems(template, read_catalog(language)) == []


@pytest.mark.parametrize("language", TRANSLATED)
def test_the_checker_catches_a_missing_sentence_a_plural_form_and_a_placeholder(template, language):
    catalog = read_catalog(language)
    broken = Catalog(locale=language)
    for message in catalog:
        if message.id:
            broken.add(message.id, message.string)
    broken.delete("Send my answers")
    singular = "One required question has no answer yet; it is marked below."
    plural = "%(num)s required questions have no answer yet; they are marked below."
    forms = catalog.get((singular, plural)).string
    broken.delete(singular)
    broken.add((singular, plural), forms[:-1])
    closed = "This survey closed on {closes_on} and no longer accepts answers."
    wrong = catalog.get(closed).string.replace("{closes_on}", "{opens_on}")
    broken.delete(closed)
    broken.add(closed, wrong)
    found = problems(template, broken)
    assert len(found) == 3, found
    assert any("Send my answers" in p for p in found) and any("plural forms" in p for p in found)
    assert any("{opens_on}" in p for p in found)


def _hashable(value):
    return tuple(value) if isinstance(value, list | tuple) else value


@pytest.mark.parametrize("language", TRANSLATED)
def test_the_compiled_catalog_is_that_of_the_po_file(language):
    """messages.mo is committed (the app needs no compile step); it must say what messages.po says
    (`make translations` compiles it again)."""
    with po_path(language).with_suffix(".mo").open("rb") as file:
        compiled = {_hashable(m.id): _hashable(m.string) for m in read_mo(file) if m.id}
    source = {_hashable(m.id): _hashable(m.string) for m in read_catalog(language) if m.id and not m.fuzzy}
    assert compiled == source


def test_arabic_has_its_six_plural_forms():
    assert read_catalog("ar").num_plurals == 6


# -- the pages -----------------------------------------------------------------------------------------

SENTENCES = {
    "en": ("Send my answers", "Can anyone find out your answers?", "Your answers were sent", "Invitation code"),
    "es": (
        "Enviar mis respuestas",
        "¿Puede alguien averiguar sus respuestas?",
        "Sus respuestas se enviaron",
        "Código de invitación",
    ),
    "ar": ("أرسل إجاباتي", "هل يستطيع أحد معرفة إجاباتك؟", "أُرسلت إجاباتك", "رمز الدعوة"),
}
DIRECTION = {"en": "ltr", "es": "ltr", "ar": "rtl"}


def _html_tag(html: str) -> str:
    return re.search(r"<html[^>]*>", html).group(0)


@pytest.fixture
def slug(app):
    """SMALL_SPEC in all three languages: a survey's pages are offered in its own languages only
    (tests/test_content_translations.py: without Spanish texts, a Spanish browser gets English)."""
    contact = {"run_by": "Health Study", "contact": "study@example.org"}
    translations = {
        "es": {**SMALL_TRANSLATIONS["es"], "run_by": "Estudio de Salud", "contact": "study@example.org"},
        "ar": {**SMALL_TRANSLATIONS["ar"], "run_by": "دراسة الصحة", "contact": "study@example.org"},
    }
    return add_survey(app, {**SMALL_SPEC, **contact, "translations": translations}, owner=None)


@pytest.mark.parametrize("language", list(LANGUAGES))
def test_the_pages_come_in_the_browsers_language(app, client, slug, language):
    headers = {"Accept-Language": f"{language};q=0.9, fr;q=0.8"}
    send, privacy, sent, code = SENTENCES[language]
    survey_page = text(client.get(f"/s/{slug}", headers=headers))
    assert _html_tag(survey_page) == f'<html lang="{language}" dir="{DIRECTION[language]}">'
    assert send in survey_page
    assert privacy in text(client.get(f"/s/{slug}/privacy", headers=headers))
    response = client.post(f"/s/{slug}", data=FORM, headers=headers)
    assert response.status_code == 303
    thanks = text(client.get(response.headers["Location"], headers=headers))
    assert sent in thanks and _html_tag(thanks).startswith(f'<html lang="{language}"')
    # the derived words (wording.py) come translated too
    if language != "en":
        assert "Hidden by chance" not in survey_page and "Before anything is sent" not in survey_page
    with app.app_context():
        db.session.scalar(select(Survey).filter_by(slug=slug)).access = "invitation"
        db.session.commit()
    assert code in text(client.get(f"/s/{slug}", headers=headers))
    with app.app_context():
        survey = db.session.scalar(select(Survey).filter_by(slug=slug))
        survey.access, survey.status = "link", "closed"
        db.session.commit()
    closed = text(client.get(f"/s/{slug}", headers=headers))
    words = {
        "en": "This survey is closed",
        "es": "Esta encuesta está cerrada",
        "ar": "هذا الاستطلاع مغلق",
    }
    assert words[language] in closed
    missing = client.get("/s/no-such-survey", headers=headers)
    assert missing.status_code == 404 and _html_tag(text(missing)).startswith(f'<html lang="{language}"')


def test_a_language_the_app_lacks_gets_english(client, slug):
    page = text(client.get(f"/s/{slug}", headers={"Accept-Language": "fr, de;q=0.5"}))
    assert _html_tag(page) == '<html lang="en" dir="ltr">' and "Send my answers" in page


def test_the_switch_sets_a_cookie_with_the_language_only_and_keeps_a_valid_code(app, client, slug):
    page = text(client.get(f"/s/{slug}", headers={"Accept-Language": "es"}))
    switch = re.search(r'<nav class="language-switch".*?</nav>', page, re.S).group(0)
    assert re.findall(r'href="([^"]+)"', switch) == [f"?lang={code}" for code in LANGUAGES]
    assert 'lang="es" hreflang="es" aria-current="true"' in switch
    response = client.get(f"/s/{slug}?lang=ar", headers={"Accept-Language": "es"})
    assert "أرسل إجاباتي" in text(response)
    cookie = response.headers["Set-Cookie"]
    assert cookie.startswith("lang=ar;") and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    # the cookie, not the browser, decides from now on, on every respondent page
    later = text(client.get(f"/s/{slug}/privacy", headers={"Accept-Language": "es"}))
    assert "هل يستطيع أحد معرفة إجاباتك؟" in later and 'dir="rtl"' in _html_tag(later)
    # an invitee's page: the switch keeps their (valid) code, and only that
    with app.app_context():
        survey = db.session.scalar(select(Survey).filter_by(slug=slug))
        survey.access = "invitation"
        from survey.domain.responses.codes import generate_codes

        code = generate_codes(db.session, survey, 1)[0]
        db.session.commit()
    invited = text(client.get(f"/s/{slug}", query_string={"code": code, "utm": "x"}))
    links = re.findall(r'<a href="([^"]+)" lang=', invited)
    assert links == [f"?code={code}&amp;lang={language}" for language in LANGUAGES]
    refused = text(client.get(f"/s/{slug}", query_string={"code": "NOPE-NOPE-NOPE"}))
    assert "NOPE" not in "".join(re.findall(r'<a href="([^"]+)" lang=', refused))


def test_the_organizers_pages_stay_english(client):
    page = text(client.get("/login?lang=ar", headers={"Accept-Language": "ar"}))
    assert _html_tag(page) == '<html lang="en" dir="ltr">' and 'class="language-switch"' not in page


def test_the_language_is_not_stored_with_the_answers(app, client, slug):
    client.set_cookie("lang", "ar")
    assert client.post(f"/s/{slug}", data=FORM, headers={"Accept-Language": "es"}).status_code == 303
    assert stored(app) == (1, len(FORM))
    with app.app_context():
        schema = inspect(db.engine)
        # survey_translations holds the organizer's texts by language (the survey's content), and refers
        # to nothing but its survey; no other table has a column for a language
        content = {c["name"] for c in schema.get_columns("survey_translations")}
        assert content == {"survey_id", "language", "path", "text", "source"}
        columns = {
            c["name"]
            for table in schema.get_table_names()
            if table != "survey_translations"
            for c in schema.get_columns(table)
        }
    assert not {name for name in columns if "lang" in name or "locale" in name}


def test_work_outside_a_request_speaks_english(app):
    """A mail sent after the response (platform/background.py) or a CLI command runs with the app but
    no request: its sentences are English, and asking for the locale does not fail."""
    from flask_babel import force_locale, get_locale

    from survey.web.languages import select_locale

    with app.app_context():
        assert select_locale() == "en"
        assert str(get_locale()) == "en"
        with force_locale("es"):
            assert str(get_locale()) == "es"


def test_the_thank_you_sentence_names_the_option_as_the_page_shows_it():
    """A one-sided design's report that gives the answer away names that answer with the page's own
    label (translated), not the design's English one."""
    from survey.domain.surveys.wording import sent_sentence
    from survey.privacy import CoinFlip

    one_sided = CoinFlip(0.5, 1.0)  # a forced "yes": a "no" sent is a true "no"
    words = sent_sentence(one_sided, 1, "No", ["Sí", "No (es)"])
    assert "“No (es)”" in words and "“no”" not in words
    assert "“no”" in sent_sentence(one_sided, 1, "No")  # without the page's labels: the design's
