"""A survey's own texts in more languages than its first: what must be translated, storing it, and the
survey as a respondent reads it in a language.

The app's own sentences come from gettext catalogs (survey.platform.translations); what an organizer
writes (the title, the introduction, the closing message, who is asking, each question's text and
help text, each listed option's label, a combined question's unrelated question) is translated by the
organizer. English (:data:`FIRST`) is every survey's first language: the build page writes in it, and
the exports' labels are in it. An organizer adds languages of :data:`ADDABLE` and enters each text in
each (stored as :class:`~survey.domain.models.SurveyTranslation` rows, one per text, named by its
path: :func:`pieces`).

The rule that keeps a respondent's page in one language: a survey is published only with every text
translated in every language it has, each from the English it has now (:func:`missing`, which
publishing and a spec that is not a draft check: an option relabelled in a draft leaves its
translation stale until the organizer saves it again); languages are added and removed only while
it is a draft; once published, a translation can be corrected but not emptied. A respondent is
offered the survey's languages and no other (:func:`languages_of_survey`). A text written in English
after publishing (a help text that was empty) shows in English until it is translated (and a
corrected English text keeps its translation, marked to check); the translations page marks both.

The fixed options of a kind (yes and no) are the app's words, translated by its catalogs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, object_session

from survey.domain import validation
from survey.domain.errors import Conflict, DomainError
from survey.domain.languages import LANGUAGES, SOURCE_LANGUAGE
from survey.domain.messages import N_, message
from survey.domain.models import Question, Survey, SurveyTranslation
from survey.domain.surveys import wording
from survey.domain.surveys.kinds import FIXED, LISTED
from survey.domain.validation import TEXT_LIMITS, Place
from survey.privacy.designs import DESIGNS

#: Every survey's first language.
FIRST = SOURCE_LANGUAGE
#: The languages an organizer may add to a survey, in the app's order.
ADDABLE = tuple(code for code in LANGUAGES if code != FIRST)
#: The survey's own texts, in the order the organizer's page shows them.
SURVEY_TEXTS = ("title", "introduction", "closing_message", "run_by", "contact", "ethics_statement")
#: The ones written over several lines (a text area on the organizer's page).
LONG_TEXTS = frozenset({"introduction", "closing_message", "ethics_statement", "text", "help_text"})
SURVEY_WORDS = {
    "title": "the title",
    "introduction": "the introduction",
    "closing_message": "the closing message",
    "run_by": "who runs it",
    "contact": "the contact",
    "ethics_statement": "the consent and ethics statement",
}
#: The fixed options' labels (survey.domain.surveys.kinds), in the respondent's catalogs.
FIXED_LABELS = {"yes": N_("yes"), "no": N_("no")}
#: The design parameter a combined question's respondent reads (the unrelated question).
UNRELATED = "unrelated_question"
SPEC = Place(("translations",), message("place.survey"))


def language_name(code: str) -> str:
    """A language as the organizer's pages and errors name it: "Español (es)"."""
    return f"{LANGUAGES.get(code, code)} ({code})"


@dataclass(frozen=True)
class Piece:
    """One text a translation must give: its path, the English it translates, its limit, and where it
    is in words (for the organizer)."""

    path: str
    source: str
    limit: int
    where: str
    #: Written over several lines.
    long: bool = False


def question_path(key: str, field: str, code: int | None = None) -> str:
    return f"q:{key}:{field}" if code is None else f"q:{key}:{field}:{code}"


def _unrelated_text(question: Question) -> str:
    design = question.design
    if design is None or not DESIGNS.get(design.mechanism_name) or not DESIGNS[design.mechanism_name].combined:
        return ""
    return str((design.parameters or {}).get(UNRELATED) or "")


