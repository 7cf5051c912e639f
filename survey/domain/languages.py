"""The languages the app ships: the respondent's pages are written in each, and a survey's own texts
may be translated into each (docs/translations.md).

Here, in the domain, because a survey's translations are validated against them (a spec or the
organizer's page may add only a language the app speaks); survey.platform.translations keeps the
catalogs of the app's own sentences in them.
"""

from __future__ import annotations

#: Every language, by its code, with its own name for itself.
LANGUAGES: dict[str, str] = {"en": "English", "es": "Español", "ar": "العربية"}
#: The language the app's sentences are written in, and every survey's first language: what an
#: organizer writes on the build page is in it, and the exports' labels are.
SOURCE_LANGUAGE = "en"
#: The languages written right to left: their pages are ``<html dir="rtl">``.
RIGHT_TO_LEFT = frozenset({"ar"})
