"""Editing a survey: its texts, its questions and their designs, its planning figures.

Every question the builder saves is parsed by :func:`survey.specs.parse_question`, the very code
that validates an imported spec, so a survey built in the browser obeys the same rules as one
imported from JSON. Once a survey has been opened its structure is frozen: only texts change.
"""

from __future__ import annotations

from typing import Any

from .models import Question, Survey
from .specs import SpecError, parse_planning, parse_question

#: Question fields that may still be corrected after a survey has been opened.
TEXT_FIELDS = ("text", "help_text")


class FrozenError(ValueError):
    """A change to a design, option or question list of a survey that has been opened."""

    status = 409

    def __init__(self, message: str = "") -> None:
        self.message = message or (
            "This survey has been opened, so its questions, options and designs are frozen: only texts can "
            "be corrected. To change a design, duplicate the survey and edit the copy."
        )
        super().__init__(self.message)


def question_spec(question: Question) -> dict[str, Any]:
    """The spec of one question, as the builder's form starts from and the export writes."""
    item: dict[str, Any] = {
        "key": question.key,
        "kind": question.kind,
        "text": question.text,
        "help_text": question.help_text,
        "required": question.required,
    }
    if question.kind != "yes_no":
        item["options"] = question.labels
    if question.design is not None:
        item["privacy"] = {"design": question.design.mechanism_name, **question.design.parameters}
        if question.design.epsilon is None:
            item["privacy"]["allow_one_sided"] = True
    return item


def update_details(survey: Survey, title: str, introduction: str, closing_message: str) -> None:
    """Texts of the survey itself: allowed in every state."""
    title = (title or "").strip()
    if not title:
        raise SpecError("survey, field 'title': must be a non-empty text")
    if len(title) > 200:
        raise SpecError("survey, field 'title': is longer than 200 characters")
    survey.title = title
    survey.introduction = (introduction or "").strip()
    survey.closing_message = (closing_message or "").strip()


def update_planning(survey: Survey, fields: dict[str, Any]) -> None:
    """Cap on total ε, expected respondents and target margin (validated as in a spec)."""
    values = parse_planning(fields)
    survey.epsilon_cap = values.get("epsilon_cap")
    for name in ("expected_respondents", "target_margin"):
        if name in values:
            setattr(survey, name, values[name])


def _check_draft(survey: Survey) -> None:
    if not survey.is_draft:
        raise FrozenError()


def add_question(survey: Survey, raw: dict[str, Any]) -> Question:
    _check_draft(survey)
    keys = {q.key for q in survey.questions}
    raw = dict(raw)
    if not raw.get("key"):
        n = len(survey.questions) + 1
        while f"q{n}" in keys:
            n += 1
        raw["key"] = f"q{n}"
    question = parse_question(raw, len(survey.questions), keys)
    survey.questions.append(question)
    return question


def update_question(survey: Survey, question: Question, raw: dict[str, Any]) -> Question:
    """Replace a draft's question by a re-validated one; on an opened survey, correct texts only."""
    if not survey.is_draft:
        current = question_spec(question)
        changed = {
            k for k in set(current) | set(raw) if k not in TEXT_FIELDS and raw.get(k, current.get(k)) != current.get(k)
        }
        if changed:
            raise FrozenError()
        for name in TEXT_FIELDS:
            if name in raw:
                value = (raw[name] or "").strip()
                if name == "text" and not value:
                    raise SpecError(
                        f"question {question.position + 1} ({question.key!r}), field 'text': must be a non-empty text"
                    )
                setattr(question, name, value)
        return question
    keys = {q.key for q in survey.questions if q is not question}
    replacement = parse_question(raw, question.position, keys)
    index = survey.questions.index(question)
    survey.questions[index] = replacement
    return replacement


def delete_question(survey: Survey, question: Question) -> None:
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