def question_pieces(question: Question, number: int) -> list[Piece]:
    """What a translation of ``question`` (number ``number`` from 1) gives: its text, its help text if
    it has one, each listed option's label and a combined question's unrelated question."""
    place = message("place.question_key", number=number, key=question.key)
    key = question.key
    found = [Piece(question_path(key, "text"), question.text, TEXT_LIMITS["text"], f"{place}: its text", True)]
    if question.help_text:
        found.append(
            Piece(
                question_path(key, "help_text"),
                question.help_text,
                TEXT_LIMITS["help_text"],
                f"{place}: its help text",
                True,
            )
        )
    if question.kind_entry.options == LISTED:
        for option in sorted(question.options, key=lambda o: o.code):
            found.append(
                Piece(
                    question_path(key, "option", option.code),
                    option.label,
                    TEXT_LIMITS["option"],
                    f"{place}: option {option.code + 1} ({option.label!r})",
                )
            )
    unrelated = _unrelated_text(question)
    if unrelated:
        found.append(
            Piece(
                question_path(key, UNRELATED), unrelated, TEXT_LIMITS["text"], f"{place}: its unrelated question", True
            )
        )
    return found


def pieces(survey: Survey) -> list[Piece]:
    """Every text a translation of ``survey`` gives, in page order: the title, each of the survey's
    other texts that is not empty, then each question's (:func:`question_pieces`)."""
    found = [
        Piece(name, getattr(survey, name), TEXT_LIMITS[name], SURVEY_WORDS[name], name in LONG_TEXTS)
        for name in SURVEY_TEXTS
        if name == "title" or getattr(survey, name)
    ]
    for number, question in enumerate(sorted(survey.questions, key=lambda q: q.position), start=1):
        found.extend(question_pieces(question, number))
    return found


# -- what is stored ----------------------------------------------------------------------------------


def languages_of(survey: Survey) -> list[str]:
    """The languages ``survey`` has besides its first, in the app's order."""
    present = {row.language for row in survey.translations}
    return [code for code in ADDABLE if code in present]


def texts_of(survey: Survey) -> dict[str, dict[str, str]]:
    """``{language: {path: text}}`` of every language the survey has (a text not entered yet is absent;
    a stale one, whose English changed since, is there)."""
    texts: dict[str, dict[str, str]] = {language: {} for language in languages_of(survey)}
    for row in survey.translations:
        if row.language in texts and row.text:
            texts[row.language][row.path] = row.text
    return texts


def current_texts(survey: Survey) -> dict[str, dict[str, str]]:
    """As :func:`texts_of`, without the stale texts: those made from an English that has changed
    since (an option relabelled, a question reworded)."""
    sources = {piece.path: piece.source for piece in pieces(survey)}
    texts: dict[str, dict[str, str]] = {language: {} for language in languages_of(survey)}
    for row in survey.translations:
        if row.language in texts and row.text and sources.get(row.path) == row.source:
            texts[row.language][row.path] = row.text
    return texts


@dataclass(frozen=True)
class Gap:
    """A text a language lacks: never translated, or (``stale``) translated from an earlier English."""

    language: str
    piece: Piece
    stale: bool = False

    def refusal(self) -> Conflict:
        """Why the survey is not published: the language and the text, named."""
        return Conflict(
            "survey.publish_translation_stale" if self.stale else "survey.publish_translation_missing",
            path=("translations", self.language, self.piece.path),
            language=language_name(self.language),
            what=self.piece.where,
        )


def missing(survey: Survey, texts: Mapping[str, Mapping[str, str]] | None = None) -> list[Gap]:
    """Each text the survey's translations (stored, or ``texts``) lack, language by language in page
    order; a stored text whose English changed since it was translated is stale, so lacking too."""
    if texts is None:
        texts, entered = current_texts(survey), texts_of(survey)
    else:
        entered = texts
    required = pieces(survey)
    return [
        Gap(language, piece, stale=bool(entered[language].get(piece.path)))
        for language in texts
        for piece in required
        if not texts[language].get(piece.path)
    ]


def _check_language(language: Any, place: Place = SPEC) -> str:
    if language not in ADDABLE:
        raise place.error(
            "translation.language_unknown",
            *((language,) if isinstance(language, str) else ()),
            language=language,
            languages=", ".join(language_name(code) for code in ADDABLE),
        )
    return language


def add_language(survey: Survey, language: str) -> None:
    """Add ``language`` to a draft, every text still to translate (its title row, empty, says that it
    has the language)."""
    _check_language(language, Place(("language",)))
    if not survey.is_draft:
        raise Conflict("translation.not_draft", path=("language",), state=survey.status)
    if language in languages_of(survey):
        raise Conflict("translation.language_added", path=("language",), language=language_name(language))
    survey.translations.append(SurveyTranslation(language=language, path="title", text="", source=survey.title))


