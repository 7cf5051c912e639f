"""The JSON documents of live results that more than one address serves: the live intervals of a
survey and the anytime test of one share.

The results blueprint's JSON endpoints and the versioned API (/api/v1) both answer with these, so
that a number read by a script is the number the page's own requests read. Each is built from the
running tallies (:mod:`survey.domain.results.live`) and put in the exports' codes (yes = 1, no = 0:
:mod:`survey.domain.results.coding`); the callers only decide who may read it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from survey.domain.models import Survey
from survey.domain.responses.tallies import number_results, survey_counts
from survey.domain.results.coding import researcher_code, researcher_options, stored_code
from survey.domain.results.live import LiveQuestion, anytime, live_status, timelines


def researcher_live(q: LiveQuestion) -> list[dict[str, Any]]:
    """A question's live intervals per option, in the exports' codes (yes = 1, no = 0)."""
    data = q.sequence.to_dict()["categories"]
    return [{"code": o["code"], **data[stored_code(q.question, o["code"])]} for o in researcher_options(q.question)]


def live_document(session: Session, survey: Survey) -> dict[str, Any]:
    """Every randomized question's live intervals, its timeline, and the stopping rule's state; every
    number question's live interval for its mean (not part of the stopping rule)."""
    counts = survey_counts(session, survey)
    status = live_status(session, survey, counts)
    document = status.to_dict()
    document["numbers"] = [m.live_dict() for m in number_results(session, survey, counts)]
    days = timelines(session, [q.question for q in status.questions])
    for item, q in zip(document["questions"], status.questions, strict=True):
        item["intervals"] = researcher_live(q)
        item["timeline"] = days[q.question.id].to_dict()
    return document


def anytime_document(
    session: Session, survey: Survey, key: str | None, threshold: Any, alternative: str | None, category: Any
) -> dict[str, Any]:
    """The anytime-valid test of one share (:func:`survey.domain.results.live.anytime`, whose
    :class:`~survey.domain.errors.DomainError` says what was asked wrong), with its question's key
    and the category in the exports' codes."""
    result = anytime(session, survey, key, threshold, alternative, category)
    question = next(q for q in survey.randomized_option_questions if q.key == key)
    return {"question": question.key, **result.to_dict(), "category": researcher_code(question, result.category)}
