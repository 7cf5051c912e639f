"""The translations page: the survey's own texts in the languages its organizer adds.

Each text of the survey (survey.domain.surveys.content_translations.pieces) is shown in English, its
first language, beside an input for each language added; the page adds and removes languages while
the survey is a draft. The rules (which texts, which languages, that a published survey's translation
cannot be emptied) are the domain's. Every page needs the "edit" right on its survey; anyone else
gets a 404.
"""

from __future__ import annotations

from flask import render_template, request
from flask_login import login_required
from wtforms import SelectChoice

from survey.domain.errors import DomainError
from survey.domain.models import Survey
from survey.domain.surveys import content_translations
from survey.domain.surveys.content_translations import ADDABLE, language_name
from survey.platform.extensions import csrf

from ..common import commit_or_refuse, localized, see_other
from ..languages import text_direction
from . import bp
from .manage_page import editable
from .translations_forms import LanguageForm, TranslationsForm, entered, input_name

#: The largest post of the texts: a survey's own texts in two more languages, form-encoded.
TRANSLATIONS_MAX_BYTES = 4 * 1024 * 1024


def _render(
    survey: Survey,
    *,
    texts: dict[str, dict[str, str]] | None = None,
    language_form: LanguageForm | None = None,
    error: DomainError | None = None,
    status: int = 200,
):
    languages = content_translations.languages_of(survey)
    stored = content_translations.texts_of(survey)
    shown = {language: {**stored.get(language, {}), **(texts or {}).get(language, {})} for language in languages}
    missing = content_translations.missing(survey)
    form = language_form or LanguageForm()
    form.language.choices = [SelectChoice(code, language_name(code)) for code in ADDABLE if code not in languages]
    return (
        render_template(
            "organize/translations.html",
            survey=survey,
            languages=languages,
            language_name=language_name,
            direction=text_direction,
            pieces=content_translations.pieces(survey),
            texts=shown,
            input_name=input_name,
            missing={(gap.language, gap.piece.path): gap for gap in missing},
            missing_count=len(missing),
            language_form=form,
            remove_form=LanguageForm(),
            save_form=TranslationsForm(),
            error=localized(error, placed=True) if error is not None and not language_form else "",
            error_path=error.path if error is not None else (),
        ),
        status,
    )


@bp.get("/surveys/<slug>/translations")
@login_required
def translations(slug: str):
    """The survey's texts in each language it has, the inputs to translate them, and the languages."""
    return _render(editable(slug))


@bp.post("/surveys/<slug>/translations")
@csrf.exempt  # checked by TranslationsForm itself, after the larger size limit below is in place
@login_required
def save_translations(slug: str):
    """Every language's texts at once; a text left empty is still to translate (a draft only).

    The app's request limit fits a submission; the texts of a survey in two more languages may be
    far more (an Arabic letter is six bytes in a form's body), so this view raises it for itself, as
    the spec import does, and the form checks the CSRF token once the limit is in place."""
    request.max_content_length = TRANSLATIONS_MAX_BYTES
    request.max_form_memory_size = TRANSLATIONS_MAX_BYTES
    survey = editable(slug)
    form = TranslationsForm()
    texts = entered(
        request.form,
        content_translations.languages_of(survey),
        [piece.path for piece in content_translations.pieces(survey)],
    )
    return commit_or_refuse(
        lambda: content_translations.save_texts(survey, texts),
        form=form,
        done=lambda _: see_other("organize.translations", "Translations saved.", slug=slug),
        refused=lambda status, error: _render(survey, texts=texts, error=error, status=status),
    )


@bp.post("/surveys/<slug>/translations/add")
@login_required
def add_translation_language(slug: str):
    """Add a language to a draft: each text then waits for its translation."""
    survey = editable(slug)
    form = LanguageForm()
    return commit_or_refuse(
        lambda: content_translations.add_language(survey, form.language.data),
        form=form,
        done=lambda _: see_other(
            "organize.translations", f"{language_name(form.language.data)} added: translate each text below.", slug=slug
        ),
        refused=lambda status, _: _render(survey, language_form=form, status=status),
    )


@bp.post("/surveys/<slug>/translations/remove")
@login_required
def remove_translation_language(slug: str):
    """Take a language and its texts off a draft."""
    survey = editable(slug)
    form = LanguageForm()
    # the language to remove is one the survey has, which the add form's choices leave out
    form.language.choices = [SelectChoice(code, language_name(code)) for code in ADDABLE]
    return commit_or_refuse(
        lambda: content_translations.remove_language(survey, form.language.data),
        form=form,
        done=lambda _: see_other(
            "organize.translations", f"{language_name(form.language.data)} and its texts removed.", slug=slug
        ),
        refused=lambda status, error: _render(survey, error=error, status=status),
    )