def remove_language(survey: Survey, language: str) -> None:
    """Take ``language`` and its texts off a draft."""
    if language not in languages_of(survey):
        raise DomainError("translation.language_absent", path=("language",), language=language_name(language))
    if not survey.is_draft:
        raise Conflict("translation.not_draft", path=("language",), state=survey.status)
    session = object_session(survey)
    if session is None:  # a survey not in a session (tests build some): the collection alone
        survey.translations = [row for row in survey.translations if row.language != language]
        return
    # one DELETE: the collection's orphans went one statement each, 6.7 s for the 10,400 texts of a
    # 200-question survey (benchmarks/worst_case.md)
    rows = SurveyTranslation
    session.execute(delete(rows).where(rows.survey_id == survey.id, rows.language == language))
    session.expire(survey, ["translations"])


def _checked(value: Any, piece: Piece, place: Place, *field: str) -> str:
    return validation.text(value if value is not None else "", place, *field, limit=piece.limit, required=False)


def save_texts(survey: Survey, entered: Mapping[str, Mapping[str, Any]]) -> None:
    """Store the texts the organizer entered, ``{language: {path: text}}``, for the survey's languages
    (a path not given keeps its text; a text of no current piece, left by a renamed question, goes).
    A published survey's translation may be corrected, not emptied: its respondents read it."""
    by_path = {piece.path: piece for piece in pieces(survey)}
    rows = {(row.language, row.path): row for row in survey.translations}
    for language in languages_of(survey):
        given = entered.get(language, {})
        place = Place(("translations", language), language_name(language))
        for path, value in given.items():
            piece = by_path.get(path)
            if piece is None:
                raise place.error("translation.path_unknown", path, name=path)
            text = _checked(value, piece, place, path)
            if not text and not survey.is_draft:
                raise Conflict(
                    "translation.emptied",
                    path=("translations", language, path),
                    language=language_name(language),
                    what=piece.where,
                )
            row = rows.get((language, path))
            if row is None:
                survey.translations.append(
                    SurveyTranslation(language=language, path=path, text=text, source=piece.source)
                )
            else:  # saved from the page that showed the English beside it: made from today's English
                row.text, row.source = text, piece.source
    survey.translations = [row for row in survey.translations if row.path in by_path]


def rename_question(survey: Survey, old: str, new: str) -> None:
    """A draft's question renamed from key ``old`` to ``new``: its translations follow it. Texts left
    under ``new`` by an earlier question of that key go first (written at once, so that no two rows
    share a name even for a moment)."""
    old_prefix, new_prefix = question_path(old, ""), question_path(new, "")
    left = [row for row in survey.translations if row.path.startswith(new_prefix)]
    if left:
        survey.translations = [row for row in survey.translations if not row.path.startswith(new_prefix)]
        session = object_session(survey)
        if session is not None:
            session.flush()
    for row in survey.translations:
        if row.path.startswith(old_prefix):
            row.path = new_prefix + row.path[len(old_prefix) :]


# -- a spec's "translations" ---------------------------------------------------------------------------


def rows_from_spec(raw: Any, survey: Survey) -> list[SurveyTranslation]:
    """The rows of a spec's ``"translations": {"es": {"title": "...", "q:<key>:text": "...", ...}}``,
    validated against the survey the spec makes (each path one of its :func:`pieces`). A survey that
    is not a draft must have every text in every language (as publishing requires)."""
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        raise SPEC.error("spec.not_object")
    by_path = {piece.path: piece for piece in pieces(survey)}
    rows = []
    entered: dict[str, dict[str, str]] = {}
    for language, texts in raw.items():
        _check_language(language)
        place = Place(("translations", language), language_name(language))
        if not isinstance(texts, Mapping):
            raise place.error("spec.not_object")
        given = {}
        for path, value in texts.items():
            if path not in by_path:
                raise place.error("translation.path_unknown", path, name=path)
            given[path] = _checked(value, by_path[path], place, path)
        entered[language] = {path: text for path, text in given.items() if text}
        given.setdefault("title", "")
        rows.extend(
            SurveyTranslation(language=language, path=path, text=text, source=by_path[path].source)
            for path, text in given.items()
        )
    problems = missing(survey, entered) if survey.status != "draft" else []
    if problems:
        raise problems[0].refusal()
    return rows


