"""The respondent's catalogs: which sentences they must hold, and keeping them current.

The respondent's pages are translated (docs/translations.md); the organizer's are English for now.
:func:`respondent_catalog` is every sentence a respondent can be shown, taken from where it is
written: the respondent's templates and what base.html and error.html show them, the respondent's
words (survey/domain/surveys/wording.py), the fixed options' labels (yes, no:
survey/domain/surveys/content_translations.py), the error pages' sentences (security.py) and the
error catalog's entries a respondent's page can show (:data:`RESPONDENT_CODES`). tests/test_translations.py
fails when one of them lacks a translation in a language of :data:`LANGUAGES`.

``python -m survey.platform.translations`` (``make translations``) merges new sentences into each
language's messages.po (empty, for the translator) and compiles every messages.mo.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_file
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

# The languages live in the domain (a survey's translations are checked against them); here too, where
# the catalogs and the respondent's pages read them.
from survey.domain.languages import LANGUAGES as LANGUAGES
from survey.domain.languages import RIGHT_TO_LEFT as RIGHT_TO_LEFT
from survey.domain.languages import SOURCE_LANGUAGE as SOURCE_LANGUAGE
from survey.domain.messages import template

ROOT = Path(__file__).resolve().parents[2]
TRANSLATIONS = ROOT / "survey" / "translations"


#: The error catalog's entries (survey/domain/messages.py) a respondent's page can show: refused
#: invitation codes, a closed or unpublished survey, an outage, a form sent twice or changed. The
#: rest of the catalog is the organizer's and the API's, English for now.
RESPONDENT_CODES = (
    "answer.required",
    "code.missing",
    "code.not_found",
    "code.other_survey",
    "code.revoked",
    "code.unknown",
    "code.used",
    "page.nothing_here",
    "service.answers_maybe_stored",
    "service.answers_not_stored",
    "service.page_unavailable",
    "submission.answered_twice",
    "submission.nothing_stored",
    "submission.survey_changed",
    "submission.unexpected_field",
    "survey.closed",
    "survey.closed_on",
    "survey.not_open_yet",
    "survey.not_published",
)

#: Where the respondent's sentences are written: (extraction method, files).
JINJA = "jinja2.ext:babel_extract"
RESPONDENT_SOURCES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (JINJA, ("templates/respond/*.html", "templates/base.html", "templates/error.html")),
    (
        "python",
        (
            "survey/domain/surveys/wording.py",
            "survey/domain/surveys/content_translations.py",
            "survey/platform/security.py",
            "survey/web/respond/*.py",
        ),
    ),
)
KEYWORDS = {**DEFAULT_KEYWORDS, "N_": None}
#: As babel.cfg and the app (survey/web/languages.py): a {% trans %} block's sentence on one line.
OPTIONS = {"trimmed": "true"}


def _sentences() -> Iterator[tuple[str | tuple[str, ...], str]]:
    for method, patterns in RESPONDENT_SOURCES:
        for pattern in patterns:
            for path in sorted(ROOT.glob(pattern)):
                where = str(path.relative_to(ROOT))
                for _line, message, _comments, _context in extract_from_file(method, path, KEYWORDS, options=OPTIONS):
                    yield message, where
    for code in RESPONDENT_CODES:
        yield template(code), "survey/domain/messages.py"


def respondent_catalog() -> Catalog:
    """Every sentence a respondent can be shown (a plural as its (singular, plural) pair)."""
    catalog = Catalog(project="survey", fuzzy=False)
    for message, where in _sentences():
        if isinstance(message, tuple):
            message = tuple(part for part in message if part is not None)
            if len(message) == 1:
                message = message[0]
        catalog.add(message, locations=[(where, None)])
    return catalog


def po_path(language: str) -> Path:
    return TRANSLATIONS / language / "LC_MESSAGES" / "messages.po"


def read_catalog(language: str) -> Catalog:
    with po_path(language).open("rb") as file:
        return read_po(file, locale=language)


def update() -> None:
    """New sentences into each language's messages.po (untranslated), sentences gone out of it, and
    every messages.mo compiled from its messages.po."""
    template_catalog = respondent_catalog()
    for language in LANGUAGES:
        if language == SOURCE_LANGUAGE:
            continue
        path = po_path(language)
        path.parent.mkdir(parents=True, exist_ok=True)
        catalog = read_catalog(language) if path.exists() else Catalog(locale=language)
        catalog.update(template_catalog, no_fuzzy_matching=True)
        catalog.obsolete.clear()
        with path.open("wb") as file:
            write_po(file, catalog, width=100, no_location=True, sort_output=True, omit_header=False)
        compile_catalog(language)


def compile_catalog(language: str) -> None:
    with po_path(language).with_suffix(".mo").open("wb") as file:
        write_mo(file, read_catalog(language))


if __name__ == "__main__":
    update()
