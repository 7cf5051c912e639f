"""Forms of the translations page (Flask-WTF: each carries a CSRF token).

The texts' inputs are one per language and text of the survey, so they are not fields of a class:
:func:`entered` reads them by name (:func:`input_name`), and the domain
(survey.domain.surveys.content_translations) checks each one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from flask_wtf import FlaskForm
from wtforms import SelectChoice, SelectField
from wtforms.validators import InputRequired

from survey.domain.surveys.content_translations import ADDABLE, language_name

from ..common import FormErrors


def input_name(language: str, path: str) -> str:
    """The input of one text in one language: ``t-es-q:often:text``."""
    return f"t-{language}-{path}"


class LanguageForm(FormErrors, FlaskForm):
    """A language to add to the survey, or to take off it."""

    default_field = "language"

    language = SelectField(
        "Language",
        choices=[SelectChoice(code, language_name(code)) for code in ADDABLE],
        validators=[InputRequired("Choose a language.")],
    )


class TranslationsForm(FlaskForm):
    """The texts of every language at once; the form itself holds the CSRF token only."""


def entered(form: Mapping[str, str], languages: Iterable[str], paths: Iterable[str]) -> dict[str, dict[str, str]]:
    """``{language: {path: text}}`` of the inputs posted, for the survey's languages and texts."""
    paths = list(paths)
    return {
        language: {path: form[input_name(language, path)] for path in paths if input_name(language, path) in form}
        for language in languages
    }