def to_spec(survey: Survey) -> dict[str, dict[str, str]]:
    """The spec's ``translations``: each language's texts, in page order (only those of a current
    piece, and not a stale one, which an import would take as made from today's English; a language
    with nothing entered yet is an empty object, so that it is kept)."""
    texts = current_texts(survey)
    order = [piece.path for piece in pieces(survey)]
    return {language: {path: texts[language][path] for path in order if path in texts[language]} for language in texts}


# -- the survey in a language ------------------------------------------------------------------------


def languages_of_survey(session: Session, survey: Survey) -> list[str]:
    """The languages a respondent is offered on ``survey``: its first, then those it has (one query,
    which reads no text)."""
    present = set(
        session.scalars(select(SurveyTranslation.language).where(SurveyTranslation.survey_id == survey.id).distinct())
    )
    return [FIRST, *(code for code in ADDABLE if code in present)]


def stored_texts(session: Session, survey: Survey, language: str) -> dict[str, str]:
    """The survey's texts in ``language`` (one query; empty for its first language)."""
    if language == FIRST:
        return {}
    rows = session.execute(
        select(SurveyTranslation.path, SurveyTranslation.text).where(
            SurveyTranslation.survey_id == survey.id, SurveyTranslation.language == language
        )
    )
    return {path: text for path, text in rows if text}


class _Translated:
    """A stored object read through a translation: the named texts from ``texts`` (the original's
    where a text is not translated, as in a draft's preview), everything else from the original."""

    def __init__(self, original: Any, texts: Mapping[str, str]) -> None:
        self._original = original
        self._texts = texts

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)


@dataclass(frozen=True)
class TranslatedOption:
    code: int
    label: str


class TranslatedQuestion(_Translated):
    """A question in a language: its text, help text, options' labels and unrelated question."""

    def _text(self, field: str, original: str) -> str:
        return self._texts.get(question_path(self._original.key, field)) or original

    @property
    def text(self) -> str:
        return self._text("text", self._original.text)

    @property
    def help_text(self) -> str:
        return self._text("help_text", self._original.help_text)

    @property
    def unrelated_question(self) -> str | None:
        """The combined question's unrelated question in this language (None: the design's own)."""
        return self._texts.get(question_path(self._original.key, UNRELATED))

    @cached_property
    def options(self) -> list[TranslatedOption]:
        fixed = self._original.kind_entry.options == FIXED
        return [
            TranslatedOption(
                option.code,
                wording.translate(FIXED_LABELS.get(option.label, option.label))
                if fixed
                else self._texts.get(question_path(self._original.key, "option", option.code)) or option.label,
            )
            for option in self._original.options
        ]

    @property
    def labels(self) -> list[str]:
        return [option.label for option in self.options]


class TranslatedSurvey(_Translated):
    """A survey in a language: its texts and its questions (:class:`TranslatedQuestion`)."""

    def __getattr__(self, name: str) -> Any:
        if name in SURVEY_TEXTS:
            return self._texts.get(name) or getattr(self._original, name)
        return getattr(self._original, name)

    @cached_property
    def questions(self) -> list[TranslatedQuestion]:
        return [TranslatedQuestion(question, self._texts) for question in self._original.questions]

    @property
    def randomized_questions(self) -> list[TranslatedQuestion]:
        return [q for q in self.questions if q.is_randomized]

    @property
    def direct_questions(self) -> list[TranslatedQuestion]:
        return [q for q in self.questions if not q.is_randomized]


def in_language(survey: Survey, language: str, texts: Mapping[str, str]) -> Survey | TranslatedSurvey:
    """``survey`` as a respondent reads it in ``language``, from its ``texts`` there; the survey itself
    in its first language."""
    if language == FIRST:
        return survey
    return TranslatedSurvey(survey, texts)


def translated_labels(questions: Iterable[Question], texts: Mapping[str, str]) -> dict[str, dict[int, str]]:
    """Each question's options' labels in a language, by stored code (the codebook's)."""
    return {q.key: {o.code: o.label for o in TranslatedQuestion(q, texts).options} for q in questions}
