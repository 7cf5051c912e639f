"""Editing a survey: its texts, its questions and their designs, its planning figures.

Every question the builder saves is made by :func:`survey.domain.surveys.specs.question_from_spec`, the very
code that validates an imported spec, and the survey's texts by
:func:`survey.domain.surveys.specs.survey_texts`, so a survey built in the browser obeys the same rules as
one imported from JSON. Once a survey has been opened its structure is frozen: only texts change,
checked by the same rules (non-empty, their length limits, storable text) as on a draft.
"""

from __future__ import annotations

from typing import Any

from survey.domain import validation
from survey.domain.errors import DomainError, Frozen
from survey.domain.models import Option, Question, Survey
from survey.domain.surveys import content_translations
from survey.domain.surveys.specs import (
    MAX_QUESTIONS,
    parse_planning,
    question_from_spec,
    question_place,
    question_to_spec,
    survey_texts,
)
from survey.domain.validation import TEXT_LIMITS

#: Question fields that may still be corrected after a survey has been opened.
TEXT_FIELDS = ("text", "help_text")


def update_details(survey: Survey, *, shared_devices: bool | None = None, **texts: str) -> None:
    """Texts of the survey itself (title, introduction, closing message, and who is asking: run by,
    contact, ethics statement), and whether it is answered on shared devices: allowed in every
    state, validated as a spec's. A text left out of ``texts`` is emptied, as a spec that leaves it
    out would have it; ``shared_devices`` left out (None) is kept."""
    values: dict[str, Any] = dict(survey_texts(texts))
    if shared_devices is not None:
        values.update(parse_planning({"shared_devices": shared_devices}))
    for name, value in values.items():
        setattr(survey, name, value)


def update_planning(survey: Survey, fields: dict[str, Any]) -> None:
    """Cap on total ε, expected respondents and target margin (validated as in a spec)."""
    values = parse_planning(fields)
    survey.epsilon_cap = values.get("epsilon_cap")
    for name in ("expected_respondents", "target_margin"):
        if name in values:
            setattr(survey, name, values[name])


def _check_draft(survey: Survey) -> None:
    if not survey.is_draft:
        raise Frozen()


def add_question(survey: Survey, raw: dict[str, Any]) -> Question:
    """Append a question validated like one of an imported spec; a key ``qN`` is made up if none is given."""
    _check_draft(survey)
    if len(survey.questions) >= MAX_QUESTIONS:
        # the spec's limit: a survey built here is one an import would accept (and one whose pages,
        # analyses and exports stay within the bounds docs/analysis.md states)
        raise DomainError(
            "survey.too_many_questions",
            path=("questions",),
            most=MAX_QUESTIONS,
        )
    keys = {q.key for q in survey.questions}
    raw = dict(raw)
    if not raw.get("key"):
        n = len(survey.questions) + 1
        while f"q{n}" in keys:
            n += 1
        raw["key"] = f"q{n}"
    question = question_from_spec(raw, len(survey.questions), keys)
    survey.questions.append(question)
    return question


def update_question(survey: Survey, question: Question, raw: dict[str, Any]) -> Question:
    """Replace a draft's question by a re-validated one; on an opened survey, correct texts only."""
    if not survey.is_draft:
        current = question_to_spec(question)
        current.setdefault("help_text", "")
        changed = {
            k for k in set(current) | set(raw) if k not in TEXT_FIELDS and raw.get(k, current.get(k)) != current.get(k)
        }
        if changed:
            raise Frozen()
        place = question_place(question.position, question.key)
        texts = {
            name: validation.text(raw[name], place, name, limit=TEXT_LIMITS[name], required=name == "text")
            for name in TEXT_FIELDS
            if name in raw
        }
        for name, value in texts.items():
            setattr(question, name, value)
        return question
    keys = {q.key for q in survey.questions if q is not question}
    replacement = question_from_spec(raw, question.position, keys)
    if replacement.key != question.key:  # its translations go with it (content_translations)
        content_translations.rename_question(survey, question.key, replacement.key)
    _copy_question(replacement, question)
    return question


def _copy_question(source: Question, target: Question) -> None:
    """Make ``target`` (stored) equal to ``source`` (validated, never added to the session).

    The stored rows are updated in place rather than replaced: a new question row with the same key,
    a new option with the same code or a new design for the same question would be inserted before
    the old row is deleted, and the unique constraints on (survey, key), (question, code) and the
    design's question would refuse the flush.
    """
    names = (
        "key",
        "kind",
        "text",
        "help_text",
        "required",
        "decline",
        "simulated_truth",
        "minimum",
        "maximum",
        "bins",
        "arm_group",
        "arm_share",
        "own_coin",
    )
    for name in names:
        setattr(target, name, getattr(source, name))
    labels = source.labels
    for code, label in enumerate(labels):
        if code < len(target.options):
            target.options[code].label = label
        else:
            target.options.append(Option(code=code, label=label))
    del target.options[len(labels) :]
    new = source.design
    if new is None:
        target.design = None
    elif target.design is None:
        source.design = None
        target.design = new
    elif (target.design.mechanism_name, target.design.parameters) != (new.mechanism_name, new.parameters):
        # Unchanged parameters keep the stored row to the last bit: a GRR set by ε and saved again
        # by its truth probability would otherwise get a matrix one rounding step apart.
        old = target.design
        old.mechanism_name, old.parameters, old.matrix, old.epsilon = (
            new.mechanism_name,
            new.parameters,
            new.matrix,
            new.epsilon,
        )
    if new is not None and target.design is not None:
        target.design.given = new.given  # how the level was set, which may change alone


def question_by_key(survey: Survey, key: str) -> Question | None:
    """The survey's question with this key, if any."""
    return next((q for q in survey.questions if q.key == key), None)


def delete_question(survey: Survey, question: Question) -> None:
    """Remove a draft's question; reports can only exist once a survey is opened, so none are lost."""
    _check_draft(survey)
    survey.questions.remove(question)
    _renumber(survey)


def move_question(survey: Survey, question: Question, offset: int) -> None:
    """Move a question ``offset`` places (−1 up, +1 down), within the list's ends."""
    _check_draft(survey)
    questions = list(survey.questions)
    index = questions.index(question)
    target = max(0, min(len(questions) - 1, index + offset))
    questions.insert(target, questions.pop(index))
    for position, q in enumerate(questions):
        q.position = position
    survey.questions.sort(key=lambda q: q.position)


def _renumber(survey: Survey) -> None:
    for position, q in enumerate(survey.questions):
        q.position = position
