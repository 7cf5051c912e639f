"""Recording one respondent's submission: check every reported value, then write it in one go.

Values arrive already randomized by the respondent's browser. Each is checked against the frozen
design (a known question, a code inside its domain, each question at most once, required questions
present, the survey open); anything wrong refuses the whole submission and writes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sqlalchemy.orm import Session

from .invitations import InvitationError, claim
from .models import Answer, Submission, Survey, today


class SubmissionError(ValueError):
    """A submission that was refused; ``status`` is the HTTP status a view should answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def _code(value: Any, key: str, k: int) -> int:
    if isinstance(value, bool):
        raise SubmissionError(f"question {key!r}: the answer must be an option code, not {value!r}")
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,9}", value.strip()):
        value = int(value.strip())
    if not isinstance(value, int):
        raise SubmissionError(f"question {key!r}: the answer must be an option code 0 to {k - 1}, got {value!r}")
    if not 0 <= value < k:
        raise SubmissionError(f"question {key!r}: {value} is not one of its option codes 0 to {k - 1}")
    return value


def check_accepting(survey: Survey) -> None:
    """Raise SubmissionError (409) unless the survey accepts submissions today."""
    accepting, reason = survey.accepting_on(today())
    if not accepting:
        raise SubmissionError(reason, status=409)


def validate_answers(survey: Survey, answers: Mapping[str, Any]) -> dict[int, int]:
    """Map question id → reported code, or raise SubmissionError naming the first problem."""
    check_accepting(survey)
    if not isinstance(answers, Mapping):
        raise SubmissionError("answers must be an object mapping question keys to option codes")
    by_key = {q.key: q for q in survey.questions}
    unknown = sorted(set(answers) - set(by_key))
    if unknown:
        raise SubmissionError(f"unknown question {unknown[0]!r}: this survey has no such question")
    values: dict[int, int] = {}
    for question in survey.questions:
        raw = answers.get(question.key)
        if raw is None or raw == "":
            if question.required:
                raise SubmissionError(f"question {question.key!r} is required: please answer it")
            continue
        values[question.id] = _code(raw, question.key, len(question.options))
    if not values:
        raise SubmissionError("the submission has no answers")
    return values


def record_submission(
    session: Session, survey: Survey, answers: Mapping[str, Any], invitation: str | None = None
) -> Submission:
    """Validate and store one submission in a single transaction; commit on success.

    For a survey by invitation, ``invitation`` is claimed in the same transaction, so a code is
    used up exactly when a submission is stored. Nothing links the two afterwards.
    """
    values = validate_answers(survey, answers)
    submission = Submission(
        survey_id=survey.id,
        answers=[Answer(question_id=qid, value=code) for qid, code in values.items()],
    )
    try:
        if survey.access == "invitation":
            claim(session, survey, invitation)
        session.add(submission)
        session.commit()
    except InvitationError as error:
        session.rollback()
        raise SubmissionError(error.message, error.status) from None
    except Exception:
        session.rollback()
        raise
    return submission
