"""The language of the respondent's pages: which one a request gets, and the switch between them.

The app's own sentences on the respondent's pages come from the gettext catalogs in
survey/translations (docs/translations.md), the survey's own texts from its organizer's translations
(survey.domain.surveys.content_translations). A survey's pages are offered in its languages only
(English, its first, and those its organizer added), so that a page is in one language: a respondent
gets the first of them their browser asks for (``Accept-Language``), or the one they picked with the
switch every respondent page shows when the survey has more than one: a plain link with ``?lang=``,
remembered in a cookie ``lang`` that holds the language's code and nothing else. A language the
survey lacks gives its first. A respondent page that names no survey (an address with none) is
offered every language of the app. The language is never stored with the answers, and the
submission carries none.

The organizer's and the results' pages are not translated yet: they stay English (and say so in
``<html lang>``) whatever the browser asks for.
"""

from __future__ import annotations

from urllib.parse import urlencode

from babel.lists import format_list
from flask import Flask, Response, current_app, g, has_request_context, request
from flask_login import current_user
from sqlalchemy.exc import SQLAlchemyError

from survey.domain.accounts.access import allowed
from survey.domain.surveys.content_translations import languages_of_survey
from survey.platform.connections import UNAVAILABLE, is_unavailable
from survey.platform.extensions import db
from survey.platform.translations import LANGUAGES, RIGHT_TO_LEFT

from .common import survey_at

DEFAULT = "en"
#: The blueprints whose pages a respondent sees.
RESPONDENT_BLUEPRINTS = frozenset({"respond"})
COOKIE = "lang"
#: A year: the choice outlives a visit, and holds nothing but the language's code.
COOKIE_AGE = 365 * 24 * 3600


def _respondent_request() -> bool:
    """Work done outside a request (a mail sent after the response, a CLI command) is no respondent's page."""
    return has_request_context() and request.blueprint in RESPONDENT_BLUEPRINTS


def offered() -> list[str]:
    """The languages of the survey the respondent's page is about (its ``slug``), its first first;
    every language of the app where the page names no survey that exists, or a draft to anyone but
    its organizers (a draft's 404 must not differ from that of an address with no survey, in its
    language either). Read once per request."""
    if "offered_languages" not in g:
        g.offered_languages = _survey_languages() or list(LANGUAGES)
    return g.offered_languages


def _survey_languages() -> list[str] | None:
    slug = (request.view_args or {}).get("slug")
    if not isinstance(slug, str) or g.get("database_unavailable"):
        # a page saying the database is away asks it nothing more (its words are the app's own: any
        # language); a statement here would wait on, or fail like, the one that could not run
        return None
    try:
        survey = survey_at(slug)
        if survey is None or (survey.is_draft and not allowed(current_user, survey, "edit")):
            return None
        return languages_of_survey(db.session, survey)
    except UNAVAILABLE as error:
        if is_unavailable(error):
            # The request's transaction went with its connection: the view must not go on as if it
            # had read the page (its next statement would fail as "invalid transaction", a 500, and a
            # change it made would be lost). Answered 503, as where the view meets it itself; met in
            # an error page, survey.web.common answers 503 as well.
            raise
        return None
    except SQLAlchemyError:  # an error page after a statement that left the session unusable
        return None


def _asked(languages: list[str]) -> str | None:
    """The language the respondent picked (the switch's ``?lang=``, then its cookie), if one of ``languages``."""
    for value in (request.args.get(COOKIE), request.cookies.get(COOKIE)):
        if value in languages:
            return value
    return None


def select_locale() -> str:
    """The request's language: English outside the respondent's pages; on them the language picked
    with the switch, else the browser's first, among the survey's languages (:func:`offered`), else
    the survey's first (English)."""
    if not _respondent_request():
        return DEFAULT
    languages = offered()
    return _asked(languages) or request.accept_languages.best_match(languages) or languages[0]


def word_list(items: list[object]) -> str:
    """``items`` as the page's language lists them: "1, 2 and 3", "1, 2 y 3", "1 و2 و3" (CLDR's list
    patterns, through Babel)."""
    from flask_babel import get_locale

    return format_list([str(item) for item in items], locale=get_locale() or DEFAULT)


def _or_list(items: list[str]) -> str:
    """Alternatives as the page's language lists them: "1, 2 or 3", "1, 2 o 3" (CLDR's "or" pattern)."""
    from flask_babel import get_locale

    return format_list(items, style="or", locale=get_locale() or DEFAULT)


def text_direction(locale: str) -> str:
    return "rtl" if locale in RIGHT_TO_LEFT else "ltr"


def language_links(code: str | None = None) -> list[dict[str, str | bool]]:
    """The switch: for each of the survey's languages, a link to this very page in it, and whether it is the page's
    language. The link carries ``lang`` and, on a page opened with a valid invitation code (which
    the page then holds anyway), that ``code``; nothing else of the address, so that a page shows
    nothing of a code it refused. The link is the query alone (``?lang=es``), which the browser
    resolves against this page's address: a page that refuses (a survey one may not see) writes
    nothing of the address it refused."""
    current = select_locale()
    kept = [("code", code)] if code else []
    return [
        {
            "code": language,
            "name": name,
            "href": "?" + urlencode([*kept, (COOKIE, language)]),
            "current": language == current,
        }
        for language, name in LANGUAGES.items()
        if language in offered()
    ]


def _remember_choice(response: Response) -> Response:
    """The switch's choice, kept in the ``lang`` cookie (the language's code only)."""
    chosen = request.args.get(COOKIE)
    if _respondent_request() and chosen in LANGUAGES and request.cookies.get(COOKIE) != chosen:
        response.set_cookie(
            COOKIE,
            chosen,
            max_age=COOKIE_AGE,
            samesite="Lax",
            secure=current_app.config.get("SESSION_COOKIE_SECURE", False),
            httponly=True,
        )
    return response


def init_app(app: Flask) -> None:
    """The locale selector, the cookie the switch sets, and ``lang``/``dir``/the switch for templates."""
    from flask_babel import get_locale

    from survey.domain.surveys import wording
    from survey.platform.request_translations import gettext

    app.extensions["babel"].locale_selector = select_locale
    app.after_request(_remember_choice)
    # A {% trans %} block's sentence is one line of words whatever the template's line breaks (as
    # babel.cfg extracts it).
    app.jinja_env.policies["ext.i18n.trimmed"] = True
    # The respondent's words (wording.py) are English templates; here they go through gettext.
    wording.translate = gettext
    wording.or_list = _or_list

    @app.context_processor
    def _language() -> dict[str, object]:
        locale = str(get_locale() or DEFAULT)
        return {
            "page_language": locale,
            "page_direction": text_direction(locale),
            "language_links": language_links,
            "word_list": word_list,
            # The switch, on the respondent's pages a plain GET reached (a link cannot repeat a POST), of a
            # survey in more than one language.
            "language_switch": _respondent_request() and request.method == "GET" and len(offered()) > 1,
        }
