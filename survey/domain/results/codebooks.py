"""The codebook in each of the survey's languages.

The microdata have one coding whatever language a respondent read the survey in (the language is
not stored), and the labelled files' labels are in the survey's first language. The codebook comes
in each language the survey has: the same document, codes and matrices, with the title, the
questions' texts and the options' labels of that language (the organizer's translations; yes and no
are the app's words, translated by the caller's locale), and says which language it is in and which
others there are.
"""

from __future__ import annotations

from typing import Any

from survey.domain.errors import DomainError
from survey.domain.models import Survey
from survey.domain.results.coding import stored_order
from survey.domain.results.exports import codebook
from survey.domain.surveys.content_translations import FIRST, TranslatedSurvey, language_name, languages_of, texts_of


def codebook_in(survey: Survey, language: str | None = None) -> dict[str, Any]:
    """The codebook in ``language`` (the survey's first when None); refused for a language the survey
    does not have."""
    language = language or FIRST
    languages = [FIRST, *languages_of(survey)]
    if language not in languages:
        raise DomainError("translation.language_absent", path=("language",), language=language_name(language))
    document = codebook(survey)
    document["language"] = language
    document["languages"] = languages
    if language == FIRST:
        return document
    translated = TranslatedSurvey(survey, texts_of(survey)[language])
    document["survey"]["title"] = translated.title
    questions = {q.key: q for q in translated.questions}
    for entry in document["questions"]:
        question = questions[entry["key"]]
        entry["text"] = question.text
        labels = {option.code: option.label for option in question.options}
        order = stored_order(question._original)
        for option in entry["options"]:
            option["label"] = labels[order[option["code"]]]
    return document
